"""Clustered inference for accuracies: cluster-robust standard errors, ICC and design effects.

Items in an evaluation come in clusters (sub-tasks, subjects, source datasets). Outcomes in the
same cluster are correlated, so the i.i.d. standard error of an accuracy is too small. This module
holds the one implementation of the cluster-robust (sandwich) variance that every evalkit method
uses, for plain and weighted (Hájek) means and for paired differences between two models.

Paper: papers/000 (Handling Missing Responses under Cluster Dependence), the "Variance" and
"Design effect" parts of METHODS.md section 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt
from scipy import stats

from ._checks import as_binary_vector, as_float_vector, as_labels, check_alpha, warn
from .types import as_rng

__all__ = [
    "Estimate",
    "SEKind",
    "interval_t",
    "mean_estimate",
    "paired_estimate",
    "cluster_scores_variance",
    "bootstrap_cluster",
    "icc_anova",
    "icc_latent",
    "deff_from_icc",
    "deff_empirical",
    "n_effective",
]

SEKind = Literal["iid", "CR0", "CR1", "CR2"]
_SE_KINDS: tuple[str, ...] = ("iid", "CR0", "CR1", "CR2")


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error and confidence interval.

    Attributes
    ----------
    estimate, se : float
    ci_low, ci_high : float
        Two-sided ``1 - alpha`` interval.
    df : float
        Degrees of freedom of the ``t`` reference distribution (``inf`` = normal).
    method : str
        A short label such as ``"mean, CR1"``.
    n : int
        Number of observations used.
    n_clusters : int or None
        Number of clusters (None for i.i.d. methods).
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    df: float
    method: str
    n: int
    n_clusters: int | None = None

    @property
    def width(self) -> float:
        """Interval width ``ci_high - ci_low``."""
        return self.ci_high - self.ci_low

    def covers(self, value: float) -> bool:
        """Whether the interval contains ``value``."""
        return bool(self.ci_low <= value <= self.ci_high)

    def to_dict(self) -> dict[str, float | int | str | None]:
        """The fields (and the width) as a plain dict, for DataFrames."""
        d = asdict(self)
        d["width"] = self.width
        return d


def interval_t(estimate: float, se: float, df: float, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided ``t`` interval ``estimate -/+ t_{1-alpha/2, df} * se`` (normal when ``df`` is inf)."""
    check_alpha(alpha)
    q = float(stats.norm.ppf(1 - alpha / 2) if math.isinf(df) else stats.t.ppf(1 - alpha / 2, df))
    return float(estimate - q * se), float(estimate + q * se)


def cluster_scores_variance(scores: np.ndarray, codes: np.ndarray, n_clusters: int, total_weight: float,
                            kind: str, cluster_weight: np.ndarray | None = None) -> float:
    """Sandwich variance of a (weighted) mean from per-observation scores ``w_i (y_i - theta)``.

    This is the single place where evalkit's cluster-robust variance is computed.

    Parameters
    ----------
    scores : (n,) array
        Estimating-function contributions ``w_ij (y_ij - theta_hat)``.
    codes : (n,) int array
        Cluster code ``0..M-1`` of each observation.
    n_clusters : int
        ``M``.
    total_weight : float
        ``W = sum w`` (the bread is ``1/W``).
    kind : {"CR0", "CR1", "CR2"}
        CR0: ``sum_g U_g^2 / W^2``. CR1: times ``M/(M-1)``. CR2 (Bell–McCaffrey): each ``U_g`` is
        scaled by ``(1 - W_g/W)^{-1/2}``, the exact CR2 adjustment for a mean (the cluster's
        leverage is ``W_g/W``).
    cluster_weight : (M,) array, optional
        ``W_g``; needed for CR2.
    """
    # with weights, bincount returns float64 (numpy's stubs say intp)
    U = cast("npt.NDArray[np.float64]", np.bincount(codes, weights=scores, minlength=n_clusters))
    if kind == "CR0":
        meat = np.sum(U**2)
    elif kind == "CR1":
        meat = n_clusters / (n_clusters - 1) * np.sum(U**2)
    elif kind == "CR2":
        if cluster_weight is None:
            raise ValueError("CR2 needs the per-cluster weight totals")
        leverage = cluster_weight / total_weight
        meat = np.sum(U**2 / (1.0 - leverage))
    else:  # pragma: no cover - guarded by callers
        raise ValueError(f"unknown cluster-robust kind {kind!r}")
    return float(meat / total_weight**2)


