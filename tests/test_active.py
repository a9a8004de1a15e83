"""Tests of evalkit.active: FAQ and Pro-Active Inference ([FAQ], arXiv 2601.20251).

Correctness only: the PAI estimator unbiased and its Wald interval covering within Monte Carlo
error on a simulated factor world where the truth is known (also with a wrong working model);
the Sherman-Morrison update equal to the full Laplace precision; the PPI++ baseline equal to
``ppi_py.ppi_mean_ci`` on the same inputs; the ceiling and ESS definitions on cases with known
answers; determinism and batch independence; bad input. Nothing here is timed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from evalkit.active import (
    ACTIVE_SETTINGS,
    AUTHORS_PARAMS,
    METHODS,
    ActiveFactors,
    ActiveParams,
    _faq_blocks,
    _korn_graubard,
    _laplace_step,
    _ppi_mean,
    _rngs,
    active_factor_calibration,
    active_factor_cv,
    active_factor_fit,
    active_run,
    active_sampling_trace,
)
from evalkit.active_evaluation import active_ceiling, active_ess_bootstrap, active_evaluate, active_tune
from evalkit.errors import EvalkitInputError
from evalkit.montecarlo import mc_tolerance

N_ITEMS = 400
RANK = 3


def _world(seed: int, n_models: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A logistic factor world: returns (U, V, b, Y) with Y ~ Bernoulli(sigmoid(U V' + b))."""
    rng = np.random.default_rng(seed)
    U = rng.normal(0, 1, (n_models, RANK))
    V = rng.normal(0, 0.8, (N_ITEMS, RANK))
    b = rng.normal(0, 1.2, N_ITEMS)
    P = 1 / (1 + np.exp(-(U @ V.T + b)))
    return U, V, b, (rng.random(P.shape) < P).astype(float)


@pytest.fixture(scope="module")
def world() -> dict:
    U, V, b, Y = _world(7, 260)
    H = Y[:200].copy()
    H[np.random.default_rng(8).random(H.shape) < 0.2] = np.nan
    fac = active_factor_fit(H, rank=RANK)
    return {"U": U, "V": V, "b": b, "Y": Y, "H": H, "fac": fac, "Z": Y[200:]}


def test_factor_fit_recovers_probabilities(world):
    """Intent: the refit model predicts held-back test rows' item difficulty (logits correlate)."""
    fac = world["fac"]
    assert fac.converged
    true_logit_mean = (world["U"][:200] @ world["V"].T + world["b"]).mean(axis=0)
    fit_logit_mean = (fac.U @ fac.V.T + fac.b).mean(axis=0)
    assert np.corrcoef(true_logit_mean, fit_logit_mean)[0, 1] > 0.95
    # the prior is N(mean(U), cov(U)) of the fitted historical factors
    np.testing.assert_allclose(fac.prior_mean, fac.U.mean(axis=0))
    np.testing.assert_allclose(fac.prior_cov, np.cov(fac.U, rowvar=False) + 1e-6 * np.eye(RANK))


def test_factor_cv_prefers_true_rank_over_rank_one(world):
    """Intent: held-out log loss is lower at the generating rank than at rank 1."""
    fit = active_factor_cv(world["H"], ranks=(1, 3), seed=0)
    assert fit.cv is not None
    ll = dict(zip(fit.cv["rank"], fit.cv["heldout_logloss"], strict=True))
    assert ll[3] < ll[1]
    assert fit.rank == 3


def test_factor_calibration_uses_the_cv_split(world):
    """Intent: the check hides the entries the rank search hid (same seed): its held-out log loss is the
    CV's at that rank, and its bins partition the hidden entries into near-equal quantile bins."""
    cvfit = active_factor_cv(world["H"], ranks=(RANK,), seed=5)
    cal = active_factor_calibration(world["H"], cvfit, seed=5)
    assert cvfit.cv is not None
    assert cal.attrs["heldout_logloss"] == pytest.approx(float(cvfit.cv["heldout_logloss"].iloc[0]), rel=1e-12)
    n_hidden = int(round(0.1 * np.isfinite(world["H"]).sum()))
    assert int(cal["n"].sum()) == n_hidden and len(cal) == 10
    assert cal["n"].max() - cal["n"].min() <= 1
    assert (np.diff(cal["p_mean"].to_numpy()) > 0).all()
    np.testing.assert_allclose(cal["gap"], cal["observed"] - cal["p_mean"])
    np.testing.assert_allclose(cal["z"], cal["gap"] / cal["se"])


