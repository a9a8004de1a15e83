"""Tests of evalkit.missing: propensity models, weights, IPW, bounds, sensitivity and the report.

Known truth comes from simulation (bias within Monte Carlo error under MAR, coverage of the
cluster-aware interval within ``mc_tolerance`` of 95%), from statsmodels (plain logistic and
fixed-effect logistic regressions) and from brute-force numerical integration of the
random-intercept likelihood. R conformance (lme4, clubSandwich) is in ``test_missing_r.py``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import integrate, optimize, special, stats

import evalkit as ek
from evalkit import EvalkitWarning
from evalkit.clustered import mean_estimate, paired_estimate
from evalkit.missing import (
    ipw_bootstrap,
    ipw_compare,
    ipw_estimate,
    missing_bounds,
    missing_breakdown,
    missing_complete_case,
    missing_features,
    missing_report,
    propensity_fit,
    sensitivity_delta,
    sensitivity_plot,
    sensitivity_tipping_point,
    weights_compute,
)
from evalkit.missing_study import missing_study
from evalkit.montecarlo import mc_run, mc_summarise, mc_tolerance
from evalkit.simulate import simulate_clustered, simulate_missing


def _sim(seed: int, *, mechanism: str = "mar_cluster", n_clusters: int = 30, size: int = 20, icc: float = 0.2,
         rate: float = 0.75, strength: float = 1.2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = simulate_clustered(n_clusters=n_clusters, cluster_size=size, mean=0.6, icc=icc, rng=rng, beta_x=1.0)
    return simulate_missing(d, mechanism=mechanism, response_rate=rate, strength=strength, rng=rng)


# ------------------------------------------------------------------------------ propensity fits

def test_logistic_matches_statsmodels() -> None:
    """Plain logistic propensity = statsmodels Logit to 1e-6 (coefficients and log-likelihood)."""
    d = _sim(1, mechanism="mar")
    rng = np.random.default_rng(2)
    X = np.column_stack([d["x"], rng.normal(5, 3, len(d))])
    R = d["correct"].notna().astype(float).to_numpy()
    fit = propensity_fit(R, X, kind="logistic")
    ref = sm.Logit(R, sm.add_constant(X)).fit(disp=0, tol=1e-12, maxiter=100)
    np.testing.assert_allclose(fit.params.to_numpy(), ref.params, atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(fit.loglik, ref.llf, rtol=1e-9)
    np.testing.assert_allclose(fit.p, ref.predict(), atol=1e-8)


def test_fixed_effects_match_statsmodels() -> None:
    """Cluster fixed-effect propensity = Logit with cluster dummies when no cluster is separated."""
    d = _sim(3, mechanism="mar_cluster", n_clusters=8, size=40, strength=0.5)
    R = d["correct"].notna().astype(float).to_numpy()
    fit = propensity_fit(R, d[["x"]], d["cluster"], kind="fixed")
    D = pd.get_dummies(d["cluster"]).to_numpy(dtype=float)
    ref = sm.Logit(R, np.column_stack([D, d["x"].to_numpy()])).fit(disp=0, tol=1e-12, maxiter=100)
    np.testing.assert_allclose(fit.coef[0], ref.params[-1], atol=1e-6)
    np.testing.assert_allclose(fit.p, ref.predict(), atol=1e-8)
    np.testing.assert_allclose(fit.loglik, ref.llf, rtol=1e-9)


def _brute_loglik(beta: np.ndarray, sigma: float, R: np.ndarray, X: np.ndarray, codes: np.ndarray) -> float:
    """Marginal log-likelihood of the random-intercept logistic model by adaptive scipy quadrature."""
    total = 0.0
    eta0 = beta[0] + X @ beta[1:]
    for g in np.unique(codes):
        i = codes == g

        def f(u: float, i: np.ndarray = i) -> float:
            e = eta0[i] + u
            ll = np.sum(R[i] * e - np.logaddexp(0, e))
            return math.exp(ll) * stats.norm.pdf(u, 0, sigma)

        val, _ = integrate.quad(f, -12 * sigma - 10, 12 * sigma + 10, epsabs=1e-14, epsrel=1e-11, limit=200)
        total += math.log(val)
    return total


def test_random_intercept_against_brute_force_integration() -> None:
    """AGHQ with many nodes reproduces the exactly integrated likelihood and its maximiser;
    Laplace is close to it and its likelihood matches an independent Laplace computation."""
    rng = np.random.default_rng(7)
    M, m = 10, 6
    codes = np.repeat(np.arange(M), m)
    x = rng.normal(size=M * m)
    u = rng.normal(0, 1.5, M)
    R = (rng.random(M * m) < special.expit(0.5 + 0.8 * x + u[codes])).astype(float)
    X = x[:, None]
    aq = propensity_fit(R, X, codes, kind="random", method="aghq", n_quad=25)
    beta = np.array([aq.intercept, aq.coef[0]])
    # 1. the quadrature likelihood at the fit equals the brute-force integral
    np.testing.assert_allclose(aq.loglik, _brute_loglik(beta, aq.sigma_u, R, X, codes), rtol=1e-8)
    # 2. the AGHQ maximiser is the brute-force maximiser
    #    (the brute-force gradient in (b0, b1, log sigma) vanishes at the AGHQ optimum)
    ll = lambda t: _brute_loglik(t[:2], math.exp(t[2]), R, X, codes)  # noqa: E731
    t0 = np.array([*beta, math.log(aq.sigma_u)])
    h = 1e-4
    grad = [(ll(t0 + h * e) - ll(t0 - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(grad, 0.0, atol=2e-4)
    # 3. Laplace: its log-likelihood matches an independent Laplace evaluation at its optimum
    la = propensity_fit(R, X, codes, kind="random", method="laplace")
    s2 = la.sigma_u**2
    ll = 0.0
    for g in range(M):
        i = codes == g
        e0 = la.intercept + la.coef[0] * x[i]
        h = lambda v, e0=e0, i=i: -(np.sum(R[i] * (e0 + v) - np.logaddexp(0, e0 + v)) - v**2 / (2 * s2))  # noqa: E731
        v = optimize.minimize_scalar(h, bounds=(-20, 20), method="bounded", options={"xatol": 1e-12}).x
        p = special.expit(e0 + v)
        ll += -h(v) - 0.5 * math.log(s2) - 0.5 * math.log(np.sum(p * (1 - p)) + 1 / s2)
        np.testing.assert_allclose(la.cluster_effect[g], v, atol=1e-6)
    np.testing.assert_allclose(la.loglik, ll, rtol=1e-9)
    # tiny clusters: Laplace is an approximation, but in the right neighbourhood
    assert abs(la.coef[0] - aq.coef[0]) < 0.15 and abs(la.sigma_u - aq.sigma_u) < 0.3


def test_laplace_approaches_aghq_with_large_clusters() -> None:
    """With large clusters the Laplace approximation is accurate: it agrees with AGHQ(15)."""
    d = _sim(7, n_clusters=25, size=80)
    R = d["correct"].notna().astype(float)
    la = propensity_fit(R, d[["x"]], d["cluster"], kind="random")
    aq = propensity_fit(R, d[["x"]], d["cluster"], kind="random", method="aghq", n_quad=15)
    np.testing.assert_allclose(la.params.to_numpy(), aq.params.to_numpy(), atol=5e-3)
    assert la.converged and aq.converged


def test_aghq_with_one_node_is_laplace() -> None:
    d = _sim(9, n_clusters=12, size=15)
    R = d["correct"].notna().astype(float)
    la = propensity_fit(R, d[["x"]], d["cluster"], kind="random")
    q1 = propensity_fit(R, d[["x"]], d["cluster"], kind="random", method="aghq", n_quad=1)
    np.testing.assert_allclose(q1.params.to_numpy(), la.params.to_numpy(), atol=2e-4)
    np.testing.assert_allclose(q1.loglik, la.loglik, atol=1e-6)


def test_random_intercept_recovers_truth_and_predicts() -> None:
    """On a big simulation the random-intercept fit recovers the response model's parameters."""
    rng = np.random.default_rng(11)
    M, m = 200, 40
    codes = np.repeat(np.arange(M), m)
    x = rng.normal(size=M * m)
    R = (rng.random(M * m) < special.expit(1.0 - 0.7 * x + rng.normal(0, 0.8, M)[codes])).astype(float)
    fit = propensity_fit(R, x, codes, kind="random")
    assert abs(fit.intercept - 1.0) < 4 * math.sqrt(fit.cov[0, 0])
    assert abs(fit.coef[0] + 0.7) < 4 * math.sqrt(fit.cov[1, 1])
    assert abs(math.log(fit.sigma_u) - math.log(0.8)) < 4 * math.sqrt(fit.cov[2, 2])
    np.testing.assert_allclose(fit.predict(x[:, None], codes), fit.p, atol=1e-12)
    # an unseen cluster gets the population-average intercept
    p_new = fit.predict(np.array([[0.0]]), np.array([9999]))
    np.testing.assert_allclose(p_new, special.expit(fit.intercept))


