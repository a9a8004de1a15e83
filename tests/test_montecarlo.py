"""The Monte Carlo harness: determinism, failure bookkeeping, executors, and a check against exact coverage."""

import concurrent.futures
import doctest
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalkit as ek
import evalkit.montecarlo
from evalkit import EvalkitWarning
from evalkit.clustered import Estimate, interval_t
from evalkit.montecarlo import RUN_COLUMNS, mc_run, mc_summarise, mc_tolerance


def z_interval(x, sigma=1.0):
    """Exact 95% interval for a normal mean with known sigma."""
    m = float(np.mean(x))
    se = sigma / math.sqrt(len(x))
    lo, hi = interval_t(m, se, math.inf)
    return Estimate(m, se, lo, hi, math.inf, "z", len(x))


def test_exact_interval_has_nominal_coverage():
    runs = mc_run(lambda rng: rng.normal(2.0, 1.0, 25), {"z": z_interval, "mean": lambda x: float(np.mean(x))},
                  truth=2.0, n_reps=2000, seed=1, progress=False)
    s = mc_summarise(runs)
    assert abs(s.loc["z", "coverage"] - 0.95) <= mc_tolerance(0.95, 2000)
    assert s.loc["z", "coverage_mcse"] == pytest.approx(math.sqrt(0.95 * 0.05 / 2000), rel=0.2)
    assert abs(s.loc["z", "bias"]) < 4 * s.loc["z", "bias_mcse"]
    assert s.loc["z", "rmse"] == pytest.approx(0.2, rel=0.1)  # sd of the mean = 1/5; 2,000 reps -> ~1.6% MC error
    assert s.loc["z", "width"] == pytest.approx(2 * stats.norm.ppf(0.975) / 5)
    assert np.isnan(s.loc["mean", "coverage"])


def test_runs_are_reproducible_and_independent_of_estimator_set():
    sim = lambda rng: rng.normal(0, 1, 10)  # noqa: E731
    a = mc_run(sim, {"z": z_interval}, truth=0.0, n_reps=20, seed=5, progress=False)
    b = mc_run(sim, {"m": lambda x: float(np.mean(x)), "z": z_interval}, truth=0.0, n_reps=20, seed=5, progress=False)
    assert np.array_equal(a["estimate"].to_numpy(), b.loc[b["estimator"] == "z", "estimate"].to_numpy())


def test_failures_are_counted_not_hidden():
    def flaky(x):  # noqa: B023
        if x[0] > 0:
            raise ValueError("degenerate")
        return z_interval(x)

    with pytest.warns(EvalkitWarning, match=r"flaky \d+ of 200; reasons: ValueError \(\d+\)"):
        runs = mc_run(lambda rng: rng.normal(0, 1, 5), {"flaky": flaky}, truth=0.0, n_reps=200, seed=3,
                      progress=False)
    s = mc_summarise(runs)
    assert s.loc["flaky", "n_failed"] + s.loc["flaky", "n_reps"] == 200
    assert 60 < s.loc["flaky", "n_failed"] < 140
    assert runs["error"].str.contains("degenerate").sum() == s.loc["flaky", "n_failed"]


def test_truth_can_depend_on_the_data_and_keys_group():
    runs = mc_run(lambda rng: rng.normal(0, 1, 10), {"m": lambda x: float(np.mean(x))},
                  truth=lambda x: float(np.mean(x)), n_reps=5, seed=1, progress=False)
    runs["setting"] = "a"
    s = mc_summarise(runs)
    assert s.index.names == ["setting", "estimator"]
    assert s["bias"].iloc[0] == 0.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least one estimator"):
        mc_run(lambda rng: 0, {}, truth=0.0, n_reps=5, seed=1)
    with pytest.raises(ValueError):
        mc_run(lambda rng: 0, {"a": float}, truth=0.0, n_reps=0, seed=1)
    with pytest.raises(ValueError, match="n_reps must be a positive int"):
        mc_run(lambda rng: 0, {"a": float}, truth=0.0, n_reps=2.5, seed=1)
    assert mc_tolerance(0.95, 1000) == pytest.approx(4 * math.sqrt(0.95 * 0.05 / 1000))


