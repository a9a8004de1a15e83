"""ECC (evalkit.ecc): embeddings, the alternating fit, inference modes, evaluation, bad input."""

from __future__ import annotations

import dataclasses
import doctest
import hashlib
import pathlib

import numpy as np
import pandas as pd
import pytest

import evalkit as ek

ROOT = pathlib.Path(__file__).resolve().parents[1]
EMB_DIR = ROOT / "data" / "embeddings"

TOY = [
    "acid base titration with sodium hydroxide",
    "titration of a weak acid against a strong base",
    "the acid rain problem and sulphur dioxide",
    "base pairs in DNA replication",
    "DNA polymerase and replication forks",
    "replication of DNA in bacteria with base pairs",
    "sodium hydroxide is a strong base",
    "bacteria divide after DNA replication",
]


# --------------------------------------------------------------------------------------------
# Embeddings
# --------------------------------------------------------------------------------------------


def test_tfidf_svd_matches_scikit_learn():
    sk_text = pytest.importorskip("sklearn.feature_extraction.text")
    sk_dec = pytest.importorskip("sklearn.decomposition")
    from evalkit.ecc import _STOP_WORDS, _tfidf

    A, vocab = _tfidf(TOY, min_df=2, max_df=0.5)
    vec = sk_text.TfidfVectorizer(sublinear_tf=True, min_df=2, max_df=0.5, stop_words=sorted(_STOP_WORDS),
                                  token_pattern=r"(?u)\b\w\w+\b")
    B = vec.fit_transform(TOY)
    assert vocab == list(vec.get_feature_names_out())
    assert np.allclose(A.toarray(), B.toarray(), atol=1e-12)

    X, s = ek.ecc_embed_texts(TOY, dim=3, min_df=2, max_df=0.5)
    svd = sk_dec.TruncatedSVD(n_components=3, algorithm="arpack").fit(B)
    assert np.allclose(s, svd.singular_values_, rtol=1e-8)
    Z = svd.transform(B)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    signs = np.sign(np.sum(X * Z, axis=0))  # each direction equal up to its sign
    assert np.allclose(X, Z * signs, atol=1e-8)


def test_embeddings_are_unit_deterministic_and_semantic():
    X1, _ = ek.ecc_embed_texts(TOY, dim=3, min_df=2, max_df=0.6)
    X2, _ = ek.ecc_embed_texts(list(reversed(TOY)), dim=3, min_df=2, max_df=0.6)
    assert np.allclose(np.linalg.norm(X1, axis=1), 1.0)
    assert np.allclose(X1, X2[::-1], atol=1e-10)  # same texts, same numbers (signs fixed)
    S = X1 @ X1.T
    assert S[0, 1] > S[0, 4] and S[3, 4] > S[3, 0]  # chemistry with chemistry, DNA with DNA


