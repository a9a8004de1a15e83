"""Active evaluation with guarantees: FAQ and Pro-Active Inference, vectorised over models.

Estimate a new model's accuracy ``theta = mean_j z_j`` on a fixed bank of ``N`` items from
``n_b`` queried items, with a valid confidence interval, by learning from a historical
models x items matrix ``H`` [FAQ] (Wu et al., "Efficient Evaluation of LLM Performance with
Statistical Guarantees", arXiv 2601.20251; docs/methods/faq-active-evaluation.md):

1. :func:`active_factor_fit` / :func:`active_factor_cv`: a logistic factor model
   ``P(H_ij = 1) = sigmoid(u_i' v_j + b_j)`` on the observed entries of ``H`` (weight decay,
   full-batch L-BFGS with analytic gradients, rank by cross-validation on held-out entries).
   The new model's prior is ``N(mean(U), cov(U))``.
2. :func:`active_run` with ``method="faq"``: the hybrid sampler (oracle and active-learning
   scores, mixing and tempering schedules, ``tau`` floor, draws with replacement) and the online
   Laplace (Sherman-Morrison) update, for every (model, trial) at once as stacked arrays.
3. The Pro-Active Inference (PAI) estimator with the source's closed-form variance and a Wald
   interval.

Every baseline runs through the same :func:`active_run` (``METHODS``): uniform sampling,
post-hoc stratification by factor-model difficulty, a PPI++ control variate on the static
predictions, sequential active inference, FAQ without replacement (its interval has no guarantee; it
measures what dropping replacement does), and one labelled evalkit extension (``faq_weighted``).

The evaluation layer is in :mod:`evalkit.active_evaluation` (tuning, the three ESS definitions of
:func:`active_evaluate`, the ceiling, the semi-synthetic leaderboards, :func:`active_study`,
:func:`active_loo` and the widget figure); both modules' public names are importable from
:mod:`evalkit`.

Naming: one family, ``active_<action>`` (``active_factor_fit``, ``active_run``, ...).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, stats

from ._checks import (
    as_binary_vector,
    as_float_vector,
    check_alpha,
    check_budget,
    check_int,
    check_positive,
    check_seed,
    one_blas_thread,
    warn,
)
from .clustered import Estimate, _calibration_bins
from .errors import ConvergenceWarning, DegenerateDataWarning, EvalkitInputError, RangeWarning

__all__ = [
    "METHODS",
    "ActiveFactors",
    "ActiveParams",
    "ActiveResult",
    "active_factor_fit",
    "active_factor_cv",
    "active_run",
    "active_pai",
    "ACTIVE_SETTINGS",
    "AUTHORS_PARAMS",
    "INTERVALS",
    "active_sampling_trace",
]

Method = Literal["uniform", "stratified", "ppi", "active_inference", "faq", "faq_norep", "faq_weighted",
                 "uniform_ht"]
METHODS: tuple[str, ...] = ("uniform", "stratified", "ppi", "active_inference", "faq", "faq_norep", "faq_weighted",
                            "uniform_ht")
"""The methods :func:`active_run` knows, in the order tables show them.

``uniform``: uniform with replacement, sample mean. ``stratified``: the same sample,
post-stratified by factor-model difficulty. ``ppi``: the same sample with the PPI++ control
variate on the static (prior-mean) predictions, as ``ppi_py.ppi_mean_ci``. ``active_inference``:
sequential active inference (items stream in random order, each labelled with a probability;
the budget is met in expectation). ``faq``: the published method. ``faq_norep``: FAQ with drawn
items' probabilities set to zero (the paper's invalid heuristic). ``faq_weighted``: an evalkit
extension (not in the paper): PAI with predictable inverse-variance weights on the ``phi_t``.
``uniform_ht``: the source's released uniform baseline (every item queried independently with
probability ``n_b / N``, Horvitz-Thompson with a zero predictor, variance
``sum_i xi_i (1 - pi) z_i / pi^2 / N^2``, Wald interval clipped to [0, 1]); the budget is met in
expectation. Its variance is ``(1 - pi) / (1 - theta)`` times that of ``uniform``: the baseline of
the source's ESS multiplier (:func:`evalkit.active_evaluate`, ``ess_authors``)."""

Interval = Literal["wald", "korn_graubard"]
INTERVALS: tuple[str, ...] = ("wald", "korn_graubard")
"""The confidence intervals :func:`active_run` can put around an estimate.

``wald``: ``estimate +/- z se``, the source's interval (valid as ``n_b`` grows, by the
martingale CLT). ``korn_graubard``: the Clopper-Pearson interval at the effective sample size
``n_eff = p (1 - p) / se^2`` (``p`` the estimate clipped to [0, 1]) with the degrees-of-freedom
correction ``n_eff (z / t_{n_b - 1})^2`` of Korn and Graubard (1998, Survey Methodology 24), as for
survey proportions; ``n_eff = n_b`` when ``p`` is 0 or 1 or ``se`` is 0. It keeps its level when
``n_b`` is small or the estimate is near 0 or 1, where the Wald interval under-covers."""

_FLOAT = np.float32  # dtype of the (batch, items) work arrays
_CHUNK = 32  # rows per block of the FAQ loop (fixed, so results do not depend on the machine)
_THREADS = min(2, os.cpu_count() or 1)  # FAQ blocks run at once (any number gives the same bits)