# ------------------------------------------------------------------------------ weights

def test_weights_truncation_and_diagnostics() -> None:
    p = np.array([0.9, 0.5, 0.5, 0.25, 0.02])
    with pytest.warns(EvalkitWarning, match="carries"):
        w = weights_compute(p)
    np.testing.assert_allclose(w.w, 1 / p)
    assert w.mass_cut == 0 and w.n_capped == 0
    np.testing.assert_allclose(w.ess, (1 / p).sum() ** 2 / np.sum(1 / p**2))
    f = weights_compute(p, ("fixed", 10))
    np.testing.assert_allclose(f.w, [1 / 0.9, 2, 2, 4, 10])
    assert f.n_capped == 1
    np.testing.assert_allclose(f.mass_cut, 40 / np.sum(1 / p))
    q = weights_compute(p, ("quantile", 0.5))
    assert q.cap == 2.0 and q.w.max() == 2.0
    s = weights_compute(p, "sqrt_n")
    # the promise: after capping, no weight exceeds sqrt(n) mean weights (here with equality)
    np.testing.assert_allclose(s.w.max() / s.w.mean(), math.sqrt(5), rtol=1e-12)
    assert q.ess >= w.ess


def test_sqrt_n_cap_keeps_its_promise_with_an_extreme_weight() -> None:
    """The cap sqrt(n) x *raw* mean weight breaks the promise when one weight inflates the mean (issue 7)."""
    rng = np.random.default_rng(3)
    for n, extreme in ((50, 1e-4), (400, 1e-6), (9, 1e-3), (1000, 0.5)):
        p = np.r_[rng.uniform(0.3, 1.0, n - 1), extreme]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            W = weights_compute(p, "sqrt_n")
        assert W.w.max() <= math.sqrt(n) * W.w.mean() * (1 + 1e-12)
        if W.n_capped:  # capped weights sit exactly at the promised bound, and no lower than needed
            np.testing.assert_allclose(W.cap, math.sqrt(n) * W.w.mean(), rtol=1e-12)
        else:
            assert (1 / p).max() <= math.sqrt(n) * (1 / p).mean()
    # the old cap, for contrast: sqrt(50) x the raw mean leaves the extreme weight far above the bound
    p = np.r_[np.full(49, 0.5), 1e-4]
    w_old = np.minimum(1 / p, math.sqrt(50) * (1 / p).mean())
    assert w_old.max() > 5 * math.sqrt(50) * w_old.mean()


def test_weight_share_warning_with_few_respondents() -> None:
    """One respondent with a large share of the weight is flagged even with under 100 respondents."""
    with pytest.warns(EvalkitWarning, match="carries 34% of the weight"):
        weights_compute(np.r_[np.full(19, 0.9), 0.09])     # 20 respondents, max / mean = 7.1 < 100
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvalkitWarning)
        weights_compute(np.r_[np.full(19, 0.9), 0.5])      # a mild weight: no warning
        weights_compute(np.array([0.5, 0.6, 0.7]))         # three similar respondents: no warning


@pytest.mark.parametrize("bad", [("quantile", 0.0), ("fixed", 0.5), ("median", 2), "cube_n", 3])
def test_weights_bad_truncation(bad: object) -> None:
    with pytest.raises(ValueError):
        weights_compute(np.array([0.5, 0.5]), bad)  # type: ignore[arg-type]


