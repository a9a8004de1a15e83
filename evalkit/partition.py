"""Sub-domains of a benchmark: predictive similarity, spectral clustering and given labels [HARMONY].

The partition step of HARMONY ([HARMONY], docs/methods/harmony.md; the metric is in
:mod:`evalkit.harmony`). Items ``i, j`` are similar when the models' predictive distributions on
them are alike::

    S(x_i, x_j) = exp(-(tau / 2) [KL(p_i || p_j) + KL(p_j || p_i)])

with ``p_i`` the option probabilities of one model (a *per-model* partition) or the divergence
averaged over a reference set of models (a *shared* partition); with only 0/1 outcomes, ``p_i`` is
the Bernoulli prediction of a fitted 2PL model (:func:`similarity_irt`). :func:`partition_spectral`
clusters the affinity (normalised affinity, leading eigenvectors, k-means with k-means++ seeding)
and picks ``k`` by the silhouette score; :func:`partition_labels` puts given labels (categories,
subtasks, sources) in the same form.

The symmetric KL (Jeffreys) divergence is an inner product in disguise:
``J(p, q) = sum p log p + sum q log q - <p, log q> - <q, log p>``, so all pairwise divergences
are matrix products, computed in blocks (dense affinity) or reduced to each item's nearest
neighbours on the fly (sparse affinity, for large item sets).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import linalg, sparse
from scipy.sparse import csgraph
from scipy.sparse import linalg as sparse_linalg

from ._checks import as_labels, check_int, check_positive, warn
from .errors import DegenerateDataWarning, EvalkitInputError
from .types import as_rng

__all__ = [
    "Partition",
    "similarity_bernoulli",
    "similarity_irt",
    "similarity_tau",
    "similarity_matrix",
    "similarity_knn",
    "partition_labels",
    "partition_spectral",
    "partition_kmeans",
    "partition_silhouette",
    "partition_ari",
]

_BLOCK_CELLS = 1 << 22  # ~4M cells (32 MB of float64) per block of rows
_DENSE_BLOCK = 1024  # square blocks of the dense affinity (only the upper triangle is computed)


# --------------------------------------------------------------------------------------------
# Predictive distributions and the similarity
# --------------------------------------------------------------------------------------------


def similarity_bernoulli(prob: npt.ArrayLike) -> np.ndarray:
    """Bernoulli predictive distributions ``(1 - p, p)`` from predicted probabilities of a correct answer.

    Parameters
    ----------
    prob : (n_models, n_items) or (n_items,) array
        Predicted probability that each model answers each item correctly, strictly inside (0, 1).

    Returns
    -------
    (n_models, n_items, 2) or (n_items, 2) array
        The last axis holds ``(P(wrong), P(right))``; feed it to :func:`similarity_matrix`.

    Raises
    ------
    ValueError
        NaN, or probabilities equal to 0 or 1 (their KL divergences are infinite).

    Examples
    --------
    >>> similarity_bernoulli([0.2, 0.9]).round(2).tolist()
    [[0.8, 0.2], [0.1, 0.9]]
    """
    p = np.asarray(prob, dtype=float)
    if p.ndim not in (1, 2):
        raise EvalkitInputError("prob", f"prob must be (n_items,) or (n_models, n_items), got shape {p.shape}")
    if np.isnan(p).any():
        raise EvalkitInputError("prob", "prob contains NaN; predicted probabilities must be given for every cell")
    if ((p <= 0) | (p >= 1)).any():
        raise EvalkitInputError("prob",
            "prob contains values equal to 0 or 1 (or outside [0, 1]): a Bernoulli with p in {0, 1} has an "
            "infinite KL divergence to any other; use model-based predictions (similarity_irt) or clip them"
        )
    return np.stack([1.0 - p, p], axis=-1)


def similarity_irt(Y: Any, *, fit: Any = None, ridge: float = 0.5) -> np.ndarray:
    """Predicted correctness ``P(Y_fj = 1)`` of every model on every item from a fitted 2PL model.

    With only 0/1 outcomes there is no predictive distribution to compare; a fitted item response
    model supplies one: ``p_fj = sigmoid((theta_f a_j + b_j) / sigma)`` ([CBMM], fitted by
    :func:`evalkit.irt_fit`). Why the 2PL: it is evalkit's fitted model of 0/1 leaderboards, it
    turns each cell into a smooth probability strictly inside (0, 1) (a raw 0/1 outcome has
    infinite KL divergence to its opposite), and it pools every model's answers. Its limit: each
    item is summarised by two numbers (difficulty and discrimination), so the similarity can only
    separate items the models find differently hard; a multidimensional factor model (such as
    the Open LLM Leaderboard factors, :func:`evalkit.oll_factors_load`) carries more structure.

    Items or models that :func:`evalkit.irt_fit` excludes for having no variation (all right or
    all wrong) get the add-one-half smoothed rate of their observed answers.

    Parameters
    ----------
    Y : (n_models, n_items) array or EvalMatrix
        0/1 outcomes, NaN where unobserved.
    fit : IRTFit, optional
        A fit of ``Y``; fitted with ``ridge`` when not given.
    ridge : float
        Ridge penalty of :func:`evalkit.irt_fit` (keeps quasi-separated items finite).

    Returns
    -------
    (n_models, n_items) array
        Probabilities strictly inside (0, 1); wrap with :func:`similarity_bernoulli`.

    Raises
    ------
    ValueError
        From :func:`evalkit.irt_fit` (bad ``Y``), or a ``fit`` whose shape does not match ``Y``.
    """
    from .irt import _as_matrix, irt_fit

    M = _as_matrix(Y)
    if fit is None:
        fit = irt_fit(M, ridge=ridge)
    if fit.theta.shape[0] != M.shape[0] or fit.a.shape[0] != M.shape[1]:
        raise EvalkitInputError(
            "fit", f"fit has {fit.theta.shape[0]} models x {fit.a.shape[0]} items but Y is {M.shape}")
    logit = (np.outer(fit.theta, fit.a) + fit.b) / fit.sigma
    p = 1.0 / (1.0 + np.exp(-np.clip(logit, -30, 30)))
    obs = ~np.isnan(M)
    n_obs = obs.sum(axis=0)
    item_rate = (np.nansum(M, axis=0) + 0.5) / (n_obs + 1.0)
    model_rate = (np.nansum(M, axis=1) + 0.5) / (obs.sum(axis=1) + 1.0)
    bad_items = np.isnan(fit.a) | np.isnan(fit.b)
    p[:, bad_items] = item_rate[bad_items]
    bad_models = np.isnan(fit.theta)
    p[bad_models, :] = model_rate[bad_models, None]
    return np.clip(p, 1e-6, 1 - 1e-6)


@dataclass(frozen=True)
class _Features:
    """Per-item vectors such that ``J(i, j) = (h_i + h_j - [P_i, L_i].[L_j, P_j]) / n_models``."""

    PL: np.ndarray  # (n_items, 2 * n_models * n_options): [P, log P]
    LP: np.ndarray  # [log P, P]
    h: np.ndarray  # (n_items,) sum P log P
    n_models: int

    @property
    def n(self) -> int:
        return int(self.PL.shape[0])

    def cross(self, rows: np.ndarray | slice, cols: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``<p_i, log p_j> + <log p_i, p_j>`` summed over models, for items ``rows`` x ``cols``."""
        return self.PL[rows] @ self.LP[cols].T

    def jeffreys(self, rows: np.ndarray | slice, cols: np.ndarray | slice = slice(None)) -> np.ndarray:
        """Mean (over models) symmetric KL divergence between items ``rows`` and ``cols``."""
        D = self.cross(rows, cols)
        np.negative(D, out=D)
        D += self.h[rows][:, None]
        D += self.h[cols][None, :]
        D /= self.n_models
        np.maximum(D, 0.0, out=D)  # rounding can leave -1e-16 on the diagonal
        return D