def mean_estimate(y: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                  weights: npt.ArrayLike | None = None, se: SEKind = "CR1",
                  alpha: float = 0.05, binary: bool = True) -> Estimate:
    """Mean (or Hájek weighted mean) of outcomes with an i.i.d. or cluster-robust interval.

    The estimate solves ``sum_i w_i (y_i - theta) = 0``, i.e. ``theta = sum w y / sum w``. Its
    sandwich variance is ``sum_g U_g^2 / W^2`` with ``U_g = sum_{i in g} w_i (y_i - theta)``
    (CR0), times ``M/(M-1)`` (CR1, the default), or with the Bell–McCaffrey CR2 adjustment.
    Cluster-robust intervals use ``t`` with ``M - 1`` degrees of freedom; the i.i.d. interval uses
    the heteroskedasticity-robust ``n/(n-1)`` sandwich (the usual ``s/sqrt(n)`` when unweighted)
    with ``t_{n-1}``.

    With weights, CR2 is the Bell–McCaffrey adjustment of the ``sqrt(w)``-transformed regression
    (each ``U_g`` scaled by ``(1 - W_g/W)^{-1/2}``), which treats the weights as sampling weights.
    R's ``clubSandwich`` treats regression weights as inverse-variance weights and differs from
    this by well under 1% in typical IPW settings (``tests/test_missing_r.py`` measures it); the
    two coincide without weights.

    Paper: papers/000.

    Parameters
    ----------
    y : (n,) array
        Outcomes (0/1 unless ``binary=False``); NaN is refused.
    clusters : (n,) labels, optional
        Cluster of each outcome; required for the CR kinds.
    weights : (n,) array, optional
        Positive weights (for example inverse propensities). Default: all 1.
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float
        The interval is two-sided ``1 - alpha``.
    binary : bool
        Check that ``y`` holds only 0/1 (set False for differences or continuous scores).

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        NaN or non-binary outcomes, misaligned clusters or weights, non-positive weights, a
        cluster-robust kind without clusters, or a single cluster (its variance is undefined).
    """
    y = as_binary_vector(y, "y") if binary else as_float_vector(y, "y")
    check_alpha(alpha)
    if se not in _SE_KINDS:
        raise ValueError(f"se must be one of {_SE_KINDS}, got {se!r}")
    n = y.size
    if weights is None:
        w = np.ones(n)
    else:
        w = as_float_vector(weights, "weights")
        if w.size != n:
            raise ValueError(f"weights has {w.size} entries but y has {n}")
        if (w <= 0).any():
            raise ValueError("weights must be strictly positive (drop non-respondents instead of giving them weight 0)")
    W = float(w.sum())
    theta = float(np.dot(w, y) / W)
    scores = w * (y - theta)

    if se == "iid":
        if n < 2:
            raise ValueError("need at least two observations for a standard error")
        var = n / (n - 1) * float(np.sum(scores**2)) / W**2
        s = math.sqrt(var)
        lo, hi = interval_t(theta, s, n - 1, alpha)
        label = "mean, iid" if weights is None else "weighted mean, iid"
        return Estimate(theta, s, lo, hi, float(n - 1), label, n, None)

    if clusters is None:
        raise ValueError(f"se={se!r} needs cluster labels; pass clusters= or use se='iid'")
    codes, uniques = as_labels(clusters, n)
    M = uniques.size
    if M < 2:
        raise ValueError(
            "only one cluster: a cluster-robust variance needs at least two clusters "
            "(with a single cluster the data carry no information about between-cluster variation)"
        )
    if M < 5:
        warn(f"only {M} clusters: cluster-robust intervals are unreliable with so few; "
             "prefer CR2 and read them with care")
    Wg = np.bincount(codes, weights=w, minlength=M)
    var = cluster_scores_variance(scores, codes, M, W, se, Wg)
    s = math.sqrt(var)
    lo, hi = interval_t(theta, s, M - 1, alpha)
    label = "mean" if weights is None else "weighted mean"
    return Estimate(theta, s, lo, hi, float(M - 1), f"{label}, {se}", n, int(M))


