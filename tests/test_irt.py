"""Tests for evalkit.irt: the 2PL model fitted by cBMM and by L-BFGS-B ([CBMM]).

Correctness only (recovery, monotone objective, agreement of the two fitters, standard errors
against a parametric bootstrap, degenerate rows/columns, bad input); nothing here is timed.
"""

from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest

import evalkit.irt
from evalkit import EvalkitWarning
from evalkit.irt import (
    DEFAULT_GTOL,
    IRTFit,
    irt_fit,
    irt_fit_lbfgs,
    irt_flag_uninformative,
    irt_group_easiness,
    irt_information,
    irt_objective,
    irt_rank_compare,
    irt_se,
)
from evalkit.simulate import simulate_2pl

SE_APPROXIMATION = 0.1
"""Allowed understatement of the fixed-other-block SEs on a 150 x 300 matrix (see the SE test)."""


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.corrcoef(x, y)[0, 1])


@pytest.fixture(scope="module")
def sim() -> tuple[np.ndarray, dict]:
    """A 200 x 800 matrix with 10% MCAR missing entries and known parameters."""
    return simulate_2pl(200, 800, rng=20260511, missing=0.1, mechanism="mcar")


@pytest.fixture(scope="module")
def fit(sim: tuple[np.ndarray, dict]) -> IRTFit:
    return irt_fit(sim[0])


def test_recovery_on_simulation(sim, fit):
    """Intent: with 800 items and 200 models every parameter block is recovered closely."""
    _, truth = sim
    assert fit.converged
    assert _corr(fit.theta, truth["theta"]) > 0.98
    assert _corr(fit.a, truth["a"]) > 0.85
    assert _corr(fit.b, truth["b"]) > 0.97
    # normalisation: theta has mean 0 and (population) variance 1, a is non-negative
    assert abs(fit.theta.mean()) < 1e-9 and abs(fit.theta.std() - 1) < 1e-9
    assert (fit.a >= 0).all()


