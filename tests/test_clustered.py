"""Cluster-robust inference: agreement with statsmodels, exact special cases, coverage by simulation."""

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import linalg

from evalkit import EvalkitWarning
from evalkit.clustered import (
    COVERAGE_ESTIMATORS,
    bootstrap_cluster,
    cluster_scores_variance,
    clusters_effective,
    coverage_study,
    deff_empirical,
    deff_from_icc,
    icc_anova,
    icc_latent,
    interval_wilson,
    mean_estimate,
    n_effective,
    paired_estimate,
)
from evalkit.montecarlo import mc_run, mc_summarise, mc_tolerance
from evalkit.simulate import simulate_cluster_sizes, simulate_clustered


@pytest.fixture
def clustered_data():
    """Unbalanced clusters, binary outcomes with a cluster effect, and positive weights."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(3, 40, size=23)
    g = np.repeat(np.arange(23), sizes)
    u = rng.normal(0, 1.0, 23)[g]
    y = (rng.random(g.size) < 1 / (1 + np.exp(-(0.3 + u)))).astype(float)
    w = rng.uniform(0.5, 4.0, g.size)
    return y, g, w


@pytest.mark.parametrize("weighted", [False, True])
def test_cr1_matches_statsmodels_cluster_covariance(clustered_data, weighted):
    y, g, w = clustered_data
    weights = w if weighted else None
    fit = sm.WLS(y, np.ones_like(y), weights=w if weighted else 1.0).fit(cov_type="cluster", cov_kwds={"groups": g})
    est = mean_estimate(y, g, weights=weights, se="CR1")
    assert est.estimate == pytest.approx(fit.params[0], abs=1e-12)
    assert est.se == pytest.approx(fit.bse[0], abs=1e-10)
    assert est.df == 22


@pytest.mark.parametrize("weighted", [False, True])
def test_iid_matches_statsmodels_hc1(clustered_data, weighted):
    y, g, w = clustered_data
    fit = sm.WLS(y, np.ones_like(y), weights=w if weighted else 1.0).fit(cov_type="HC1")
    est = mean_estimate(y, weights=w if weighted else None, se="iid")
    assert est.se == pytest.approx(fit.bse[0], abs=1e-10)
    if not weighted:
        assert est.se == pytest.approx(y.std(ddof=1) / math.sqrt(y.size), abs=1e-12)


def cr2_by_matrices(y, g, w, weights_kind="sampling"):
    """clubSandwich's CR2 and Satterthwaite df for lm(y ~ 1, weights = w), with explicit N x N matrices.

    A slow, literal transcription of the definitions (Pustejovsky and Tipton 2018):
    working covariance Theta (identity, or diag(1/w) for inverse-variance weights),
    G_g = V_g [(I - H) Theta (I - H)']_gg V_g' with V_g' V_g = Theta_g, A_g = V_g' G_g^{-1/2} V_g,
    v = sum_g (w_g' A_g e_g)^2 / W^2, and df = tr(P)^2 / ||P||_F^2 with P_gh = s_g' Theta s_h.
    """
    n = y.size
    W = w.sum()
    theta_hat = w @ y / W
    e = y - theta_hat
    Theta = np.eye(n) if weights_kind == "sampling" else np.diag(1 / w)
    IH = np.eye(n) - np.outer(np.ones(n), w) / W
    B = IH @ Theta @ IH.T
    S = []
    comps = []
    for c in np.unique(g):
        idx = np.flatnonzero(g == c)
        V = np.linalg.cholesky(Theta[np.ix_(idx, idx)]).T
        G = V @ B[np.ix_(idx, idx)] @ V.T
        A = V.T @ np.real(linalg.inv(linalg.sqrtm(G))) @ V
        Eg = w[idx] @ A
        comps.append(Eg @ e[idx])
        row = np.zeros(n)
        row[idx] = Eg
        S.append(row @ IH)          # c_g = s_g' y
    S = np.array(S)
    P = S @ Theta @ S.T
    return math.sqrt(np.sum(np.square(comps))) / W, np.trace(P) ** 2 / np.sum(P**2)


@pytest.mark.parametrize("weights_kind", ["sampling", "inverse_variance"])
def test_cr2_and_satterthwaite_match_explicit_matrix_formulas(clustered_data, weights_kind):
    y, g, w = clustered_data
    se_ref, df_ref = cr2_by_matrices(y, g, w, weights_kind)
    est = mean_estimate(y, g, weights=w, se="CR2", weights_kind=weights_kind)
    assert est.se == pytest.approx(se_ref, rel=1e-9)
    assert est.df == pytest.approx(df_ref, rel=1e-9)
    se0, df0 = cr2_by_matrices(y, g, np.ones_like(y))
    est0 = mean_estimate(y, g, se="CR2")
    assert est0.se == pytest.approx(se0, rel=1e-9) and est0.df == pytest.approx(df0, rel=1e-9)
    assert est0.df < 22  # unequal clusters: fewer than M - 1


def test_weighted_cr2_variants_differ_from_the_old_sqrt_w_formula(clustered_data):
    """The former formula (U_g / sqrt(1 - W_g/W), the CR2 of the sqrt(w)-transformed OLS) is neither variant."""
    y, g, w = clustered_data
    codes = np.unique(g, return_inverse=True)[1]
    th = w @ y / w.sum()
    U = np.bincount(codes, weights=w * (y - th))
    old = math.sqrt(np.sum(U**2 / (1 - np.bincount(codes, weights=w) / w.sum()))) / w.sum()
    for kind in ("sampling", "inverse_variance"):
        assert abs(mean_estimate(y, g, weights=w, se="CR2", weights_kind=kind).se / old - 1) > 1e-4
    # with weights constant inside each cluster the inverse-variance variant reduces to the old formula
    wc = (1.0 + codes % 4)
    U = np.bincount(codes, weights=wc * (y - wc @ y / wc.sum()))
    old = math.sqrt(np.sum(U**2 / (1 - np.bincount(codes, weights=wc) / wc.sum()))) / wc.sum()
    with pytest.warns(EvalkitWarning, match="effective number of clusters"):
        inv = mean_estimate(y, g, weights=wc, se="CR2", weights_kind="inverse_variance")
        samp = mean_estimate(y, g, weights=wc, se="CR2")
    assert inv.se == pytest.approx(old, rel=1e-12)
    assert abs(samp.se / old - 1) > 1e-4


def test_cr2_equals_cr1_for_balanced_unweighted_clusters():
    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(12), 10)
    y = (rng.random(120) < 0.4).astype(float)
    assert mean_estimate(y, g, se="CR2").se == pytest.approx(mean_estimate(y, g, se="CR1").se, rel=1e-12)


def test_singleton_clusters_reduce_to_iid_sandwich(clustered_data):
    y, _, w = clustered_data
    g = np.arange(y.size)
    assert mean_estimate(y, g, weights=w, se="CR1").se == pytest.approx(mean_estimate(y, weights=w, se="iid").se)
    assert deff_empirical(y, g) == pytest.approx(1.0)


def test_cluster_robust_interval_holds_its_level_and_iid_does_not():
    """Over 1,000 replications with ICC 0.1 and 50 clusters of 20, CR2 covers ~95%, i.i.d. far less."""
    n_reps = 1000
    runs = mc_run(
        lambda rng: simulate_clustered(n_clusters=50, cluster_size=20, mean=0.6, icc=0.1, rng=rng),
        {"iid": lambda d: mean_estimate(d["correct"], se="iid"),
         "CR2": lambda d: mean_estimate(d["correct"], d["cluster"], se="CR2")},
        truth=0.6, n_reps=n_reps, seed=2024, progress=False,
    )
    cov = mc_summarise(runs)["coverage"]
    assert abs(cov["CR2"] - 0.95) <= mc_tolerance(0.95, n_reps)
    # deff = 1 + 19 * 0.1 = 2.9: the i.i.d. SE is ~sqrt(2.9) too small, coverage ~ 74%
    assert cov["iid"] < 0.95 - mc_tolerance(0.95, n_reps)


def test_paired_difference_is_the_mean_of_differences(clustered_data):
    y, g, _ = clustered_data
    rng = np.random.default_rng(5)
    y2 = np.where(rng.random(y.size) < 0.2, 1 - y, y)
    est = paired_estimate(y, y2, g, se="CR1")
    ref = mean_estimate(y - y2, g, se="CR1", binary=False)
    assert est.estimate == pytest.approx(ref.estimate) and est.se == pytest.approx(ref.se)
    assert "paired" in est.method
    with pytest.raises(ValueError, match="same items"):
        paired_estimate(y, y2[:-1], g)


def test_cluster_bootstrap_se_agrees_with_sandwich():
    """With 100 clusters the bootstrap SD of the mean matches the CR0 SE; 400 draws give ~3.5% MC error."""
    d = simulate_clustered(n_clusters=100, cluster_size=15, mean=0.5, icc=0.2, rng=9)
    y, g = d["correct"].to_numpy(), d["cluster"].to_numpy()
    boot = bootstrap_cluster(lambda rows, ids: y[rows].mean(), g, n_boot=400, seed=1)
    cr0 = mean_estimate(y, g, se="CR0")
    assert boot.estimate == pytest.approx(y.mean())
    assert boot.se / cr0.se == pytest.approx(1.0, abs=4 / math.sqrt(2 * 400))
    assert boot.ci_low < y.mean() < boot.ci_high


def test_icc_anova_recovers_the_simulated_icc():
    vals = [icc_anova(d["correct"], d["cluster"]) for d in
            (simulate_clustered(n_clusters=40, cluster_size=30, mean=0.3, icc=0.15, rng=s) for s in range(150))]
    mcse = np.std(vals, ddof=1) / math.sqrt(len(vals))
    assert abs(np.mean(vals) - 0.15) < 4 * mcse + 0.005  # ANOVA estimator's O(1/M) bias


def test_design_effect_worked_example():
    deff = deff_from_icc(50, 0.2)
    assert deff == pytest.approx(10.8)
    assert n_effective(500, deff) == pytest.approx(46.296, abs=1e-3)
    assert icc_latent(0.0) == 0.0
    assert icc_latent(math.pi / math.sqrt(3)) == pytest.approx(0.5)


def test_bad_input_is_refused(clustered_data):
    y, g, w = clustered_data
    with pytest.raises(ValueError, match="NaN"):
        mean_estimate(np.r_[y[:-1], np.nan], g)
    with pytest.raises(ValueError, match="one cluster"):
        mean_estimate(y, np.zeros_like(g))
    with pytest.raises(ValueError, match="needs cluster labels"):
        mean_estimate(y, se="CR1")
    with pytest.raises(ValueError, match="0/1"):
        mean_estimate(y * 2, g)
    with pytest.raises(ValueError, match="strictly positive"):
        mean_estimate(y, g, weights=np.r_[w[:-1], 0.0])
    with pytest.raises(ValueError, match="must align"):
        mean_estimate(y, g[:-1])
    with pytest.raises(ValueError, match="alpha"):
        mean_estimate(y, g, alpha=1.5)
    with pytest.raises(ValueError, match="se must be"):
        mean_estimate(y, g, se="CR3")
    with pytest.warns(EvalkitWarning, match="only 3 clusters"):
        mean_estimate(y, g % 3)
    with pytest.raises(ValueError, match="rho"):
        deff_from_icc(10, 1.5)


# --- the coverage study (CR1 with t_{M-1} against CR2 with Satterthwaite df) ------------------------

_EVERY = tuple(COVERAGE_ESTIMATORS)


@pytest.mark.filterwarnings("ignore::evalkit._checks.EvalkitWarning")
def test_coverage_study_equals_mc_run_with_mean_estimate():
    """The vectorised study gives, replication by replication, what mc_run + mean_estimate give."""
    sizes = np.array([40, 3, 3, 2, 2, 5, 1, 4])
    n_reps, seed = 40, 5
    res = coverage_study(designs={"d": sizes}, mean=0.7, icc=0.15, n_reps=n_reps, seed=seed, estimators=_EVERY)
    est = {
        "iid": lambda d: mean_estimate(d["correct"], se="iid"),
        "CR1": lambda d: mean_estimate(d["correct"], d["cluster"], se="CR1"),
        "CR2": lambda d: mean_estimate(d["correct"], d["cluster"], se="CR2"),
        "CR2, t(M-1)": lambda d: mean_estimate(d["correct"], d["cluster"], se="CR2", df="clusters"),
        "CR2, Wilson": lambda d: mean_estimate(d["correct"], d["cluster"], se="CR2", interval="wilson"),
    }
    runs = mc_run(lambda rng: simulate_clustered(sizes=sizes, mean=0.7, icc=0.15, rng=rng), est,
                  truth=0.7, n_reps=n_reps, seed=seed, progress=False)
    ref = mc_summarise(runs)
    for _, row in res.iterrows():
        r = ref.loc[row["estimator"]]
        assert row["coverage"] == r["coverage"]
        assert row["width"] == pytest.approx(r["width"], rel=1e-10)
        assert row["se_mean"] == pytest.approx(r["se_mean"], rel=1e-10)
    assert res.attrs["sizes"] == {"d": sizes.tolist()}
    assert set(res["design"]) == {"d"} and res["n_clusters"].iloc[0] == 8


def test_coverage_study_cr2_satterthwaite_holds_where_cr1_fails():
    """2,000 replications per design, 20 clusters of 20 on average, ICC 0.1; tolerance 4 MC SE of 0.95.

    Balanced: CR1 and CR2 both cover (and coincide). One cluster with 80% of the items: CR1 with
    t_{M-1} covers far less than 95%, CR2 with Satterthwaite df (about 1.5 here) covers.
    """
    n_reps = 2000
    tol = mc_tolerance(0.95, n_reps)
    res = coverage_study(designs=("balanced", "skewed", "dominant"), n_reps=n_reps, seed=7,
                         estimators=("iid", "CR1", "CR2")).set_index(["design", "estimator"])
    cov = res["coverage"]
    assert abs(cov["balanced", "CR1"] - 0.95) <= tol and abs(cov["balanced", "CR2"] - 0.95) <= tol
    assert res.loc[("balanced", "CR2"), "df_mean"] == pytest.approx(19.0)
    assert cov["balanced", "iid"] < 0.95 - tol
    assert cov["dominant", "CR1"] < 0.95 - tol
    assert abs(cov["dominant", "CR2"] - 0.95) <= tol
    assert res.loc[("dominant", "CR2"), "df_mean"] < 2
    assert cov["skewed", "CR2"] >= cov["skewed", "CR1"]
    assert (res["coverage_mcse"] > 0).all() and (res["n_reps"] == n_reps).all()


@pytest.mark.parametrize(("design", "n_clusters", "cluster_size", "icc"),
                         [("balanced", 50, 10, 0.05), ("skewed", 30, 20, 0.02)])
def test_wilson_interval_covers_near_p_099_where_t_does_not(design, n_clusters, cluster_size, icc):
    """At p = 0.99 many replications have every outcome 1; the t interval collapses, Wilson on n/deff covers."""
    n_reps = 4000
    tol = mc_tolerance(0.95, n_reps)
    res = coverage_study(designs=design, n_clusters=n_clusters, cluster_size=cluster_size, mean=0.99, icc=icc,
                         n_reps=n_reps, seed=3, estimators=("CR2", "CR2, Wilson")).set_index("estimator")
    assert res.loc["CR2, Wilson", "coverage"] >= 0.95 - tol
    assert res.loc["CR2", "coverage"] < 0.95 - tol


def test_coverage_study_bad_input():
    with pytest.raises(ValueError, match="estimators"):
        coverage_study(designs="balanced", estimators=("CR3",), n_reps=10)
    with pytest.raises(ValueError, match="sizes must be one of"):
        coverage_study(designs="lopsided", n_reps=10)
    with pytest.raises(ValueError, match="n_reps"):
        coverage_study(designs="balanced", n_reps=1)
    with pytest.raises(ValueError, match="single cluster"):
        coverage_study(designs=np.array([30]), n_reps=10)


# --- design diagnostics, boundaries, weights, design effect -------------------------------------------

def test_issue_case_one_cluster_holding_almost_everything_warns():
    """Issue 7: 7 clusters, one holding 1,692 of 1,698 items. CR1 is ~13x below iid with no word before."""
    sizes = np.array([1692, 1, 1, 1, 1, 1, 1])
    g = np.repeat(np.arange(7), sizes)
    rng = np.random.default_rng(0)
    y = (rng.random(g.size) < 0.3).astype(float)
    y[-6:] = [1, 1, 1, 1, 1, 0]
    with pytest.warns(EvalkitWarning, match=r"effective number of clusters is 1(\.\d+)? \(M = 7; the largest cluster "
                                            r"carries 99\.6% of the weight\)"):
        est = mean_estimate(y, g, se="CR1")
    assert est.n_clusters == 7 and est.n_clusters_effective == pytest.approx(1.0, abs=1e-4)
    with pytest.warns(EvalkitWarning, match="effective number"), \
            pytest.warns(EvalkitWarning, match=r"leaves \[0, 1\] .* very few degrees of freedom"):
        cr2 = mean_estimate(y, g, se="CR2")
    assert cr2.df < 2 and cr2.width > est.width


def test_clusters_effective_values():
    assert clusters_effective(np.repeat(np.arange(15), 4)) == pytest.approx(15.0)
    sizes = np.array([50, 20, 5, 5, 1])
    g = np.repeat(np.arange(5), sizes)
    # rho = 1 (default): (sum n^2)^2 / sum n^4; rho = 0: (sum n)^2 / sum n^2 (the Kish-type count)
    assert clusters_effective(g) == pytest.approx(np.sum(sizes**2.0) ** 2 / np.sum(sizes**4.0))
    assert clusters_effective(g, rho=0.0) == pytest.approx(sizes.sum() ** 2 / np.sum(sizes**2.0))
    assert 1 <= clusters_effective(g) <= clusters_effective(g, rho=0.3) <= clusters_effective(g, rho=0.0) <= 5
    # with weights, cluster weight totals replace sizes
    w = np.where(g == 0, 0.1, 1.0)
    same_totals = np.repeat(np.arange(5), [5, 20, 5, 5, 1])
    assert clusters_effective(g, weights=w) == pytest.approx(clusters_effective(same_totals))
    with pytest.raises(ValueError, match="rho"):
        clusters_effective(g, rho=1.5)
    with pytest.raises(ValueError, match="strictly positive"):
        clusters_effective(g, weights=-w)


def test_no_design_warning_for_many_balanced_clusters():
    import warnings
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(30), 10)
    y = (rng.random(300) < 0.5).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvalkitWarning)
        est = mean_estimate(y, g, se="CR2")
    assert est.n_clusters_effective == pytest.approx(30.0) and est.df == pytest.approx(29.0)


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_boundary_outcomes_warn_and_wilson_gives_an_interval(value):
    g = np.repeat(np.arange(15), 4)
    y = np.full(60, value)
    with pytest.warns(EvalkitWarning, match=f"every outcome is {int(value)}: the t interval collapses"):
        t = mean_estimate(y, g, se="CR2")
    assert t.se == 0 and t.width == 0
    wil = mean_estimate(y, g, se="CR2", interval="wilson")
    # p = 0 or 1 carries no variance information: n_eff falls back to W^2 / sum W_g^2 = 15 clusters
    assert (wil.ci_low, wil.ci_high) == pytest.approx(interval_wilson(value, 15.0, df=14.0))
    assert wil.width > 0.1 and wil.covers(value) and "Wilson" in wil.method
    iid = mean_estimate(y, se="iid", interval="wilson")
    assert (iid.ci_low, iid.ci_high) == pytest.approx(interval_wilson(value, 60.0, df=59.0))


def test_t_interval_leaving_the_unit_interval_warns():
    g = np.repeat(np.arange(12), 5)
    y = np.ones(60)
    y[[3, 17]] = 0.0
    with pytest.warns(EvalkitWarning, match=r"leaves \[0, 1\].*interval='wilson' stays inside"):
        t = mean_estimate(y, g, se="CR2")
    assert t.ci_high > 1
    w = mean_estimate(y, g, se="CR2", interval="wilson")
    assert 0 < w.ci_low < t.estimate < w.ci_high <= 1


def test_wilson_interval_formula_and_input():
    lo, hi = interval_wilson(0.3, 50)
    z = 1.959963984540054
    c = (0.3 + z**2 / 100) / (1 + z**2 / 50)
    h = z / (1 + z**2 / 50) * math.sqrt(0.3 * 0.7 / 50 + z**2 / (4 * 50**2))
    assert (lo, hi) == pytest.approx((c - h, c + h), rel=1e-12)
    # Wilson on n_eff = p(1-p)/se^2 inside the interval of mean_estimate
    d = simulate_clustered(n_clusters=30, cluster_size=10, mean=0.9, icc=0.1, rng=2)
    e = mean_estimate(d["correct"], d["cluster"], se="CR1", interval="wilson")
    n_eff = e.estimate * (1 - e.estimate) / e.se**2
    assert (e.ci_low, e.ci_high) == pytest.approx(interval_wilson(e.estimate, n_eff, df=29.0))
    with pytest.raises(ValueError, match="proportion"):
        interval_wilson(1.2, 10)
    with pytest.raises(ValueError, match="n_eff"):
        interval_wilson(0.5, 0)
    with pytest.raises(ValueError, match="binary"):
        mean_estimate(d["correct"], d["cluster"], binary=False, interval="wilson")


@pytest.mark.parametrize("scale", [1e-320, 1e-300, 1e300, 1e308])
def test_hajek_estimate_is_invariant_to_the_weights_scale(clustered_data, scale):
    y, g, w = clustered_data
    for se in ("iid", "CR1", "CR2"):
        ref = mean_estimate(y, g if se != "iid" else None, weights=w / w.max(), se=se)
        if scale < 1e-310:  # subnormal: only equal weights are representable exactly
            const = mean_estimate(y, g if se != "iid" else None, weights=np.full(y.size, scale), se=se)
            plain = mean_estimate(y, g if se != "iid" else None, se=se)
            assert (const.estimate, const.se, const.df) == pytest.approx((plain.estimate, plain.se, plain.df),
                                                                         rel=1e-12)
            continue
        est = mean_estimate(y, g if se != "iid" else None, weights=w / w.max() * scale, se=se)
        assert np.isfinite([est.estimate, est.se, est.ci_low, est.ci_high]).all()
        assert (est.estimate, est.se, est.df) == pytest.approx((ref.estimate, ref.se, ref.df), rel=1e-12)
    assert deff_empirical(y, g, weights=w * 1e300) == pytest.approx(deff_empirical(y, g, weights=w), rel=1e-12)


def test_deff_empirical_validates_weights_like_mean_estimate(clustered_data):
    y, g, w = clustered_data
    for bad, msg in ((np.r_[w[:-1], 0.0], "strictly positive"), (np.r_[w[:-1], -1.0], "strictly positive"),
                     (w[:-1], "must align"), (np.r_[w[:-1], np.nan], "NaN"), (np.r_[w[:-1], np.inf], "infinite")):
        with pytest.raises(ValueError, match=msg):
            deff_empirical(y, g, weights=bad)
        with pytest.raises(ValueError, match=msg):
            mean_estimate(y, g, weights=bad)


def test_deff_from_icc_with_cluster_sizes_matches_the_simulated_variance_ratio():
    """Var(mean) / (p(1-p)/n) over 4,000 draws against 1 + (sum n^2/n - 1) rho (the average size is far off).

    One cluster of 120 and 19 of 10 items, observed-scale ICC 0.1: the size-weighted m is 52.4,
    the average 15.5, so the two design effects are 6.24 and 2.45. The relative Monte Carlo SE of a
    variance from R draws is about sqrt(2 / R) (times a kurtosis factor); the tolerance is 4 of those.
    """
    sizes = np.array([120] + [10] * 19)
    icc, p, n_reps = 0.1, 0.5, 4000
    res = coverage_study(designs={"d": sizes}, mean=p, icc=icc, n_reps=n_reps, seed=11, estimators=("iid",))
    n = sizes.sum()
    ratio = res["sd_estimate"].iloc[0] ** 2 / (p * (1 - p) / n)
    expected = deff_from_icc(sizes, icc)
    assert expected == pytest.approx(1 + (np.sum(sizes**2) / n - 1) * icc)
    assert abs(ratio / expected - 1) < 4 * math.sqrt(2 / (n_reps - 1)) * 1.3
    assert abs(ratio / deff_from_icc(sizes.mean(), icc) - 1) > 0.5
    assert deff_from_icc(np.full(8, 25), 0.2) == pytest.approx(deff_from_icc(25, 0.2))
    with pytest.raises(ValueError, match="integers"):
        deff_from_icc(np.array([3.5, 2.0]), 0.1)
    with pytest.raises(ValueError, match=">= 1"):
        deff_from_icc(0.5, 0.1)


def test_satterthwaite_df_option_and_paired_estimate(clustered_data):
    y, g, _ = clustered_data
    assert mean_estimate(y, g, se="CR2", df="clusters").df == 22
    cr1s = mean_estimate(y, g, se="CR1", df="satterthwaite")
    assert cr1s.df < 22 and "Satterthwaite" in cr1s.method
    rng = np.random.default_rng(5)
    y2 = np.where(rng.random(y.size) < 0.2, 1 - y, y)
    d = paired_estimate(y, y2, g, se="CR2")
    ref = mean_estimate(y - y2, g, se="CR2", binary=False)
    assert (d.se, d.df, d.n_clusters_effective) == (ref.se, ref.df, ref.n_clusters_effective)
    assert paired_estimate(y, y2, g, se="CR1").df == 22
    with pytest.raises(ValueError, match="df must be"):
        mean_estimate(y, g, df="kenward")
    with pytest.raises(ValueError, match="weights_kind"):
        mean_estimate(y, g, weights_kind="frequency")


def test_docstring_examples_run():
    """The Examples sections are doctests (functions a learner calls must show working code)."""
    import doctest

    import evalkit.clustered as mod
    import evalkit.simulate as sim
    for m in (mod, sim):
        res = doctest.testmod(m, extraglobs={"np": np}, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0 and res.attempted > 0


def test_simulate_clustered_size_designs():
    dom = simulate_cluster_sizes(20, 20, sizes="dominant")
    assert dom.sum() == 400 and dom[0] == 320 and dom[1:].min() >= 4 and dom.size == 20
    assert simulate_cluster_sizes(4, 10, sizes="dominant", dominant_share=0.5).tolist() == [20, 7, 7, 6]
    d = simulate_clustered(n_clusters=20, cluster_size=20, mean=0.6, icc=0.1, sizes="dominant", rng=1)
    assert d.groupby("cluster").size().max() == 320 and d.attrs["sizes"] == dom.tolist()
    e = simulate_clustered(mean=0.6, icc=0.1, sizes=np.array([5, 1, 9]), rng=1)
    assert d.shape[1] == e.shape[1] and len(e) == 15 and e.attrs["sizes"] == [5, 1, 9]
    # the same generator gives the same outcomes whether the sizes are named or explicit
    b1 = simulate_clustered(n_clusters=6, cluster_size=5, mean=0.6, icc=0.1, rng=3)
    b2 = simulate_clustered(mean=0.6, icc=0.1, sizes=np.full(6, 5), rng=3)
    assert (b1["correct"].to_numpy() == b2["correct"].to_numpy()).all()
    with pytest.raises(ValueError, match="leaves"):
        simulate_cluster_sizes(20, 2, sizes="dominant", dominant_share=0.99)
    with pytest.raises(ValueError, match="positive integers"):
        simulate_clustered(mean=0.6, icc=0.1, sizes=np.array([3, 0]), rng=1)
    with pytest.raises(ValueError, match="disagrees"):
        simulate_clustered(cluster_size=4, mean=0.6, icc=0.1, sizes=np.array([3, 6]), rng=1)
    with pytest.raises(ValueError, match="needs n_clusters"):
        simulate_clustered(mean=0.6, icc=0.1, sizes="balanced", rng=1)
    with pytest.raises(ValueError, match="pass rng"):
        simulate_cluster_sizes(5, 5, sizes="skewed")


def test_cluster_scores_variance_is_cr0_cr1_only() -> None:
    """CR2 needs the hat matrix, which scores alone do not carry: the score sandwich refuses it."""
    scores, codes = np.array([1.0, 0.5, -1.0, 0.2]), np.array([0, 0, 1, 1])
    u = np.array([1.5, -0.8])                           # the cluster totals of the scores
    np.testing.assert_allclose(cluster_scores_variance(scores, codes, 2, 2.0, "CR0"), np.sum(u**2) / 4)
    np.testing.assert_allclose(cluster_scores_variance(scores, codes, 2, 2.0, "CR1"), 2 * np.sum(u**2) / 4)
    with pytest.raises(ValueError, match="CR0 or CR1"):
        cluster_scores_variance(scores, codes, 2, 1.0, "CR2")
