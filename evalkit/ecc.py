"""ECC: evidence-calibrated query clustering with Bradley-Terry ability profiles [ECC].

Queries are grouped jointly by what they are about (a unit embedding ``x_q``) and by how models
fare on them (a few pairwise comparisons per query). Each of ``K`` clusters has a unit semantic
centre ``c_k`` and a Bradley-Terry ability profile ``theta^(k)`` over the ``M`` models; query ``q``
has soft responsibilities ``r_q`` over the clusters. The loss of a query in a cluster is

    l(q, k) = l_comp(q; theta^(k)) - lambda * x_q' c_k,

with ``l_comp`` the BT negative log-likelihood of the query's comparisons, and the fit minimises

    L = sum_q sum_k r_qk l(q, k) + T sum_q sum_k r_qk log r_qk + ridge/2 sum_k ||theta^(k)||^2

by alternating closed-form responsibilities ``r_qk = softmax_k(-l(q, k) / T)``, centres
``c_k = normalize(sum_q r_qk x_q)`` and weighted BT fits (:func:`evalkit.bt_fit`'s solver).

The module also holds the local text embeddings ECC reads (TF-IDF + truncated SVD, no model
download): :func:`ecc_embed_texts` and :func:`ecc_embeddings_build` compute them,
``scripts/build_embeddings.py`` writes them to ``data/embeddings/`` and
:func:`ecc_embeddings_load` reads them through the data registry.

Paper: [ECC] "Capturing LLM Capabilities via Evidence-Calibrated Query Clustering",
arXiv 2605.17110 (NeurIPS 2026).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.linalg import svds

__all__ = [
    "ECC_TEXT_FIELDS",
    "ecc_embed_texts",
    "ecc_embeddings_build",
    "ecc_embeddings_load",
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
        raise ValueError(
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
        Unit rows (a text with no kept term gets a zero row).
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
        raise ValueError(f"need at least two texts to embed, got {len(texts)}")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ValueError(f"texts must be strings; entry {bad[0]} is {type(texts[bad[0]]).__name__} "
                         f"({len(bad)} non-strings in all; fill missing texts with '' first)")
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    A, vocab = _tfidf(texts, int(min_df), float(max_df))
    if dim >= min(A.shape):
        raise ValueError(f"dim={dim} must be below min(n_texts, n_terms) = {min(A.shape)}")
    v0 = np.full(min(A.shape), 1.0 / np.sqrt(min(A.shape)))
    U, s, Vt = svds(A, k=int(dim), v0=v0, solver="arpack", random_state=0)
    order = np.argsort(-s, kind="stable")
    U, s, Vt = U[:, order], s[order], Vt[order]
    sign = np.sign(Vt[np.arange(dim), np.argmax(np.abs(Vt), axis=1)])
    X = U * (s * sign)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)
    return X, s


def ecc_embeddings_build(name: str, dim: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Embed a dataset's item texts (the computation behind ``data/embeddings/<name>.npz``).

    Reads the texts through :func:`evalkit.dataset_items` (the columns :data:`ECC_TEXT_FIELDS`,
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
    from .datasets import dataset_items

    if name not in ECC_TEXT_FIELDS:
        raise ValueError(f"no text fields known for {name!r}; embeddable datasets: {sorted(ECC_TEXT_FIELDS)}")
    items = dataset_items(name)
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
        raise ValueError(f"no embeddings for {name!r}; available: {sorted(ECC_TEXT_FIELDS)}")
    z = _read_npz("embeddings", f"{name}.npz")
    X = z["X"].astype(np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)  # float16 storage: renormalise
    return pd.DataFrame(X, index=pd.Index(z["item"].astype(str), name="item"),
                        columns=[f"e{j}" for j in range(X.shape[1])])
