"""ECC: evidence-calibrated query clustering with Bradley-Terry ability profiles [ECC].

Queries are grouped jointly by what they are about (a unit embedding ``x_q``) and by how models
fare on them (a few pairwise comparisons per query). Each of ``K`` clusters has a unit semantic
centre ``c_k`` and a Bradley-Terry ability profile ``theta^(k)`` over the ``M`` models; query ``q``
has soft responsibilities ``r_q`` over the clusters. The loss of a query in a cluster is

    l(q, k) = l_comp(q; theta^(k)) - lambda * x_q' c_k,

with ``l_comp`` the BT negative log-likelihood of the query's comparisons, averaged over them
(``scaling="mean"``, the authors' released code, the default) or summed (``scaling="sum"``), and
the fit minimises

    L = sum_q sum_k r_qk l(q, k) + T sum_q sum_k r_qk log r_qk + ridge/2 sum_k ||theta^(k)||^2

by alternating closed-form responsibilities ``r_qk = softmax_k(-l(q, k) / T)``, centres
``c_k = normalize(sum_q r_qk x_q)`` and weighted BT fits (:func:`evalkit.bt_fit`'s solver). With
the mean, ``ridge = 1`` is the authors' per-cluster ``LogisticRegression(C=1)`` on comparison
weights ``r_qk / N_q``.

The module also holds the local text embeddings ECC reads (TF-IDF + truncated SVD, no model
download): :func:`ecc_embed_texts` and :func:`ecc_embeddings_build` compute them,
``scripts/build_embeddings.py`` writes them to ``data/embeddings/`` and
:func:`ecc_embeddings_load` reads them through the data registry.

Paper: [ECC] "Capturing LLM Capabilities via Evidence-Calibrated Query Clustering",
arXiv 2605.17110 (NeurIPS 2026).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
import scipy.sparse as sp
from scipy import stats
from scipy.sparse.linalg import svds
from scipy.special import expit, log_expit

from ._checks import as_labels, check_alpha, check_int, check_positive, check_seed, check_table, warn
from .bt import _newton, bt_encode, bt_pairs_sample
from .clustered import Estimate, cluster_scores_variance, interval_t
from .errors import ConvergenceWarning, EvalkitInputError, EvalkitInputTypeError
from .plots import PALETTE
from .types import as_rng

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "ECC_TEXT_FIELDS",
    "MODES",
    "SCALINGS",
    "ECCFit",
    "ECCEvaluation",
    "ECCSimulation",
    "ecc_embed_texts",
    "ecc_embeddings_build",
    "ecc_embeddings_load",
    "ecc_fit",
    "ecc_infer",
    "ecc_predict",
    "ecc_scores",
    "ecc_evaluate",
    "ecc_simulate",
    "ecc_cluster_agreement",
    "ecc_profile_recovery",
    "ecc_plot_gains",
    "ecc_explore",
    "ecc_study",
    "ECCStudy",
    "METHOD_COLOURS",
]

# --------------------------------------------------------------------------------------------
# Local text embeddings: TF-IDF + truncated SVD (latent semantic analysis)
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?u)\b\w\w+\b")

# A short English stop-word list (function words only), written for evalkit.
_STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    """.split()
)

ECC_TEXT_FIELDS: dict[str, tuple[str, ...]] = {
    "mmlu_pro_official": ("question", "options"),
    "alpaca_eval": ("instruction",),
    "chembench": ("content",),
}
"""The item-text columns embedded for each dataset (joined with a space)."""


def _tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP_WORDS]


def _tfidf(texts: Sequence[str], min_df: int, max_df: float) -> tuple[sp.csr_matrix, list[str]]:
    """Sublinear TF-IDF with smooth idf and unit rows (the scikit-learn conventions)."""
    docs = [Counter(_tokenize(t)) for t in texts]
    n = len(docs)
    df = Counter(term for d in docs for term in d)
    vocab = sorted(t for t, c in df.items() if c >= min_df and c <= max_df * n)
    if not vocab:
        raise EvalkitInputError("min_df",
            f"no term occurs in at least min_df={min_df} and at most max_df={max_df:g} of the {n} texts; "
            "lower min_df or raise max_df"
        )
    index = {t: j for j, t in enumerate(vocab)}
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    for d in docs:
        kept = sorted((index[t], c) for t, c in d.items() if t in index)
        indices.extend(j for j, _ in kept)
        values.extend(1.0 + np.log(c) for _, c in kept)
        indptr.append(len(indices))
    A = sp.csr_matrix((np.asarray(values), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
                      shape=(n, len(vocab)))
    dfv = np.array([df[t] for t in vocab], dtype=float)
    A = A @ sp.diags(np.log((1.0 + n) / (1.0 + dfv)) + 1.0)
    norms = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).ravel())
    A = sp.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ A
    return sp.csr_matrix(A), vocab