def test_weights_propensity_zero_or_nan_raise_and_one_is_fine() -> None:
    with pytest.raises(ValueError, match="propensity 0"):
        weights_compute(np.array([0.5, 0.0]))
    with pytest.raises(ValueError, match="NaN"):
        weights_compute(np.array([0.5, np.nan]))
    np.testing.assert_allclose(weights_compute(np.ones(3)).w, 1.0)
    with pytest.warns(EvalkitWarning, match="carries"):
        weights_compute(np.r_[np.full(200, 0.9), 1e-4])


# ------------------------------------------------------------------------------ estimators

def test_ipw_is_hajek_through_mean_estimate() -> None:
    d = _sim(13)
    y, cl = d["correct"].to_numpy(), d["cluster"].to_numpy()
    obs = ~np.isnan(y)
    fit = propensity_fit(obs.astype(float), d[["x"]], cl, kind="random")
    for se in ("CR1", "CR2", "iid"):
        e = ipw_estimate(y, cl, features=d[["x"]], se=se)
        ref = mean_estimate(y[obs], cl[obs], weights=1 / fit.p[obs], se=se)
        np.testing.assert_allclose([e.estimate, e.se, e.ci_low], [ref.estimate, ref.se, ref.ci_low], rtol=1e-10)
    manual = np.sum(y[obs] / fit.p[obs]) / np.sum(1 / fit.p[obs])
    np.testing.assert_allclose(ipw_estimate(y, cl, features=d[["x"]]).estimate, manual, rtol=1e-12)


def test_complete_case_and_bounds() -> None:
    y = np.array([1, 0, np.nan, 1, np.nan, 0, 1, 1.0])
    cl = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    cc = missing_complete_case(y, cl, se="iid")
    np.testing.assert_allclose(cc.estimate, 4 / 6)
    lo, hi = missing_bounds(y, cl)
    np.testing.assert_allclose([lo.estimate, hi.estimate], [4 / 8, 6 / 8])
    assert lo.estimate <= cc.estimate <= hi.estimate


@pytest.mark.parametrize("sizes", ["balanced", "skewed"])
def test_ipw_compare_reduces_to_paired_estimate(sizes: str) -> None:
    """No missing outcomes and unit weights: the paired estimate, SE, df and interval (CR2 with Satterthwaite df)."""
    rng = np.random.default_rng(17)
    d = simulate_clustered(n_clusters=30, cluster_size=20, mean=0.6, icc=0.2, rng=rng, sizes=sizes)
    ya = d["correct"].to_numpy()
    yb = (rng.random(len(d)) < 0.55).astype(float)
    cl = d["cluster"].to_numpy()
    for se in ("CR0", "CR1", "CR2"):
        a = ipw_compare(ya, yb, cl, se=se)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            b = paired_estimate(ya, yb, cl, se=se)
        np.testing.assert_allclose([a.estimate, a.se, a.df, a.ci_low, a.ci_high],
                                   [b.estimate, b.se, b.df, b.ci_low, b.ci_high], rtol=1e-10)
    if sizes == "skewed":
        assert a.df < 29                                # CR2's Satterthwaite df, not M - 1