def _features(P: npt.ArrayLike, smooth: float = 0.0) -> _Features:
    arr = np.asarray(P, dtype=float)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise EvalkitInputError("P",
            f"predictive distributions must be (n_items, n_options) for one model or "
            f"(n_models, n_items, n_options) for a reference set; got shape {np.shape(P)}"
        )
    n_models, n_items, n_opt = arr.shape
    if n_items < 2 or n_opt < 2:
        raise EvalkitInputError("P", f"need at least 2 items and 2 options, got {n_items} items and {n_opt} options")
    if np.isnan(arr).any():
        raise EvalkitInputError(
            "P", "predictive distributions contain NaN; every model needs a distribution on every item")
    if not 0.0 <= smooth < 1.0:
        raise EvalkitInputError("smooth", f"smooth must be in [0, 1), got {smooth}")
    if (arr < 0).any():
        raise EvalkitInputError("P", "predictive distributions contain negative probabilities")
    sums = arr.sum(axis=2)
    if not np.allclose(sums, 1.0, atol=1e-4):
        worst = float(np.abs(sums - 1).max())
        raise EvalkitInputError("P",
            f"each predictive distribution must sum to 1 over the options (largest deviation {worst:.3g}); "
            "normalise them (e.g. a softmax of the option logits)"
        )
    arr = arr / sums[..., None]
    if smooth > 0:
        arr = (1.0 - smooth) * arr + smooth / n_opt
    if (arr <= 0).any():
        raise EvalkitInputError("smooth",
            f"{int((arr <= 0).sum())} option probabilities are exactly 0: the KL divergence is then infinite. "
            "Pass smooth=1e-6 (mixes each distribution with the uniform one) or smooth them yourself"
        )
    flat = np.ascontiguousarray(arr.transpose(1, 0, 2).reshape(n_items, n_models * n_opt))
    logs = np.log(flat)
    return _Features(np.hstack([flat, logs]), np.hstack([logs, flat]), np.einsum("ij,ij->i", flat, logs), n_models)


