"""Bradley-Terry abilities from pairwise comparisons, with standard errors [ECC].

Model ``j`` beats model ``i`` with probability ``sigmoid(theta_j - theta_i)``. :func:`bt_fit`
maximises the (weighted) log-likelihood minus an explicit ridge penalty ``ridge/2 ||theta||^2``
by Newton's method on the small ``M x M`` system: the comparisons are first summed into a matrix
of weighted win counts, so one iteration costs ``O(M^2 + M^3)`` whatever the number of
comparisons. Abilities are identified by the sum-to-zero constraint ``sum_j theta_j = 0`` (with
``ridge > 0`` the penalised optimum satisfies it by itself, because the likelihood only sees
differences). Standard errors come from the observed information at the optimum.

Comparisons come as two aligned label arrays ``winner`` and ``loser``; tables of comparisons
(one row per comparison: ``item, cluster, winner, loser``) come from
:func:`bt_pairs_from_matrix` (0/1 outcome matrices) or :func:`evalkit.alpaca_pairs` (AlpacaEval
judgments against a common reference).

The same solver, batched over clusters, fits ECC's per-cluster profiles (:mod:`evalkit.ecc`).

Paper: [ECC] "Capturing LLM Capabilities via Evidence-Calibrated Query Clustering",
arXiv 2605.17110 (NeurIPS 2026); Bradley & Terry (1952), Biometrika 39, 324-345.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, log_expit

from ._checks import as_labels, check_alpha, check_int, check_positive, check_seed, check_unique, warn
from .clustered import Estimate, interval_t
from .data import EvalMatrix
from .errors import ConvergenceWarning, EvalkitInputError
from .types import as_rng

__all__ = [
    "BTFit",
    "bt_fit",
    "bt_encode",
    "bt_pairs_from_matrix",
    "bt_pairs_sample",
    "bt_simulate",
]


# --------------------------------------------------------------------------------------------
# The solver (private, shared with ECC)
# --------------------------------------------------------------------------------------------


_MAX_WEIGHT = 1e15  # bt_fit: frequency weights above this many comparisons are refused

def _objective(W: np.ndarray, theta: np.ndarray, ridge: float) -> np.ndarray:
    """Penalised negative log-likelihood per profile: ``(K,)`` for ``W (K, M, M)``, ``theta (K, M)``."""
    # Over pairs i < j: W_ij softplus(-D) + W_ji softplus(D) = (W_ij + W_ji) softplus(-D) + W_ji D.
    iu, ju = np.triu_indices(theta.shape[1], k=1)
    D = theta[:, iu] - theta[:, ju]  # theta_i - theta_j
    Wij, Wji = W[:, iu, ju], W[:, ju, iu]
    nll = np.einsum("kp,kp->k", Wij + Wji, -log_expit(D)) + np.einsum("kp,kp->k", Wji, D)
    return nll + 0.5 * ridge * np.einsum("km,km->k", theta, theta)


def _grad_hess(W: np.ndarray, theta: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray]:
    N = W + np.transpose(W, (0, 2, 1))
    P = expit(theta[:, :, None] - theta[:, None, :])  # P[k, i, j] = P(i beats j)
    g = np.einsum("kij,kij->ki", N, P) - W.sum(axis=2) + ridge * theta
    C = N * P * (1.0 - P)
    H = -C
    M = theta.shape[1]
    diag = np.arange(M)
    H[:, diag, diag] = C.sum(axis=2) + ridge
    return g, H


def _newton(W: np.ndarray, theta0: np.ndarray, ridge: float, *, tol: float = 1e-10,
            max_iter: int = 100) -> tuple[np.ndarray, int, bool]:
    """Damped Newton for ``K`` independent weighted BT fits at once.

    Parameters
    ----------
    W : (K, M, M) array
        ``W[k, i, j]`` = total weight of comparisons in which ``i`` beat ``j``, for profile ``k``.
    theta0 : (K, M) array
        Start (centred here).
    ridge : float
        Penalty ``ridge/2 ||theta||^2``; 0 needs every profile's comparison graph to be strongly
        connected (checked by :func:`bt_fit`, not here).

    Returns
    -------
    theta : (K, M) array, n_iter : int, converged : bool
        ``converged`` when every profile's Newton step is below ``tol`` (max-norm).
    """
    K, M = theta0.shape
    theta = theta0 - theta0.mean(axis=1, keepdims=True)
    f = _objective(W, theta, ridge)
    centre = np.full((M, M), 1.0 / M) if ridge == 0 else 0.0
    for it in range(1, max_iter + 1):
        g, H = _grad_hess(W, theta, ridge)
        step = -np.linalg.solve(H + centre, g[:, :, None])[:, :, 0]
        t = np.ones(K)
        for _ in range(40):  # backtracking (Armijo) per profile
            cand = theta + t[:, None] * step
            fc = _objective(W, cand, ridge)
            ok = fc <= f + 1e-4 * t * np.einsum("km,km->k", g, step) + 1e-12 * np.abs(f)
            if ok.all():
                break
            t = np.where(ok, t, 0.5 * t)
        theta, f = cand, fc
        if np.max(np.abs(t[:, None] * step)) < tol:
            return theta, it, True
    return theta, max_iter, False


# --------------------------------------------------------------------------------------------
# The public fit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BTFit:
    """A fitted Bradley-Terry model.

    Attributes
    ----------
    models : (M,) array
        Model ids, in the order of ``theta``.
    theta : (M,) float array
        Abilities, summing to zero. ``P(j beats i) = sigmoid(theta_j - theta_i)``.
    cov : (M, M) float array
        Covariance of ``theta`` from the observed information ``H`` at the optimum: ``H^{-1}``
        with a ridge (the Laplace approximation under the Gaussian prior the ridge implies), the
        Moore-Penrose inverse ``H^+`` without (the covariance under the sum-to-zero constraint).
    ridge : float
        The penalty strength used.
    n_comparisons : int
        Rows used (ties count once).
    total_weight : float
        Sum of the comparison weights.
    nll : float
        Penalised negative log-likelihood at the optimum (``ridge/2 ||theta||^2`` included).
    n_iter : int
    converged : bool
    """

    models: np.ndarray
    theta: np.ndarray
    cov: np.ndarray
    ridge: float
    n_comparisons: int
    total_weight: float
    nll: float
    n_iter: int
    converged: bool

    @property
    def se(self) -> np.ndarray:
        """Standard errors of ``theta`` (square roots of ``diag(cov)``)."""
        return np.sqrt(np.clip(np.diag(self.cov), 0.0, None))

    def index(self, ids: Any) -> np.ndarray:
        """Positions of model ids in :attr:`models`; an unknown id raises ``ValueError``."""
        return _encode(ids, self.models, "model ids")

    def prob(self, a: Any, b: Any) -> np.ndarray:
        """``P(a beats b)`` for aligned arrays (or scalars) of model ids."""
        ia, ib = self.index(np.atleast_1d(a)), self.index(np.atleast_1d(b))
        return np.asarray(expit(self.theta[ia] - self.theta[ib]))

    def win_matrix(self) -> np.ndarray:
        """``(M, M)`` matrix of ``P(row beats column)`` (0.5 on the diagonal)."""
        return np.asarray(expit(self.theta[:, None] - self.theta[None, :]))

    def nll_mean(self, winner: npt.ArrayLike, loser: npt.ArrayLike) -> float:
        """Mean negative log-likelihood of held-out comparisons ``winner`` beat ``loser`` (nats)."""
        iw, il = self.index(winner), self.index(loser)
        return float(-np.mean(log_expit(self.theta[iw] - self.theta[il])))

    def difference(self, a: Any, b: Any, alpha: float = 0.05) -> Estimate:
        """``theta_a - theta_b`` with a Wald interval from :attr:`cov`."""
        check_alpha(alpha)
        i, j = self.index([a, b])
        est = float(self.theta[i] - self.theta[j])
        se = math.sqrt(max(float(self.cov[i, i] + self.cov[j, j] - 2 * self.cov[i, j]), 0.0))
        lo, hi = interval_t(est, se, math.inf, alpha)
        return Estimate(est, se, lo, hi, math.inf, "BT difference, observed information", self.n_comparisons)

    def to_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """One row per model, best first: ``model, theta, se, ci_low, ci_high`` (Wald intervals)."""
        check_alpha(alpha)
        z = float(interval_t(0.0, 1.0, math.inf, alpha)[1])
        se = self.se
        df = pd.DataFrame({"model": self.models, "theta": self.theta, "se": se,
                           "ci_low": self.theta - z * se, "ci_high": self.theta + z * se})
        return df.sort_values("theta", ascending=False, kind="stable").reset_index(drop=True)


def _encode(ids: Any, models: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise EvalkitInputError(what, f"{what} must be one-dimensional, got shape {arr.shape}")
    idx = pd.Index(models).get_indexer(pd.Index(arr))
    if (idx < 0).any():
        unknown = sorted({str(v) for v in arr[idx < 0]})
        raise EvalkitInputError(what, f"unknown {what} {unknown[:5]}{' ...' if len(unknown) > 5 else ''}: "
                         f"not among the {len(models)} models {list(models)[:8]}{' ...' if len(models) > 8 else ''}")
    return idx.astype(np.intp)


def bt_encode(winner: npt.ArrayLike, loser: npt.ArrayLike,
              models: npt.ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check aligned ``winner``/``loser`` ids and turn them into integer codes.

    Parameters
    ----------
    winner, loser : (n,) arrays of model ids
    models : (M,) array of ids, optional
        The models, in the order wanted; default: the sorted union of ``winner`` and ``loser``.

    Returns
    -------
    iw, il : (n,) int arrays
        Positions in ``models``.
    models : (M,) array

    Raises
    ------
    ValueError
        Misaligned or empty arrays, an id not in ``models``, duplicated ``models``, or a row in
        which a model "beats" itself.
    """
    w, lo = np.asarray(winner), np.asarray(loser)
    if w.ndim != 1 or lo.ndim != 1 or w.shape != lo.shape:
        raise EvalkitInputError(
            "winner", f"winner and loser must be aligned 1-D arrays, got shapes {w.shape} and {lo.shape}")
    if w.size == 0:
        raise EvalkitInputError("winner", "no comparisons: winner and loser are empty")
    as_labels(np.concatenate([w.astype(object), lo.astype(object)]), 2 * w.size, "winner")  # one id type
    if models is None:
        mods = np.sort(pd.unique(np.concatenate([w, lo])))  # hashing, then sort the few uniques
    else:
        mods = np.asarray(models)
        if mods.ndim != 1 or mods.size < 2:
            raise EvalkitInputError("models", f"models must list at least two model ids, got shape {mods.shape}")
        if pd.Index(mods).has_duplicates:
            raise EvalkitInputError("models", "models holds duplicated ids")
    iw = _encode(w, mods, "winner ids")
    il = _encode(lo, mods, "loser ids")
    same = np.flatnonzero(iw == il)
    if same.size:
        raise EvalkitInputError("winner", f"{same.size} comparisons have the same model as winner and loser "
                         f"(first at row {same[0]}: {w[same[0]]!r}); drop them")
    return iw, il, mods


