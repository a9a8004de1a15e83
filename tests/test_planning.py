"""Planning: variance components, power, sample size, and the closed forms checked by simulation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalkit as ek

SIZES = {"balanced": np.full(30, 10), "skewed": np.array([40, 30, 25, 20, 18, 15, 14, 12, 12, 11, 10, 10, 9, 8, 8,
                                                          7, 7, 6, 6, 5, 5, 4, 4, 4, 3, 3, 3, 2, 2, 2])}
DESIGN = dict(mu_a=0.5, mu_b=0.2, sd_cluster=1.0, sd_item=1.5, sd_cluster_diff=0.4, sd_item_diff=0.6)


def _true_components(paired: bool, n_clusters: int = 20000, m: int = 50) -> tuple[float, ek.PlanVariance]:
    """The generator's exact accuracy difference and variance components, by brute force (10^6 questions).

    Drawn from the model of ``simulate_paired`` directly (no Bernoulli noise), so the only error is
    the Monte Carlo error of 10^6 draws, far below that of the test itself.
    """
    g = np.random.default_rng(99)
    d = DESIGN
    cl = np.repeat(np.arange(n_clusters), m)
    shared = g.normal(0, d["sd_cluster"], n_clusters)[cl] + g.normal(0, d["sd_item"], cl.size)
    diff = g.normal(0, d["sd_cluster_diff"], n_clusters)[cl] + g.normal(0, d["sd_item_diff"], cl.size)
    pa = 1 / (1 + np.exp(-(d["mu_a"] + shared + diff / 2)))
    pb = 1 / (1 + np.exp(-(d["mu_b"] + shared - diff / 2)))
    within = float(np.mean(pa * (1 - pa) + pb * (1 - pb)))

    def cluster_var(x: np.ndarray) -> float:  # between-cluster variance of the true cluster means
        xm = x.reshape(n_clusters, m)
        return float(xm.mean(1).var() - xm.var(1, ddof=1).mean() / m)

    if paired:
        between, var_c = float(np.var(pa - pb)), cluster_var(pa - pb)
    else:
        between, var_c = float(np.var(pa) + np.var(pb)), cluster_var(pa) + cluster_var(pb)
    total = between + within
    return float(np.mean(pa - pb)), ek.PlanVariance(between, within, var_c / total, total, None,
                                                    "paired" if paired else "unpaired")


def _scores(sim: pd.DataFrame, model: str, k: int, n: int) -> np.ndarray:
    # simulate_paired's rows are ordered model, epoch, item: one (k, n) block per model
    return sim.loc[sim["model"] == model, "correct"].to_numpy().reshape(k, n).mean(0)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["balanced", "skewed"])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("paired", [True, False])
def test_power_formula_matches_simulated_rejection_rate(design: str, k: int, paired: bool) -> None:
    """The computed power equals the rejection rate of the cluster-robust test over simulated evals.

    Truth: the generator's exact difference and variance components (:func:`_true_components`).
    Test: CR2 with Satterthwaite df (for two independent samples, their df added) on 30 clusters of
    300 questions, 400 replications; the formula uses the same df, which for a mean depends on the
    cluster sizes only. Tolerance: 4 Monte Carlo standard errors of a rejection rate.
    """
    sizes = SIZES[design]
    n = int(sizes.sum())
    cl = np.repeat(np.arange(len(sizes)), sizes)
    delta, var = _true_components(paired)
    df_one = ek.mean_estimate(np.linspace(0, 1, n), cl, se="CR2", binary=False).df
    df = df_one if paired else 2 * df_one
    power = ek.plan_power(delta, ek.plan_se(var, n, k=k, cluster_sizes=sizes), df=df)

    n_reps = 400
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)  # few effective clusters in the skewed design
        for s in np.random.SeedSequence(2024).spawn(n_reps):
            g = np.random.default_rng(s)
            sim_a = ek.simulate_paired(sizes=sizes, k=k, rng=g, **DESIGN)
            sim_b = sim_a if paired else ek.simulate_paired(sizes=sizes, k=k, rng=g, **DESIGN)
            a, b = _scores(sim_a, "A", k, n), _scores(sim_b, "B", k, n)
            if paired:
                est = ek.mean_estimate(a - b, cl, se="CR2", binary=False)
                hits += bool(est.ci_low > 0 or est.ci_high < 0)
            else:
                ea = ek.mean_estimate(a, cl, se="CR2", binary=False)
                eb = ek.mean_estimate(b, cl, se="CR2", binary=False)
                t = (ea.estimate - eb.estimate) / math.hypot(ea.se, eb.se)
                hits += bool(abs(t) > stats.t.ppf(0.975, df))
    rate = hits / n_reps
    tol = 4 * math.sqrt(power * (1 - power) / n_reps)
    assert 0.1 < power < 0.95, f"design gives power {power:.3f}: not informative"
    assert abs(rate - power) < tol, f"simulated {rate:.3f} vs computed {power:.3f} (tol {tol:.3f})"


def test_estimated_components_match_the_truth() -> None:
    """plan_variance on a large simulated eval recovers the generator's components."""
    pool = ek.simulate_paired(n_clusters=480, cluster_size=50, k=4, rng=11, **DESIGN)
    for paired in (True, False):
        _, true = _true_components(paired)
        est = ek.plan_variance(pool, ["A", "B"], paired=paired)
        assert est.var_within == pytest.approx(true.var_within, abs=0.01)
        assert est.var_between == pytest.approx(true.var_between, abs=0.01)
        assert est.icc * est.var_total_k1 == pytest.approx(true.icc * true.var_total_k1, abs=0.01)