# --------------------------------------------------------------------------------------------
# Stage 1: the logistic factor model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActiveFactors:
    """A fitted logistic factor model ``P(H_ij = 1) = sigmoid(U[i] @ V[j] + b[j])``.

    Attributes
    ----------
    V : (n_items, rank) float array
        Item factors (fixed during active evaluation).
    b : (n_items,) float array
        Item intercepts (not penalised).
    U : (n_models, rank) float array
        Factors of the historical models.
    prior_mean : (rank,) float array
        ``mean(U)``: the prior mean of a new model's factor.
    prior_cov : (rank, rank) float array
        ``cov(U)`` (``ddof=1``, plus ``1e-6`` on the diagonal): the prior covariance.
    rank : int
    weight_decay : float
    objective : float
        Final penalised mean log loss per observed entry.
    converged : bool
    cv : DataFrame or None
        The cross-validation table when fitted by :func:`active_factor_cv`.
    """

    V: np.ndarray
    b: np.ndarray
    U: np.ndarray
    prior_mean: np.ndarray
    prior_cov: np.ndarray
    rank: int
    weight_decay: float
    objective: float
    converged: bool
    cv: pd.DataFrame | None = field(default=None, compare=False)

    @property
    def n_items(self) -> int:
        """Number of items of the bank."""
        return int(self.V.shape[0])

    def predict(self, u: npt.ArrayLike | None = None) -> np.ndarray:
        """``sigmoid(u @ V' + b)``; ``u`` of shape ``(rank,)`` or ``(n, rank)``, default the prior mean."""
        uu = self.prior_mean if u is None else np.asarray(u, dtype=float)
        return _sigmoid(uu @ self.V.T + self.b)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _check_history(H: npt.ArrayLike, name: str = "H") -> np.ndarray:
    arr = np.asarray(H, dtype=float)
    if arr.ndim != 2:
        raise EvalkitInputError(name, f"{name} must be a (n_models, n_items) matrix, got shape {arr.shape}")
    if arr.shape[0] < 3 or arr.shape[1] < 2:
        raise EvalkitInputError(name, f"{name} needs at least 3 historical models and 2 items, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise EvalkitInputError(name, f"{name} contains infinite values")
    obs = arr[~np.isnan(arr)]
    if obs.size == 0:
        raise EvalkitInputError(name, f"{name} has no observed entries")
    bad = (obs != 0) & (obs != 1)
    if bad.any():
        raise EvalkitInputError(
            name, f"{name} must hold 0/1 outcomes (NaN = unobserved); found {int(bad.sum())} other values")
    empty_rows = int((np.isnan(arr).all(axis=1)).sum())
    if empty_rows:
        raise EvalkitInputError(name, f"{name} has {empty_rows} models with no observed entry; drop them first")
    return arr


def _factor_objective(theta: np.ndarray, H0: np.ndarray, M: np.ndarray, k: int, lam: float,
                      n_obs: int) -> tuple[float, np.ndarray]:
    n, N = H0.shape
    U = theta[: n * k].reshape(n, k)
    V = theta[n * k: n * k + N * k].reshape(N, k)
    b = theta[n * k + N * k:]
    X = (U.astype(_FLOAT) @ V.T.astype(_FLOAT)) + b.astype(_FLOAT)
    # log(1 + e^x) - h x, summed over observed entries
    loss = float(np.sum(M * (np.logaddexp(0.0, X) - H0 * X), dtype=np.float64))
    R = M * (_sigmoid(X) - H0)
    gU = (R @ V.astype(_FLOAT)).astype(float) + lam * U
    gV = (R.T @ U.astype(_FLOAT)).astype(float) + lam * V
    gb = R.sum(axis=0, dtype=np.float64)
    f = (loss + 0.5 * lam * (float(np.sum(U * U)) + float(np.sum(V * V)))) / n_obs
    g = np.concatenate([gU.ravel(), gV.ravel(), gb]) / n_obs
    return f, g


@one_blas_thread
def active_factor_fit(H: npt.ArrayLike, *, rank: int, weight_decay: float = 1.0, max_iter: int = 500,
                      tol: float = 1e-7) -> ActiveFactors:
    """Fit the logistic factor model of [FAQ] stage 1 on the observed entries of ``H``.

    Minimises ``(1/n_obs) [sum_obs logloss(H_ij, u_i' v_j + b_j) + (weight_decay / 2)
    (||U||^2 + ||V||^2)]`` by full-batch L-BFGS with analytic gradients, started from a truncated
    SVD of the centred matrix (so the fit is deterministic: no seed). The paper uses AdamW;
    METHODS allows any well-behaved optimiser.

    Parameters
    ----------
    H : (n_models, n_items) array
        Historical outcomes, 0/1 where observed and NaN where not.
    rank : int
        Number of factors ``k`` (the intercept ``b`` is extra).
    weight_decay : float
        Ridge penalty on ``U`` and ``V``, in units of observed entries.
    max_iter : int
        L-BFGS iterations.
    tol : float
        Gradient tolerance of L-BFGS.

    Returns
    -------
    ActiveFactors

    Raises
    ------
    ValueError
        ``H`` not a 2-D 0/1/NaN matrix, a model with no observed entry, ``rank < 1`` or
        ``weight_decay < 0``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> H = (rng.random((40, 60)) < 0.5).astype(float)
    >>> fit = active_factor_fit(H, rank=2)
    >>> fit.V.shape, fit.prior_cov.shape
    ((60, 2), (2, 2))
    """
    arr = _check_history(H)
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise EvalkitInputError("rank", f"rank must be a positive int, got {rank!r}")
    if not weight_decay >= 0:
        raise EvalkitInputError("weight_decay", f"weight_decay must be >= 0, got {weight_decay!r}")
    check_positive(weight_decay, "weight_decay", allow_zero=True)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    k = int(rank)
    n, N = arr.shape
    M = (~np.isnan(arr)).astype(_FLOAT)
    H0 = np.nan_to_num(arr, nan=0.0).astype(_FLOAT)
    n_obs = int(M.sum())
    # start: intercepts from smoothed item means, factors from the SVD of the centred residual
    item_mean = (H0.sum(0) + 0.5) / (M.sum(0) + 1.0)
    b0 = np.log(item_mean / (1 - item_mean))
    R0 = M * (H0 - item_mean.astype(_FLOAT))
    A, s, Bt = np.linalg.svd(R0.astype(float), full_matrices=False)
    kk = min(k, len(s))
    # the residual is about p (1 - p) ~ 1/4 of the logit deviation; zero-filling shrinks it by the
    # observed fraction
    root = np.sqrt(4.0 * s[:kk] / max(n_obs / (n * N), 1e-3))
    U0 = np.zeros((n, k))
    V0 = np.zeros((N, k))
    U0[:, :kk] = A[:, :kk] * root
    V0[:, :kk] = Bt[:kk].T * root
    x0 = np.concatenate([U0.ravel(), V0.ravel(), b0])
    res = optimize.minimize(_factor_objective, x0, args=(H0, M, k, float(weight_decay), n_obs), jac=True,
                            method="L-BFGS-B", options={"maxiter": max_iter, "gtol": tol, "maxcor": 20})
    if not res.success:
        warn(f"active_factor_fit stopped before L-BFGS converged ({res.message}; {res.nit} of max_iter={max_iter} "
             "iterations); raise max_iter or loosen tol", stacklevel=4, category=ConvergenceWarning)
    theta = res.x
    U = theta[: n * k].reshape(n, k).copy()
    V = theta[n * k: n * k + N * k].reshape(N, k).copy()
    b = theta[n * k + N * k:].copy()
    mean = U.mean(axis=0)
    cov = np.atleast_2d(np.cov(U, rowvar=False)) + 1e-6 * np.eye(k)
    return ActiveFactors(V=V, b=b, U=U, prior_mean=mean, prior_cov=cov, rank=k,
                         weight_decay=float(weight_decay), objective=float(res.fun), converged=bool(res.success))


def _holdout_split(arr: np.ndarray, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Hide a fraction ``holdout`` of the observed entries (flat indices chosen with ``seed``)."""
    rng = np.random.default_rng(seed)
    obs = np.flatnonzero(~np.isnan(arr))
    hide = rng.choice(obs, size=max(1, int(round(holdout * obs.size))), replace=False)
    flat = arr.copy().ravel()
    flat[hide] = np.nan
    return flat.reshape(arr.shape), hide


def _heldout_logits(train: np.ndarray, hide: np.ndarray, *, rank: int, weight_decay: float,
                    max_iter: int) -> tuple[np.ndarray, bool]:
    """Fit on ``train`` and return the logits of the hidden entries (a model left with no observed
    entry is predicted at the prior mean) and whether the fit converged."""
    keep = ~np.isnan(train).all(axis=1)
    fit = active_factor_fit(train[keep], rank=rank, weight_decay=weight_decay, max_iter=max_iter)
    U = np.zeros((train.shape[0], fit.rank))
    U[keep] = fit.U
    U[~keep] = fit.prior_mean
    hr, hc = np.unravel_index(hide, train.shape)
    return np.einsum("ik,ik->i", U[hr], fit.V[hc]) + fit.b[hc], bool(fit.converged)


def active_factor_calibration(H: npt.ArrayLike, factors: ActiveFactors, *, holdout: float = 0.1, seed: int,
                              n_bins: int = 10, max_iter: int = 500) -> pd.DataFrame:
    """Calibration of the factor model on held-out entries of the history.

    The entries that :func:`active_factor_cv` hides with the same ``holdout`` and ``seed`` are hidden
    again, the model is refitted on the rest at the rank and weight decay of ``factors``, and the
    predicted probabilities of the hidden entries are cut into ``n_bins`` quantile bins. In each bin
    the observed rate of correct answers should match the mean prediction. FAQ's estimate stays
    unbiased whatever the predictions; what a miscalibrated model costs is gain, because its sampler
    spends the budget by ``sqrt(p (1 - p))`` of predictions that are too sure or not sure enough.

    Parameters
    ----------
    H : (n_models, n_items) array
        The history the model was fitted to: 0/1 with NaN for unobserved.
    factors : ActiveFactors
        The fitted model whose rank and weight decay are checked.
    holdout : float
        Fraction of observed entries held out, in (0, 0.5].
    seed : int
        Chooses the held-out entries (the seed given to :func:`active_factor_cv` reproduces its split).
    n_bins : int
        Number of quantile bins (at least 2).
    max_iter : int

    Returns
    -------
    DataFrame
        One row per bin: ``n``, ``p_mean`` (mean held-out prediction), ``observed`` (rate of correct
        answers), ``gap = observed - p_mean``, ``se`` (binomial, under the predictions) and
        ``z = gap / se``. The binomial SE treats a bin's entries as independent; they share models
        and items, so read ``gap`` in points first and ``z`` as optimistic. ``attrs["heldout_logloss"]``
        holds the mean log loss of the hidden entries (for the seed of the cross-validation, the
        value in ``factors.cv`` at this rank).

    Raises
    ------
    EvalkitInputError
        Bad ``H``, ``factors`` of another bank, ``holdout`` outside (0, 0.5] or fewer than 2 bins.
    """
    arr = _check_history(H)
    if not isinstance(factors, ActiveFactors):
        raise EvalkitInputError("factors", f"factors must be an ActiveFactors fit, got {type(factors).__name__}")
    if factors.n_items != arr.shape[1]:
        raise EvalkitInputError("factors", f"factors was fitted to {factors.n_items} items, H has {arr.shape[1]}")
    check_seed(seed)
    n_bins = check_int(n_bins, "n_bins", minimum=2)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if not 0 < holdout <= 0.5:
        raise EvalkitInputError("holdout", f"holdout must be in (0, 0.5], got {holdout!r}")
    train, hide = _holdout_split(arr, holdout, seed)
    x, _ = _heldout_logits(train, hide, rank=factors.rank, weight_decay=factors.weight_decay,
                           max_iter=max_iter)  # active_factor_fit warns if the refit stops early
    y = arr.ravel()[hide]
    table = _calibration_bins(_sigmoid(x), y, n_bins).rename(columns={"rate": "observed"})
    table.insert(3, "gap", table["observed"] - table["p_mean"])
    table.attrs["heldout_logloss"] = float(np.mean(np.logaddexp(0.0, x) - y * x))
    return table


def active_factor_cv(H: npt.ArrayLike, *, ranks: Sequence[int] = (2, 4, 8, 16, 32),
                     weight_decays: Sequence[float] = (1.0,), holdout: float = 0.1, seed: int,
                     max_iter: int = 500) -> ActiveFactors:
    """Choose the rank (and weight decay) by held-out log loss, then refit on every entry.

    A fraction ``holdout`` of the observed entries (chosen with ``seed``) is hidden; each
    ``(rank, weight_decay)`` is fitted on the rest with :func:`active_factor_fit` and scored by
    the mean log loss of the hidden entries. The best setting is refitted on all of ``H``.

    Parameters
    ----------
    H : (n_models, n_items) array
        0/1 with NaN for unobserved.
    ranks, weight_decays : sequences
        The grid.
    holdout : float
        Fraction of observed entries held out, in (0, 0.5].
    seed : int
    max_iter : int

    Returns
    -------
    ActiveFactors
        Fitted on all entries, with ``cv`` holding one row per setting
        (``rank, weight_decay, heldout_logloss, heldout_accuracy``).

    Raises
    ------
    ValueError
        Bad ``H`` (see :func:`active_factor_fit`), an empty grid or ``holdout`` outside (0, 0.5].
    """
    arr = _check_history(H)
    check_seed(seed)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if not 0 < holdout <= 0.5:
        raise EvalkitInputError("holdout", f"holdout must be in (0, 0.5], got {holdout!r}")
    if len(ranks) == 0 or len(weight_decays) == 0:
        raise EvalkitInputError("ranks", "give at least one rank and one weight decay")
    train, hide = _holdout_split(arr, holdout, seed)
    rows = []
    y = arr.ravel()[hide]
    for k in ranks:
        for lam in weight_decays:
            x, fit_converged = _heldout_logits(train, hide, rank=int(k), weight_decay=float(lam),
                                               max_iter=max_iter)
            ll = float(np.mean(np.logaddexp(0.0, x) - y * x))
            acc = float(np.mean((x > 0) == (y == 1)))
            rows.append({"rank": int(k), "weight_decay": float(lam), "heldout_logloss": ll,
                         "heldout_accuracy": acc, "converged": fit_converged})
    cv = pd.DataFrame(rows)
    i_best = int(np.argmin(cv["heldout_logloss"].to_numpy()))
    final = active_factor_fit(arr, rank=int(cv["rank"].to_numpy()[i_best]),
                              weight_decay=float(cv["weight_decay"].to_numpy()[i_best]),
                              max_iter=max_iter)
    return replace(final, cv=cv)


# --------------------------------------------------------------------------------------------
# Stages 2 and 3: samplers, online Laplace update, PAI
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActiveParams:
    """Hyper-parameters of the FAQ sampler (METHODS section 2).

    ``alpha_t = max(0, 1 - t / (rho n_b))`` mixes the active-learning score in early;
    ``beta_t = beta0 min(1, t / (gamma n_b))`` tempers the mixture; ``tau`` is the uniform floor.
    ``tau`` is also the floor of sequential active inference. ``n_strata`` is used by the
    stratified baseline. ``rho = 0`` turns the active-learning score off (``alpha_t = 0``) and
    ``gamma = 0`` tempers at ``beta0`` from the first query: with both 0 and ``beta0 = 1`` the
    sampler is the oracle ``sqrt(p (1 - p))`` score with a ``tau`` floor throughout.
    """

    beta0: float = 1.0
    rho: float = 0.2
    gamma: float = 0.2
    tau: float = 0.2
    n_strata: int = 10

    def __post_init__(self) -> None:
        if not self.beta0 >= 0:
            raise EvalkitInputError("beta0", f"beta0 must be >= 0, got {self.beta0}")
        if not (self.rho >= 0 and self.gamma >= 0):
            raise EvalkitInputError("rho", f"rho and gamma must be >= 0, got rho={self.rho}, gamma={self.gamma}")
        if not 0 < self.tau <= 1:
            raise EvalkitInputError(
                "tau", f"tau must be in (0, 1] (tau = 0 lets q_t(j) reach 0 and breaks PAI), got {self.tau}")
        if self.n_strata < 1:
            raise EvalkitInputError("n_strata", f"n_strata must be >= 1, got {self.n_strata}")


AUTHORS_PARAMS = ActiveParams(beta0=1.0, rho=0.0, gamma=0.0, tau=0.05)
"""The source's hyper-parameters for a fully observed MMLU-Pro history at budgets of 5% and more
(their released ``best_settings``: chosen on the last 20% of historical models from a 400-point
grid by the smallest mean interval width). Against evalkit's defaults (``rho = gamma = tau = 0.2``,
tuned by MSE) it drops the active-learning phase and the tempering ramp and lowers the uniform
floor from 20% to 5%: intervals are narrower on average, and the weights ``1 / (N q)`` can reach 20
instead of 5, so an unexpected answer on an item the model was sure of moves the estimate more."""

ACTIVE_SETTINGS: dict[str, dict[str, Any]] = {
    "default": {"params": ActiveParams(), "variance": "empirical", "interval": "korn_graubard"},
    "faithful": {"params": ActiveParams(), "variance": "source", "interval": "wald"},
    "authors": {"params": AUTHORS_PARAMS, "variance": "source", "interval": "wald"},
}
"""Named settings of :func:`active_run` (``active_run(Z, fac, n_b, **ACTIVE_SETTINGS[name])``).

``default``: evalkit's defaults, the empirical PAI variance with the Korn-Graubard interval (the
setting that keeps 95% coverage in leave-one-model-out on the real matrices, see
docs/methods/faq-active-evaluation.md). ``faithful``: the source's procedure (closed-form variance,
Wald interval) with evalkit's hyper-parameters, for the reproduction rows. ``authors``: the source's
procedure with the source's hyper-parameters (:data:`AUTHORS_PARAMS`). The point estimate is the
same under every setting with the same ``params``; only the interval changes."""


def _effective_params(params: ActiveParams, budget: int) -> ActiveParams:
    """``rho = 0`` and ``gamma = 0`` as the sampler loop reads them (``rho n_b``, ``gamma n_b`` below 1).

    ``alpha_t = max(0, 1 - t / (rho n_b)) = 0`` for every ``t >= 1`` and ``beta_t = beta0`` when
    ``rho n_b`` and ``gamma n_b`` are below 1, so half a query stands for zero exactly.
    """
    half = 0.5 / budget
    return replace(params, rho=params.rho if params.rho > 0 else half,
                   gamma=params.gamma if params.gamma > 0 else half)


def _korn_graubard(est: np.ndarray, se: np.ndarray, n_b: np.ndarray, alpha: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson at the effective sample size with the df correction (see :data:`INTERVALS`)."""
    p = np.clip(est, 0.0, 1.0)
    nb = np.asarray(n_b, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        n_eff = np.where((p > 0) & (p < 1) & (se > 0), p * (1 - p) / np.square(se), nb)
    z = stats.norm.ppf(1 - alpha / 2)
    t = stats.t.ppf(1 - alpha / 2, np.maximum(nb - 1, 1))
    n2 = n_eff * (z / t) ** 2
    x = p * n2
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(x > 0, stats.beta.ppf(alpha / 2, x, n2 - x + 1), 0.0)
        hi = np.where(x < n2, stats.beta.ppf(1 - alpha / 2, x + 1, n2 - x), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


def _uniform_ht(Z: np.ndarray, budget: int, rngs: list[np.random.Generator], alpha: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The source's uniform baseline: Bernoulli sampling, Horvitz-Thompson, zero predictor, clipped Wald."""
    B, N = Z.shape
    pi = budget / N
    xi = np.stack([g.random(N) < pi for g in rngs])
    hits = (xi * Z).sum(axis=1)
    est = hits / (N * pi)
    se = np.sqrt(hits * (1 - pi) / pi**2) / N
    lo, hi = _wald(est, se, alpha)
    return est, se, np.maximum(lo, 0.0), np.minimum(hi, 1.0), xi.sum(axis=1)


@dataclass(frozen=True)
class ActiveResult:
    """Estimates of every (model, trial) of one :func:`active_run` call.

    Attributes
    ----------
    method : str
    budget : int
        ``n_b``, the number of items queried per model and trial (in expectation for
        ``active_inference``), an int in ``2 .. n_items``. A budget is a count of items in every
        function that runs one evaluation; a fraction such as ``0.1`` is refused (pass
        ``round(0.1 * n_items)``). Only the study drivers :func:`active_study` and
        :func:`active_loo`, which sweep banks of different sizes, take fractions of the bank.
    estimate, se, ci_low, ci_high : (n_models, n_trials) float arrays
    truth : (n_models,) float array
        ``mean_j z_j`` of each model's full row.
    n_queries : (n_models, n_trials) int array
        Queries actually made.
    alpha : float
    seconds : float
        Wall time of the call.
    params : ActiveParams
    """

    method: str
    budget: int
    estimate: np.ndarray
    se: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    truth: np.ndarray
    n_queries: np.ndarray
    alpha: float
    seconds: float
    params: ActiveParams

    def to_frame(self) -> pd.DataFrame:
        """Long table in the :func:`evalkit.mc_run` format (``rep`` = model x trial), plus
        ``model``, ``trial``, ``budget``."""
        n_m, n_t = self.estimate.shape
        model = np.repeat(np.arange(n_m), n_t)
        trial = np.tile(np.arange(n_t), n_m)
        return pd.DataFrame({
            "budget": self.budget, "model": model, "trial": trial, "rep": model * n_t + trial,
            "estimator": self.method, "truth": self.truth[model], "estimate": self.estimate.ravel(),
            "se": self.se.ravel(), "ci_low": self.ci_low.ravel(), "ci_high": self.ci_high.ravel(), "error": "",
        })


def _check_outcomes(Z: npt.ArrayLike, n_items: int | None, name: str = "Z") -> np.ndarray:
    """``Z`` as a (n_models, n_items) 0/1 float matrix (a vector is one model); ``n_items`` None: any width."""
    try:
        arr = np.asarray(Z, dtype=float)
    except (TypeError, ValueError) as exc:
        raise EvalkitInputError(name, f"{name} must be a (n_models, n_items) 0/1 matrix of numbers ({exc})") from exc
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.size == 0:
        raise EvalkitInputError(name, f"{name} must be a non-empty (n_models, n_items) 0/1 matrix, got shape "
                                      f"{arr.shape}")
    if n_items is not None and arr.shape[1] != n_items:
        raise EvalkitInputError(name, f"{name} has {arr.shape[1]} items but the factor model has {n_items}; "
                                      "they must align")
    if np.isnan(arr).any():
        raise EvalkitInputError(name,
            f"{name} contains {int(np.isnan(arr).sum())} NaN values: the item bank must be fully observed for "
            "the queried models (restrict the bank to a model's observed items, as active_run's real-data "
            "use in notebook 06 does)"
        )
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        raise EvalkitInputError(name, f"{name} must hold 0/1 outcomes; found {int(bad.sum())} other values")
    return arr


def _rngs(seed: int | np.random.SeedSequence, n_models: int, n_trials: int) -> list[np.random.Generator]:
    """One generator per (model, trial), spawned from one SeedSequence, row-major."""
    # a fresh copy: SeedSequence.spawn is stateful, and the same seed must give the same draws
    root = (np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key)
            if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed))
    out: list[np.random.Generator] = []
    for child in root.spawn(n_models):
        out.extend(np.random.default_rng(g) for g in child.spawn(n_trials))
    return out


def _draw_inverse_cdf(q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One index per row of ``q`` (rows sum to about 1) from uniforms ``u`` by inverse CDF."""
    cdf = np.cumsum(q, axis=1)
    target = u * cdf[:, -1]
    idx = (cdf < target[:, None]).sum(axis=1)
    return np.minimum(idx, q.shape[1] - 1)


def _wald(est: np.ndarray, se: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    z = stats.norm.ppf(1 - alpha / 2)
    return est - z * se, est + z * se


def _uniform_family(Z: np.ndarray, factors: ActiveFactors, budget: int, method: str, params: ActiveParams,
                    rngs: list[np.random.Generator]) -> tuple[np.ndarray, np.ndarray]:
    """Uniform draws with replacement and three estimators on the same sample."""
    B, N = Z.shape
    idx = np.stack([g.integers(0, N, size=budget) for g in rngs])
    z = np.take_along_axis(Z, idx, axis=1)
    if method == "uniform":
        est = z.mean(axis=1)
        se = z.std(axis=1, ddof=1) / math.sqrt(budget) if budget > 1 else np.full(B, np.nan)
        return est, se
    f_all = factors.predict()  # static predictions at the prior mean
    if method == "ppi":
        return _ppi_mean(z, f_all[idx], f_all)
    # post-stratification by factor-model difficulty
    K = int(min(params.n_strata, N))
    edges = np.quantile(f_all, np.linspace(0, 1, K + 1)[1:-1])
    stratum = np.searchsorted(edges, f_all, side="right")
    W = np.bincount(stratum, minlength=K) / N
    s = stratum[idx]
    flat = (np.arange(B)[:, None] * K + s).ravel()
    cnt = np.bincount(flat, minlength=B * K).reshape(B, K)
    tot = np.bincount(flat, weights=z.ravel(), minlength=B * K).reshape(B, K)
    tot2 = np.bincount(flat, weights=(z * z).ravel(), minlength=B * K).reshape(B, K)
    overall = z.mean(axis=1, keepdims=True)
    overall_var = z.var(axis=1, ddof=1, keepdims=True) if budget > 1 else np.zeros((B, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_h = np.where(cnt > 0, tot / np.maximum(cnt, 1), overall)  # empty stratum: the overall mean
        var_h = np.where(cnt > 1, (tot2 - cnt * mean_h**2) / np.maximum(cnt - 1, 1), overall_var)
    est = (W * mean_h).sum(axis=1)
    se = np.sqrt((W**2 * var_h / np.maximum(cnt, 1)).sum(axis=1))
    return est, se


def _ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PPI++ mean with the power-tuned lambda, row by row, exactly as ``ppi_py.ppi_mean_ci``.

    ``y, yhat``: (B, n) labels and predictions of the sample; ``yhat_all``: (N,) predictions of
    the whole bank (ppi_py's "unlabeled" set).
    """
    B, n = y.shape
    N = yhat_all.shape[0]
    # lambda from the PPI (lambda = 1) point estimate; the centring cancels in both moments
    yc = y - y.mean(axis=1, keepdims=True)
    fc = yhat - yhat.mean(axis=1, keepdims=True)
    cov = 2.0 * (yc * fc).sum(axis=1) / n
    both_sum = yhat.sum(axis=1) + yhat_all.sum()
    both_mean = both_sum / (n + N)
    ss = ((yhat - both_mean[:, None]) ** 2).sum(axis=1) + (
        (yhat_all**2).sum() - 2 * both_mean * yhat_all.sum() + N * both_mean**2)
    var_hat = ss / (n + N - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lam = np.clip(np.where(var_hat > 0, cov / (2 * (1 + n / N) * var_hat), 0.0), 0.0, 1.0)
    est = lam * yhat_all.mean() + (y - lam[:, None] * yhat).mean(axis=1)
    imputed = (lam * yhat_all.std()) ** 2 / N
    rect = (y - lam[:, None] * yhat).std(axis=1) ** 2 / n
    return est, np.sqrt(imputed + rect)


def _laplace_step(u: np.ndarray, S: np.ndarray, v: np.ndarray, z: np.ndarray, p: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Batched rank-one Laplace update; returns (u_new, S_new, delta_u, Sv, coef).

    ``S <- S - w S v v' S / (1 + w v' S v)``, ``u <- u + S_new v (z - p)`` with ``w = p (1 - p)``.
    """
    w = p * (1 - p)
    Sv = np.matmul(S, v[:, :, None])[:, :, 0]
    vSv = np.einsum("bk,bk->b", v, Sv)
    coef = w / (1 + w * vSv)
    Svc = Sv * np.sqrt(coef)[:, None]
    S_new = S - np.matmul(Svc[:, :, None], Svc[:, None, :])
    S_new_v = Sv / (1 + w * vSv)[:, None]
    delta = S_new_v * (z - p)[:, None]
    return u + delta, S_new, delta, Svc


def active_pai(z: npt.ArrayLike, q: npt.ArrayLike, p: npt.ArrayLike, p_mean: npt.ArrayLike, n_items: int, *,
               alpha: float = 0.05, variance: Literal["source", "empirical"] = "source") -> Estimate:
    """The Pro-Active Inference estimate and Wald interval from the log of one adaptive run [FAQ].

    With ``N = n_items``, ``phi_t = p_mean_t + (z_t - p_t) / (N q_t)`` and
    ``theta_hat = mean_t phi_t``. The source's closed-form variance is
    ``sigma^2 = (1/(n N^2)) sum_t (z_t - p_t)^2 / q_t^2 - (1/(n N^2)) sum_t (HT - N p_mean_t)^2``
    with ``HT = (1/n) sum_s z_s / q_s``, and the interval is
    ``theta_hat -/+ z_{1-alpha/2} sigma / sqrt(n)``. Valid for any sampler that draws with
    replacement from a ``q_t`` fixed before step ``t`` with ``q_t(j) > 0`` for every item.

    Parameters
    ----------
    z : (n,) 0/1 array
        Outcome of the item queried at step ``t``.
    q : (n,) array
        Its sampling probability ``q_t(I_t)``, in (0, 1].
    p : (n,) array
        The working model's prediction ``p_{I_t}^(t-1)`` for it.
    p_mean : (n,) array
        ``(1/N) sum_j p_j^(t-1)``: the model's bank accuracy before step ``t``.
    n_items : int
        ``N``, the size of the bank.
    alpha : float
    variance : {"source", "empirical"}
        The source's closed form, or the empirical variance of the ``phi_t``.

    Returns
    -------
    Estimate
        ``method="PAI"``; ``n`` is the number of steps.

    Raises
    ------
    ValueError
        Misaligned inputs, fewer than 2 steps, ``z`` not 0/1, ``q`` outside (0, 1], NaN.

    Examples
    --------
    >>> est = active_pai([1, 0], [0.01, 0.02], [0.6, 0.5], [0.5, 0.5], n_items=100)
    >>> round(est.estimate, 3)
    0.575
    """
    check_int(n_items, "n_items", minimum=1)
    if variance not in ("source", "empirical"):
        raise EvalkitInputError("variance", f"variance must be 'source' or 'empirical', got {variance!r}")
    check_alpha(alpha)
    zz = as_binary_vector(z, "z")
    qq = as_float_vector(q, "q")
    pp = as_float_vector(p, "p")
    pm = as_float_vector(p_mean, "p_mean")
    if not zz.size == qq.size == pp.size == pm.size:
        raise EvalkitInputError(
            "z", f"z, q, p and p_mean must have the same length, got {zz.size}, {qq.size}, {pp.size}, "
                         f"{pm.size}")
    if zz.size < 2:
        raise EvalkitInputError("z", f"PAI needs at least 2 steps (z, q, p and p_mean of length >= 2), got {zz.size}")
    if ((qq <= 0) | (qq > 1)).any():
        raise EvalkitInputError("q", "q must hold the sampling probabilities q_t(I_t), in (0, 1]")
    if ((pp < 0) | (pp > 1) | (pm < 0) | (pm > 1)).any():
        raise EvalkitInputError("p", "p and p_mean must be probabilities in [0, 1]")
    est, se = _pai(zz[None], qq[None], pp[None], pm[None], int(n_items), variance)
    lo, hi = _wald(est, se, alpha)
    return Estimate(float(est[0]), float(se[0]), float(lo[0]), float(hi[0]), math.inf, "PAI", int(zz.size))


def _pai(z: np.ndarray, q: np.ndarray, p: np.ndarray, p_mean: np.ndarray, N: int, variance: str
         ) -> tuple[np.ndarray, np.ndarray]:
    """Rows of logs ``(B, n)`` -> (estimate, se) of PAI (see :func:`active_pai`)."""
    n = z.shape[1]
    phi = p_mean + (z - p) / (N * q)
    est = phi.mean(axis=1)
    if variance == "source":
        ht = (z / q).mean(axis=1, keepdims=True)  # (1/n) sum_s z_s / q_s
        s2 = ((((z - p) / q) ** 2).sum(axis=1) - ((ht - N * p_mean) ** 2).sum(axis=1)) / (n * N**2)
    else:
        s2 = ((phi - est[:, None]) ** 2).sum(axis=1) / (n - 1)
    if (s2 <= 0).any():
        warn(f"{int((s2 <= 0).sum())} PAI variance estimates were <= 0 (tiny budget?) and were set to 0")
    return est, np.sqrt(np.maximum(s2, 0.0) / n)


def _draw_blocked(mix: np.ndarray, target: np.ndarray, blk: int) -> np.ndarray:
    """Inverse-CDF draw per row of the unnormalised ``mix`` (width a multiple of ``blk``).

    Two levels (block sums, then one block) replace a full cumulative sum: one pass over ``mix``.
    ``target`` is in ``[0, row total)``.
    """
    B, Np = mix.shape
    sums = mix.reshape(B, Np // blk, blk).sum(axis=2, dtype=np.float64)
    csum = np.cumsum(sums, axis=1)
    block = np.minimum((csum <= target[:, None]).sum(axis=1), Np // blk - 1)
    # a block with zero mass is never chosen unless rounding pushes past the end: step back
    while True:
        empty = sums[np.arange(B), block] <= 0
        if not empty.any():
            break
        block[empty] -= 1
    before = np.where(block > 0, csum[np.arange(B), np.maximum(block - 1, 0)], 0.0)
    cols = block[:, None] * blk + np.arange(blk)
    inner = np.cumsum(np.take_along_axis(mix, cols, axis=1).astype(np.float64), axis=1)
    pos = np.minimum((inner <= (target - before)[:, None]).sum(axis=1), blk - 1)
    # never land on a zero-probability item (rounding at a block's right end)
    vals = np.take_along_axis(mix, cols, axis=1)
    for r in np.flatnonzero(vals[np.arange(B), pos] <= 0):
        nz = np.flatnonzero(vals[r] > 0)
        pos[r] = nz[np.searchsorted(nz, pos[r], side="right") - 1] if (nz <= pos[r]).any() else nz[0]
    return block * blk + pos


_BLOCK = 128  # items per block of the two-level sampler


def _mixture(w: np.ndarray, d: np.ndarray | None, S: np.ndarray, V32: np.ndarray, VT32: np.ndarray, N: int,
             alpha_t: float, beta_t: float, mix: np.ndarray, s_a: np.ndarray | None, den: np.ndarray | None,
             work: np.ndarray) -> np.ndarray:
    """The unnormalised sampling mixture of one FAQ step, written into ``mix`` (pads not zeroed).

    ``((1 - alpha_t) sqrt(w) / sum sqrt(w) + alpha_t s / sum s)^beta_t`` with the active-learning
    score ``s_j = w_j (v_j' Sigma g)^2 / (1 + w_j d_j)``; ``s_a``, ``den`` and ``work`` are
    scratch arrays of the shape of ``w``.
    """
    if alpha_t > 0:
        assert d is not None and s_a is not None and den is not None
        np.sqrt(w, out=mix)
        mix /= mix.sum(axis=1, keepdims=True)
        g = (w @ V32) / N  # (B, k): (1/N) sum_j w_j v_j
        Sg = np.matmul(S, g.astype(float)[:, :, None])[:, :, 0].astype(_FLOAT)
        c = np.matmul(Sg, VT32, out=work)  # v_j' Sigma g
        np.multiply(w, c, out=s_a)
        s_a *= c
        np.multiply(w, d, out=den)
        den += 1
        s_a /= den
        tot = s_a.sum(axis=1, keepdims=True)
        tot = np.where(tot > 0, tot, _FLOAT(1))
        s_a *= _FLOAT(alpha_t) / tot
        mix *= _FLOAT(1 - alpha_t)
        mix += s_a
        if beta_t != 1.0:
            np.power(mix, _FLOAT(beta_t), out=mix)
    elif beta_t == 1.0:
        np.sqrt(w, out=mix)
    elif beta_t == 2.0:
        mix[...] = w
    else:  # sqrt(w)^beta = w^(beta / 2)
        np.power(w, _FLOAT(beta_t / 2), out=mix)
    return mix


def _faq_batch(Z: np.ndarray, factors: ActiveFactors, budget: int, params: ActiveParams,
               rngs: list[np.random.Generator], *, replace_draws: bool, weighted: bool,
               variance: str, trace: bool = False) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The FAQ loop (stage 2) and the PAI estimate (stage 3) for a block of rows."""
    B, N = Z.shape
    n_b = budget
    tau = params.tau
    Np = -(-N // _BLOCK) * _BLOCK  # items padded to whole blocks; pads carry zero mass
    V = factors.V
    Vp = np.zeros((Np, V.shape[1]))
    Vp[:N] = V
    V32 = Vp.astype(_FLOAT)
    VT32 = np.ascontiguousarray(V32.T)
    bp = np.zeros(Np)
    bp[:N] = factors.b
    unif = np.stack([g.random(n_b) for g in rngs])
    u = np.tile(factors.prior_mean, (B, 1))
    S = np.tile(factors.prior_cov, (B, 1, 1))
    # half the logits, x / 2, kept up to date (halving is exact in binary floating point, so
    # tanh(x / 2) sees the same bits as if x were kept and halved at every step)
    hlogits = ((u.astype(_FLOAT) @ VT32) + bp.astype(_FLOAT)) * _FLOAT(0.5)
    d = None
    if params.rho * n_b > 1:  # alpha_t > 0 for some t >= 1
        d = np.einsum("jk,kl,jl->j", Vp, factors.prior_cov, Vp).astype(_FLOAT)[None, :].repeat(B, 0)
    rows = np.arange(B)
    drawn = np.zeros((B, Np), dtype=bool) if not replace_draws else None
    log_z = np.empty((B, n_b))  # z_{I_t}
    log_q = np.empty((B, n_b))  # q_t(I_t)
    log_p = np.empty((B, n_b))  # p_{I_t}^(t-1)
    log_pm = np.empty((B, n_b))  # (1/N) sum_j p_j^(t-1)
    cvar = np.empty((B, n_b))  # model-based conditional variance of phi_t (faq_weighted)
    tr_q: list[np.ndarray] = []
    tr_p: list[np.ndarray] = []
    half = _FLOAT(0.5)
    quarter = _FLOAT(0.25)
    one = _FLOAT(1)
    # work arrays allocated once and reused by every step (out=): no (rows, items) temporaries
    th = np.empty((B, Np), dtype=_FLOAT)
    w = np.empty((B, Np), dtype=_FLOAT)
    mix_buf = np.empty((B, Np), dtype=_FLOAT)
    s_a = np.empty((B, Np), dtype=_FLOAT) if d is not None else None
    den = np.empty((B, Np), dtype=_FLOAT) if d is not None else None
    upd = np.empty((B, Np), dtype=_FLOAT)
    for t in range(1, n_b + 1):
        # p = sigmoid(x) = (1 + tanh(x/2)) / 2 and w = p (1 - p) = (1 - tanh(x/2)^2) / 4
        np.tanh(hlogits, out=th)
        ps = 0.5 * (N + th[:, :N].sum(axis=1, dtype=np.float64))  # sum_j p_j^(t-1)
        alpha_t = max(0.0, 1.0 - t / (params.rho * n_b))
        beta_t = params.beta0 * min(1.0, t / (params.gamma * n_b))
        if alpha_t <= 0 and beta_t == 1.0 and not weighted:
            # mix = sqrt(w) and w is not needed: 2 sqrt(w) = sqrt(1 - tanh^2) exactly (scaling
            # by 2 and 1/4 is exact), and every later use of mix (its total, the draw,
            # mix_i / total) is invariant to an exact factor 2
            mix = np.square(th, out=mix_buf)
            np.subtract(one, mix, out=mix)
            np.sqrt(mix, out=mix)
            mix[:, N:] = 0
        else:
            np.square(th, out=w)
            np.subtract(one, w, out=w)
            w *= quarter
            w[:, N:] = 0
            mix = _mixture(w, d, S, V32, VT32, N, alpha_t, beta_t, mix_buf, s_a, den, upd)
        if drawn is not None:
            mix[drawn] = 0
            n_left = N - drawn.sum(axis=1)
        else:
            n_left = np.full(B, N)
        # q_t = tau / N + (1 - tau) mix / sum(mix); one uniform draws from the mixture: below
        # tau, a uniform item (among those left); above, the inverse CDF of mix
        uu = unif[:, t - 1]
        low = uu < tau
        total = mix.sum(axis=1, dtype=np.float64)
        # (tau = 1: every draw is uniform and the inverse-CDF target is never used)
        above = np.clip((uu - tau) / (1 - tau), 0, 1) if tau < 1 else np.zeros_like(uu)
        idx = _draw_blocked(mix, above * total, _BLOCK)
        if low.any():
            kth = np.floor(uu[low] / tau * n_left[low]).astype(int)
            if drawn is None:
                idx[low] = kth
            else:
                for r, kk in zip(np.flatnonzero(low), kth, strict=True):
                    idx[r] = np.flatnonzero(~drawn[r, :N])[kk]
        mix_i = mix[rows, idx].astype(float)
        q_i = tau / n_left + (1 - tau) * mix_i / total
        if trace:
            qt = (1 - tau) * mix[:, :N].astype(float) / total[:, None] + tau / n_left[:, None]
            if drawn is not None:
                qt[drawn[:, :N]] = 0
            tr_q.append(qt)
            tr_p.append(0.5 * (1.0 + th[:, :N].astype(float)))  # p^(t-1), the predictions q_t was built from
        if drawn is not None:
            drawn[rows, idx] = True
        p_i = 0.5 * (1.0 + th[rows, idx].astype(float))
        z = Z[rows, idx]
        log_z[:, t - 1] = z
        log_q[:, t - 1] = q_i
        log_p[:, t - 1] = p_i
        log_pm[:, t - 1] = ps / N
        if weighted:
            # model-based E[(phi_t - theta)^2 | past] under the current predictions
            q_all = (1 - tau) * mix[:, :N] / total[:, None].astype(_FLOAT) + _FLOAT(tau / N)
            cvar[:, t - 1] = ((w[:, :N] / q_all).sum(axis=1, dtype=np.float64)) / N**2 + 1e-12
        # rank-one Laplace update (Sherman-Morrison), then the logits and the quadratic forms
        v = Vp[idx]
        u, S, delta, Sv_scaled = _laplace_step(u, S, v, z, p_i)
        hlogits += np.matmul(delta.astype(_FLOAT) * half, VT32, out=upd)
        if d is not None and t + 1 < params.rho * n_b:
            a = np.matmul(Sv_scaled.astype(_FLOAT), VT32, out=upd)
            a *= a
            d -= a
    info: dict[str, Any] = {"q": tr_q, "p": tr_p} if trace else {}
    if weighted:
        phi = log_pm + (log_z - log_p) / (N * log_q)
        a_t = 1.0 / cvar
        a_t /= a_t.sum(axis=1, keepdims=True)
        est = (a_t * phi).sum(axis=1)
        var_w = ((a_t**2) * (phi - est[:, None]) ** 2).sum(axis=1) * n_b / (n_b - 1)
        return est, np.sqrt(var_w), info
    est, se = _pai(log_z, log_q, log_p, log_pm, N, variance)
    return est, se, info


def _faq_blocks(Zb: np.ndarray, factors: ActiveFactors, budget: int, params: ActiveParams,
                rngs: list[np.random.Generator], method: str, variance: str, n_jobs: int,
                chunk: int = _CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_faq_batch` over blocks of ``chunk`` rows, ``n_jobs`` blocks at a time (threads).

    Rows are independent, the blocks are fixed by ``chunk`` (not by the machine's cores) and every
    block is computed by the same code whatever the thread that runs it, so the result is bit for
    bit the same for any ``n_jobs``. Another ``chunk`` agrees to float32 rounding: a row's logits
    come from a BLAS matrix product whose last bits can depend on where the row falls in the
    kernel's tiles of rows. A block's (rows, items) work arrays stay in cache across the steps;
    numpy releases the GIL inside its loops.
    """
    starts = range(0, Zb.shape[0], chunk)

    def one(i: int) -> tuple[np.ndarray, np.ndarray]:
        est, se, _ = _faq_batch(Zb[i: i + chunk].astype(float), factors, budget, params, rngs[i: i + chunk],
                                replace_draws=method != "faq_norep", weighted=method == "faq_weighted",
                                variance=variance)
        return est, se

    if n_jobs > 1 and len(starts) > 1:
        with ThreadPoolExecutor(min(n_jobs, len(starts))) as pool:
            parts = list(pool.map(one, starts))  # in block order
    else:
        parts = [one(i) for i in starts]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _active_inference_batch(Z: np.ndarray, factors: ActiveFactors, budget: int, params: ActiveParams,
                            rngs: list[np.random.Generator]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sequential active inference: a random stream of all N items, each labelled with probability pi_j."""
    B, N = Z.shape
    V = factors.V
    VT32 = np.ascontiguousarray(V.astype(_FLOAT).T)
    order = np.stack([g.permutation(N) for g in rngs])
    xi_u = np.stack([g.random(N) for g in rngs])
    u = np.tile(factors.prior_mean, (B, 1))
    S = np.tile(factors.prior_cov, (B, 1, 1))
    rate = budget / N
    refresh = max(1, N // budget)
    rows = np.arange(B)
    phi_sum = np.zeros(B)
    var_sum = np.zeros(B)
    n_lab = np.zeros(B, dtype=int)
    mean_s = np.ones(B)
    for step in range(N):
        if step % refresh == 0:
            P = _sigmoid(u.astype(_FLOAT) @ VT32 + factors.b.astype(_FLOAT))
            mean_s = np.sqrt(P * (1 - P)).mean(axis=1, dtype=np.float64)
        j = order[:, step]
        v = V[j]
        p = _sigmoid(np.einsum("bk,bk->b", u, v) + factors.b[j])
        s = np.sqrt(p * (1 - p))
        pi = np.minimum(1.0, rate * (params.tau + (1 - params.tau) * s / mean_s))
        lab = xi_u[:, step] < pi
        z = Z[rows, j]
        phi_sum += p + np.where(lab, (z - p) / pi, 0.0)
        var_sum += np.where(lab, (z - p) ** 2 * (1 - pi) / pi**2, 0.0)
        n_lab += lab
        if lab.any():
            b_idx = np.flatnonzero(lab)
            u_new, S_new, _, _ = _laplace_step(u[b_idx], S[b_idx], v[b_idx], z[b_idx], p[b_idx])
            u[b_idx] = u_new
            S[b_idx] = S_new
    return phi_sum / N, np.sqrt(var_sum) / N, n_lab


def _degenerate_rows(est: np.ndarray, se: np.ndarray, lo: np.ndarray, hi: np.ndarray, Zb: np.ndarray, budget: int,
                     alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Warn about constant models and out-of-range results; Wilson intervals where the se is 0."""
    from .clustered import interval_wilson

    const = (Zb == Zb[:, :1]).all(axis=1)
    if const.any():
        warn(f"{int(const.sum())} row(s) of Z have every outcome equal (all correct or all wrong): the accuracy "
             "sits on the boundary, where estimates can leave [0, 1] and standard errors collapse",
             stacklevel=4, category=DegenerateDataWarning)
    zero = se == 0
    if zero.any():
        lo, hi = lo.copy(), hi.copy()
        for i in np.flatnonzero(zero):
            lo[i], hi[i] = interval_wilson(float(np.clip(est[i], 0.0, 1.0)), float(budget), alpha=alpha)
        warn(f"{int(zero.sum())} estimate(s) have se 0 (every queried outcome equal); their interval is the Wilson "
             f"interval on the {budget} queries instead of the zero-width Wald interval",
             stacklevel=4, category=DegenerateDataWarning)
    out = (est < 0) | (est > 1) | (lo < 0) | (hi > 1)
    if out.any():
        warn(f"{int(out.sum())} of {est.size} estimates or intervals leave [0, 1] (largest estimate {est.max():.4g}, "
             f"interval [{lo.min():.4g}, {hi.max():.4g}]); the estimator is unbiased but not range-respecting: "
             "clip to [0, 1] for reporting", stacklevel=4, category=RangeWarning)
    return lo, hi


def active_run(Z: npt.ArrayLike, factors: ActiveFactors, budget: int, *, method: str = "faq",
               params: ActiveParams | None = None, n_trials: int = 1, seed: int | np.random.SeedSequence = 0,
               alpha: float = 0.05, variance: Literal["source", "empirical"] = "empirical",
               interval: Interval = "korn_graubard") -> ActiveResult:
    """Estimate the accuracy of every row of ``Z`` from ``budget`` queries, all rows at once.

    Every (model, trial) pair is one row of a stacked computation with its own generator,
    spawned from ``SeedSequence(seed)`` (model-major, then trial), so a model's result does not
    depend on which other models are in the batch. The method sees ``Z[m, j]`` only for the
    items it queries.

    Parameters
    ----------
    Z : (n_models, n_items) 0/1 array
        The new models' full outcomes (the truth ``theta_m = Z[m].mean()``); no NaN.
    factors : ActiveFactors
        Stage 1 fit on historical models only (never on the rows of ``Z``).
    budget : int
        ``n_b``, the number of items queried per model and trial (in expectation for
        ``active_inference``), an int in ``2 .. n_items``. A budget is a count of items in every
        function that runs one evaluation; a fraction such as ``0.1`` is refused (pass
        ``round(0.1 * n_items)``). Only the study drivers :func:`active_study` and
        :func:`active_loo`, which sweep banks of different sizes, take fractions of the bank.
    method : str
        One of :data:`METHODS`.
    params : ActiveParams, optional
        Sampler hyper-parameters (tune them with :func:`active_tune` on validation models).
    n_trials : int
        Independent trials per model.
    seed : int or SeedSequence
    alpha : float
        Two-sided level of the Wald intervals.
    variance : {"empirical", "source"}
        PAI variance: the empirical variance of the ``phi_t`` (default) or the source's closed
        form (both consistent under the martingale CLT; the closed form can reach 0 at small
        ``n_b``).
    interval : {"korn_graubard", "wald"}
        The confidence interval of the PAI-based methods (``faq``, ``faq_norep``,
        ``faq_weighted``, ``active_inference``; :data:`INTERVALS`); ``"wald"`` is the source's.
        The baselines keep their classical intervals: Wald for ``uniform``, ``stratified`` and
        ``ppi`` (as ``ppi_py``), the source's clipped Wald for ``uniform_ht``. The named settings
        :data:`ACTIVE_SETTINGS` give both choices with the hyper-parameters.

    Returns
    -------
    ActiveResult

    Raises
    ------
    ValueError
        Unknown method, ``Z`` not 0/1 or misaligned with ``factors``, NaN in ``Z``, a budget
        outside ``2 .. n_items`` (``n_items - 1`` queries at most without replacement).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> H = (rng.random((60, 200)) < 0.6).astype(float)
    >>> fac = active_factor_fit(H, rank=2)
    >>> Z = (rng.random((3, 200)) < 0.6).astype(float)
    >>> res = active_run(Z, fac, 40, method="faq", n_trials=2, seed=0)
    >>> res.estimate.shape
    (3, 2)
    """
    if method not in METHODS:
        raise EvalkitInputError("method", f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    arr = _check_outcomes(Z, factors.n_items)
    N = arr.shape[1]
    budget = check_budget(budget, N)
    if method == "faq_norep" and budget >= N:
        raise EvalkitInputError("budget", "without replacement the budget must be below n_items")
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or n_trials < 1:
        raise EvalkitInputError("n_trials", f"n_trials must be a positive int, got {n_trials!r}")
    if variance not in ("source", "empirical"):
        raise EvalkitInputError("variance", f"variance must be 'source' or 'empirical', got {variance!r}")
    if interval not in INTERVALS:
        raise EvalkitInputError("interval", f"interval must be one of {INTERVALS}, got {interval!r}")
    check_alpha(alpha)
    if not isinstance(seed, np.random.SeedSequence):
        check_seed(seed)
    prm = params if params is not None else ActiveParams()
    run_prm = _effective_params(prm, int(budget))
    M = arr.shape[0]
    rngs = _rngs(seed, M, n_trials)
    Zb = np.repeat(arr, n_trials, axis=0)
    start = time.perf_counter()
    n_queries = np.full(M * n_trials, int(budget))
    clipped = None
    if method in ("uniform", "stratified", "ppi"):
        est, se = _uniform_family(Zb, factors, int(budget), method, run_prm, rngs)
    elif method == "uniform_ht":
        est, se, lo_ht, hi_ht, n_queries = _uniform_ht(Zb, int(budget), rngs, alpha)
        clipped = (lo_ht, hi_ht)
    elif method == "active_inference":
        est, se, n_queries = _active_inference_batch(Zb, factors, int(budget), run_prm, rngs)
    else:
        # blocks of rows keep the (rows, items) work arrays in cache; rows are independent
        est, se = _faq_blocks(Zb, factors, int(budget), run_prm, rngs, method, variance, _THREADS)
    seconds = time.perf_counter() - start
    if clipped is not None:
        lo, hi = clipped
    elif interval == "wald" or method in ("uniform", "stratified", "ppi"):
        lo, hi = _wald(est, se, alpha)
    else:
        lo, hi = _korn_graubard(est, se, np.asarray(n_queries, dtype=float), alpha)
    lo, hi = _degenerate_rows(est, se, lo, hi, Zb, int(budget), alpha)
    shape = (M, n_trials)
    return ActiveResult(method=method, budget=int(budget), estimate=est.reshape(shape), se=se.reshape(shape),
                        ci_low=lo.reshape(shape), ci_high=hi.reshape(shape), truth=arr.mean(axis=1),
                        n_queries=np.asarray(n_queries).reshape(shape), alpha=float(alpha), seconds=seconds,
                        params=prm)


def active_sampling_trace(z: npt.ArrayLike, factors: ActiveFactors, budget: int, *,
                          params: ActiveParams | None = None, seed: int = 0, replace: bool = True
                          ) -> np.ndarray:
    """The FAQ sampling distributions ``q_t`` of one model, step by step (for pictures).

    Parameters
    ----------
    z : (n_items,) 0/1 array
    factors : ActiveFactors
    budget : int
        The number of items queried (a count, ``2 .. n_items - 1``; see :func:`active_run`).
    params : ActiveParams, optional
    seed : int
    replace : bool
        False for the without-replacement heuristic.

    Returns
    -------
    (budget, n_items) float array
        Row ``t - 1`` is ``q_t``.
    """
    return _sampling_trace_with_predictions(z, factors, budget, params=params, seed=seed, replace=replace)[0]


def _sampling_trace_with_predictions(z: npt.ArrayLike, factors: ActiveFactors, budget: int, *,
                                     params: ActiveParams | None = None, seed: int = 0, replace: bool = True
                                     ) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`active_sampling_trace`, with the predictions ``p^(t-1)`` each ``q_t`` was built from.

    Returns two (budget, n_items) arrays: row ``t - 1`` of the first is ``q_t``, of the second the
    model's predicted P(correct) of every item after ``t - 1`` queries.
    """
    arr = _check_outcomes(z, factors.n_items, "z")
    if arr.shape[0] != 1:
        raise EvalkitInputError("z", f"active_sampling_trace takes one model's outcome vector, got shape {arr.shape}")
    N = arr.shape[1]
    budget = check_budget(budget, N - 1)
    check_seed(seed)
    prm = params if params is not None else ActiveParams()
    run_prm = _effective_params(prm, int(budget))
    _, _, info = _faq_batch(arr, factors, int(budget), run_prm, _rngs(seed, 1, 1), replace_draws=replace,
                            weighted=False, variance="source", trace=True)
    return np.concatenate(info["q"], axis=0), np.concatenate(info["p"], axis=0)