def _win_counts(iw: np.ndarray, il: np.ndarray, weights: np.ndarray, M: int) -> np.ndarray:
    return np.bincount(iw * M + il, weights=weights, minlength=M * M).reshape(M, M)


def _check_ml_exists(W: np.ndarray, models: np.ndarray) -> None:
    wins, losses = W.sum(axis=1), W.sum(axis=0)
    for what, bad in (("never win", wins <= 0), ("never lose", losses <= 0)):
        if bad.any():
            names = [str(m) for m in models[bad]]
            raise EvalkitInputError("models",
                f"model(s) {names[:5]} {what} (or have no comparisons): their maximum-likelihood ability is "
                f"{'-' if what == 'never win' else '+'}infinity. Pass ridge > 0 (e.g. ridge=0.01) for finite, "
                "shrunken abilities, or drop these models"
            )
    n_comp, _ = connected_components(sparse.csr_matrix(W > 0), directed=True, connection="strong")
    if n_comp > 1:
        raise EvalkitInputError("pairs",
            f"the comparison graph splits into {n_comp} groups with no win in one direction between some of "
            "them, so the maximum-likelihood abilities do not exist (one group is infinitely better). Pass "
            "ridge > 0 (e.g. ridge=0.01), or fit each group separately"
        )


def bt_fit(winner: npt.ArrayLike, loser: npt.ArrayLike, *, models: npt.ArrayLike | None = None,
           weights: npt.ArrayLike | None = None, ties: npt.ArrayLike | None = None, ridge: float = 0.0,
           tol: float = 1e-10, max_iter: int = 100) -> BTFit:
    """Fit a Bradley-Terry model to pairwise comparisons by Newton's method.

    Maximises ``sum_c w_c log sigmoid(theta_winner(c) - theta_loser(c)) - ridge/2 ||theta||^2``
    under ``sum_j theta_j = 0``. The comparisons are summed into an ``M x M`` matrix of weighted
    win counts once, then each Newton step solves an ``M x M`` system (with a backtracking line
    search), so the cost hardly depends on the number of comparisons [ECC].

    ``ridge`` is exactly choix's ``opt_pairwise(alpha=ridge / 2)``: choix's code adds
    ``alpha * sum(theta**2)`` to the negative log-likelihood (a Gaussian prior of variance
    ``1 / (2 alpha)``, although its documentation speaks of variance ``1 / alpha``). choix's
    ``ilsr_pairwise(alpha)`` is a different regulariser (``alpha`` is added to every transition
    rate of the LSR Markov chain) that matches no ridge; it agrees with ``ridge=0`` at ``alpha=0``.
    ``ridge`` is honoured as given, never replaced by a default.

    Parameters
    ----------
    winner, loser : (n,) arrays of model ids
        Comparison ``c``: ``winner[c]`` beat ``loser[c]``.
    models : (M,) array of ids, optional
        All models, in the order wanted (a model with no comparison needs ``ridge > 0``).
        Default: the sorted union of ``winner`` and ``loser``.
    weights : (n,) array, optional
        Non-negative frequency weights (a weight of 2 counts as two comparisons; the standard
        errors assume that reading). Default 1.
    ties : (n,) bool array, optional
        Rows that are ties: a tie counts as half a win for each side (weight ``w/2`` in each
        direction), which keeps the plain BT likelihood. ``winner``/``loser`` order is then
        irrelevant. Default: no ties (evalkit's comparison tables drop ties).
    ridge : float
        Penalty strength (``>= 0``). ``0`` is maximum likelihood, which exists only when the
        comparison graph is strongly connected (every model wins and loses, and no group of
        models always beats the rest); otherwise a ``ValueError`` says so.
    tol : float
        Convergence: largest Newton step below ``tol``.
    max_iter : int

    Returns
    -------
    BTFit

    Raises
    ------
    ValueError
        Misaligned or empty input, unknown model ids, a model beating itself, negative or NaN
        weights, a negative ridge, or (with ``ridge = 0``) data for which the maximum-likelihood
        abilities do not exist (for example a model that never wins).

    Examples
    --------
    >>> fit = bt_fit(["a", "a", "b", "c", "a", "c"], ["b", "c", "c", "a", "b", "b"])
    >>> fit.models.tolist(), [round(float(t), 3) for t in fit.theta]
    (['a', 'b', 'c'], [0.756, -0.756, -0.0])
    >>> round(float(fit.prob("a", "b")[0]), 3)
    0.819
    """
    iw, il, mods = bt_encode(winner, loser, models)
    n = iw.size
    if weights is None:
        w = np.ones(n)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (n,):
            raise EvalkitInputError("weights", f"weights must have one entry per comparison ({n}), got shape {w.shape}")
        if not np.isfinite(w).all() or (w < 0).any():
            raise EvalkitInputError("weights", "weights must be finite and non-negative")
        if w.sum() <= 0:
            raise EvalkitInputError("weights", "all weights are zero: no comparison carries information")
        if w.max() > _MAX_WEIGHT:
            raise EvalkitInputError("weights", f"weights are frequency weights (a weight of 2 counts as two "
                                               f"comparisons); the largest is {w.max():.3g}, above {_MAX_WEIGHT:.0e} "
                                               f"comparisons, where the Newton steps lose all precision: rescale them")
    ridge = check_positive(ridge, "ridge", allow_zero=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    M = mods.size
    if ties is None:
        W = _win_counts(iw, il, w, M)
    else:
        tie = np.asarray(ties)
        if tie.shape != (n,) or tie.dtype != bool:
            raise EvalkitInputError("ties", f"ties must be a bool array with one entry per comparison ({n})")
        wd = np.where(tie, 0.5 * w, w)
        W = _win_counts(iw, il, wd, M) + _win_counts(il[tie], iw[tie], wd[tie], M)
    if ridge == 0:
        _check_ml_exists(W, mods)
    theta, n_iter, conv = _newton(W[None], np.zeros((1, M)), float(ridge), tol=tol, max_iter=max_iter)
    _, H = _grad_hess(W[None], theta, float(ridge))
    cov = np.linalg.inv(H[0]) if ridge > 0 else np.linalg.pinv(H[0], hermitian=True)
    nll = float(_objective(W[None], theta, float(ridge))[0])
    if not conv:
        warn(f"bt_fit: Newton's method did not converge in max_iter={max_iter} iterations (tol {tol:g}); the "
             "strengths are not the maximum-likelihood ones; raise max_iter", stacklevel=3,
             category=ConvergenceWarning)
    return BTFit(mods, theta[0], cov, float(ridge), n, float(w.sum()), nll, n_iter, conv)


# --------------------------------------------------------------------------------------------
# Comparisons from the data we have
# --------------------------------------------------------------------------------------------


def bt_pairs_from_matrix(Y: EvalMatrix | npt.ArrayLike, *, models: npt.ArrayLike | None = None,
                         items: npt.ArrayLike | None = None,
                         clusters: npt.ArrayLike | None = None) -> pd.DataFrame:
    """Pairwise comparisons from a 0/1 outcome matrix: on an item, right beats wrong.

    For every item and every pair of models observed on it, the model that answered correctly
    beats the one that did not. **Both right or both wrong gives no comparison** (it says nothing
    about which model is better on that item), and a missing outcome (NaN, e.g. a parse failure)
    gives none either. This is the convention :func:`evalkit.alpaca_pairs` uses for ties.

    Parameters
    ----------
    Y : EvalMatrix or (n_models, n_items) array
        0/1 outcomes, NaN where unobserved. An :class:`~evalkit.EvalMatrix` brings its model,
        item and cluster ids.
    models, items, clusters : arrays, optional
        Ids for a bare array (default ``0..n-1`` and a single cluster ``"all"``).

    Returns
    -------
    DataFrame
        Columns ``item, cluster, winner, loser`` (str), one row per decisive pair, sorted by item
        (the column order of :func:`evalkit.alpaca_pairs`).

    Raises
    ------
    ValueError
        Values other than 0, 1 and NaN, or ids that do not match the matrix shape.
    """
    if isinstance(Y, EvalMatrix):
        A = np.asarray(Y.Y, dtype=float)
        models = Y.models if models is None else models
        items = Y.items if items is None else items
        clusters = Y.clusters if clusters is None else clusters
    else:
        A = np.asarray(Y, dtype=float)
    if A.ndim != 2:
        raise EvalkitInputError("Y", f"Y must be (n_models, n_items), got shape {A.shape}")
    obs = A[~np.isnan(A)]
    if ((obs != 0) & (obs != 1)).any():
        raise EvalkitInputError("Y", "Y must hold 0/1 outcomes (NaN where unobserved)")
    n_models, n_items = A.shape
    mods = np.arange(n_models).astype(str) if models is None else np.asarray(models).astype(str)
    its = np.arange(n_items).astype(str) if items is None else np.asarray(items).astype(str)
    clu = np.full(n_items, "all") if clusters is None else np.asarray(clusters).astype(str)
    if clusters is not None and pd.isna(pd.Series(np.asarray(clusters, dtype=object).ravel())).any():
        raise EvalkitInputError("clusters", "clusters contain missing (NaN or None) labels; give every item a cluster")
    if models is not None:
        check_unique(models, "models")
    if items is not None:
        check_unique(items, "items")
    if mods.shape != (n_models,) or its.shape != (n_items,) or clu.shape != (n_items,):
        raise EvalkitInputError("Y", f"ids do not match Y's shape {A.shape}: {mods.shape} models, {its.shape} items, "
                         f"{clu.shape} clusters")
    right = A == 1
    wrong = A == 0
    a, b = np.triu_indices(n_models, k=1)
    rows_w: list[np.ndarray] = []
    rows_l: list[np.ndarray] = []
    rows_i: list[np.ndarray] = []
    for start in range(0, a.size, 64):  # chunks of model pairs keep memory at 64 x n_items
        pa, pb = a[start:start + 64], b[start:start + 64]
        a_wins = right[pa] & wrong[pb]
        b_wins = right[pb] & wrong[pa]
        for mask, win, lose in ((a_wins, pa, pb), (b_wins, pb, pa)):
            p, i = np.nonzero(mask)
            rows_w.append(win[p])
            rows_l.append(lose[p])
            rows_i.append(i)
    iw, il, ii = (np.concatenate(r) for r in (rows_w, rows_l, rows_i))
    order = np.lexsort((il, iw, ii))
    iw, il, ii = iw[order], il[order], ii[order]
    return pd.DataFrame({"item": its[ii], "cluster": clu[ii], "winner": mods[iw], "loser": mods[il]})


def bt_pairs_sample(pairs: pd.DataFrame, per_item: int, *, seed: int | np.random.Generator) -> pd.DataFrame:
    """Keep at most ``per_item`` comparisons per item, drawn at random without replacement.

    ECC trains on a few comparisons per query (7 by default) [ECC]; this draws them from all
    decisive pairs of a comparison table. Items with fewer comparisons keep them all.

    Parameters
    ----------
    pairs : DataFrame
        A comparison table with an ``item`` column.
    per_item : int
    seed : int or Generator

    Returns
    -------
    DataFrame
        The kept rows, in their original order.
    """
    if "item" not in pairs.columns:
        raise EvalkitInputError("pairs", "pairs must have an 'item' column (see bt_pairs_from_matrix, alpaca_pairs)")
    if isinstance(per_item, bool) or not isinstance(per_item, (int, np.integer)) or per_item < 1:
        raise EvalkitInputError("per_item", f"per_item must be a positive int, got {per_item!r}")
    if pairs["item"].isna().any():
        raise EvalkitInputError(
            "pairs", f"pairs['item'] has {int(pairs['item'].isna().sum())} missing ids; those rows would vanish")
    rng = as_rng(seed)
    key = rng.random(len(pairs))
    rank = pd.Series(key, index=pairs.index).groupby(pairs["item"].to_numpy(), sort=False).rank(method="first")
    return pairs[(rank <= per_item).to_numpy()]


def bt_simulate(theta: npt.ArrayLike, n_comparisons: int, *, seed: int | np.random.Generator,
                models: npt.ArrayLike | None = None) -> pd.DataFrame:
    """Draw comparisons from a Bradley-Terry model (pairs uniformly at random).

    Parameters
    ----------
    theta : (M,) array
        True abilities.
    n_comparisons : int
    seed : int or Generator
    models : (M,) ids, optional
        Default ``"m0", "m1", ...``.

    Returns
    -------
    DataFrame
        Columns ``winner, loser``.
    """
    th = np.asarray(theta, dtype=float)
    if th.ndim != 1 or th.size < 2 or not np.isfinite(th).all():
        raise EvalkitInputError("theta", "theta must be a finite 1-D array of at least two abilities")
    n_comparisons = check_int(n_comparisons, "n_comparisons", minimum=1)
    check_seed(seed)
    rng = as_rng(seed)
    M = th.size
    mods = np.array([f"m{j}" for j in range(M)]) if models is None else np.asarray(models)
    a = rng.integers(0, M, n_comparisons)
    b = (a + rng.integers(1, M, n_comparisons)) % M
    a_wins = rng.random(n_comparisons) < expit(th[a] - th[b])
    return pd.DataFrame({"winner": mods[np.where(a_wins, a, b)], "loser": mods[np.where(a_wins, b, a)]})