def test_recovery_with_sigma(sim):
    """Intent: the temperature only rescales a and b (a fit at sigma=2 has a, b doubled)."""
    Y, _ = sim
    f1 = irt_fit(Y[:, :200], sigma=1.0, tol=1e-10, dtype=np.float64)
    f2 = irt_fit(Y[:, :200], sigma=2.0, tol=1e-10, dtype=np.float64)
    assert f2.objective == pytest.approx(f1.objective, rel=1e-6)
    np.testing.assert_allclose(f2.a, 2 * f1.a, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(f2.theta, f1.theta, atol=2e-2)


@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("dtype, slack", [(np.float64, 1e-12), (np.float32, 1e-7)])
def test_objective_never_increases(sim, dtype, slack, accelerate):
    """Intent: every cBMM iteration is an MM step (or a momentum step kept only when it does not
    increase the objective), so the history is non-increasing (to rounding)."""
    Y, _ = sim
    f = irt_fit(Y[:100, :300], tol=1e-9, dtype=dtype, accelerate=accelerate)
    h = f.history
    assert len(h) > 10
    assert np.all(np.diff(h) <= slack * h[1:])
    assert f.objective == h[-1]
    assert f.extra["accelerate"] is accelerate


def test_acceleration_reaches_the_same_optimum_in_fewer_iterations(sim):
    """Intent: momentum changes the path, not the answer."""
    Y, _ = sim
    plain = irt_fit(Y, tol=1e-10, dtype=np.float64, accelerate=False, max_iter=20_000)
    fast = irt_fit(Y, tol=1e-10, dtype=np.float64, accelerate=True)
    assert plain.converged and fast.converged
    assert fast.objective == pytest.approx(plain.objective, rel=1e-6)
    assert _corr(fast.theta, plain.theta) > 0.9999
    assert fast.n_iter < plain.n_iter


@pytest.mark.parametrize("accelerate", [False, True])
def test_ridge_objective_never_increases(sim, accelerate):
    """Intent: with a ridge the (penalised) objective is still minimised monotonically, and the
    reported objective is the penalised one that irt_objective recomputes."""
    Y, _ = sim
    f = irt_fit(Y[:100, :300], ridge=0.5, tol=1e-9, dtype=np.float64, accelerate=accelerate)
    h = f.history
    assert len(h) > 10 and np.all(np.diff(h) <= 1e-12 * h[1:])
    assert f.extra["ridge"] == 0.5
    assert irt_objective(Y[:100, :300], f.theta, f.a, f.b, ridge=0.5) == pytest.approx(f.objective, rel=1e-9)
    # the penalty is honoured: the ML fit has a lower likelihood-only objective, larger items
    ml = irt_fit(Y[:100, :300], tol=1e-9, dtype=np.float64)
    assert irt_objective(Y[:100, :300], f.theta, f.a, f.b) > ml.objective
    assert np.sum(f.a**2 + f.b**2) < np.sum(ml.a**2 + ml.b**2)


def test_ridge_keeps_separable_parameters_finite():
    """Intent: with few models many items are quasi-separated (every model but one or two answers
    them alike); ML then drifts to huge logits and warns, a small ridge keeps every parameter
    finite and moderate, and the fit converges."""
    Y, _ = simulate_2pl(15, 200, rng=3, missing=0.05)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always", EvalkitWarning)
        ml = irt_fit(Y, max_iter=1000, tol=1e-12)
    assert any("quasi-separation" in str(w.message) for w in rec)
    assert np.nanmax(np.abs(ml.theta)[:, None] * ml.a + np.abs(ml.b)) > 30
    for accelerate in (False, True):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always", EvalkitWarning)
            f = irt_fit(Y, ridge=0.5, accelerate=accelerate)
        assert not any("quasi-separation" in str(w.message) for w in rec)
        assert f.converged
        ok = np.isfinite(f.a)
        assert np.isfinite(f.theta).all() and np.isfinite(f.b[ok]).all() and ok.sum() >= 195
        assert np.nanmax(np.abs(f.theta)[:, None] * f.a + np.abs(f.b)) < 30


def test_ridge_cbmm_and_lbfgs_reach_the_same_optimum():
    """Intent: L-BFGS-B honours the same penalty and constraint, so the two fitters agree."""
    Y, _ = simulate_2pl(60, 150, rng=7, missing=0.05)
    f_mm = irt_fit(Y, ridge=1.0, tol=1e-11, max_iter=100_000, dtype=np.float64)
    f_lb = irt_fit_lbfgs(Y, ridge=1.0, tol=1e-13, dtype=np.float64)
    assert f_mm.converged and f_lb.converged
    assert f_mm.objective == pytest.approx(f_lb.objective, rel=2e-6)
    assert _corr(f_mm.theta, f_lb.theta) > 0.999
    assert _corr(f_mm.a, f_lb.a) > 0.999
    assert abs(f_lb.theta.mean()) < 1e-9 and abs(f_lb.theta.std() - 1) < 1e-9


def test_objective_function_matches_fit(sim, fit):
    """Intent: irt_objective evaluated at the fitted parameters is the fit's final objective."""
    Y, _ = sim
    assert irt_objective(Y, fit.theta, fit.a, fit.b) == pytest.approx(fit.objective, rel=1e-6)
    # and it is the plain mean cross-entropy over observed entries
    obs = ~np.isnan(Y)
    p = 1 / (1 + np.exp(-(np.outer(fit.theta, fit.a) + fit.b)))
    bce = -(Y * np.log(p) + (1 - Y) * np.log1p(-p))
    assert irt_objective(Y, fit.theta, fit.a, fit.b) == pytest.approx(bce[obs].mean(), rel=1e-10)


def test_cbmm_and_lbfgs_reach_the_same_optimum():
    """Intent: both fitters minimise the same objective under the same normalisation."""
    Y, _ = simulate_2pl(60, 150, rng=7, missing=0.05)
    f_mm = irt_fit(Y, tol=1e-11, max_iter=100_000, dtype=np.float64)
    f_lb = irt_fit_lbfgs(Y, tol=1e-13, dtype=np.float64)
    assert f_mm.converged and f_lb.converged
    assert f_mm.objective == pytest.approx(f_lb.objective, rel=2e-6)
    assert _corr(f_mm.theta, f_lb.theta) > 0.999
    assert _corr(f_mm.b, f_lb.b) > 0.999


def test_lbfgs_stops_at_target(sim, fit):
    """Intent: the baseline can be timed to the objective cBMM reached."""
    Y, _ = sim
    # The default fit's Newton polish ends within float32 rounding of the optimum, where float32
    # L-BFGS-B may stop a few 1e-11 short; the target is the objective cBMM reaches on the
    # objective-change rule alone (gtol=None), short of the optimum.
    target = irt_fit(Y, gtol=None).objective
    assert target >= fit.objective
    # a tight ftol so that L-BFGS-B does not stop on its own before the target
    f = irt_fit_lbfgs(Y, target=target, tol=1e-12)
    assert f.extra["stopped_at_target"]
    assert f.objective <= target
    assert np.isfinite(f.time_to_objective(target))


def test_standard_errors_match_parametric_bootstrap():
    """Intent: the information-based SEs agree with the spread of refits on simulated data.

    Parametric bootstrap from the truth; for each parameter the bootstrap SD over R refits has
    relative Monte Carlo error about 1/sqrt(2(R-1)); the average ratio SD/SE over K parameters
    is compared with 1 within 4 Monte Carlo standard errors of that average, plus
    SE_APPROXIMATION: holding the other block fixed ignores its uncertainty, so at this size the
    SEs may understate the spread by a few per cent (measured: 2-5%); they must never overstate it.
    """
    n, m, R = 150, 300, 30
    rng = np.random.default_rng(11)
    Y0, truth = simulate_2pl(n, m, rng=rng)
    p_true = 1 / (1 + np.exp(-(np.outer(truth["theta"], truth["a"]) + truth["b"])))
    est = {"theta": [], "a": [], "b": []}
    ses = {"theta": [], "a": [], "b": []}
    for _ in range(R):
        Y = (rng.random((n, m)) < p_true).astype(float)  # fresh outcomes, fixed parameters
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            f = irt_fit(Y, tol=1e-8)
        if f.excluded_items or f.excluded_models:
            continue
        se = irt_se(f, Y)
        for k in est:
            est[k].append(getattr(f, k))
            ses[k].append(getattr(se, k))
    R_ok = len(est["theta"])
    assert R_ok >= R - 3
    rel_mc = 1 / np.sqrt(2 * (R_ok - 1))
    for k in ("theta", "a", "b"):
        sd = np.std(np.asarray(est[k]), axis=0, ddof=1)
        se = np.mean(np.asarray(ses[k]), axis=0)
        ratio = sd / se
        mcse = np.sqrt(rel_mc**2 / ratio.size + ratio.var(ddof=1) / ratio.size)
        assert ratio.mean() > 1 - 4 * mcse, (k, ratio.mean(), mcse)
        assert ratio.mean() < 1 + 4 * mcse + SE_APPROXIMATION, (k, ratio.mean(), mcse)


def test_degenerate_rows_and_columns_are_excluded():
    """Intent: no-variation items and models are reported, excluded and get NaN parameters."""
    Y, _ = simulate_2pl(200, 60, rng=3, a_spread=0.2)
    Y[:, 0] = 1.0  # everyone right
    Y[:, 1] = 0.0  # everyone wrong
    Y[:, 2] = np.nan  # nobody answered
    Y[5, :] = 1.0  # a model that got everything right
    Y[5, 2] = np.nan
    with pytest.warns(EvalkitWarning, match="excluded"):
        f = irt_fit(Y)
    assert f.excluded_items[0] == "all_correct"
    assert f.excluded_items[1] == "all_wrong"
    assert f.excluded_items[2] == "all_missing"
    assert f.excluded_models == {5: "all_correct"}
    assert np.isnan(f.a[:3]).all() and np.isnan(f.theta[5])
    assert np.isfinite(f.a[3:]).all() and np.isfinite(np.delete(f.theta, 5)).all()
    assert irt_flag_uninformative(f)[:3].all()
    se = irt_se(f, Y)
    assert np.isnan(se.theta[5]) and np.isfinite(np.delete(se.theta, 5)).all()


@pytest.mark.parametrize(
    "Y, match",
    [
        (np.zeros(5), "two-dimensional"),
        (np.zeros((2, 3, 4)), "two-dimensional"),
        (np.full((3, 4), 2.0), "0/1"),
        (np.full((3, 4), -1.0), "0/1"),
        (np.full((3, 4), np.nan), "no observed"),
        (np.array([[0, 1, np.inf], [1, 0, 1]]), "0/1"),
        (np.zeros((1, 4)), "at least 2 models"),
    ],
)
def test_bad_input_raises(Y, match):
    with pytest.raises(ValueError, match=match):
        irt_fit(Y)


def test_bad_arguments_raise(sim):
    Y, _ = sim
    for sigma in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="sigma"):
            irt_fit(Y, sigma=sigma)
    with pytest.raises(ValueError, match="tol"):
        irt_fit(Y, tol=0)
    for gtol in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="gtol"):
            irt_fit(Y, gtol=gtol)
    for n_jobs in (0, -2):
        with pytest.raises(ValueError, match="n_jobs"):
            irt_fit(Y, n_jobs=n_jobs)
    for ridge in (-0.1, np.inf):
        with pytest.raises(ValueError, match="ridge"):
            irt_fit(Y, ridge=ridge)
    with pytest.raises(TypeError):
        irt_fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="shapes"):
        irt_objective(Y, np.zeros(3), np.zeros(800), np.zeros(800))
    with pytest.raises(ValueError, match="mechanism"):
        simulate_2pl(5, 5, rng=0, missing=0.1, mechanism="bogus")
    with pytest.raises(TypeError):
        simulate_2pl(5, 5, rng=None)