def test_factor_calibration_known_truth():
    """Intent: a correctly specified model fitted on long rows (1,500 items per model, so each model's
    factor is estimated precisely) is calibrated: every bin within 4 binomial SEs (a calibrated model
    fails this with probability about 6e-4 over 10 bins). On short, gappy rows (the fixture: about 320
    entries per model) the fitted factors are noisy and the held-out predictions too extreme: the lowest
    bin is answered correctly more often than predicted, the highest less often, each beyond 3 SEs."""
    rng = np.random.default_rng(3)
    U, V, b = rng.normal(0, 1, (300, 1)), rng.normal(0, 0.8, (1500, 1)), rng.normal(0, 1.0, 1500)
    Y = (rng.random((300, 1500)) < 1 / (1 + np.exp(-(U @ V.T + b)))).astype(float)
    cal = active_factor_calibration(Y, active_factor_fit(Y, rank=1), seed=3)
    assert (cal["z"].abs() < 4).all(), cal
    U, V, b, Yw = _world(7, 260)
    H = Yw[:200].copy()
    H[np.random.default_rng(8).random(H.shape) < 0.2] = np.nan
    short = active_factor_calibration(H, active_factor_fit(H, rank=RANK), seed=0)
    assert short["z"].iloc[0] > 3 and short["z"].iloc[-1] < -3, short


def test_factor_calibration_rejects_bad_input(world):
    """Intent: the check names the argument it cannot use."""
    with pytest.raises(EvalkitInputError, match="factors"):
        active_factor_calibration(world["H"], "rank 3", seed=0)
    with pytest.raises(EvalkitInputError, match="400 items"):
        active_factor_calibration(world["H"][:, :50], world["fac"], seed=0)
    with pytest.raises(EvalkitInputError, match="n_bins"):
        active_factor_calibration(world["H"], world["fac"], seed=0, n_bins=1)
    with pytest.raises(EvalkitInputError, match="holdout"):
        active_factor_calibration(world["H"], world["fac"], seed=0, holdout=0.7)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["faq", "faq_weighted", "active_inference", "uniform", "ppi", "stratified"])
def test_unbiased_and_covers(world, method):
    """Intent: on a known finite population, bias is within 4 MCSE and coverage within mc_tolerance.

    60 models x 25 trials; the estimand of each (model, trial) is the mean of that model's row.
    """
    res = active_run(world["Z"], world["fac"], 120, method=method, n_trials=25, seed=11)
    err = (res.estimate - res.truth[:, None]).ravel()
    assert abs(err.mean()) <= 4 * err.std(ddof=1) / np.sqrt(err.size)
    cover = ((res.ci_low <= res.truth[:, None]) & (res.truth[:, None] <= res.ci_high)).mean()
    assert abs(cover - 0.95) <= mc_tolerance(0.95, err.size)


@pytest.mark.slow
def test_pai_valid_with_a_wrong_working_model(world):
    """Intent: PAI stays unbiased and covers when the factor model is badly wrong (rank 1, shifted)."""
    fac = active_factor_fit(world["H"], rank=1)
    wrong = ActiveFactors(V=fac.V, b=fac.b - 1.5, U=fac.U, prior_mean=fac.prior_mean, prior_cov=fac.prior_cov,
                          rank=1, weight_decay=1.0, objective=np.nan, converged=True)
    res = active_run(world["Z"], wrong, 120, method="faq", n_trials=25, seed=12)
    err = (res.estimate - res.truth[:, None]).ravel()
    assert abs(err.mean()) <= 4 * err.std(ddof=1) / np.sqrt(err.size)
    cover = ((res.ci_low <= res.truth[:, None]) & (res.truth[:, None] <= res.ci_high)).mean()
    assert abs(cover - 0.95) <= mc_tolerance(0.95, err.size)


def test_faq_beats_uniform_with_a_good_model(world):
    """Intent: with a well-fitted factor model FAQ's pooled ESS exceeds 1 clearly."""
    runs = [active_run(world["Z"], world["fac"], 120, method=m, n_trials=10, seed=3) for m in ("uniform", "faq")]
    table = active_evaluate(runs).set_index("method")
    assert table.loc["faq", "ess_low"] > 1.0
    assert table.loc["uniform", "ess_width_wr"] == pytest.approx(1.0)


def test_rank_one_update_equals_full_laplace_precision():
    """Intent: after t Sherman-Morrison steps, Sigma_t^{-1} = Sigma_0^{-1} + sum_s w_s v_s v_s'."""
    rng = np.random.default_rng(0)
    k = 4
    A = rng.normal(size=(k, k))
    S0 = A @ A.T + np.eye(k)
    u = rng.normal(size=(1, k))
    S = S0[None].copy()
    prec = np.linalg.inv(S0)
    for _ in range(30):
        v = rng.normal(size=(1, k))
        p = 1 / (1 + np.exp(-(u @ v.T).ravel()))
        z = (rng.random(1) < 0.5).astype(float)
        prec += p * (1 - p) * v.T @ v
        u, S, _, _ = _laplace_step(u, S, v, z, p)
        np.testing.assert_allclose(S[0], np.linalg.inv(prec), rtol=1e-9, atol=1e-12)


