"""The Monte Carlo harness: determinism, failure bookkeeping, and a check against exact coverage."""

import math

import numpy as np
import pytest
from scipy import stats

from evalkit.clustered import Estimate, interval_t
from evalkit.montecarlo import mc_run, mc_summarise, mc_tolerance


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
    def flaky(x):
        if x[0] > 0:
            raise ValueError("degenerate")
        return z_interval(x)

    runs = mc_run(lambda rng: rng.normal(0, 1, 5), {"flaky": flaky}, truth=0.0, n_reps=200, seed=3, progress=False)
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
    with pytest.raises(ValueError):
        mc_run(lambda rng: 0, {}, truth=0.0, n_reps=5, seed=1)
    with pytest.raises(ValueError):
        mc_run(lambda rng: 0, {"a": float}, truth=0.0, n_reps=0, seed=1)
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
