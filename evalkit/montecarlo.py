"""The Monte Carlo harness: run estimators over seeded replications and score them against truth.

Every simulation study in evalkit goes through :func:`mc_run` (the replications) and
:func:`mc_summarise` (bias, RMSE, coverage with its Monte Carlo standard error, interval width).
Replication ``r`` draws from its own generator, spawned from one ``SeedSequence(seed)``, so any
single replication can be re-run on its own and results do not depend on the order of estimators.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from .clustered import Estimate

__all__ = ["mc_run", "mc_summarise", "mc_tolerance", "mc_coverage_clustered"]

_FAILURES = (ValueError, ArithmeticError, np.linalg.LinAlgError)


def mc_run(simulate: Callable[[np.random.Generator], Any],
           estimators: Mapping[str, Callable[[Any], Estimate | float]], *,
           truth: float | Callable[[Any], float], n_reps: int, seed: int,
           progress: bool | None = None) -> pd.DataFrame:
    """Run every estimator on ``n_reps`` simulated data sets.

    Parameters
    ----------
    simulate : callable ``rng -> data``
        Draws one data set.
    estimators : mapping name -> callable ``data -> Estimate | float``
        Each returns an :class:`~evalkit.clustered.Estimate` (or a bare float when it has no interval).
    truth : float or callable ``data -> float``
        The estimand, fixed or per data set (for example the full-data accuracy of a finite
        population of items).
    n_reps : int
    seed : int
    progress : bool or None
        Show a progress bar; None shows one when ``n_reps >= 200``.

    Returns
    -------
    DataFrame
        One row per replication and estimator: ``rep, estimator, truth, estimate, se, ci_low,
        ci_high, error`` (``error`` holds the message when the estimator raised, and the numbers are NaN).
    """
    if n_reps < 1:
        raise ValueError(f"n_reps must be positive, got {n_reps}")
    if not estimators:
        raise ValueError("give at least one estimator")
    children = np.random.SeedSequence(seed).spawn(n_reps)
    show = n_reps >= 200 if progress is None else progress
    iterator: Any = range(n_reps)
    if show:
        from tqdm.auto import tqdm
        iterator = tqdm(iterator, desc="Monte Carlo", leave=False)
    rows: list[dict[str, Any]] = []
    for r in iterator:
        data = simulate(np.random.default_rng(children[r]))
        t = float(truth(data)) if callable(truth) else float(truth)
        for name, est in estimators.items():
            row: dict[str, Any] = {"rep": r, "estimator": name, "truth": t, "estimate": np.nan, "se": np.nan,
                                   "ci_low": np.nan, "ci_high": np.nan, "error": ""}
            try:
                res = est(data)
            except _FAILURES as exc:
                row["error"] = f"{type(exc).__name__}: {exc}"
            else:
                if isinstance(res, Estimate):
                    row.update(estimate=res.estimate, se=res.se, ci_low=res.ci_low, ci_high=res.ci_high)
                else:
                    row["estimate"] = float(res)
            rows.append(row)
    return pd.DataFrame(rows)


def mc_summarise(runs: pd.DataFrame, *, scale: float = 1.0) -> pd.DataFrame:
    """Bias, RMSE, coverage and interval width per estimator, with Monte Carlo standard errors.

    Parameters
    ----------
    runs : DataFrame
        Output of :func:`mc_run` (several runs may be concatenated with extra grouping columns;
        every column other than the standard ones is used as a grouping key).
    scale : float
        Multiply bias, RMSE, SE and width by this (100 reports them in accuracy points).

    Returns
    -------
    DataFrame
        Indexed by the grouping keys and ``estimator``: ``n_reps, n_failed, bias, bias_mcse, rmse,
        coverage, coverage_mcse, width, se_mean, sd_estimate``. ``coverage_mcse`` is the binomial
        standard error ``sqrt(c (1 - c) / n)``.
    """
    standard = {"rep", "truth", "estimate", "se", "ci_low", "ci_high", "error"}
    if "estimator" not in runs.columns:
        raise ValueError("runs must come from mc_run (no 'estimator' column)")
    keys = [c for c in runs.columns if c not in standard and c != "estimator"] + ["estimator"]

    def one(g: pd.DataFrame) -> pd.Series:
        ok = g[g["error"] == ""]
        n = len(ok)
        err = ok["estimate"] - ok["truth"]
        has_ci = ok["ci_low"].notna().all() and n > 0
        cover = ((ok["ci_low"] <= ok["truth"]) & (ok["truth"] <= ok["ci_high"])).mean() if has_ci else np.nan
        return pd.Series({
            "n_reps": n,
            "n_failed": len(g) - n,
            "bias": err.mean() * scale,
            "bias_mcse": err.std(ddof=1) / math.sqrt(n) * scale if n > 1 else np.nan,
            "rmse": math.sqrt((err**2).mean()) * scale if n else np.nan,
            "coverage": cover,
            "coverage_mcse": math.sqrt(cover * (1 - cover) / n) if has_ci else np.nan,
            "width": (ok["ci_high"] - ok["ci_low"]).mean() * scale if has_ci else np.nan,
            "se_mean": ok["se"].mean() * scale,
            "sd_estimate": ok["estimate"].std(ddof=1) * scale if n > 1 else np.nan,
        })

    # `one` returns a Series, so apply gives a DataFrame (pandas-stubs say Series | DataFrame)
    out = cast(pd.DataFrame, runs.groupby(keys, sort=False)[list(standard)].apply(one))
    out["n_reps"] = out["n_reps"].astype(int)
    out["n_failed"] = out["n_failed"].astype(int)
    return out


def mc_tolerance(p: float, n_reps: int, z: float = 4.0) -> float:
    """Half-width allowed when checking a Monte Carlo proportion (e.g. coverage) against ``p``.

    ``z * sqrt(p (1 - p) / n_reps)``: with ``z = 4`` a correct method fails the check about once in
    16,000 runs, so a failing test points at the code, not at bad luck.
    """
    if not 0 <= p <= 1 or n_reps < 1:
        raise ValueError("p must be a probability and n_reps positive")
    return z * math.sqrt(p * (1 - p) / n_reps)


def mc_coverage_clustered(*, icc: float, n_clusters: int, cluster_size: int, mean: float = 0.6,
                          sizes: str = "balanced", se_kinds: tuple[str, ...] = ("iid", "CR1", "CR2"),
                          n_reps: int = 500, seed: int = 0, progress: bool | None = None) -> pd.DataFrame:
    """Coverage, width and bias of i.i.d. and cluster-robust intervals for one simulated setting.

    The study behind notebook 00: draw a clustered benchmark with a known expected accuracy
    ``mean`` and ICC (:func:`evalkit.simulate_clustered`), compute each interval kind with
    :func:`evalkit.mean_estimate`, and summarise with :func:`mc_summarise`.

    Paper: papers/000.

    Returns
    -------
    DataFrame
        :func:`mc_summarise` output indexed by ``estimator`` (one per ``se_kinds`` entry).
    """
    from .clustered import mean_estimate
    from .simulate import simulate_clustered

    def draw(rng: np.random.Generator) -> pd.DataFrame:
        return simulate_clustered(n_clusters=n_clusters, cluster_size=cluster_size, mean=mean, icc=icc,
                                  rng=rng, sizes=sizes)  # type: ignore[arg-type]

    estimators = {
        kind: (lambda d, k=kind: mean_estimate(d["correct"], None if k == "iid" else d["cluster"], se=k))
        for kind in se_kinds
    }
    runs = mc_run(draw, estimators, truth=mean, n_reps=n_reps, seed=seed, progress=progress)
    return mc_summarise(runs)