def test_coverage_study_separates_iid_from_cluster_robust():
    from evalkit.montecarlo import mc_coverage_clustered

    s = mc_coverage_clustered(icc=0.3, n_clusters=30, cluster_size=20, n_reps=400, seed=4)
    assert list(s.index) == ["iid", "CR1", "CR2"]
    assert s.loc["iid", "coverage"] < 0.7          # deff = 6.7: the i.i.d. SE is 2.6x too small
    assert abs(s.loc["CR2", "coverage"] - 0.95) <= mc_tolerance(0.95, 400) + 0.01  # t_{M-1} is approximate
    assert s.loc["CR1", "width"] > 2 * s.loc["iid", "width"]
    null = mc_coverage_clustered(icc=0.0, n_clusters=30, cluster_size=20, n_reps=400, seed=4)
    assert abs(null.loc["iid", "coverage"] - 0.95) <= mc_tolerance(0.95, 400)


# --- module-level helpers (picklable, for the process pool) ---------------------------------


def draw_normal(rng):
    return rng.normal(0.0, 1.0, 8)


def z_or_nan(x):
    """The z interval, but NaN (estimate and interval) when the first draw is above 0.3."""
    if x[0] > 0.3:
        return Estimate(math.nan, math.nan, math.nan, math.nan, math.inf, "z", len(x))
    return z_interval(x)


def nan_interval(x):
    e = z_interval(x)
    return Estimate(e.estimate, e.se, math.nan if x[1] > 0 else e.ci_low, e.ci_high, e.df, "z", len(x))


def raises_sometimes(x):
    if x[2] > 1.0:
        raise KeyError("no such cluster")
    if x[2] < -1.0:
        raise RuntimeError("singular fit")
    return float(np.mean(x))


def plain_mean(x):
    return float(np.mean(x))


def mixed_estimators():
    return {"z": z_interval, "nan": z_or_nan, "nan_ci": nan_interval, "raises": raises_sometimes,
            "mean": plain_mean}


# --- failed replications: NaN, exceptions, contracts -----------------------------------------


def test_nan_estimates_and_intervals_are_failed_replications_not_successes():
    # Before: a NaN Estimate counted as a success (n_reps 40, n_failed 0) and bias was taken over the rest.
    with pytest.warns(EvalkitWarning, match=r"nan \d+ of 40.*NaN estimate"):
        runs = mc_run(draw_normal, {"nan": z_or_nan, "nan_ci": nan_interval, "z": z_interval}, truth=0.0,
                      n_reps=40, seed=11, progress=False)
    first = runs[runs["estimator"] == "z"]["estimate"].to_numpy()  # z's estimate is the mean of the draw
    s = mc_summarise(runs)
    n_nan = int((runs.loc[runs["estimator"] == "nan", "error"] == "NaN estimate").sum())
    assert 5 < n_nan < 35
    assert s.loc["nan", "n_failed"] == n_nan and s.loc["nan", "n_reps"] == 40 - n_nan
    n_bad_ci = int((runs.loc[runs["estimator"] == "nan_ci", "error"] == "NaN interval").sum())
    assert 5 < n_bad_ci < 35 and s.loc["nan_ci", "n_failed"] == n_bad_ci
    assert s.loc["z", "n_failed"] == 0 and abs(s.loc["z", "bias"] - first.mean()) < 1e-15
    assert np.isfinite(s.loc["nan_ci", "coverage"])  # coverage over the replications that have an interval
    # A frame without error texts (e.g. built by hand) is judged the same way.
    runs2 = runs.assign(error="")
    assert mc_summarise(runs2).loc["nan", "n_failed"] == n_nan