@pytest.mark.parametrize("mechanism", ["mcar", "mar", "mnar"])
def test_simulate_missing_fraction(mechanism):
    """Intent: each mechanism removes about the requested share of entries."""
    Y, truth = simulate_2pl(200, 300, rng=5, missing=0.2, mechanism=mechanism)
    frac = np.isnan(Y).mean()
    assert truth["missing"] == pytest.approx(frac)
    assert abs(frac - 0.2) < 0.02
    assert set(np.unique(Y[~np.isnan(Y)])) <= {0.0, 1.0}


def test_mnar_biases_easiness_upwards():
    """Intent: when only wrong answers go missing, the fitted easiness is biased upwards."""
    Y, truth = simulate_2pl(150, 300, rng=9, missing=0.2, mechanism="mnar")
    f = irt_fit(Y)
    assert np.mean(f.b - truth["b"]) > 0.3
    Y, truth = simulate_2pl(150, 300, rng=9, missing=0.2, mechanism="mcar")
    f = irt_fit(Y)
    assert abs(np.mean(f.b - truth["b"])) < 0.15


def test_derived_views(sim, fit):
    Y, truth = sim
    grid = np.linspace(-3, 3, 7)
    info = irt_information(fit, grid)
    assert info.shape == (7, Y.shape[1]) and (info >= 0).all()
    rc = irt_rank_compare(fit, Y)
    assert rc.n_models == Y.shape[0] and 0.8 < rc.tau <= 1.0
    # items with tiny true discrimination are flagged more often than the others
    flag = irt_flag_uninformative(fit, threshold=0.3)
    low = truth["a"] < 0.3
    assert flag[low].mean() > flag[~low].mean()
    groups = np.where(truth["b"] > 0, "easy", "hard")
    tab = irt_group_easiness(fit, groups)
    assert list(tab.index) == ["hard", "easy"] and tab["n_items"].sum() == Y.shape[1]