def test_one_step_is_the_newton_step_of_the_full_posterior():
    """Intent: from the prior mean, one update is exactly one Newton step on the log posterior."""
    rng = np.random.default_rng(1)
    k = 3
    S0 = np.diag([1.0, 2.0, 0.5])
    m0 = rng.normal(size=k)
    v = rng.normal(size=k)
    z = 1.0
    p = 1 / (1 + np.exp(-m0 @ v))
    # gradient and Hessian of log N(u; m0, S0) + log Bernoulli(z; sigmoid(u'v)) at u = m0
    grad = (z - p) * v
    hess = -np.linalg.inv(S0) - p * (1 - p) * np.outer(v, v)
    newton = m0 - np.linalg.solve(hess, grad)
    u1, S1, _, _ = _laplace_step(m0[None], S0[None], v[None], np.array([z]), np.array([p]))
    np.testing.assert_allclose(u1[0], newton, rtol=1e-10)
    np.testing.assert_allclose(S1[0], -np.linalg.inv(hess), rtol=1e-10)


def test_online_mean_close_to_the_map_refit():
    """Intent: after many observations the online mean is within a fraction of a posterior SD of the MAP."""
    rng = np.random.default_rng(2)
    k = 3
    S0 = np.eye(k)
    truth = rng.normal(size=k)
    Vs = rng.normal(size=(300, k))
    zs = (rng.random(300) < 1 / (1 + np.exp(-Vs @ truth))).astype(float)
    u, S = np.zeros((1, k)), S0[None].copy()
    for v, z in zip(Vs, zs, strict=True):
        p = 1 / (1 + np.exp(-(u[0] @ v)))
        u, S, _, _ = _laplace_step(u, S, v[None], np.array([z]), np.array([p]))

    def negpost(x: np.ndarray) -> float:
        eta = Vs @ x
        return float(np.sum(np.logaddexp(0, eta) - zs * eta) + 0.5 * x @ x)

    mode = optimize.minimize(negpost, np.zeros(k), method="BFGS").x
    sd = np.sqrt(np.diag(S[0]))
    assert np.all(np.abs(u[0] - mode) < 0.5 * sd)


def test_ppi_matches_ppi_py():
    """Intent: the control-variate baseline is PPI++ exactly: same inputs, same interval as ppi_py."""
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(5)
    N, n = 500, 80
    f_all = rng.uniform(0.05, 0.95, N)
    z_all = (rng.random(N) < f_all).astype(float)
    idx = rng.integers(0, N, (3, n))
    y, yhat = z_all[idx], f_all[idx]
    est, se = _ppi_mean(y, yhat, f_all)
    for r in range(3):
        lo, hi = ppi_py.ppi_mean_ci(y[r], yhat[r], f_all, alpha=0.05)
        half = 1.959963984540054 * se[r]
        np.testing.assert_allclose([est[r] - half, est[r] + half], [float(np.ravel(lo)[0]), float(np.ravel(hi)[0])],
                                   rtol=1e-10)
        point = ppi_py.ppi_mean_pointestimate(y[r], yhat[r], f_all)
        np.testing.assert_allclose(est[r], float(np.ravel(point)[0]), rtol=1e-10)


def test_ppi_run_matches_ppi_py_end_to_end(world):
    """Intent: active_run(method="ppi", interval="wald") gives ppi_py's interval for the sample it drew."""
    ppi_py = pytest.importorskip("ppi_py")
    from evalkit.active import _rngs

    fac, Z = world["fac"], world["Z"][:2]
    res = active_run(Z, fac, 50, method="ppi", seed=9, interval="wald")
    f_all = fac.predict()
    for m, g in enumerate(_rngs(9, 2, 1)):
        idx = g.integers(0, N_ITEMS, size=50)
        lo, hi = ppi_py.ppi_mean_ci(Z[m, idx], f_all[idx], f_all, alpha=0.05)
        np.testing.assert_allclose([res.ci_low[m, 0], res.ci_high[m, 0]], [float(np.ravel(lo)[0]),
                                                                          float(np.ravel(hi)[0])], rtol=1e-9)


def test_ceiling_is_one_when_the_model_knows_nothing():
    """Intent: constant p = theta gives uniform q and exactly the uniform variance (ESS 1)."""
    rng = np.random.default_rng(3)
    Z = (rng.random((4, 200)) < 0.3).astype(float)
    P = np.repeat(Z.mean(axis=1, keepdims=True), 200, axis=1)
    out = active_ceiling(P, Z, 50)
    assert out["ess_pooled"] == pytest.approx(1.0)


