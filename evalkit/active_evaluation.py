"""Active evaluation with guarantees, the evaluation layer: tuning, ESS, ceiling, studies [FAQ].

The sampler and estimator core (factor model, samplers, PAI, :func:`evalkit.active.active_run`)
is in :mod:`evalkit.active`; this module scores and studies it (Wu et al., "Efficient Evaluation
of LLM Performance with Statistical Guarantees", arXiv 2601.20251;
docs/methods/faq-active-evaluation.md):

* :func:`active_tune`: ``(beta0, rho, gamma, tau)`` by pooled MSE on validation models;
* :func:`active_evaluate`: runs against the truth with three ESS definitions side by side,
  coverage with its Monte Carlo SE, width and bias; :func:`active_ess_bootstrap`: the ESS of
  several methods on the same bootstrap resamples of the test models (paired, for ratios);
  :func:`active_ceiling`: the ESS attainable if the model's factor were known;
* :func:`active_semisynthetic` and :func:`active_study`: the semi-synthetic leaderboards and the
  study behind the paper's tables; :func:`active_loo`: leave-one-model-out on a real matrix;
* :func:`active_plot_run`: the widget's figure.

Every public name here is also importable from :mod:`evalkit`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from ._checks import as_probabilities, check_budget, check_int, check_seed, check_unique, warn
from .active import (
    ACTIVE_SETTINGS,
    METHODS,
    ActiveFactors,
    ActiveParams,
    ActiveResult,
    Interval,
    _check_history,
    _check_outcomes,
    _sampling_trace_with_predictions,
    _sigmoid,
    active_factor_cv,
    active_factor_fit,
    active_run,
)
from .errors import DegenerateDataWarning, EvalkitInputError
from .montecarlo import mc_summarise

__all__ = [
    "active_tune",
    "active_evaluate",
    "active_ess_bootstrap",
    "active_ceiling",
    "SPARSITY",
    "ActiveData",
    "ActiveStudy",
    "active_semisynthetic",
    "active_study",
    "active_loo",
    "active_plot_run",
    "ACTIVE_COLORS",
]


# --------------------------------------------------------------------------------------------
# Tuning, evaluation, ceiling
# --------------------------------------------------------------------------------------------

_DEFAULT_GRID: Mapping[str, Sequence[float]] = {
    "beta0": (0.5, 1.0), "rho": (0.1, 0.3), "gamma": (0.1, 0.3), "tau": (0.1, 0.3),
}


def active_tune(Z_val: npt.ArrayLike, factors: ActiveFactors, budget: int, *,
                grid: Mapping[str, Sequence[float]] | None = None, method: str = "faq", n_trials: int = 1,
                seed: int = 0, by: Literal["mse", "width"] = "mse") -> tuple[ActiveParams, pd.DataFrame]:
    """Tune ``(beta0, rho, gamma, tau)`` on validation models by pooled mean squared error (or width).

    Run on models that are neither historical (in ``factors``) nor test models.

    Parameters
    ----------
    Z_val : (n_val, n_items) 0/1 array
        Full outcomes of the validation models.
    factors : ActiveFactors
    budget : int
        The number of items queried per model (a count, ``2 .. n_items``; see :func:`active_run`).
    grid : mapping name -> values, optional
        Defaults to two values of each of ``beta0, rho, gamma, tau``.
    method : str
        ``faq`` (default) or another FAQ variant.
    n_trials : int
    seed : int
    by : {"mse", "width"}
        ``"mse"`` (evalkit's choice: the realised error) or ``"width"``, the source's choice (the
        smallest mean width of the source's Wald interval; it rewards intervals that are narrow
        because their variance estimate is small).

    Returns
    -------
    best : ActiveParams
    table : DataFrame
        One row per grid point: the parameters, ``mse``, ``width`` (the source's Wald interval)
        and ``ess_pooled``, sorted by ``by``.
    """
    budget = check_budget(budget, factors.n_items)
    check_seed(seed)
    if by not in ("mse", "width"):
        raise EvalkitInputError("by", f"by must be 'mse' or 'width', got {by!r}")
    g = dict(_DEFAULT_GRID if grid is None else grid)
    unknown = set(g) - set(_DEFAULT_GRID)
    if unknown:
        raise EvalkitInputError("grid", f"unknown grid names {sorted(unknown)}; tune only beta0, rho, gamma, tau")
    names = list(g)
    rows = []
    for combo in np.array(np.meshgrid(*[np.asarray(g[n], dtype=float) for n in names], indexing="ij")).reshape(
            len(names), -1).T:
        values = dict(zip(names, map(float, combo), strict=True))
        prm = replace(ActiveParams(), **values)  # type: ignore[arg-type]
        res = active_run(Z_val, factors, budget, method=method, params=prm, n_trials=n_trials, seed=seed,
                         variance="source", interval="wald")
        err = res.estimate - res.truth[:, None]
        mse = float(np.mean(err**2))
        unif = float(np.mean(res.truth * (1 - res.truth))) / budget
        rows.append({**values, "mse": mse, "width": float(np.mean(res.ci_high - res.ci_low)), "ess_pooled": unif / mse})
    table = pd.DataFrame(rows).sort_values(by, kind="stable").reset_index(drop=True)
    best = replace(ActiveParams(), **{n: float(table[n].to_numpy()[0]) for n in names})  # type: ignore[arg-type]
    return best, table


def active_ceiling(P: npt.ArrayLike, Z: npt.ArrayLike, budget: int) -> pd.Series:
    """The ESS attainable if each model's success probabilities ``P`` were known before the first query.

    With ``p`` known and fixed, PAI with ``q_j`` proportional to ``sqrt(p_j (1 - p_j))`` has exact
    variance ``[(1/N^2) sum_j (z_j - p_j)^2 / q_j - (theta - mean(p))^2] / n_b``; only each item's
    Bernoulli noise is left. Uniform sampling with replacement has ``theta (1 - theta) / n_b``.

    Parameters
    ----------
    P : (n_models, n_items) array
        The true probabilities (the generator's, on semi-synthetic data).
    Z : (n_models, n_items) 0/1 array
        The realised outcomes.
    budget : int
        The number of items queried (a count, ``2 .. n_items``; see :func:`active_run`).

    Returns
    -------
    Series
        ``ess_pooled`` (ratio of summed variances), ``ess_mean`` (mean of per-model ratios).
    """
    Za = _check_outcomes(Z, None)
    Pa = np.atleast_2d(as_probabilities(P, "P"))
    if Pa.shape != Za.shape:
        raise EvalkitInputError("P", f"P {Pa.shape} and Z {Za.shape} must have the same shape")
    N = Pa.shape[1]
    budget = check_budget(budget, N)
    s = np.sqrt(Pa * (1 - Pa))
    q = s / s.sum(axis=1, keepdims=True)
    theta = Za.mean(axis=1)
    var_m = (((Za - Pa) ** 2 / q).sum(axis=1) / N**2 - (theta - Pa.mean(axis=1)) ** 2) / budget
    var_u = theta * (1 - theta) / budget
    return pd.Series({"ess_pooled": float(var_u.sum() / var_m.sum()), "ess_mean": float(np.mean(var_u / var_m))})


def _ess_pooled(var_u: np.ndarray, err2: np.ndarray, what: str) -> np.ndarray:
    """Pooled ESS over the last axis (models): ``sum var_u / sum err2``; warns on a zero error.

    ``var_u`` and ``err2`` are per-model uniform variances and mean squared errors, indexed alike
    (a bootstrap passes ``var_u[idx], err2[idx]``). A summed error of zero (every estimate exact)
    gives an infinite multiplier, which is returned with a warning rather than silently.
    """
    den = err2.sum(axis=-1)
    num = var_u.sum(axis=-1)
    if np.any(den == 0):
        warn(f"{what}: the estimates have zero squared error on {int(np.sum(den == 0))} of "
             f"{np.size(den)} model sets, so their ESS is infinite (or undefined where the uniform "
             "variance is zero too)", category=DegenerateDataWarning, stacklevel=4)
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / den


def _ess_width_ratio(ref_width: np.ndarray, width: np.ndarray, what: str) -> np.ndarray:
    """The source's ESS: mean over the last axis (trials) of ``(ref_width / width)^2``; warns on zero width.

    Both arguments hold per-trial widths already averaged over models (the source's
    ``cleaning_results.py``). A zero mean width gives an infinite ratio, returned with a warning.
    """
    if np.any(width == 0):
        warn(f"{what}: {int(np.sum(width == 0))} of {np.size(width)} mean interval widths are zero, "
             "so the width-ratio ESS is infinite (or undefined)", category=DegenerateDataWarning, stacklevel=4)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mean((ref_width / width) ** 2, axis=-1)


def active_evaluate(results: Sequence[ActiveResult], *, n_boot: int = 500, seed: int = 0,
                    ceiling: Mapping[int, float] | None = None) -> pd.DataFrame:
    """Score runs against the truth: ESS (four definitions), coverage with MCSE, width, bias.

    ESS multipliers (larger is better):

    - ``ess`` (pooled realised MSE): ``sum_m theta_m (1 - theta_m) / n_b`` over the method's
      summed mean squared error, models pooled; its 95% interval ``ess_low, ess_high`` resamples
      models (bootstrap over test models). Uniform sampling with replacement scores close to 1: its
      expected summed squared error is the numerator, and the ratio itself has a Jensen bias of the
      order of one over the number of runs. This is evalkit's headline definition: it scores the
      estimate, not the interval.
    - ``ess_authors``: the source's definition (its ``cleaning_results.py``): per trial (their
      seed), ``(mean uniform_ht width / mean method width)^2`` with widths averaged over models,
      then the mean over trials. The baseline is the source's own uniform, ``uniform_ht``
      (Bernoulli sampling, Horvitz-Thompson, zero predictor), whose variance is ``(1 - pi) /
      (1 - theta)`` times that of ``uniform``; it needs a ``uniform_ht`` run at the same budget
      and with the same number of trials among ``results`` (NaN otherwise). It scores the
      interval: a method whose interval is too narrow for its error scores higher here than on
      ``ess``.
    - ``ess_width_wr``: ``(mean uniform width / mean method width)^2`` against evalkit's
      with-replacement ``uniform`` (needs a ``uniform`` run at the same budget; NaN otherwise).
      Not the source's number: its baseline differs.
    - ``ess_per_model``: the mean over models of per-model ratios; Jensen's inequality inflates
      it (a mean of ``1 / MSE_m`` with few trials per model), so uniform itself scores above 1.

    Coverage, bias and width come from :func:`evalkit.mc_summarise` on the (model, trial) rows;
    ``coverage_mcse_model`` is the coverage's Monte Carlo SE clustered by model (the standard
    deviation of per-model coverages over ``sqrt(n_models)``), the honest one when trials of one
    model share its items.

    Parameters
    ----------
    results : sequence of ActiveResult
    n_boot : int
    seed : int
    ceiling : mapping budget -> float, optional
        Ceiling ESS per budget (:func:`active_ceiling`), shown as ``ess_ceiling``.

    Returns
    -------
    DataFrame
        One row per (budget, method).
    """
    if len(results) == 0:
        raise EvalkitInputError("results", "give at least one ActiveResult")
    rng = np.random.default_rng(seed)
    uniform_width = {r.budget: float(np.mean(r.ci_high - r.ci_low)) for r in results if r.method == "uniform"}
    # the source's baseline: per trial (their seed), the width averaged over models
    ht_width = {(r.budget, r.estimate.shape[1]): (r.ci_high - r.ci_low).mean(axis=0)
                for r in results if r.method == "uniform_ht"}
    rows = []
    for r in results:
        truth = r.truth
        err2 = ((r.estimate - truth[:, None]) ** 2).mean(axis=1)  # per model
        var_u = truth * (1 - truth) / r.budget
        ess = float(_ess_pooled(var_u, err2, f"{r.method} at budget {r.budget}"))
        n_m = len(truth)
        boot = rng.integers(0, n_m, size=(n_boot, n_m))
        ess_b = _ess_pooled(var_u[boot], err2[boot], f"{r.method} at budget {r.budget} (bootstrap)")
        with np.errstate(divide="ignore", invalid="ignore"):
            per_model = float(np.mean(np.where(err2 > 0, var_u / err2, np.nan)))
        summ = mc_summarise(r.to_frame().drop(columns=["budget", "model", "trial"])).iloc[0]
        width = float(summ["width"])
        uw = uniform_width.get(r.budget, np.nan)
        ht = ht_width.get((r.budget, r.estimate.shape[1]))
        per_trial = (r.ci_high - r.ci_low).mean(axis=0)
        ess_authors = (float(_ess_width_ratio(ht, per_trial, f"{r.method} at budget {r.budget}"))
                       if ht is not None else np.nan)
        cover_m = ((r.ci_low <= truth[:, None]) & (truth[:, None] <= r.ci_high)).mean(axis=1)
        rows.append({
            "budget": r.budget, "method": r.method, "ess": ess,
            "ess_low": float(np.quantile(ess_b, 0.025)), "ess_high": float(np.quantile(ess_b, 0.975)),
            "ess_authors": ess_authors,
            "ess_width_wr": (uw / width) ** 2 if width > 0 else np.nan, "ess_per_model": per_model,
            "ess_ceiling": np.nan if ceiling is None else float(ceiling.get(r.budget, np.nan)),
            "coverage": float(summ["coverage"]), "coverage_mcse": float(summ["coverage_mcse"]),
            "coverage_mcse_model": float(cover_m.std(ddof=1) / math.sqrt(n_m)) if n_m > 1 else np.nan,
            "width": width, "bias": float(summ["bias"]), "bias_mcse": float(summ["bias_mcse"]),
            "rmse": float(summ["rmse"]), "n_models": n_m, "n_trials": r.estimate.shape[1],
            "seconds": r.seconds,
        })
    return pd.DataFrame(rows)


def active_ess_bootstrap(results: Sequence[ActiveResult], budget: int, methods: Sequence[str], *,
                         definition: Literal["pooled", "authors"] = "pooled", n_boot: int = 400,
                         seed: int = 0) -> pd.DataFrame:
    """The ESS multiplier of several methods on the same bootstrap resamples of the test models.

    Each replicate draws the test models with replacement once and scores every method of
    ``methods`` on those same models (a paired bootstrap), so the standard deviation of a column is
    the bootstrap SE of that method's ESS, and the ratio of two columns resampled together is the
    bootstrap distribution of one method's ESS against another's.

    Parameters
    ----------
    results : sequence of ActiveResult
        Runs of :func:`evalkit.active_run` on the same test models (e.g. ``ActiveStudy.results``).
    budget : int
        The budget (a count of items) whose runs are scored.
    methods : sequence of str
        The methods to score; each needs exactly one run at ``budget`` among ``results``, all with
        the same test models and number of trials.
    definition : {"pooled", "authors"}
        ``"pooled"``: ``sum_m theta_m (1 - theta_m) / n_b`` over the summed mean squared error of
        the resampled models (``ess`` of :func:`active_evaluate`). ``"authors"``: the source's
        definition, per trial ``(mean uniform_ht width / mean method width)^2`` over the resampled
        models, then the mean over trials (``ess_authors``); it needs a ``uniform_ht`` run at
        ``budget`` among ``results``.
    n_boot : int
        Number of bootstrap replicates (at least 2).
    seed : int or numpy.random.Generator

    Returns
    -------
    DataFrame
        ``n_boot`` rows (one per replicate), one column per method.

    Raises
    ------
    EvalkitInputError
        If ``results`` is empty, a method has no run (or several) at ``budget``, the runs differ in
        their test models or trials, ``definition`` is unknown, or ``n_boot`` or ``seed`` is bad.

    Examples
    --------
    >>> import numpy as np, evalkit as ek
    >>> rng = np.random.default_rng(0)
    >>> Z = (rng.random((60, 200)) < rng.random((60, 1))).astype(float)
    >>> fac = ek.active_factor_fit(Z[:40], rank=2)
    >>> runs = [ek.active_run(Z[40:], fac, 40, method=m, n_trials=2, seed=1) for m in ("uniform", "ppi")]
    >>> boot = ek.active_ess_bootstrap(runs, 40, ["uniform", "ppi"], n_boot=50, seed=2)
    >>> boot.shape
    (50, 2)
    """
    if len(results) == 0:
        raise EvalkitInputError("results", "give at least one ActiveResult")
    budget = check_int(budget, "budget", minimum=2)
    if isinstance(methods, str) or len(methods) == 0:
        raise EvalkitInputError("methods", f"methods must be a non-empty list of method names, got {methods!r}")
    methods = [str(m) for m in check_unique(list(methods), "methods")]
    if definition not in ("pooled", "authors"):
        raise EvalkitInputError("definition", f"definition must be 'pooled' or 'authors', got {definition!r}")
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    rng = np.random.default_rng(check_seed(seed))
    wanted = list(methods) + (["uniform_ht"] if definition == "authors" else [])
    runs: dict[str, ActiveResult] = {}
    for m in wanted:
        hits = [r for r in results if r.method == m and r.budget == budget]
        if len(hits) != 1:
            argument = "results" if m == "uniform_ht" and m not in methods else "methods"
            raise EvalkitInputError(argument, f"need exactly one {m!r} run at budget {budget} among results, "
                                    f"found {len(hits)}" + (" (definition='authors' scores widths against "
                                                            "uniform_ht)" if m == "uniform_ht" else ""))
        runs[m] = hits[0]
    first = runs[wanted[0]]
    for m, r in runs.items():
        if r.estimate.shape != first.estimate.shape or not np.array_equal(r.truth, first.truth):
            raise EvalkitInputError("results", f"the {m!r} run has other test models or trials than the "
                                    f"{wanted[0]!r} run ({r.estimate.shape} against {first.estimate.shape})")
    n_m = first.estimate.shape[0]
    idx = rng.integers(0, n_m, size=(n_boot, n_m))
    out = {}
    if definition == "pooled":
        var_u = first.truth * (1 - first.truth) / budget
        for m in methods:
            err2 = ((runs[m].estimate - runs[m].truth[:, None]) ** 2).mean(axis=1)
            out[m] = _ess_pooled(var_u[idx], err2[idx], f"{m} at budget {budget} (bootstrap)")
    else:
        ref = runs["uniform_ht"].ci_high - runs["uniform_ht"].ci_low      # (n_models, n_trials)
        for m in methods:
            w = runs[m].ci_high - runs[m].ci_low
            out[m] = _ess_width_ratio(ref[idx].mean(axis=1), w[idx].mean(axis=1), f"{m} at budget {budget} (bootstrap)")
    return pd.DataFrame(out)


# --------------------------------------------------------------------------------------------
# Semi-synthetic leaderboards and the study behind the tables
# --------------------------------------------------------------------------------------------

SPARSITY: Mapping[str, tuple[float, float]] = {
    "full": (1.0, 1.0),
    "42%": (800 / 2211, 0.1),
    "12%": (50 / 2211, 0.1),
    "0.1%": (0.0, 0.001),
}
"""History-sparsity settings of the [FAQ] ablation: (fraction of historical rows fully observed,
probability that each entry of the other rows is observed). The paper's ``n_full_obs = 800, 50, 0``
of 2,211 historical models are kept as fractions; ``p_obs = 0.1, 0.1, 0.001``."""


@dataclass(frozen=True)
class ActiveData:
    """A semi-synthetic leaderboard split by model: history, validation and test.

    Attributes
    ----------
    H : (n_hist, n_items) array
        Historical draws, NaN where hidden by the sparsity setting.
    Z_val, Z_test : (n_val, n_items), (n_test, n_items) 0/1 arrays
        Full rows of the validation and test models.
    P_test : (n_test, n_items) array
        The generator's probabilities for the test models (only for the ceiling).
    suite, sparsity : str
    observed : float
        Fraction of ``H`` observed.
    """

    H: np.ndarray
    Z_val: np.ndarray
    Z_test: np.ndarray
    P_test: np.ndarray
    suite: str
    sparsity: str
    observed: float


def active_semisynthetic(suite: str = "mmlu_pro", *, n_hist: int, n_val: int, n_test: int,
                         n_items: int | None = None, sparsity: str = "full", seed: int) -> ActiveData:
    """Draw a semi-synthetic leaderboard from the fitted Open LLM Leaderboard v2 factor model.

    ``Y ~ Bernoulli(sigmoid(U V'))`` with :func:`evalkit.oll_matrix_draw` for ``n_hist + n_val +
    n_test`` of its models (a fitted model of the real leaderboard, not its responses), split at
    random into historical, validation and test models; the historical rows are then thinned by
    ``sparsity`` (:data:`SPARSITY`). The generator's ``V`` is never returned: refit the factor
    model on ``H`` with :func:`active_factor_cv`.

    Parameters
    ----------
    suite : {"mmlu_pro", "bbh_gpqa_ifeval_math_musr"}
    n_hist, n_val, n_test : int
        Models in each part (at most 2,211 together).
    n_items : int or None
        Subsample this many items (None: all).
    sparsity : str
        A key of :data:`SPARSITY`.
    seed : int

    Returns
    -------
    ActiveData

    Raises
    ------
    ValueError
        Unknown sparsity, a part with fewer than 1 model (3 for history), too many models.
    """
    from .datasets import _OLL_SUITES, oll_factors_load, oll_matrix_draw

    if suite not in _OLL_SUITES:
        raise EvalkitInputError("suite", f"unknown suite {suite!r}; choose one of {', '.join(_OLL_SUITES)}")
    if sparsity not in SPARSITY:
        raise EvalkitInputError("sparsity", f"unknown sparsity {sparsity!r}; choose one of {', '.join(SPARSITY)}")
    check_int(n_hist, "n_hist", minimum=3)
    check_int(n_val, "n_val", minimum=1)
    check_int(n_test, "n_test", minimum=1)
    if n_items is not None:
        check_int(n_items, "n_items", minimum=2)
    check_seed(seed)
    ss = np.random.SeedSequence(seed)
    s_draw, s_split, s_mask = ss.spawn(3)
    em = oll_matrix_draw(suite, n_models=n_hist + n_val + n_test, n_items=n_items,
                         seed=int(s_draw.generate_state(1)[0]), dtype=np.float64)
    if em.item_info is None:
        raise ValueError(f"the {suite} draw has no item table; check the oll_v2_factor_model files")
    rows = np.array([int(m.split("_")[1]) for m in em.models])
    cols = em.item_info["item_index"].to_numpy(dtype=int)
    order = np.random.default_rng(s_split).permutation(len(rows))
    i_h, i_v, i_t = order[:n_hist], order[n_hist:n_hist + n_val], order[n_hist + n_val:]
    H = em.Y[i_h].copy()
    frac_full, p_obs = SPARSITY[sparsity]
    if p_obs < 1:
        rng = np.random.default_rng(s_mask)
        n_full = int(round(frac_full * n_hist))
        hide = rng.random(H.shape) >= p_obs
        hide[rng.permutation(n_hist)[:n_full]] = False
        for r in np.flatnonzero(hide.all(axis=1)):  # every historical model keeps one entry
            hide[r, rng.integers(H.shape[1])] = False
        H[hide] = np.nan
    U, V, _ = oll_factors_load(suite)
    P = np.clip(_sigmoid(U[rows[i_t]].astype(float) @ V[cols].astype(float).T), 1e-12, 1 - 1e-12)
    return ActiveData(H=H, Z_val=em.Y[i_v].copy(), Z_test=em.Y[i_t].copy(), P_test=P, suite=suite,
                      sparsity=sparsity, observed=float(np.mean(~np.isnan(H))))


@dataclass(frozen=True)
class ActiveStudy:
    """Everything one :func:`active_study` call produced.

    Attributes
    ----------
    factors : ActiveFactors
        Refit on the historical draws (``factors.cv`` holds the rank search).
    params : ActiveParams
        Tuned on the validation models.
    tuning : DataFrame
        The tuning grid with pooled MSE and ESS on the validation models.
    results : list of ActiveResult
        One per (budget, method) on the test models.
    table : DataFrame
        :func:`active_evaluate` of ``results`` with the ceiling per budget.
    """

    factors: ActiveFactors
    params: ActiveParams
    tuning: pd.DataFrame
    results: list[ActiveResult]
    table: pd.DataFrame


def active_study(data: ActiveData, *, budgets: Sequence[float], methods: Sequence[str] = ("uniform", "stratified",
                 "ppi", "faq"), ranks: Sequence[int] = (4, 8, 16, 32), weight_decays: Sequence[float] = (1.0,),
                 grid: Mapping[str, Sequence[float]] | None = None, tune_budget: float | None = None,
                 n_trials: int = 1, seed: int = 0, factors: ActiveFactors | None = None,
                 params: ActiveParams | None = None, max_iter: int = 500,
                 cv_items: int | None = None, variance: Literal["source", "empirical"] = "empirical",
                 interval: Interval = "korn_graubard") -> ActiveStudy:
    """Refit, tune on validation models, run every method on the test models, evaluate.

    Parameters
    ----------
    data : ActiveData
        From :func:`active_semisynthetic`.
    budgets : sequence of float
        Fractions of the bank in (0, 1), one per budget (``n_b = max(2, round(fraction *
        n_items))``): a study sweeps banks of different sizes, so its budgets are fractions where
        :func:`active_run`'s is a count. A count such as ``50`` is refused, not read as 50%.
    methods : sequence of str
        Names from :data:`METHODS`.
    ranks, weight_decays : sequences
        Grid of :func:`active_factor_cv` (ignored when ``factors`` is given).
    grid : mapping, optional
        Tuning grid of :func:`active_tune` (ignored when ``params`` is given).
    tune_budget : float, optional
        Budget fraction in (0, 1) used for tuning (default: the first of ``budgets``).
    n_trials : int
        Trials per test model.
    seed : int
    factors, params : optional
        Reuse a fit or tuned parameters.
    max_iter : int
    cv_items : int, optional
        Choose the rank on a random subset of this many items (cheaper), then refit the chosen
        rank on every item. None: the search uses every item.
    variance, interval : str
        Passed to :func:`evalkit.active_run` (``variance="source", interval="wald"`` is the
        source's procedure; see :data:`evalkit.ACTIVE_SETTINGS`).

    Returns
    -------
    ActiveStudy
    """
    if not isinstance(data, ActiveData):
        raise EvalkitInputError("data", f"data must be an ActiveData (from active_semisynthetic), got "
                                        f"{type(data).__name__}")
    if isinstance(budgets, (str, bytes)) or not isinstance(budgets, Sequence) or len(budgets) == 0:
        raise EvalkitInputError("budgets", f"budgets must be a non-empty sequence of fractions in (0, 1), "
                                           f"got {budgets!r}")
    N = data.Z_test.shape[1]
    n_of = {f: check_budget(f, N, "budgets", fraction=True) for f in budgets}
    if len(n_of) != len(budgets):
        raise EvalkitInputError("budgets", f"budgets holds duplicates: {list(budgets)}")
    if tune_budget is not None:
        check_budget(tune_budget, N, "tune_budget", fraction=True)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise EvalkitInputError("methods", f"unknown methods {unknown}; choose among {', '.join(METHODS)}")
    check_int(n_trials, "n_trials", minimum=1)
    check_seed(seed)
    ss = np.random.SeedSequence(seed)
    s_cv, s_tune, s_run = ss.spawn(3)
    cv_seed = int(s_cv.generate_state(1)[0])
    if factors is not None:
        fac = factors
    elif cv_items is None or cv_items >= data.H.shape[1]:
        fac = active_factor_cv(data.H, ranks=ranks, weight_decays=weight_decays, seed=cv_seed, max_iter=max_iter)
    else:
        sub = np.sort(np.random.default_rng(cv_seed).choice(data.H.shape[1], size=cv_items, replace=False))
        H_sub = data.H[:, sub]
        H_sub = H_sub[~np.isnan(H_sub).all(axis=1)]
        cv = active_factor_cv(H_sub, ranks=ranks, weight_decays=weight_decays, seed=cv_seed, max_iter=max_iter).cv
        assert cv is not None
        best = int(np.argmin(cv["heldout_logloss"].to_numpy()))
        fac = replace(active_factor_fit(data.H, rank=int(cv["rank"].to_numpy()[best]),
                                        weight_decay=float(cv["weight_decay"].to_numpy()[best]), max_iter=max_iter),
                      cv=cv.assign(cv_items=cv_items))
    if params is None:
        tb = check_budget(tune_budget if tune_budget is not None else budgets[0], N, "tune_budget", fraction=True)
        prm, tuning = active_tune(data.Z_val, fac, tb, grid=grid, seed=int(s_tune.generate_state(1)[0]))
    else:
        prm, tuning = params, pd.DataFrame()
    results = []
    ceiling = {}
    run_seeds = s_run.spawn(len(budgets))
    for f, s_b in zip(budgets, run_seeds, strict=True):
        nb = n_of[f]
        ceiling[nb] = float(active_ceiling(data.P_test, data.Z_test, nb)["ess_pooled"])
        for m in methods:
            # the same seed for every method at a budget: uniform-family methods share their sample
            results.append(active_run(data.Z_test, fac, nb, method=m, params=prm, n_trials=n_trials, seed=s_b,
                                      variance=variance, interval=interval))
    table = active_evaluate(results, ceiling=ceiling, seed=seed)
    table.insert(1, "fraction", table["budget"] / N)
    return ActiveStudy(factors=fac, params=prm, tuning=tuning, results=results, table=table)


def active_loo(Y: npt.ArrayLike, *, budget: float, methods: Sequence[str] = ("uniform", "ppi", "faq"),
               ranks: Sequence[int] = (2,), weight_decay: float = 1.0, params: ActiveParams | None = None,
               n_trials: int = 20, seed: int = 0, n_boot: int = 500, max_iter: int = 300,
               variance: Literal["source", "empirical"] = "empirical",
               interval: Interval = "korn_graubard") -> pd.DataFrame:
    """Leave-one-model-out active evaluation on a real models x items matrix.

    For each model ``i``: the other models are the history (their missing entries stay missing),
    the factor model is fitted on them (rank by :func:`active_factor_cv` when several ``ranks``
    are given), the item bank is the items where model ``i`` was observed, and every method
    estimates model ``i``'s accuracy on that bank from ``round(budget * bank size)`` queries, in
    ``n_trials`` trials.

    Parameters
    ----------
    Y : (n_models, n_items) array
        0/1 with NaN for missing entries (for example ``dataset_matrix(name).Y``).
    budget : float
        Fraction of each model's bank, in (0, 1) (``n_b = max(2, round(budget * bank size))``; the
        banks differ between models, so a fraction, where :func:`active_run`'s budget is a count).
        A count such as ``50`` is refused, not read as 50%.
    methods : sequence of str
        Names of :data:`evalkit.ACTIVE_METHODS`, each optionally with a named setting of
        :data:`evalkit.ACTIVE_SETTINGS` after ``@`` (``"faq@faithful"``: the source's variance
        and interval with ``params``, so the same draws and estimates as ``"faq"``;
        ``"faq@authors"``: also the source's hyper-parameters); a name without a setting runs with
        ``params``, ``variance`` and ``interval``.
    ranks : sequence of int
        One rank (fixed) or several (chosen by held-out log loss in every fold).
    weight_decay : float
    params : ActiveParams, optional
        Sampler hyper-parameters (not tuned here: pass ones tuned elsewhere).
    n_trials, seed, n_boot, max_iter
    variance, interval : str
        Passed to :func:`evalkit.active_run` (the default covers on the kit's real matrices;
        ``variance="source", interval="wald"`` is the source's procedure).

    Returns
    -------
    DataFrame
        One row per method: ``ess`` (pooled), ``ess_low, ess_high`` (bootstrap over models),
        ``coverage``, ``coverage_mcse`` (clustered by model: the SD of per-model coverages over
        ``sqrt(n_models)``, since a model's trials share its items and its factor fit),
        ``coverage_mcse_iid`` (binomial over all (model, trial) pairs, too small),
        ``width, bias, n_models, mean_budget, rank`` (the most common rank chosen).

    Raises
    ------
    ValueError
        Bad ``Y`` or ``budget`` outside (0, 1).
    """
    arr = _check_history(Y, "Y")
    check_budget(budget, arr.shape[1], fraction=True)
    check_int(n_trials, "n_trials", minimum=1)
    check_seed(seed)
    prm = params if params is not None else ActiveParams()
    runs: dict[str, dict[str, Any]] = {}
    for label in methods:
        name, _, setting = label.partition("@")
        if setting and setting not in ACTIVE_SETTINGS:
            raise ValueError(f"unknown setting {setting!r} in {label!r}; choose among {sorted(ACTIVE_SETTINGS)}")
        run = {"method": name, "params": prm, "variance": variance, "interval": interval}
        if setting:  # the setting's variance and interval; its hyper-parameters only for "authors"
            run.update({k: v for k, v in ACTIVE_SETTINGS[setting].items() if k != "params" or setting == "authors"})
        runs[label] = run
    seqs = np.random.SeedSequence(seed).spawn(arr.shape[0])
    rec: dict[str, list[tuple[float, float, np.ndarray, np.ndarray, np.ndarray]]] = {m: [] for m in methods}
    chosen = []
    for i in range(arr.shape[0]):
        bank = ~np.isnan(arr[i])
        H = np.delete(arr, i, axis=0)[:, bank]
        H = H[~np.isnan(H).all(axis=1)]
        if len(ranks) == 1:
            fac = active_factor_fit(H, rank=int(ranks[0]), weight_decay=weight_decay, max_iter=max_iter)
        else:
            fac = active_factor_cv(H, ranks=ranks, weight_decays=(weight_decay,),
                                   seed=int(seqs[i].generate_state(1)[0]), max_iter=max_iter)
        chosen.append(fac.rank)
        z = arr[i, bank]
        nb = max(2, int(round(float(budget) * z.size)))
        for m in methods:
            r = active_run(z, fac, nb, n_trials=n_trials, seed=seqs[i], **runs[m])
            rec[m].append((float(r.truth[0]), float(nb), r.estimate[0], r.ci_low[0], r.ci_high[0]))
    rng = np.random.default_rng(seed)
    rows = []
    n_m = arr.shape[0]
    boot = rng.integers(0, n_m, size=(n_boot, n_m))
    for m in methods:
        theta = np.array([x[0] for x in rec[m]])
        nbs = np.array([x[1] for x in rec[m]])
        est = np.stack([x[2] for x in rec[m]])
        lo = np.stack([x[3] for x in rec[m]])
        hi = np.stack([x[4] for x in rec[m]])
        mse = ((est - theta[:, None]) ** 2).mean(axis=1)
        var_u = theta * (1 - theta) / nbs
        cover_m = ((lo <= theta[:, None]) & (theta[:, None] <= hi)).mean(axis=1)
        cover = float(cover_m.mean())
        n_rep = est.size
        ess_b = _ess_pooled(var_u[boot], mse[boot], f"{m} (bootstrap)")
        rows.append({"method": m, "ess": float(_ess_pooled(var_u, mse, m)),
                     "ess_low": float(np.quantile(ess_b, 0.025)), "ess_high": float(np.quantile(ess_b, 0.975)),
                     "coverage": cover, "coverage_mcse": float(cover_m.std(ddof=1) / math.sqrt(n_m)),
                     "coverage_mcse_iid": math.sqrt(cover * (1 - cover) / n_rep),
                     "width": float((hi - lo).mean()), "bias": float((est - theta[:, None]).mean()),
                     "n_models": n_m, "mean_budget": float(nbs.mean()),
                     "rank": int(np.bincount(chosen).argmax())})
    return pd.DataFrame(rows)


ACTIVE_COLORS: Mapping[str, str] = {
    "uniform": "#d95f02", "stratified": "#7570b3", "ppi": "#1b9e77", "active_inference": "#66a61e",
    "faq": "#e7298a", "faq_norep": "#999999", "faq_weighted": "#a6761d", "ceiling": "#222222",
}
"""One colour per method in every active-evaluation figure (uniform and the truth as in ``PALETTE``)."""


def active_plot_run(Z: npt.ArrayLike, factors: ActiveFactors, budget: int, *, params: ActiveParams | None = None,
                    replace: bool = True, seed: int = 0, n_show: int = 25) -> Any:
    """Run uniform sampling and FAQ on the rows of ``Z`` and draw what happened (widget body).

    Left: where FAQ spends its last query for the first model (the final ``q_t`` against the
    predictions it was built from, those of the factor model after ``budget - 1`` queries, with
    the uniform ``1/N`` line and the floor). Right: intervals of the first
    ``n_show`` models, uniform and FAQ, with the truth. The title gives the pooled ESS and the
    coverage over all rows of ``Z`` as a count with its exact (Clopper-Pearson) 95% interval: with
    one run per model, 20 models cannot tell 95% from 85%. The axes are fixed (``q_t x N`` from 0
    to :data:`ACTIVE_PLOT_QN_MAX`, accuracy from 0 to 1), so that moving a setting moves the points.

    Parameters
    ----------
    Z : (n_models, n_items) 0/1 array
    factors : ActiveFactors
    budget : int
        The number of items queried per model (a count, ``2 .. n_items``; see :func:`active_run`).
    params : ActiveParams, optional
    replace : bool
        False runs the without-replacement heuristic (``faq_norep``).
    seed : int
    n_show : int

    Returns
    -------
    matplotlib Figure
    """
    import matplotlib.pyplot as plt

    from .plots import PALETTE, _tight

    arr = _check_outcomes(Z, factors.n_items)
    budget = check_budget(budget, factors.n_items - (0 if replace else 1))
    check_seed(seed)
    method = "faq" if replace else "faq_norep"
    runs = [active_run(arr, factors, budget, method=m, params=params, seed=seed) for m in ("uniform", method)]
    table = active_evaluate(runs, n_boot=200, seed=seed)
    q_tr, p_tr = _sampling_trace_with_predictions(arr[0], factors, budget, params=params, seed=seed,
                                                  replace=replace)
    # the last q_t against the predictions it was built from (after budget - 1 queries), not the prior's
    q, p0 = q_tr[-1], p_tr[-1]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.4))
    qn = q * factors.n_items
    top = ACTIVE_PLOT_QN_MAX
    a1.scatter(p0, np.minimum(qn, top), s=4, alpha=0.4, color=ACTIVE_COLORS[method], clip_on=False)
    a1.axhline(1.0, color=PALETTE["truth"], ls="--", lw=1, label="uniform sampling")
    a1.axhline(float(params.tau) if params is not None else ActiveParams().tau, color=PALETTE["neutral"], ls=":",
               lw=1, label="floor τ (least an item can get)")
    n_top = int(np.sum(qn > top))
    a1.set(xlabel="FAQ's predicted P(correct) of the item at the last step",
           ylabel="q_t(item) x N at the last step",
           xlim=(0, 1), ylim=(0, top),
           title="Where FAQ spends its budget (model 1)" + (f"\n{n_top} items above {top:g}, drawn at the top"
                                                            if n_top else ""))
    a1.legend(loc="upper right")
    k = min(n_show, arr.shape[0])
    order = np.argsort(runs[0].truth[:k])
    y = np.arange(k)
    for off, r in zip((-0.18, 0.18), runs, strict=True):
        a2.errorbar(r.estimate[order, 0], y + off, xerr=[r.estimate[order, 0] - r.ci_low[order, 0],
                                                         r.ci_high[order, 0] - r.estimate[order, 0]],
                    fmt="o", ms=3, lw=1, color=ACTIVE_COLORS[r.method], label=r.method)
    a2.scatter(runs[0].truth[:k][order], y, marker="|", s=80, color=PALETTE["truth"], label="truth", zorder=3)
    a2.set(xlabel="accuracy on the bank", ylabel="model (sorted by accuracy)", yticks=[], xlim=(-0.05, 1.05))
    a2.legend(loc="lower right", fontsize=9)
    ess = float(table["ess"].to_numpy()[1])
    cov = table["coverage"].to_numpy().astype(float)
    from scipy import stats

    n_m = arr.shape[0]
    n_cov = [int(round(c * n_m)) for c in cov]  # one run per model: the coverage is a count out of n_m
    ci = [stats.binomtest(k, n_m).proportion_ci(method="exact") for k in n_cov]
    a2.set_title(f"n_b = {budget}: ESS {ess:.2f}x; intervals covering the truth, 1 run per model\n"
                 f"{method} {n_cov[1]}/{n_m} (95% CI {ci[1].low:.0%}–{ci[1].high:.0%}), "
                 f"uniform {n_cov[0]}/{n_m} ({ci[0].low:.0%}–{ci[0].high:.0%})", fontsize=11)
    _tight(fig)
    return fig


ACTIVE_PLOT_QN_MAX = 3.0
"""Top of the left panel of :func:`active_plot_run` (``q_t x N``): fixed, so that moving τ or the budget moves the
points, not the axis; items above it are drawn at the top and counted in the title."""