# --- determinism across threads and cores ----------------------------------------------------


@pytest.mark.parametrize("fitter", [irt_fit, irt_fit_lbfgs])
def test_results_are_bit_identical_for_any_number_of_threads(fitter):
    """Intent: n_jobs defaults to the core count, so any dependence on it would give a user on 8
    cores other numbers than CI. Before, 2 and 3 jobs moved theta by up to 0.1 on this matrix."""
    Y, _ = simulate_2pl(500, 200, rng=np.random.default_rng(1), missing=0.1)
    fits = [fitter(Y, n_jobs=j) for j in (1, 2, 3)]
    for f in fits[1:]:
        for name in ("theta", "a", "b", "history"):
            np.testing.assert_array_equal(getattr(f, name), getattr(fits[0], name), err_msg=name)
        assert f.objective == fits[0].objective and f.n_iter == fits[0].n_iter


def test_many_row_blocks_reduce_in_a_fixed_order(monkeypatch):
    """Intent: with small chunks the rows fall into many blocks (more than the block cap, so blocks
    hold several chunks); threads must still not change a single bit, of the fit or of the SEs."""
    monkeypatch.setattr(evalkit.irt, "_CHUNK_ELEMENTS", 1000)
    Y, _ = simulate_2pl(400, 100, rng=np.random.default_rng(2), missing=0.2)
    blocks = evalkit.irt._row_blocks(400, evalkit.irt._row_step(100))
    assert 1 < len(blocks) <= evalkit.irt._MAX_BLOCKS and blocks[0][0] == 0 and blocks[-1][1] == 400
    assert all(hi == lo2 for (_, hi), (lo2, _) in zip(blocks, blocks[1:], strict=False))
    fits = [irt_fit(Y, n_jobs=j) for j in (1, 2, 3)]
    for f in fits[1:]:
        np.testing.assert_array_equal(f.theta, fits[0].theta)
        np.testing.assert_array_equal(f.b, fits[0].b)
    ses = [irt_se(fits[0], Y) for _ in range(2)]
    np.testing.assert_array_equal(ses[0].theta, ses[1].theta)