def test_pairing_and_resampling_reduce_the_variance() -> None:
    pool = ek.simulate_paired(n_clusters=200, cluster_size=50, k=4, rng=3, **DESIGN)
    paired = ek.plan_variance(pool, ["A", "B"])
    unpaired = ek.plan_variance(pool, ["A", "B"], paired=False)
    assert paired.per_question(1) < unpaired.per_question(1)
    assert paired.per_question(4) < paired.per_question(1)
    gain = ek.plan_resample_gain(paired, 4, cluster_size=50)
    se1, se4 = ek.plan_se(paired, 10_000, cluster_size=50), ek.plan_se(paired, 10_000, k=4, cluster_size=50)
    assert gain == pytest.approx(se1**2 / se4**2)
    assert 1 < gain < paired.per_question(1) / paired.per_question(4)  # the cluster part does not shrink
    # The estimated components add up: the variance of one answer per question equals the total
    # estimated directly from first answers only.
    first = ek.plan_variance(pool[pool["epoch"] == 1], ["A", "B"])
    assert np.isnan(first.var_within)
    assert first.var_total_k1 == pytest.approx(paired.var_total_k1, rel=0.05)


def test_within_variance_matches_bernoulli_truth() -> None:
    """For 0/1 answers the within-question variance is E[p(1-p)], known from the generator's p_true."""
    pool = ek.simulate_paired(n_clusters=300, cluster_size=50, k=3, rng=5, **DESIGN)
    v = ek.plan_variance(pool, "A")
    p = pool[(pool["model"] == "A") & (pool["epoch"] == 1)]["p_true"].to_numpy()
    true_within = float(np.mean(p * (1 - p)))
    true_between = float(np.var(p))
    se_within = float(np.std(p * (1 - p))) / math.sqrt(p.size) + 0.003  # MC error of both means
    assert v.var_within == pytest.approx(true_within, abs=4 * se_within)
    assert v.var_between == pytest.approx(true_between, abs=0.01)


