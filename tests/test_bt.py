"""Bradley-Terry (evalkit.bt): against choix and statsmodels, coverage, comparisons, bad input."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pandas as pd
import pytest

import evalkit as ek

choix = pytest.importorskip("choix", reason="choix is the test-only reference for Bradley-Terry")


def _simulated(seed: int, M: int = 8, n: int = 600, spread: float = 1.0) -> tuple[np.ndarray, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, spread, M)
    theta -= theta.mean()
    return theta, ek.bt_simulate(theta, n, seed=rng)


def _choix_data(d: pd.DataFrame, models: np.ndarray) -> list[tuple[int, int]]:
    idx = {m: i for i, m in enumerate(models)}
    return [(idx[w], idx[lo]) for w, lo in zip(d["winner"], d["loser"], strict=True)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ridge", [0.02, 0.5, 4.0])
def test_matches_choix_opt_pairwise_under_the_same_ridge(seed, ridge):
    # choix's opt_pairwise minimises NLL + alpha * sum(theta^2): alpha = ridge / 2.
    _, d = _simulated(seed)
    fit = ek.bt_fit(d["winner"], d["loser"], ridge=ridge)
    ref = choix.opt_pairwise(fit.models.size, _choix_data(d, fit.models), alpha=ridge / 2, tol=1e-12)
    assert np.max(np.abs(fit.theta - ref)) < 1e-6
    assert fit.converged


@pytest.mark.parametrize("seed", [0, 3])
def test_maximum_likelihood_matches_choix_ilsr(seed):
    # ilsr_pairwise with alpha=0 is the unregularised ML estimate, centred like evalkit's.
    _, d = _simulated(seed)
    fit = ek.bt_fit(d["winner"], d["loser"])
    ref = choix.ilsr_pairwise(fit.models.size, _choix_data(d, fit.models), alpha=0.0, tol=1e-13, max_iter=1000)
    assert np.max(np.abs(fit.theta - ref)) < 1e-6
    assert abs(fit.theta.sum()) < 1e-10


def test_ridge_is_honoured_and_keeps_a_never_winning_model_finite():
    _, d = _simulated(4, M=5)
    d = d[d["winner"] != "m0"]  # m0 never wins
    with pytest.raises(ValueError, match="never win"):
        ek.bt_fit(d["winner"], d["loser"])
    weak = ek.bt_fit(d["winner"], d["loser"], ridge=0.1)
    strong = ek.bt_fit(d["winner"], d["loser"], ridge=10.0)
    assert np.isfinite(weak.theta).all()
    assert strong.ridge == 10.0 and np.ptp(strong.theta) < np.ptp(weak.theta)
    ref = choix.opt_pairwise(5, _choix_data(d, weak.models), alpha=0.05, tol=1e-12)
    assert np.max(np.abs(weak.theta - ref)) < 1e-6


def test_standard_errors_match_logistic_regression():
    # BT is a logistic regression without intercept on x = e_winner - e_loser; drop model 0
    # (theta_0 = 0): the SEs of theta_j - theta_0 must agree with statsmodels' observed information.
    sm = pytest.importorskip("statsmodels.api")
    _, d = _simulated(5, M=6, n=800)
    fit = ek.bt_fit(d["winner"], d["loser"])
    iw, il, models = ek.bt_encode(d["winner"], d["loser"])
    rng = np.random.default_rng(0)
    flip = rng.random(iw.size) < 0.5  # both outcomes must appear for a logistic regression
    a, b = np.where(flip, il, iw), np.where(flip, iw, il)
    X = np.zeros((iw.size, models.size))
    X[np.arange(iw.size), a] += 1
    X[np.arange(iw.size), b] -= 1
    y = (~flip).astype(float)
    res = sm.Logit(y, X[:, 1:]).fit(disp=0, tol=1e-12)
    for j in range(1, models.size):
        est = fit.difference(models[j], models[0])
        assert est.estimate == pytest.approx(res.params[j - 1], abs=1e-6)
        assert est.se == pytest.approx(res.bse[j - 1], rel=1e-5)


@pytest.mark.slow
def test_wald_intervals_cover_at_the_nominal_rate():
    theta = np.array([0.8, 0.3, 0.0, -0.4, -0.7])
    models = np.array([f"m{j}" for j in range(5)])
    n_reps = 500

    def draw(rng: np.random.Generator) -> pd.DataFrame:
        return ek.bt_simulate(theta, 300, seed=rng, models=models)

    estimators = {
        "m0 - m4": lambda d: ek.bt_fit(d["winner"], d["loser"], models=models).difference("m0", "m4"),
        "m1 - m2": lambda d: ek.bt_fit(d["winner"], d["loser"], models=models).difference("m1", "m2"),
    }
    runs = pd.concat([
        ek.mc_run(draw, {k: v}, truth=truth, n_reps=n_reps, seed=11)
        for (k, v), truth in zip(estimators.items(), [theta[0] - theta[4], theta[1] - theta[2]], strict=True)
    ])
    summary = ek.mc_summarise(runs)
    tol = ek.mc_tolerance(0.95, n_reps)
    for name in estimators:
        assert summary.loc[name, "n_failed"] == 0
        assert abs(summary.loc[name, "coverage"] - 0.95) <= tol, summary


def test_weights_are_frequency_weights_and_ties_are_half_wins():
    _, d = _simulated(6, M=4, n=200)
    w = np.random.default_rng(1).integers(1, 4, len(d))
    weighted = ek.bt_fit(d["winner"], d["loser"], weights=w, ridge=0.3)
    rep = d.loc[d.index.repeat(w)]
    replicated = ek.bt_fit(rep["winner"], rep["loser"], ridge=0.3)
    assert np.max(np.abs(weighted.theta - replicated.theta)) < 1e-9
    assert np.allclose(weighted.cov, replicated.cov)

    ties = np.zeros(len(d), dtype=bool)
    ties[:40] = True
    tied = ek.bt_fit(d["winner"], d["loser"], ties=ties)
    both = pd.concat([d, d.iloc[:40].rename(columns={"winner": "loser", "loser": "winner"})])
    wts = np.r_[np.where(ties, 0.5, 1.0), np.full(40, 0.5)]
    explicit = ek.bt_fit(both["winner"], both["loser"], weights=wts)
    assert np.max(np.abs(tied.theta - explicit.theta)) < 1e-9


def test_fit_reports_and_predicts():
    fit = ek.bt_fit(["a", "a", "b", "c", "a", "c"], ["b", "c", "c", "a", "b", "b"])
    P = fit.win_matrix()
    assert np.allclose(P + P.T, 1.0)
    assert fit.prob("a", "b")[0] == pytest.approx(P[0, 1])
    frame = fit.to_frame()
    assert frame["model"].tolist()[0] == "a"
    assert fit.nll_mean(["a"], ["b"]) == pytest.approx(-math.log(P[0, 1]))
    with pytest.raises(ValueError, match="unknown model ids"):
        fit.prob("a", "zzz")


@pytest.mark.parametrize(
    ("winner", "loser", "kwargs", "match"),
    [
        (["a", "b"], ["b"], {}, "aligned"),
        ([], [], {}, "no comparisons"),
        (["a", "b", "a"], ["b", "a", "a"], {}, "same model as winner and loser"),
        (["a", "b", "c"], ["b", "a", "x"], {"models": ["a", "b", "c"]}, "unknown loser ids"),
        (["a", "b"], ["b", "a"], {"weights": [1.0, -1.0]}, "non-negative"),
        (["a", "b"], ["b", "a"], {"weights": [1.0, np.nan]}, "finite"),
        (["a", "b"], ["b", "a"], {"ridge": -1.0}, "ridge"),
        (["a", "b"], ["b", "a"], {"models": ["a", "b", "c"]}, "never win"),
        (["a", "b", "c", "d", "a"], ["b", "a", "d", "c", "c"], {}, "splits into 2 groups"),
        (["a", "b"], ["b", "a"], {"ties": [1, 0]}, "bool"),
    ],
)
def test_bad_input_raises(winner, loser, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ek.bt_fit(winner, loser, **kwargs)


def test_pairs_from_matrix_right_beats_wrong_and_drops_ties():
    Y = np.array([[1, 0, np.nan, 1],
                  [0, 0, 1, 1],
                  [1, 1, 0, 0]], dtype=float)
    pairs = ek.bt_pairs_from_matrix(Y, models=["A", "B", "C"], items=["i0", "i1", "i2", "i3"],
                                    clusters=["x", "x", "y", "y"])
    got = set(map(tuple, pairs[["item", "winner", "loser"]].to_numpy()))
    assert got == {("i0", "A", "B"), ("i0", "C", "B"), ("i1", "C", "A"), ("i1", "C", "B"),
                   ("i2", "B", "C"), ("i3", "A", "C"), ("i3", "B", "C")}
    assert list(pairs.columns) == ["item", "cluster", "winner", "loser"]
    assert pairs.set_index("item")["cluster"].to_dict() == {"i0": "x", "i1": "x", "i2": "y", "i3": "y"}
    with pytest.raises(ValueError, match="0/1"):
        ek.bt_pairs_from_matrix(np.array([[0.5, 1.0], [0.0, 1.0]]))


def test_pairs_sample_keeps_at_most_k_per_item_and_is_seeded():
    Y = (np.random.default_rng(0).random((10, 50)) < 0.5).astype(float)
    pairs = ek.bt_pairs_from_matrix(Y)
    a = ek.bt_pairs_sample(pairs, 7, seed=3)
    b = ek.bt_pairs_sample(pairs, 7, seed=3)
    assert a.equals(b)
    counts = a["item"].value_counts()
    full = pairs["item"].value_counts()
    assert (counts <= 7).all()
    assert (counts == np.minimum(full.loc[counts.index], 7)).all()
    with pytest.raises(ValueError, match="per_item"):
        ek.bt_pairs_sample(pairs, 0, seed=1)


def test_docstring_examples_run():
    import evalkit.bt

    result = doctest.testmod(evalkit.bt, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
