"""Tests of evalkit.partition and evalkit.harmony: similarity, partitions (against scikit-learn), the metric.

scikit-learn is a test-only reference (``SpectralClustering``, ``silhouette_score``,
``adjusted_rand_score``, ``KMeans``); evalkit itself never imports it. Monte Carlo tolerances are
derived from the Monte Carlo standard error of the quantity checked.
"""

from __future__ import annotations

import doctest
import math
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import special

import evalkit as ek
from evalkit import harmony as hm
from evalkit import partition as pt

sklearn_cluster = pytest.importorskip("sklearn.cluster")
sklearn_metrics = pytest.importorskip("sklearn.metrics")


def blobs(rng: np.random.Generator, sizes: list[int], n_options: int = 4,
          conc: float = 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Well-separated groups of option distributions: group g concentrates on option g."""
    P, lab = [], []
    for g, m in enumerate(sizes):
        alpha = np.full(n_options, 1.0)
        alpha[g % n_options] = conc
        P.append(rng.dirichlet(alpha, m))
        lab += [g] * m
    return np.vstack(P), np.array(lab)


def jeffreys(p: np.ndarray, q: np.ndarray) -> float:
    return float(special.rel_entr(p, q).sum() + special.rel_entr(q, p).sum())


# --------------------------------------------------------------------------------------------
# similarity
# --------------------------------------------------------------------------------------------


def test_similarity_matrix_matches_the_definition() -> None:
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(5), size=(3, 12))  # 3 models, 12 items, 5 options
    tau = 0.7
    S_model = ek.similarity_matrix(P[1], tau)
    S_shared = ek.similarity_matrix(P, tau)
    for i in range(12):
        for j in range(12):
            assert S_model[i, j] == pytest.approx(math.exp(-tau / 2 * jeffreys(P[1, i], P[1, j])), rel=1e-10)
            mean_j = np.mean([jeffreys(P[m, i], P[m, j]) for m in range(3)])
            assert S_shared[i, j] == pytest.approx(math.exp(-tau / 2 * mean_j), rel=1e-10)
    assert np.array_equal(S_shared, S_shared.T)
    assert np.all(np.diag(S_shared) == 1.0)


def test_similarity_knn_keeps_the_nearest_entries_of_the_dense_matrix() -> None:
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(4), size=60)
    S = ek.similarity_matrix(P, 1.0)
    A = ek.similarity_knn(P, 1.0, n_neighbors=7)
    assert (A != A.T).nnz == 0
    dense = A.toarray()
    nz = dense > 0
    assert np.allclose(dense[nz], S[nz], rtol=1e-10)
    for i in range(60):
        top = np.argsort(-S[i])[:7]
        assert nz[i, top].all()  # each item's 7 most similar items are kept
        assert nz[i].sum() >= 7


def test_similarity_bernoulli_and_tau() -> None:
    B = ek.similarity_bernoulli(np.array([[0.2, 0.9], [0.5, 0.5]]))
    assert B.shape == (2, 2, 2)
    assert np.allclose(B.sum(axis=-1), 1.0)
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4), size=200)
    tau = ek.similarity_tau(P, seed=0, n_pairs=20000)
    S = ek.similarity_matrix(P, tau)
    off = S[np.triu_indices(200, 1)]
    assert abs(np.median(off) - 0.5) < 0.03  # the median pair sits at similarity 1/2


def test_similarity_irt_gives_2pl_probabilities() -> None:
    Y, truth = ek.simulate_2pl(20, 150, rng=4)
    fit = ek.irt_fit(Y, ridge=0.5)
    p = ek.similarity_irt(Y, fit=fit)
    assert p.shape == Y.shape and ((p > 0) & (p < 1)).all()
    logit = (np.outer(fit.theta, fit.a) + fit.b) / fit.sigma
    ok = ~np.isnan(fit.a)
    assert np.allclose(p[:, ok], np.clip(special.expit(logit[:, ok]), 1e-6, 1 - 1e-6))
    Y2 = Y.copy()
    Y2[:, 0] = 1.0  # an item everyone answers: excluded by irt_fit, smoothed rate instead
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        p2 = ek.similarity_irt(Y2)
    assert np.allclose(p2[:, 0], 20.5 / 21)


@pytest.mark.parametrize(
    ("P", "message"),
    [
        (np.ones(5), "n_models, n_items, n_options"),
        (np.array([[0.5, 0.5], [np.nan, 0.5]]), "NaN"),
        (np.array([[0.5, 0.6], [0.5, 0.5]]), "sum to 1"),
        (np.array([[1.0, 0.0], [0.5, 0.5]]), "exactly 0"),
        (np.array([[1.2, -0.2], [0.5, 0.5]]), "negative"),
        (np.array([[1.0], [1.0]]), "at least 2 items and 2 options"),
    ],
)
def test_similarity_bad_input(P: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ek.similarity_matrix(P)


def test_similarity_bad_parameters_and_smoothing() -> None:
    P = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    S = ek.similarity_matrix(P, smooth=1e-6)
    assert np.isfinite(S).all() and S[0, 2] < S[0, 1]
    for tau in (0, -1, float("nan"), True):
        with pytest.raises(ValueError, match="tau"):
            ek.similarity_matrix(P, tau, smooth=1e-6)
    with pytest.raises(ValueError, match="n_neighbors"):
        ek.similarity_knn(P, n_neighbors=5, smooth=1e-6)
    with pytest.raises(ValueError, match="0 or 1"):
        ek.similarity_bernoulli([0.0, 0.5])
    with pytest.raises(ValueError, match="NaN"):
        ek.similarity_bernoulli([np.nan, 0.5])


# --------------------------------------------------------------------------------------------
# partitions against scikit-learn
# --------------------------------------------------------------------------------------------


def test_silhouette_equals_scikit_learn() -> None:
    rng = np.random.default_rng(5)
    P, _ = blobs(rng, [15, 10, 8])
    D = 1 - ek.similarity_matrix(P, 1.0)
    np.fill_diagonal(D, 0.0)
    for labels in (rng.integers(0, 3, 33), np.r_[np.zeros(32, int), 1], rng.integers(0, 6, 33)):
        ours = ek.partition_silhouette(D, labels)
        ref = sklearn_metrics.silhouette_score(D, labels, metric="precomputed")
        assert ours == pytest.approx(ref, abs=1e-12)
    with pytest.raises(ValueError, match="between 2 and n - 1"):
        ek.partition_silhouette(D, np.zeros(33))
    with pytest.raises(ValueError, match="square"):
        ek.partition_silhouette(D[:5], np.zeros(5))


def test_ari_equals_scikit_learn() -> None:
    rng = np.random.default_rng(6)
    for _ in range(5):
        a, b = rng.integers(0, 4, 80), rng.integers(0, 3, 80)
        assert ek.partition_ari(a, b) == pytest.approx(sklearn_metrics.adjusted_rand_score(a, b), abs=1e-12)
    assert ek.partition_ari(a, a) == 1.0
    with pytest.raises(ValueError, match="same items"):
        ek.partition_ari(a, b[:5])


def test_spectral_agrees_with_scikit_learn_on_well_separated_data() -> None:
    rng = np.random.default_rng(7)
    P, truth = blobs(rng, [40, 30, 20, 25])
    S = ek.similarity_matrix(P, 1.0)
    ref = sklearn_cluster.SpectralClustering(4, affinity="precomputed", random_state=0).fit_predict(S)
    ours = ek.partition_spectral(P, tau=1.0, k=4, seed=0)
    assert ours.k == 4
    assert ek.partition_ari(ours, ref) == pytest.approx(1.0)
    assert ek.partition_ari(ours, truth) == pytest.approx(1.0)
    # the silhouette search finds k = 4, and its scores are scikit-learn's on the same labels
    found = ek.partition_spectral(P, tau=1.0, k_range=range(2, 8), silhouette_sample=None, seed=0)
    assert found.k == 4
    D = 1 - S
    np.fill_diagonal(D, 0.0)
    assert found.silhouette[4] == pytest.approx(
        sklearn_metrics.silhouette_score(D, found.labels, metric="precomputed"), abs=1e-9)
    assert found.silhouette.idxmax() == 4
    assert found.sizes.tolist() == sorted(found.sizes.tolist(), reverse=True)


@pytest.fixture(scope="module")
def emotion_subset() -> np.ndarray:
    """Real, poorly separated option distributions: 600 items of the emotion benchmark, 10 models."""
    df = ek.dataset_load("uncertainty_emotion").sort_values(["model", "item"])
    P = df[[f"p_{k}" for k in "ABCDEF"]].to_numpy().reshape(df["model"].nunique(), -1, 6)
    return P[:, np.sort(np.random.default_rng(0).choice(P.shape[1], 600, replace=False))]


@pytest.mark.parametrize("kind", ["dense", "knn"])
def test_spectral_embedding_and_kmeans_objective_agree_with_scikit_learn(emotion_subset, kind) -> None:
    """Intent: on real data whose groups overlap, what must agree with scikit-learn does.

    Two runs of a non-convex search need not find the same partition, so the labels are not
    compared. What must agree: (1) the spectral embedding of the same affinity, as a subspace
    (eigenvectors are defined up to sign and rotation within the subspace): scikit-learn's
    ``spectral_embedding`` returns ``D^-1/2`` times the Laplacian's eigenvectors, so its columns
    times ``D^1/2`` must span evalkit's leading eigenvectors of ``D^-1/2 S D^-1/2``; by
    Davis-Kahan the principal angles are at most the eigen-solvers' residuals (about 1e-12)
    over the eigengap; (2) the k-means objective reached on evalkit's embedding: the best
    within-cluster sum of squares over the same seeds is no worse than scikit-learn's
    ``KMeans`` (same number of k-means++ starts). scikit-learn ignores the affinity's diagonal
    (self-similarity), so both are given the affinity with a zero diagonal.
    """
    from scipy import linalg, sparse
    from sklearn.manifold import spectral_embedding

    P = emotion_subset
    tau = pt.similarity_tau(P, seed=0, smooth=1e-6)
    if kind == "dense":
        S = ek.similarity_matrix(P, tau, smooth=1e-6)
        np.fill_diagonal(S, 0.0)
    else:
        S = ek.similarity_knn(P, tau, n_neighbors=30, smooth=1e-6).tocsr()
        S.setdiag(0.0)
        S.eliminate_zeros()
    root_deg = np.sqrt(np.asarray(S.sum(axis=1)).ravel())
    A = pt._normalise_affinity(S.copy())
    assert sparse.issparse(A) == (kind == "knn")  # the ARPACK path for kNN, LAPACK for dense
    all_vals = np.linalg.eigvalsh(A.toarray() if sparse.issparse(A) else A)[::-1]
    for k in (3, 5, 8):
        vals, U = pt._leading_eigenvectors(A, k, np.random.default_rng(0))
        np.testing.assert_allclose(vals, all_vals[:k], atol=1e-10)
        ref = spectral_embedding(S, n_components=k, drop_first=False, norm_laplacian=True, random_state=0)
        gap = all_vals[k - 1] - all_vals[k]
        assert gap > 1e-3  # a well-defined subspace
        assert linalg.subspace_angles(U, ref * root_deg[:, None]).max() <= 1e-10 / gap
        X = U / np.linalg.norm(U, axis=1, keepdims=True)  # evalkit's row-normalised embedding
        ours, theirs = [], []
        for s in range(5):
            lab = ek.partition_kmeans(X, k, seed=s, n_init=5)
            ours.append(sum(((X[lab == g] - X[lab == g].mean(0)) ** 2).sum() for g in range(k)))
            theirs.append(sklearn_cluster.KMeans(k, n_init=5, random_state=s).fit(X).inertia_)
        assert min(ours) <= min(theirs) * (1 + 1e-9)


def test_spectral_knn_affinity_recovers_groups_and_is_deterministic() -> None:
    rng = np.random.default_rng(8)
    P, truth = blobs(rng, [60, 50, 40])
    a = ek.partition_spectral(P, tau=1.0, affinity="knn", n_neighbors=15, k_range=range(2, 6), seed=3)
    b = ek.partition_spectral(P, tau=1.0, affinity="knn", n_neighbors=15, k_range=range(2, 6), seed=3)
    assert a.method == "spectral (knn)" and a.k == 3
    assert ek.partition_ari(a, truth) == pytest.approx(1.0)
    assert np.array_equal(a.labels, b.labels)
    shared = ek.partition_spectral(np.stack([P, P[:, ::-1]]), tau=1.0, k_range=range(2, 6), seed=0)
    assert ek.partition_ari(shared, truth) == pytest.approx(1.0)  # pooling models keeps the groups


def test_kmeans_matches_scikit_learn_inertia() -> None:
    rng = np.random.default_rng(9)
    X = np.vstack([rng.normal(c, 0.5, size=(50, 2)) for c in ((0, 0), (4, 0), (0, 4), (4, 4))])
    ours = ek.partition_kmeans(X, 4, seed=0)
    ref = sklearn_cluster.KMeans(4, n_init=10, random_state=0).fit(X)

    def inertia(lab: np.ndarray) -> float:
        return float(sum(((X[lab == g] - X[lab == g].mean(0)) ** 2).sum() for g in np.unique(lab)))

    assert inertia(ours) == pytest.approx(ref.inertia_, rel=1e-9)
    assert ek.partition_ari(ours, ref.labels_) == 1.0
    with pytest.raises(ValueError, match="k must be"):
        ek.partition_kmeans(X, 0, seed=0)
    with pytest.raises(ValueError, match="NaN"):
        ek.partition_kmeans(np.full((3, 2), np.nan), 2, seed=0)


def test_partition_labels_and_bad_spectral_arguments() -> None:
    part = ek.partition_labels(np.array(["law", "bio", "law"]))
    assert part.k == 2 and part.names.tolist() == ["bio", "law"] and part.labels.tolist() == [1, 0, 1]
    assert part.subset([0, 1]).sizes.tolist() == [1, 1]
    with pytest.raises(ValueError, match="missing labels"):
        ek.partition_labels(np.array(["a", None], dtype=object))
    P = np.random.default_rng(0).dirichlet(np.ones(3), 10)
    with pytest.raises(ValueError, match="k must be an int between 1 and 9"):
        ek.partition_spectral(P, k=10, seed=0)
    with pytest.raises(ValueError, match="k >= 2"):
        ek.partition_spectral(P, k_range=[1, 2], seed=0)
    with pytest.raises(ValueError, match="affinity"):
        ek.partition_spectral(P, affinity="full", seed=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed"):
        ek.partition_spectral(P, seed=None)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# the metric
# --------------------------------------------------------------------------------------------


def harmony_by_hand(y: np.ndarray, labels: np.ndarray, b: float, eps: float = 1e-12) -> float:
    groups = np.unique(labels)
    w = np.array([np.mean(labels == g) for g in groups])
    psi = np.array([y[labels == g].mean() for g in groups])
    mu = np.sum(w * psi)
    p = w * np.exp(-(((psi - mu) / b) ** 2))
    p /= p.sum()
    return float(-np.sum(p * np.log(p + eps)) / np.log(len(groups)))


def test_harmony_matches_the_formula() -> None:
    rng = np.random.default_rng(10)
    labels = rng.integers(0, 6, 300)
    Y = (rng.random((5, 300)) < rng.uniform(0.2, 0.9, size=(5, 1))).astype(float)
    part = ek.partition_labels(labels)
    for b in (0.05, 0.1, 0.3):
        H = ek.harmony_score(Y, part, b=b)
        assert H.shape == (5,)
        for f in range(5):
            assert H[f] == pytest.approx(harmony_by_hand(Y[f], labels, b), abs=1e-12)
            assert ek.harmony_score(Y[f], part, b=b) == pytest.approx(H[f], abs=1e-15)
            assert 0.0 <= H[f] <= 1.0 + 1e-9
    prof = ek.harmony_profile(Y[0], part, b=0.1)
    assert prof.attrs["harmony"] == pytest.approx(ek.harmony_score(Y[0], part, b=0.1))
    assert prof["mass"].sum() == pytest.approx(1.0)
    assert prof.attrs["mu"] == pytest.approx(Y[0].mean())


def test_harmony_edge_cases() -> None:
    y = np.array([1, 0, 1, 1, 0, 1, 0, 0.0])
    # k = 1: the aggregate is the only sub-domain's score
    assert ek.harmony_score(y, ek.partition_labels(np.zeros(8))) == 1.0
    # all sub-domain accuracies equal: masses are the size weights
    labels = np.array([0, 0, 0, 0, 1, 1, 2, 2])
    y_eq = np.array([1, 1, 0, 0, 1, 0, 1, 0.0])
    w = np.array([0.5, 0.25, 0.25])
    assert ek.harmony_score(y_eq, ek.partition_labels(labels)) == pytest.approx(
        -np.sum(w * np.log(w)) / np.log(3), abs=1e-9)
    # ... which is 1 for equal sizes
    even = ek.harmony_score(np.array([1, 0, 1, 0, 1, 0.0]), ek.partition_labels([0, 0, 1, 1, 2, 2]))
    assert even == pytest.approx(1.0)
    # a one-item sub-domain is used as it is (accuracy 0 or 1, weight 1/n)
    lab1 = np.array([0, 0, 0, 0, 1, 1, 1, 2])
    assert ek.harmony_score(y, ek.partition_labels(lab1), b=0.3) == pytest.approx(harmony_by_hand(y, lab1, 0.3))
    # k = 2 with equal sizes: the two deviations are equal, so HARMONY is 1 whatever the accuracies
    assert ek.harmony_score(np.array([1, 1, 0, 0.0]), ek.partition_labels([0, 0, 1, 1])) == pytest.approx(1.0)
    # only one sub-domain near the mean: the masses concentrate on it and HARMONY is near 0
    lab = np.repeat(np.arange(3), 20)
    y_spread = np.r_[np.zeros(20), np.tile([0.0, 1.0], 10), np.ones(20)]
    assert ek.harmony_score(y_spread, ek.partition_labels(lab), b=0.1) < 0.05
    # one outlier among five: four sub-domains share the mass, HARMONY = log 4 / log 5
    lab5 = np.repeat(np.arange(5), 20)
    y_outlier = np.r_[np.ones(20), np.zeros(80)]
    assert ek.harmony_score(y_outlier, ek.partition_labels(lab5), b=0.1) == pytest.approx(math.log(4) / math.log(5))


def test_harmony_missing_and_bad_input() -> None:
    part = ek.partition_labels([0, 0, 1, 1])
    # complete case: Psi_0 = 1 (one observed), Psi_1 = 0.5; weights stay the sizes
    psi, w = np.array([1.0, 0.5]), np.array([0.5, 0.5])
    mu = 0.75
    p = w * np.exp(-(((psi - mu) / 0.2) ** 2))
    p /= p.sum()
    assert ek.harmony_score([1, np.nan, 0, 1], part, b=0.2) == pytest.approx(-np.sum(p * np.log(p + 1e-12)) / np.log(2))
    with pytest.raises(ValueError, match="no observed outcome"):
        ek.harmony_score([np.nan, np.nan, 0, 1], part)
    with pytest.raises(ValueError, match="must align"):
        ek.harmony_score([1, 0, 1], part)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ek.harmony_score([2, 0, 1, 1], part)
    for b in (0, -0.1, float("inf")):
        with pytest.raises(ValueError, match="bandwidth"):
            ek.harmony_score([1, 0, 1, 1], part, b=b)
    with pytest.raises(ValueError, match="one model"):
        ek.harmony_profile(np.ones((2, 4)), part)


# --------------------------------------------------------------------------------------------
# uncertainty
# --------------------------------------------------------------------------------------------


def test_bootstrap_se_matches_the_sampling_sd() -> None:
    """The stratified-bootstrap SE estimates the SD of HARMONY over fresh draws of the items."""
    rng = np.random.default_rng(11)
    labels = np.repeat(np.arange(4), [60, 40, 30, 20])
    part = ek.partition_labels(labels)
    p_true = np.array([0.8, 0.6, 0.7, 0.4])[labels]
    reps, ses = [], []
    R = 150
    for r in range(R):
        y = (rng.random(labels.size) < p_true).astype(float)
        est = ek.harmony_bootstrap(y, part, b=0.2, n_boot=99, seed=r)
        reps.append(est.estimate)
        ses.append(est.se)
    sd = np.std(reps, ddof=1)
    mean_se = np.mean(ses)
    # relative MC error of an SD from R draws ~ 1/sqrt(2(R-1)); of the mean SE ~ sd(se)/mean/sqrt(R)
    rel = math.sqrt(1 / (2 * (R - 1)) + (np.std(ses, ddof=1) / mean_se) ** 2 / R)
    assert abs(math.log(mean_se / sd)) < 4 * rel + 0.1  # + 0.1: the bootstrap's own small-sample bias


def test_compare_is_paired_and_bootstrap_checks() -> None:
    rng = np.random.default_rng(12)
    labels = np.repeat(np.arange(4), 50)
    part = ek.partition_labels(labels)
    even = (rng.random(200) < 0.7).astype(float)
    uneven = (rng.random(200) < np.array([0.95, 0.9, 0.4, 0.1])[labels]).astype(float)
    same = ek.harmony_compare(even, even, part, n_boot=99, seed=0)
    assert same.estimate == 0.0 and same.se == 0.0
    diff = ek.harmony_compare(even, uneven, part, b=0.1, n_boot=199, seed=0)
    assert diff.ci_low > 0  # the even model is clearly more harmonious
    with pytest.raises(ValueError, match="at least 50"):
        ek.harmony_bootstrap(even, part, n_boot=10, seed=0)
    with pytest.raises(ValueError, match="one model"):
        ek.harmony_bootstrap(np.vstack([even, even]), part, seed=0)
    # resampling whole clusters within sub-domains
    src = np.arange(200) // 5
    est = ek.harmony_bootstrap(uneven, part, clusters=src, n_boot=99, seed=0)
    assert est.se > 0 and est.n_clusters == 4
    with pytest.raises(ValueError, match="single cluster"):
        ek.harmony_bootstrap(uneven, part, clusters=labels, n_boot=99, seed=0)
    with pytest.warns(ek.EvalkitWarning, match="single cluster"):
        ek.harmony_bootstrap(uneven, part, clusters=np.where(labels == 0, -1, src), n_boot=99, seed=0)


def test_benchmark_summary() -> None:
    rng = np.random.default_rng(13)
    labels = np.repeat(np.arange(5), 30)
    part = ek.partition_labels(labels)
    Y = (rng.random((6, 150)) < rng.uniform(0.3, 0.9, (6, 5))[:, labels]).astype(float)
    s = ek.harmony_benchmark(Y, part, name="toy", n_boot=99, seed=0)
    H = ek.harmony_score(Y, part)
    assert s.mean.estimate == pytest.approx(H.mean())
    assert s.variance.estimate == pytest.approx(H.var(ddof=1))
    assert np.allclose(s.accuracy, Y.mean(axis=1))
    row = s.to_row()
    assert row["benchmark"] == "toy" and row["n_models"] == 6 and row["mean_se"] > 0
    with pytest.raises(ValueError, match="at least two models"):
        ek.harmony_benchmark(Y[0], part, seed=0)
    ax = ek.harmony_plot_plane(pd.DataFrame([row]))
    assert ax.get_xlabel().startswith("variance")


# --------------------------------------------------------------------------------------------
# rebalancing
# --------------------------------------------------------------------------------------------


def test_rebalance_prunes_the_largest_and_its_interval_by_hand() -> None:
    rng = np.random.default_rng(14)
    labels = np.repeat(np.arange(3), [100, 30, 20])
    part = ek.partition_labels(labels)
    Y = (rng.random((2, 150)) < 0.6).astype(float)
    reb = ek.harmony_rebalance(Y, part, fraction=0.4, seed=0)
    assert reb.sizes_after.tolist() == [40, 30, 20] and reb.keep.sum() == 90  # water-filling from the top
    assert ek.harmony_rebalance(Y, part, fraction=0.5, seed=0).sizes_after.tolist() == [27, 28, 20]
    src = np.arange(150) // 3
    reb = ek.harmony_rebalance(Y, part, fraction=0.4, clusters=src, seed=0)
    keep = reb.keep
    for f in range(2):
        y = Y[f]
        a, b_ = y[keep].mean(), y.mean()
        infl = np.where(keep, (y - a) / keep.sum(), 0.0) - (y - b_) / 150
        U = np.bincount(src, weights=infl)
        se = math.sqrt(50 / 49 * np.sum(U**2))
        assert reb.shift[f].estimate == pytest.approx(a - b_)
        assert reb.shift[f].se == pytest.approx(se)
        assert reb.shift[f].df == 49
    zero = ek.harmony_rebalance(Y, part, fraction=0.0, seed=0)
    assert all(s.estimate == 0 and s.se == 0 for s in zero.shift)
    frame = reb.to_frame(["a", "b"])
    assert list(frame["model"]) == ["a", "b"]
    with pytest.raises(ValueError, match="fraction"):
        ek.harmony_rebalance(Y, part, fraction=1.0, seed=0)
    with pytest.raises(ValueError, match="every sub-domain keeps"):
        ek.harmony_rebalance(Y, part, fraction=0.99, seed=0)
    with pytest.raises(ValueError, match="NaN"):
        ek.harmony_rebalance(np.where(Y == 1, np.nan, Y), part, fraction=0.2, seed=0)


def test_rebalance_interval_holds_its_level_when_nothing_should_move() -> None:
    """All items equally hard: the shift's 95% interval excludes 0 about 5% of the time."""
    labels = np.repeat(np.arange(3), [120, 40, 40])
    part = ek.partition_labels(labels)
    R = 400
    rng = np.random.default_rng(15)
    reject = 0
    for r in range(R):
        y = (rng.random(200) < 0.6).astype(float)
        reb = ek.harmony_rebalance(y, part, fraction=0.3, seed=r)
        reject += not reb.shift[0].covers(0.0)
    rate = reject / R
    assert abs(rate - 0.05) <= ek.mc_tolerance(0.05, R)


def test_rebalance_moves_a_low_harmony_benchmark_and_not_a_high_one() -> None:
    labels = np.repeat(np.arange(4), [200, 50, 50, 50])
    part = ek.partition_labels(labels)
    rng = np.random.default_rng(16)
    low = (rng.random(350) < np.array([0.9, 0.4, 0.4, 0.4])[labels]).astype(float)
    high = (rng.random(350) < 0.65).astype(float)
    r_low = ek.harmony_rebalance(low, part, fraction=0.4, seed=0)
    r_high = ek.harmony_rebalance(high, part, fraction=0.4, seed=0)
    assert r_low.harmony_before < r_high.harmony_before
    assert r_low.shift[0].ci_high < 0  # the big, easy sub-domain drove the score up
    assert r_high.shift[0].covers(0.0)


# --------------------------------------------------------------------------------------------
# the generator and the validation
# --------------------------------------------------------------------------------------------


def test_simulate_redundant_structure_and_truth() -> None:
    P, Y, items, truth = ek.simulate_redundant(n_models=5, n_reference=[6, 4, 4, 4], rng=17)
    n = 18 * 5
    assert P.shape == (5, n, 4) and Y.shape == (5, n) and len(items) == n
    assert np.allclose(P.sum(axis=2), 1.0)
    assert items["kind"].value_counts().to_dict() == {"reference": 18, "paraphrase": 36, "lookalike": 36}
    look = items[items["kind"] == "lookalike"]
    assert (look["domain"] != look["surface_domain"]).all()
    same = items[items["kind"] != "lookalike"]
    assert (same["domain"] == same["surface_domain"]).all()
    ref_answer = items.groupby("reference")["answer"].first()
    para = items[items["kind"] == "paraphrase"]
    assert (para["answer"].to_numpy() == ref_answer[para["reference"]].to_numpy()).all()
    idx = np.arange(n)
    assert np.allclose(truth["p_correct"], P[:, idx, items["answer"].to_numpy()])
    # the outcomes are draws with those probabilities: check the mean over many cells
    big_P, big_Y, _, big_truth = ek.simulate_redundant(n_models=40, n_reference=50, rng=18)
    pc = big_truth["p_correct"]
    z = (big_Y.mean() - pc.mean()) / math.sqrt((pc * (1 - pc)).sum() / pc.size**2)
    assert abs(z) < 4
    # spread = 0: every model equally able in every domain
    _, _, _, t0 = ek.simulate_redundant(spread=0.0, rng=19)
    assert np.allclose(t0["ability"], t0["ability"][:, :1])
    with pytest.raises(ValueError, match="n_reference"):
        ek.simulate_redundant(n_reference=[5], rng=0)
    with pytest.raises(ValueError, match="n_models"):
        ek.simulate_redundant(n_models=1, rng=0)


def test_predictive_partition_recovers_true_domains_not_surface_labels() -> None:
    P, Y, items, _ = ek.simulate_redundant(n_models=8, n_reference=15, rng=20)
    part = ek.partition_spectral(P, tau=1.0, k_range=range(2, 8), seed=0)
    assert ek.partition_ari(part, items["domain"]) > 0.8
    assert ek.partition_ari(part, items["surface_domain"]) < 0.4


def test_validation_correlates_and_reports() -> None:
    runs = ek.harmony_validate(n_reps=12, seed=1, progress=False)
    assert set(runs["estimator"]) == {"shared", "per-model", "surface", "true"}
    assert (runs["error"] == "").all()
    table = ek.harmony_correlate(runs, n_boot=99, seed=0)
    assert table.loc["true", "correlation"] > 0.5
    assert (table["ci_low"] <= table["correlation"]).all() and (table["correlation"] <= table["ci_high"]).all()
    with pytest.raises(ValueError, match="mc_run"):
        ek.harmony_correlate(runs.drop(columns="truth"))


def test_explore_widget_function_runs_headless() -> None:
    import matplotlib.pyplot as plt

    P, Y, _, _ = ek.simulate_redundant(n_models=4, n_reference=[20, 6, 6, 6], rng=21)
    out = ek.harmony_explore(P, Y, b=0.2, tau=1.0, k=4, fraction=0.3, seed=0, show=False)
    assert out["partition"].k == 4
    assert out["rebalancing"].keep.sum() == round(0.7 * Y.shape[1])
    assert out["harmony"].shape == (4,)
    ek.harmony_explore(P, Y, k=1, fraction=0.0, show=True)
    assert "HARMONY = 1" in plt.gcf().axes[0].get_title()  # k = 1 says why b and tau do nothing
    plt.close("all")
    profiles = {"A": ek.harmony_profile(Y[0], out["partition"]), "B": ek.harmony_profile(Y[1], out["partition"])}
    ax = ek.harmony_plot_profile(profiles)
    assert len(ax.patches) == 2 * 4
    plt.close("all")


@pytest.mark.parametrize("module", [hm, pt])
def test_docstring_examples_run(module: object) -> None:
    flags = doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, extraglobs={"np": np})  # type: ignore[arg-type]
    assert result.failed == 0 and result.attempted >= 3