def test_ceiling_large_when_the_model_is_sharp():
    rng = np.random.default_rng(4)
    P = np.where(rng.random((3, 300)) < 0.5, 0.02, 0.98)
    Z = (rng.random(P.shape) < P).astype(float)
    assert active_ceiling(P, Z, 30)["ess_pooled"] > 3


def test_same_seed_same_result_and_batch_independence(world):
    """Intent: a row's random numbers follow its position in the batch, not the other rows' data.

    Generators are handed out by row: the same seed gives the same bits, a model keeps its result
    (to arithmetic rounding) whatever the other rows hold, and a model run alone gets row 0's draws.
    """
    Z = world["Z"][:3]
    a = active_run(Z, world["fac"], 40, method="faq", n_trials=2, seed=4)
    b = active_run(Z, world["fac"], 40, method="faq", n_trials=2, seed=4)
    np.testing.assert_array_equal(a.estimate, b.estimate)
    alone = active_run(Z[:1], world["fac"], 40, method="faq", n_trials=2, seed=4)
    np.testing.assert_allclose(alone.estimate[0], a.estimate[0], rtol=1e-6)
    swapped = active_run(Z[[0, 2, 1]], world["fac"], 40, method="faq", n_trials=2, seed=4)
    np.testing.assert_allclose(swapped.estimate[0], a.estimate[0], rtol=1e-6)   # other rows' data: no effect
    second_alone = active_run(Z[1:2], world["fac"], 40, method="faq", n_trials=2, seed=4)
    second_first = active_run(Z[[1, 0]], world["fac"], 40, method="faq", n_trials=2, seed=4)
    np.testing.assert_allclose(second_alone.estimate[0], second_first.estimate[0], rtol=1e-6)  # position 0's draws
    assert not np.allclose(second_alone.estimate[0], a.estimate[1])              # row 1's draws differ


@pytest.mark.parametrize("method", ["faq", "faq_norep", "faq_weighted"])
@pytest.mark.parametrize("params", [ActiveParams(), ActiveParams(beta0=0.5, rho=0.4, gamma=0.1),
                                    ActiveParams(beta0=2.0, rho=0.01)])
def test_faq_blocks_and_threads_give_the_same_bits(world, method, params):
    """Intent: the number of threads never changes a bit; the block size changes at most the rounding.

    Blocks of rows (models x trials) are fixed by ``chunk``, not by the machine, and each is
    computed by one call whatever thread runs it: every estimate and standard error is exactly
    equal for 1 or 2 threads. Across block sizes, a row's float32 logits are a BLAS matrix
    product whose rounding can depend on where the row falls in the kernel's tiles (on AMD Zen,
    OpenBLAS tiles 4 rows and rounds a 2-row remainder in another micro-kernel), so block sizes
    that are multiples of 8 rows must agree bit for bit with one block holding every row (24
    rows), and any other block size agrees to float32 rounding.
    """
    Z = world["Z"][:24]
    n_rows, budget = Z.shape[0], 50
    ref_est, ref_se = _faq_blocks(Z, world["fac"], budget, params, _rngs(11, n_rows, 1), method, "source",
                                  n_jobs=1, chunk=n_rows)
    assert np.isfinite(ref_est).all() and np.isfinite(ref_se).all()
    for chunk in (6, 8, 10, 16):
        one_thread = _faq_blocks(Z, world["fac"], budget, params, _rngs(11, n_rows, 1), method, "source",
                                 n_jobs=1, chunk=chunk)
        two_threads = _faq_blocks(Z, world["fac"], budget, params, _rngs(11, n_rows, 1), method, "source",
                                  n_jobs=2, chunk=chunk)
        for got, threaded in zip(one_thread, two_threads, strict=True):
            np.testing.assert_array_equal(threaded, got)
        est, se = one_thread
        if chunk % 8 == 0:
            np.testing.assert_array_equal(est, ref_est)
            np.testing.assert_array_equal(se, ref_se)
        else:
            np.testing.assert_allclose(est, ref_est, rtol=1e-6)
            np.testing.assert_allclose(se, ref_se, rtol=1e-5)
    # and active_run (threads by default) gives the same numbers
    run = active_run(Z, world["fac"], budget, method=method, params=params, seed=11, variance="source")
    np.testing.assert_array_equal(run.estimate[:, 0], ref_est)
    np.testing.assert_array_equal(run.se[:, 0], ref_se)