def test_bare_float_nan_is_a_failure_but_a_float_without_interval_is_not():
    with pytest.warns(EvalkitWarning, match="NaN estimate"):
        runs = mc_run(draw_normal, {"f": lambda x: math.nan if x[0] > 0 else float(x[0])}, truth=0.0, n_reps=30,
                      seed=2, progress=False)
    s = mc_summarise(runs)
    assert s.loc["f", "n_failed"] == (runs["error"] == "NaN estimate").sum() > 0
    assert np.isnan(s.loc["f", "coverage"])


def test_nan_truth_is_an_error():
    with pytest.raises(ValueError, match="truth .*NaN"):
        mc_run(draw_normal, {"m": plain_mean}, truth=math.nan, n_reps=5, seed=1)
    with pytest.raises(ValueError, match="truth in replication 3 is NaN"):
        counter = iter(range(100))
        mc_run(draw_normal, {"m": plain_mean}, truth=lambda x: math.nan if next(counter) == 3 else 0.0, n_reps=5,
               seed=1)
    with pytest.raises(TypeError, match="truth must be a real number"):
        mc_run(draw_normal, {"m": plain_mean}, truth="0.5", n_reps=5, seed=1)
    runs = mc_run(draw_normal, {"m": plain_mean}, truth=0.0, n_reps=3, seed=1)
    runs.loc[1, "truth"] = math.nan
    with pytest.raises(ValueError, match="truth is NaN in replication 1"):
        mc_summarise(runs)


def test_any_exception_is_recorded_with_type_and_message_and_keeps_finished_replications():
    # Before: a KeyError or RuntimeError escaped mc_run and every finished replication was lost.
    with pytest.warns(EvalkitWarning, match="KeyError"):
        runs = mc_run(draw_normal, {"raises": raises_sometimes, "mean": plain_mean}, truth=0.0, n_reps=60, seed=4,
                      progress=False)
    assert len(runs) == 120 and runs["rep"].nunique() == 60
    errors = runs.loc[runs["estimator"] == "raises", "error"]
    assert (errors == "KeyError: 'no such cluster'").sum() > 0
    assert (errors == "RuntimeError: singular fit").sum() > 0
    assert (runs.loc[runs["estimator"] == "mean", "error"] == "").all()


def test_a_failing_simulator_is_recorded_for_every_estimator_of_that_replication():
    def draw(rng):
        x = rng.normal(0, 1, 4)
        if x[0] > 1.0:
            raise np.linalg.LinAlgError("not positive definite")
        return x

    with pytest.warns(EvalkitWarning, match=r"simulate: LinAlgError"):
        runs = mc_run(draw, {"a": plain_mean, "b": z_interval}, truth=0.0, n_reps=50, seed=8, progress=False)
    bad = runs[runs["error"] == "simulate: LinAlgError: not positive definite"]
    assert len(bad) > 0 and len(bad) % 2 == 0
    assert set(bad.groupby("rep")["estimator"].apply(tuple)) == {("a", "b")}
    s = mc_summarise(runs)
    assert s.loc["a", "n_failed"] == s.loc["b", "n_failed"] == len(bad) // 2


@pytest.mark.parametrize("bad", [np.zeros(3), (0.1, 0.2), pd.Series([0.5]), "0.5", True, None])
def test_a_wrong_shaped_return_names_the_estimator_and_the_replication(bad):
    with pytest.raises(TypeError, match=r"estimator 'broken' returned .* in replication 0; an estimator must return"):
        mc_run(draw_normal, {"ok": plain_mean, "broken": lambda x: bad}, truth=0.0, n_reps=3, seed=1)


def test_zero_dimensional_arrays_and_numpy_scalars_are_accepted():
    runs = mc_run(draw_normal, {"a": lambda x: np.array(np.mean(x)), "b": lambda x: np.float32(np.mean(x)),
                                "c": lambda x: int(x[0] > 0)}, truth=0.0, n_reps=3, seed=1)
    assert (runs["error"] == "").all()