def _row_blocks(n_rows: int, n_cols: int) -> Iterator[slice]:
    step = max(1, _BLOCK_CELLS // max(1, n_cols))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _check_tau(tau: float) -> float:
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.floating)) or not math.isfinite(tau) or tau <= 0:
        raise EvalkitInputError("tau", f"tau must be a positive number, got {tau!r}")
    return float(tau)


def similarity_tau(P: npt.ArrayLike, *, seed: int | np.random.Generator = 0, n_pairs: int = 20000,
                   smooth: float = 0.0) -> float:
    """A data-driven ``tau``: the one at which the median pair of items has similarity 1/2.

    ``tau = 2 log 2 / median(J)`` over ``n_pairs`` random pairs of distinct items, where ``J`` is
    the symmetric KL divergence. The source fixes no ``tau``; this puts ``S`` on a comparable scale
    across benchmarks whose divergences differ by orders of magnitude.

    Parameters
    ----------
    P : (n_items, n_options) or (n_models, n_items, n_options) array
        Predictive distributions (see :func:`similarity_matrix`).
    seed : int or Generator
        Chooses the pairs.
    n_pairs : int
    smooth : float
        See :func:`similarity_matrix`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Bad distributions, or all sampled pairs identical (the median divergence is 0).
    """
    feats = _features(P, smooth)
    rng = as_rng(seed)
    i = rng.integers(0, feats.n, n_pairs)
    j = rng.integers(0, feats.n - 1, n_pairs)
    j = j + (j >= i)
    d = (feats.h[i] + feats.h[j] - np.einsum("ij,ij->i", feats.PL[i], feats.LP[j])) / feats.n_models
    med = float(np.median(d))
    if med <= 0:
        raise ValueError("the median divergence between items is 0: the predictive distributions are all alike")
    return 2.0 * math.log(2.0) / med


def similarity_matrix(P: npt.ArrayLike, tau: float = 1.0, *, smooth: float = 0.0) -> np.ndarray:
    """Dense predictive-similarity affinity ``S(x_i, x_j) = exp(-(tau/2) J(p_i, p_j))`` [HARMONY].

    ``J`` is the symmetric KL divergence ``KL(p_i || p_j) + KL(p_j || p_i)``. With a reference
    set of models, ``J`` is averaged over the models (the shared partition); with one model's
    distributions it is that model's own (the per-model partition of the source, whose ``p-bar_f``
    is model ``f``'s mean predictive distribution).

    Parameters
    ----------
    P : (n_items, n_options) or (n_models, n_items, n_options) array
        Predictive distributions, each summing to 1 over the options, strictly positive (or use
        ``smooth``). 0/1 data: see :func:`similarity_irt` and :func:`similarity_bernoulli`.
    tau : float
        Temperature; larger ``tau`` makes the similarity more local (see :func:`similarity_tau`).
    smooth : float
        Mix each distribution with the uniform one, ``(1 - smooth) p + smooth / n_options``,
        before taking logs (use a tiny value such as ``1e-6`` when some probabilities are 0).

    Returns
    -------
    (n_items, n_items) float64 array
        Symmetric, ones on the diagonal, entries in (0, 1].

    Raises
    ------
    ValueError
        Wrong shape, NaN, negative entries, rows not summing to 1, zeros without ``smooth``,
        ``tau <= 0``.

    Examples
    --------
    >>> P = [[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.1, 0.2, 0.7]]
    >>> similarity_matrix(P, tau=1.0).round(3)
    array([[1.   , 1.   , 0.311],
           [1.   , 1.   , 0.311],
           [0.311, 0.311, 1.   ]])
    """
    tau = _check_tau(tau)
    feats = _features(P, smooth)
    n = feats.n
    S = np.empty((n, n))
    step = _DENSE_BLOCK
    for a in range(0, n, step):
        rows = slice(a, min(a + step, n))
        for c in range(a, n, step):
            cols = slice(c, min(c + step, n))
            block = feats.jeffreys(rows, cols)
            block *= -tau / 2.0
            np.exp(block, out=block)
            if a == c:
                block = (block + block.T) / 2.0  # exact symmetry (the products round differently)
                np.fill_diagonal(block, 1.0)
            S[rows, cols] = block
            if a != c:
                S[cols, rows] = block.T
    return S