@pytest.mark.parametrize(
    ("texts", "kwargs", "match"),
    [
        (["one"], {}, "at least two"),
        (["a b", None, "c"], {}, "strings"),
        (TOY, {"dim": 0}, "positive int"),
        (TOY, {"dim": 50}, "below"),
        (["alpha beta", "gamma delta"], {}, "no term"),
    ],
)
def test_embed_bad_input(texts, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ek.ecc_embed_texts(texts, **kwargs)


def test_committed_embedding_files_match_the_registry():
    spec = ek.dataset_info("embeddings")
    for name, sha in spec.files.items():
        path = EMB_DIR / name
        assert path.is_file(), f"{path} is missing: run scripts/build_embeddings.py"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha, f"{name}: registry sha256 is stale"
        with np.load(path, allow_pickle=False) as z:
            assert set(z.files) == {"item", "X", "singular_values"}  # numbers only, no text
            assert z["X"].dtype == np.float16
            norms = np.linalg.norm(z["X"].astype(float), axis=1)
            # unit rows, except texts with no kept term or with a zero projection (12 AlpacaEval,
            # 7 ChemBench items, none in MMLU-Pro): zero rows
            assert np.all((np.abs(norms - 1.0) < 2e-3) | (norms == 0.0))
            assert (norms == 0.0).sum() == {"mmlu_pro_official.npz": 0, "alpaca_eval.npz": 12,
                                            "chembench.npz": 7}[name]


@pytest.mark.parametrize("name", sorted(ek.ECC_TEXT_FIELDS))
def test_regenerated_embeddings_match_the_committed_files(name, shared_data, monkeypatch):
    # the texts live in the upstream copies (shared_data), which the registry searches first when
    # EVALKIT_DATA names them; CI runs with EVALKIT_DATA unset and ../shared/data beside the clone
    monkeypatch.setenv("EVALKIT_DATA", str(shared_data))
    try:
        items, X, s = ek.ecc_embeddings_build(name)
    except ek.DatasetNotFoundError as exc:
        pytest.skip(f"the item texts of {name} are not available here: {exc}".splitlines()[0])
    with np.load(EMB_DIR / f"{name}.npz", allow_pickle=False) as z:
        assert np.array_equal(z["item"], items)
        assert np.max(np.abs(z["X"].astype(float) - X)) < 1e-3
        assert np.allclose(z["singular_values"], s, rtol=1e-5)


# --------------------------------------------------------------------------------------------
# The fit on planted clusters
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sim() -> ek.ECCSimulation:
    # 4 capability clusters but only 2 semantic topics: embeddings alone cannot separate them.
    return ek.ecc_simulate(n_queries=2400, n_models=8, K=4, n_topics=2, per_query=7, seed=7)


@pytest.fixture(scope="module")
def split(sim):
    items = np.unique(sim.pairs["item"])
    train, test = items[:2000], items[2000:]
    return sim.pairs[sim.pairs["item"].isin(train)], sim.pairs[sim.pairs["item"].isin(test)]


@pytest.fixture(scope="module")
def fits(sim, split):
    # T = 1 on summed comparison losses makes softmax(-l) the posterior over clusters under a
    # uniform prior, the setting in which one probe comparison should help; the authors' objective
    # (the default: mean, T = 0.1) is tested on the same data below.
    train, _ = split
    kw = {"T": 1.0, "scaling": "sum"}
    return {
        "global BT": ek.ecc_fit(train, sim.embeddings, K=1, scaling="sum"),
        "ECC": ek.ecc_fit(train, sim.embeddings, K=4, seed=0, **kw),
        "Emb-only": ek.ecc_fit(train, sim.embeddings, K=4, signals="emb", seed=0, **kw),
        "Comp-only": ek.ecc_fit(train, sim.embeddings, K=4, signals="comp", seed=0, **kw),
    }


def test_default_recovers_the_planted_clusters(sim, split):
    """Intent: the authors' objective at their settings (lambda 3, T 0.1) finds the planted clusters."""
    fit = ek.ecc_fit(split[0], sim.embeddings, K=4, seed=0)
    z = sim.clusters[:2000]
    assert fit.converged and fit.scaling == "mean"
    assert ek.ecc_cluster_agreement(z, fit.hard_clusters()) > 0.7
    assert np.all(ek.ecc_profile_recovery(fit, z, sim.theta) > 0.9)


@pytest.mark.parametrize("scaling", ["mean", "sum"])
def test_emb_only_profiles_are_the_weighted_bt_fits_of_its_clusters(sim, split, scaling):
    """Intent: Emb-only clusters by the embedding alone, then fits one BT profile per cluster on
    the comparisons weighted by its final responsibilities (divided by N_q with the mean), in
    either scaling; the profiles are not left at their zero start."""
    train, _ = split
    fit = ek.ecc_fit(train, sim.embeddings, K=4, signals="emb", seed=0, scaling=scaling)
    q = pd.Index(fit.items).get_indexer(train["item"])
    n_q = np.bincount(q, minlength=fit.resp.shape[0]).astype(float)
    w = fit.resp[q] / (n_q[q, None] if scaling == "mean" else 1.0)
    ref = np.vstack([ek.bt_fit(train["winner"], train["loser"], models=fit.models, weights=w[:, k],
                               ridge=fit.ridge).theta for k in range(fit.K)])
    assert np.abs(fit.theta).max() > 0.1
    np.testing.assert_allclose(fit.theta, ref, atol=1e-6)


@pytest.mark.parametrize("name", ["ECC", "Emb-only", "Comp-only"])
def test_objective_never_increases(fits, name):
    obj = fits[name].objective
    assert obj.size >= 2
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[:-1])), np.diff(obj).max()