def paired_estimate(y_a: npt.ArrayLike, y_b: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                    se: SEKind = "CR1", alpha: float = 0.05) -> Estimate:
    """Accuracy difference ``mean(y_a - y_b)`` of two models on the same items, with a paired interval.

    Pairing removes the shared item difficulty; clustering is respected by computing the
    cluster-robust variance of the per-item differences (:func:`mean_estimate`).

    Paper: papers/000.

    Parameters
    ----------
    y_a, y_b : (n,) arrays
        0/1 outcomes of models A and B on the same ``n`` items (both observed; NaN is refused).
    clusters : (n,) labels, optional
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float

    Raises
    ------
    ValueError
        Different lengths, NaN, non-binary values, or the mean_estimate errors.
    """
    a = as_binary_vector(y_a, "y_a")
    b = as_binary_vector(y_b, "y_b")
    if a.size != b.size:
        raise ValueError(f"y_a has {a.size} items and y_b {b.size}; a paired comparison needs the same items")
    est = mean_estimate(a - b, clusters, se=se, alpha=alpha, binary=False)
    return Estimate(est.estimate, est.se, est.ci_low, est.ci_high, est.df,
                    est.method.replace("mean", "paired difference"), est.n, est.n_clusters)


def bootstrap_cluster(statistic: Callable[[np.ndarray, np.ndarray], float], clusters: npt.ArrayLike, *,
                      n_boot: int = 999, seed: int | np.random.Generator, alpha: float = 0.05,
                      progress: bool = False) -> Estimate:
    """Cluster bootstrap: resample whole clusters with replacement and recompute a statistic.

    Parameters
    ----------
    statistic : callable ``(rows, cluster_ids) -> float``
        Computes the statistic on the rows ``rows`` (indices into the data, repeated when a
        cluster is drawn more than once). ``cluster_ids`` gives each selected row its cluster id in
        the resample, so that a cluster drawn twice counts as two clusters (refitting a
        random-intercept model needs this).
    clusters : (n,) labels
    n_boot : int
        Number of bootstrap resamples.
    seed : int or Generator
    alpha : float
        Percentile interval ``[alpha/2, 1 - alpha/2]``.
    progress : bool
        Show a progress bar.

    Returns
    -------
    Estimate
        ``estimate`` is the statistic on the original data; ``se`` the bootstrap SD; the interval
        is the percentile interval. Failed resamples (the statistic raised) are dropped and counted
        in ``method``.
    """
    check_alpha(alpha)
    if n_boot < 50:
        raise ValueError(f"n_boot={n_boot} is too small for a bootstrap interval; use at least 50 (999 is typical)")
    clus = np.asarray(clusters)
    codes, uniques = as_labels(clus, clus.shape[0])
    M = uniques.size
    if M < 2:
        raise ValueError("only one cluster: the cluster bootstrap needs at least two clusters")
    rng = as_rng(seed)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(M + 1))
    members = [order[starts[g]:starts[g + 1]] for g in range(M)]
    full = float(statistic(np.arange(codes.size), codes))
    reps = np.full(n_boot, np.nan)
    iterator = range(n_boot)
    if progress:
        from tqdm.auto import tqdm
        iterator = tqdm(iterator, desc="cluster bootstrap", leave=False)
    for b in iterator:
        pick = rng.integers(0, M, size=M)
        rows = np.concatenate([members[g] for g in pick])
        ids = np.repeat(np.arange(M), [members[g].size for g in pick])
        try:
            reps[b] = statistic(rows, ids)
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            continue
    ok = reps[~np.isnan(reps)]
    n_fail = n_boot - ok.size
    if ok.size < 0.9 * n_boot:
        raise ValueError(f"{n_fail} of {n_boot} bootstrap resamples failed; the statistic is unstable on this data")
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    method = "cluster bootstrap" + (f" ({n_fail} failed resamples dropped)" if n_fail else "")
    return Estimate(full, float(ok.std(ddof=1)), float(lo), float(hi), math.inf, method, int(codes.size), int(M))