def test_without_replacement_never_repeats(world):
    trace = active_sampling_trace(world["Z"][0], world["fac"], 60, replace=False, seed=1)
    # q_t sums to one and puts zero mass on the items drawn before step t
    np.testing.assert_allclose(trace.sum(axis=1), 1.0, rtol=1e-5)
    zeros = (trace == 0).sum(axis=1)
    np.testing.assert_array_equal(zeros, np.arange(60))
    with_rep = active_sampling_trace(world["Z"][0], world["fac"], 60, seed=1)
    assert (with_rep > 0).all()
    # tau floor: every item keeps at least tau / N
    assert with_rep.min() >= ActiveParams().tau / N_ITEMS * (1 - 1e-6)


def test_active_inference_meets_budget_in_expectation(world):
    res = active_run(world["Z"], world["fac"], 40, method="active_inference", n_trials=5, seed=2)
    assert abs(res.n_queries.mean() - 40) < 4


def test_tune_uses_only_the_given_models(world):
    best, table = active_tune(world["Z"][:10], world["fac"], 40, grid={"tau": (0.1, 0.5)}, seed=0)
    assert len(table) == 2 and best.tau in (0.1, 0.5)
    with pytest.raises(ValueError, match="unknown grid"):
        active_tune(world["Z"][:10], world["fac"], 40, grid={"n_strata": (2,)})


@pytest.mark.parametrize("bad, match", [
    (lambda Z: np.where(Z == 1, np.nan, Z), "NaN"),
    (lambda Z: Z * 2, "0/1"),
    (lambda Z: Z[:, :-1], "align"),
    (lambda Z: Z[None], "matrix"),
])
def test_bad_outcomes(world, bad, match):
    with pytest.raises(ValueError, match=match):
        active_run(bad(world["Z"][:2]), world["fac"], 20)


def test_bad_arguments(world):
    Z, fac = world["Z"][:2], world["fac"]
    with pytest.raises(ValueError, match="unknown method"):
        active_run(Z, fac, 20, method="magic")
    with pytest.raises(ValueError, match="budget"):
        active_run(Z, fac, 1)
    with pytest.raises(ValueError, match="budget"):
        active_run(Z, fac, N_ITEMS + 1)
    with pytest.raises(ValueError, match="n_trials"):
        active_run(Z, fac, 20, n_trials=0)
    with pytest.raises(ValueError, match="alpha"):
        active_run(Z, fac, 20, alpha=1.5)
    with pytest.raises(ValueError, match="tau"):
        ActiveParams(tau=0.0)
    with pytest.raises(ValueError, match="rho"):
        ActiveParams(rho=-0.1)
    with pytest.raises(ValueError, match="interval"):
        active_run(Z, fac, 20, interval="score")
    assert set(METHODS) >= {"uniform", "stratified", "ppi", "active_inference", "faq", "faq_norep"}


def test_bad_history():
    with pytest.raises(ValueError, match="0/1"):
        active_factor_fit(np.full((5, 4), 0.5), rank=1)
    H = np.zeros((5, 4))
    H[2] = np.nan
    with pytest.raises(ValueError, match="no observed entry"):
        active_factor_fit(H, rank=1)
    with pytest.raises(ValueError, match="rank"):
        active_factor_fit(np.zeros((5, 4)), rank=0)
    with pytest.raises(ValueError, match="shape"):
        active_factor_fit(np.zeros(5), rank=1)
    with pytest.raises(ValueError, match="holdout"):
        active_factor_cv(np.zeros((5, 4)), ranks=(1,), holdout=0.9, seed=0)
    with pytest.raises(ValueError, match=r"strictly inside \(0, 1\)"):
        active_ceiling(np.ones((2, 3)), np.ones((2, 3)), 2)


def test_pai_by_hand_and_bad_logs():
    """Intent: active_pai is the source's formula (checked by hand on three steps)."""
    from evalkit.active import active_pai

    rng = np.random.default_rng(0)
    N, n = 100, 40
    z = (rng.random(n) < 0.5).astype(float)
    q = rng.uniform(0.5, 1.5, n) / N
    p = rng.uniform(0.2, 0.8, n)
    pm = rng.uniform(0.45, 0.55, n)
    phi = pm + (z - p) / (N * q)
    ht = np.mean(z / q)
    s2 = (np.sum(((z - p) / q) ** 2) - np.sum((ht - N * pm) ** 2)) / (n * N**2)
    assert s2 > 0
    est = active_pai(z, q, p, pm, N)
    assert est.estimate == pytest.approx(phi.mean())
    assert est.se == pytest.approx(np.sqrt(s2 / n))
    with pytest.raises(ValueError, match="same length"):
        active_pai(z, q[:2], p, pm, N)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        active_pai(z, q * 0, p, pm, N)
    with pytest.raises(ValueError, match="0/1"):
        active_pai(z + 0.5, q, p, pm, N)