def test_ipw_compare_same_respondents_and_weights_is_the_weighted_mean_of_differences() -> None:
    """Both models observed on the same items with the same weights: the difference is one weighted mean of
    ``y_a - y_b``, and ipw_compare's CR2 (SE and df) is mean_estimate's on it."""
    rng = np.random.default_rng(31)
    d = simulate_clustered(n_clusters=12, cluster_size=15, mean=0.6, icc=0.2, rng=rng, sizes="skewed")
    cl = d["cluster"].to_numpy()
    ya = d["correct"].to_numpy(copy=True)
    yb = np.where(rng.random(ya.size) < 0.3, 1 - ya, ya)
    p = rng.uniform(0.3, 0.9, ya.size)
    miss = rng.random(ya.size) > p
    ya[miss], yb[miss] = np.nan, np.nan
    a = ipw_compare(ya, yb, cl, p_a=p, p_b=p, se="CR2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        b = mean_estimate((ya - yb)[~miss], cl[~miss], weights=1 / p[~miss], se="CR2", binary=False)
    np.testing.assert_allclose([a.estimate, a.se, a.df], [b.estimate, b.se, b.df], rtol=1e-10)


def test_ipw_compare_rejects_unknown_df_rule() -> None:
    with pytest.raises(ValueError, match="df must be"):
        ipw_compare(np.ones(4), np.zeros(4), [0, 0, 1, 1], df="M")  # type: ignore[arg-type]


def test_ipw_compare_with_missing_matches_difference_of_estimates() -> None:
    a, b = _sim(19), _sim(23)
    cl = a["cluster"].to_numpy()
    ya, yb = a["correct"].to_numpy(), b["correct"].to_numpy()
    diff = ipw_compare(ya, yb, cl, features=a[["x"]])
    ea = ipw_estimate(ya, cl, features=a[["x"]])
    eb = ipw_estimate(yb, cl, features=a[["x"]])
    np.testing.assert_allclose(diff.estimate, ea.estimate - eb.estimate, rtol=1e-10)
    assert diff.se > 0 and diff.df == 29


def test_bootstrap_refits_propensity() -> None:
    d = _sim(29, n_clusters=15, size=20)
    y, cl = d["correct"].to_numpy(), d["cluster"].to_numpy()
    b = ipw_bootstrap(y, cl, features=d[["x"]], n_boot=60, seed=1)
    e = ipw_estimate(y, cl, features=d[["x"]])
    np.testing.assert_allclose(b.estimate, e.estimate, rtol=1e-10)
    assert 0.3 < b.se / e.se < 3
    assert b.ci_low < b.estimate < b.ci_high


# ------------------------------------------------------------------------------ known truth (Monte Carlo)

def _mc(mechanism: str, estimator, n_reps: int, seed: int, **kw) -> pd.DataFrame:
    def sim(rng: np.random.Generator) -> pd.DataFrame:
        d = simulate_clustered(n_clusters=kw.get("M", 40), cluster_size=kw.get("m", 25), mean=0.6,
                               icc=kw.get("icc", 0.1), rng=rng, beta_x=1.0)
        return simulate_missing(d, mechanism=mechanism, response_rate=0.75, strength=1.2, rng=rng)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        runs = mc_run(sim, {"est": estimator}, truth=kw.get("truth", lambda d: d["correct_full"].mean()),
                      n_reps=n_reps, seed=seed, progress=False)
    return mc_summarise(runs)


@pytest.mark.slow
def test_ipw_unbiased_under_mar_and_cc_biased() -> None:
    """Under MAR given x, IPW on x is unbiased for the full-data accuracy (within 4 MC SEs); CC is not."""
    ipw = _mc("mar", lambda d: ipw_estimate(d["correct"], d["cluster"], features=d[["x"]], kind="logistic"),
              200, seed=1)
    cc = _mc("mar", lambda d: missing_complete_case(d["correct"], d["cluster"]), 200, seed=1)
    assert abs(ipw["bias"].iloc[0]) < 4 * ipw["bias_mcse"].iloc[0]
    assert cc["bias"].iloc[0] > 8 * cc["bias_mcse"].iloc[0]


@pytest.mark.slow
def test_cluster_aware_ipw_coverage_is_nominal() -> None:
    """Random-intercept IPW with CR1 covers the expected accuracy at ~95% under MNAR-through-cluster.

    The setting has large clusters (60 items): the conditional modes then shrink little, so the
    propensity recovers the cluster effect. With small clusters the shrinkage leaves a bias of a
    point or two and the coverage drops (shown in the notebook).
    """
    n = 300
    s = _mc("mar_cluster", lambda d: ipw_estimate(d["correct"], d["cluster"], features=d[["x"]], se="CR1"),
            n, seed=3, M=30, m=60, icc=0.2, truth=0.6)
    cov = s["coverage"].iloc[0]
    assert abs(cov - 0.95) <= mc_tolerance(0.95, n), cov


def test_missing_study_small() -> None:
    runs = missing_study(n_reps=3, mechanisms=("mcar", "mnar_item"), iccs=(0.2,), n_clusters=(20,), n_items=200)
    s = mc_summarise(runs)
    assert set(s.index.get_level_values("estimator")) == {"CC iid", "CC CR1", "IPW logistic iid", "IPW RI CR1",
                                                           "IPW RI CR2"}
    assert (s["n_failed"] == 0).all()


# ------------------------------------------------------------------------------ sensitivity

def test_sensitivity_delta_monotone_and_mar_at_zero() -> None:
    d = _sim(31)
    y, cl = d["correct"].to_numpy(), d["cluster"].to_numpy()
    t = sensitivity_delta(y, cl, features=d[["x"]], deltas=np.linspace(-4, 4, 17))
    assert np.all(np.diff(t["estimate"]) > 0)
    lo, hi = missing_bounds(y, cl)
    assert lo.estimate < t["estimate"].iloc[0] and t["estimate"].iloc[-1] < hi.estimate
    mid = float(t.loc[t["delta"] == 0, "estimate"].iloc[0])
    assert abs(mid - ipw_estimate(y, cl, features=d[["x"]]).estimate) < 0.03


def test_tipping_point_on_constructed_table() -> None:
    d = np.linspace(-2, 2, 5)
    t = pd.DataFrame({"delta": d, "estimate": 0.05 + 0.05 * d, "se": 0.01})
    t["ci_low"], t["ci_high"] = t["estimate"] - 0.02, t["estimate"] + 0.02
    t.attrs["quantity"] = "difference"
    tp = sensitivity_tipping_point(t)
    assert tp["conclusion_at_0"] == "above"
    np.testing.assert_allclose(tp["delta_low"], -0.6)  # ci_low = 0.03 + 0.05 d crosses 0 at -0.6
    assert tp["delta_high"] is None
    te = sensitivity_tipping_point(t, criterion="estimate")
    np.testing.assert_allclose(te["delta_low"], -1.0)
    t.attrs["quantity"] = "accuracy"
    with pytest.raises(ValueError, match="reference"):
        sensitivity_tipping_point(t)


def test_sensitivity_comparison_flips() -> None:
    a, b = _sim(37, mechanism="mnar_item", strength=2.0), _sim(41, rate=0.99, mechanism="mcar")
    cl = a["cluster"].to_numpy()
    t = sensitivity_delta(a["correct"], cl, correct_b=b["correct"], features=a[["x"]],
                          deltas=np.linspace(-6, 6, 49))
    assert t.attrs["quantity"] == "difference"
    assert np.all(np.diff(t["estimate"]) > 0)
    tp = sensitivity_tipping_point(t, criterion="estimate")
    assert tp["delta_low"] is not None or tp["delta_high"] is not None


# ------------------------------------------------------------------------------ the report

def test_missing_report_one_model_and_comparison() -> None:
    a = _sim(43)
    b = _sim(47).assign(model="other")
    b.loc[b.index[:5], "status"] = "parse_failure"
    b.loc[b.index[:5], "correct"] = np.nan
    both = pd.concat([a, b], ignore_index=True)
    r = missing_report(a, features=["x"], guess_rate=0.25)
    assert {"complete case, iid", "complete case, CR2", "missing as wrong, CR1", "missing as right, CR1",
            "IPW logistic, CR1", "IPW random intercept, CR1", "IPW random intercept, CR2",
            "missing as guess (0.25), CR1"} <= set(r["estimator"])
    for col in ("se", "ci_low", "ci_high", "icc", "deff", "n_eff", "deff_emp"):
        assert r[col].notna().all(), col
    lo = r.loc[r["estimator"] == "missing as wrong, CR1", "estimate"].iloc[0]
    hi = r.loc[r["estimator"] == "missing as right, CR1", "estimate"].iloc[0]
    assert ((r["estimate"] >= lo - 1e-12) & (r["estimate"] <= hi + 1e-12)).all()
    det = r.attrs["missing"]
    assert set(det.by_reason["status"]) == {"ok", "refusal"} and len(det.by_cluster) == 30
    assert det.propensity["sim"].kind == "random" and det.weights["sim"]["ess"] > 0
    pd.concat([r, r])  # reports concatenate (their attrs do not break pandas)
    c = missing_report(both, features=["x"], compare=("sim", "other"))
    assert "sim - other" in set(c["model"])
    byr, byc = missing_breakdown(both)
    assert set(byr["status"]) == {"ok", "refusal", "parse_failure"}
    np.testing.assert_allclose(byc["n"].sum(), len(both))
    with pytest.raises(ValueError, match="pass model="):
        missing_report(both)


def test_missing_report_with_bootstrap_and_other_cluster_column() -> None:
    a = _sim(53, n_clusters=12, size=15)
    a["src"] = a["cluster"].str[:-1]
    r = missing_report(a, features=["x"], n_boot=50, seed=1)
    assert "IPW random intercept, cluster bootstrap" in set(r["estimator"])
    r2 = missing_report(a, cluster="src")
    assert r2["n_clusters"].max() <= a["src"].nunique()


def test_missing_features_leave_one_out() -> None:
    long = pd.DataFrame({"model": ["a", "a", "b", "b", "c", "c"], "item": ["1", "2"] * 3, "cluster": "k",
                         "correct": [1, np.nan, 0, 1, 1, np.nan],
                         "status": ["ok", "refusal", "ok", "ok", "ok", "refusal"]})
    f = missing_features(long, model="a", texts=pd.Series({"1": "abc", "2": "abcdefg"}))
    np.testing.assert_allclose(f.loc["1", "acc_others"], 0.5)
    np.testing.assert_allclose(f.loc["2", "acc_others"], 1.0)
    np.testing.assert_allclose(f["log_length"], np.log1p([3, 7]))
    with pytest.raises(ValueError, match="not in the table"):
        missing_features(long, model="z")


# ------------------------------------------------------------------------------ bad input

def test_everything_missing() -> None:
    y = np.full(10, np.nan)
    cl = np.repeat([0, 1], 5)
    with pytest.raises(ValueError, match="no outcome is observed"):
        ipw_estimate(y, cl)
    with pytest.raises(ValueError, match="no item was answered"):
        propensity_fit(np.zeros(10), None, cl)
    lo, hi = missing_bounds(y, cl, se="iid")
    assert lo.estimate == 0 and hi.estimate == 1


def test_nothing_missing() -> None:
    d = _sim(59, rate=1.0)
    with pytest.raises(ValueError, match="every item was answered"):
        propensity_fit(np.ones(len(d)), d[["x"]], d["cluster"])
    with pytest.raises(ValueError, match="missing_complete_case"):
        ipw_estimate(d["correct"], d["cluster"])
    with pytest.warns(EvalkitWarning, match="every item was answered"):
        r = missing_report(d)
    cc = r.loc[r["estimator"] == "complete case, CR1", "estimate"].iloc[0]
    np.testing.assert_allclose(r.loc[r["estimator"] == "IPW random intercept, CR1", "estimate"], cc)


def test_one_cluster() -> None:
    rng = np.random.default_rng(1)
    R = (rng.random(50) < 0.7).astype(float)
    with pytest.raises(ValueError, match="at least two clusters"):
        propensity_fit(R, None, np.zeros(50), kind="random")
    fit = propensity_fit(R, None, np.zeros(50), kind="logistic")
    np.testing.assert_allclose(fit.p, R.mean())
    y = np.where(R == 1, 1.0, np.nan)
    with pytest.raises(ValueError, match="one cluster"):
        ipw_estimate(y, np.zeros(50), kind="logistic", se="CR1")


def test_tiny_and_separated_clusters() -> None:
    """Clusters of size one and clusters all/none answered: random intercept stays finite; fixed warns."""
    rng = np.random.default_rng(3)
    codes = np.r_[np.repeat(np.arange(10), 12), 10, 11, 12]
    R = (rng.random(codes.size) < 0.7).astype(float)
    R[codes == 0] = 1.0
    R[codes == 1] = 0.0
    fit = propensity_fit(R, None, codes, kind="random")
    assert np.all(np.isfinite(fit.cluster_effect)) and np.all((fit.p > 0) & (fit.p < 1))
    assert fit.cluster_effect[0] > 0 > fit.cluster_effect[1]
    with pytest.warns(EvalkitWarning, match="separated|every item answered"):
        fx = propensity_fit(R, None, codes, kind="fixed")
    assert fx.p[codes == 0].min() == 1.0 and fx.p[codes == 1].max() == 0.0
    y = np.where(R == 1, (rng.random(codes.size) < 0.5).astype(float), np.nan)
    e = ipw_estimate(y, codes, kind="random")
    assert 0 <= e.estimate <= 1
    e_fx = ipw_estimate(y, codes, kind="fixed")  # p = 1 in the all-answered cluster: weight 1, fine
    assert e_fx.n_clusters == np.unique(codes[R == 1]).size


def test_nan_and_constant_features() -> None:
    d = _sim(61)
    R = d["correct"].notna().astype(float)
    X = d[["x"]].copy()
    X.iloc[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        propensity_fit(R, X, d["cluster"])
    with pytest.raises(ValueError, match="constant"):
        propensity_fit(R, np.ones((len(d), 1)), d["cluster"])
    a = d.assign(feat=X["x"])
    with pytest.raises(ValueError, match="NaN"):
        missing_report(a, features=["feat"])


def test_bad_shapes_and_values() -> None:
    with pytest.raises(ValueError, match="0/1"):
        propensity_fit(np.array([0, 1, 2.0]), None, None, kind="logistic")
    with pytest.raises(ValueError, match="align"):
        propensity_fit(np.array([0, 1, 1.0]), np.zeros((2, 1)), None, kind="logistic")
    with pytest.raises(ValueError, match="needs clusters"):
        propensity_fit(np.array([0, 1, 1.0]), None, None, kind="random")
    with pytest.raises(ValueError, match="kind"):
        propensity_fit(np.array([0, 1, 1.0]), None, np.array([0, 1, 1]), kind="probit")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="0/1"):
        ipw_estimate(np.array([0.5, 1, np.nan]), np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="share the items"):
        ipw_compare(np.ones(3), np.ones(4), np.arange(3))


def test_sensitivity_plot_marks_the_tipping_points() -> None:
    import matplotlib.pyplot as plt

    d = np.linspace(-2, 2, 5)
    t = pd.DataFrame({"delta": d, "estimate": 0.05 + 0.05 * d, "se": 0.01})
    t["ci_low"], t["ci_high"] = t["estimate"] - 0.02, t["estimate"] + 0.02
    t.attrs["quantity"] = "difference"
    ax = sensitivity_plot(t, tipping=sensitivity_tipping_point(t))
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), 100 * t["estimate"])
    assert any("tips at -0.60" in a.get_text() for a in ax.texts)
    assert "difference" in ax.get_ylabel()
    plt.close("all")