def ecc_embed_texts(
    texts: Sequence[str], dim: int = 64, *, min_df: int = 2, max_df: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """Unit text embeddings by TF-IDF and truncated SVD, computed locally and deterministically.

    Each text is lower-cased and split into word tokens of two or more characters (stop words
    removed); terms in fewer than ``min_df`` texts or in more than a fraction ``max_df`` of them
    are dropped. Term weights are ``(1 + log tf) * (log((1 + n) / (1 + df)) + 1)`` with unit rows
    (scikit-learn's ``TfidfVectorizer(sublinear_tf=True)``). The ``dim`` leading singular
    directions (ARPACK, fixed start vector) give the document coordinates ``U S``; each direction's
    sign is fixed so that its largest term loading is positive, and each row is scaled to unit
    length, so ``x_q' x_p`` is a cosine similarity as ECC's embedding term needs [ECC].

    Parameters
    ----------
    texts : sequence of str, length n
        The item texts (never stored by evalkit: only the numbers computed from them).
    dim : int
        Embedding dimension; at most ``min(n, n_terms) - 1``.
    min_df : int
        Minimum number of texts a term must occur in.
    max_df : float
        Maximum fraction of texts a term may occur in (drops boilerplate shared by all prompts).

    Returns
    -------
    X : (n, dim) float64 array
        Unit rows (a text with no kept term, or whose projection is zero up to round-off, gets a
        zero row).
    singular_values : (dim,) float64 array
        In decreasing order.

    Raises
    ------
    ValueError
        Fewer than two texts, a non-string text, no term kept, or ``dim`` too large.

    Examples
    --------
    >>> texts = ["acid base titration", "base pairs in DNA", "acid rain and titration",
    ...          "DNA replication and base pairs"]
    >>> X, s = ecc_embed_texts(texts, dim=2, min_df=2, max_df=1.0)
    >>> X.shape, bool(np.allclose(np.linalg.norm(X, axis=1), 1.0))
    ((4, 2), True)
    >>> bool(X[0] @ X[2] > X[0] @ X[3])
    True
    """
    texts = list(texts)
    if len(texts) < 2:
        raise EvalkitInputError("texts", f"need at least two texts to embed, got {len(texts)}")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise EvalkitInputError("texts", f"texts must be strings; entry {bad[0]} is {type(texts[bad[0]]).__name__} "
                         f"({len(bad)} non-strings in all; fill missing texts with '' first)")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise EvalkitInputError("dim", f"dim must be a positive int, got {dim!r}")
    A, vocab = _tfidf(texts, int(min_df), float(max_df))
    if dim >= min(A.shape):
        raise EvalkitInputError("dim", f"dim={dim} must be below min(n_texts, n_terms) = {min(A.shape)}")
    v0 = np.full(min(A.shape), 1.0 / np.sqrt(min(A.shape)))
    U, s, Vt = svds(A, k=int(dim), v0=v0, solver="arpack", random_state=0)
    order = np.argsort(-s, kind="stable")
    U, s, Vt = U[:, order], s[order], Vt[order]
    sign = np.sign(Vt[np.arange(dim), np.argmax(np.abs(Vt), axis=1)])
    X = U * (s * sign)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    # A text with no kept term, or none in the leading directions, projects to zero up to the
    # solver's round-off (norms near 1e-16): it gets a zero row, not a unit vector of round-off,
    # which would change from one scipy/ARPACK build to the next.
    keep = norms > 1e-10 * max(float(norms.max()), np.finfo(float).tiny)
    X = np.divide(X, norms, out=np.zeros_like(X), where=keep)
    return X, s


def ecc_embeddings_build(name: str, dim: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embed a dataset's item texts (the computation behind ``data/embeddings/<name>.npz``).

    Reads the texts through the data registry (the columns :data:`ECC_TEXT_FIELDS`,
    joined with a space; MMLU-Pro's options are included with the question) and embeds them
    with :func:`ecc_embed_texts` (``min_df=2, max_df=0.5``).

    Parameters
    ----------
    name : {"mmlu_pro_official", "alpaca_eval", "chembench"}
    dim : int

    Returns
    -------
    items : (n,) str array
        Item ids, as in the dataset's long table.
    X : (n, dim) float64 array
        Unit rows.
    singular_values : (dim,) float64 array
    """
    from . import datasets

    if name not in ECC_TEXT_FIELDS:
        raise EvalkitInputError(
            "name", f"no text fields known for {name!r}; embeddable datasets: {sorted(ECC_TEXT_FIELDS)}")
    # the registry's reader of item texts: dataset_texts where the registry separates texts from
    # the numeric tables, dataset_items where the items table still holds them
    reader = getattr(datasets, "dataset_texts", None) or datasets.dataset_items
    items = reader(name)
    text = items[list(ECC_TEXT_FIELDS[name])].fillna("").astype(str).agg(" ".join, axis=1)
    X, s = ecc_embed_texts(text.tolist(), dim)
    return items["item"].to_numpy(dtype=str), X, s


def ecc_embeddings_load(name: str) -> pd.DataFrame:
    """The precomputed unit embeddings of a dataset's items (``data/embeddings/<name>.npz``).

    Written by ``scripts/build_embeddings.py`` from the item texts (TF-IDF + truncated SVD, see
    :func:`ecc_embed_texts`); registered as the dataset ``embeddings`` with their sha256, so a
    damaged file fails loudly.

    Parameters
    ----------
    name : {"mmlu_pro_official", "alpaca_eval", "chembench"}

    Returns
    -------
    DataFrame
        Indexed by item id (str), one float64 column per dimension (``e0 .. e63``); unit rows.
    """
    from .datasets import _read_npz

    if name not in ECC_TEXT_FIELDS:
        raise EvalkitInputError("name", f"no embeddings for {name!r}; available: {sorted(ECC_TEXT_FIELDS)}")
    z = _read_npz("embeddings", f"{name}.npz")
    X = z["X"].astype(np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)  # float16 storage: renormalise
    return pd.DataFrame(X, index=pd.Index(z["item"].astype(str), name="item"),
                        columns=[f"e{j}" for j in range(X.shape[1])])


# --------------------------------------------------------------------------------------------
# The ECC fit
# --------------------------------------------------------------------------------------------

Signals = Literal["both", "emb", "comp"]
Mode = Literal["emb", "probe", "emb+probe"]
MODES: tuple[Mode, ...] = ("emb", "probe", "emb+probe")
"""The inference modes for a new query, in the paper's order [ECC]."""

_INNER_NEWTON = 2
"""Damped Newton steps per cluster profile in each ECC iteration (warm started)."""

LAMBDA_INFER_DEFAULT = 3.0
"""Embedding weight used at inference by fits trained without one (Comp-only, ``lam = 0``)."""

Scaling = Literal["mean", "sum"]
SCALINGS: tuple[Scaling, ...] = ("mean", "sum")
"""How a query's comparisons enter its loss: ``"mean"`` (the authors' released code: the mean
log-likelihood over the query's ``N_q`` comparisons, so every query weighs the same whatever its
number of comparisons; the default) or ``"sum"`` (evalkit's earlier objective: their sum, so a
query with 7 comparisons weighs 7 times more against the embedding term)."""

_PATIENCE_TOL = 1e-4
"""Relative ELBO change below which an iteration counts as no improvement (the authors' value)."""


@dataclass(frozen=True)
class ECCFit:
    """A fitted ECC clustering (or one of its baselines, through the same interface).

    Attributes
    ----------
    models : (M,) array
        Model ids, the columns of ``theta``.
    theta : (K, M) float array
        Bradley-Terry ability profile of each cluster (each row sums to zero).
    centres : (K, d) float array
        Unit semantic centres ``c_k = normalize(sum_q r_qk x_q)``.
    items : (Q,) str array
        Training queries, the rows of ``resp``.
    resp : (Q, K) float array
        Responsibilities ``r_qk`` at convergence (rows sum to one).
    K, lam, T, ridge : numbers
        The settings used (``lam`` is lambda, ``T`` the temperature, ``ridge`` the per-cluster
        penalty ``ridge/2 ||theta^(k)||^2``).
    signals : {"both", "emb", "comp"}
        What drove the responsibilities: ECC (``"both"``), the embedding term only
        (``"emb"``, the Emb-only baseline) or the comparisons only (``"comp"``, ``lam = 0``).
    objective : (n_iter,) float array
        The objective after each iteration (non-increasing).
    kl : (n_iter,) float array
        Mean KL divergence between successive responsibilities.
    centre_shift : (n_iter,) float array
        Largest movement of a centre (Euclidean) in each iteration.
    n_iter : int
    converged : bool
        Whether the stopping rule was met (mean KL < ``tol_kl`` and centre shift < ``tol_centre``,
        or, with ``patience``, that many iterations in a row without relative ELBO gain).
    seed : int
    scaling : {"mean", "sum"}
        How each query's comparisons enter its loss (:data:`SCALINGS`); inference uses the same.
    """

    models: np.ndarray
    theta: np.ndarray
    centres: np.ndarray
    items: np.ndarray
    resp: np.ndarray
    K: int
    lam: float
    T: float
    ridge: float
    signals: str
    objective: np.ndarray
    kl: np.ndarray
    centre_shift: np.ndarray
    n_iter: int
    converged: bool
    seed: int
    scaling: str = "sum"

    @property
    def label(self) -> str:
        """``"global BT"``, ``"Emb-only"``, ``"Comp-only"`` or ``"ECC"``."""
        if self.K == 1:
            return "global BT"
        return {"emb": "Emb-only", "comp": "Comp-only"}.get(self.signals, "ECC")

    def hard_clusters(self) -> np.ndarray:
        """``(Q,)`` the most responsible cluster of each training query."""
        return np.asarray(self.resp.argmax(axis=1))

    def index_models(self, ids: npt.ArrayLike) -> np.ndarray:
        """Positions of model ids in :attr:`models` (the columns of ``theta``); unknown ids raise."""
        return _model_index(self, ids)


@dataclass(frozen=True)
class _Comparisons:
    """Training comparisons, coded: query index, winner and loser positions."""

    q: np.ndarray
    w: np.ndarray
    lo: np.ndarray
    n_queries: int
    n_models: int

    def by_query_pair(self) -> sp.csr_matrix:
        """``(Q, M*M)`` counts: how many times query ``q`` has the comparison ``w beats lo``."""
        M = self.n_models
        return sp.csr_matrix((np.ones(self.q.size), (self.q, self.w * M + self.lo)),
                             shape=(self.n_queries, M * M))


def _comp_loss(theta: np.ndarray, by_query_pair: sp.csr_matrix) -> np.ndarray:
    """``(Q, K)`` BT negative log-likelihood of each query's comparisons under each profile.

    The loss of every ordered pair ``(w, l)`` is computed once per profile (``K x M^2``) and summed
    over each query's comparisons by a sparse product, so the cost hardly grows with ``C``.
    """
    per_pair = -log_expit(theta[:, :, None] - theta[:, None, :]).reshape(theta.shape[0], -1)  # (K, M*M)
    return np.asarray(by_query_pair @ per_pair.T)


def _softmax_rows(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return np.asarray(E / E.sum(axis=1, keepdims=True))


def _normalize_rows(V: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(V, axis=1, keepdims=True)
    return np.asarray(np.divide(V, n, out=np.zeros_like(V), where=n > 0))


def _kmeanspp(X: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding on the unit sphere (squared chordal distance ``2 - 2 x'c``)."""
    Q = X.shape[0]
    chosen = [int(rng.integers(Q))]
    d2 = np.clip(2.0 - 2.0 * X @ X[chosen[0]], 0.0, None)
    for _ in range(1, K):
        total = d2.sum()
        nxt = int(rng.integers(Q)) if total <= 0 else int(rng.choice(Q, p=d2 / total))
        chosen.append(nxt)
        d2 = np.minimum(d2, np.clip(2.0 - 2.0 * X @ X[nxt], 0.0, None))
    return X[chosen]


def _entropy_term(r: np.ndarray) -> float:
    return float(np.sum(r * np.log(np.where(r > 0, r, 1.0))))


def _prepare(pairs: pd.DataFrame, embeddings: pd.DataFrame,
             models: npt.ArrayLike | None) -> tuple[_Comparisons, np.ndarray, np.ndarray, np.ndarray]:
    missing_cols = {"item", "winner", "loser"} - set(pairs.columns)
    if missing_cols:
        raise EvalkitInputError(
            "pairs", f"pairs lacks columns {sorted(missing_cols)} (see bt_pairs_from_matrix, alpaca_pairs)")
    if not isinstance(embeddings, pd.DataFrame):
        raise TypeError("embeddings must be a DataFrame indexed by item id (see ecc_embeddings_load)")
    iw, il, mods = bt_encode(pairs["winner"].astype(str), pairs["loser"].astype(str),
                             None if models is None else np.asarray(models).astype(str))
    codes, uniques = pd.factorize(pairs["item"].astype(str), sort=True)
    items, q = np.asarray(uniques, dtype=str), codes
    emb_index = embeddings.index.astype(str)
    pos = pd.Index(emb_index).get_indexer(pd.Index(items))
    if (pos < 0).any():
        unknown = items[pos < 0]
        raise EvalkitInputError("embeddings", f"{unknown.size} queries have no embedding (first: {unknown[0]!r}); "
                         "embeddings must cover every item of pairs")
    X = embeddings.to_numpy(dtype=float)[pos]
    if not np.isfinite(X).all():
        raise EvalkitInputError("embeddings", "embeddings contain NaN or infinite values")
    return _Comparisons(q.astype(np.intp), iw, il, items.size, mods.size), X, items, mods


def ecc_fit(pairs: pd.DataFrame, embeddings: pd.DataFrame, *, K: int = 30, lam: float = 3.0, T: float = 0.1,
            ridge: float = 1.0, signals: Signals = "both", models: npt.ArrayLike | None = None,
            seed: int = 0, max_iter: int | None = None, tol_kl: float = 1e-3, tol_centre: float = 1e-4,
            scaling: Scaling = "mean", init: str | npt.ArrayLike = "kmeans++",
            patience: int | None = None) -> ECCFit:
    """Cluster queries jointly by embedding and pairwise evidence, with a BT profile per cluster.

    Alternates (i) centres ``c_k = normalize(sum_q r_qk x_q)`` and per-cluster weighted BT fits
    ``theta^(k) = argmin sum_q r_qk l_comp(q; theta) + ridge/2 ||theta||^2``, and (ii)
    responsibilities ``r_qk = softmax_k(-l(q, k) / T)`` with
    ``l(q, k) = l_comp(q; theta^(k)) - lam x_q' c_k``. The objective is

        sum_q sum_k r_qk l(q, k) + T sum_q sum_k r_qk log r_qk + ridge/2 sum_k ||theta^(k)||^2.

    ``scaling="mean"`` (default) is the authors' released algorithm [ECC] (``clustering_ecc.py``):
    ``l_comp`` is the mean negative log-likelihood of the query's ``N_q`` comparisons, each
    per-cluster BT fit is solved to convergence in every iteration (``ridge = 1`` is their
    ``LogisticRegression(C=1)`` on comparison weights ``r_qk / N_q``), a cluster without weight
    keeps its centre, and the fit stops when the mean KL divergence from the previous to the new
    responsibilities is below ``tol_kl`` and the centres move less than ``tol_centre`` (Frobenius
    norm), or after ``patience`` (default 5) iterations in a row whose relative gain in the bound
    ``sum_q log sum_k exp(-l(q, k) / T)`` is below 1e-4 (their ELBO patience; the count starts at
    the first iteration, as theirs). The returned profiles and centres are those of the last
    iteration and the responsibilities those computed from them, as in their code.

    ``scaling="sum"`` is evalkit's earlier objective: ``l_comp`` summed over the query's
    comparisons (so at 7 comparisons the evidence weighs 7 times more against the embedding term
    and the ridge 7 times less), two damped Newton steps per iteration, the KL from the new to the
    previous responsibilities and the largest centre shift in the stopping rule, no patience, and a
    final half-step that refits centres and profiles to convergence under the final
    responsibilities.

    Block coordinate descent: centres and responsibilities minimise the objective exactly in their
    blocks and each BT step lowers it, so the objective recorded per iteration cannot increase.

    Initialisation (``init``): ``"kmeans++"`` (default) seeds ``K`` queries by k-means++ on the
    embeddings and starts each query fully in its nearest seed's cluster (with
    ``signals="comp"``, a uniformly random cluster); ``"dirichlet"`` draws each query's starting
    responsibilities from Dirichlet(1, ..., 1), as the authors' code; or give a ``(Q, K)`` array
    of starting responsibilities (rows in the sorted order of ``pairs["item"]``).

    Baselines through the same call: ``K=1`` is global BT; ``signals="emb"`` is Emb-only
    (responsibilities from the embedding term alone, i.e. soft spherical k-means, then a BT fit
    per cluster); ``signals="comp"`` is Comp-only (``lam = 0``: the comparisons alone).

    Parameters
    ----------
    pairs : DataFrame
        Training comparisons with columns ``item, winner, loser`` (one row per comparison; see
        :func:`bt_pairs_from_matrix`, :func:`bt_pairs_sample`, :func:`evalkit.alpaca_pairs`).
        The training queries are its distinct items.
    embeddings : DataFrame
        Unit embeddings indexed by item id (see :func:`ecc_embeddings_load`); must cover every
        item of ``pairs``.
    K : int
        Number of clusters (default 30).
    lam : float
        Weight of the embedding term (default 3). Ignored (taken as 0) with ``signals="comp"``.
    T : float
        Temperature of the responsibilities (default 0.1).
    ridge : float
        Per-cluster ridge in the objective's scaling (default 1, must be > 0: a cluster may hold
        little evidence, and its maximum-likelihood profile may then not exist).
    signals : {"both", "emb", "comp"}
    models : (M,) ids, optional
        All models (default: those in ``pairs``).
    seed : int
    max_iter : int, optional
        Default 1000 with ``scaling="mean"``, 100 with ``"sum"``.
    tol_kl, tol_centre : float
        The stopping rule.
    scaling : {"mean", "sum"}
        See :data:`SCALINGS`.
    init : {"kmeans++", "dirichlet"} or (Q, K) array
    patience : int, optional
        ELBO patience; default 5 with ``scaling="mean"``, none with ``"sum"``.

    Returns
    -------
    ECCFit

    Raises
    ------
    ValueError
        Missing columns, unknown model ids or items without an embedding, ``K`` not in
        ``1 .. n_queries``, ``T <= 0``, ``lam < 0``, ``ridge <= 0``, an unknown ``signals``,
        ``scaling`` or ``init``, a starting array of the wrong shape.

    Examples
    --------
    >>> sim = ecc_simulate(n_queries=300, n_models=6, K=3, seed=0)
    >>> fit = ecc_fit(sim.pairs, sim.embeddings, K=3, seed=0)
    >>> fit.theta.shape, bool(np.all(np.diff(fit.objective) <= 1e-9))
    ((3, 6), True)
    """
    if signals not in ("both", "emb", "comp"):
        raise EvalkitInputError("signals", f"signals must be 'both', 'emb' or 'comp', got {signals!r}")
    if scaling not in SCALINGS:
        raise EvalkitInputError("scaling", f"scaling must be one of {SCALINGS}, got {scaling!r}")
    if max_iter is not None:
        max_iter = check_int(max_iter, "max_iter", minimum=1)
    check_positive(tol_kl, "tol_kl", allow_zero=True)  # 0: stop by ELBO patience only (the source's rule)
    check_positive(tol_centre, "tol_centre", allow_zero=True)
    check_seed(seed)
    if not (math.isfinite(T) and T > 0):
        raise EvalkitInputError("T", f"T must be a positive temperature, got {T!r}")
    if not (math.isfinite(lam) and lam >= 0):
        raise EvalkitInputError("lam", f"lam must be >= 0, got {lam!r}")
    if not (math.isfinite(ridge) and ridge > 0):
        raise EvalkitInputError("ridge", f"ridge must be > 0 for ECC's per-cluster fits, got {ridge!r}")
    mean = scaling == "mean"
    n_iter_max = (1000 if mean else 100) if max_iter is None else int(max_iter)
    pat = (5 if mean else None) if patience is None else int(patience)
    comps, X, items, mods = _prepare(pairs, embeddings, models)
    Q, M = comps.n_queries, comps.n_models
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or not 1 <= K <= Q:
        raise EvalkitInputError("K", f"K must be an int between 1 and the number of training queries ({Q}), got {K!r}")
    K = int(K)
    lam_used = 0.0 if signals == "comp" else float(lam)
    rng = as_rng(seed)
    by_query_pair = comps.by_query_pair()
    if mean:  # each query's comparisons weigh 1 / N_q
        n_q = np.bincount(comps.q, minlength=Q).astype(float)
        by_query_pair = sp.csr_matrix(sp.diags(1.0 / np.maximum(n_q, 1.0)) @ by_query_pair)
    by_pair = sp.csr_matrix(by_query_pair.T)  # (M*M, Q): W_k = by_pair @ r[:, k]

    r = np.zeros((Q, K))
    if not isinstance(init, str):
        r = np.array(init, dtype=float)
        if r.shape != (Q, K) or not np.isfinite(r).all() or (r < 0).any() or not np.allclose(r.sum(axis=1), 1.0):
            raise ValueError(f"init as an array must be ({Q}, {K}) responsibilities (rows >= 0 summing to 1)")
    elif init not in ("kmeans++", "dirichlet"):
        raise ValueError(f"init must be 'kmeans++', 'dirichlet' or a (Q, K) array, got {init!r}")
    elif K == 1:
        r[:, 0] = 1.0
    elif init == "dirichlet":
        r = rng.dirichlet(np.ones(K), size=Q)
    elif signals == "comp" or lam_used == 0:
        r[np.arange(Q), rng.integers(0, K, Q)] = 1.0
    else:
        seeds = _kmeanspp(X, K, rng)
        r[np.arange(Q), np.argmax(X @ seeds.T, axis=1)] = 1.0

    theta = np.zeros((K, M))
    centres = _normalize_rows(r.T @ X)
    objective: list[float] = []
    kls: list[float] = []
    shifts: list[float] = []
    converged = False
    bound_prev = math.nan
    no_gain = 0
    for it in range(n_iter_max):
        # (i) system parameters given the responsibilities
        new_centres = _normalize_rows(r.T @ X)
        if mean:  # a cluster without weight keeps its centre
            empty = r.sum(axis=0) <= 1e-9
            new_centres[empty] = centres[empty]
        if signals != "emb":  # Emb-only: the profiles do not act on the responsibilities
            W = np.asarray(by_pair @ r).T.reshape(K, M, M)
            theta, _, _ = _newton(W, theta, float(ridge), tol=1e-10 if mean else 1e-8,
                                  max_iter=50 if mean else _INNER_NEWTON)
        # (ii) responsibilities given the system parameters
        L_emb = -lam_used * (X @ new_centres.T)
        L_comp = _comp_loss(theta, by_query_pair)
        L = L_emb if signals == "emb" else L_comp + L_emb
        r_new = np.ones((Q, 1)) if K == 1 else _softmax_rows(-L / T)
        obj = float(np.sum(r_new * L) + T * _entropy_term(r_new))
        if signals != "emb":  # Emb-only reports its clustering objective (the profiles come last)
            obj += 0.5 * ridge * float(np.sum(theta**2))
        if mean:  # the authors' direction: KL(previous || new), both clipped at 1e-12
            p_old = np.clip(r, 1e-12, 1.0)
            p_old /= p_old.sum(axis=1, keepdims=True)
            p_new = np.clip(r_new, 1e-12, 1.0)
            p_new /= p_new.sum(axis=1, keepdims=True)
            kl = float(np.mean(np.sum(p_old * (np.log(p_old) - np.log(p_new)), axis=1)))
            shift = float(np.linalg.norm(new_centres - centres))
        else:
            ratio = np.where(r_new > 0, r_new / np.where(r > 0, r, 1e-300), 1.0)
            kl = float(np.mean(np.sum(np.where(r_new > 0, r_new * np.log(ratio), 0.0), axis=1)))
            shift = float(np.max(np.linalg.norm(new_centres - centres, axis=1)))
        objective.append(obj)
        kls.append(kl)
        shifts.append(shift)
        r, centres = r_new, new_centres
        if kl < tol_kl and shift < tol_centre:
            converged = True
            break
        if pat is not None:
            Z = -L / T
            zmax = Z.max(axis=1, keepdims=True)
            bound = float(np.sum(zmax[:, 0] + np.log(np.exp(Z - zmax).sum(axis=1))))
            if it == 0:
                bound_prev = bound
            gain = (bound - bound_prev) / (abs(bound_prev) + 1e-9)
            no_gain = no_gain + 1 if gain < _PATIENCE_TOL else 0
            bound_prev = bound
            if no_gain > pat:
                converged = True
                break
    if not mean or signals == "emb":
        # a last half-step (i): the profiles (and, with the sum, the centres) under the final
        # responsibilities; Emb-only fits its profiles only here, in either scaling
        W = np.asarray(by_pair @ r).T.reshape(K, M, M)
        theta, _, _ = _newton(W, theta, float(ridge), tol=1e-10 if mean else 1e-8, max_iter=50)
        if not mean:
            centres = _normalize_rows(r.T @ X)
    if not converged:
        warn(f"ecc_fit: the alternating updates did not converge in max_iter={n_iter_max} iterations (last KL "
             f"{kls[-1]:.3g} vs tol_kl {tol_kl:g}, centre shift {shifts[-1]:.3g} vs tol_centre {tol_centre:g}); "
             "raise max_iter", stacklevel=3, category=ConvergenceWarning)
    return ECCFit(mods, theta, centres, items, r, K, lam_used, float(T), float(ridge), signals,
                  np.asarray(objective), np.asarray(kls), np.asarray(shifts), len(objective), converged, int(seed),
                  scaling)


# --------------------------------------------------------------------------------------------
# Inference on new queries, prediction
# --------------------------------------------------------------------------------------------


def _probe_loss(fit: ECCFit, items: np.ndarray, probes: pd.DataFrame) -> np.ndarray:
    """``(n, K)`` BT loss of each query's probe comparison(s) under each profile."""
    missing_cols = {"item", "winner", "loser"} - set(probes.columns)
    if missing_cols:
        raise EvalkitInputError("probes", f"probes lacks columns {sorted(missing_cols)}")
    pos = pd.Index(items).get_indexer(pd.Index(probes["item"].astype(str)))
    if (pos < 0).any():
        raise EvalkitInputError(
            "probes", f"probes name {int((pos < 0).sum())} items that are not among the queries to infer "
                         f"(first: {probes['item'].astype(str).to_numpy()[pos < 0][0]!r})")
    has = np.bincount(pos, minlength=items.size) > 0
    if not has.all():
        raise ValueError(f"{int((~has).sum())} queries have no probe comparison (first: {items[~has][0]!r}); "
                         "Probe and Emb+Probe inference need one observed comparison per query "
                         "(use mode='emb' for them)")
    iw = _model_index(fit, probes["winner"])
    il = _model_index(fit, probes["loser"])
    per = -log_expit(fit.theta[:, iw] - fit.theta[:, il])  # (K, P)
    L = np.zeros((items.size, fit.K))
    np.add.at(L, pos, per.T)
    if fit.scaling == "mean":
        L /= np.bincount(pos, minlength=items.size)[:, None]
    return L


def _model_index(fit: ECCFit, ids: npt.ArrayLike) -> np.ndarray:
    arr = np.asarray(ids).astype(str)
    idx = pd.Index(fit.models.astype(str)).get_indexer(pd.Index(arr))
    if (idx < 0).any():
        raise EvalkitInputError("ids", f"unknown model ids {sorted(set(arr[idx < 0]))[:5]}: the fit knows "
                         f"{len(fit.models)} models ({list(fit.models[:5])} ...)")
    return idx.astype(np.intp)


def ecc_infer(fit: ECCFit, embeddings: pd.DataFrame, *, mode: Mode = "emb+probe",
              probes: pd.DataFrame | None = None, lam: float | None = None,
              T: float | None = None) -> np.ndarray:
    """Responsibilities of new queries from their embedding, a probe comparison, or both.

    - ``"emb"``: ``r_qk = softmax_k(lam x_q' c_k / T)``;
    - ``"probe"``: ``r_qk = softmax_k(-l_comp(probe_q; theta^(k)) / T)``, one observed comparison;
    - ``"emb+probe"``: ``r_qk = softmax_k(-(l_comp(probe_q; theta^(k)) - lam x_q' c_k) / T)`` [ECC].

    Parameters
    ----------
    fit : ECCFit
    embeddings : DataFrame
        Unit embeddings of the new queries, indexed by item id; its row order is the output's.
    mode : {"emb", "probe", "emb+probe"}
    probes : DataFrame, optional
        ``item, winner, loser``: the probe comparison of each query (several rows for a query are
        summed). Required by the probe modes; ignored by ``"emb"``.
    lam : float, optional
        Embedding weight; default ``fit.lam``, or :data:`LAMBDA_INFER_DEFAULT` for a Comp-only fit
        (trained with ``lam = 0``, whose centres are still the responsibility-weighted means).
    T : float, optional
        Inference temperature; default ``fit.T`` as in the paper. ``T = 1`` reads the softmax as
        the posterior over clusters under a uniform prior (less sure of itself after one probe
        than ``T = 0.1``).

    Returns
    -------
    (n, K) float array
        Rows sum to one.

    Raises
    ------
    ValueError
        Unknown mode, an embedding of the wrong dimension, a query without a probe (probe
        modes), a probe naming an unknown model or an item not being inferred.

    Examples
    --------
    >>> sim = ecc_simulate(n_queries=300, n_models=6, K=3, seed=0)
    >>> fit = ecc_fit(sim.pairs, sim.embeddings, K=3, seed=0)
    >>> new = sim.embeddings.iloc[:2]
    >>> probes = sim.pairs[sim.pairs["item"].isin(new.index)].groupby("item").head(1)
    >>> r = ecc_infer(fit, new, mode="emb+probe", probes=probes)
    >>> r.shape, bool(np.allclose(r.sum(axis=1), 1.0))
    ((2, 3), True)
    """
    if mode not in MODES:
        raise EvalkitInputError("mode", f"mode must be one of {list(MODES)}, got {mode!r}")
    if not isinstance(embeddings, pd.DataFrame):
        raise EvalkitInputTypeError("embeddings", "embeddings must be a DataFrame indexed by item id")
    X = embeddings.to_numpy(dtype=float)
    if not np.isfinite(X).all():
        raise EvalkitInputError(
            "embeddings", f"embeddings contain {int((~np.isfinite(X)).sum())} NaN or infinite values (first item "
            f"{embeddings.index[~np.isfinite(X).all(axis=1)][0]!r}); embed every item")
    if lam is not None:
        check_positive(lam, "lam", allow_zero=True)
    if T is not None:
        check_positive(T, "T")
    if X.ndim != 2 or X.shape[1] != fit.centres.shape[1]:
        raise EvalkitInputError(
            "embeddings", f"embeddings have {X.shape[1]} dimensions, the fit's centres {fit.centres.shape[1]}")
    items = embeddings.index.astype(str).to_numpy()
    lam_used = (fit.lam if fit.lam > 0 else LAMBDA_INFER_DEFAULT) if lam is None else float(lam)
    L = np.zeros((items.size, fit.K))
    if mode in ("emb", "emb+probe"):
        L -= lam_used * (X @ fit.centres.T)
    if mode in ("probe", "emb+probe"):
        if probes is None:
            raise EvalkitInputError("mode", f"mode={mode!r} needs probes (one observed comparison per query)")
        L += _probe_loss(fit, items, probes)
    T_used = fit.T if T is None else float(T)
    if not (math.isfinite(T_used) and T_used > 0):
        raise EvalkitInputError("T", f"T must be a positive temperature, got {T!r}")
    return _softmax_rows(-L / T_used)


def _check_resp(resp: npt.ArrayLike) -> np.ndarray:
    """Responsibilities: a finite (n, K) array of non-negative rows summing to 1."""
    R = np.asarray(resp, dtype=float)
    if R.ndim != 2:
        raise EvalkitInputError("resp", f"resp must be an (n, K) array of responsibilities, got shape {R.shape}")
    if not np.isfinite(R).all() or (R < 0).any() or not np.allclose(R.sum(axis=1), 1.0, atol=1e-6):
        raise EvalkitInputError(
            "resp", "resp must hold responsibilities: finite, >= 0, each row summing to 1 (from ecc_infer)")
    return R


def ecc_predict(fit: ECCFit, resp: np.ndarray, winner: npt.ArrayLike, loser: npt.ArrayLike) -> np.ndarray:
    """``P(winner beats loser | q) = sum_k r_qk sigmoid(theta_w^(k) - theta_l^(k))`` per comparison.

    Parameters
    ----------
    fit : ECCFit
    resp : (n, K) array
        Responsibilities of each comparison's query (row ``c`` for comparison ``c``).
    winner, loser : (n,) model ids

    Returns
    -------
    (n,) float array
    """
    R = _check_resp(resp)
    iw, il = _model_index(fit, winner), _model_index(fit, loser)
    if R.shape != (iw.size, fit.K):
        raise EvalkitInputError("resp", f"resp must be ({iw.size}, {fit.K}), got {R.shape}")
    return np.asarray(np.einsum("ck,kc->c", R, expit(fit.theta[:, iw] - fit.theta[:, il])))


def ecc_scores(fit: ECCFit, resp: np.ndarray) -> np.ndarray:
    """``(n, M)`` each model's predicted mean win probability against the others, per query.

    Used for routing: a query goes to the model with the highest score.
    """
    R = _check_resp(resp)
    P = expit(fit.theta[:, :, None] - fit.theta[:, None, :])  # (K, M, M): row beats column
    M = fit.models.size
    per_cluster = (P.sum(axis=2) - 0.5) / (M - 1)  # (K, M), the diagonal 0.5 removed
    return np.asarray(R @ per_cluster)


# --------------------------------------------------------------------------------------------
# Evaluation: ranking gain, routing
# --------------------------------------------------------------------------------------------


def _ratio_estimate(num: np.ndarray, den: np.ndarray, codes: np.ndarray, n_queries: int, method: str,
                    alpha: float, scale: float = 100.0) -> Estimate:
    """``scale * sum(num) / sum(den)`` with a cluster-robust (CR1, queries as clusters) interval.

    The ratio's linearisation has scores ``num_c - R den_c``; their cluster sandwich
    (:func:`evalkit.clustered.cluster_scores_variance`) is the analytic counterpart of resampling
    whole queries.
    """
    G = float(den.sum())
    R = float(num.sum()) / G
    var = cluster_scores_variance(num - R * den, codes, n_queries, G, "CR1")
    se = math.sqrt(var) * scale
    lo, hi = interval_t(R * scale, se, n_queries - 1, alpha)
    return Estimate(R * scale, se, lo, hi, float(n_queries - 1), method, int(num.size), n_queries)


def _gain_table(global_name: str, nll: Mapping[tuple[str, str], np.ndarray], nll_global: np.ndarray,
                query: np.ndarray, n_q: int, alpha: float) -> pd.DataFrame:
    """One row per method and mode (the global fit first): mean nll, gain vs global BT, its interval."""
    rows: list[dict[str, object]] = [
        {"method": global_name, "mode": "none", "nll": float(nll_global.mean()), "gain": 0.0, "se": 0.0,
         "ci_low": 0.0, "ci_high": 0.0, "n_queries": n_q, "n_comparisons": int(query.size)}]
    for (name, mode), a in nll.items():
        est = _ratio_estimate(nll_global - a, nll_global, query, n_q, f"ranking gain, {name} {mode}", alpha)
        rows.append({"method": name, "mode": mode, "nll": float(a.mean()), "gain": est.estimate, "se": est.se,
                     "ci_low": est.ci_low, "ci_high": est.ci_high, "n_queries": n_q,
                     "n_comparisons": int(query.size)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ECCEvaluation:
    """Held-out ranking gains (and routing quality) of ECC fits and baselines.

    Attributes
    ----------
    table : DataFrame
        One row per method and inference mode: ``method, mode, nll`` (mean held-out negative
        log-likelihood, nats per comparison), ``gain`` (% decrease vs global BT), ``se, ci_low,
        ci_high`` (queries as clusters), ``n_queries, n_comparisons``.
    routing : DataFrame or None
        With ``quality``: ``method, mode, quality`` for each method and mode, then the rows
        ``best single model`` (global BT's top model) and ``oracle`` (the best model per query).
    nll : dict
        ``(method, mode) -> (n_comparisons,)`` per-comparison negative log-likelihoods.
    nll_global : (n_comparisons,) array
    query : (n_comparisons,) int array
        Query code of each held-out comparison.
    alpha : float
    held : DataFrame or None
        ``item, winner, loser`` of the held-out comparisons, in the order of ``nll``.
    probes : DataFrame or None
        ``item, winner, loser`` of the probe comparison of each evaluated test query.
    """

    table: pd.DataFrame
    routing: pd.DataFrame | None
    nll: dict[tuple[str, str], np.ndarray]
    nll_global: np.ndarray
    query: np.ndarray
    alpha: float
    held: pd.DataFrame | None = None
    probes: pd.DataFrame | None = None

    def gain(self, method: str, mode: str) -> Estimate:
        """The gain (%) of ``method`` in ``mode`` with its interval."""
        return self._paired(self.nll_global - self._get(method, mode), f"ranking gain, {method} {mode}")

    def difference(self, a: str, b: str, mode: str) -> Estimate:
        """Gain of ``a`` minus gain of ``b`` (percentage points), paired over the same comparisons."""
        return self._paired(self._get(b, mode) - self._get(a, mode), f"gain difference, {a} - {b} {mode}")

    def mode_difference(self, method: str, mode: str, base: Mode = "emb") -> Estimate:
        """Gain of ``method`` in ``mode`` minus its gain in ``base`` (percentage points), paired over the
        same comparisons (queries as clusters, as :meth:`difference`)."""
        return self._paired(self._get(method, base) - self._get(method, mode),
                            f"gain difference, {method} {mode} - {base}")

    def _paired(self, saved: np.ndarray, label: str) -> Estimate:
        """``100 sum(saved) / sum(nll_global)`` over the held-out comparisons, CR1 with queries as clusters."""
        return _ratio_estimate(saved, self.nll_global, self.query, int(self.query.max()) + 1, label, self.alpha)

    def subset(self, keep: np.ndarray) -> ECCEvaluation:
        """The evaluation on the held-out comparisons where ``keep`` is true.

        Parameters
        ----------
        keep : (n_comparisons,) bool array
            In the order of ``nll`` (and ``held``).

        Returns
        -------
        ECCEvaluation
            Gains and intervals recomputed on the kept comparisons; a query left without one drops
            out. ``routing`` is ``None`` (it is per query, not per comparison).

        Raises
        ------
        ValueError
            ``keep`` of the wrong shape or keeping no comparison.
        """
        k = np.asarray(keep)
        if k.dtype != bool or k.shape != self.query.shape:
            raise EvalkitInputError("keep", f"keep must be a boolean array of shape {self.query.shape}")
        if not k.any():
            raise EvalkitInputError("keep", "keep selects no held-out comparison")
        kept_queries, query = np.unique(self.query[k], return_inverse=True)
        query = query.astype(np.intp)
        nll = {key: a[k] for key, a in self.nll.items()}
        nll_global = self.nll_global[k]
        global_name = str(self.table["method"].iloc[0])
        held = None if self.held is None else self.held[k].reset_index(drop=True)
        probes = None
        if self.probes is not None and held is not None:
            probes = self.probes[self.probes["item"].astype(str).isin(held["item"].astype(str))].reset_index(drop=True)
        table = _gain_table(global_name, nll, nll_global, query, kept_queries.size, self.alpha)
        return ECCEvaluation(table, None, nll, nll_global, query, self.alpha, held, probes)

    def _get(self, method: str, mode: str) -> np.ndarray:
        try:
            return self.nll[(method, mode)]
        except KeyError:
            raise EvalkitInputError(
                "method", f"no result for method {method!r} in mode {mode!r}; have {sorted(self.nll)}") from None


def _split_probes(test_pairs: pd.DataFrame, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One random probe per test query with at least two comparisons; the rest are held out."""
    item = test_pairs["item"].astype(str)
    key = pd.Series(rng.random(len(test_pairs)), index=test_pairs.index)
    rank = key.groupby(item.to_numpy(), sort=False).rank(method="first")
    size = item.map(item.value_counts())
    keep = (size >= 2).to_numpy()
    probe = keep & (rank == 1).to_numpy()
    held = keep & (rank > 1).to_numpy()
    return test_pairs[probe], test_pairs[held]


def ecc_evaluate(fits: Mapping[str, ECCFit] | Sequence[ECCFit], test_pairs: pd.DataFrame,
                 embeddings: pd.DataFrame, *, seed: int | np.random.Generator, quality: pd.DataFrame | None = None,
                 modes: Sequence[Mode] = MODES, T_infer: float | None = None,
                 alpha: float = 0.05) -> ECCEvaluation:
    """Held-out ranking gain of each fit in each inference mode, vs global BT; routing quality.

    For every test query with at least two comparisons, one comparison drawn at random is the
    probe; the others are held out. Each fit infers the query's responsibilities
    (:func:`ecc_infer`) and predicts the held-out comparisons (:func:`ecc_predict`); the ranking
    gain is the relative decrease (%) of their total negative log-likelihood against the global
    BT fit (``K = 1``, which ignores the query) [ECC]. Its interval treats queries as clusters
    (a CR1 sandwich of the ratio, the analytic counterpart of resampling queries).

    Parameters
    ----------
    fits : mapping name -> ECCFit, or sequence of ECCFit (named by ``fit.label``)
        Must include exactly one global BT fit (``K = 1``), the reference; all on the same models.
    test_pairs : DataFrame
        ``item, winner, loser`` of the test queries (none of them training queries, normally).
    embeddings : DataFrame
        Unit embeddings indexed by item id, covering the test queries.
    seed : int or Generator
        Draws the probes.
    quality : DataFrame, optional
        Items x models: the quality of each model's answer to each test query (e.g. 0/1
        correct, or a judge's win against a reference). A missing value counts as 0 (an answer
        that cannot be scored does not serve the user). Enables ``routing``.
    modes : sequence of {"emb", "probe", "emb+probe"}
    T_infer : float, optional
        Inference temperature for every fit (default: each fit's own ``T``; see :func:`ecc_infer`).
    alpha : float

    Returns
    -------
    ECCEvaluation

    Raises
    ------
    ValueError
        No or several global fits, fits on different models, duplicate names, a test item without
        embedding, an unknown model in ``test_pairs``, or no test query with two comparisons.

    Examples
    --------
    >>> sim = ecc_simulate(n_queries=600, n_models=6, K=3, seed=1)
    >>> train = sim.pairs[sim.pairs["item"] < "q00500"]
    >>> test = sim.pairs[sim.pairs["item"] >= "q00500"]
    >>> fits = [ecc_fit(train, sim.embeddings, K=1), ecc_fit(train, sim.embeddings, K=3, T=1.0, seed=0)]
    >>> ev = ecc_evaluate(fits, test, sim.embeddings, seed=0)
    >>> ev.table[["method", "mode"]].values.tolist()
    [['global BT', 'none'], ['ECC', 'emb'], ['ECC', 'probe'], ['ECC', 'emb+probe']]
    >>> bool(ev.gain("ECC", "emb+probe").estimate > 0)
    True
    """
    check_alpha(alpha)
    named = dict(fits) if isinstance(fits, Mapping) else {}
    if not isinstance(fits, Mapping):
        for f in fits:
            if f.label in named:
                raise EvalkitInputError("fits", f"two fits are both labelled {f.label!r}; pass a mapping name -> fit")
            named[f.label] = f
    globals_ = [n for n, f in named.items() if f.K == 1]
    if len(globals_) != 1:
        raise EvalkitInputError("fits", f"give exactly one global BT fit (K=1) as the reference; found {len(globals_)}")
    ref = named[globals_[0]]
    for n, f in named.items():
        if not np.array_equal(f.models, ref.models):
            raise EvalkitInputError(
                "fits", f"fit {n!r} has other models than the global fit; fit all on the same models")
    for m in modes:
        if m not in MODES:
            raise EvalkitInputError("modes", f"unknown mode {m!r}; modes are {list(MODES)}")
    probes, held = _split_probes(test_pairs, as_rng(seed))
    if held.empty:
        raise EvalkitInputError(
            "test", "no test query has two comparisons: one is needed as the probe and one to evaluate")
    items = np.unique(held["item"].astype(str).to_numpy())
    pos = pd.Index(embeddings.index.astype(str)).get_indexer(pd.Index(items))
    if (pos < 0).any():
        raise EvalkitInputError(
            "embeddings", f"{int((pos < 0).sum())} test queries have no embedding (first: {items[pos < 0][0]!r})")
    emb = embeddings.iloc[pos]
    query = pd.Index(items).get_indexer(pd.Index(held["item"].astype(str))).astype(np.intp)
    n_q = items.size
    w, lo = held["winner"].astype(str).to_numpy(), held["loser"].astype(str).to_numpy()
    iw, il = _model_index(ref, w), _model_index(ref, lo)
    nll_global = -log_expit(ref.theta[0, iw] - ref.theta[0, il])

    nll: dict[tuple[str, str], np.ndarray] = {}
    route_rows: list[dict[str, object]] = []
    Qmat: np.ndarray | None = None
    if quality is not None:
        Qdf = quality.copy()
        Qdf.index = Qdf.index.astype(str)
        Qdf.columns = Qdf.columns.astype(str)
        qpos = pd.Index(Qdf.index).get_indexer(pd.Index(items))
        if (qpos < 0).any():
            raise EvalkitInputError(
                "quality", f"quality lacks {int((qpos < 0).sum())} test queries (first: {items[qpos < 0][0]!r})")
        cpos = pd.Index(Qdf.columns).get_indexer(pd.Index(ref.models.astype(str)))
        if (cpos < 0).any():
            raise EvalkitInputError("quality", f"quality lacks models {list(ref.models[cpos < 0][:5])}")
        Qmat = np.nan_to_num(Qdf.to_numpy(dtype=float)[np.ix_(qpos, cpos)], nan=0.0)
    probe_items = probes[probes["item"].astype(str).isin(items)]
    for name, f in named.items():
        if f.K == 1:
            continue
        for mode in modes:
            resp = ecc_infer(f, emb, mode=mode, probes=probe_items, T=T_infer)
            p = ecc_predict(f, resp[query], w, lo)
            nll[(name, mode)] = -np.log(np.clip(p, 1e-300, None))
            if Qmat is not None:
                choice = np.argmax(ecc_scores(f, resp), axis=1)
                route_rows.append({"method": name, "mode": mode,
                                   "quality": float(Qmat[np.arange(n_q), choice].mean())})
    routing = None
    if Qmat is not None:
        best = int(np.argmax(ref.theta[0]))
        route_rows.append({"method": f"best single model ({ref.models[best]})", "mode": "none",
                           "quality": float(Qmat[:, best].mean())})
        route_rows.append({"method": "oracle", "mode": "none", "quality": float(Qmat.max(axis=1).mean())})
        routing = pd.DataFrame(route_rows)
    table = _gain_table(globals_[0], nll, nll_global, query, n_q, alpha)
    return ECCEvaluation(table, routing, nll, nll_global, query, float(alpha),
                         held[["item", "winner", "loser"]].reset_index(drop=True),
                         probe_items[["item", "winner", "loser"]].reset_index(drop=True))


# --------------------------------------------------------------------------------------------
# Simulation with planted clusters, and recovery
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ECCSimulation:
    """Queries with planted capability clusters (see :func:`ecc_simulate`).

    Attributes
    ----------
    pairs : DataFrame
        ``item, cluster, winner, loser``: ``per_query`` comparisons per query.
    embeddings : DataFrame
        Unit embeddings indexed by item id.
    clusters : (n_queries,) int array
        The planted cluster of each query (in item order ``q0000, q0001, ...``).
    theta : (K, M) float array
        The planted profiles (rows sum to zero).
    topics : (K,) int array
        The semantic topic of each cluster (clusters sharing a topic look alike in the embeddings).
    """

    pairs: pd.DataFrame
    embeddings: pd.DataFrame
    clusters: np.ndarray
    theta: np.ndarray
    topics: np.ndarray


def ecc_simulate(*, n_queries: int = 2000, n_models: int = 8, K: int = 4, dim: int = 16, per_query: int = 7,
                 n_topics: int | None = None, emb_signal: float = 1.5, spread: float = 1.5,
                 seed: int | np.random.Generator) -> ECCSimulation:
    """Simulate queries whose model rankings depend on a planted cluster.

    Each cluster ``k`` has a profile ``theta^(k) ~ N(0, spread^2)`` (centred) and a semantic topic
    ``k mod n_topics`` with a random unit direction ``mu``; a query of cluster ``k`` has the
    embedding ``normalize(emb_signal * mu + N(0, I/dim))`` and ``per_query`` comparisons between
    uniformly drawn distinct models, won with BT probabilities under ``theta^(k)``. With
    ``n_topics < K`` several capability clusters share a topic: the embeddings cannot tell them
    apart, the comparisons can (the mismatch ECC is built for) [ECC].

    Parameters
    ----------
    n_queries, n_models, K, dim, per_query : int
    n_topics : int, optional
        Number of distinct semantic topics (default ``K``).
    emb_signal : float
        Length of the topic direction before the noise; larger = embeddings more informative.
    spread : float
        SD of the planted abilities.
    seed : int or Generator

    Returns
    -------
    ECCSimulation
    """
    for name, v, lo in (("n_queries", n_queries, 1), ("n_models", n_models, 2), ("K", K, 1), ("dim", dim, 2),
                        ("per_query", per_query, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise EvalkitInputError(name, f"{name} must be an int >= {lo}, got {v!r}")
    check_positive(spread, "spread", allow_zero=True)
    check_positive(emb_signal, "emb_signal", allow_zero=True)
    n_top = K if n_topics is None else int(n_topics)
    if not 1 <= n_top <= K:
        raise EvalkitInputError("n_topics", f"n_topics must be between 1 and K={K}, got {n_topics!r}")
    rng = as_rng(seed)
    theta = rng.normal(0.0, spread, (K, n_models))
    theta -= theta.mean(axis=1, keepdims=True)
    mu = _normalize_rows(rng.normal(size=(n_top, dim)))
    topics = np.arange(K) % n_top
    z = rng.integers(0, K, n_queries)
    X = _normalize_rows(emb_signal * mu[topics[z]] + rng.normal(0.0, 1.0 / math.sqrt(dim), (n_queries, dim)))
    items = np.array([f"q{i:05d}" for i in range(n_queries)])
    models = np.array([f"m{j}" for j in range(n_models)])
    q = np.repeat(np.arange(n_queries), per_query)
    a = rng.integers(0, n_models, q.size)
    b = (a + rng.integers(1, n_models, q.size)) % n_models
    a_wins = rng.random(q.size) < expit(theta[z[q], a] - theta[z[q], b])
    pairs = pd.DataFrame({"item": items[q], "cluster": z[q].astype(str),
                          "winner": models[np.where(a_wins, a, b)], "loser": models[np.where(a_wins, b, a)]})
    emb = pd.DataFrame(X, index=pd.Index(items, name="item"), columns=[f"e{j}" for j in range(dim)])
    return ECCSimulation(pairs, emb, z, theta, topics)


def ecc_cluster_agreement(labels_true: npt.ArrayLike, labels_pred: npt.ArrayLike) -> float:
    """Adjusted Rand index between two partitions (1 = identical up to relabelling, ~0 = chance).

    Parameters
    ----------
    labels_true, labels_pred : (n,) labels

    Returns
    -------
    float

    Examples
    --------
    >>> ecc_cluster_agreement([0, 0, 1, 1], [5, 5, 2, 2])
    1.0
    """
    a, b = np.asarray(labels_true), np.asarray(labels_pred)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise EvalkitInputError(
            "labels_true", "labels_true and labels_pred must be aligned 1-D arrays of at least two labels")
    as_labels(a, a.size, "labels_true")
    as_labels(b, b.size, "labels_pred")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1))
    np.add.at(table, (ia, ib), 1.0)

    def comb2(x: np.ndarray) -> float:
        return float(np.sum(x * (x - 1) / 2.0))

    n = a.size
    sum_ij, sum_a, sum_b = comb2(table), comb2(table.sum(axis=1)), comb2(table.sum(axis=0))
    expected = sum_a * sum_b / (n * (n - 1) / 2.0)
    top = 0.5 * (sum_a + sum_b)
    if top == expected:
        return 1.0
    return float((sum_ij - expected) / (top - expected))


def ecc_profile_recovery(fit: ECCFit, clusters: npt.ArrayLike, theta_true: np.ndarray) -> np.ndarray:
    """Spearman correlation between each planted profile and the fitted one seen by its queries.

    For planted cluster ``k``, the fitted profile of its training queries is the
    responsibility-weighted mix ``mean_q sum_j r_qj theta^(j)``; its rank correlation with
    ``theta_true[k]`` measures how well the per-cluster ranking was recovered.

    Parameters
    ----------
    fit : ECCFit
    clusters : (Q,) ints
        Planted cluster of each training query, in ``fit.items`` order.
    theta_true : (K_true, M) array

    Returns
    -------
    (K_true,) float array
    """
    z = np.asarray(clusters)
    th = np.asarray(theta_true, dtype=float)
    if z.shape != (fit.items.size,):
        raise EvalkitInputError(
            "clusters", f"clusters must have one label per training query ({fit.items.size}), got {z.shape}")
    if th.ndim != 2 or th.shape[1] != fit.models.size:
        raise EvalkitInputError("theta_true", f"theta_true must be (K_true, {fit.models.size}), got {th.shape}")
    out = np.full(th.shape[0], np.nan)
    for k in range(th.shape[0]):
        members = z == k
        if members.any():
            mix = fit.resp[members].mean(axis=0) @ fit.theta
            out[k] = stats.spearmanr(mix, th[k]).statistic
    return out


# --------------------------------------------------------------------------------------------
# Figures and the widget function
# --------------------------------------------------------------------------------------------

METHOD_COLOURS: dict[str, str] = {
    "ECC": PALETTE["accent"],
    "Emb-only": PALETTE["CR2"],
    "Comp-only": PALETTE["iid"],
    "global BT": PALETTE["neutral"],
}
"""One colour per method in every ECC figure."""


def ecc_plot_gains(table: pd.DataFrame, *, ax: Axes | None = None, title: str = "",
                   ylim: tuple[float, float] | None = None) -> Axes:
    """Grouped bars of the ranking gain (%) per inference mode and method, with 95% intervals.

    Parameters
    ----------
    table : DataFrame
        ``ECCEvaluation.table`` (rows with ``mode == "none"`` are skipped).
    ax : matplotlib Axes, optional
    title : str
    ylim : (low, high), optional
        Fixed limits of the gain axis (a widget keeps them between settings); bars and interval
        ends beyond them are cut at the frame and counted in the title. Default: matplotlib's.

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    check_table(table, "table", ("mode", "method", "gain", "ci_low", "ci_high"), source="ecc_evaluate (.table)")
    t = table[table["mode"] != "none"]
    if t.empty:
        raise EvalkitInputError("table", "the table has no method evaluated in an inference mode")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 3.6))
    modes = [m for m in MODES if m in set(t["mode"])]
    methods = list(dict.fromkeys(t["method"]))
    width = 0.8 / len(methods)
    for i, name in enumerate(methods):
        sub = t[t["method"] == name].set_index("mode").reindex(modes)
        x = np.arange(len(modes)) + (i - (len(methods) - 1) / 2) * width
        err = np.vstack([sub["gain"] - sub["ci_low"], sub["ci_high"] - sub["gain"]])
        ax.bar(x, sub["gain"], width, yerr=err, capsize=3, label=name,
               color=METHOD_COLOURS.get(name, PALETTE["neutral"]))
    ax.axhline(0.0, color=PALETTE["truth"], lw=0.8)
    ax.set_xticks(np.arange(len(modes)), [{"emb": "Emb", "probe": "Probe", "emb+probe": "Emb+Probe"}[m]
                                          for m in modes])
    ax.set_xlabel("inference mode for a new query")
    ax.set_ylabel("ranking gain vs global BT (%)")
    ax.legend(loc="best")
    if ylim is not None:
        ax.set_ylim(*ylim)
        n_out = int(np.sum((t["ci_low"] < ylim[0]) | (t["ci_high"] > ylim[1])))
        if n_out:
            note = f"{n_out} intervals reach beyond the axis"
            title = f"{title}\n{note}" if title else note
    if title:
        ax.set_title(title)
    return ax


ECC_EXPLORE_YLIM: tuple[float, float] = (-25.0, 15.0)
"""Fixed gain axis (%) of :func:`ecc_explore`, so that the bars, not the axis, move between settings."""


def _model_names(*columns: pd.Series) -> np.ndarray:
    """The sorted distinct model names of some columns, as ``np.unique`` of their strings would give.

    A hash pass per column (``pd.unique``), then a sort of the few distinct names: sorting the
    strings of every comparison (hundreds of thousands) took most of an interactive refit.
    """
    names: set[str] = set()
    for col in columns:
        names.update(str(v) for v in pd.unique(col))
    return np.array(sorted(names), dtype=object)


def ecc_explore(train_pairs: pd.DataFrame, test_pairs: pd.DataFrame, embeddings: pd.DataFrame, *,
                lam: float = 3.0, T: float = 0.1, K: int = 30, per_query: int = 7, seed: int = 0,
                max_iter: int = 30, ax: Axes | None = None) -> pd.DataFrame:
    """Fit ECC with the given settings and plot its held-out gains (the notebook's widget function).

    Keeps ``per_query`` comparisons per training query (:func:`bt_pairs_sample`), fits global BT
    and ECC (:func:`ecc_fit`, at most ``max_iter`` iterations), evaluates both on ``test_pairs``
    (:func:`ecc_evaluate`) and draws :func:`ecc_plot_gains`. Sized for interactive use: on about
    650 training queries and 58 models one call takes about a second.

    Parameters
    ----------
    train_pairs, test_pairs : DataFrame
        ``item, winner, loser`` of the training and test queries.
    embeddings : DataFrame
        Unit embeddings of both, indexed by item id.
    lam, T, K, per_query, seed, max_iter
        As for :func:`ecc_fit` and :func:`bt_pairs_sample`.
    ax : matplotlib Axes, optional

    Returns
    -------
    DataFrame
        The evaluation table (global BT and ECC in each mode).
    """
    models = _model_names(train_pairs["winner"], train_pairs["loser"], test_pairs["winner"], test_pairs["loser"])
    train = bt_pairs_sample(train_pairs, per_query, seed=seed)
    n_q = train["item"].nunique()
    glob = ecc_fit(train, embeddings, K=1, models=models, scaling="sum")
    if min(K, n_q) == 1:  # K = 1 is global BT itself: every mode's gain is 0 by definition
        ev = ecc_evaluate({"global BT": glob}, test_pairs, embeddings, seed=seed)
    else:
        fit = ecc_fit(train, embeddings, K=min(K, n_q), lam=lam, T=T, seed=seed, max_iter=max_iter, models=models)
        ev = ecc_evaluate({"global BT": glob, "ECC": fit}, test_pairs, embeddings, seed=seed)
    title = f"ECC, lambda = {lam:g}, T = {T:g}, K = {K}, {per_query} comparisons/query"
    if min(K, n_q) == 1:
        import matplotlib.pyplot as plt

        axis = ax if ax is not None else plt.subplots(figsize=(6, 3.5))[1]
        axis.axhline(0.0, color=PALETTE["neutral"], lw=1)
        axis.set(title=title, ylabel="ranking gain vs global BT (%)", xticks=[], ylim=ECC_EXPLORE_YLIM)
        axis.text(0.5, 0.5, "K = 1 is global BT: every gain is 0", ha="center", va="center",
                  transform=axis.transAxes)
        return ev.table
    ecc_plot_gains(ev.table, ax=ax, title=title, ylim=ECC_EXPLORE_YLIM)
    return ev.table


# --------------------------------------------------------------------------------------------
# One call for a study: split, sample, fit ECC and the baselines, evaluate
# --------------------------------------------------------------------------------------------

_METHOD_SIGNALS: dict[str, Signals] = {"ECC": "both", "Emb-only": "emb", "Comp-only": "comp"}


@dataclass(frozen=True)
class ECCStudy:
    """The fits and held-out evaluation of one study (see :func:`ecc_study`).

    Attributes
    ----------
    fits : dict
        ``"global BT"`` and each requested method -> :class:`ECCFit`.
    evaluation : ECCEvaluation
    train, test : DataFrame
        The training comparisons (``per_query`` per query) and the test comparisons used.
    """

    fits: dict[str, ECCFit]
    evaluation: ECCEvaluation
    train: pd.DataFrame
    test: pd.DataFrame


def ecc_study(pairs: pd.DataFrame, embeddings: pd.DataFrame, *, train_items: npt.ArrayLike | None = None,
              test_items: npt.ArrayLike | None = None, test_fraction: float = 0.2, per_query: int = 7,
              test_per_query: int | None = 50, methods: Sequence[str] = ("ECC", "Emb-only", "Comp-only"),
              quality: pd.DataFrame | None = None, seed: int = 0, T_infer: float | None = None, K: int = 30,
              lam: float = 3.0, T: float = 0.1, ridge: float = 1.0, max_iter: int | None = None,
              scaling: Scaling = "mean", init: str = "kmeans++") -> ECCStudy:
    """Split queries, fit global BT, ECC and its baselines, and evaluate them on held-out queries.

    Parameters
    ----------
    pairs : DataFrame
        All comparisons (``item, winner, loser``), e.g. :func:`evalkit.bt_pairs_from_matrix` or
        :func:`evalkit.alpaca_pairs`.
    embeddings : DataFrame
        Unit embeddings indexed by item id.
    train_items, test_items : arrays of item ids, optional
        The split (for out-of-distribution transfer, train on one group and test on another).
        Default: a random ``test_fraction`` of the queries is held out (seeded).
    test_fraction : float
    per_query : int
        Comparisons kept per training query (7 in the paper).
    test_per_query : int or None
        At most this many comparisons per test query (one becomes the probe); None keeps all.
    methods : sequence of {"ECC", "Emb-only", "Comp-only"}
    quality : DataFrame, optional
        Items x models, for routing (see :func:`ecc_evaluate`).
    seed : int
        Seeds the split, the sampling, the fits and the probes.
    T_infer : float, optional
        Inference temperature (see :func:`ecc_infer`).
    K, lam, T, ridge, max_iter, scaling, init
        As for :func:`ecc_fit`. The global fit uses ``K = 1``, the same ridge and unit weights per
        comparison (``scaling="sum"``), as the authors' global ranker.

    Returns
    -------
    ECCStudy

    Examples
    --------
    >>> sim = ecc_simulate(n_queries=500, n_models=6, K=3, n_topics=2, seed=2)
    >>> study = ecc_study(sim.pairs, sim.embeddings, K=3, T=1.0, seed=0)
    >>> sorted(study.fits)
    ['Comp-only', 'ECC', 'Emb-only', 'global BT']
    """
    unknown = sorted(set(methods) - set(_METHOD_SIGNALS))
    if unknown:
        raise EvalkitInputError("methods", f"unknown methods {unknown}; choose among {list(_METHOD_SIGNALS)}")
    item = pairs["item"].astype(str)
    rng = as_rng(seed)
    if train_items is None and test_items is None:
        if not 0 < test_fraction < 1:
            raise EvalkitInputError("test_fraction", f"test_fraction must be in (0, 1), got {test_fraction!r}")
        all_items = np.unique(item.to_numpy())
        test_set = set(rng.choice(all_items, size=max(1, int(round(test_fraction * all_items.size))), replace=False))
        is_test = item.isin(test_set).to_numpy()
        is_train = ~is_test
    else:
        if train_items is None or test_items is None:
            raise EvalkitInputError("train_items", "give both train_items and test_items, or neither")
        tr = set(np.asarray(train_items).astype(str))
        te = set(np.asarray(test_items).astype(str))
        if tr & te:
            raise EvalkitInputError("test_items", f"{len(tr & te)} items are both training and test items")
        is_train, is_test = item.isin(tr).to_numpy(), item.isin(te).to_numpy()
    models = _model_names(pairs["winner"], pairs["loser"])
    train = bt_pairs_sample(pairs[is_train], per_query, seed=rng)
    test = pairs[is_test] if test_per_query is None else bt_pairs_sample(pairs[is_test], test_per_query, seed=rng)
    # global BT on unit comparison weights (the authors' global ranker: LogisticRegression(C=1))
    fits = {"global BT": ecc_fit(train, embeddings, K=1, ridge=ridge, models=models, scaling="sum")}
    for name in methods:
        fits[name] = ecc_fit(train, embeddings, K=K, lam=lam, T=T, ridge=ridge, signals=_METHOD_SIGNALS[name],
                             models=models, seed=seed, max_iter=max_iter, scaling=scaling, init=init)
    ev = ecc_evaluate(fits, test, embeddings, seed=seed, quality=quality, T_infer=T_infer)
    return ECCStudy(fits, ev, train, test)