@pytest.mark.parametrize("lam, T", [(3.0, 0.1), (1.0, 1.0), (0.0, 0.5)])
def test_objective_never_increases_across_settings(sim, split, lam, T):
    fit = ek.ecc_fit(split[0], sim.embeddings, K=6, lam=lam, T=T, seed=1, max_iter=40)
    assert np.all(np.diff(fit.objective) <= 1e-9 * np.abs(fit.objective[:-1]))


def test_planted_clusters_and_rankings_are_recovered(sim, fits):
    z = sim.clusters[:2000]
    ari = {n: ek.ecc_cluster_agreement(z, f.hard_clusters()) for n, f in fits.items() if f.K > 1}
    # ECC separates clusters that share a topic; the embeddings alone cannot (ARI <= ~0.5 by design)
    assert ari["ECC"] > 0.6, ari
    assert ari["ECC"] > ari["Emb-only"] + 0.2 and ari["ECC"] > ari["Comp-only"] + 0.2, ari
    rec = ek.ecc_profile_recovery(fits["ECC"], z, sim.theta)
    assert np.all(rec > 0.9), rec
    assert np.all(ek.ecc_profile_recovery(fits["global BT"], z, sim.theta) < 0.9)


def test_global_fit_is_bradley_terry(sim, split):
    train, _ = split
    fit = ek.ecc_fit(train, sim.embeddings, K=1, ridge=0.5, scaling="sum")
    bt = ek.bt_fit(train["winner"], train["loser"], ridge=0.5)
    assert np.max(np.abs(fit.theta[0] - bt.theta)) < 1e-6
    assert fit.label == "global BT"
    # the per-query mean weighs each of the 7 comparisons 1/7: the same fit with a ridge 7 times larger
    assert (train.groupby("item").size() == 7).all()
    mean = ek.ecc_fit(train, sim.embeddings, K=1, ridge=0.5)
    bt7 = ek.bt_fit(train["winner"], train["loser"], ridge=0.5 * 7)
    assert np.max(np.abs(mean.theta[0] - bt7.theta)) < 1e-6


def test_fit_is_seeded(sim, split):
    a = ek.ecc_fit(split[0], sim.embeddings, K=4, seed=3, max_iter=5)
    b = ek.ecc_fit(split[0], sim.embeddings, K=4, seed=3, max_iter=5)
    assert np.array_equal(a.resp, b.resp) and np.array_equal(a.theta, b.theta)


# --------------------------------------------------------------------------------------------
# Inference and evaluation
# --------------------------------------------------------------------------------------------