def similarity_knn(P: npt.ArrayLike, tau: float = 1.0, *, n_neighbors: int = 30,
                   smooth: float = 0.0) -> sparse.csr_matrix:
    """Sparse k-nearest-neighbour predictive-similarity affinity, for large item sets [HARMONY].

    Each item keeps its ``n_neighbors`` most similar items (itself included); the graph is made
    symmetric by ``max(S, S')``. Memory is ``O(n_items * n_neighbors)``: the divergences are
    computed block by block and never stored whole.

    Parameters
    ----------
    P : (n_items, n_options) or (n_models, n_items, n_options) array
        As :func:`similarity_matrix`.
    tau : float
    n_neighbors : int
        Neighbours per item, between 2 and ``n_items``.
    smooth : float

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n_items, n_items)

    Raises
    ------
    ValueError
        As :func:`similarity_matrix`, or ``n_neighbors`` out of range.

    Examples
    --------
    >>> P = [[.7, .2, .1], [.6, .3, .1], [.1, .2, .7], [.1, .3, .6]]
    >>> (similarity_knn(P, n_neighbors=2).toarray() > 0).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 0, 0],
           [0, 0, 1, 1],
           [0, 0, 1, 1]])
    """
    tau = _check_tau(tau)
    feats = _features(P, smooth)
    n = feats.n
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)) or not 2 <= n_neighbors <= n:
        raise EvalkitInputError(
            "n_neighbors", f"n_neighbors must be an int between 2 and n_items={n}, got {n_neighbors!r}")
    m = int(n_neighbors)
    cols = np.empty((n, m), dtype=np.int64)
    vals = np.empty((n, m))
    for rows in _row_blocks(n, n):
        # within a row, J(i, .) ranks as h_j - cross(i, j): h_i is a constant of the row
        R = feats.cross(rows)
        np.subtract(feats.h[None, :], R, out=R)
        idx = np.arange(rows.start, rows.stop)
        R[np.arange(R.shape[0]), idx] = -np.inf  # keep each item itself
        near = np.argpartition(R, m - 1, axis=1)[:, :m]
        d = (np.take_along_axis(R, near, axis=1) + feats.h[idx][:, None]) / feats.n_models
        d[near == idx[:, None]] = 0.0
        np.maximum(d, 0.0, out=d)
        cols[rows] = near
        vals[rows] = np.exp(-tau / 2.0 * d)
    A = sparse.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * m + 1, m)), shape=(n, n))
    return A.maximum(A.T).tocsr()


# --------------------------------------------------------------------------------------------
# Partitions
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Partition:
    """A split of a benchmark's items into sub-domains ``A_1 .. A_k``.

    Attributes
    ----------
    labels : (n_items,) int array
        Sub-domain code ``0 .. k-1`` of each item.
    names : (k,) array of str
        Name of each sub-domain (the given label, or ``"c0", "c1", ...`` for induced ones).
    method : str
        ``"given"``, ``"spectral (dense)"`` or ``"spectral (knn)"``.
    silhouette : pandas.Series
        Silhouette score per candidate ``k`` (empty for given labels).
    eigenvalues : (k_max,) array
        Leading eigenvalues of the normalised affinity (empty for given labels).
    tau : float
        The similarity temperature (NaN for given labels).
    """

    labels: np.ndarray
    names: np.ndarray
    method: str = "given"
    silhouette: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))
    eigenvalues: np.ndarray = field(default_factory=lambda: np.empty(0))
    tau: float = float("nan")

    @property
    def k(self) -> int:
        """Number of sub-domains."""
        return int(self.names.size)

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self.labels.size)

    @property
    def sizes(self) -> np.ndarray:
        """Items per sub-domain, shape ``(k,)``."""
        return np.bincount(self.labels, minlength=self.k)

    def named_labels(self) -> np.ndarray:
        """The sub-domain name of each item."""
        return self.names[self.labels]

    def subset(self, keep: npt.ArrayLike) -> Partition:
        """The partition restricted to the items ``keep`` (indices or a boolean mask)."""
        idx = np.asarray(keep)
        return partition_labels(self.names[self.labels[idx]])

    def __repr__(self) -> str:
        return f"Partition(k={self.k}, n_items={self.n_items}, method={self.method!r}, sizes={self.sizes.tolist()})"


def partition_labels(labels: npt.ArrayLike) -> Partition:
    """A partition from given labels (categories, subtasks, sources), in the same form as induced ones.

    Parameters
    ----------
    labels : (n_items,) labels
        The sub-domain of each item (strings or integers; no missing values).

    Returns
    -------
    Partition
        Sub-domains in sorted label order.

    Raises
    ------
    ValueError
        Not one-dimensional, empty, or missing labels.

    Examples
    --------
    >>> part = partition_labels(["bio", "law", "bio", "law", "law"])
    >>> part.k, part.sizes.tolist(), part.names.tolist()
    (2, [2, 3], ['bio', 'law'])
    """
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0:
        raise EvalkitInputError("labels", f"labels must be a non-empty one-dimensional array, got shape {arr.shape}")
    codes, uniques = as_labels(arr, arr.size, "labels")
    return Partition(codes, uniques.astype(str), "given")


