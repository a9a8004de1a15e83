"""The doubly robust (AIPW) accuracy of evalkit.missing_dr: contract, cross-checks, statistics.

Cross-checks: the non-cross-fitted estimate and its i.i.d. SE against a stacked estimating-equation
(M-estimation) sandwich written here from scratch; the cross-fitted estimate against DoubleML's
average potential outcome (``DoubleMLAPO``) with the same folds of whole clusters and the same
learners. A small seeded Monte Carlo checks double robustness and coverage with tolerances from the
Monte Carlo standard error (the full study is ``benchmarks/bench_dr.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special

import evalkit as ek
from evalkit.errors import EvalkitInputError, OverlapWarning
from evalkit.missing_dr import _or_estimate


def _data(seed: int, n_clusters: int = 40, size: int = 25, latent: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = ek.simulate_clustered(n_clusters=n_clusters, cluster_size=size, mean=0.6, icc=0.2, rng=rng, beta_x=1.0)
    return ek.simulate_missing(d, mechanism="mar", response_rate=0.7, strength=1.0, rng=rng, latent=latent)


# --------------------------------------------------------------------------------------------
# contract
# --------------------------------------------------------------------------------------------

def test_folds_are_whole_clusters_and_seeded() -> None:
    d = _data(1)
    f = ek.dr_folds(d["cluster"], 5, seed=3)
    assert (d.assign(f=f).groupby("cluster")["f"].nunique() == 1).all()
    assert np.bincount(d.assign(f=f).groupby("cluster")["f"].first()).tolist() == [8] * 5
    assert np.array_equal(f, ek.dr_folds(d["cluster"], 5, seed=3))
    assert not np.array_equal(f, ek.dr_folds(d["cluster"], 5, seed=4))
    e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x", "u"]], folds=5, seed=3)
    assert np.array_equal(e.folds, f)


def test_cross_fit_never_sees_the_held_out_cluster() -> None:
    """Changing one fold's outcomes leaves that fold's outcome predictions unchanged."""
    d = _data(2)
    e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x", "u"]], folds=4, seed=0)
    k = e.folds == 0
    y2 = d["correct"].to_numpy().copy()
    obs = ~np.isnan(y2)
    y2[k & obs] = 1 - y2[k & obs]
    e2 = ek.dr_estimate(y2, d["cluster"], features=d[["x", "u"]], folds=4, seed=0)
    assert np.array_equal(e.outcome[k], e2.outcome[k])
    assert not np.allclose(e.outcome[~k], e2.outcome[~k])


def test_bad_input() -> None:
    d = _data(3, n_clusters=10, size=10)
    y, cl, X = d["correct"], d["cluster"], d[["x"]]
    with pytest.raises(EvalkitInputError, match="clusters"):
        ek.dr_estimate(y, cl[:-1], features=X)
    with pytest.raises(EvalkitInputError, match="clusters"):
        ek.dr_estimate(y, np.where(np.arange(len(d)) == 0, None, cl.to_numpy()), features=X)
    with pytest.raises(EvalkitInputError, match="one cluster"):
        ek.dr_estimate(y, np.zeros(len(d)), features=X)
    with pytest.raises(EvalkitInputError, match="folds"):
        ek.dr_estimate(y, cl, features=X, folds=11)
    with pytest.raises(EvalkitInputError, match="outcome_model"):
        ek.dr_estimate(y, cl, features=X, outcome_model=np.full(len(d), 1.2))
    with pytest.raises(EvalkitInputError, match="propensity_model"):
        ek.dr_estimate(y, cl, features=X, propensity_model=np.zeros(len(d)))
    with pytest.raises(EvalkitInputError, match="propensity_model"):
        ek.dr_estimate(y, cl, features=X, propensity_model=np.full(len(d) - 1, 0.5))
    with pytest.raises(EvalkitInputError, match="outcome_model"):
        ek.dr_estimate(y, cl, features=X, outcome_model="tree")
    with pytest.raises(EvalkitInputError, match="correct"):
        ek.dr_estimate(np.full(len(d), np.nan), cl, features=X)
    with pytest.raises(EvalkitInputError, match="correct"):
        ek.dr_estimate(np.where(y.isna(), np.nan, 2.0), cl, features=X)
    with pytest.raises(EvalkitInputError, match="correct_b"):
        ek.dr_compare(y, y[:-1], cl)


def test_overlap_warns_and_never_divides_silently() -> None:
    d = _data(4, n_clusters=10, size=10)
    p = np.full(len(d), 0.5)
    p[:3] = 0.001
    with pytest.warns(OverlapWarning, match="below"):
        e = ek.dr_estimate(d["correct"], d["cluster"], propensity_model=p, features=d[["x"]])
    assert np.isfinite(e.estimate) and e.diagnostics.p_min == pytest.approx(0.001)


def test_outcome_model_separation_is_named_as_the_outcome_models() -> None:
    """A feature that predicts correctness perfectly separates the outcome model, not the propensity: the
    caveat must say so, and must not warn of extreme inverse weights (the propensities are untouched)."""
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(6), 10)
    x = rng.integers(0, 2, clusters.size).astype(float)
    y = np.where(x == 1, 1.0, rng.integers(0, 2, clusters.size).astype(float))   # x = 1: always right
    y[rng.random(clusters.size) < 0.2] = np.nan                                   # missing, unrelated to x
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = ek.dr_estimate(y, clusters, features=x[:, None], folds=3, seed=0)
    texts = [str(w.message) for w in caught if "separation" in str(w.message)]
    assert texts and all(t.startswith("logistic outcome model: separation:") for t in texts), texts
    assert not any("propensit" in t.split(";")[0] or "inverse weights" in t for t in texts), texts
    assert np.isfinite(e.estimate) and 0.3 < e.diagnostics.p_min <= e.diagnostics.p_max < 1


def _given(seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A data set with given outcome predictions m and propensities p, its outcomes y and responses R."""
    d = _data(5)
    rng = np.random.default_rng(seed)
    m = rng.uniform(0.2, 0.9, len(d))
    p = rng.uniform(0.3, 1.0, len(d))
    y = d["correct"].to_numpy()
    return d, m, p, y, ~np.isnan(y)