@pytest.mark.parametrize("seed", [None, 1.5, "1", True, np.random.default_rng(1)])
def test_seed_must_be_an_int(seed):
    with pytest.raises(TypeError, match="seed must be an int"):
        mc_run(draw_normal, {"m": plain_mean}, truth=0.0, n_reps=3, seed=seed)


def test_numpy_int_seed_is_accepted_and_negative_refused():
    a = mc_run(draw_normal, {"m": plain_mean}, truth=0.0, n_reps=3, seed=np.int64(7))
    b = mc_run(draw_normal, {"m": plain_mean}, truth=0.0, n_reps=3, seed=7)
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(ValueError, match="non-negative"):
        mc_run(draw_normal, {"m": plain_mean}, truth=0.0, n_reps=3, seed=-1)


# --- estimators cannot change what the next one sees -------------------------------------------


def test_an_estimator_cannot_change_the_array_the_next_estimator_sees():
    def zero_it(x):
        x[:] = 0.0
        return 0.0

    # Before: the second estimator saw zeros and reported a mean of exactly 0.
    with pytest.warns(EvalkitWarning, match="zero_it 4 of 4"):
        runs = mc_run(draw_normal, {"zero_it": zero_it, "mean": plain_mean}, truth=0.0, n_reps=4, seed=1)
    alone = mc_run(draw_normal, {"mean": plain_mean}, truth=0.0, n_reps=4, seed=1)
    assert runs.loc[runs["estimator"] == "zero_it", "error"].str.contains("read-only").all()
    np.testing.assert_array_equal(runs.loc[runs["estimator"] == "mean", "estimate"], alone["estimate"])


def draw_frame(rng):
    return pd.DataFrame({"correct": rng.integers(0, 2, 30).astype(float), "cluster": np.repeat(np.arange(6), 5)})


def test_an_estimator_cannot_change_the_frame_the_next_estimator_sees():
    def overwrite(d):
        d["correct"] = 1.0
        d.loc[0, "cluster"] = 99
        return float(d["correct"].mean())

    def add_column(d):
        d["extra"] = 0
        return float(d["correct"].mean())

    mean = lambda d: float(d["correct"].mean())  # noqa: E731
    with pytest.warns(EvalkitWarning, match="estimator changed its input data"):
        runs = mc_run(draw_frame, {"overwrite": overwrite, "add": add_column, "mean": mean},
                      truth=lambda d: float(d["correct"].mean()), n_reps=5, seed=3)
    alone = mc_run(draw_frame, {"mean": mean}, truth=0.5, n_reps=5, seed=3)
    by = runs.set_index(["estimator", "rep"])
    assert (by.loc["overwrite", "error"] == "estimator changed its input data").all()
    assert (by.loc["add", "error"] == "estimator changed its input data").all()
    np.testing.assert_array_equal(by.loc["mean", "estimate"], alone["estimate"])
    np.testing.assert_array_equal(by.loc["mean", "truth"], alone["estimate"])


def test_estimators_that_leave_the_data_alone_share_one_object():
    # Estimators may cache work per data set by identity (missing_study does): keep the object the same.
    seen = []
    mc_run(draw_frame, {"a": lambda d: seen.append(id(d)) or 0.0, "b": lambda d: seen.append(id(d)) or 0.0},
           truth=0.5, n_reps=2, seed=1)
    assert seen[0] == seen[1] and seen[2] == seen[3]


# --- executors ------------------------------------------------------------------------------


def serial_reference(n_reps=37):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        return mc_run(draw_normal, mixed_estimators(), truth=0.0, n_reps=n_reps, seed=21, progress=False)