def test_plot_run_draws(world):
    import matplotlib

    matplotlib.use("Agg")
    from evalkit.active_evaluation import active_plot_run

    fig = active_plot_run(world["Z"][:5], world["fac"], 30, seed=0)
    assert len(fig.axes) == 2
    assert "ESS" in fig.axes[1].get_title()
    # fixed axes, so that a change of setting moves the points; the coverage as a count with its exact interval
    assert fig.axes[0].get_ylim() == (0.0, 3.0) and "95% CI" in fig.axes[1].get_title()


def test_plot_run_left_panel_uses_the_predictions_the_last_q_was_built_from(world):
    """Intent: the left panel plots the final q_t against the factor model's predictions at that step.

    At the last step the hybrid sampler is the oracle score on the current predictions,
    q_t(j) = tau / N + (1 - tau) sqrt(p_j (1 - p_j)) / sum_k sqrt(p_k (1 - p_k)), so the plotted
    (x, y) pairs must satisfy it exactly; the prior's predictions (the old x-axis) do not.
    """
    import matplotlib

    matplotlib.use("Agg")
    from evalkit.active_evaluation import ACTIVE_PLOT_QN_MAX, active_plot_run

    prm = ActiveParams()
    fig = active_plot_run(world["Z"][:5], world["fac"], 30, params=prm, seed=0)
    xy = fig.axes[0].collections[0].get_offsets()
    x, y = np.asarray(xy[:, 0], float), np.asarray(xy[:, 1], float)
    n = world["fac"].n_items
    assert len(x) == n
    s = np.sqrt(x * (1 - x))
    expected = prm.tau + (1 - prm.tau) * n * s / s.sum()
    inside = expected < ACTIVE_PLOT_QN_MAX
    np.testing.assert_allclose(y[inside], expected[inside], rtol=1e-4, atol=1e-6)
    assert not np.allclose(x, world["fac"].predict())  # after 29 queries the predictions have moved


# --- the source's settings, its uniform baseline and ESS, and the small-n_b interval ----------


def test_authors_setting_samples_the_oracle_score_from_the_first_query(world):
    """Intent: rho = gamma = 0 means q_1 = tau / N + (1 - tau) sqrt(p (1 - p)) / sum at the prior."""
    fac = world["fac"]
    q = active_sampling_trace(world["Z"][0], fac, 30, params=AUTHORS_PARAMS)
    w = np.sqrt(fac.predict() * (1 - fac.predict()))
    expected = AUTHORS_PARAMS.tau / N_ITEMS + (1 - AUTHORS_PARAMS.tau) * w / w.sum()
    np.testing.assert_allclose(q[0], expected, rtol=2e-4)
    assert ACTIVE_SETTINGS["authors"]["params"] == AUTHORS_PARAMS
    assert (AUTHORS_PARAMS.rho, AUTHORS_PARAMS.gamma, AUTHORS_PARAMS.tau) == (0.0, 0.0, 0.05)


def test_uniform_ht_has_the_horvitz_thompson_variance(world):
    """Intent: the source's uniform baseline is unbiased with variance theta (1 - pi) / n_b (z in {0, 1})."""
    z = world["Z"][:3]
    nb = 80
    res = active_run(z, world["fac"], nb, method="uniform_ht", n_trials=4000, seed=5)
    theta = res.truth
    pi = nb / N_ITEMS
    var = theta * (1 - pi) / nb
    err = res.estimate - theta[:, None]
    assert np.all(np.abs(err.mean(axis=1)) <= 4 * np.sqrt(var / err.shape[1]))
    # the sample variance of 4000 draws is within 5 of its SEs (kurtosis of a Poisson-like sum, about 2/n)
    np.testing.assert_allclose(err.var(axis=1), var, rtol=5 * np.sqrt(2 / err.shape[1]) * 1.5)
    np.testing.assert_allclose(res.n_queries.mean(), nb, rtol=0.02)
    assert (res.ci_low >= 0).all() and (res.ci_high <= 1).all()


def test_ess_authors_is_the_per_trial_width_ratio_squared(world):
    """Intent: ess_authors = mean over trials of (mean HT width / mean method width)^2; HT scores exactly 1."""
    runs = [active_run(world["Z"], world["fac"], 60, method=m, n_trials=3, seed=4, **setting)
            for m, setting in (("uniform_ht", {}), ("faq", {"variance": "source", "interval": "wald"}))]
    table = active_evaluate(runs).set_index("method")
    assert table.loc["uniform_ht", "ess_authors"] == pytest.approx(1.0)
    ht = (runs[0].ci_high - runs[0].ci_low).mean(axis=0)
    faq = (runs[1].ci_high - runs[1].ci_low).mean(axis=0)
    assert table.loc["faq", "ess_authors"] == pytest.approx(float(np.mean((ht / faq) ** 2)))
    assert np.isnan(active_evaluate(runs[1:]).loc[0, "ess_authors"])