def test_given_predictions_are_used_as_given() -> None:
    """With given m and pi the estimate is mean(m + R (Y - m) / pi), by hand."""
    d, m, p, y, R = _given(0)
    phi = m + np.where(R, (np.nan_to_num(y) - m) / p, 0.0)
    e = ek.dr_estimate(y, d["cluster"], outcome_model=m, propensity_model=p)
    assert e.estimate == pytest.approx(phi.mean(), abs=1e-14)
    assert e.folds is None or e.folds.size == len(d)
    # with every propensity 1 and m = 0, DR is missing-as-wrong
    e0 = ek.dr_estimate(y, d["cluster"], outcome_model=np.zeros(len(d)), propensity_model=np.ones(len(d)))
    assert e0.estimate == pytest.approx(ek.missing_bounds(y, d["cluster"])[0].estimate, abs=1e-14)


def test_normalised_weights_by_hand_and_invariant_to_the_scale_of_the_weights() -> None:
    """normalise=True: per fold, mean(m) + sum(w e) / sum(w); a common factor in pi_hat cancels."""
    d, m, p, y, R = _given(1)
    w, r = np.where(R, 1 / p, 0.0), np.where(R, np.nan_to_num(y) - m, 0.0)
    for cross_fit in (True, False):
        e = ek.dr_estimate(y, d["cluster"], outcome_model=m, propensity_model=p, cross_fit=cross_fit, normalise=True,
                           folds=4, seed=2)
        f = e.folds if cross_fit else np.zeros(len(d), dtype=int)
        by_hand = sum(m[f == k].sum() + (f == k).sum() * np.dot(w[f == k], r[f == k]) / w[f == k].sum()
                      for k in np.unique(f)) / len(d)
        assert e.estimate == pytest.approx(by_hand, abs=1e-14)
        assert abs(e.influence.sum()) < 1e-9 and "normalised weights" in e.method
        # the normalised correction does not move when every propensity is scaled by one factor; AIPW does
        e2 = ek.dr_estimate(y, d["cluster"], outcome_model=m, propensity_model=0.6 * p, cross_fit=cross_fit,
                            normalise=True, folds=4, seed=2)
        assert e2.estimate == pytest.approx(e.estimate, abs=1e-12)
        assert e2.se == pytest.approx(e.se, rel=1e-10)
        u1 = ek.dr_estimate(y, d["cluster"], outcome_model=m, propensity_model=p, cross_fit=cross_fit)
        u2 = ek.dr_estimate(y, d["cluster"], outcome_model=m, propensity_model=0.6 * p, cross_fit=cross_fit)
        assert abs(u2.estimate - u1.estimate) > 1e-3
    with pytest.raises(EvalkitInputError, match="normalise"):
        ek.dr_estimate(y, d["cluster"], outcome_model=m, propensity_model=p, normalise="yes")  # type: ignore[arg-type]