# ------------------------------------------------------------------------------ hardening (issue 7)

def near_separated(seed: int = 500) -> pd.DataFrame:
    """1,700 items in 14 unequal clusters, 4 non-responses in one cluster, all at large x1 (separated by x1)."""
    rng = np.random.default_rng(seed)
    M = int(rng.integers(5, 20))
    p = rng.dirichlet(np.full(M, rng.choice([0.3, 1.0, 3.0])))
    cl = pd.factorize(rng.choice(M, size=1700, p=p))[0]
    x1, x2 = rng.normal(size=cl.size), rng.normal(size=cl.size)
    R = np.ones(cl.size)
    if rng.random() < 0.5:
        idx = rng.choice(cl.size, size=4, replace=False)
    else:
        idx = rng.choice(np.flatnonzero(cl == cl[0]), size=4, replace=False)
    R[idx] = 0
    x1[idx] += rng.uniform(0, 3)
    return pd.DataFrame({"R": R.astype(int), "x1": x1, "x2": x2, "cluster": cl})


@pytest.mark.parametrize("n_quad", [1, 5, 10])
def test_marginal_likelihood_gradient_is_exact(n_quad: int) -> None:
    """The analytic gradient of the Laplace / AGHQ likelihood (through modes and nodes) matches finite differences."""
    from evalkit.missing_propensity import _RandomIntercept

    rng = np.random.default_rng(0)
    M = 8
    codes = rng.integers(0, M, 300)
    Z = np.column_stack([np.ones(300), rng.normal(size=300)])
    R = (rng.random(300) < 0.8).astype(float)
    obj = _RandomIntercept(R, Z, codes, M, n_quad=n_quad)
    fg = obj.laplace if n_quad == 1 else obj.aghq
    for th in (np.array([1.0, 0.3, math.log(0.9)]), np.array([2.5, -1.0, math.log(3.0)])):
        g = fg(th)[1]
        num = np.array([(fg(th + e)[0] - fg(th - e)[0]) / 2e-6 for e in np.eye(3) * 1e-6])
        np.testing.assert_allclose(g, num, atol=1e-6)