def test_ess_bootstrap_scores_every_method_on_the_same_resampled_models(world):
    """Intent: each replicate is active_evaluate's ESS (pooled or the authors') on one resample of the
    test models, the same resample for every method; uniform_ht scores exactly 1 on the authors' definition."""
    source = {"variance": "source", "interval": "wald"}
    runs = [active_run(world["Z"], world["fac"], 60, method=m, n_trials=3, seed=4, **setting)
            for m, setting in (("uniform_ht", {}), ("uniform", {}), ("faq", source))]
    n_m = world["Z"].shape[0]
    idx = np.random.default_rng(5).integers(0, n_m, size=(30, n_m))
    pooled = active_ess_bootstrap(runs, 60, ["uniform", "faq"], n_boot=30, seed=5)
    authors = active_ess_bootstrap(runs, 60, ["uniform_ht", "faq"], definition="authors", n_boot=30, seed=5)
    assert pooled.shape == (30, 2) and list(authors.columns) == ["uniform_ht", "faq"]
    np.testing.assert_allclose(authors["uniform_ht"], 1.0)
    for k in (0, 17):
        i = idx[k]
        theta = runs[2].truth[i]
        mse = ((runs[2].estimate[i] - theta[:, None]) ** 2).mean(axis=1)
        assert pooled["faq"][k] == pytest.approx((theta * (1 - theta) / 60).sum() / mse.sum())
        ht = (runs[0].ci_high - runs[0].ci_low)[i].mean(axis=0)
        faq = (runs[2].ci_high - runs[2].ci_low)[i].mean(axis=0)
        assert authors["faq"][k] == pytest.approx(float(np.mean((ht / faq) ** 2)))
    # on every model once (no resampling) the definitions are active_evaluate's
    table = active_evaluate(runs).set_index("method")
    ht_all = (runs[0].ci_high - runs[0].ci_low).mean(axis=0)
    faq_all = (runs[2].ci_high - runs[2].ci_low).mean(axis=0)
    assert table.loc["faq", "ess_authors"] == pytest.approx(float(np.mean((ht_all / faq_all) ** 2)))
    # the same seed gives the same replicates; bad input is refused, naming the argument
    pd_equal = active_ess_bootstrap(runs, 60, ["uniform", "faq"], n_boot=30, seed=5)
    assert pd_equal.equals(pooled)
    for kwargs, argument in ((dict(methods=["no_such"]), "methods"), (dict(methods=["faq", "faq"]), "methods"),
                             (dict(methods=["faq"], definition="width"), "definition"),
                             (dict(methods=["faq"], n_boot=1), "n_boot"), (dict(methods=["faq"], seed=None), "seed")):
        with pytest.raises(EvalkitInputError) as err:
            active_ess_bootstrap(runs, 60, **kwargs)
        assert err.value.argument == argument
    with pytest.raises(EvalkitInputError) as err:
        active_ess_bootstrap(runs[1:], 60, ["faq"], definition="authors")
    assert err.value.argument == "results"


def test_ess_of_exact_estimates_is_infinite_with_a_warning_not_silently(world):
    """Intent: a run whose estimates are all exact (zero error, zero-width intervals) gives an
    infinite ESS on every definition, and active_evaluate and active_ess_bootstrap both say so."""
    import dataclasses

    from evalkit.errors import DegenerateDataWarning
    runs = [active_run(world["Z"], world["fac"], 60, method=m, n_trials=2, seed=4) for m in ("uniform_ht", "uniform")]
    exact = runs[1]
    exact_t = np.repeat(exact.truth[:, None], exact.estimate.shape[1], axis=1)
    runs[1] = dataclasses.replace(exact, estimate=exact_t, ci_low=exact_t, ci_high=exact_t.copy())
    with pytest.warns(DegenerateDataWarning, match="zero squared error"):
        table = active_evaluate(runs).set_index("method")
    assert np.isinf(table.loc["uniform", "ess"]) and np.isinf(table.loc["uniform", "ess_authors"])
    with pytest.warns(DegenerateDataWarning, match="zero squared error"):
        boot = active_ess_bootstrap(runs, 60, ["uniform"], n_boot=5, seed=1)
    assert np.isinf(boot["uniform"]).all()
    with pytest.warns(DegenerateDataWarning, match="widths are zero"):
        boot = active_ess_bootstrap(runs, 60, ["uniform"], definition="authors", n_boot=5, seed=1)
    assert np.isinf(boot["uniform"]).all()