# --- converged means converged ---------------------------------------------------------------


@pytest.mark.parametrize("fitter", [irt_fit, irt_fit_lbfgs])
@pytest.mark.parametrize("shape, seed", [((500, 200), 1), ((300, 1500), 4)])
def test_default_fit_is_within_a_small_fraction_of_an_se_of_the_optimum(fitter, shape, seed):
    """Intent: converged=True must mean the parameters sit at the optimum on the scale that
    matters, their standard errors. Before, the default fit stopped 0.18 SE (theta) and 0.34 SE
    (a) from the tight optimum on the first matrix while reporting converged=True."""
    Y, _ = simulate_2pl(*shape, rng=np.random.default_rng(seed), missing=0.1)
    tight = irt_fit(Y, tol=1e-13, gtol=1e-6, dtype=np.float64, max_iter=5000)
    assert tight.converged and tight.extra["score_se"] <= 1e-6
    se = irt_se(tight, Y)
    f = fitter(Y)
    assert f.converged and f.extra["score_se"] <= DEFAULT_GTOL
    for name in ("theta", "a", "b"):
        gap = np.nanmax(np.abs(getattr(f, name) - getattr(tight, name)) / getattr(se, name))
        assert gap < 0.03, f"{f.method}: {name} is {gap:.3f} SE from the optimum"


def test_the_objective_gate_alone_is_not_convergence():
    """Intent: the old rule (relative decrease < 1e-7) stops while the score statistic says the
    abilities are still a sizeable fraction of an SE away; gtol=None keeps that rule on request."""
    Y, _ = simulate_2pl(500, 200, rng=np.random.default_rng(1), missing=0.1)
    old = irt_fit(Y, gtol=None)
    new = irt_fit(Y)
    assert old.extra["score_se"] > 10 * DEFAULT_GTOL >= 10 * new.extra["score_se"]


def test_quasi_separated_data_report_no_convergence():
    """Intent: with a few models, many items are answered right by all but one model: the ML
    parameters run off to infinity. The fit must stop in reasonable time and say it did not converge,
    and a small ridge must then converge."""
    Y, _ = simulate_2pl(8, 400, rng=np.random.default_rng(3), missing=0.0)
    with pytest.warns(EvalkitWarning, match="without convergence|no convergence"):
        ml = irt_fit(Y, max_iter=3000)
    assert not ml.converged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        ridged = irt_fit(Y, ridge=0.5)
    assert ridged.converged and ridged.extra["score_se"] <= DEFAULT_GTOL


