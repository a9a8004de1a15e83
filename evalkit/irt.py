"""Two-parameter item response theory (2PL) at leaderboard scale ([CBMM]).

The model: model ``i`` answers item ``j`` correctly with probability
``sigmoid((theta_i * a_j + b_j) / sigma)``, with ability ``theta`` (one per model), discrimination
``a >= 0`` and easiness ``b`` (one per item), and a fixed temperature ``sigma``. The loss is the
binary cross-entropy over the observed entries; unobserved entries are ``NaN`` in ``Y``.

Two fitters minimise the *same* objective (:func:`irt_objective`, the mean cross-entropy per
observed entry) and return the same :class:`IRTFit`, with ``theta`` normalised to mean 0 and
variance 1 (population variance) so that their parameters are directly comparable:

* :func:`irt_fit` -- constrained block majorization-minimization (cBMM), the source's method;
* :func:`irt_fit_lbfgs` -- joint maximum likelihood by scipy's L-BFGS-B with analytic gradients.

How cBMM works here
-------------------
The logistic loss of an entry has curvature at most ``1 / (4 sigma^2)``, so around the current
``X~`` the loss is majorised by a quadratic whose minimiser is ``Y~ = X~ - 4 sigma (p - y)`` on
observed entries and ``Y~ = X~`` on unobserved ones. Each block update is then a least-squares fit
of ``theta a' + 1 b'`` to ``Y~``. Because ``theta`` is kept at mean 0 and variance 1, the
2-variable problem of each item is separable and its non-negative least squares solution is
closed form (clip ``a_j`` at 0). Writing ``R = (p - y)`` on observed entries (0 elsewhere)::

    a <- max(0, a - 4 sigma * theta' R / n_models)       b <- b - 4 sigma * 1' R / n_models
    theta <- argmin of the same surrogate with the new (a, b)   then re-normalise theta

The loss is majorised **once per iteration**: one pass over the data computes the objective and
``R`` (stored as one float32 matrix), and both blocks are minimised against that same surrogate
(three matrix-vector products with ``R``). Each block lowers the surrogate, which touches the
objective at ``X~``, so every iteration is an MM step and the objective never increases. The
data are kept as int8 (``+1`` correct, ``-1`` wrong, ``0`` unobserved); extra memory is about
1.25 float32 matrices. By default (``accelerate=True``) a Nesterov momentum point is tried after
each MM step and kept only if its objective is not higher (else the plain MM point is taken and the
momentum restarts), so the history stays monotone. An optional ``ridge`` penalises the item
parameters for quasi-separated data.

Convergence
-----------
A small relative change of the objective does not mean the parameters have arrived: the MM
map crawls where its curvature bound ``1/4`` is loose (items with extreme probabilities), and
at a relative change of 1e-7 abilities could still sit 0.2-0.3 standard errors from the optimum.
So a fit is converged when the *score statistic* is below ``gtol`` (0.01 by default): for every
ability ``|g_i| / sqrt(I_i)`` and for every item ``sqrt(g_j' I_j^-1 g_j)``, the Newton step of
each parameter block measured in its own standard errors. Once the objective has flattened, the
fit checks the statistic and takes safeguarded block-Newton steps (exact per ability and per
item given the other block; kept only if the objective does not rise), which converge in a few
iterations where the MM map would need hundreds. Items whose log-odds pass +-30 (quasi-
separation, no finite optimum) are left out of the statistic; a fit whose statistic stops
improving ends with ``converged=False`` and a warning rather than running to ``max_iter``.

Determinism
-----------
Every pass over the data runs over row chunks and row blocks fixed by the matrix shape, and
adds the partial sums in block order; threads (``n_jobs``) only decide how many blocks run at
once. Results are therefore bit-identical for any ``n_jobs`` and any number of cores.

Degenerate rows and columns
---------------------------
Items that everyone answered correctly (or wrongly), or that nobody answered, have no finite
maximum-likelihood parameters; so do models with no variation. They are detected before
fitting, excluded (repeatedly, since dropping items can make a model degenerate), reported in
:attr:`IRTFit.excluded_items` / :attr:`IRTFit.excluded_models` with the reason, and get ``NaN``
parameters. Quasi-separation that survives this check is reported with an
:class:`~evalkit.EvalkitWarning` when the fitted logits become extreme.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, stats

from ._checks import as_labels, check_int, warn
from .errors import ConvergenceWarning, EvalkitInputError
from .types import FloatArray, Matrix

__all__ = [
    "IRTFit",
    "IRTStandardErrors",
    "IRTRankComparison",
    "irt_fit",
    "irt_fit_lbfgs",
    "irt_objective",
    "irt_se",
    "irt_information",
    "irt_flag_uninformative",
    "irt_rank_compare",
    "irt_group_easiness",
]

DEFAULT_TOL = 1e-7
"""Default gate on the relative decrease of the objective in one iteration: below it the fit
checks the score criterion (:data:`DEFAULT_GTOL`); with ``gtol=None`` it alone decides."""

DEFAULT_GTOL = 0.01
"""Default convergence criterion: the largest Newton step of any ability or item, measured in its
own standard errors (the score statistic ``|g| / sqrt(I)`` of each ability, ``sqrt(g' I^-1 g)`` of
each item's ``(a, b)``), must be below this. A fit that stops here is within about a few
hundredths of a standard error of the optimum, far below the statistical uncertainty."""

UNINFORMATIVE_SLOPE = 0.1
"""Default threshold on ``a / sigma`` below which an item is flagged uninformative: one standard
deviation of ability then moves the item's log-odds by less than 0.1 (at most 2.5 points of
probability)."""

_EXTREME_LOGIT = 30.0
"""Fitted ``|x| / sigma`` beyond this means (quasi-)separation; a warning is issued."""

_CHUNK_ELEMENTS = 1 << 18
"""Entries per row chunk (1 MiB of float32): the chunk stays in cache while ~10 passes run over it."""

_MAX_BLOCKS = 64
"""Most row blocks a pass is split into. Blocks are whole chunks, fixed by the matrix shape alone
(never by ``n_jobs``); threads take whole blocks, and the blocks' partial sums are added in block
order, so every result is bit-identical whatever the number of threads or cores."""

_LOG2 = math.log(2.0)

_MAX_STALLS = 10
"""Polishing phases (score checks spaced ``max(3, it // 20)`` iterations apart) in a row without a
10% improvement of the score statistic after which a fit gives up, reported as not converged:
under quasi-separation there is no finite optimum to reach."""

_NEWTON_GATE = 1e-5
"""With ``gtol`` set, the fit starts checking the score criterion and taking block-Newton steps
once an iteration lowers the objective by less than this (or ``tol``, if larger) relative to its
value: the Newton steps then converge in a few iterations where the MM map would crawl. If the
first Newton step of such an early phase is not kept (as with a ridge, whose projection onto the
abilities' sphere the step ignores), the fit waits for ``tol`` as before. ``tol`` keeps its role
for the stall rule and, with ``gtol=None``, as the stopping rule."""

_NEWTON_RATE = 0.5
"""A polishing phase goes on with Newton steps while each one at least halves the score statistic;
where the steps crawl (the coupling between abilities and items that block-Newton ignores is
strong), the fit goes back to the MM iterations with momentum until the next check."""

_NEWTON_DAMPING = (1.0, 0.5, 0.25)
"""Step lengths tried for a block-Newton step before the plain MM step is taken instead."""

_EXP_CAP = 85.0
"""Cap on ``-t`` before ``exp`` in the loss pass (float32 ``exp`` overflows at 88.7)."""

_MANTISSA = np.int64((1 << 52) - 1)
_EXP_ONE = np.int64(1023 << 52)


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IRTFit:
    """A fitted 2PL model ([CBMM]).

    Attributes
    ----------
    theta : (n_models,) float array
        Abilities, normalised to mean 0 and variance 1 over the fitted models; ``NaN`` for
        excluded models.
    a : (n_items,) float array
        Discriminations (``>= 0``); ``NaN`` for excluded items.
    b : (n_items,) float array
        Easiness; ``NaN`` for excluded items.
    sigma : float
        The temperature the model was fitted with.
    objective : float
        Final mean binary cross-entropy per observed entry of the fitted sub-matrix.
    history : (n_iter + 1,) float array
        Objective at the start of each iteration (the last entry is the final objective).
    history_time : (n_iter + 1,) float array
        Seconds since the start of the fit at which each ``history`` entry was computed.
    n_iter : int
        Iterations (cBMM sweeps, or L-BFGS-B iterations).
    converged : bool
        Whether the convergence criterion was met before ``max_iter``.
    excluded_models, excluded_items : dict[int, str]
        Index -> reason (``all_correct``, ``all_wrong``, ``all_missing``) for rows/columns left
        out of the fit.
    time : float
        Wall-clock seconds of the whole fit (validation included).
    method : str
        ``"cbmm"`` or ``"lbfgs"``.
    tol : float
        The convergence tolerance used.
    n_obs : int
        Observed entries in the fitted sub-matrix.
    """

    theta: FloatArray
    a: FloatArray
    b: FloatArray
    sigma: float
    objective: float
    history: FloatArray
    history_time: FloatArray
    n_iter: int
    converged: bool
    excluded_models: dict[int, str]
    excluded_items: dict[int, str]
    time: float
    method: str
    tol: float
    n_obs: int
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def time_to_objective(self, target: float) -> float:
        """Seconds until the objective first reached ``target`` (``inf`` if it never did)."""
        hit = np.flatnonzero(self.history <= target)
        return float(self.history_time[hit[0]]) if hit.size else math.inf


@dataclass(frozen=True)
class IRTStandardErrors:
    """Standard errors of a 2PL fit from the observed information, other block held fixed.

    Attributes
    ----------
    theta : (n_models,) float array
        SE of each ability with the item parameters fixed at their estimates.
    a, b : (n_items,) float arrays
        SEs of discrimination and easiness with the abilities fixed at their estimates (the
        2x2 information of each item is inverted). An ``a_j`` on its bound 0 gets the
        unconstrained value, which overstates nothing but means little.
    """

    theta: FloatArray
    a: FloatArray
    b: FloatArray


@dataclass(frozen=True)
class IRTRankComparison:
    """Kendall's tau between models ranked by fitted ability and by mean accuracy."""

    tau: float
    pvalue: float
    n_models: int
    theta: FloatArray
    accuracy: FloatArray


# --------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------


def _as_matrix(Y: Any) -> np.ndarray:
    """Accept an ndarray-like or an EvalMatrix (anything with a ``Y`` attribute)."""
    if hasattr(Y, "Y") and not isinstance(Y, np.ndarray):
        Y = Y.Y
    if isinstance(Y, (pd.DataFrame,)):
        Y = Y.to_numpy(dtype=float)
    arr = np.asarray(Y)
    if arr.dtype == object or arr.dtype.kind not in "fiub":
        raise TypeError(f"Y must be a numeric (n_models, n_items) array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise EvalkitInputError("Y",
            f"Y must be two-dimensional (n_models, n_items) with NaN for unobserved entries; "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] < 2 or arr.shape[1] < 1:
        raise EvalkitInputError("Y", f"Y needs at least 2 models and 1 item, got shape {arr.shape}")
    return arr


def _row_step(n_cols: int) -> int:
    return max(1, _CHUNK_ELEMENTS // max(n_cols, 1))


def _encode(Y: Any) -> np.ndarray:
    """Validate ``Y`` and return its int8 signed coding: +1 correct, -1 wrong, 0 unobserved."""
    arr = _as_matrix(Y)
    n, m = arr.shape
    S = np.empty((n, m), dtype=np.int8)
    step = _row_step(m)
    n_obs = 0
    floating = arr.dtype.kind == "f"
    for s in range(0, n, step):
        blk = arr[s : s + step]
        one = np.equal(blk, 1).view(np.int8)
        zero = np.equal(blk, 0).view(np.int8)
        np.subtract(one, zero, out=S[s : s + step])    # +1 correct, -1 wrong, 0 otherwise
        n_here = int(np.count_nonzero(S[s : s + step]))
        n_nan = int(np.isnan(blk).sum()) if floating else 0
        if n_here + n_nan != blk.size:
            b64 = np.asarray(blk, dtype=np.float64)
            ok = np.isnan(b64) | (b64 == 0.0) | (b64 == 1.0)
            bad = b64[~ok][0]
            raise EvalkitInputError("Y",
                f"Y must hold 0/1 outcomes and NaN for unobserved entries; found {int((~ok).sum())} "
                f"other values in rows {s}..{min(n, s + step) - 1}, such as {bad!r}. Threshold or "
                "round partial scores first, and use NaN (not -1 or inf) for missing entries."
            )
        n_obs += n_here
    if n_obs == 0:
        raise EvalkitInputError("Y", "Y has no observed entries (all NaN); there is nothing to fit")
    return S


def _check_sigma(sigma: float) -> float:
    s = float(sigma)
    if not math.isfinite(s) or s <= 0:
        raise EvalkitInputError("sigma", f"sigma (the temperature) must be a positive finite number, got {sigma!r}")
    return s


def _counts(S: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, ...]:
    """Observed and correct counts per row and per column of ``S[rows][:, cols]``."""
    m = cols.size
    r_obs = np.zeros(rows.size, np.int64)
    r_pos = np.zeros(rows.size, np.int64)
    c_obs = np.zeros(m, np.int64)
    c_pos = np.zeros(m, np.int64)
    step = _row_step(S.shape[1])
    all_cols = m == S.shape[1]
    for s in range(0, rows.size, step):
        blk = S[rows[s : s + step]]
        if not all_cols:
            blk = blk[:, cols]
        obs = blk != 0
        pos = blk > 0
        r_obs[s : s + step] = obs.sum(1)
        r_pos[s : s + step] = pos.sum(1)
        c_obs += obs.sum(0)
        c_pos += pos.sum(0)
    return r_obs, r_pos, c_obs, c_pos


def _degenerate(obs: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Reason code per entry: 0 fine, 1 all_missing, 2 all_correct, 3 all_wrong."""
    code = np.zeros(obs.size, np.int8)
    code[pos == obs] = 2
    code[pos == 0] = 3
    code[obs == 0] = 1
    return code


_REASONS = {1: "all_missing", 2: "all_correct", 3: "all_wrong"}


def _screen(S: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[int, str], dict[int, str]]:
    """Drop no-variation items and models until none is left; return kept indices and reasons."""
    n, m = S.shape
    rows = np.arange(n)
    cols = np.arange(m)
    ex_rows: dict[int, str] = {}
    ex_cols: dict[int, str] = {}
    while True:
        r_obs, r_pos, c_obs, c_pos = _counts(S, rows, cols)
        cr = _degenerate(c_obs, c_pos)
        rr = _degenerate(r_obs, r_pos)
        if not cr.any() and not rr.any():
            break
        for j in np.flatnonzero(cr):
            ex_cols[int(cols[j])] = _REASONS[int(cr[j])]
        for i in np.flatnonzero(rr):
            ex_rows[int(rows[i])] = _REASONS[int(rr[i])]
        cols = cols[cr == 0]
        rows = rows[rr == 0]
        if rows.size < 2 or cols.size < 1:
            raise EvalkitInputError("Y",
                f"after excluding models and items with no variation (everyone right, everyone "
                f"wrong or all missing) only {rows.size} models and {cols.size} items are left; "
                "the 2PL model needs at least 2 models and 1 item with variation"
            )
    return rows, cols, ex_rows, ex_cols


# --------------------------------------------------------------------------------------------
# the chunked kernel
# --------------------------------------------------------------------------------------------


def _row_blocks(n: int, step: int) -> list[tuple[int, int]]:
    """Row blocks ``(lo, hi)``: runs of whole ``step``-row chunks, at most :data:`_MAX_BLOCKS` of them.

    They depend on the matrix shape only, so that the order of every floating-point reduction
    (chunk sums within a block, then block sums in order) is the same for any number of threads.
    """
    n_chunks = -(-n // step)
    per_block = -(-n_chunks // _MAX_BLOCKS)
    return [(c * step, min(n, (c + per_block) * step)) for c in range(0, n_chunks, per_block)]


def _log_sum(u: np.ndarray, work: np.ndarray) -> float:
    """``sum(log(u))`` of a flat array with every ``1 <= u <= 1 + e^85``, from products in float64.

    Eight ``u`` multiply without overflow (``<= e^680``); each product of eight is split into its
    binary exponent (added as an integer) and its mantissa in ``[1, 2)``, and up to 512 mantissas
    multiply without overflow, so one ``log`` serves hundreds of entries. Products of float32
    pairs are exact in float64 and each later product rounds at 1e-16, so the result is at least
    as accurate as a sum of float32 logs. ``work`` holds at least ``8 * (u.size // 8)`` float64.
    Deterministic: the order of every operation depends on ``u.size`` alone.
    """
    q = u.size // 8
    h = 4 * q
    total = 0.0
    if u.size > 2 * h:
        total += float(np.log(u[2 * h :].astype(np.float64)).sum())
    if q == 0:
        return total
    p2, p4, p8 = work[:h], work[h : h + 2 * q], work[h + 2 * q : h + 3 * q]
    np.multiply(u[:h], u[h : 2 * h], out=p2, dtype=np.float64)
    np.multiply(p2[: 2 * q], p2[2 * q :], out=p4)
    np.multiply(p4[:q], p4[q:], out=p8)
    bits = p8.view(np.int64)
    expo = work[h + 3 * q : h + 4 * q].view(np.int64)
    np.right_shift(bits, 52, out=expo)               # every product is >= 1: no sign bit
    n_two = int(expo.sum()) - 1023 * q
    np.bitwise_and(bits, _MANTISSA, out=bits)
    np.bitwise_or(bits, _EXP_ONE, out=bits)          # the mantissas, in [1, 2)
    size = q
    while size > 512:
        half = size // 2
        if size % 2:
            p8[0] *= p8[2 * half]
        np.multiply(p8[:half], p8[half : 2 * half], out=p8[:half])
        size = half
    return total + float(np.log(p8[:size]).sum()) + n_two * _LOG2


class _Kernel:
    """Row-chunked, multi-threaded evaluation of the loss and its gradient pieces.

    For the current ``X = theta a' + 1 b'`` one pass computes, without any full-size temporary:
    the summed loss over observed entries, ``U' R`` with ``U = [theta, 1]`` (item gradients) and
    ``R a`` (model gradients), where ``R = p - y`` on observed entries and 0 elsewhere.

    Determinism: the rows are cut into fixed chunks of ``step`` rows and fixed blocks of chunks
    (:func:`_row_blocks`); each block reduces its chunks in order, and the block results are added
    in block order, with or without threads. ``n_jobs`` only decides how many blocks run at once.
    """

    def __init__(self, S: np.ndarray, sigma: float, dtype: type, n_jobs: int | None,
                 store: bool = False) -> None:
        self.S = S
        self.n, self.m = S.shape
        self.sigma = sigma
        self.dtype = np.dtype(dtype)
        self.n_missing = int(self.n * self.m - np.count_nonzero(S))
        jobs = (os.cpu_count() or 1) if n_jobs is None else int(n_jobs)
        if jobs < 1:
            raise EvalkitInputError(
                "n_jobs", f"n_jobs must be a positive number of threads or None (all cores), got {n_jobs!r}")
        self.step = _row_step(self.m)
        self.blocks = _row_blocks(self.n, self.step)
        self.n_jobs = min(jobs, len(self.blocks))
        self.pool = ThreadPoolExecutor(self.n_jobs) if self.n_jobs > 1 else None
        self.R: np.ndarray | None = np.empty((self.n, self.m), self.dtype) if store else None

    # -- the fitting pass: loss and R = p - y in one sweep over the data ---------------------

    def _loss_block(self, lo: int, hi: int, th: np.ndarray, na: np.ndarray, nb: np.ndarray,
                    cap: bool) -> float:
        """Summed ``log(1 + exp(-t))`` over the rows ``lo:hi`` (``na``, ``nb``: ``-a``, ``-b`` on the logit scale).

        Per chunk, in place in one work array (``R[s:e]`` when ``R`` is stored): ``-t`` (the
        negated parameters give it exactly, without a negation pass), ``u = 1 + exp(-t)``, then
        ``P = 1 / u`` and ``R = s (P - 1)``. The loss is ``sum log u``, taken as the log of
        products of ``u`` in float64, which costs a few multiplications per entry instead of a
        float32 log, and is at least as accurate (:func:`_log_sum`). ``cap``: some ``-t`` may pass
        :data:`_EXP_CAP` (checked from the parameters by the caller), so it is clipped there
        before ``exp``.
        """
        dt = self.dtype
        m, step = self.m, self.step
        R = self.R
        buf = np.empty((step, m), dt) if R is None else None
        work = np.empty(((step * m) // 8) * 8, np.float64)
        total = 0.0
        with np.errstate(over="ignore"):
            for s in range(lo, hi, step):
                e = min(hi, s + step)
                k = e - s
                if R is None:
                    assert buf is not None  # allocated exactly when R is not stored
                    t = buf[:k]
                else:
                    t = R[s:e]
                Sk = self.S[s:e]
                # minus the signed margin, -t = s_ij * (-x_ij) / sigma (0 on unobserved entries)
                np.multiply.outer(th[s:e], na, out=t)
                t += nb
                np.multiply(t, Sk, out=t)
                if cap:  # an entry that far off has probability < 1e-37; exp(-t) stays finite
                    np.minimum(t, _EXP_CAP, out=t)
                np.exp(t, out=t)
                t += 1.0
                total += _log_sum(t.reshape(-1), work)  # the loss: sum of log u
                if R is not None:
                    # P = 1 / u, the probability of the observed outcome; R = p - y = s * (P - 1),
                    # exactly 0 on unobserved entries
                    np.divide(1.0, t, out=t)
                    t -= 1.0
                    np.multiply(t, Sk, out=t)
        return total

    def evaluate(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
        """Summed loss over observed entries at ``X = theta a' + 1 b'``; stores ``R`` if asked to."""
        dt = self.dtype
        na, nb = (-a / self.sigma).astype(dt), (-b / self.sigma).astype(dt)
        th = theta.astype(dt)
        # |t_ij| <= max|theta| |a_j| + |b_j|: when that bound (with room for float rounding) stays
        # below the cap, clipping cannot change any entry and its pass is skipped
        bound = float(np.abs(th).max(initial=0.0)) * np.abs(na.astype(np.float64)) + np.abs(nb.astype(np.float64))
        cap = not bool((bound <= _EXP_CAP * (1.0 - 1e-4)).all())
        parts = self._map(self._loss_block, (th, na, nb, cap))
        total = 0.0
        for part in parts:  # in block order, whatever the number of threads
            total += part
        return total - self.n_missing * _LOG2

    def _map(self, fn: Any, args: tuple[Any, ...]) -> list[Any]:
        """``fn(lo, hi, *args)`` for every block, results in block order (threads if any)."""
        if self.pool is None:
            return [fn(lo, hi, *args) for lo, hi in self.blocks]
        futs = [self.pool.submit(fn, lo, hi, *args) for lo, hi in self.blocks]
        return [f.result() for f in futs]

    def _stored_R(self) -> np.ndarray:
        if self.R is None:
            raise RuntimeError("_Kernel: R is not stored; build the kernel with store=True")
        return self.R

    def Rt(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(theta' R, 1' R)`` over the stored ``R``, in float64.

        Row chunk by row chunk (each chunk is read from memory once for both products): one
        BLAS call on the whole matrix would let OpenBLAS start its own threads, which stall badly
        when the cores are shared with other work (measured: 100x slower on a loaded machine).
        """
        R, dt = self._stored_R(), self.dtype
        th = theta.astype(dt)
        one = np.ones(self.step, dt)
        g0 = np.zeros(self.m, np.float64)
        g1 = np.zeros(self.m, np.float64)
        for s in range(0, self.n, self.step):
            e = min(self.n, s + self.step)
            g0 += th[s:e] @ R[s:e]
            g1 += one[: e - s] @ R[s:e]
        return g0, g1

    def Rv(self, v: np.ndarray) -> np.ndarray:
        """``R v`` over the stored ``R``, in float64 (row chunks, as :meth:`Rt`)."""
        R, dt = self._stored_R(), self.dtype
        vv = v.astype(dt)
        out = np.empty(self.n, dt)
        for s in range(0, self.n, self.step):
            e = min(self.n, s + self.step)
            np.dot(R[s:e], vv, out=out[s:e])
        return out.astype(np.float64)

    def newton_pieces(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray,
                      ridge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Scores and block informations at the point where ``R`` is stored (logit scale).

        With ``w = p (1 - p) = |R| (1 - |R|)`` on observed entries (0 elsewhere) and ``sigma``
        factored out: ability ``i`` has score ``g_i = sum_j R_ij a_j`` and information
        ``I_i = sum_j w_ij a_j^2``; item ``j`` has score ``G_j = sum_i R_ij [theta_i, 1]`` (plus
        ``ridge [a_j, b_j] / sigma``) and information ``W_j = sum_i w_ij [theta_i^2, theta_i, 1]``
        (the 2x2 matrix's entries, plus ``ridge`` on the diagonal). Given the other block, these
        are the exact gradient and Hessian of each row's and each item's own problem (in
        ``sigma``-scaled parameters). Row chunks in order: deterministic.

        Returns
        -------
        g_th, i_th : (n,) arrays
        G : (2, m) array
        W : (3, m) array
        """
        R, dt = self._stored_R(), self.dtype
        n, m, step = self.n, self.m, self.step
        # chunk products in the working precision (one pass's cost), sums across chunks in float64
        th = theta.astype(dt)
        th2 = (theta * theta).astype(dt)
        a_d = a.astype(dt)
        a2 = (a * a).astype(dt)
        g_th = np.empty(n)
        i_th = np.empty(n)
        G = np.zeros((2, m))
        W = np.zeros((3, m))
        ones = np.ones(step, dt)
        w = np.empty((step, m), dt)
        sq = np.empty((step, m), dt)
        for s in range(0, n, step):
            e = min(n, s + step)
            Rk = R[s:e]
            wk, sk = w[: e - s], sq[: e - s]
            np.abs(Rk, out=wk)  # w = |R| - |R|^2 = p (1 - p) on observed entries
            np.multiply(wk, wk, out=sk)
            wk -= sk
            g_th[s:e] = Rk @ a_d
            i_th[s:e] = wk @ a2
            G[0] += th[s:e] @ Rk
            G[1] += ones[: e - s] @ Rk
            W[0] += th2[s:e] @ wk
            W[1] += th[s:e] @ wk
            W[2] += ones[: e - s] @ wk
        a64 = a.astype(np.float64)
        th = theta.astype(np.float64)
        if ridge > 0:
            G[0] += ridge * a64 / self.sigma
            G[1] += ridge * b / self.sigma
            W[0] += ridge
            W[2] += ridge
            u = th / math.sqrt(n)  # abilities live on {mean 0, variance 1}: keep the tangent part
            g_th -= u * float(u @ g_th)
            g_th -= g_th.mean()
        return g_th, i_th, G, W

    def score(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray, ridge: float) -> float:
        """Largest Newton step, in standard errors, of any ability or item (see :func:`_score_stat`)."""
        return _score_stat(self.newton_pieces(theta, a, b, ridge), a, _diverging(theta, a, b, self.sigma))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def _block(self, lo: int, hi: int, th: np.ndarray, a: np.ndarray, b: np.ndarray,
               loss: bool, item_grad: bool, model_vec: np.ndarray | None,
               info: bool) -> tuple[Any, ...]:
        dt = self.dtype
        m, step = self.m, self.step
        t = np.empty((step, m), dt)
        u = np.empty((step, m), dt) if (loss or info) else None
        total = 0.0
        G = np.zeros((2, m), np.float64) if item_grad else None
        W = np.zeros((3, m), np.float64) if info else None
        Ra = np.empty(hi - lo, np.float64) if model_vec is not None else None
        Wa = np.empty(hi - lo, np.float64) if info else None
        ones = np.ones(step, dt)
        with np.errstate(over="ignore"):
            for s in range(lo, hi, step):
                e = min(hi, s + step)
                k = e - s
                tk = t[:k]
                Sk = self.S[s:e]
                # signed margin t = s_ij * x_ij / sigma (0 on unobserved entries)
                np.multiply.outer(th[s:e], a, out=tk)
                tk += b
                np.multiply(tk, Sk, out=tk)
                if loss:
                    assert u is not None  # allocated when loss or info
                    uk = u[:k]
                    # softplus(-t) = max(-t, 0) + log1p(exp(-|t|)), stable in float32
                    np.abs(tk, out=uk)
                    np.negative(uk, out=uk)
                    np.exp(uk, out=uk)
                    np.log1p(uk, out=uk)
                    total += float(uk.sum(dtype=np.float64))
                    total += float(np.minimum(tk, 0).sum(dtype=np.float64)) * -1.0
                # q = sigmoid(-t) = 1 / (1 + exp(t)); exp overflow gives q = 0 exactly
                np.exp(tk, out=tk)
                tk += 1.0
                np.reciprocal(tk, out=tk)
                if info:
                    assert u is not None and W is not None and Wa is not None  # allocated when info
                    uk = u[:k]
                    # p (1 - p) = q (1 - q), zeroed on unobserved entries
                    np.subtract(1.0, tk, out=uk)
                    uk *= tk
                    uk *= Sk != 0
                    W[0] += th[s:e] ** 2 @ uk
                    W[1] += th[s:e] @ uk
                    W[2] += ones[:k] @ uk
                    Wa[s - lo : e - lo] = uk @ (a * a)
                # R = p - y = -s * q
                np.multiply(tk, Sk, out=tk)
                if item_grad:
                    assert G is not None  # allocated when item_grad
                    G[0] -= th[s:e] @ tk
                    G[1] -= ones[:k] @ tk
                if model_vec is not None:
                    assert Ra is not None  # allocated when model_vec is given
                    Ra[s - lo : e - lo] = -(tk @ model_vec)
        return total, G, Ra, W, Wa

    def run(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray, *, loss: bool = False,
            item_grad: bool = False, model_vec: np.ndarray | None = None,
            info: bool = False) -> dict[str, Any]:
        """One pass over the data at ``X = theta a' + 1 b'`` (parameters on the ``x`` scale)."""
        dt = self.dtype
        th = theta.astype(dt)
        a_s = (a / self.sigma).astype(dt)
        b_s = (b / self.sigma).astype(dt)
        mv = None if model_vec is None else (model_vec / self.sigma).astype(dt)
        args = (th, a_s, b_s, loss, item_grad, mv, info)
        parts = self._map(self._block, args)
        out: dict[str, Any] = {}
        # Python's sum adds in list order: block order, whatever the number of threads
        if loss:
            out["loss"] = sum(p[0] for p in parts) - self.n_missing * _LOG2
        if item_grad:
            out["G"] = sum(p[1] for p in parts)
        if mv is not None:
            out["Ra"] = np.concatenate([p[2] for p in parts])
        if info:
            out["W"] = sum(p[3] for p in parts)
            out["Wa"] = np.concatenate([p[4] for p in parts])
        return out


# --------------------------------------------------------------------------------------------
# fitting
# --------------------------------------------------------------------------------------------


_Pieces = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _diverging(theta: np.ndarray, a: np.ndarray, b: np.ndarray, sigma: float) -> np.ndarray:
    """Items whose fitted log-odds pass +-:data:`_EXTREME_LOGIT` for some model (quasi-separation)."""
    return (float(np.abs(theta).max()) * np.abs(a) + np.abs(b)) / sigma > _EXTREME_LOGIT


def _score_stat(pieces: _Pieces, a: np.ndarray, skip_items: np.ndarray | None = None) -> float:
    """The score statistic: the largest Newton step of any ability or item in its own SEs.

    ``max(|g_i| / sqrt(I_i), sqrt(G_j' W_j^-1 G_j))`` over abilities ``i`` and items ``j`` from
    :meth:`_Kernel.newton_pieces` (``sigma`` cancels). An ``a_j`` on its bound 0 whose score
    pushes it below 0 counts as converged in that coordinate. Items in ``skip_items`` (those
    whose parameters run off to infinity under quasi-separation, see :func:`_diverging`) have no
    finite optimum to converge to and are left out; the fit warns about them separately.
    """
    g_th, i_th, G, W = pieces
    g_a = np.where((a <= 0) & (G[0] > 0), 0.0, G[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        stat_th = np.abs(g_th) / np.sqrt(i_th)
        det = W[0] * W[2] - W[1] ** 2
        quad = (W[2] * g_a**2 - 2.0 * W[1] * g_a * G[1] + W[0] * G[1] ** 2) / det
        stat_item = np.sqrt(np.maximum(quad, 0.0))
    keep = det > 0 if skip_items is None else (det > 0) & ~skip_items
    stats_all = np.concatenate([stat_th[i_th > 0], stat_item[keep]])
    return float(stats_all.max()) if stats_all.size else 0.0


def _newton_point(point: tuple[np.ndarray, ...], pieces: _Pieces, sigma: float, ridge: float,
                  step: float) -> tuple[np.ndarray, ...] | None:
    """A damped block-Newton step from ``point``: every ability and every item's ``(a, b)`` at once.

    Given the other block, each ability's and each item's problem is separate, and
    :meth:`_Kernel.newton_pieces` holds their exact gradients and Hessians; the step ignores only
    the coupling between the blocks, so near the optimum it converges much faster than the MM
    map, whose curvature bound ``1/4`` is far too loose for items with extreme probabilities.
    The caller keeps the step only if the objective does not increase.
    """
    theta, a, b = point
    g_th, i_th, G, W = pieces
    with np.errstate(divide="ignore", invalid="ignore"):
        d_th = np.where(i_th > 0, sigma * g_th / i_th, 0.0)
        det = W[0] * W[2] - W[1] ** 2
        ok = det > 0
        d_a = np.where(ok, sigma * (W[2] * G[0] - W[1] * G[1]) / det, 0.0)
        d_b = np.where(ok, sigma * (W[0] * G[1] - W[1] * G[0]) / det, 0.0)
    th_new = theta - step * d_th
    a_new = np.maximum(a - step * d_a, 0.0)
    b_new = b - step * d_b
    if not (np.isfinite(th_new).all() and np.isfinite(a_new).all() and np.isfinite(b_new).all()):
        return None
    if ridge == 0:
        return _normalise(th_new, a_new, b_new) if th_new.std() > 0 else None
    sph = _sphere(th_new)
    return None if sph is None else (sph, a_new, b_new)


def _normalise(theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Shift and scale theta to mean 0, variance 1, adjusting a and b so X is unchanged."""
    mu = float(theta.mean())
    sd = float(theta.std())
    if not sd > 0:
        raise EvalkitInputError("a", "the abilities collapsed to a constant; the 2PL model is not identified")
    return (theta - mu) / sd, a * sd, b + a * mu


def _init(S: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Start from logits of mean accuracies: theta by model, b by item, a = sigma."""
    n, m = S.shape
    rows = np.arange(n)
    cols = np.arange(m)
    r_obs, r_pos, c_obs, c_pos = _counts(S, rows, cols)
    pr = (r_pos + 0.5) / (r_obs + 1.0)
    pc = (c_pos + 0.5) / (c_obs + 1.0)
    theta = np.log(pr / (1 - pr))
    sd = theta.std()
    theta = (theta - theta.mean()) / (sd if sd > 0 else 1.0)
    if not theta.std() > 0:  # every model equally accurate: break the tie deterministically
        theta = np.linspace(-1.0, 1.0, n)
        theta = (theta - theta.mean()) / theta.std()
    a = np.full(m, sigma)
    b = sigma * np.log(pc / (1 - pc))
    return theta, a, b


def _prepare(Y: Any, sigma: float) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, dict, dict, tuple]:
    sigma = _check_sigma(sigma)
    S_full = _encode(Y)
    shape = S_full.shape
    rows, cols, ex_rows, ex_cols = _screen(S_full)
    if rows.size == shape[0] and cols.size == shape[1]:
        S = S_full
    else:
        S = S_full[np.ix_(rows, cols)]
        del S_full
    if ex_rows or ex_cols:
        warn(
            f"irt: excluded {len(ex_rows)} models and {len(ex_cols)} items with no variation "
            "(everyone right, everyone wrong or all missing); their parameters are NaN and the "
            "reasons are in fit.excluded_models / fit.excluded_items"
        )
    return S, sigma, rows, cols, ex_rows, ex_cols, shape


def _expand(shape: tuple, rows: np.ndarray, cols: np.ndarray, theta: np.ndarray,
            a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    T = np.full(shape[0], np.nan)
    A = np.full(shape[1], np.nan)
    B = np.full(shape[1], np.nan)
    T[rows] = theta
    A[cols] = a
    B[cols] = b
    return T, A, B


def _check_extreme(theta: np.ndarray, a: np.ndarray, b: np.ndarray, sigma: float, ridge: float = 0.0) -> None:
    """Warn about items whose fitted log-odds pass +-:data:`_EXTREME_LOGIT` for some model.

    The log-odds ``(theta_i a_j + b_j) / sigma`` are linear in ``theta``, so an item's most extreme
    one is at the lowest or the highest ability: the count is exact, not a bound.
    """
    if theta.size == 0 or a.size == 0:
        return
    lo, hi = float(np.min(theta)), float(np.max(theta))
    big = np.maximum(np.abs(lo * a + b), np.abs(hi * a + b)) / sigma
    n_big = int((big > _EXTREME_LOGIT).sum())
    if n_big:
        advice = ("the ridge keeps them finite, but the answers determine them poorly" if ridge > 0 else
                  "either the answers (nearly) separate them, and then maximum likelihood has no finite values "
                  "for them and they grow with more iterations, or they are very steep items whose slopes joint "
                  "maximum likelihood overstates; fit with ridge > 0 (e.g. ridge=0.1) to keep them finite")
        warn(
            f"irt: {n_big} items reach fitted log-odds beyond +-{_EXTREME_LOGIT:g} for some model "
            f"(possible quasi-separation: {advice}); consider flagging or dropping them"
        )


def _check_separation(S: np.ndarray, theta: np.ndarray, ridge: float, who: str) -> None:
    """ConvergenceWarning when an item is perfectly separated by the fitted abilities (no finite slope)."""
    if ridge > 0:
        return
    if S.shape[0] < 3:
        warn(f"{who}: only {S.shape[0]} models: every item's slope is unidentified (the fit separates them "
             "perfectly) and depends on the tolerance; fit with ridge > 0 or more models", stacklevel=4,
             category=ConvergenceWarning)
        return
    th = np.asarray(theta, dtype=float)
    n, m = S.shape
    # Abilities as dense ranks (equal abilities share a rank), so that every comparison below is
    # exact in integers. Per item, s * (rank + 1) peaks at the highest rank among the models that
    # got it right and dips to minus the highest among those that got it wrong; s * (n + 1 - rank)
    # gives the lowest ranks the same way. Row chunks: no full-size temporary.
    rank = np.unique(th, return_inverse=True)[1].astype(np.int32)
    up, down = rank + 1, n + 1 - rank
    top_v, bot_v = np.full(m, np.iinfo(np.int32).min, np.int32), np.full(m, np.iinfo(np.int32).max, np.int32)
    top_w, bot_w = top_v.copy(), bot_v.copy()
    step = _row_step(m)
    buf = np.empty((step, m), np.int32)
    for s in range(0, n, step):
        e = min(n, s + step)
        bk = buf[: e - s]
        np.multiply(S[s:e], up[s:e, None], out=bk)
        np.maximum(top_v, bk.max(axis=0), out=top_v)
        np.minimum(bot_v, bk.min(axis=0), out=bot_v)
        np.multiply(S[s:e], down[s:e, None], out=bk)
        np.maximum(top_w, bk.max(axis=0), out=top_w)
        np.minimum(bot_w, bk.min(axis=0), out=bot_w)
    seen = (top_v > 0) & (bot_v < 0)                 # someone got it right and someone wrong
    hi_right, hi_wrong = top_v - 1, -bot_v - 1
    lo_right, lo_wrong = n + 1 - top_w, n + 1 + bot_w
    sep = ((lo_right > hi_wrong) | (hi_right < lo_wrong)) & seen
    if sep.any():
        warn(f"{who}: {int(sep.sum())} items are perfectly separated by the fitted abilities (every model that "
             "got them right is abler than every model that got them wrong): their slopes have no finite "
             "maximum-likelihood value and the reported ones depend on the tolerance; fit with ridge > 0 or "
             "flag them (irt_flag_uninformative)", stacklevel=4, category=ConvergenceWarning)


def _check_dtype(dtype: Any) -> None:
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise EvalkitInputError("dtype", f"dtype must be np.float32 or np.float64, got {dtype!r}")


def _check_tol(tol: float, max_iter: int, gtol: float | None = None) -> None:
    check_int(max_iter, "max_iter", minimum=1)
    if not (0 < tol < 1):
        raise EvalkitInputError("tol", f"tol must be in (0, 1), got {tol}")
    if gtol is not None and not (0 < gtol < math.inf):
        raise EvalkitInputError("gtol", f"gtol must be a positive number of standard errors (or None), got {gtol}")
    if int(max_iter) < 1:
        raise EvalkitInputError("max_iter", f"max_iter must be at least 1, got {max_iter}")


def _check_ridge(ridge: float) -> float:
    r = float(ridge)
    if not math.isfinite(r) or r < 0:
        raise EvalkitInputError(
            "ridge", f"ridge must be a non-negative finite number (0 = plain maximum likelihood), got {ridge!r}")
    return r


def _penalty(a: np.ndarray, b: np.ndarray, ridge: float, sigma: float) -> float:
    """``ridge / 2 * (||a||^2 + ||b||^2) / sigma^2`` (the logit-scale item parameters)."""
    return 0.0 if ridge == 0 else 0.5 * ridge * (float(a @ a) + float(b @ b)) / sigma**2


def _sphere(theta: np.ndarray) -> np.ndarray | None:
    """Project onto mean 0, variance 1 (``None`` when ``theta`` is constant)."""
    c = theta - theta.mean()
    nrm = float(np.sqrt(c @ c))
    return None if not nrm > 0 else c * (math.sqrt(c.size) / nrm)


class _MM:
    """One cBMM step from the point at which ``kern`` last stored ``R`` ([CBMM]).

    The loss is majorised once at ``X~ = theta~ a~' + 1 b~'`` by the quadratic with curvature
    ``1 / (4 sigma^2)``; with the fill-in ``Y~ = X~ - 4 sigma R`` (``R = 0`` on unobserved
    entries) the surrogate is ``||theta a' + 1 b' - Y~||^2 / (8 sigma^2)`` over *all* entries plus
    the ridge penalty. The two blocks are then minimised in turn against this same surrogate:

    * ``(a, b)`` with ``theta`` at mean 0 and variance 1: per item a 2-variable least squares whose
      non-negative solution is the clip ``a_j = max(0, theta' Y~_j / (n + 4 ridge))`` and
      ``b_j = 1' Y~_j / (n + 4 ridge)``;
    * ``theta`` with the new ``(a, b)``: ``v_i = a' (Y~_i - b)``; without a ridge ``theta = v / a'a``
      followed by the normalisation (which leaves ``X`` and the surrogate unchanged); with a
      ridge the normalisation would change the penalty, so ``theta`` is minimised on the set
      {mean 0, variance 1} directly: ``theta = sqrt(n) centre(v) / ||centre(v)||``.

    Each block lowers the surrogate, which touches the objective at ``X~``, so the objective
    cannot increase. Only three matrix-vector products with the stored ``R`` are needed.
    """

    def __init__(self, kern: _Kernel, sigma: float, ridge: float) -> None:
        self.kern = kern
        self.sigma = sigma
        self.ridge = ridge

    def step(self, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        n = theta.size
        c = 4.0 * self.sigma
        lam4 = 4.0 * self.ridge
        # theta' Y~_j = n a_j - c (theta' R)_j and 1' Y~_j = n b_j - c (1' R)_j (theta normalised)
        g_th, g_one = self.kern.Rt(theta)
        a_new = np.maximum((n * a - c * g_th) / (n + lam4), 0.0)
        b_new = (n * b - c * g_one) / (n + lam4)
        aa = float(a_new @ a_new)
        if not aa > 0:  # every item lost its slope: theta is not identified, leave it
            return theta, a_new, b_new
        v = theta * float(a_new @ a) + float(a_new @ (b - b_new)) - c * self.kern.Rv(a_new)
        if self.ridge == 0:
            return _normalise(v / aa, a_new, b_new)
        th = _sphere(v)
        return (theta if th is None else th), a_new, b_new


def _extrapolate(x_new: tuple[np.ndarray, ...], x_old: tuple[np.ndarray, ...], beta: float,
                 ridge: float) -> tuple[np.ndarray, ...]:
    """Momentum point ``x_new + beta (x_new - x_old)``, projected back onto the constraints."""
    th, a, b = (u + beta * (u - v) for u, v in zip(x_new, x_old, strict=True))
    a = np.maximum(a, 0.0)
    if ridge == 0:
        sd = float(th.std())
        return _normalise(th, a, b) if sd > 0 else x_new
    th = _sphere(th)
    return x_new if th is None else (th, a, b)


def irt_fit(
    Y: Matrix,
    *,
    sigma: float = 1.0,
    tol: float = DEFAULT_TOL,
    gtol: float | None = DEFAULT_GTOL,
    max_iter: int = 5000,
    ridge: float = 0.0,
    accelerate: bool = True,
    dtype: type = np.float32,
    n_jobs: int | None = None,
) -> IRTFit:
    """Fit the 2PL model by constrained block majorization-minimization (cBMM) ([CBMM]).

    Parameters
    ----------
    Y : (n_models, n_items) array or EvalMatrix
        0/1 outcomes with ``NaN`` for unobserved entries.
    sigma : float
        Temperature: ``P(Y_ij = 1) = sigmoid((theta_i a_j + b_j) / sigma)``. It only sets the
        scale of ``a`` and ``b``.
    tol : float
        Gate: when one iteration lowers the objective by less than ``tol`` relative to its value
        (with ``accelerate=True``: in two consecutive iterations, so that one short momentum
        step does not stop the fit early), the fit checks ``gtol``.
    gtol : float or None
        Converged means: no ability and no item is more than ``gtol`` of its own standard
        errors from where one Newton step would take it (the score statistic; see
        :data:`DEFAULT_GTOL`, 0.01). A small relative change of the objective alone does not
        mean converged: at ``tol=1e-7`` abilities could still be 0.2-0.3 SE from the optimum.
        ``None``: stop on ``tol`` alone (the criterion before evalkit 0.2).
    max_iter : int
        Maximum number of iterations (one iteration = one majorisation and both block updates).
    ridge : float
        Penalty ``ridge / 2 * (||a||^2 + ||b||^2) / sigma^2`` added to the summed cross-entropy
        (so the reported objective is ``(sum of cross-entropies + penalty) / n_obs``). Default 0:
        plain joint maximum likelihood. A small ridge (say 0.1 to 1, i.e. a normal prior on the
        logit-scale item parameters worth a fraction of one answer) keeps the parameters of
        quasi-separated items finite -- items that every model but a few answered the same way,
        common when there are few models. With ``ridge > 0`` the abilities are constrained to
        mean 0 and variance 1 inside the objective (the penalty is not invariant to rescaling).
    accelerate : bool
        Nesterov momentum on the cBMM map with a monotone safeguard (default). Each iteration
        extrapolates ``x_k + beta_k (x_k - x_{k-1})`` and keeps the extrapolated point only if its
        objective is not higher than the current one; otherwise it falls back to the plain MM
        point (which the majoriser guarantees to be no worse) and restarts the momentum. The
        recorded history is therefore still non-increasing. ``False``: plain cBMM.
    dtype : numpy float type
        Working precision of the passes over the data (parameters and sums of the blocks are
        float64). float32 is the default and is safe for logits of any size.
    n_jobs : int or None
        Threads over row blocks (None: all cores). The result is bit-identical for every
        ``n_jobs`` and core count: the row blocks and the order of every sum are fixed by the
        matrix shape.

    Returns
    -------
    IRTFit
        Parameters (``theta`` normalised to mean 0, variance 1), objective history and the
        models and items excluded for having no variation. ``extra`` holds ``n_passes`` (passes
        over the data, i.e. objective evaluations), ``n_restarts`` (rejected momentum steps),
        ``ridge``, ``accelerate``, ``gtol`` and ``score_se`` (the score statistic at the
        returned parameters, in standard errors).

    Raises
    ------
    ValueError
        ``Y`` is not 2-D, holds values other than 0/1/NaN, is all missing, leaves fewer than
        2 models after excluding degenerate rows and columns; ``sigma <= 0``; bad ``tol``,
        ``gtol`` or ``n_jobs``; ``ridge < 0``.
    TypeError
        ``Y`` is not numeric.

    Examples
    --------
    >>> import numpy as np
    >>> from evalkit import simulate_2pl
    >>> Y, truth = simulate_2pl(80, 100, rng=np.random.default_rng(0), missing=0.1)
    >>> fit = irt_fit(Y, n_jobs=1)
    >>> fit.converged, fit.extra["score_se"] <= 0.01
    (True, True)
    >>> bool(np.corrcoef(fit.theta, truth["theta"])[0, 1] > 0.9)
    True
    >>> bool(np.array_equal(fit.theta, irt_fit(Y, n_jobs=3).theta))  # any number of threads
    True

    Notes
    -----
    Cost per iteration: one pass over the data computes the objective and ``R = p - y`` (stored
    as one ``dtype`` matrix); the block updates then need three BLAS matrix-vector products with
    ``R``. The objective never increases. The history holds the objective at the accepted point
    of every iteration; the returned parameters are those at which the last entry was evaluated.
    """
    t0 = time.perf_counter()
    _check_tol(tol, max_iter, gtol)
    _check_dtype(dtype)
    ridge = _check_ridge(ridge)
    S, sigma, rows, cols, ex_rows, ex_cols, shape = _prepare(Y, sigma)
    n, m = S.shape
    kern = _Kernel(S, sigma, dtype, n_jobs, store=True)
    n_obs = n * m - kern.n_missing
    mm = _MM(kern, sigma, ridge)
    x: tuple[np.ndarray, ...] = _init(S, sigma)
    n_pass = 0

    def evaluate(p: tuple[np.ndarray, ...]) -> float:
        nonlocal n_pass
        n_pass += 1
        return (kern.evaluate(*p) + _penalty(p[1], p[2], ridge, sigma)) / n_obs

    hist: list[float] = []
    times: list[float] = []
    converged = False
    it = 0
    k_mom = 0
    n_restarts = 0
    small = 0
    next_check = 0
    score = math.nan
    n_newton = 0
    best_score = math.inf
    n_stalls = 0
    stalled = False
    near = 0
    gate = max(tol, _NEWTON_GATE)
    try:
        y: tuple[np.ndarray, ...] = x  # the point at which R is stored and the objective f is known
        f = evaluate(y)
        hist.append(f)
        times.append(time.perf_counter() - t0)
        pending: tuple[np.ndarray, ...] | None = None  # an MM point from y computed by the polish
        while it < max_iter:
            x_new = mm.step(*y) if pending is None else pending
            pending = None
            it += 1
            k_mom += 1
            beta = (k_mom - 1.0) / (k_mom + 2.0) if accelerate else 0.0
            cand = _extrapolate(x_new, x, beta, ridge) if beta > 0 else x_new
            f_c = evaluate(cand)
            if f_c > f and beta > 0:  # momentum overshot: take the guaranteed MM point, restart
                n_restarts += 1
                k_mom = 0
                cand = x_new
                f_c = evaluate(cand)
            x, y = x_new, cand
            rel = (f - f_c) / abs(f_c) if f_c != 0 else 0.0
            f = f_c
            hist.append(f)
            times.append(time.perf_counter() - t0)
            small = small + 1 if rel <= tol else 0
            near = near + 1 if rel <= gate else 0
            need = 2 if accelerate else 1
            if gtol is None:
                if small >= need:
                    converged = True
                    break
                continue
            if near < need or it < next_check:
                continue
            # Near the optimum: check the score criterion, and take block-Newton steps while they
            # lower the objective (the pieces cost about a quarter of a pass; R is stored at y).
            first_check = True
            first_newton = small < need  # this phase started before the objective flattened
            last_score = math.inf
            while it < max_iter:
                pieces = kern.newton_pieces(y[0], y[1], y[2], ridge)
                score = _score_stat(pieces, y[1], _diverging(y[0], y[1], y[2], sigma))
                if score <= gtol:
                    converged = True
                    break
                if score > _NEWTON_RATE * last_score:  # Newton crawls (block coupling): MM with momentum
                    next_check = it + max(3, it // 20)
                    break
                last_score = score
                if first_check:  # once per polishing phase: is there progress from phase to phase?
                    first_check = False
                    if score < 0.9 * best_score:
                        best_score, n_stalls = score, 0
                    elif small >= need:  # only once the objective has flattened (``tol``)
                        n_stalls += 1
                        if n_stalls >= _MAX_STALLS:  # no finite optimum in reach (quasi-separation)
                            stalled = True
                            break
                # the MM point from y (R is stored there): the step taken if no Newton step is kept
                x_mm = mm.step(*y)
                accepted = False
                newton: tuple[np.ndarray, ...] | None = None
                for damp in _NEWTON_DAMPING:
                    newton = _newton_point(y, pieces, sigma, ridge, damp)
                    if newton is None:
                        continue
                    f_c = evaluate(newton)
                    if f_c <= f:
                        accepted = True
                        break
                if not accepted or newton is None:
                    # back to the momentum iteration from y, whose MM point is already known (R at y
                    # was overwritten by the rejected candidates, so it could not be recomputed)
                    pending = x_mm
                    next_check = it + max(3, it // 20)
                    if first_newton:  # Newton did not help this early: wait for the flat objective
                        gate = tol
                    break
                first_newton = False
                n_newton += 1
                it += 1
                x = y = newton
                k_mom = 0
                f = f_c
                hist.append(f)
                times.append(time.perf_counter() - t0)
            if converged or stalled:
                break
        if not converged or gtol is None:
            score = kern.score(y[0], y[1], y[2], ridge)
    finally:
        kern.close()
    theta, a, b = y
    if stalled:
        warn(f"irt_fit: stopped without convergence after {it} iterations: the largest Newton step stays at "
             f"{score:.3g} standard errors (gtol {gtol}), typically because quasi-separated items or models have "
             "no finite maximum-likelihood parameters; fit with ridge > 0, or drop them",
             category=ConvergenceWarning)
    elif not converged:
        warn(f"irt_fit: no convergence after {max_iter} iterations (relative tol {tol:g}; the largest "
             f"Newton step is {score:.3g} standard errors, gtol {gtol})", category=ConvergenceWarning)
    _check_extreme(theta, a, b, sigma, ridge)
    _check_separation(S, theta, ridge, "irt_fit")
    T, A, B = _expand(shape, rows, cols, theta, a, b)
    return IRTFit(
        theta=T, a=A, b=B, sigma=sigma, objective=hist[-1], history=np.asarray(hist),
        history_time=np.asarray(times), n_iter=it, converged=converged,
        excluded_models=ex_rows, excluded_items=ex_cols, time=time.perf_counter() - t0,
        method="cbmm", tol=tol, n_obs=n_obs,
        extra={"n_passes": n_pass, "n_restarts": n_restarts, "ridge": ridge, "accelerate": bool(accelerate),
               "gtol": gtol, "score_se": score, "n_newton": n_newton, "stalled": stalled},
    )


def irt_fit_lbfgs(
    Y: Matrix,
    *,
    sigma: float = 1.0,
    tol: float = DEFAULT_TOL,
    gtol: float | None = DEFAULT_GTOL,
    max_iter: int = 15000,
    ridge: float = 0.0,
    target: float | None = None,
    dtype: type = np.float32,
    n_jobs: int | None = None,
) -> IRTFit:
    """Fit the 2PL model by joint maximum likelihood with scipy's L-BFGS-B ([CBMM] baseline).

    Same objective (ridge included), start, exclusions, normalisation and data pass as
    :func:`irt_fit`, so the two are compared like for like. Gradients are analytic; the bound
    ``a >= 0`` is enforced by L-BFGS-B.

    Parameters
    ----------
    Y : (n_models, n_items) array or EvalMatrix
        0/1 outcomes with ``NaN`` for unobserved entries.
    sigma : float
        Temperature, as in :func:`irt_fit`.
    tol : float
        Gate, as in :func:`irt_fit`: after an iteration that lowers the objective by less than
        ``tol`` relative, the score criterion ``gtol`` is checked. With ``gtol=None`` it is
        L-BFGS-B's ``ftol`` and alone decides (L-BFGS-B's own ``gtol`` is 0).
    gtol : float or None
        The convergence criterion of :func:`irt_fit` (largest Newton step in standard errors).
    max_iter : int
        Maximum L-BFGS-B iterations.
    ridge : float
        The penalty of :func:`irt_fit`. With ``ridge > 0`` the abilities are optimised through
        ``theta = sqrt(n) centre(phi) / ||centre(phi)||`` (mean 0, variance 1 by construction),
        the same constraint cBMM uses; without the constraint the penalty could be driven to 0 by
        inflating ``theta`` and shrinking ``a``.
    target : float or None
        Stop as soon as the objective reaches this value (used to time the baseline to the
        objective cBMM reached). ``fit.extra["stopped_at_target"]`` says whether it did.
    dtype, n_jobs
        As in :func:`irt_fit` (bit-identical results for every ``n_jobs``).

    Returns
    -------
    IRTFit
        With ``method="lbfgs"``; ``history`` holds the objective after each iteration;
        ``extra["score_se"]`` the score statistic at the returned parameters. When a float32 run
        stops short of ``gtol`` (its line search cannot resolve the last improvements), the fit
        is finished in float64 from where it stopped (``extra["polished_float64"]``), unless a
        ``target`` was given (a timing run: it then stops where float32 L-BFGS-B stops).

    Raises
    ------
    ValueError, TypeError
        As :func:`irt_fit`.
    """
    t0 = time.perf_counter()
    _check_tol(tol, max_iter, gtol)
    _check_dtype(dtype)
    ridge = _check_ridge(ridge)
    S, sigma, rows, cols, ex_rows, ex_cols, shape = _prepare(Y, sigma)
    n, m = S.shape
    kern = _Kernel(S, sigma, dtype, n_jobs, store=True)
    n_obs = n * m - kern.n_missing
    theta0, a0, b0 = _init(S, sigma)
    sqn = math.sqrt(n)

    def unpack(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        phi, a, b = z[:n], z[n : n + m], z[n + m :]
        if ridge > 0:
            cph = phi - phi.mean()
            return cph * (sqn / float(np.sqrt(cph @ cph))), a, b
        return phi, a, b

    def score_at(z: np.ndarray) -> float:
        point = unpack(z)
        kern.evaluate(*point)  # stores R at z
        return kern.score(*point, ridge)

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        phi, a, b = z[:n], z[n : n + m], z[n + m :]
        if ridge > 0:
            cph = phi - phi.mean()
            nrm = float(np.sqrt(cph @ cph))
            th = cph * (sqn / nrm)
        else:
            th = phi
        loss = kern.evaluate(th, a, b) + _penalty(a, b, ridge, sigma)
        g_th = kern.Rv(a) / sigma
        g_a, g_b = kern.Rt(th)
        g_a = g_a / sigma + ridge * a / sigma**2
        g_b = g_b / sigma + ridge * b / sigma**2
        if ridge > 0:  # chain rule through the projection onto mean 0, variance 1
            u = th / sqn
            g_th = (sqn / nrm) * (g_th - u * float(u @ g_th))
            g_th -= g_th.mean()
        return loss / n_obs, np.concatenate([g_th, g_a, g_b]) / n_obs

    hist: list[float] = []
    times: list[float] = []
    stopped = {"target": False, "converged": False, "stalled": False}
    state = {"next_check": 0, "score": math.nan, "best": math.inf, "stalls": 0}

    def callback(intermediate_result: optimize.OptimizeResult) -> None:
        hist.append(float(intermediate_result.fun))
        times.append(time.perf_counter() - t0)
        if target is not None and hist[-1] <= target:
            stopped["target"] = True
            raise StopIteration
        it = len(hist) - 1
        rel = (hist[-2] - hist[-1]) / abs(hist[-1]) if hist[-1] != 0 else 0.0
        if gtol is not None and rel <= tol and it >= state["next_check"]:
            state["score"] = score_at(np.asarray(intermediate_result.x))
            if state["score"] <= gtol:
                stopped["converged"] = True
                raise StopIteration
            if state["score"] < 0.9 * state["best"]:
                state["best"], state["stalls"] = state["score"], 0
            else:
                state["stalls"] += 1
                if state["stalls"] >= _MAX_STALLS:  # no finite optimum in reach (quasi-separation)
                    stopped["stalled"] = True
                    raise StopIteration
            state["next_check"] = it + max(3, it // 20)

    z0 = np.concatenate([theta0, a0, b0])
    f0, _ = fun(z0)
    hist.append(f0)
    times.append(time.perf_counter() - t0)
    lo = np.concatenate([np.full(n, -np.inf), np.zeros(m), np.full(m, -np.inf)])
    bounds = optimize.Bounds(lo, np.full(n + 2 * m, np.inf))
    n_iter = 0
    polished = False
    try:
        res = optimize.minimize(
            fun, z0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
            options={"maxiter": int(max_iter), "ftol": tol if gtol is None else 0.0, "gtol": 0.0,
                     "maxfun": 10 * int(max_iter)},
        )
        n_iter += int(res.nit)
        z = res.x
        score = state["score"] if stopped["converged"] else score_at(z)
        if (gtol is not None and score > gtol and target is None and np.dtype(dtype) != np.float64
                and n_iter < max_iter and not stopped["stalled"]):
            # In float32 the objective stops resolving the last improvements, and the line search
            # gives up short of the criterion: finish from there in float64.
            kern.close()
            kern = None  # type: ignore[assignment]  # free the float32 R before allocating the float64 one
            kern = _Kernel(S, sigma, np.float64, n_jobs, store=True)
            polished = True
            state["next_check"] = 0
            res = optimize.minimize(
                fun, z, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                options={"maxiter": int(max_iter) - n_iter, "ftol": 0.0, "gtol": 0.0,
                         "maxfun": 10 * int(max_iter)},
            )
            n_iter += int(res.nit)
            z = res.x
            score = state["score"] if stopped["converged"] else score_at(z)
    finally:
        kern.close()
    phi, a, b = z[:n], z[n : n + m], z[n + m :]
    if ridge > 0:
        sphered = _sphere(phi)
        if sphered is None:
            raise ValueError("irt_fit_lbfgs: the abilities collapsed to a constant; the 2PL model is not identified")
        theta = sphered
    else:
        theta, a, b = _normalise(phi, a, b)
    if stopped["target"] or stopped["converged"]:
        converged = True
    elif gtol is None:
        converged = bool(res.success)
    else:  # L-BFGS-B stopped on its own (line search, iterations): judge the point it returned
        converged = score <= gtol
    if not converged:
        why = ("its steps stalled with no finite optimum in reach (quasi-separated items or models; fit with "
               "ridge > 0, or drop them)" if stopped["stalled"] else str(res.message))
        warn(f"irt_fit_lbfgs: L-BFGS-B stopped without converging: {why} (the largest Newton step is "
             f"{score:.3g} standard errors, gtol {gtol})", category=ConvergenceWarning)
    _check_extreme(theta, a, b, sigma, ridge)
    _check_separation(S, theta, ridge, "irt_fit_lbfgs")
    T, A, B = _expand(shape, rows, cols, theta, a, b)
    return IRTFit(
        theta=T, a=A, b=B, sigma=sigma, objective=float(res.fun), history=np.asarray(hist),
        history_time=np.asarray(times), n_iter=n_iter, converged=converged,
        excluded_models=ex_rows, excluded_items=ex_cols, time=time.perf_counter() - t0,
        method="lbfgs", tol=tol, n_obs=n_obs,
        extra={"n_fev": int(res.nfev), "message": str(res.message), "stopped_at_target": stopped["target"],
               "ridge": ridge, "gtol": gtol, "score_se": score, "polished_float64": polished,
               "stalled": stopped["stalled"]},
    )


# --------------------------------------------------------------------------------------------
# derived quantities
# --------------------------------------------------------------------------------------------


def _params(theta: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike,
            shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    th = np.asarray(theta, float)
    a_ = np.asarray(a, float)
    b_ = np.asarray(b, float)
    if th.shape != (shape[0],) or a_.shape != (shape[1],) or b_.shape != (shape[1],):
        raise EvalkitInputError("theta",
            f"parameter shapes theta {th.shape}, a {a_.shape}, b {b_.shape} do not match "
            f"Y of shape {shape}: expected ({shape[0]},), ({shape[1]},), ({shape[1]},)"
        )
    return th, a_, b_


def irt_objective(Y: Matrix, theta: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike,
                  *, sigma: float = 1.0, ridge: float = 0.0, dtype: type = np.float64) -> float:
    """Mean binary cross-entropy of the 2PL model per observed entry ([CBMM]).

    Parameters
    ----------
    Y : (n_models, n_items) array or EvalMatrix
        0/1 outcomes with ``NaN`` for unobserved entries.
    theta : (n_models,) array
    a, b : (n_items,) arrays
        Parameters on the ``x`` scale; models or items with ``NaN`` parameters (those a fit
        excluded) are left out, so ``irt_objective(Y, fit.theta, fit.a, fit.b)`` equals
        ``fit.objective`` up to float32 rounding.
    sigma : float
        Temperature.
    ridge : float
        Add the penalty ``ridge / 2 * (||a||^2 + ||b||^2) / sigma^2`` of :func:`irt_fit` (over the
        fitted items) before dividing by the number of observed entries. Default 0.
    dtype : numpy float type
        Working precision (float64 by default).

    Returns
    -------
    float
        ``sum over observed (i, j) of -log P(Y_ij = y_ij)`` (plus the penalty) divided by the
        number of observed entries.

    Raises
    ------
    ValueError
        Bad ``Y``, ``sigma`` or parameter shapes.
    """
    sigma = _check_sigma(sigma)
    S = _encode(Y)
    th, a_, b_ = _params(theta, a, b, S.shape)
    rows = np.flatnonzero(np.isfinite(th))
    cols = np.flatnonzero(np.isfinite(a_) & np.isfinite(b_))
    if rows.size < S.shape[0] or cols.size < S.shape[1]:
        S = S[np.ix_(rows, cols)]
    kern = _Kernel(S, sigma, dtype, 1)
    n_obs = S.size - kern.n_missing
    if n_obs == 0:
        raise EvalkitInputError("params", "no observed entries have finite parameters")
    total = kern.evaluate(th[rows], a_[cols], b_[cols])
    return float((total + _penalty(a_[cols], b_[cols], _check_ridge(ridge), sigma)) / n_obs)


def irt_se(fit: IRTFit, Y: Matrix) -> IRTStandardErrors:
    """Standard errors from the observed information, the other block held fixed ([CBMM]).

    The source names uncertainty as its open limitation; this is the simplest honest answer.
    For ability ``theta_i`` with the items fixed, the information is
    ``sum_j p_ij (1 - p_ij) a_j^2 / sigma^2`` over the items model ``i`` answered; for item
    ``j`` with the abilities fixed, the 2x2 information of ``(a_j, b_j)`` is
    ``sum_i p_ij (1 - p_ij) [theta_i^2, theta_i; theta_i, 1] / sigma^2``. It ignores the
    uncertainty of the fixed block and of the normalisation, which is small when the other
    dimension is large (many items for abilities, many models for item parameters); check it
    by simulation (see the tests and notebook ``05.2-irt-recovery-and-standard-errors``).

    Parameters
    ----------
    fit : IRTFit
        A fit of ``Y``.
    Y : (n_models, n_items) array or EvalMatrix
        The data the fit was made on.

    Returns
    -------
    IRTStandardErrors
        ``NaN`` for excluded models and items.

    Raises
    ------
    ValueError
        Shapes of ``Y`` and ``fit`` disagree, or bad ``Y``.
    """
    if not isinstance(fit, IRTFit):
        raise EvalkitInputError("fit", f"fit must be an IRTFit (from irt_fit or irt_fit_lbfgs), got "
                                       f"{type(fit).__name__}")
    S = _encode(Y)
    if fit.theta.shape != (S.shape[0],) or fit.a.shape != (S.shape[1],):
        raise EvalkitInputError(
            "Y", f"Y has shape {S.shape}, but the fit has {fit.theta.size} models and {fit.a.size} items; pass the "
            "matrix the model was fitted on")
    th, a_, b_ = _params(fit.theta, fit.a, fit.b, S.shape)
    rows = np.flatnonzero(np.isfinite(th))
    cols = np.flatnonzero(np.isfinite(a_))
    Ss = S[np.ix_(rows, cols)] if (rows.size < S.shape[0] or cols.size < S.shape[1]) else S
    kern = _Kernel(Ss, fit.sigma, np.float64, None)
    try:
        out = kern.run(th[rows], a_[cols], b_[cols], info=True)
    finally:
        kern.close()
    s2 = fit.sigma**2
    # Wa holds sum_j w_ij a_j^2 / sigma^2 (a was scaled by 1/sigma inside the kernel)
    se_t = np.full(S.shape[0], np.nan)
    with np.errstate(divide="ignore"):
        se_t[rows] = 1.0 / np.sqrt(out["Wa"])
        W = out["W"] / s2
        det = W[0] * W[2] - W[1] ** 2
        se_a = np.full(S.shape[1], np.nan)
        se_b = np.full(S.shape[1], np.nan)
        se_a[cols] = np.sqrt(W[2] / det)
        se_b[cols] = np.sqrt(W[0] / det)
    return IRTStandardErrors(theta=se_t, a=se_a, b=se_b)


def irt_information(fit: IRTFit, theta: npt.ArrayLike) -> np.ndarray:
    """Fisher information of each item at the given abilities ([CBMM]).

    ``I_j(theta) = (a_j / sigma)^2 p_j(theta) (1 - p_j(theta))``: how much one answer to item
    ``j`` tells about the ability of a model at ``theta``. Items with ``a_j = 0`` carry none.

    Parameters
    ----------
    fit : IRTFit
    theta : (n_grid,) array
        Abilities on the fit's scale (mean 0, variance 1 over the fitted models).

    Returns
    -------
    (n_grid, n_items) float array
        ``NaN`` for excluded items. Sum over items for the test information.

    Raises
    ------
    ValueError
        ``theta`` is not one-dimensional or not finite.
    """
    grid = np.asarray(theta, float)
    if grid.ndim != 1 or not np.isfinite(grid).all():
        raise EvalkitInputError("theta", f"theta must be a finite one-dimensional grid, got shape {grid.shape}")
    z = (np.multiply.outer(grid, fit.a) + fit.b) / fit.sigma
    p = 0.5 * (1.0 + np.tanh(0.5 * z))
    return (fit.a / fit.sigma) ** 2 * p * (1.0 - p)


def irt_flag_uninformative(fit: IRTFit, *, threshold: float = UNINFORMATIVE_SLOPE,
                           include_excluded: bool = True) -> np.ndarray:
    """Flag items whose discrimination is near zero ([CBMM]).

    An item is uninformative when ``a_j / sigma < threshold``: the chance of answering it barely
    depends on ability, so it cannot separate models (the source reads sparse discriminations as
    a sign of redundant or contaminated items).

    Parameters
    ----------
    fit : IRTFit
    threshold : float
        Cut-off on the log-odds slope per standard deviation of ability (default
        :data:`UNINFORMATIVE_SLOPE` = 0.1).
    include_excluded : bool
        Also flag the items the fit excluded for having no variation (they are uninformative
        about models by construction).

    Returns
    -------
    (n_items,) bool array

    Raises
    ------
    ValueError
        ``threshold`` is negative.
    """
    if threshold < 0:
        raise EvalkitInputError("threshold", f"threshold must be non-negative, got {threshold}")
    slope = fit.a / fit.sigma
    flag = np.where(np.isnan(slope), include_excluded, slope < threshold)
    return flag.astype(bool)


def irt_rank_compare(fit: IRTFit, Y: Matrix) -> IRTRankComparison:
    """Kendall's tau between the ranking by ability and by mean accuracy ([CBMM]).

    Parameters
    ----------
    fit : IRTFit
        A fit of ``Y``.
    Y : (n_models, n_items) array or EvalMatrix
        Mean accuracy is taken over each model's observed entries (all items, including those
        the fit excluded).

    Returns
    -------
    IRTRankComparison
        ``tau`` (tau-b, ties handled) and its p-value over the fitted models.

    Raises
    ------
    ValueError
        Shapes disagree.
    """
    arr = _as_matrix(Y)
    if arr.shape[0] != fit.theta.shape[0]:
        raise EvalkitInputError("Y", f"Y has {arr.shape[0]} models but the fit has {fit.theta.shape[0]}")
    acc = np.nanmean(np.asarray(arr, float), axis=1)
    ok = np.isfinite(fit.theta) & np.isfinite(acc)
    tau, p = stats.kendalltau(fit.theta[ok], acc[ok])
    return IRTRankComparison(tau=float(tau), pvalue=float(p), n_models=int(ok.sum()),
                             theta=fit.theta, accuracy=acc)


def irt_group_easiness(fit: IRTFit, clusters: npt.ArrayLike) -> pd.DataFrame:
    """Summarise fitted easiness and discrimination by item group ([CBMM]).

    Parameters
    ----------
    fit : IRTFit
    clusters : (n_items,) labels
        Group of each item (category, difficulty level...).

    Returns
    -------
    DataFrame
        One row per group, sorted by median easiness: ``n_items``, ``n_fitted``,
        ``b_median``, ``b_mean``, ``a_median``, ``share_uninformative``.

    Raises
    ------
    ValueError
        ``clusters`` does not have one label per item.
    """
    lab = np.asarray(clusters)
    if lab.shape != fit.b.shape:
        raise EvalkitInputError("clusters", f"clusters has shape {lab.shape}; need one label per item {fit.b.shape}")
    as_labels(lab, lab.size, "clusters")  # NaN/None labels (whose items would vanish) and mixed types refused
    df = pd.DataFrame({"group": lab, "a": fit.a, "b": fit.b,
                       "flag": irt_flag_uninformative(fit, include_excluded=False)})
    g = df.groupby("group", sort=False)
    out = pd.DataFrame({
        "n_items": g.size(),
        "n_fitted": g["b"].count(),
        "b_median": g["b"].median(),
        "b_mean": g["b"].mean(),
        "a_median": g["a"].median(),
        "share_uninformative": g["flag"].mean(),
    })
    return out.sort_values("b_median")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


# --------------------------------------------------------------------------------------------
# model checks: item fit and residual dimensionality (kept apart from the fitting internals)
# --------------------------------------------------------------------------------------------


__all__ += ["IRTDimensionality", "irt_item_fit", "irt_dimensionality"]


@dataclass(frozen=True)
class IRTDimensionality:
    """Residual-dimensionality check of a unidimensional 2PL fit ([CBMM]).

    Attributes
    ----------
    share : (n_components,) float array
        Share of the residual sum of squares carried by each of the leading principal components
        of the residual matrix ``y - p`` (observed entries; unobserved ones are 0).
    null_share : (n_sim, n_components) float array
        The same shares for matrices simulated from the fitted model (same observed entries) and
        refitted with the same settings: what a truly unidimensional 2PL gives.
    p_value : float
        Parametric-bootstrap p-value of the first share, ``(1 + #{null >= observed}) / (n_sim + 1)``.
    item_loadings : (n_items,) float array
        The first residual component's loading of each item (unit length over fitted items,
        ``NaN`` for excluded items; its sign is arbitrary).
    model_scores : (n_models,) float array
        The first residual component's score of each model (``NaN`` for excluded models).
    """

    share: FloatArray
    null_share: FloatArray
    p_value: float
    item_loadings: FloatArray
    model_scores: FloatArray

    @property
    def ratio(self) -> float:
        """Observed first share divided by the mean of its null distribution (1 = as expected)."""
        return float(self.share[0] / np.mean(self.null_share[:, 0]))


def _fitted_probabilities(fit: IRTFit, shape: tuple[int, int]) -> np.ndarray:
    if fit.theta.shape != (shape[0],) or fit.a.shape != (shape[1],):
        raise EvalkitInputError(
            "Y", f"Y has shape {shape}, but the fit has {fit.theta.size} models and {fit.a.size} items"
        )
    return _sigmoid((np.outer(fit.theta, fit.a) + fit.b) / fit.sigma)


def irt_item_fit(fit: IRTFit, Y: Matrix, *, n_groups: int | None = None) -> pd.DataFrame:
    """Item fit of a 2PL fit: infit and outfit mean squares and a grouped chi-square ([CBMM]).

    With ``p_ij`` the fitted probability and ``w_ij = p_ij (1 - p_ij)`` over the models that
    answered item ``j``: outfit ``= mean_i (y_ij - p_ij)^2 / w_ij`` (sensitive to surprising
    answers far from an item's difficulty) and infit ``= sum_i (y_ij - p_ij)^2 / sum_i w_ij``
    (information-weighted). Both have expectation 1 when the model holds. Each is standardised
    by the Wilson-Hilferty cube-root transform with its model-based variance (Wright and Masters,
    *Rating Scale Analysis*, 1982): ``z = (MSQ^(1/3) - 1) (3 / q) + q / 3``, roughly N(0, 1)
    under the model. ``z > 2`` marks an item noisier than the model allows (under-fit, e.g. an
    item that depends on a second ability); ``z < -2`` one more deterministic than it
    (over-fit). The variances ignore that the parameters were estimated, which pulls the
    mean squares slightly below 1; with few models per item read the share of flagged items
    against the same statistic on data simulated from the fit, not against 5%.

    Mean squares cannot see a misfit that the fit absorbs by flattening the curve (an item whose
    success is not monotone in ability gets ``a`` near 0 and a mean square near 1). The grouped
    statistic can: the fitted models are split by ability into ``n_groups`` groups of about equal
    size, and per item ``X2 = sum_g (O_g - E_g)^2 / V_g`` compares the observed successes ``O_g`` of
    each group with their expectation ``E_g = sum p`` and variance ``V_g = sum p (1 - p)`` (in the
    spirit of Yen's Q1), referred to a chi-square with ``n_groups - 2`` degrees of freedom (two
    item parameters estimated; an approximation, since the groups use estimated abilities).

    Parameters
    ----------
    fit : IRTFit
        A fit of ``Y``.
    Y : (n_models, n_items) array or EvalMatrix
        The data the fit was made on (``NaN`` = unobserved).
    n_groups : int, optional
        Ability groups of the grouped statistic (at least 3); default ``min(10, max(3, n // 10))``
        for ``n`` fitted models.

    Returns
    -------
    DataFrame
        One row per item: ``n_obs``, ``infit``, ``outfit``, ``infit_z``, ``outfit_z``, ``group_chi2``,
        ``group_p`` (``NaN`` for items the fit excluded).

    Raises
    ------
    EvalkitInputError
        ``Y`` and ``fit`` have different shapes, or ``n_groups`` is below 3 or above the number of
        fitted models.
    """
    Ym = np.asarray(_as_matrix(Y), dtype=float)
    P = _fitted_probabilities(fit, Ym.shape)
    obs = ~np.isnan(Ym) & np.isfinite(P)
    W = np.where(obs, P * (1.0 - P), 0.0)
    R2 = np.where(obs, (np.nan_to_num(Ym) - P) ** 2, 0.0)
    # E (y - p)^4 for a Bernoulli(p)
    C = np.where(obs, W * ((1.0 - P) ** 3 + P**3), 0.0)
    n = obs.sum(axis=0).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        sw = W.sum(axis=0)
        infit = R2.sum(axis=0) / sw
        q_in = np.sqrt(np.maximum((C - W**2).sum(axis=0), 0.0)) / sw
        ratio = np.where(obs, R2 / np.where(obs, W, 1.0), 0.0)
        outfit = ratio.sum(axis=0) / n
        c_over_w2 = np.where(obs, C / np.where(obs, W, 1.0) ** 2, 0.0).sum(axis=0)
        q_out = np.sqrt(np.maximum(c_over_w2 / n**2 - 1.0 / n, 0.0))
        z_in = (np.cbrt(infit) - 1.0) * (3.0 / q_in) + q_in / 3.0
        z_out = (np.cbrt(outfit) - 1.0) * (3.0 / q_out) + q_out / 3.0
    fitted = np.flatnonzero(np.isfinite(fit.theta))
    g = min(10, max(3, fitted.size // 10)) if n_groups is None else int(n_groups)
    if not 3 <= g <= fitted.size:
        raise EvalkitInputError("n_groups", f"must be between 3 and the {fitted.size} fitted models, got {g}")
    order = fitted[np.argsort(fit.theta[fitted], kind="stable")]
    chi2 = np.zeros(Ym.shape[1])
    for rows_g in np.array_split(order, g):
        o = obs[rows_g]
        observed_g = np.where(o, np.nan_to_num(Ym[rows_g]), 0.0).sum(axis=0)
        expected_g = np.where(o, P[rows_g], 0.0).sum(axis=0)
        var_g = W[rows_g].sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            chi2 += np.where(var_g > 0, (observed_g - expected_g) ** 2 / var_g, 0.0)
    p_group = stats.chi2.sf(chi2, g - 2)
    bad = ~np.isfinite(fit.a) | (n == 0)
    out = pd.DataFrame({"n_obs": n.astype(int), "infit": infit, "outfit": outfit, "infit_z": z_in, "outfit_z": z_out,
                        "group_chi2": chi2, "group_p": p_group})
    out.loc[bad, ["infit", "outfit", "infit_z", "outfit_z", "group_chi2", "group_p"]] = np.nan
    return out


def _residual_svd(Ym: np.ndarray, P: np.ndarray, theta: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                  n_components: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sub_y, sub_p = Ym[np.ix_(rows, cols)], P[np.ix_(rows, cols)]
    obs = ~np.isnan(sub_y)
    R = np.where(obs, np.nan_to_num(sub_y) - sub_p, 0.0)
    # Remove from each item's residuals their least-squares fit on (1, theta) over the models that
    # answered it: maximum likelihood sets exactly these two sums to zero (the score equations of
    # the item's logistic regression), but a ridge does not, and the shrinkage it leaves behind
    # would otherwise show up as a spurious first component along the fitted ability itself.
    th = theta[rows]
    mask = obs.astype(float)
    n, s1, s2 = mask.sum(0), th @ mask, (th**2) @ mask
    r0, r1 = R.sum(0), th @ R
    det = n * s2 - s1**2
    with np.errstate(divide="ignore", invalid="ignore"):
        c1 = np.where(det > 1e-12, (n * r1 - s1 * r0) / det, 0.0)
        c0 = np.where(n > 0, (r0 - c1 * s1) / np.maximum(n, 1), 0.0)
    R = np.where(obs, R - c0 - np.outer(th, c1), 0.0)
    U, s, Vt = np.linalg.svd(R, full_matrices=False)
    share = s**2 / np.sum(s**2)
    return share[:n_components], U[:, 0] * s[0], Vt[0]


def irt_dimensionality(fit: IRTFit, Y: Matrix, *, n_sim: int = 19, n_components: int = 3,
                       seed: int | np.random.Generator | None = None) -> IRTDimensionality:
    """Is one ability enough? A parametric-bootstrap check of the residuals of a 2PL fit ([CBMM]).

    If the unidimensional model holds, the residuals ``y - p`` of the fitted entries are
    independent noise and no direction dominates them. If a second ability matters (some items
    favour models strong in, say, mathematics, others models strong in law), the first
    principal component of the residual matrix carries more than its share. The null
    distribution of that share is simulated: ``n_sim`` matrices are drawn from the fitted
    probabilities on the same observed entries, refitted with the fit's ``sigma``, ``ridge``
    and ``tol``, and their residuals decomposed the same way. Raw residuals are used rather than
    standardised ones, which would be dominated by the few near-deterministic items. Before the
    decomposition each item's residuals are made orthogonal to ``(1, theta)`` over the models that
    answered it, as maximum likelihood makes them: a ridge shrinks the item parameters and would
    otherwise leave a spurious component along the fitted ability.

    Parameters
    ----------
    fit : IRTFit
        A cBMM fit of ``Y`` (:func:`irt_fit`).
    Y : (n_models, n_items) array or EvalMatrix
        The data the fit was made on.
    n_sim : int
        Simulated matrices for the null distribution (default 19, the smallest number that can
        give a p-value of 0.05).
    n_components : int
        Leading components whose shares are reported (default 3).
    seed : int, Generator or None
        Seed of the simulation.

    Returns
    -------
    IRTDimensionality

    Raises
    ------
    EvalkitInputError
        Shapes disagree, ``n_sim < 1`` or ``n_components < 1``, or fewer than two fitted models.
    """
    if int(n_sim) < 1:
        raise EvalkitInputError("n_sim", f"must be at least 1, got {n_sim}")
    if int(n_components) < 1:
        raise EvalkitInputError("n_components", f"must be at least 1, got {n_components}")
    Ym = np.asarray(_as_matrix(Y), dtype=float)
    P = _fitted_probabilities(fit, Ym.shape)
    rows = np.flatnonzero(np.isfinite(fit.theta))
    cols = np.flatnonzero(np.isfinite(fit.a) & np.isfinite(fit.b))
    if rows.size < 2 or cols.size < 2:
        raise EvalkitInputError("fit", "needs at least two fitted models and two fitted items")
    k = min(int(n_components), rows.size)
    share, scores, loadings = _residual_svd(Ym, P, fit.theta, rows, cols, k)
    rng = np.random.default_rng(seed)
    observed = ~np.isnan(Ym[np.ix_(rows, cols)])
    P_sub = P[np.ix_(rows, cols)]
    ridge = float(fit.extra.get("ridge", 0.0))
    null = np.empty((int(n_sim), k))
    for r in range(int(n_sim)):
        Ys = np.where(observed, (rng.random(P_sub.shape) < P_sub).astype(float), np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # quasi-separated simulated items, as in the data
            fs = irt_fit(Ys, sigma=fit.sigma, ridge=ridge, tol=fit.tol)
        Ps = _fitted_probabilities(fs, Ys.shape)
        r_rows = np.flatnonzero(np.isfinite(fs.theta))
        r_cols = np.flatnonzero(np.isfinite(fs.a) & np.isfinite(fs.b))
        null[r] = _residual_svd(Ys, Ps, fs.theta, r_rows, r_cols, k)[0]
    p_value = float((1 + np.sum(null[:, 0] >= share[0])) / (int(n_sim) + 1))
    item_loadings = np.full(Ym.shape[1], np.nan)
    item_loadings[cols] = loadings
    model_scores = np.full(Ym.shape[0], np.nan)
    model_scores[rows] = scores
    return IRTDimensionality(share=share, null_share=null, p_value=p_value,
                             item_loadings=item_loadings, model_scores=model_scores)