def test_cluster_variance_is_the_influence_function_summed_by_cluster() -> None:
    d = _data(6)
    e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x", "u"]], folds=5, seed=1)
    codes = pd.factorize(d["cluster"])[0]
    M, n = codes.max() + 1, len(d)
    U = np.bincount(codes, weights=e.influence, minlength=M)
    assert abs(e.influence.sum()) < 1e-9
    assert e.ses["CR0"] == pytest.approx(np.sqrt(np.sum(U**2)) / n, rel=1e-12)
    assert e.ses["CR1"] == pytest.approx(np.sqrt(M / (M - 1) * np.sum(U**2)) / n, rel=1e-12)
    assert e.ses["iid"] == pytest.approx(np.sqrt(np.sum(e.influence**2) / (n * (n - 1))), rel=1e-12)
    assert e.dfs["CR1"] == M - 1 and e.se == e.ses["CR1"]
    cr2 = ek.mean_estimate(e.pseudo, d["cluster"], se="CR2", binary=False)
    assert (e.ses["CR2"], e.dfs["CR2"]) == (cr2.se, cr2.df)
    assert e.as_estimate("CR2").ci_low == pytest.approx(cr2.ci_low, abs=1e-14)


def test_diagnostics_are_returned_and_read_right() -> None:
    d = _data(7)
    e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x", "u"]], folds=5, seed=0)
    dg = e.diagnostics
    assert isinstance(dg, ek.PropensityDiagnostics)     # the propensity part is propensity_diagnostics'
    assert list(dg.overlap.index) == ["answered", "missing"]
    assert int(dg.overlap.loc["answered", "n"]) == int(d["correct"].notna().sum())
    b = dg.balance
    assert list(b.index) == ["x", "u", "clusters (largest share gap)"]
    # response depends on x and u, so the answered items differ from all items; weighting removes most of it
    assert (b.loc[["x", "u"], "smd_raw"].abs() > 0.1).all()
    assert (b.loc[["x", "u"], "smd_weighted"].abs() < b.loc[["x", "u"], "smd_raw"].abs() / 2).all()
    # the same checks as propensity_diagnostics on the out-of-fold propensities
    same = ek.propensity_diagnostics(d["correct"].notna(), e.propensity, d[["x", "u"]], d["cluster"], plot=False)
    pd.testing.assert_frame_equal(dg.balance, same.balance)
    pd.testing.assert_frame_equal(dg.calibration, same.calibration)
    assert dg.problems == same.problems and dg.ok == (not same.problems)
    assert dg.calibration["n"].sum() == len(d)             # propensity calibration: all items
    assert dg.outcome_calibration["n"].sum() == int(d["correct"].notna().sum())   # outcome: the answered ones
    assert dg.p_min == pytest.approx(e.propensity.min()) and dg.p_max == pytest.approx(e.propensity.max())
    import matplotlib
    matplotlib.use("Agg")
    fig = ek.dr_diagnostics_plot(e, correct=d["correct"])
    assert len(fig.axes) == 4
    with pytest.raises(EvalkitInputError, match="four Axes"):
        ek.dr_diagnostics_plot(e, ax=fig.axes[:3])


def test_diagnostics_report_a_failed_propensity_check() -> None:
    """A propensity that ignores what drives response fails its checks, and the diagnostics say which."""
    d = _data(9)
    flat = np.full(len(d), float(d["correct"].notna().mean()))   # response depends on x and u; this ignores both
    e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x", "u"]], propensity_model=flat)
    assert not e.diagnostics.ok
    assert any(p.startswith("balance: after weighting ['x', 'u']") for p in e.diagnostics.problems)
    tiny = np.where(d["correct"].notna(), 0.02, 0.5)              # answered items with weights of 50
    e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x"]], propensity_model=tiny)
    assert any(p.startswith("overlap: ") and "p < 0.05" in p for p in e.diagnostics.problems)
    # missingness driven by the cluster: folds of whole clusters cannot learn a held-out cluster's effect
    full = ek.simulate_clustered(n_clusters=20, cluster_size=50, mean=0.6, icc=0.2, rng=71, beta_x=1.0)
    c = ek.simulate_missing(full, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=72)
    e = ek.dr_estimate(c["correct"], c["cluster"], features=c[["x"]], folds=5, seed=0)
    assert any(p.startswith("balance: after weighting ['clusters (largest share gap)']")
               for p in e.diagnostics.problems)
    # nothing missing: nothing weighted, no check fails, the outcome calibration is still there
    e = ek.dr_estimate(full["correct"], full["cluster"], features=full[["x"]])
    assert e.diagnostics.problems == [] and e.diagnostics.overlap.empty
    assert e.diagnostics.outcome_calibration["n"].sum() == len(full)