def test_inference_modes_follow_their_formulas(sim, split, fits):
    fit = fits["ECC"]
    test = split[1]
    emb = sim.embeddings.loc[np.unique(test["item"])]
    probes = test.groupby("item").head(1)
    r_emb = ek.ecc_infer(fit, emb, mode="emb")
    Z = fit.lam * emb.to_numpy() @ fit.centres.T / fit.T
    expected = np.exp(Z - Z.max(axis=1, keepdims=True))
    assert np.allclose(r_emb, expected / expected.sum(axis=1, keepdims=True))
    r_probe = ek.ecc_infer(fit, emb, mode="probe", probes=probes)
    iw, il = fit.models.tolist(), fit.models.tolist()
    row = probes.set_index("item").loc[emb.index[0]]
    loss = np.log1p(np.exp(fit.theta[:, il.index(row["loser"])] - fit.theta[:, iw.index(row["winner"])]))
    p0 = np.exp(-(loss - loss.min()) / fit.T)
    assert np.allclose(r_probe[0], p0 / p0.sum())
    r_both = ek.ecc_infer(fit, emb, mode="emb+probe", probes=probes)
    assert np.allclose(r_both.sum(axis=1), 1.0)
    # emb+probe multiplies the two kernels: softmax(a + b) = normalised softmax(a) * softmax(b)
    prod = r_emb * r_probe
    assert np.allclose(r_both, prod / prod.sum(axis=1, keepdims=True), atol=1e-10)


def test_gains_on_planted_clusters(sim, split, fits):
    ev = ek.ecc_evaluate(fits, split[1], sim.embeddings, seed=0)
    t = ev.table.set_index(["method", "mode"])
    # with shared topics, one probe says much more than the embedding; ECC uses both
    assert t.loc[("ECC", "emb+probe"), "gain"] > t.loc[("ECC", "emb"), "gain"] > 0
    assert t.loc[("ECC", "emb+probe"), "gain"] > t.loc[("Emb-only", "emb+probe"), "gain"]
    d = ev.difference("ECC", "Emb-only", "emb+probe")
    assert d.ci_low > 0
    g = ev.gain("ECC", "emb")
    assert g.estimate == pytest.approx(t.loc[("ECC", "emb"), "gain"])


def test_gain_interval_agrees_with_the_query_bootstrap(sim, split, fits):
    ev = ek.ecc_evaluate({"global BT": fits["global BT"], "ECC": fits["ECC"]}, split[1], sim.embeddings,
                         seed=0, modes=["emb"])
    a, g = ev.nll[("ECC", "emb")], ev.nll_global

    def stat(rows: np.ndarray, ids: np.ndarray) -> float:
        return float(100 * (1 - a[rows].sum() / g[rows].sum()))

    boot = ek.bootstrap_cluster(stat, ev.query, n_boot=400, seed=1)
    est = ev.gain("ECC", "emb")
    assert est.estimate == pytest.approx(boot.estimate)
    # the bootstrap SD has relative MC error ~ 1/sqrt(2 * 400) = 3.5%; allow 4 of those plus the
    # finite-sample difference between the sandwich and the bootstrap (a few %)
    assert est.se == pytest.approx(boot.se, rel=0.2)


def test_mode_difference_is_the_paired_difference_of_two_modes(sim, split, fits):
    ev = ek.ecc_evaluate(fits, split[1], sim.embeddings, seed=0)
    d = ev.mode_difference("ECC", "emb+probe")
    assert d.estimate == pytest.approx(ev.gain("ECC", "emb+probe").estimate - ev.gain("ECC", "emb").estimate)
    # the same CR1 ratio as `difference`, with the two modes as two methods
    modes = {("a", "emb"): ev.nll[("ECC", "emb+probe")], ("b", "emb"): ev.nll[("ECC", "emb")]}
    swapped = dataclasses.replace(ev, nll=modes)
    same = swapped.difference("a", "b", "emb")
    assert (d.estimate, d.se) == pytest.approx((same.estimate, same.se))
    with pytest.raises(ValueError, match="no result"):
        ev.mode_difference("ECC", "probe", base="none")