def test_docstring_examples_run():
    result = doctest.testmod(evalkit.irt, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# --------------------------------------------------------------------------------------------
# model checks: irt_item_fit and irt_dimensionality
# --------------------------------------------------------------------------------------------


def _true_fit(fit: IRTFit, truth: dict) -> IRTFit:
    """The fit object with the true parameters put in (the statistics' exact null)."""
    import dataclasses

    return dataclasses.replace(fit, theta=np.asarray(truth["theta"], float), a=np.asarray(truth["a"], float),
                               b=np.asarray(truth["b"], float))


def test_item_fit_mean_squares_have_expectation_one_at_the_true_parameters(sim, fit):
    """Intent: at the true parameters infit and outfit average 1 and their z values are ~N(0, 1).

    Tolerances are 4 Monte Carlo SEs of the mean over the 800 items (items are independent given
    the parameters)."""
    from evalkit.irt import irt_item_fit

    Y, truth = sim
    tab = irt_item_fit(_true_fit(fit, truth), Y)
    assert len(tab) == Y.shape[1] and (tab["n_obs"] == (~np.isnan(Y)).sum(axis=0)).all()
    for col in ("infit", "outfit"):
        x = tab[col].to_numpy()
        assert abs(x.mean() - 1.0) < 4 * x.std(ddof=1) / np.sqrt(x.size), col
    for col in ("infit_z", "outfit_z"):
        z = tab[col].to_numpy()
        assert abs(z.mean()) < 4 / np.sqrt(z.size), col
        # the SD of a sample SD of n normals has SE about 1 / sqrt(2 n)
        assert abs(z.std(ddof=1) - 1.0) < 4 / np.sqrt(2 * z.size), col


def test_item_fit_matches_its_definition_on_one_item(sim, fit):
    from evalkit.irt import irt_item_fit

    Y, _ = sim
    tab = irt_item_fit(fit, Y)
    j = 3
    obs = ~np.isnan(Y[:, j])
    p = 1 / (1 + np.exp(-(fit.theta * fit.a[j] + fit.b[j]) / fit.sigma))[obs]
    y = Y[obs, j]
    w = p * (1 - p)
    assert np.isclose(tab.loc[j, "outfit"], np.mean((y - p) ** 2 / w))
    assert np.isclose(tab.loc[j, "infit"], np.sum((y - p) ** 2) / np.sum(w))


def test_item_fit_flags_items_the_2pl_cannot_describe():
    """Intent: items whose success is high at both ends of ability and low in the middle (no
    2PL curve can do that) are flagged by the grouped statistic, ordinary items rarely; the mean
    squares cannot see it, because the fit flattens such an item (a near 0) and a flat curve has
    mean square about 1 whatever the data."""
    from evalkit.irt import irt_item_fit

    Y, truth = simulate_2pl(300, 400, rng=11, missing=0.05)
    rng = np.random.default_rng(12)
    bad = np.arange(40)
    p_bad = np.where(np.abs(truth["theta"]) > 0.8, 0.9, 0.15)
    Y[:, bad] = (rng.random((300, bad.size)) < p_bad[:, None]).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        f = irt_fit(Y)
    tab = irt_item_fit(f, Y)
    flagged_bad = (tab.loc[bad, "group_p"] < 0.01).mean()
    flagged_good = (tab.loc[40:, "group_p"] < 0.01).mean()
    # nominal 1% for good items; 5% leaves room for the approximate degrees of freedom
    assert flagged_bad > 0.8 and flagged_good < 0.05
    assert abs(tab.loc[bad, "outfit"].mean() - 1) < 0.1   # what the mean squares miss


def _two_dimensional(n_models: int, n_items: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Half the items depend on one ability, half on an independent second one."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((n_models, 2))
    group = np.arange(n_items) % 2
    a = np.exp(rng.normal(0, 0.3, n_items))
    b = rng.normal(0, 1, n_items)
    x = theta[:, group] * a + b
    return (rng.random(x.shape) < 1 / (1 + np.exp(-x))).astype(float), group


def test_dimensionality_detects_a_second_ability_and_finds_its_items():
    from evalkit.irt import irt_dimensionality

    Y, group = _two_dimensional(120, 300, seed=5)
    f = irt_fit(Y)
    d = irt_dimensionality(f, Y, n_sim=19, seed=6)
    assert d.p_value == pytest.approx(1 / 20) and d.ratio > 1.5
    keep = np.isfinite(d.item_loadings)
    assert abs(_corr(d.item_loadings[keep], group[keep].astype(float))) > 0.8


def test_dimensionality_share_is_inside_its_null_distribution_under_the_2pl():
    """Intent: on data from a unidimensional 2PL the observed first share lies within 4 SDs of
    the simulated null (the SD is estimated from the 19 null draws)."""
    from evalkit.irt import irt_dimensionality

    Y, _ = simulate_2pl(120, 300, rng=7, missing=0.1)
    f = irt_fit(Y)
    d = irt_dimensionality(f, Y, n_sim=19, seed=8)
    null = d.null_share[:, 0]
    assert abs(d.share[0] - null.mean()) < 4 * null.std(ddof=1)
    assert d.share.shape == (3,) and np.all(np.diff(d.share) <= 0)


def test_model_checks_reject_bad_input(sim, fit):
    from evalkit.errors import EvalkitInputError
    from evalkit.irt import irt_dimensionality, irt_item_fit

    Y, _ = sim
    with pytest.raises(EvalkitInputError):
        irt_item_fit(fit, Y[:, :10])
    with pytest.raises(EvalkitInputError):
        irt_item_fit(fit, Y, n_groups=2)
    with pytest.raises(EvalkitInputError):
        irt_dimensionality(fit, Y, n_sim=0)
    with pytest.raises(EvalkitInputError):
        irt_dimensionality(fit, Y, n_components=0)