def test_paired_difference_is_the_mean_of_differences_of_pseudo_outcomes() -> None:
    d = _data(8)
    b = ek.simulate_missing(d.assign(correct=d["correct_full"], status="ok"), mechanism="mar",
                            response_rate=0.9, rng=11)["correct"]
    kw = dict(features=d[["x", "u"]], folds=5, seed=2)
    c = ek.dr_compare(d["correct"], b, d["cluster"], **kw)
    ea, eb = (ek.dr_estimate(v, d["cluster"], **kw) for v in (d["correct"], b))
    assert c.estimate == pytest.approx(ea.estimate - eb.estimate, abs=1e-12)
    dphi = ea.pseudo - eb.pseudo
    assert c.se == pytest.approx(ek.mean_estimate(dphi, d["cluster"], se="CR1", binary=False).se, rel=1e-12)
    # pairing: the variance of the difference is not the sum of the variances
    assert c.se**2 < ea.se**2 + eb.se**2


def test_simulate_missing_default_is_unchanged_and_latent_is_additive() -> None:
    d = ek.simulate_clustered(n_clusters=20, cluster_size=10, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    a = ek.simulate_missing(d, mechanism="mar", response_rate=0.7, rng=5)
    b = ek.simulate_missing(d, mechanism="mar", response_rate=0.7, rng=5, latent=0.0)
    pd.testing.assert_frame_equal(a, b)
    c = ek.simulate_missing(d, mechanism="mar", response_rate=0.7, rng=5, latent=1.5)
    x = (d["x"] - d["x"].mean()) / d["x"].std(ddof=0)
    lin = special.logit(c["p_respond"]) - x
    # the extra term is 1.5 u / sigma_u (the intercept absorbs the rest)
    np.testing.assert_allclose(np.diff(lin), 1.5 * np.diff(d["u"] / d.attrs["sigma_u"]), atol=1e-9)
    assert c["p_respond"].mean() == pytest.approx(0.7, abs=1e-9)


# --------------------------------------------------------------------------------------------
# cross-check 1: stacked estimating equations (M-estimation), written from scratch
# --------------------------------------------------------------------------------------------

def _stacked(y: np.ndarray, X: np.ndarray, codes: np.ndarray | None) -> tuple[float, float]:
    """Solve the stacked equations of (propensity logit, outcome logit, theta); full sandwich SE of theta."""
    n = y.size
    R = (~np.isnan(y)).astype(float)
    yy = np.nan_to_num(y)
    Z = np.column_stack([np.ones(n), X])
    k = Z.shape[1]

    def psi(par: np.ndarray) -> np.ndarray:
        a, b, th = par[:k], par[k:2 * k], par[-1]
        p, m = special.expit(Z @ a), special.expit(Z @ b)
        return np.column_stack([Z * (R - p)[:, None], Z * (R * (yy - m))[:, None],
                                m + R * (yy - m) / p - th])

    sol = optimize.root(lambda par: psi(par).sum(axis=0) / n, np.zeros(2 * k + 1), method="hybr", tol=1e-14)
    assert sol.success
    par = sol.x
    # bread by central differences of the mean estimating function
    A = np.empty((par.size, par.size))
    for j in range(par.size):
        h = 1e-6 * max(1.0, abs(par[j]))
        e = np.zeros(par.size)
        e[j] = h
        A[:, j] = (psi(par + e).mean(axis=0) - psi(par - e).mean(axis=0)) / (2 * h)
    S = psi(par)
    if codes is not None:
        S = np.vstack([np.bincount(codes, weights=S[:, j]) for j in range(S.shape[1])]).T
    B = S.T @ S / n
    Ainv = np.linalg.inv(A)
    V = Ainv @ B @ Ainv.T / n
    return float(par[-1]), float(np.sqrt(V[-1, -1]))


def test_no_cross_fit_matches_stacked_estimating_equations() -> None:
    d = _data(9, n_clusters=200, size=25, latent=0.0)
    y = d["correct"].to_numpy()
    X = d[["x"]].to_numpy()
    e = ek.dr_estimate(y, np.arange(len(d)) // 1, features=X, cross_fit=False)
    theta, se_full = _stacked(y, X, None)
    assert e.estimate == pytest.approx(theta, abs=1e-9)
    # the theta row alone (nuisances held at their fit) is the i.i.d. influence-function SE, with n/(n-1)
    n = y.size
    assert e.ses["iid"] == pytest.approx(np.sqrt(np.sum(e.influence**2) / n**2 * n / (n - 1)), rel=1e-12)
    # with both models right the nuisance terms of the full sandwich vanish as n grows: here (n = 5000)
    # they move the SE by well under 3%, the order sqrt(1/n) * (a few) of the bread's cross terms
    assert abs(e.ses["iid"] / se_full - 1) < 0.03


# --------------------------------------------------------------------------------------------
# cross-check 2: DoubleML's average potential outcome, the same folds and learners
# --------------------------------------------------------------------------------------------

def test_cross_fit_matches_doubleml() -> None:
    dml = pytest.importorskip("doubleml")
    from sklearn.linear_model import LogisticRegression

    d = _data(10, n_clusters=30, size=30)
    y = d["correct"].to_numpy()
    R = (~np.isnan(y)).astype(int)
    X = d[["x", "u"]].to_numpy()
    e = ek.dr_estimate(y, d["cluster"], features=X, folds=5, seed=4)
    smpls = [(np.flatnonzero(e.folds != k), np.flatnonzero(e.folds == k)) for k in range(5)]
    # DoubleML also fits an outcome model on the R = 0 items (for its sensitivity analysis only, not the APO
    # score); give those items any 0/1 values so that it has two classes
    y_filled = np.where(R == 1, np.nan_to_num(y), np.arange(y.size) % 2)
    data = dml.DoubleMLData.from_arrays(X, y_filled, R)

    def learner() -> LogisticRegression:
        return LogisticRegression(penalty=None, solver="newton-cholesky", tol=1e-12, max_iter=1000)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        apo = dml.DoubleMLAPO(data, ml_g=learner(), ml_m=learner(), treatment_level=1, n_folds=5,
                              trimming_threshold=1e-12, draw_sample_splitting=False)
        apo.set_sample_splitting(smpls)
        apo.fit()
    assert float(apo.coef[0]) == pytest.approx(e.estimate, abs=1e-8)


# --------------------------------------------------------------------------------------------
# statistics: a small seeded Monte Carlo (the full study is benchmarks/bench_dr.py)
# --------------------------------------------------------------------------------------------

N_REPS = 200


def _sim(rng: np.random.Generator) -> pd.DataFrame:
    d = ek.simulate_clustered(n_clusters=30, cluster_size=20, mean=0.6, icc=0.2, rng=rng, beta_x=1.0)
    return ek.simulate_missing(d, mechanism="mar", response_rate=0.7, strength=1.0, rng=rng, latent=1.0)


_LAST: dict = {}


def _dr(d: pd.DataFrame, of: list[str], pf: list[str], se: str = "CR1", normalise: bool = False) -> ek.Estimate:
    key = (d["x"].to_numpy().tobytes(), d["correct"].to_numpy().tobytes(), tuple(of), tuple(pf), normalise)
    if key not in _LAST:  # one fit per data set and models; its CR1 and iid intervals both come from it
        _LAST.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ek.EvalkitWarning)
            _LAST[key] = ek.dr_estimate(d["correct"], d["cluster"], outcome_features=d[of],
                                        propensity_features=d[pf], folds=5, seed=0, normalise=normalise)
    return _LAST[key].as_estimate(se)


@pytest.fixture(scope="module")
def mc() -> pd.DataFrame:
    R, W = ["x", "u"], ["x"]
    est = {
        "both right": lambda d: _dr(d, R, R),
        "both right iid": lambda d: _dr(d, R, R, "iid"),  # the same fit (cached): estimators run in order
        "propensity wrong": lambda d: _dr(d, R, W),
        "outcome wrong": lambda d: _dr(d, W, R),
        "outcome wrong normalised": lambda d: _dr(d, W, R, normalise=True),
        "propensity wrong normalised": lambda d: _dr(d, R, W, normalise=True),
        "both wrong": lambda d: _dr(d, W, W),
        "OR wrong": lambda d: _or_estimate(d["correct"], d["cluster"], d[W]),
    }
    return ek.mc_summarise(ek.mc_run(_sim, est, truth=0.6, n_reps=N_REPS, seed=7, progress=False))


@pytest.mark.slow
def test_double_robustness(mc: pd.DataFrame) -> None:
    for name in ("both right", "propensity wrong", "outcome wrong", "outcome wrong normalised",
                 "propensity wrong normalised"):
        r = mc.loc[name]
        assert abs(r["bias"]) < 4 * r["bias_mcse"], (name, r["bias"], r["bias_mcse"])
    # and the check can fail: with both models wrong (and for the wrong outcome regression) the bias is real
    for name in ("both wrong", "OR wrong"):
        r = mc.loc[name]
        assert abs(r["bias"]) > 4 * r["bias_mcse"], (name, r["bias"], r["bias_mcse"])


@pytest.mark.slow
def test_cluster_robust_coverage_and_the_cost_of_iid(mc: pd.DataFrame) -> None:
    c = mc.loc["both right", "coverage"]
    assert abs(c - 0.95) < ek.mc_tolerance(0.95, N_REPS)
    ci = mc.loc["both right iid", "coverage"]
    # the i.i.d. interval ignores the shared cluster effect in phi: well below nominal
    assert ci < 0.95 - ek.mc_tolerance(0.95, N_REPS)


# --- the DR rows of missing_report and evalkit report ------------------------------------------

def _sim_long(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = ek.simulate_clustered(n_clusters=30, cluster_size=20, mean=0.6, icc=0.2, rng=rng, beta_x=1.0)
    return ek.simulate_missing(d, mechanism="mar", response_rate=0.75, strength=1.2, rng=rng)


def test_missing_report_dr_rows_are_dr_estimate():
    """Intent: missing_report's DR rows are dr_estimate on the report's features, 5 folds of clusters, its seed."""
    d = _sim_long(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        r = ek.missing_report(d, features=["x"], seed=3).set_index("estimator")
        e = ek.dr_estimate(d["correct"].to_numpy(), d["cluster"].to_numpy(), features=d[["x"]], folds=5, seed=3)
    for s in ("CR1", "CR2"):
        row = r.loc[f"DR logistic, cross-fit, {s}"]
        ref = e.as_estimate(s)
        assert row["estimate"] == pytest.approx(ref.estimate, abs=1e-12)
        assert row["se"] == pytest.approx(ref.se, abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high), abs=1e-12)


def test_report_dr_row_uses_difficulty_from_the_other_models():
    """Intent: the report's DR row is dr_estimate on the item's accuracy among the OTHER models only."""
    rng = np.random.default_rng(8)
    n_items, cl = 240, np.repeat(np.arange(12), 20)
    ease = rng.normal(0, 1, n_items) + rng.normal(0, 0.5, 12)[cl]
    rows = []
    for m in range(4):
        y = (rng.random(n_items) < 1 / (1 + np.exp(-(ease + 0.3 * m)))).astype(float)
        status = np.full(n_items, "ok", dtype=object)
        if m == 0:  # harder items go unanswered more often: MAR given difficulty
            gone = rng.random(n_items) < 1 / (1 + np.exp(1.5 + 1.2 * ease))
            y[gone], status[gone] = np.nan, "parse_failure"
        rows.append(pd.DataFrame({"model": f"m{m}", "item": [f"i{j:03d}" for j in range(n_items)],
                                  "cluster": [f"c{c:02d}" for c in cl], "correct": y, "status": status}))
    df = pd.concat(rows, ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        rep = ek.report_build(df, se="CR1")
    est = rep.missing_estimates
    row = est[(est["model"] == "m0") & (est["estimator"].str.startswith("DR"))]
    assert len(row) == 1
    others = df[df["model"] != "m0"].groupby("item")["correct"].mean()
    mine = df[df["model"] == "m0"].set_index("item")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        ref = ek.dr_estimate(mine["correct"].to_numpy(), mine["cluster"].to_numpy(),
                             features=others.reindex(mine.index).to_numpy()[:, None], folds=5, seed=0, se="CR1")
    assert row["estimate"].iloc[0] == pytest.approx(ref.estimate, abs=1e-10)
    assert (row["ci_low"].iloc[0], row["ci_high"].iloc[0]) == pytest.approx((ref.ci_low, ref.ci_high), abs=1e-10)