def icc_anova(y: npt.ArrayLike, clusters: npt.ArrayLike) -> float:
    """One-way ANOVA estimator of the intra-class correlation of outcomes.

    ``rho = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with ``n0 = (N - sum n_g^2 / N) / (M - 1)``, the
    usual estimator for unbalanced clusters and binary outcomes. It can be slightly negative when
    the true ICC is near zero; the value is returned unclipped.

    Paper: papers/000.

    Raises
    ------
    ValueError
        NaN outcomes, fewer than two clusters, or no within-cluster replication.
    """
    y = as_float_vector(y, "y")
    codes, uniques = as_labels(clusters, y.size)
    M, N = uniques.size, y.size
    if M < 2:
        raise ValueError("the ICC needs at least two clusters")
    if N <= M:
        raise ValueError("the ICC needs clusters with more than one item")
    n_g = np.bincount(codes, minlength=M).astype(float)
    mean_g = np.bincount(codes, weights=y, minlength=M) / n_g
    grand = y.mean()
    msb = np.sum(n_g * (mean_g - grand) ** 2) / (M - 1)
    msw = np.sum((y - mean_g[codes]) ** 2) / (N - M)
    n0 = (N - np.sum(n_g**2) / N) / (M - 1)
    denom = msb + (n0 - 1) * msw
    if denom <= 0:
        raise ValueError("all outcomes are identical: the ICC is undefined")
    return float((msb - msw) / denom)


def icc_latent(sigma_u: float) -> float:
    """Latent-scale ICC of a logistic random-intercept model: ``sigma_u^2 / (sigma_u^2 + pi^2/3)``.

    Parameters
    ----------
    sigma_u : float
        Standard deviation of the cluster random intercept on the logit scale.
    """
    if not np.isfinite(sigma_u) or sigma_u < 0:
        raise ValueError(f"sigma_u must be a finite non-negative SD, got {sigma_u}")
    v = float(sigma_u) ** 2
    return v / (v + math.pi**2 / 3)


def deff_from_icc(m_bar: float, rho: float) -> float:
    """Design effect ``1 + (m_bar - 1) rho`` of a mean over clusters of average size ``m_bar``.

    Example: ``m_bar = 50, rho = 0.2`` gives ``10.8``.
    """
    if m_bar < 1:
        raise ValueError(f"m_bar is an average cluster size and must be >= 1, got {m_bar}")
    if not -1 <= rho <= 1:
        raise ValueError(f"rho must be a correlation in [-1, 1], got {rho}")
    return 1.0 + (float(m_bar) - 1.0) * float(rho)


def n_effective(n: float, deff: float) -> float:
    """Effective sample size ``n / deff``: the number of independent items carrying the same information."""
    if deff <= 0:
        raise ValueError(f"deff must be positive, got {deff}")
    return float(n) / float(deff)


def deff_empirical(y: npt.ArrayLike, clusters: npt.ArrayLike, *, weights: npt.ArrayLike | None = None) -> float:
    """Empirical design effect ``V_cluster / V_iid`` of a (weighted) mean.

    Both variances are the uncorrected sandwich (CR0 over HC0), so the ratio isolates the effect
    of clustering from small-sample corrections.
    """
    y = as_float_vector(y, "y")
    n = y.size
    w = np.ones(n) if weights is None else as_float_vector(weights, "weights")
    codes, uniques = as_labels(clusters, n)
    if uniques.size < 2:
        raise ValueError("the design effect needs at least two clusters")
    W = w.sum()
    scores = w * (y - np.dot(w, y) / W)
    v_iid = float(np.sum(scores**2)) / W**2
    if v_iid == 0:
        raise ValueError("all outcomes are identical: the design effect is undefined")
    v_cl = cluster_scores_variance(scores, codes, uniques.size, W, "CR0")
    return v_cl / v_iid