def test_held_out_comparisons_and_probes_are_kept_and_can_be_subset(sim, split, fits):
    ev = ek.ecc_evaluate(fits, split[1], sim.embeddings, seed=0)
    held, probes = ev.held, ev.probes
    assert len(held) == ev.nll_global.size
    assert sorted(probes["item"]) == sorted(np.unique(held["item"]))   # one probe per evaluated query
    assert len(held) + len(probes) <= len(split[1])
    # everything kept: the same table
    same = ev.subset(np.ones(held.shape[0], dtype=bool))
    pd.testing.assert_frame_equal(same.table, ev.table)
    # a subset: the gain of the kept comparisons, queries without one dropped
    keep = (held["winner"] != "m0").to_numpy() & (held["loser"] != "m0").to_numpy()
    sub = ev.subset(keep)
    a, g = ev.nll[("ECC", "emb")][keep], ev.nll_global[keep]
    assert sub.gain("ECC", "emb").estimate == pytest.approx(100 * (1 - a.sum() / g.sum()))
    assert sub.table["n_queries"].iloc[0] == np.unique(held["item"][keep]).size == sub.query.max() + 1
    assert set(sub.probes["item"]) == set(sub.held["item"]) and sub.routing is None
    with pytest.raises(ValueError, match="boolean array"):
        ev.subset(np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="no held-out"):
        ev.subset(np.zeros(held.shape[0], dtype=bool))


def test_routing_is_between_best_single_and_oracle(sim, split, fits):
    test = split[1]
    items = np.unique(test["item"])
    z = pd.Series(sim.clusters, index=sim.embeddings.index).loc[items].to_numpy()
    P = 1 / (1 + np.exp(-sim.theta[z]))  # quality: the planted strength on the query's cluster
    quality = pd.DataFrame(P, index=items, columns=fits["ECC"].models)
    ev = ek.ecc_evaluate(fits, test, sim.embeddings, seed=0, quality=quality)
    r = ev.routing.set_index(["method", "mode"])["quality"]
    best = r[[k for k in r.index if k[0].startswith("best single")]].iloc[0]
    oracle = r[("oracle", "none")]
    assert best < r[("ECC", "emb+probe")] <= oracle


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def test_a_model_that_never_wins_gets_finite_profiles(sim, split):
    train = split[0]
    train = train[train["winner"] != "m0"]
    fit = ek.ecc_fit(train, sim.embeddings, K=3, seed=0, max_iter=10, models=sorted(sim.pairs["winner"].unique()))
    assert np.isfinite(fit.theta).all()
    assert np.all(fit.theta[:, 0] == fit.theta.min(axis=1))


def test_a_query_without_comparisons_cannot_be_probed(sim, split, fits):
    test = split[1]
    items = np.unique(test["item"])
    emb = sim.embeddings.loc[items]
    probes = test[test["item"] != items[0]].groupby("item").head(1)
    with pytest.raises(ValueError, match="no probe comparison"):
        ek.ecc_infer(fits["ECC"], emb, mode="probe", probes=probes)
    with pytest.raises(ValueError, match="needs probes"):
        ek.ecc_infer(fits["ECC"], emb, mode="emb+probe")
    assert ek.ecc_infer(fits["ECC"], emb, mode="emb").shape == (items.size, 4)