def test_a_process_pool_gives_exactly_the_serial_result():
    serial = serial_reference()
    assert (serial["error"] != "").sum() > 10  # failures of every kind travel too
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool, warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        parallel = mc_run(draw_normal, mixed_estimators(), truth=0.0, n_reps=37, seed=21, progress=True,
                          executor=pool)
    assert list(parallel.columns) == list(RUN_COLUMNS)
    pd.testing.assert_frame_equal(parallel, serial, check_exact=True)


def test_a_process_pool_refuses_unpicklable_functions_clearly():
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        with pytest.raises(TypeError, match="must be picklable .*not lambdas"):
            mc_run(lambda rng: rng.normal(size=3), {"m": plain_mean}, truth=0.0, n_reps=3, seed=1, executor=pool)


def test_a_thread_pool_and_the_coverage_study_give_the_serial_result():
    from evalkit.montecarlo import mc_coverage_clustered

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        threaded = mc_run(draw_normal, {"z": z_interval}, truth=0.0, n_reps=25, seed=5, executor=pool)
        cov_pool = mc_coverage_clustered(icc=0.1, n_clusters=10, cluster_size=5, n_reps=30, seed=2, executor=pool)
    pd.testing.assert_frame_equal(threaded, mc_run(draw_normal, {"z": z_interval}, truth=0.0, n_reps=25, seed=5))
    pd.testing.assert_frame_equal(cov_pool, mc_coverage_clustered(icc=0.1, n_clusters=10, cluster_size=5, n_reps=30,
                                                                  seed=2))


def test_a_dask_cluster_gives_exactly_the_serial_result():
    distributed = pytest.importorskip("distributed")
    serial = serial_reference(n_reps=23)
    # In-process workers keep the test quick; the process pool test above covers pickling.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            on_dask = mc_run(draw_normal, mixed_estimators(), truth=0.0, n_reps=23, seed=21, progress=False,
                             executor=client.get_executor())
    pd.testing.assert_frame_equal(on_dask, serial, check_exact=True)


def test_docstring_examples_run():
    result = doctest.testmod(evalkit.montecarlo, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_share_above_mcse_matches_the_spread_of_the_share_over_replications() -> None:
    """The share's Monte Carlo SE against the SD of the share over 4,000 simulated studies."""
    rng = np.random.default_rng(7)
    truth = np.array([0.86, 0.89, 0.895, 0.90, 0.905, 0.91, 0.93, 0.95])
    se = np.full(truth.size, 0.01)
    shares = np.array([ek.mc_share_above(truth + rng.normal(0, se), se).share for _ in range(4000)])
    # the SE computed at the true values; the formula's own plug-in is checked on one draw below
    expected = ek.mc_share_above(truth, se).mcse
    sd = shares.std(ddof=1)
    # the SD of an SD over 4,000 draws is about sd / sqrt(2 * 4000), about 1.1%: allow 4 of those
    assert abs(sd - expected) <= 4 * sd / np.sqrt(2 * 4000)
    one = ek.mc_share_above(truth + rng.normal(0, se), se)
    assert one.n_settings == 8 and 0 <= one.n_undecided <= 8 and 0.05 < one.mcse < 0.2


def test_share_above_counts_and_refuses_bad_input() -> None:
    r = ek.mc_share_above([0.95, 0.91, 0.80], [0.001, 0.01, 0.001])
    assert r.share == pytest.approx(2 / 3) and r.n_undecided == 1
    with pytest.raises(ek.EvalkitInputError, match="mcses"):
        ek.mc_share_above([0.9, 0.8], [0.01])
    with pytest.raises(ek.EvalkitInputError, match="mcses"):
        ek.mc_share_above([0.9, 0.8], [0.01, -0.01])
    with pytest.raises(ek.EvalkitInputError, match="threshold"):
        ek.mc_share_above([0.9], [0.01], threshold=float("nan"))
    with pytest.raises(ek.EvalkitInputError, match="values"):
        ek.mc_share_above([], [])
