"""Simulators: calibration of mean and ICC, and the missingness mechanisms."""

import math

import numpy as np
import pytest

from evalkit.clustered import icc_anova
from evalkit.simulate import (
    MECHANISMS,
    simulate_calibrate,
    simulate_cluster_sizes,
    simulate_clustered,
    simulate_icc_observed,
    simulate_missing,
)


@pytest.mark.parametrize("mean, icc, beta_x", [(0.5, 0.2, 0.0), (0.15, 0.05, 1.0), (0.8, 0.4, 0.5), (0.3, 0.0, 0.0)])
def test_calibration_hits_the_requested_mean_and_icc(mean, icc, beta_x):
    mu, sigma_u = simulate_calibrate(mean, icc, beta_x)
    m, r = simulate_icc_observed(mu, sigma_u, beta_x)
    assert m == pytest.approx(mean, abs=1e-9)
    assert r == pytest.approx(icc, abs=1e-8)


def test_simulated_data_show_the_calibrated_mean_and_icc():
    """Over 200 draws the sample mean and ANOVA ICC average to the targets within Monte Carlo error."""
    draws = [simulate_clustered(n_clusters=50, cluster_size=40, mean=0.6, icc=0.2, rng=s) for s in range(200)]
    means = np.array([d["correct"].mean() for d in draws])
    iccs = np.array([icc_anova(d["correct"], d["cluster"]) for d in draws])
    assert abs(means.mean() - 0.6) < 4 * means.std(ddof=1) / math.sqrt(200)
    assert abs(iccs.mean() - 0.2) < 4 * iccs.std(ddof=1) / math.sqrt(200) + 0.005


def test_skewed_sizes_sum_and_vary():
    n = simulate_cluster_sizes(20, 50, sizes="skewed", rng=1)
    assert n.sum() == 1000 and n.min() >= 2 and n.max() > 3 * n.min()
    assert (simulate_cluster_sizes(20, 50, rng=1) == 50).all()


def test_same_seed_same_data():
    a = simulate_clustered(n_clusters=5, cluster_size=4, mean=0.5, icc=0.1, rng=7)
    b = simulate_clustered(n_clusters=5, cluster_size=4, mean=0.5, icc=0.1, rng=7)
    assert a.equals(b)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_missingness_hits_the_response_rate(mechanism):
    """Every current mechanism; the deprecated name "mnar_cluster" is tested in test_missing.py."""
    d = simulate_clustered(n_clusters=30, cluster_size=30, mean=0.4, icc=0.2, rng=1, beta_x=1.0)
    m = simulate_missing(d, mechanism=mechanism, response_rate=0.8, strength=1.0, rng=2)
    assert m["p_respond"].mean() == pytest.approx(0.8, abs=1e-8)
    observed = m["status"] == "ok"
    assert m.loc[~observed, "correct"].isna().all()
    assert (m.loc[observed, "correct"] == m.loc[observed, "correct_full"]).all()


def test_item_level_mnar_biases_complete_cases_upward_and_mcar_does_not():
    cc_bias = {"mcar": [], "mnar_item": []}
    for s in range(100):
        d = simulate_clustered(n_clusters=20, cluster_size=50, mean=0.4, icc=0.1, rng=s)
        for mech in cc_bias:
            m = simulate_missing(d, mechanism=mech, response_rate=0.7, strength=1.0, rng=1000 + s)
            cc_bias[mech].append(m["correct"].mean() - m["correct_full"].mean())
    for mech, b in cc_bias.items():
        b = np.asarray(b)
        mcse = b.std(ddof=1) / 10
        if mech == "mcar":
            assert abs(b.mean()) < 4 * mcse
        else:
            assert b.mean() > 0.05


def test_bad_arguments():
    with pytest.raises(ValueError, match="mean accuracy"):
        simulate_calibrate(1.0, 0.1)
    with pytest.raises(ValueError, match="icc"):
        simulate_calibrate(0.5, 0.95)
    d = simulate_clustered(n_clusters=3, cluster_size=3, mean=0.5, icc=0.1, rng=1)
    with pytest.raises(ValueError, match="mechanism"):
        simulate_missing(d, mechanism="random", response_rate=0.5, rng=1)
    with pytest.raises(ValueError, match="response_rate"):
        simulate_missing(d, mechanism="mcar", response_rate=0.0, rng=1)
    with pytest.raises(ValueError, match="needs column"):
        simulate_missing(d.drop(columns="u"), mechanism="mcar", response_rate=0.5, rng=1)
    with pytest.raises(TypeError, match="seed"):
        simulate_clustered(n_clusters=3, cluster_size=3, mean=0.5, icc=0.1, rng=None)


def test_as_rng_refuses_unseeded_and_bool():
    import evalkit as ek

    g = np.random.default_rng(1)
    assert ek.as_rng(g) is g
    assert ek.as_rng(5).random() == np.random.default_rng(5).random()
    for bad in (None, True, 1.5):
        with pytest.raises(TypeError, match="seed"):
            ek.as_rng(bad)