def test_unknown_model_ids_are_refused(sim, split, fits):
    test = split[1].copy()
    emb = sim.embeddings.loc[np.unique(test["item"])]
    probes = test.groupby("item").head(1).copy()
    probes.iloc[0, probes.columns.get_loc("winner")] = "gpt-99"
    with pytest.raises(ValueError, match="unknown model ids"):
        ek.ecc_infer(fits["ECC"], emb, mode="probe", probes=probes)
    test.iloc[5, test.columns.get_loc("loser")] = "gpt-99"
    with pytest.raises(ValueError, match="unknown model ids"):
        ek.ecc_evaluate(fits, test, sim.embeddings, seed=0)
    bad = split[0].copy()
    bad.iloc[0, bad.columns.get_loc("winner")] = "gpt-99"
    with pytest.raises(ValueError, match="unknown winner ids"):
        ek.ecc_fit(bad, sim.embeddings, K=2, models=fits["ECC"].models)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"K": 0}, "K must be"),
        ({"K": 10_000}, "K must be"),
        ({"T": 0.0}, "temperature"),
        ({"lam": -1.0}, "lam"),
        ({"ridge": 0.0}, "ridge"),
        ({"signals": "text"}, "signals"),
    ],
)
def test_bad_settings_raise(sim, split, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ek.ecc_fit(split[0], sim.embeddings, **kwargs)


def test_items_without_embedding_and_missing_global_fit(sim, split, fits):
    with pytest.raises(ValueError, match="no embedding"):
        ek.ecc_fit(split[0], sim.embeddings.iloc[:100], K=2)
    with pytest.raises(ValueError, match="exactly one global"):
        ek.ecc_evaluate({"ECC": fits["ECC"]}, split[1], sim.embeddings, seed=0)
    with pytest.raises(ValueError, match="columns"):
        ek.ecc_fit(split[0].drop(columns="item"), sim.embeddings)


def test_cluster_agreement_matches_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.integers(0, 4, 200), rng.integers(0, 5, 200)
        b[:120] = a[:120]
        assert ek.ecc_cluster_agreement(a, b) == pytest.approx(metrics.adjusted_rand_score(a, b), abs=1e-12)


def test_explore_draws_and_returns_the_table(sim, split):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    table = ek.ecc_explore(split[0], split[1], sim.embeddings, K=4, per_query=5, max_iter=10, ax=ax)
    assert set(table["mode"]) == {"none", "emb", "probe", "emb+probe"}
    assert len(ax.patches) == 3
    assert ax.get_ylim() == ek.ecc.ECC_EXPLORE_YLIM  # the same gain axis for every setting
    plt.close(fig)


def test_docstring_examples_run():
    import evalkit.ecc

    result = doctest.testmod(evalkit.ecc, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_embed_texts_orthogonal_to_the_kept_directions_get_zero_rows():
    """Intent: a text whose projection on the leading directions is zero up to round-off gets a zero
    row, not a unit vector of round-off (which changed between scipy builds: 5 committed rows did)."""
    texts = ["alpha beta", "alpha beta", "gamma delta", "gamma delta", "gamma delta", "gamma delta epsilon"]
    X, s = ek.ecc_embed_texts(texts, dim=1, min_df=2, max_df=1.0)
    assert np.all(X[:2] == 0.0)
    assert np.allclose(np.abs(X[2:, 0]), 1.0)


# --------------------------------------------------------------------------------------------
# The authors' algorithm: an independent reference (tests/ecc_reference.py)
# --------------------------------------------------------------------------------------------


def _reference():  # type: ignore[no-untyped-def]
    """tests/ecc_reference.py, loaded by path (the tests folder is not a package)."""
    import importlib.util
    import pathlib

    spec = importlib.util.spec_from_file_location("ecc_reference", pathlib.Path(__file__).with_name("ecc_reference.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_bt_step_is_logistic_regression_c1():
    """Intent: the reference's per-cluster fit is the authors' sklearn LogisticRegression(C=1), weighted."""
    from sklearn.linear_model import LogisticRegression

    ref = _reference()

    rng = np.random.default_rng(4)
    M, n = 6, 400
    a = rng.integers(0, M, n)
    b = (a + rng.integers(1, M, n)) % M
    w = rng.random(n) / 7
    rows = [(int(i), int(j), float(x)) for i, j, x in zip(a, b, w, strict=True)]
    theta = ref.bt_fit_weighted(rows, M)
    # their design: x[a] = -1, x[b] = +1, y = 1 when b is preferred; orient half of the rows each way
    flip = rng.random(n) < 0.5
    X = np.zeros((n, M))
    X[np.arange(n), np.where(flip, a, b)] = 1.0  # the preferred-if-y=1 side
    X[np.arange(n), np.where(flip, b, a)] = -1.0
    y = np.where(flip, 1, 0)  # a (the winner) is the +1 side when flipped
    lr = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y, sample_weight=w)
    assert np.max(np.abs(lr.coef_[0] - theta)) < 1e-5


@pytest.fixture(scope="module")
def authors_start(sim, split):
    train, _ = split
    items = np.unique(train["item"].astype(str))
    return np.random.default_rng(0).dirichlet(np.ones(4), size=items.size)


def test_default_fit_is_the_authors_algorithm(sim, split, authors_start):
    """Intent: from the same Dirichlet start, evalkit's default equals the reference to 1e-6, same stop."""
    ref = _reference()

    train, _ = split
    fit = ek.ecc_fit(train, sim.embeddings, K=4, init=authors_start)
    votes, emb = ref.inputs(train, fit.models, sim.embeddings)
    start = {q: authors_start[i] for i, q in enumerate(fit.items)}
    out = ref.fit(votes, emb, start, len(fit.models), lam=3.0, T=0.1)
    assert list(out["items"]) == list(fit.items)
    assert out["n_iter"] == fit.n_iter and fit.converged
    assert np.max(np.abs(out["theta"] - fit.theta)) < 1e-6
    assert np.max(np.abs(out["resp"] - fit.resp)) < 1e-6
    assert np.max(np.abs(out["centroids"] - fit.centres)) < 1e-6
    # and a fixed number of iterations without the stopping rule, at another temperature
    fit3 = ek.ecc_fit(train, sim.embeddings, K=4, T=1.0, init=authors_start, max_iter=3, tol_kl=0.0, patience=10)
    out3 = ref.fit(votes, emb, start, len(fit.models), lam=3.0, T=1.0, max_iter=3, stop=False)
    assert np.max(np.abs(out3["theta"] - fit3.theta)) < 1e-6
    assert np.max(np.abs(out3["resp"] - fit3.resp)) < 1e-6


def test_sum_scaling_is_not_the_authors_algorithm(sim, split, authors_start):
    """Intent: the earlier scaling (per-query sum) is a different fit from the same start."""
    train, _ = split
    a = ek.ecc_fit(train, sim.embeddings, K=4, init=authors_start)
    b = ek.ecc_fit(train, sim.embeddings, K=4, init=authors_start, scaling="sum")
    assert a.scaling == "mean" and b.scaling == "sum"
    assert np.max(np.abs(a.resp - b.resp)) > 0.1


def test_dirichlet_start_and_bad_init(sim, split):
    train, _ = split
    fit = ek.ecc_fit(train, sim.embeddings, K=4, init="dirichlet", seed=2, max_iter=2)
    assert fit.n_iter == 2
    with pytest.raises(ValueError, match="init"):
        ek.ecc_fit(train, sim.embeddings, K=4, init="random")
    with pytest.raises(ValueError, match="init as an array"):
        ek.ecc_fit(train, sim.embeddings, K=4, init=np.ones((3, 4)))
    with pytest.raises(ValueError, match="scaling"):
        ek.ecc_fit(train, sim.embeddings, K=4, scaling="median")  # type: ignore[arg-type]


def test_explore_at_k1_does_not_raise(sim, split):
    """Intent: K = 1 in the widget shows global BT alone (gains 0 by definition) instead of raising."""
    import matplotlib

    matplotlib.use("Agg")
    train, test = split
    table = ek.ecc_explore(train.head(700), test.head(300), sim.embeddings, K=1, per_query=7, seed=0, max_iter=3)
    assert set(table["method"]) == {"global BT"}


def test_model_names_are_the_sorted_distinct_strings_np_unique_gives():
    """The hash-then-sort shortcut of the interactive refit names the models as np.unique did."""
    from evalkit.ecc import _model_names

    rng = np.random.default_rng(5)
    a = pd.Series(rng.choice(["gpt-4o", "Claude", "m_2", "m-1", "é-model", "10", "9"], 500))
    b = pd.Series(rng.choice([3, 12, 7], 500))  # non-string names are compared as their strings
    ref = np.unique(np.concatenate([a.astype(str), b.astype(str)]))
    got = _model_names(a, b)
    assert got.dtype == ref.dtype and got.tolist() == ref.tolist()