def test_aghq_near_separated_reaches_the_lme4_optimum() -> None:
    """4 non-responses in 1,700 items: AGHQ(10) used to stop at log-likelihood -2.967 and call it converged.

    lme4::glmer(nAGQ = 10) reaches -2.89961 on these data (and our AGHQ objective gives the same
    value at lme4's parameters); evalkit must do at least as well, and report the separation.
    """
    d = near_separated()
    with pytest.warns(EvalkitWarning, match="separation"):
        fit = propensity_fit(d["R"], d[["x1", "x2"]], d["cluster"], kind="random", method="aghq", n_quad=10)
    assert fit.loglik >= -2.8996149 - 1e-6
    assert fit.separated and "separation" in fit.message and fit.converged


def test_convergence_is_never_claimed_when_the_gradient_test_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import evalkit.missing_propensity as mp

    d = _sim(21, n_clusters=15, size=20)
    monkeypatch.setattr(mp, "_GRAD_TOL", 0.0)
    monkeypatch.setattr(mp, "_DECREMENT_TOL", -1.0)
    for method in ("laplace", "aghq"):
        with pytest.warns(EvalkitWarning, match="did not converge"):
            fit = propensity_fit(d["correct"].notna(), d[["x"]], d["cluster"], kind="random", method=method, n_quad=5)
        assert not fit.converged and "did not converge" in fit.message


@pytest.mark.parametrize("kind", ["logistic", "fixed", "random"])
def test_separation_is_reported_the_same_way_for_every_kind(kind: str) -> None:
    """A feature that predicts response perfectly: no kind may return 0/1 propensities as 'converged' in silence."""
    rng = np.random.default_rng(4)
    codes = np.repeat(np.arange(10), 30)
    x = rng.normal(size=codes.size)
    R = (x < 1.0).astype(float)       # every item with x >= 1 is missing: separation by x
    with pytest.warns(EvalkitWarning, match="separation"):
        fit = propensity_fit(R, x, codes, kind=kind)  # type: ignore[arg-type]
    assert fit.separated and "separation:" in fit.message
    if kind != "random":
        assert not fit.converged      # no finite maximum exists
    # a clean fit is not flagged
    R2 = (rng.random(codes.size) < special.expit(1 + 0.5 * x)).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        clean = propensity_fit(R2, x, codes, kind=kind)  # type: ignore[arg-type]
    assert not clean.separated and clean.converged


def test_report_names_a_cluster_without_respondents() -> None:
    a = _sim(61, n_clusters=12, size=20)
    empty = a["cluster"].iloc[0]
    a.loc[a["cluster"] == empty, ["correct", "status"]] = [np.nan, "refusal"]
    with pytest.warns(EvalkitWarning, match=rf"cluster\(s\) \[.{empty}.\] have no answered item"):
        r = missing_report(a, features=["x"])
    ri = r[r["estimator"] == "IPW random intercept, CR1"].iloc[0]
    assert "11 of 12 clusters that have respondents" in ri["note"] and ri["n_clusters"] == 11
    assert any("11 of 12" in n for n in r.attrs["missing"].notes)


