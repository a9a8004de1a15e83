"""Cluster-robust inference: agreement with statsmodels, exact special cases, coverage by simulation."""

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import linalg

from evalkit import EvalkitWarning
from evalkit.clustered import (
    bootstrap_cluster,
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


def cr2_by_matrices(y, g, w):
    """Bell–McCaffrey CR2 for WLS on an intercept, written with explicit matrices (slow reference)."""
    X = np.ones((y.size, 1))
    sw = np.sqrt(w)
    Xt, yt = X * sw[:, None], y * sw
    bread = np.linalg.inv(Xt.T @ Xt)
    beta = bread @ Xt.T @ yt
    et = yt - Xt @ beta
    meat = np.zeros((1, 1))
    for c in np.unique(g):
        idx = g == c
        Xg = Xt[idx]
        Hgg = Xg @ bread @ Xg.T
        A = linalg.inv(linalg.sqrtm(np.eye(idx.sum()) - Hgg)).real
        ug = Xg.T @ A @ et[idx]
        meat += np.outer(ug, ug)
    return math.sqrt((bread @ meat @ bread)[0, 0])


def test_cr2_matches_explicit_matrix_formula(clustered_data):
    y, g, w = clustered_data
    assert mean_estimate(y, g, weights=w, se="CR2").se == pytest.approx(cr2_by_matrices(y, g, w), rel=1e-9)
    assert mean_estimate(y, g, se="CR2").se == pytest.approx(cr2_by_matrices(y, g, np.ones_like(y)), rel=1e-9)


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