def test_mdd_and_sample_size_invert_power() -> None:
    se = 0.02
    for df in (math.inf, 9.0):
        d = ek.plan_mdd(se, df=df, power=0.8)
        assert ek.plan_power(d, se, df=df) == pytest.approx(0.8, abs=1e-5)  # scipy's nct precision
    assert ek.plan_mdd(se) == pytest.approx((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * se)
    var = ek.PlanVariance(var_between=0.1, var_within=0.12, icc=0.1)
    res = ek.plan_sample_size(0.05, var, k=2, cluster_size=20)
    m = int(res["n_clusters"])
    se_m = ek.plan_se(var, m * 20, k=2, cluster_size=20)
    assert ek.plan_power(0.05, se_m, df=m - 1) >= 0.8 > ek.plan_power(0.05, ek.plan_se(var, (m - 1) * 20, k=2,
                                                                                     cluster_size=20), df=m - 2)
    plain = ek.plan_sample_size(0.05, ek.PlanVariance(0.2, 0.0))
    assert plain["n_questions"] == math.ceil((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) ** 2 * 0.2 / 0.05**2)


def test_design_effect_uses_size_weighted_cluster_size() -> None:
    var = ek.PlanVariance(var_between=0.2, var_within=0.0, icc=0.1)
    sizes = np.array([100, 10, 10, 10, 10])
    m_w = (sizes**2).sum() / sizes.sum()
    se = ek.plan_se(var, sizes.sum(), cluster_sizes=sizes)
    assert se**2 == pytest.approx(0.2 * (1 + (m_w - 1) * 0.1) / sizes.sum())


def test_zero_failures() -> None:
    r = ek.plan_zero_failures(300)
    assert r["rule_of_three"] == pytest.approx(-math.log(0.05) / 300)
    # exact one-sided bound: P(0 failures | p) = alpha
    assert (1 - r["exact_upper"]) ** 300 == pytest.approx(0.05)
    clustered = ek.plan_zero_failures(300, deff=3.0)
    assert clustered["n_eff"] == pytest.approx(100) and clustered["exact_upper"] > r["exact_upper"]
    assert 0 < r["wilson_upper"] < 1


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="var_between"):
        ek.PlanVariance(var_between=-0.1, var_within=0.1)
    with pytest.raises(ValueError, match="var_within is unknown"):
        ek.PlanVariance(var_between=0.2, var_within=float("nan")).per_question(4)
    with pytest.raises(ValueError, match="icc can be at most var_between / var_total_k1 = 0.100"):
        ek.PlanVariance(var_between=0.1 * 0.24, var_within=0.9 * 0.24, icc=0.3)   # the cluster part is between-question
    with pytest.raises(ValueError, match="icc can be at most"):
        ek.plan_power_plot(var_between=0.024, var_within=0.216, icc=0.3)
    edge = ek.PlanVariance(var_between=0.1 * 0.24, var_within=0.9 * 0.24, icc=0.1)  # all of it shared
    assert edge.icc * edge.var_total_k1 == pytest.approx(edge.var_between)
    with pytest.raises(ValueError, match="se must be positive"):
        ek.plan_power(0.1, 0.0)
    with pytest.raises(ValueError, match="power"):
        ek.plan_mdd(0.01, power=1.0)
    with pytest.raises(ValueError, match="delta"):
        ek.plan_sample_size(0.0, ek.PlanVariance(0.1, 0.1))
    sim = ek.simulate_paired(n_clusters=3, cluster_size=4, rng=1)
    with pytest.raises(ValueError, match="unknown"):
        ek.plan_variance(sim, ["A", "Z"])
    with pytest.raises(ValueError, match="name one or two"):
        ek.plan_variance(sim)
    with pytest.raises(ValueError, match="one cluster"):
        ek.plan_variance(sim.assign(cluster="c"), ["A", "B"])


def test_power_plot_draws_four_designs() -> None:
    ax = ek.plan_power_plot(delta=0.03, k=4)
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert len(labels) == 4 and all("n = " in lab for lab in labels)
    one = ek.plan_power_plot(k=1)
    assert len([ln for ln in one.get_lines() if not ln.get_label().startswith("_")]) == 2


def test_resample_gain_includes_the_cluster_part() -> None:
    """Known truth by simulation: the variance ratio of the mean with 1 vs K answers per question in a
    clustered design (a shared cluster effect that resampling cannot average away)."""
    rng = np.random.default_rng(2024)
    n_clusters, m, k, reps = 40, 25, 4, 3000
    c, b_item, w = 0.012, 0.138, 0.09  # cluster variance, item variance within clusters, answer noise
    var = ek.PlanVariance(var_between=c + b_item, var_within=w, icc=c / (c + b_item + w))
    means = np.empty((reps, 2))
    for r in range(reps):
        u = rng.normal(0, math.sqrt(c), n_clusters)[:, None]
        e = rng.normal(0, math.sqrt(b_item), (n_clusters, m))
        noise = rng.normal(0, math.sqrt(w), (n_clusters, m, k))
        means[r, 0] = float(np.mean(u + e + noise[..., 0]))
        means[r, 1] = float(np.mean(u + e + noise.mean(axis=2)))
    empirical = means[:, 0].var(ddof=1) / means[:, 1].var(ddof=1)
    # log of a ratio of two sample variances from the same replications: SE below sqrt(4 / (reps - 1))
    tol = 4 * math.sqrt(4 / (reps - 1))
    gain = ek.plan_resample_gain(var, k, cluster_size=m)
    assert math.log(empirical) == pytest.approx(math.log(gain), abs=tol)
    ignored = var.per_question(1) / var.per_question(k)  # the gain without the cluster part
    assert abs(math.log(empirical) - math.log(ignored)) > tol
    # the limit k -> inf is bounded by the cluster part, and the clusters must be given
    cpart = (m - 1) * var.icc * var.var_total_k1
    assert ek.plan_resample_gain(var, math.inf, cluster_size=m) == pytest.approx(
        (var.per_question(1) + cpart) / (var.var_between + cpart))
    with pytest.raises(ValueError, match="cluster_size"):
        ek.plan_resample_gain(var, k)
    assert ek.plan_resample_gain(var, k, cluster_sizes=[m] * n_clusters) == pytest.approx(gain)