def test_korn_graubard_is_clopper_pearson_for_a_simple_random_sample():
    """Intent: with se = sqrt(p (1 - p) / n) and many queries the interval is statsmodels' Clopper-Pearson."""
    from statsmodels.stats.proportion import proportion_confint

    n = 200
    x = np.array([3, 40, 100, 190])
    p = x / n
    lo, hi = _korn_graubard(p, np.sqrt(p * (1 - p) / n), np.full(4, 1e7), 0.05)
    ref = np.array([proportion_confint(int(k), n, alpha=0.05, method="beta") for k in x])
    np.testing.assert_allclose(lo, ref[:, 0], atol=1e-6)
    np.testing.assert_allclose(hi, ref[:, 1], atol=1e-6)
    # p = 0: n_eff falls back to the number of queries
    lo0, hi0 = _korn_graubard(np.array([0.0]), np.array([0.0]), np.array([1e7]), 0.05)
    assert lo0[0] == 0.0 and hi0[0] == pytest.approx(1 - 0.025 ** (1 / 1e7), rel=1e-6)


@pytest.mark.slow
def test_default_interval_covers_where_wald_does_not_at_a_small_budget():
    """Intent: at n_b = 25 with accuracies near 0.1 the default interval does not under-cover; Wald does.

    Coverage over 40 models x 30 trials, MCSE clustered by model; the factor model is fitted on 200
    historical models of the same world. Korn-Graubard is conservative at so small a budget (it
    inherits Clopper-Pearson's), so the default is checked from below only.
    """
    rng = np.random.default_rng(21)
    U = rng.normal(0, 1, (240, RANK))
    V = rng.normal(0, 0.8, (N_ITEMS, RANK))
    b = rng.normal(-2.3, 1.0, N_ITEMS)
    Y = (rng.random((240, N_ITEMS)) < 1 / (1 + np.exp(-(U @ V.T + b)))).astype(float)
    fac = active_factor_fit(Y[:200], rank=RANK)
    cov = {}
    for name in ("default", "faithful"):
        res = active_run(Y[200:], fac, 25, method="faq", n_trials=30, seed=3, **ACTIVE_SETTINGS[name])
        per_model = ((res.ci_low <= res.truth[:, None]) & (res.truth[:, None] <= res.ci_high)).mean(axis=1)
        cov[name] = (per_model.mean(), per_model.std(ddof=1) / np.sqrt(per_model.size))
    assert cov["default"][0] >= 0.95 - 2 * cov["default"][1]
    assert cov["faithful"][0] < 0.95 - 2 * cov["faithful"][1]


def test_loo_faithful_rows_share_the_estimates_and_differ_in_the_interval():
    """Intent: "faq@faithful" is "faq" with the source's variance and Wald interval: same ESS, other coverage/width."""
    from evalkit.active_evaluation import active_loo

    rng = np.random.default_rng(3)
    Y = (rng.random((12, 80)) < rng.uniform(0.2, 0.8, (12, 1))).astype(float)
    tab = active_loo(Y, budget=0.25, ranks=(1,), methods=("faq", "faq@faithful"), n_trials=2, seed=1,
                     params=ActiveParams(tau=0.3)).set_index("method")
    assert tab.loc["faq", "ess"] == pytest.approx(tab.loc["faq@faithful", "ess"])
    assert tab.loc["faq", "width"] != pytest.approx(tab.loc["faq@faithful", "width"])
    with pytest.raises(ValueError, match="unknown setting"):
        active_loo(Y, budget=0.25, ranks=(1,), methods=("faq@magic",), n_trials=1)


@pytest.mark.parametrize("method", ["faq", "faq_norep"])
def test_a_floor_of_one_draws_uniformly_without_a_floating_point_warning(world, method):
    """Intent: tau = 1 (allowed: tau in (0, 1]) is uniform sampling with FAQ's online predictions.

    Every draw is then a uniform one, so each logged q_t is 1 / (items left), and the run must
    not divide by 1 - tau = 0 on the way (a RuntimeWarning, raised here as an error).
    """
    import warnings

    Z = world["Z"][:8]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run = active_run(Z, world["fac"], 30, method=method, params=ActiveParams(tau=1.0), n_trials=2, seed=5,
                         variance="source", interval="wald")
    assert np.isfinite(run.estimate).all() and np.isfinite(run.ci_low).all() and np.isfinite(run.ci_high).all()
    q = active_sampling_trace(Z[0], world["fac"], 30, params=ActiveParams(tau=1.0), seed=5,
                              replace=method == "faq")
    n_left = Z.shape[1] - (np.arange(30) if method == "faq_norep" else 0)
    np.testing.assert_allclose(q.max(axis=1)[q.max(axis=1) > 0], 1.0 / n_left)
