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
    coverage_study,
    deff_empirical,
    deff_from_icc,
    icc_anova,
    icc_latent,
    mean_estimate,
    n_effective,
    paired_estimate,
)
from evalkit.montecarlo import mc_run, mc_summarise, mc_tolerance
from evalkit.simulate import simulate_clustered


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