def test_report_checks_every_propensity_it_fits_and_names_the_one_that_fails() -> None:
    """Each propensity of the report (plain logistic, random intercept, DR's cross-fitted one) is checked, and a
    failed check is a note naming the model and that propensity."""
    full = ek.simulate_clustered(n_clusters=20, cluster_size=50, mean=0.6, icc=0.2, rng=71, beta_x=1.0)
    a = ek.simulate_missing(full, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=72)
    r = missing_report(a, features=["x"])
    det = r.attrs["missing"]
    assert set(det.checks["sim"]) == {"plain logistic", "random intercept", "doubly robust, cross-fitted logistic"}
    assert det.checks["sim"]["random intercept"] is det.weights["sim"]["propensity_checks"]
    assert isinstance(det.checks["sim"]["doubly robust, cross-fitted logistic"], ek.DRDiagnostics)
    # missingness by cluster: x alone leaves the cluster shares off, the random intercept repairs them
    assert any(n.startswith("model 'sim': propensity check failed (plain logistic): balance") for n in det.notes)
    assert det.checks["sim"]["random intercept"].ok
    assert not any("(random intercept)" in n for n in det.notes)
    for name, c in det.checks["sim"].items():
        assert sum(f"({name}): {p}" in n for n in det.notes for p in c.problems) == len(c.problems), name
    # severe non-overlap: response driven hard by x, so answered items with p < 0.05 and missing items below them
    hard = ek.simulate_clustered(n_clusters=30, cluster_size=30, mean=0.6, icc=0.1, rng=3, beta_x=1.0)
    hard = ek.simulate_missing(hard, mechanism="mar", response_rate=0.6, strength=4.0, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        notes = missing_report(hard, features=["x"]).attrs["missing"].notes
    assert any(n.startswith("model 'sim': propensity check failed (plain logistic): overlap: ") and "p < 0.05" in n
               for n in notes), notes


def test_report_checks_the_comparison_propensities_that_are_not_the_models_own() -> None:
    full = ek.simulate_clustered(n_clusters=30, cluster_size=30, mean=0.6, icc=0.1, rng=3, beta_x=1.0)
    a = ek.simulate_missing(full, mechanism="mar_cluster", response_rate=0.7, strength=2.0, rng=5).assign(model="a")
    b = ek.simulate_missing(full, mechanism="mcar", response_rate=0.9, rng=6).assign(model="b")
    b = b[b["cluster"] != b["cluster"].iloc[0]]           # b ran on 29 of the 30 clusters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        det = missing_report(pd.concat([a, b]), compare=("a", "b")).attrs["missing"]
    label = "plain logistic, comparison on the 870 items shared with 'b'"
    assert label in det.checks["a"] and not det.checks["a"][label].ok
    assert any(n.startswith(f"model 'a': propensity check failed ({label}): balance") for n in det.notes)
    # b's comparison propensities are its own (the same items and features): checked once, with its rows
    assert set(det.checks["b"]) == {"plain logistic", "random intercept"}


def test_report_flags_heavy_truncation_and_shows_the_untruncated_row() -> None:
    a = _sim(67, n_clusters=20, size=30, strength=2.5, rate=0.6)
    with pytest.warns(EvalkitWarning, match="of the weight mass"):
        r = missing_report(a, features=["x"], truncate=("quantile", 0.8))
    est = r.set_index("estimator")
    assert est.loc["IPW random intercept, CR1", "mass_cut"] > 0.05
    assert est.loc["IPW random intercept, CR1", "truncation"] == "quantile 0.8"
    untrunc = ipw_estimate(a["correct"], a["cluster"], features=a[["x"]], truncate=None)
    np.testing.assert_allclose(est.loc["IPW random intercept, CR1, untruncated", "estimate"], untrunc.estimate)
    assert "compare the untruncated row" in est.loc["IPW random intercept, CR1", "note"]


def test_report_and_ipw_estimate_share_the_default_truncation() -> None:
    import inspect

    from evalkit.missing import TRUNCATE_DEFAULT

    for f in (missing_report, ipw_estimate, ipw_compare, ipw_bootstrap, weights_compute):
        assert inspect.signature(f).parameters["truncate"].default == TRUNCATE_DEFAULT, f.__name__
    a = _sim(71)
    r = missing_report(a, features=["x"]).set_index("estimator")
    e = ipw_estimate(a["correct"], a["cluster"], features=a[["x"]])
    np.testing.assert_allclose(r.loc["IPW random intercept, CR1", "estimate"], e.estimate, rtol=1e-12)


def test_report_propensities_follow_the_items_sorted_by_item() -> None:
    """``attrs["missing"].propensity[model].p`` is in item order, whatever the row order of the long table."""
    a = _sim(79)
    shuffled = a.sample(frac=1.0, random_state=3).reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        r = missing_report(shuffled, features=["x"])
    model = shuffled["model"].iloc[0]
    p = r.attrs["missing"].propensity[model].p
    in_order = shuffled.sort_values("item").reset_index(drop=True)
    e = ipw_estimate(in_order["correct"], in_order["cluster"], p=p, truncate=None)
    expected = r.set_index("estimator").loc["IPW random intercept, CR1", "estimate"]
    np.testing.assert_allclose(e.estimate, expected, rtol=1e-10)
    assert not np.isclose(ipw_estimate(shuffled["correct"], shuffled["cluster"], p=p, truncate=None).estimate, expected)


def test_compare_complete_case_reports_the_items_it_uses() -> None:
    a = _sim(73)
    b = _sim(79).assign(model="other")
    both = pd.concat([a, b], ignore_index=True)
    c = missing_report(both, features=["x"], compare=("sim", "other"))
    row = c[c["estimator"] == "complete case (items both answered), CR1"].iloc[0]
    ya = a.sort_values("item")["correct"].to_numpy()
    yb = b.sort_values("item")["correct"].to_numpy()
    jointly = ~np.isnan(ya) & ~np.isnan(yb)
    assert row["n"] == jointly.sum() < len(a)
    cl = a.sort_values("item")["cluster"].to_numpy()
    np.testing.assert_allclose(row["estimate"], paired_estimate(ya[jointly], yb[jointly], cl[jointly]).estimate)


def test_report_rejects_cluster_labels_that_differ_between_models() -> None:
    """long_validate checks the ``cluster`` column; the report must check the column it clusters on."""
    a = _sim(83)
    b = _sim(89).assign(model="other")
    a["src"] = a["cluster"]
    b["src"] = b["cluster"]
    b.loc[b.index[3], "src"] = "somewhere else"
    both = pd.concat([a, b], ignore_index=True)
    with pytest.raises(ValueError, match="different 'src' labels in different models"):
        missing_report(both, compare=("sim", "other"), cluster="src")
    missing_report(both, model="other", cluster="src")  # one model: its own labels are consistent


def test_deprecated_mechanism_name_still_works() -> None:
    d = simulate_clustered(n_clusters=10, cluster_size=20, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    with pytest.warns(DeprecationWarning, match="mar_cluster"):
        old = simulate_missing(d, mechanism="mnar_cluster", response_rate=0.8, rng=5)
    new = simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, rng=5)
    pd.testing.assert_frame_equal(old, new)
    assert new.attrs["mechanism"] == "mar_cluster"
    with pytest.warns(DeprecationWarning):
        runs = missing_study(n_reps=2, mechanisms=("mnar_cluster",), iccs=(0.2,), n_clusters=(10,), n_items=100)
    assert set(runs["mechanism"]) == {"mar_cluster"}


def test_missing_explore_draws_bias_coverage_with_error_bars_and_weights() -> None:
    import matplotlib.pyplot as plt

    from evalkit import missing_explore

    fig = missing_explore(n_reps=6, n_clusters=10, response_rate=0.6, trunc_q=0.9)
    ax_bias, ax_cov, ax_w = fig.axes
    assert len(ax_cov.collections) >= 2                     # points and their Monte Carlo error bars
    assert "60% answered" in fig._suptitle.get_text()
    assert ax_w.get_legend() is not None                    # the truncation cap is drawn
    assert ax_cov.get_xlim()[1] > 1.0                       # a coverage of 1.0 inside the frame
    assert [t.get_text() for t in ax_bias.get_yticklabels()][0] == "CC iid"
    plt.close(fig)
    with pytest.raises(ValueError, match="response_rate"):
        missing_explore(response_rate=1.0)
    with pytest.raises(ValueError, match="trunc_q"):
        missing_explore(trunc_q=0.0)


def test_study_failure_of_one_estimator_fails_only_its_row() -> None:
    """A failing estimator (here the bootstrap with too few resamples) must not fail or stale the others."""
    runs = missing_study(n_reps=3, seed=2, mechanisms=("mar_cluster",), iccs=(0.2,), n_clusters=(10,), n_items=200,
                         n_boot=5)
    boot = runs[runs["estimator"] == "IPW RI bootstrap"]
    rest = runs[runs["estimator"] != "IPW RI bootstrap"]
    assert boot["error"].str.contains("n_boot").all() and boot["estimate"].isna().all()
    assert (rest["error"] == "").all() and rest["estimate"].notna().all()
    cc = rest[rest["estimator"] == "CC CR1"]["estimate"]
    assert cc.nunique() == 3                              # each replication's own data, never a stale estimate


def test_propensity_diagnostics_pass_for_the_true_model_and_fail_for_a_wrong_one() -> None:
    """Balance/calibration hold for the right propensity and flag one that ignores the feature."""
    d = ek.simulate_clustered(n_clusters=40, cluster_size=40, mean=0.6, icc=0.1, rng=5, beta_x=1.0)
    d = ek.simulate_missing(d, mechanism="mar", response_rate=0.7, strength=2.0, rng=6)
    R = d["correct"].notna().to_numpy()
    fit = ek.propensity_fit(R, d[["x"]], kind="logistic")
    good = ek.propensity_diagnostics(R, fit, d[["x"]], d["cluster"], plot=False)
    assert abs(good.balance.loc["x", "smd_raw"]) > 0.1  # missingness depends on x ...
    assert abs(good.balance.loc["x", "smd_weighted"]) < 0.05  # ... and the weights repair it
    assert not [q for q in good.problems if q.startswith(("balance", "calibration"))]
    assert good.overlap.loc["answered", "n"] == R.sum()
    assert good.calibration["n"].sum() == R.size
    wrong = ek.propensity_diagnostics(R, np.full(R.size, R.mean()), d[["x"]], plot=False)
    assert any(q.startswith("balance") for q in wrong.problems)
    # an over-confident propensity (log-odds doubled) ranks items right but is miscalibrated
    over = 1 / (1 + np.exp(-2 * np.log(fit.p / (1 - fit.p))))
    assert any(q.startswith("calibration") for q in ek.propensity_diagnostics(R, over, plot=False).problems)
    tiny = np.where(R, 0.01, 0.5)
    assert any(q.startswith("overlap") for q in ek.propensity_diagnostics(R, tiny, plot=False).problems)
    diag = ek.propensity_diagnostics(R, fit, d[["x"]])
    assert len(diag.figure.axes) == 3
    with pytest.raises(ValueError, match="one fitted propensity"):
        ek.propensity_diagnostics(R, fit.p[:-1])
    with pytest.raises(ValueError, match="n_bins"):
        ek.propensity_diagnostics(R, fit, n_bins=1)


def test_study_bootstrap_draws_its_own_resamples_in_each_replication(monkeypatch):
    """The study's bootstrap takes a seed from each replication's stream, not one seed for all."""
    import importlib

    ms = importlib.import_module("evalkit.missing_study")  # the module (the package exports a function of its name)
    seeds = []
    real = ms.ipw_bootstrap

    done = []

    def spy(*args, **kwargs):
        seeds.append(kwargs["seed"])
        out = real(*args, **kwargs)
        done.append(kwargs["seed"])
        return out

    monkeypatch.setattr(ms, "ipw_bootstrap", spy)
    runs = ms.missing_study(n_reps=4, seed=3, mechanisms=("mar_cluster",), iccs=(0.1,), n_clusters=(10,),
                            n_items=200, n_boot=50)
    assert len(seeds) == 4 and len(set(seeds)) == 4
    assert done == seeds  # every replication's bootstrap ran to the end
    again = ms.missing_study(n_reps=4, seed=3, mechanisms=("mar_cluster",), iccs=(0.1,), n_clusters=(10,),
                             n_items=200, n_boot=50)
    assert seeds[:4] == seeds[4:]  # seeded: the same seeds on a second run
    pd.testing.assert_frame_equal(runs, again)