def _centres(X: np.ndarray, labels: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    # one bincount over (cluster, column) cells: each cell adds its items in index order, as a
    # bincount per column does, so the centres are the same to the last bit
    n, d = X.shape
    counts = np.bincount(labels, minlength=k).astype(float)
    cells = (labels[:, None] * d + np.arange(d)).ravel()
    sums = np.bincount(cells, weights=X.ravel(), minlength=k * d).reshape(k, d)
    return sums / np.maximum(counts, 1.0)[:, None], counts


def _kmeans_once(X: np.ndarray, k: int, rng: np.random.Generator, max_iter: int,
                 tol: float) -> tuple[np.ndarray, float]:
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    centres = np.empty((k, X.shape[1]))
    first = int(rng.integers(n))
    centres[0] = X[first]
    closest = np.maximum(sq - 2 * X @ X[first] + sq[first], 0.0)
    n_trials = 2 + int(math.log(k))  # greedy k-means++ (several candidates per step)
    for c in range(1, k):
        total = closest.sum()
        if total <= 0:
            cand = rng.integers(n, size=n_trials)
        else:
            cand = np.searchsorted(np.cumsum(closest), rng.random(n_trials) * total)
            cand = np.minimum(cand, n - 1)
        d_cand = np.maximum(sq[None, :] - 2 * X[cand] @ X.T + sq[cand][:, None], 0.0)
        pot = np.minimum(closest[None, :], d_cand).sum(axis=1)
        best = int(np.argmin(pot))
        centres[c] = X[cand[best]]
        closest = np.minimum(closest, d_cand[best])
    rows = np.arange(n)
    for _ in range(max_iter):
        # ||x - c||^2 up to the row constant ||x||^2, which does not change the nearest centre
        G = X @ centres.T
        G *= -2.0
        G += np.einsum("ij,ij->i", centres, centres)[None, :]
        labels = np.argmin(G, axis=1)
        new, counts = _centres(X, labels, k)
        if (counts == 0).any():  # re-seed each empty cluster at the worst-fitted point
            fit = G[rows, labels] + sq
            for empty in np.flatnonzero(counts == 0):
                far = int(np.argmax(fit))
                new[empty] = X[far]
                fit[far] = -np.inf
        shift = float(((new - centres) ** 2).sum())
        centres = new
        if shift <= tol:
            break
    d = np.maximum(sq[:, None] - 2 * X @ centres.T + np.einsum("ij,ij->i", centres, centres)[None, :], 0.0)
    labels = np.argmin(d, axis=1)
    return labels, float(d[rows, labels].sum())


def partition_kmeans(X: npt.ArrayLike, k: int, *, seed: int | np.random.Generator, n_init: int = 10,
                     max_iter: int = 300, tol: float = 1e-4) -> np.ndarray:
    """k-means (Lloyd) with k-means++ seeding, the best of ``n_init`` seeded starts.

    Parameters
    ----------
    X : (n, d) array
        Points (for spectral clustering: the row-normalised leading eigenvectors).
    k : int
        Number of clusters, between 1 and ``n``.
    seed : int or Generator
    n_init : int
        Independent k-means++ starts; the one with the smallest within-cluster sum of squares wins.
    max_iter : int
    tol : float
        Stop a start when the centres move (sum of squared shifts) by less than ``tol`` times the
        mean variance of the columns of ``X`` (scikit-learn's convention).

    Returns
    -------
    (n,) int array
        Cluster codes ``0 .. k-1``, numbered by decreasing cluster size (ties by first item).

    Raises
    ------
    ValueError
        ``X`` not 2-D or with NaN, ``k`` out of range, ``n_init < 1``.
    """
    Xa = np.asarray(X, dtype=float)
    if Xa.ndim != 2 or Xa.shape[0] == 0:
        raise EvalkitInputError("X", f"X must be a non-empty (n, d) array, got shape {Xa.shape}")
    if not np.isfinite(Xa).all():
        raise EvalkitInputError("X", "X contains NaN or infinite values")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= Xa.shape[0]:
        raise EvalkitInputError("k", f"k must be an int between 1 and n={Xa.shape[0]}, got {k!r}")
    if n_init < 1:
        raise EvalkitInputError("n_init", f"n_init must be at least 1, got {n_init}")
    check_int(n_init, "n_init", minimum=1)
    check_int(max_iter, "max_iter", minimum=1)
    check_positive(tol, "tol", allow_zero=True)
    n_distinct = int(np.unique(Xa, axis=0).shape[0])
    if n_distinct < k:
        warn(f"X has only {n_distinct} distinct points for k={k} clusters: some clusters are arbitrary splits of "
             "identical points", stacklevel=3, category=DegenerateDataWarning)
    rng = as_rng(seed)
    tol_abs = float(tol * Xa.var(axis=0).mean())
    best_labels, best = np.zeros(Xa.shape[0], dtype=np.intp), math.inf
    for _ in range(n_init):
        labels, inertia = _kmeans_once(Xa, int(k), rng, max_iter, tol_abs)
        if inertia < best - 1e-12 * max(1.0, abs(best) if math.isfinite(best) else 1.0):
            best_labels, best = labels, inertia
    return _renumber(best_labels, int(k))


def _renumber(labels: np.ndarray, k: int) -> np.ndarray:
    counts = np.bincount(labels, minlength=k)
    first = np.full(k, labels.size)
    np.minimum.at(first, labels, np.arange(labels.size))
    order = np.lexsort((first, -counts))
    new = np.empty(k, dtype=np.intp)
    new[order] = np.arange(k)
    return new[labels]


def partition_silhouette(D: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Mean silhouette score of a labelling, from a precomputed dissimilarity matrix.

    ``s_i = (b_i - a_i) / max(a_i, b_i)`` with ``a_i`` the mean dissimilarity of item ``i`` to the
    other members of its cluster and ``b_i`` the smallest mean dissimilarity to another cluster;
    ``s_i = 0`` for an item alone in its cluster (the convention of Rousseeuw and scikit-learn).

    Parameters
    ----------
    D : (n, n) array
        Symmetric dissimilarities with zero diagonal (for predictive similarity, ``1 - S``).
    labels : (n,) labels
        At least 2 and at most ``n - 1`` distinct labels.

    Returns
    -------
    float
        In ``[-1, 1]``; larger is a better-separated partition.

    Raises
    ------
    ValueError
        ``D`` not square or not matching ``labels``, or fewer than 2 / more than ``n - 1`` clusters.

    Examples
    --------
    >>> D = 1 - np.array([[1, .9, .1], [.9, 1, .1], [.1, .1, 1]])
    >>> round(partition_silhouette(D, [0, 0, 1]), 3)
    0.593
    """
    Dm = np.asarray(D, dtype=float)
    if Dm.ndim != 2 or Dm.shape[0] != Dm.shape[1]:
        raise EvalkitInputError("D", f"D must be a square (n, n) matrix, got shape {Dm.shape}")
    if not np.isfinite(Dm).all() or (Dm < 0).any():
        raise EvalkitInputError("D", "D must hold finite dissimilarities >= 0 (no NaN, no negative values)")
    if not np.allclose(Dm, Dm.T, rtol=1e-8, atol=1e-12) or np.abs(np.diag(Dm)).max() > 1e-12:
        raise EvalkitInputError("D", "D must be symmetric with a zero diagonal (a dissimilarity matrix, e.g. 1 - S)")
    codes, uniques = as_labels(labels, Dm.shape[0], "labels")
    k, n = uniques.size, Dm.shape[0]
    if not 2 <= k <= n - 1:
        raise EvalkitInputError("labels", f"the silhouette needs between 2 and n - 1 = {n - 1} clusters, got {k}")
    onehot = np.zeros((n, k))
    onehot[np.arange(n), codes] = 1.0
    sums = Dm @ onehot
    counts = onehot.sum(axis=0)
    own = counts[codes]
    a = sums[np.arange(n), codes] / np.maximum(own - 1, 1)
    means = sums / counts[None, :]
    means[np.arange(n), codes] = np.inf
    b = means.min(axis=1)
    denom = np.maximum(a, b)
    s = np.where(denom > 0, (b - a) / np.where(denom > 0, denom, 1.0), 0.0)
    s[own == 1] = 0.0
    return float(s.mean())


def partition_ari(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Adjusted Rand index between two partitions of the same items (1 = identical, ~0 = chance).

    Parameters
    ----------
    a, b : Partition or (n_items,) labels

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Different numbers of items.

    Examples
    --------
    >>> partition_ari([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    """
    la = a.labels if isinstance(a, Partition) else np.asarray(a)
    lb = b.labels if isinstance(b, Partition) else np.asarray(b)
    if la.shape != lb.shape or la.ndim != 1:
        raise EvalkitInputError(
            "labels_b", f"both partitions must label the same items; got shapes {la.shape} and {lb.shape}")
    ca, ua = as_labels(la, la.size, "a")
    cb, ub = as_labels(lb, lb.size, "b")
    table = np.zeros((ua.size, ub.size))
    np.add.at(table, (ca, cb), 1.0)

    def pairs(x: np.ndarray) -> float:
        return float((x * (x - 1) / 2).sum())

    n = la.size
    index = pairs(table)
    ra, rb = pairs(table.sum(axis=1)), pairs(table.sum(axis=0))
    total = n * (n - 1) / 2
    expected = ra * rb / total if total > 0 else 0.0
    top = (ra + rb) / 2
    if top == expected:
        return 1.0
    return float((index - expected) / (top - expected))


def _leading_eigenvectors(A: np.ndarray | sparse.spmatrix, n_vec: int,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_vec`` largest eigenpairs of the normalised affinity ``A``.

    Small dense problems use LAPACK. Otherwise ARPACK (seeded start vector), after taking out the
    eigenvalue 1 of every connected component exactly: its eigenvector is ``sqrt(degree)`` on
    the component, and Lanczos is unreliable at finding repeated eigenvalues, which a kNN graph
    with several components has.
    """
    n = A.shape[0]
    if not sparse.issparse(A) and n <= 2000:
        vals, vecs = linalg.eigh(A, subset_by_index=[n - n_vec, n - 1])
        order = np.argsort(vals)[::-1]
        return vals[order], vecs[:, order]
    known = np.empty((n, 0))
    if sparse.issparse(A):
        n_comp, comp = csgraph.connected_components(A, directed=False)
        if n_comp > 1:
            root_deg = np.sqrt(np.asarray(A.sum(axis=1)).ravel())  # eigenvector of D^-1/2 S D^-1/2 for 1
            sizes = np.bincount(comp)
            order = np.argsort(-sizes, kind="stable")[:n_vec]
            known = np.zeros((n, order.size))
            for col, c in enumerate(order):
                on = comp == c
                known[on, col] = root_deg[on] / np.linalg.norm(root_deg[on])
    rest = n_vec - known.shape[1]
    if rest == 0:
        return np.ones(n_vec), known
    v0 = np.asarray(rng.uniform(-1.0, 1.0, size=n), dtype=float)
    if known.shape[1]:
        def deflated(x: np.ndarray) -> np.ndarray:
            y = A @ x
            return np.asarray(y - known @ (known.T @ x))

        op: Any = sparse_linalg.LinearOperator((n, n), matvec=deflated, dtype=float)
        v0 = np.asarray(v0 - known @ (known.T @ v0), dtype=float)
    else:
        op = A
    vals, vecs = sparse_linalg.eigsh(op, k=rest, which="LA", v0=v0, tol=1e-8, maxiter=20 * n)
    order = np.argsort(vals)[::-1]
    return np.r_[np.ones(known.shape[1]), vals[order]], np.hstack([known, vecs[:, order]])


def _normalise_affinity(S: np.ndarray | sparse.spmatrix) -> np.ndarray | sparse.spmatrix:
    """``D^{-1/2} S D^{-1/2}``, overwriting a dense ``S``: its top eigenvectors are the Laplacian's bottom ones."""
    deg = np.asarray(S.sum(axis=1)).ravel()
    inv = 1.0 / np.sqrt(deg)
    if sparse.issparse(S):
        Dinv = sparse.diags(inv)
        return (Dinv @ S @ Dinv).tocsr()
    S *= inv[:, None]  # in place: the caller owns S (saves one n x n copy)
    S *= inv[None, :]
    return S


def partition_spectral(
    P: npt.ArrayLike,
    *,
    tau: float | Literal["median"] = 1.0,
    k: int | None = None,
    k_range: Sequence[int] = range(2, 11),
    affinity: Literal["dense", "knn", "auto"] = "auto",
    n_neighbors: int = 30,
    silhouette_sample: int | None = 2000,
    n_init: int = 5,
    smooth: float = 0.0,
    seed: int | np.random.Generator,
) -> Partition:
    """Sub-domains induced by predictive similarity and spectral clustering [HARMONY].

    The affinity ``S`` (:func:`similarity_matrix`, or :func:`similarity_knn` for large item sets)
    is normalised, ``A = D^{-1/2} S D^{-1/2}`` (``D`` the degrees: the symmetric normalised
    Laplacian is ``I - A``); its ``k`` leading eigenvectors, rows scaled to unit length, are
    clustered by k-means with k-means++ seeding (Ng, Jordan and Weiss 2002). When ``k`` is not
    given, every ``k`` in ``k_range`` is tried and the one with the highest silhouette score on
    the dissimilarity ``1 - S`` wins (ties: the smaller ``k``).

    Parameters
    ----------
    P : (n_items, n_options) or (n_models, n_items, n_options) array
        Predictive distributions: one model's (a per-model partition) or a reference set's
        (a shared partition, divergences averaged over the models).
    tau : float or "median"
        Temperature of the similarity; ``"median"`` uses :func:`similarity_tau`.
    k : int, optional
        Fix the number of sub-domains instead of searching ``k_range``.
    k_range : sequence of int
        Candidates for ``k`` (each at least 2, below ``n_items``).
    affinity : {"auto", "dense", "knn"}
        ``"auto"`` is dense up to 3,000 items and kNN above.
    n_neighbors : int
        Neighbours per item for the kNN affinity.
    silhouette_sample : int or None
        Score the silhouette on this many items drawn at random (seeded), as scikit-learn's
        ``silhouette_score(sample_size=...)`` does; None uses every item (``O(n^2)`` memory).
    n_init : int
        k-means++ starts per ``k`` (scikit-learn's ``SpectralClustering`` uses 10; 5 halves the
        cost of a 19-value search with no loss on the data we tried).
    smooth : float
        See :func:`similarity_matrix`.
    seed : int or Generator
        Seeds the eigen-solver's start vector, k-means and the silhouette sample.

    Returns
    -------
    Partition
        ``labels`` numbered by decreasing sub-domain size; ``silhouette`` per ``k`` tried;
        ``eigenvalues`` of ``A``.

    Raises
    ------
    ValueError
        Bad distributions (see :func:`similarity_matrix`), ``k`` or ``k_range`` out of range, or
        an unknown ``affinity``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> P = np.vstack([rng.dirichlet([20, 2, 2], 10), rng.dirichlet([2, 2, 20], 10)])
    >>> part = partition_spectral(P, tau=1.0, k_range=range(2, 5), seed=0)
    >>> part.k, part.sizes.tolist()
    (2, [10, 10])
    """
    rng = as_rng(seed)
    feats = _features(P, smooth)
    n = feats.n
    if k is not None:
        k = check_int(k, "k", minimum=1, maximum=max(1, n - 1))
    check_int(n_init, "n_init", minimum=1)
    check_int(n_neighbors, "n_neighbors", minimum=1)
    if affinity not in ("auto", "dense", "knn"):
        raise EvalkitInputError("affinity", f"affinity must be 'auto', 'dense' or 'knn', got {affinity!r}")
    kind = ("dense" if n <= 3000 else "knn") if affinity == "auto" else affinity
    t = similarity_tau(P, seed=rng, smooth=smooth) if isinstance(tau, str) and tau == "median" else _check_tau(tau)
    if k is not None:
        candidates = [k]
    else:
        candidates = sorted({int(c) for c in k_range})
    if not candidates or any(isinstance(c, bool) or not 1 <= int(c) <= n - 1 for c in candidates):
        raise EvalkitInputError(
            "k", f"k and k_range must hold ints between 1 and n_items - 1 = {n - 1}, got {list(candidates)}")
    if k is None and min(candidates) < 2:
        raise EvalkitInputError("k", "the silhouette search needs k >= 2 (k = 1 has no silhouette); fix k=1 instead")
    S: np.ndarray | sparse.spmatrix
    if kind == "dense":
        S = similarity_matrix(P, t, smooth=smooth)
    else:
        S = similarity_knn(P, t, n_neighbors=min(n_neighbors, n), smooth=smooth)
    A = _normalise_affinity(S)
    del S
    k_max = max(candidates)
    vals, vecs = _leading_eigenvectors(A, k_max, rng)
    del A
    if silhouette_sample is None or silhouette_sample >= n:
        sample = np.arange(n)
    else:
        sample = np.sort(rng.choice(n, size=int(silhouette_sample), replace=False))
    D_sample = None
    if len(candidates) > 1:
        D_sample = 1.0 - np.exp(-t / 2.0 * feats.jeffreys(sample, sample))
        D_sample = np.maximum(D_sample, D_sample.T)
        np.fill_diagonal(D_sample, 0.0)
    scores: dict[int, float] = {}
    best_labels: np.ndarray | None = None
    best_score = -math.inf
    for c in candidates:
        emb = vecs[:, :c].copy()
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        emb /= np.where(norms > 0, norms, 1.0)
        labels = partition_kmeans(emb, c, seed=rng, n_init=n_init) if c > 1 else np.zeros(n, dtype=np.intp)
        if D_sample is not None:
            sub = labels[sample]
            n_sub = np.unique(sub).size
            scores[c] = partition_silhouette(D_sample, sub) if 2 <= n_sub <= sample.size - 1 else -1.0
            if scores[c] > best_score + 1e-12:
                best_score, best_labels = scores[c], labels
        else:
            best_labels = labels
    assert best_labels is not None
    k_found = int(best_labels.max()) + 1
    names = np.array([f"c{i}" for i in range(k_found)])
    return Partition(best_labels, names, f"spectral ({kind})", pd.Series(scores, name="silhouette", dtype=float),
                     vals, t)
