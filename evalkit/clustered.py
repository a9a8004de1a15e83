"""Clustered inference for accuracies: cluster-robust standard errors, ICC and design effects.

Items in an evaluation come in clusters (sub-tasks, subjects, source datasets). Outcomes in the
same cluster are correlated, so the i.i.d. standard error of an accuracy is too small. This module
holds the one implementation of the cluster-robust (sandwich) variance that every evalkit method
uses, for plain and weighted (Hájek) means and for paired differences between two models: CR0,
CR1 and Bell–McCaffrey's CR2 with its Satterthwaite degrees of freedom (as R's clubSandwich), the
effective number of clusters, a boundary-aware (Wilson) interval, and the coverage study that
compares them (:func:`coverage_study`).

Paper: [MISSING] (Handling Missing Responses under Cluster Dependence), the "Variance" and
"Design effect" parts of docs/methods/missing-responses.md. Bell and McCaffrey (2002), "Bias reduction in
standard errors for linear regression with multi-stage samples", Survey Methodology 28(2);
Pustejovsky and Tipton (2018), "Small-sample methods for cluster-robust variance estimation and
hypothesis testing in fixed effects models", JBES 36(4); Carter, Schnepel and Steigerwald (2017),
REStat 99(4). Notebooks ``00.1-why-the-average-lies`` to ``00.6-comparing-models-on-a-leaderboard``
teach this module.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from ._checks import (
    _real,
    align_series,
    as_binary_vector,
    as_float_vector,
    as_labels,
    as_weights,
    cap_n_effective,
    check_alpha,
    check_int,
    check_interval,
    check_positive,
    check_range,
    check_seed,
    warn,
)
from .errors import DegenerateDataWarning, EvalkitInputError, RangeWarning, SmallClustersWarning
from .types import as_rng

__all__ = [
    "Estimate",
    "SEKind",
    "interval_t",
    "interval_wilson",
    "clusters_effective",
    "coverage_study",
    "COVERAGE_ESTIMATORS",
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
DFRule = Literal["auto", "satterthwaite", "clusters"]
WeightsKind = Literal["sampling", "inverse_variance"]
IntervalKind = Literal["t", "wilson"]

CLUSTERS_EFFECTIVE_MIN = 10.0
"""Below this effective number of clusters :func:`mean_estimate` warns that no sandwich can be trusted."""
CLUSTER_SHARE_MAX = 0.5
"""Above this share of the total weight in one cluster :func:`mean_estimate` warns likewise."""


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error and confidence interval.

    Attributes
    ----------
    estimate, se : float
    ci_low, ci_high : float
        Two-sided ``1 - alpha`` interval.
    df : float
        Degrees of freedom of the ``t`` reference distribution (``inf`` = normal): ``n - 1`` for
        i.i.d., ``M - 1`` for CR0/CR1, the Satterthwaite (Bell–McCaffrey) value for CR2.
    method : str
        A short label such as ``"mean, CR1"``.
    n : int
        Number of observations used.
    n_clusters : int or None
        Number of clusters ``M`` (None for i.i.d. methods).
    n_clusters_effective : float or None
        Effective number of clusters ``G*`` (:func:`clusters_effective`), next to ``M``; None for
        i.i.d. methods and for estimates built elsewhere.
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    df: float
    method: str
    n: int
    n_clusters: int | None = None
    n_clusters_effective: float | None = None

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


def _t_quantile(df: float, alpha: float) -> float:
    return float(stats.norm.ppf(1 - alpha / 2) if math.isinf(df) else stats.t.ppf(1 - alpha / 2, df))


def interval_t(estimate: float, se: float, df: float, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided ``t`` interval ``estimate -/+ t_{1-alpha/2, df} * se`` (normal when ``df`` is inf)."""
    check_alpha(alpha)
    estimate = _real(estimate, "estimate")
    if not math.isfinite(estimate):
        raise EvalkitInputError("estimate", f"estimate must be finite, got {estimate}")
    se = check_positive(se, "se", allow_zero=True)
    df = check_positive(df, "df", allow_inf=True)
    q = _t_quantile(df, alpha)
    return float(estimate - q * se), float(estimate + q * se)


def interval_wilson(p: float, n_eff: float, *, df: float = math.inf, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a proportion on an effective sample size.

    ``(p + q^2/(2 n)) / (1 + q^2/n) -/+ q / (1 + q^2/n) * sqrt(p (1 - p)/n + q^2/(4 n^2))`` with
    ``n = n_eff`` and ``q`` the ``1 - alpha/2`` quantile of ``t_df`` (normal when ``df`` is inf).
    Unlike the Wald/``t`` interval it stays inside ``[0, 1]`` and does not collapse to a point
    when ``p`` is 0 or 1. With clustered items pass ``n_eff = n / deff`` (Wilson 1927; for
    complex samples, Korn and Graubard 1998).

    Parameters
    ----------
    p : float in [0, 1]
    n_eff : float > 0
    df : float
    alpha : float

    Examples
    --------
    Thirty items, all correct: the Wald interval is ``[1, 1]``; Wilson's is not.

    >>> lo, hi = interval_wilson(1.0, 30)
    >>> round(lo, 3), hi
    (0.886, 1.0)

    Notebook: ``00.1-why-the-average-lies``.
    """
    check_alpha(alpha)
    p = _real(p, "p")
    if not 0.0 <= p <= 1.0:
        raise EvalkitInputError("p", f"p must be a proportion in [0, 1], got {p}")
    n_eff = check_positive(n_eff, "n_eff")
    df = check_positive(df, "df", allow_inf=True)
    if n_eff < 1e-6:
        raise EvalkitInputError("n_eff", f"n_eff={n_eff:g} is below one millionth of an item; an effective sample "
                                         "size is a count of items")
    q2 = _t_quantile(df, alpha) ** 2
    denom = 1.0 + q2 / n_eff
    centre = (p + q2 / (2 * n_eff)) / denom
    half = math.sqrt(q2) / denom * math.sqrt(p * (1 - p) / n_eff + q2 / (4 * n_eff**2))
    lo = 0.0 if p == 0.0 else max(0.0, centre - half)   # exact endpoints at the boundary
    hi = 1.0 if p == 1.0 else min(1.0, centre + half)
    return float(lo), float(hi)


def cluster_scores_variance(scores: np.ndarray, codes: np.ndarray, n_clusters: int, total_weight: float,
                            kind: str) -> float:
    """CR0/CR1 sandwich variance of an estimator given only its per-observation scores.

    The sandwich for estimating equations that only come as scores (a ratio's linearisation, the
    stacked equations of nested means): ``sum_g U_g^2 / W^2`` with ``U_g`` the sum of the scores in
    cluster ``g``. CR2 needs the estimator's hat matrix, not just its scores: for (contrasts of)
    weighted means use :func:`mean_estimate`, :func:`paired_estimate` or
    :func:`evalkit.missing.ipw_compare`, which compute it exactly.

    Parameters
    ----------
    scores : (n,) array
        Estimating-function contributions, e.g. ``w_ij (y_ij - theta_hat)``.
    codes : (n,) int array
        Cluster code ``0..M-1`` of each observation.
    n_clusters : int
        ``M``.
    total_weight : float
        ``W`` (the bread is ``1/W``).
    kind : {"CR0", "CR1"}
        CR0: ``sum_g U_g^2 / W^2``. CR1: times ``M/(M-1)``.

    Raises
    ------
    ValueError
        Another ``kind``.
    """
    # with weights, bincount returns float64 (numpy's stubs say intp)
    U = cast("npt.NDArray[np.float64]", np.bincount(codes, weights=scores, minlength=n_clusters))
    if kind == "CR0":
        meat = np.sum(U**2)
    elif kind == "CR1":
        meat = n_clusters / (n_clusters - 1) * np.sum(U**2)
    else:
        raise ValueError(f"cluster_scores_variance computes CR0 or CR1, got {kind!r}; CR2 needs the hat matrix "
                         "(mean_estimate, paired_estimate, ipw_compare)")
    return float(meat / total_weight**2)


def _inv_sqrt_psd(lam: np.ndarray) -> np.ndarray:
    """``lam^{-1/2}`` with clubSandwich's convention: eigenvalues at or below 1e-12 map to 0."""
    out = np.zeros_like(lam)
    ok = lam > 1e-12
    out[ok] = lam[ok] ** -0.5
    return out


def _cr2_rows(w: np.ndarray, codes: np.ndarray, n_clusters: int, weights_kind: str) -> np.ndarray:
    """Rows of the CR2-adjusted estimating matrices: ``E_i`` with ``c_g = sum_{i in g} E_i e_i``.

    For the weighted mean (``X = 1``), clubSandwich's CR2 is ``E_g = w_g' A_g`` with
    ``A_g = V_g' G_g^{-1/2} V_g``, ``G_g = V_g [(I - H) Theta (I - H)']_gg V_g'``,
    ``H = 1 w' / W`` and ``V_g' V_g = Theta_g``, ``Theta`` the working covariance:

    * ``"sampling"``: ``Theta = I`` (clubSandwich's default for weighted ``lm``). Then
      ``G_g = I - (1 w' + w 1')/W + (sum w^2 / W^2) 1 1'`` is the identity plus a symmetric matrix
      on ``span{1, w_g}``, so ``G_g^{-1/2}`` is computed in closed form on that plane, in
      ``O(n)`` for all clusters at once.
    * ``"inverse_variance"``: ``Theta = diag(1/w)`` (``inverse_var = TRUE``). Then
      ``G_g = diag(1/w^2) - w^{-1/2} (w^{-1/2})'/W`` has no such shortcut unless ``w`` is constant
      in the cluster; other clusters take a symmetric eigendecomposition (``O(n_g^3)``).
    """
    W = float(w.sum())
    n_g = np.bincount(codes, minlength=n_clusters).astype(float)
    Wg = np.bincount(codes, weights=w, minlength=n_clusters)
    if weights_kind == "sampling":
        c = float(np.dot(w, w)) / W**2
        d = w - (Wg / n_g)[codes]                       # w minus its cluster mean (two-pass: exact)
        nd = np.sqrt(np.bincount(codes, weights=d * d, minlength=n_clusters))
        wnorm = np.sqrt(np.bincount(codes, weights=w * w, minlength=n_clusters))
        plane = nd > 1e-13 * wnorm                      # w varies in the cluster: a 2-D subspace
        sq = np.sqrt(n_g)
        # orthonormal basis q1 = 1/sqrt(n), q2 = d/|d|; coordinates of 1 and w in it
        a1 = sq
        b1, b2 = Wg / sq, np.where(plane, nd, 0.0)
        K = np.empty((n_clusters, 2, 2))
        K[:, 0, 0] = 1.0 - 2.0 * a1 * b1 / W + c * a1 * a1
        K[:, 0, 1] = K[:, 1, 0] = -a1 * b2 / W
        K[:, 1, 1] = 1.0
        lam, vec = np.linalg.eigh(K)
        f = _inv_sqrt_psd(lam) - 1.0
        Mx = np.einsum("gij,gj,gkj->gik", vec, f, vec)  # (I + K)^{-1/2} - I on the plane
        m1 = Mx[:, 0, 0] * b1 + Mx[:, 0, 1] * b2
        m2 = Mx[:, 1, 0] * b1 + Mx[:, 1, 1] * b2
        safe_nd = np.where(plane, nd, 1.0)
        return w + (m1 / sq)[codes] + np.where(plane[codes], (m2 / safe_nd)[codes] * d, 0.0)
    if weights_kind != "inverse_variance":  # pragma: no cover - guarded by callers
        raise EvalkitInputError("weights_kind", f"unknown weights_kind {weights_kind!r}")
    E = np.empty_like(w)
    order = np.argsort(codes, kind="stable")
    starts = np.searchsorted(codes[order], np.arange(n_clusters + 1))
    for g in range(n_clusters):
        idx = order[starts[g]:starts[g + 1]]
        wg = w[idx]
        if np.all(wg == wg[0]):                         # constant weight: the leverage form is exact
            E[idx] = wg / math.sqrt(max(1.0 - Wg[g] / W, 0.0)) if Wg[g] < W else 0.0
            continue
        r = 1.0 / np.sqrt(wg)                           # V_g = diag(w^{-1/2})
        G = np.diag(r**4) - np.outer(r, r) / W
        lam, vec = np.linalg.eigh(G)
        A = (vec * _inv_sqrt_psd(lam)) @ vec.T
        E[idx] = (wg * r) @ A * r                       # w' V' G^{-1/2} V
    return E


def _satterthwaite_df(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, float]], n_clusters: int,
                      weights_kind: str) -> float:
    """Bell–McCaffrey/Satterthwaite degrees of freedom of ``sum_g c_g^2`` for a combination of weighted means.

    With ``c_g = s_g' y`` and ``y ~ (X beta, sigma^2 Theta)`` under the working model, the variance
    estimate is a quadratic form whose Satterthwaite df is ``tr(P)^2 / ||P||_F^2`` with the
    ``M x M`` matrix ``P_gh = s_g' Theta s_h`` (clubSandwich's ``coef_test(test = "Satterthwaite")``).

    Each part ``(E, w, codes, scale)`` is one weighted mean on its own rows (``E`` from
    :func:`_cr2_rows`, or ``w`` times a constant for CR0/CR1): its ``s_g = E_g (block g) - k_g w / W``
    with ``k_g = sum_{i in g} E_i``. Parts have disjoint rows and a block-diagonal ``Theta``, so
    ``P = sum_m scale_m P_m``; for a contrast ``sum_m lambda_m theta_m`` the scale is
    ``(lambda_m / W_m)^2``. One part (any scale) is the df of :func:`mean_estimate`. A cluster
    may hold no rows of a part (its row and column of ``P_m`` are then 0).
    """
    diag = np.zeros(n_clusters)
    blocks = []
    top = max(part[3] for part in parts)               # df is scale-free: one part keeps scale 1 exactly
    for E, w, codes, scale in parts:
        scale = scale / top
        W = float(w.sum())
        theta = np.ones_like(w) if weights_kind == "sampling" else 1.0 / w
        k = np.bincount(codes, weights=E, minlength=n_clusters)
        tw2 = theta * w * w
        S = float(tw2.sum())
        S_g = np.bincount(codes, weights=tw2, minlength=n_clusters)
        resid = E - (k / W)[codes] * w                 # s_g on its own block
        # diagonal: a sum of non-negative terms (no cancellation)
        diag += scale * (np.bincount(codes, weights=theta * resid**2, minlength=n_clusters) + (k / W) ** 2 * (S - S_g))
        r = np.bincount(codes, weights=theta * w * resid, minlength=n_clusters)
        blocks.append((k, r, S, S_g, W, scale))
    off2 = 0.0
    step = 1024
    for lo in range(0, n_clusters, step):             # P's off-diagonal part, in row blocks
        sl = slice(lo, min(lo + step, n_clusters))
        block = np.zeros((sl.stop - sl.start, n_clusters))
        for k, r, S, S_g, W, scale in blocks:
            block += scale * (-(k[sl, None] * r[None, :] + r[sl, None] * k[None, :]) / W
                              + np.outer(k[sl], k) * (S - S_g[sl, None] - S_g[None, :]) / W**2)
        rows = np.arange(sl.start, sl.stop)
        block[rows - lo, rows] = 0.0
        off2 += float(np.sum(block**2))
    return float(diag.sum() ** 2 / (np.sum(diag**2) + off2))


def _contrast_variance(groups: Sequence[tuple[float, np.ndarray, np.ndarray, np.ndarray]], n_clusters: int,
                       se: str, df: str, weights_kind: str) -> tuple[float, float, bool]:
    """Cluster-robust variance and df of ``sum_m lambda_m theta_m``, weighted means on shared clusters.

    Each group ``(lambda_m, w, e, codes)`` is one weighted mean ``theta_m = sum w y / sum w`` on its
    own rows (weights ``w``, residuals ``e = y - theta_m``, cluster codes ``0..M-1``; a cluster may
    hold no rows of a group). This is the sandwich of the weighted regression of the stacked rows on
    one indicator per group (``lm(y ~ 0 + group, weights = w)``), clustered by ``codes``, for the
    contrast ``lambda``: its hat matrix is block-diagonal across groups, so CR2's adjustment is each
    group's own (:func:`_cr2_rows`) and ``c_g = sum_m lambda_m / W_m * sum_{i in g} E_i e_i``. One
    group with ``lambda = 1`` is :func:`mean_estimate`.

    Returns
    -------
    (variance, df, satterthwaite)
        ``df`` is Satterthwaite's (:func:`_satterthwaite_df`) when ``df == "satterthwaite"`` or
        (``"auto"``) for CR2, else ``M - 1``; ``satterthwaite`` says which.
    """
    M = n_clusters
    c = np.zeros(M)
    parts = []
    for lam, w, e, codes in groups:
        if se == "CR2":
            n_g = np.bincount(codes, minlength=M)
            if n_g.all():
                E = _cr2_rows(w, codes, M, weights_kind)
            else:                                       # the clusters this group has rows in
                present, local = np.unique(codes, return_inverse=True)
                E = _cr2_rows(w, local, present.size, weights_kind)
        else:
            E = w * (math.sqrt(M / (M - 1)) if se == "CR1" else 1.0)
        W = float(w.sum())
        c += lam / W * np.bincount(codes, weights=E * e, minlength=M)
        parts.append((E, w, codes, (lam / W) ** 2))
    var = float(np.dot(c, c))
    use_satt = df == "satterthwaite" or (df == "auto" and se == "CR2")
    dof = _satterthwaite_df(parts, M, weights_kind) if use_satt else float(M - 1)
    return var, dof, use_satt


def clusters_effective(clusters: npt.ArrayLike, *, weights: npt.ArrayLike | None = None,
                       rho: float = 1.0) -> float:
    """Effective number of clusters ``G*`` of a (weighted) mean (Carter, Schnepel and Steigerwald 2017).

    ``G* = G / (1 + Gamma)`` with ``Gamma`` the squared coefficient of variation of the clusters'
    contributions ``gamma_g`` to the variance of the mean. Under equicorrelation ``rho`` within
    clusters, ``gamma_g = (1 - rho) sum_{i in g} w_i^2 + rho W_g^2``, so
    ``G* = (sum_g gamma_g)^2 / sum_g gamma_g^2``. The default ``rho = 1`` (the most heterogeneous,
    hence the most conservative, case; it depends on the design only) gives
    ``G* = (sum W_g^2)^2 / sum W_g^4``: ``M`` for equal clusters, close to 1 when one cluster holds
    almost everything. Cluster-robust ``t`` tests behave like ``G*`` clusters, not ``M``; below
    about 10 no sandwich interval can be trusted as it stands.

    Paper: A. V. Carter, K. T. Schnepel and D. G. Steigerwald (2017), "Asymptotic behavior of a
    t-test robust to cluster heterogeneity", Review of Economics and Statistics 99(4), 698–709.

    Parameters
    ----------
    clusters : (n,) labels
    weights : (n,) array, optional
        Positive weights of the mean (default: all 1).
    rho : float in [0, 1]
        Within-cluster correlation of the outcomes assumed by the measure.

    Returns
    -------
    float
        ``G*``, between 1 and ``M``.

    Raises
    ------
    ValueError
        Bad labels or weights, or ``rho`` outside ``[0, 1]``.

    Examples
    --------
    Seven clusters, one of them holding 1,692 of 1,698 items.

    >>> clusters = np.repeat(np.arange(7), [1692, 1, 1, 1, 1, 1, 1])
    >>> round(clusters_effective(clusters), 4)
    1.0
    >>> clusters_effective(np.repeat(np.arange(12), 50))
    12.0

    Notebook: ``00.3-coverage-and-effective-clusters`` (and ``00.5-nested-clusterings-on-mmlu-pro``).
    """
    if not 0.0 <= rho <= 1.0:
        raise EvalkitInputError("rho", f"rho must be in [0, 1], got {rho}")
    clus = np.asarray(clusters)
    codes, uniques = as_labels(clus, clus.shape[0] if clus.ndim else 0)
    w = np.ones(codes.size) if weights is None else as_weights(weights, codes.size)
    return _clusters_effective(w, codes, uniques.size, rho)


def _clusters_effective(w: np.ndarray, codes: np.ndarray, n_clusters: int, rho: float = 1.0) -> float:
    Wg = np.bincount(codes, weights=w, minlength=n_clusters)
    gamma = rho * Wg**2
    if rho < 1.0:
        gamma = gamma + (1.0 - rho) * np.bincount(codes, weights=w * w, minlength=n_clusters)
    gamma = gamma / gamma.max()
    return float(gamma.sum() ** 2 / np.sum(gamma**2))


def _design_warn(M: int, g_eff: float, share: float, stacklevel: int) -> None:
    parts = []
    if M < 5:
        parts.append(f"only {M} clusters: cluster-robust intervals are unreliable with so few")
    if g_eff < CLUSTERS_EFFECTIVE_MIN or share > CLUSTER_SHARE_MAX:
        parts.append(
            f"the effective number of clusters is {g_eff:.3g} (M = {M}; the largest cluster carries "
            f"{100 * share:.3g}% of the weight): the sandwich variance rests on the few clusters "
            "that carry the weight, so no cluster-robust interval can be trusted as it stands"
        )
    if parts:
        warn("; ".join(parts) + ". Prefer CR2 with Satterthwaite df, and report G* next to M.", stacklevel=stacklevel,
             category=SmallClustersWarning)


def mean_estimate(y: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                  weights: npt.ArrayLike | None = None, se: SEKind = "CR1",
                  alpha: float = 0.05, binary: bool = True, df: DFRule = "auto",
                  weights_kind: WeightsKind = "sampling", interval: IntervalKind = "t") -> Estimate:
    r"""Mean (or Hájek weighted mean) of outcomes with an i.i.d. or cluster-robust interval.

    The estimate solves ``sum_i w_i (y_i - theta) = 0``, i.e. ``theta = sum w y / sum w``
    (invariant to the scale of the weights). Its sandwich variance is
    ``sum_g c_g^2 / W^2`` with ``c_g = U_g = sum_{i in g} w_i (y_i - theta)`` (CR0), times
    ``M/(M-1)`` (CR1, the default), or with Bell–McCaffrey's CR2 adjustment
    ``c_g = w_g' A_g e_g`` (Bell and McCaffrey 2002; Pustejovsky and Tipton 2018). The i.i.d.
    interval uses the heteroskedasticity-robust ``n/(n-1)`` sandwich (the usual ``s/sqrt(n)``
    when unweighted) with ``t_{n-1}``.

    Reference distribution (``df="auto"``): CR0 and CR1 use ``t_{M-1}``; CR2 uses ``t`` with the
    Satterthwaite degrees of freedom of Bell and McCaffrey, as
    ``clubSandwich::coef_test(fit, vcov = "CR2", test = "Satterthwaite")``. With unequal clusters
    these can be far below ``M - 1`` (under 2 when one cluster carries most of the weight), and
    ``M - 1`` is then far too generous. ``df="satterthwaite"`` or ``"clusters"`` forces either rule.

    Weighted CR2 needs a working model for the covariance of the outcomes, and clubSandwich has
    two for ``lm(y ~ 1, weights = w)``:

    * ``weights_kind="sampling"`` (default) equals
      ``clubSandwich::vcovCR(lm(y ~ 1, weights = w), cluster, type = "CR2")`` with its default
      working model for weighted ``lm``, the identity (``inverse_var = FALSE``): right for
      sampling and inverse-probability weights, which say how much an outcome counts, not how
      noisy it is.
    * ``weights_kind="inverse_variance"`` equals ``vcovCR(..., inverse_var = TRUE)``, the working
      model ``Var(y_i) ∝ 1/w_i``: for weights that are inverse variances. It needs an
      eigendecomposition of every cluster whose weights vary (``O(n_g^3)``: about a second for a
      cluster of 2,000 items); the default is ``O(n)``.

    Both reduce to the unweighted CR2 when all weights are equal. With weights constant within each
    cluster, ``"inverse_variance"`` reduces to scaling each ``U_g`` by ``(1 - W_g/W)^{-1/2}``; with
    weights that vary within clusters, that scaling (used by evalkit before this version: the CR2 of
    the ``sqrt(w)``-transformed regression) is neither variant. The Satterthwaite df use the same
    working model. CR0 and CR1 do not depend on it.

    Near the boundary (every outcome 0 or every outcome 1) the ``t`` interval collapses to a point;
    ``interval="wilson"`` gives the Wilson score interval (:func:`interval_wilson`) on the
    effective sample size ``n_eff = p (1 - p) / se^2`` (that is, ``n / deff``), with the same
    ``t`` quantile; when ``p`` is 0 or 1 the variance carries no information and ``n_eff`` falls
    back to its value under perfect within-cluster correlation, ``W^2 / sum_g W_g^2`` (the Kish
    size ``W^2 / sum w^2`` for ``se="iid"``). ``n_eff`` never exceeds the Kish size.

    Cluster-robust estimates report the effective number of clusters (:func:`clusters_effective`)
    and warn (:class:`~evalkit.EvalkitWarning`) when it is under 10 or when one cluster carries
    more than half the weight.

    Paper: [MISSING]; notebook ``00.1-why-the-average-lies`` teaches it.

    Parameters
    ----------
    y : (n,) array
        Outcomes (0/1 unless ``binary=False``); NaN is refused.
    clusters : (n,) labels, optional
        Cluster of each outcome; required for the CR kinds.
    weights : (n,) array, optional
        Positive weights (for example inverse propensities). Default: all 1. Only their ratios
        matter.
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float
        The interval is two-sided ``1 - alpha``.
    binary : bool
        Check that ``y`` holds only 0/1 (set False for differences or continuous scores).
    df : {"auto", "satterthwaite", "clusters"}
        Degrees of freedom of cluster-robust intervals (ignored for ``se="iid"``).
    weights_kind : {"sampling", "inverse_variance"}
        Working model of weighted CR2 and of the Satterthwaite df (see above).
    interval : {"t", "wilson"}
        ``"wilson"`` needs binary outcomes.

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        NaN or non-binary outcomes, misaligned clusters or weights, non-positive weights, a
        cluster-robust kind without clusters, a single cluster (its variance is undefined), or an
        unknown option.

    Warns
    -----
    EvalkitWarning
        Fewer than 5 clusters, an effective number of clusters under 10, a cluster with more than
        half the weight, or (binary outcomes) a ``t`` interval of width 0 at the boundary or one
        that leaves ``[0, 1]``.

    Examples
    --------
    Twenty-four items in twelve clusters of two:

    >>> y = np.array([1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 1])
    >>> g = np.repeat(np.arange(12), 2)
    >>> e = mean_estimate(y, g, se="CR2")
    >>> round(e.estimate, 4), round(e.se, 4), e.df, e.n_clusters, e.n_clusters_effective
    (0.6667, 0.1124, 11.0, 12, 12.0)
    >>> round(mean_estimate(y, se="iid").se, 4)
    0.0983

    Sampling weights that vary within clusters, and the two CR2 working models:

    >>> w = 1.0 + np.arange(24) % 3
    >>> for kind in ("sampling", "inverse_variance"):
    ...     e = mean_estimate(y, g, weights=w, se="CR2", weights_kind=kind)
    ...     print(kind, round(e.estimate, 4), round(e.se, 4), round(e.df, 2))
    sampling 0.6667 0.1233 9.68
    inverse_variance 0.6667 0.1228 10.52

    All correct: ``interval="wilson"`` keeps a lower bound below 1.

    >>> e = mean_estimate(np.ones(24), g, se="CR2", interval="wilson")
    >>> round(e.ci_low, 3), e.ci_high
    (0.712, 1.0)
    """
    return _mean_estimate(y, clusters, weights, se, alpha, binary, df, weights_kind, interval, stacklevel=4)


def _mean_estimate(y: npt.ArrayLike, clusters: npt.ArrayLike | None, weights: npt.ArrayLike | None, se: str,
                   alpha: float, binary: bool, df: str, weights_kind: str, interval: str, *,
                   stacklevel: int) -> Estimate:
    """The body of :func:`mean_estimate`; ``stacklevel`` points warnings at the user's call."""
    clusters = cast("npt.ArrayLike | None", align_series(y, clusters, "clusters"))
    weights = cast("npt.ArrayLike | None", align_series(y, weights, "weights"))
    y = as_binary_vector(y, "y") if binary else as_float_vector(y, "y")
    check_alpha(alpha)
    if se not in _SE_KINDS:
        raise EvalkitInputError("se", f"se must be one of {_SE_KINDS}, got {se!r}")
    if df not in ("auto", "satterthwaite", "clusters"):
        raise EvalkitInputError("df", f"df must be 'auto', 'satterthwaite' or 'clusters', got {df!r}")
    if weights_kind not in ("sampling", "inverse_variance"):
        raise EvalkitInputError(
            "weights_kind", f"weights_kind must be 'sampling' or 'inverse_variance', got {weights_kind!r}")
    if interval not in ("t", "wilson"):
        raise EvalkitInputError("interval", f"interval must be 't' or 'wilson', got {interval!r}")
    if interval == "wilson" and not binary:
        raise EvalkitInputError("interval", "interval='wilson' is for proportions: it needs binary=True")
    n = y.size
    w = np.ones(n) if weights is None else as_weights(weights, n)
    W = float(w.sum())
    theta = float(np.dot(w, y) / W)
    constant = bool((y == y[0]).all())
    if constant:
        theta = float(y[0])   # exact: a weighted mean of equal outcomes is that outcome, not 1 - 1e-16
    if binary:
        theta = min(1.0, max(0.0, theta))
    e = y - theta
    label = "mean" if weights is None else "weighted mean"

    if se == "iid":
        if n < 2:
            raise EvalkitInputError("y", "need at least two observations for a standard error")
        var = n / (n - 1) * float(np.sum((w * e) ** 2)) / W**2
        dof = float(n - 1)
        n_floor = W**2 / float(np.dot(w, w))
        M: int | None = None
        g_eff: float | None = None
        method = f"{label}, iid"
    else:
        if clusters is None:
            raise EvalkitInputError("se", f"se={se!r} needs cluster labels; pass clusters= or use se='iid'")
        codes, uniques = as_labels(clusters, n)
        M = int(uniques.size)
        if M < 2:
            raise EvalkitInputError("clusters",
                "only one cluster: a cluster-robust variance needs at least two clusters "
                "(with a single cluster the data carry no information about between-cluster variation)"
            )
        Wg = np.bincount(codes, weights=w, minlength=M)
        g_eff = _clusters_effective(w, codes, M)
        _design_warn(M, g_eff, float(Wg.max() / W), stacklevel + 1)
        var, dof, use_satt = _contrast_variance([(1.0, w, e, codes)], M, se, df, weights_kind)
        n_floor = W**2 / float(np.dot(Wg, Wg))
        method = f"{label}, {se}" + (", Satterthwaite df" if use_satt else "")
    if constant:
        var = 0.0
    s = math.sqrt(var)
    if interval == "wilson":
        kish = W**2 / float(np.dot(w, w))
        pq = theta * (1.0 - theta)
        n_eff = pq / var if pq > 0 and var > 0 else n_floor
        lo, hi = interval_wilson(theta, min(n_eff, kish), df=dof, alpha=alpha)
        method += ", Wilson"
    else:
        lo, hi = interval_t(theta, s, dof, alpha)
        if binary and constant:
            warn(f"every outcome is {int(theta)}: the t interval collapses to [{theta:g}, {theta:g}] with se 0; "
                 "use interval='wilson' for a boundary-aware interval", stacklevel=stacklevel,
                 category=DegenerateDataWarning)
        elif s == 0.0:
            why = "every outcome is equal" if constant else "every cluster has the same mean"
            warn(f"the standard error is 0 ({why}), so the t interval [{lo:.4g}, {hi:.4g}] has zero width; "
                 "it does not express sampling uncertainty (use interval='wilson' for 0/1 outcomes)",
                 stacklevel=stacklevel, category=RangeWarning)
        elif binary and (lo < 0.0 or hi > 1.0):
            warn(f"the t interval [{lo:.3g}, {hi:.3g}] for the accuracy {theta:.3g} leaves [0, 1] (an accuracy "
                 "near 0 or 1, or very few degrees of freedom); interval='wilson' stays inside [0, 1]",
                 stacklevel=stacklevel)
    return Estimate(theta, s, lo, hi, dof, method, n, M, g_eff)


def paired_estimate(y_a: npt.ArrayLike, y_b: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                    se: SEKind = "CR1", alpha: float = 0.05, df: DFRule = "auto") -> Estimate:
    """Accuracy difference ``mean(y_a - y_b)`` of two models on the same items, with a paired interval.

    Pairing removes the shared item difficulty; clustering is respected by computing the
    cluster-robust variance of the per-item differences (:func:`mean_estimate`, including its
    Satterthwaite df for CR2 and its design warnings).

    Paper: [MISSING]; notebook ``00.6-comparing-models-on-a-leaderboard`` teaches it.

    Parameters
    ----------
    y_a, y_b : (n,) arrays
        0/1 outcomes of models A and B on the same ``n`` items (both observed; NaN is refused).
    clusters : (n,) labels, optional
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float
    df : {"auto", "satterthwaite", "clusters"}
        As in :func:`mean_estimate`.

    Raises
    ------
    ValueError
        Different lengths, NaN, non-binary values, or the mean_estimate errors.

    Examples
    --------
    >>> a = np.array([1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1])
    >>> b = np.array([1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 1])
    >>> d = paired_estimate(a, b, np.repeat(np.arange(10), 2), se="CR2")
    >>> round(d.estimate, 2), round(d.se, 4), round(d.df, 2)
    (0.25, 0.0833, 9.0)
    """
    a = as_binary_vector(y_a, "y_a")
    b = as_binary_vector(y_b, "y_b")
    if a.size != b.size:
        raise EvalkitInputError(
            "y_a", f"y_a has {a.size} items and y_b {b.size}; a paired comparison needs the same items")
    clusters = cast("npt.ArrayLike | None", align_series(y_a, clusters, "clusters"))
    est = _mean_estimate(a - b, clusters, None, se, alpha, False, df, "sampling", "t", stacklevel=4)
    if est.ci_low < -1.0 or est.ci_high > 1.0:
        check_interval(est.estimate, est.ci_low, est.ci_high, "paired difference", lower=-1.0, upper=1.0)
    return Estimate(est.estimate, est.se, est.ci_low, est.ci_high, est.df,
                    est.method.replace("mean", "paired difference"), est.n, est.n_clusters,
                    est.n_clusters_effective)


COVERAGE_ESTIMATORS: dict[str, str] = {
    "iid": "t(n-1)",
    "CR1": "t(M-1)",
    "CR2": "t(Satterthwaite)",
    "CR2, t(M-1)": "t(M-1)",
    "CR2, Wilson": "Wilson on n/deff, t(Satterthwaite)",
}
"""The intervals :func:`coverage_study` can score, with their reference distribution."""


def coverage_study(*, designs: str | npt.ArrayLike | Sequence[str | npt.ArrayLike] | Mapping[str, npt.ArrayLike]
                   = ("balanced", "skewed", "dominant"),
                   n_clusters: int = 20, cluster_size: int = 20, mean: float = 0.6, icc: float = 0.1,
                   n_reps: int = 2000, seed: int = 0, alpha: float = 0.05,
                   estimators: Sequence[str] = ("iid", "CR1", "CR2"),
                   dominant_share: float = 0.8, beta_x: float = 0.0) -> pd.DataFrame:
    """Coverage of i.i.d. and cluster-robust intervals for a mean over cluster-size designs.

    The study behind notebook ``00.3-coverage-and-effective-clusters``: for each design, draw ``n_reps``
    benchmarks of ``n_clusters`` clusters with expected accuracy ``mean`` and observed-scale ICC
    ``icc`` (the outcome model of :func:`evalkit.simulate_clustered`), compute each interval and
    count how often it covers ``mean``. The cluster sizes are fixed per design (a benchmark's
    structure); the outcomes are redrawn in every replication. Replication ``r`` uses the
    generator ``default_rng(SeedSequence(seed).spawn(n_reps)[r])``, as :func:`evalkit.mc_run`
    does, so ``mc_run`` with :func:`mean_estimate` on ``simulate_clustered(sizes=...)`` gives the
    same numbers, one replication at a time; this function computes all replications at once.

    Estimators (``COVERAGE_ESTIMATORS``): ``"iid"`` (``t_{n-1}``), ``"CR1"`` (``t_{M-1}``),
    ``"CR2"`` (Satterthwaite df), ``"CR2, t(M-1)"`` (to separate the variance correction from the
    df correction) and ``"CR2, Wilson"`` (:func:`interval_wilson` on ``n/deff``).

    Paper: [MISSING]; Bell and McCaffrey (2002); Pustejovsky and Tipton (2018).

    Parameters
    ----------
    designs : design name, sizes, or a sequence or mapping of them
        ``"balanced"``, ``"skewed"`` (log-normal sizes drawn with ``rng=seed``), ``"dominant"``
        (one cluster with ``dominant_share`` of the items), or explicit ``(M,)`` integer sizes
        (named ``"custom"``, or by the mapping's keys).
    n_clusters, cluster_size : int
        ``M`` and the average cluster size of the named designs.
    mean, icc : float
        Expected accuracy (the truth) and observed-scale intra-class correlation.
    n_reps : int
        Replications per design (at least 2).
    seed : int
    alpha : float
        Nominal level ``1 - alpha``.
    estimators : sequence of str
        Keys of ``COVERAGE_ESTIMATORS``.
    dominant_share : float
        Share of the items in the large cluster of ``"dominant"``.
    beta_x : float
        Item-covariate effect of the outcome model.

    Returns
    -------
    DataFrame
        One row per design and estimator: ``design, estimator, reference, n_reps, coverage,
        coverage_mcse`` (binomial Monte Carlo SE), ``width, se_mean, sd_estimate, bias, df_mean,
        n_items, n_clusters, n_clusters_effective, largest_share``. The sizes of each design are in
        ``attrs["sizes"]``.

    Raises
    ------
    ValueError
        Unknown design or estimator, ``n_reps < 2``, and the errors of the simulators.

    Examples
    --------
    >>> res = coverage_study(designs="dominant", n_reps=200, seed=1)
    >>> print(res[["estimator", "coverage", "df_mean"]].round(2).to_string(index=False))
    estimator  coverage  df_mean
          iid      0.24   399.00
          CR1      0.22    19.00
          CR2      0.96     1.52

    Notebook: ``00.3-coverage-and-effective-clusters``.
    """
    from .simulate import _outcomes_draw, _sizes_resolve, simulate_calibrate

    check_alpha(alpha)
    check_seed(seed)
    n_reps = check_int(n_reps, "n_reps", minimum=2)
    unknown = [k for k in estimators if k not in COVERAGE_ESTIMATORS]
    if unknown or not estimators:
        raise EvalkitInputError(
            "estimators", f"estimators must be keys of COVERAGE_ESTIMATORS {list(COVERAGE_ESTIMATORS)}, got {unknown}")
    named: list[tuple[str, str | npt.ArrayLike]]
    if isinstance(designs, Mapping):
        named = [(str(k), v) for k, v in designs.items()]
    elif isinstance(designs, str) or (isinstance(designs, np.ndarray) and designs.dtype.kind in "iu"):
        named = [(designs if isinstance(designs, str) else "custom", designs)]
    else:
        seq = list(designs)  # type: ignore[arg-type]
        if seq and all(isinstance(v, (int, np.integer)) for v in seq):
            named = [("custom", np.asarray(seq))]
        else:
            named = [(v if isinstance(v, str) else f"custom{i}", v) for i, v in enumerate(seq)]
    mu, sigma_u = simulate_calibrate(float(mean), float(icc), float(beta_x))
    children = np.random.SeedSequence(seed).spawn(n_reps)
    rows: list[dict[str, object]] = []
    all_sizes: dict[str, list[int]] = {}
    for name, spec in named:
        named_design = isinstance(spec, str)
        n_g = _sizes_resolve(spec if isinstance(spec, str) else np.asarray(spec),
                             n_clusters if named_design else None, cluster_size if named_design else None,
                             as_rng(seed), dominant_share)
        all_sizes[name] = n_g.tolist()
        M, N = int(n_g.size), int(n_g.sum())
        if M < 2:
            raise EvalkitInputError("designs", f"design {name!r} has a single cluster")
        Y = np.empty((n_reps, N))
        for r in range(n_reps):
            Y[r] = _outcomes_draw(np.random.default_rng(children[r]), n_g, mu, sigma_u, float(beta_x))[4]
        codes = np.repeat(np.arange(M), n_g)
        ones = np.ones(N)
        est = Y.mean(axis=1)
        E = Y - est[:, None]
        U = np.add.reduceat(E, np.r_[0, np.cumsum(n_g)[:-1]], axis=1)
        g_eff = _clusters_effective(ones, codes, M)
        var_iid = np.sum(E**2, axis=1) / (N * (N - 1))
        var_cr1 = M / (M - 1) * np.sum(U**2, axis=1) / N**2
        adj = _cr2_rows(ones, codes, M, "sampling")[np.r_[0, np.cumsum(n_g)[:-1]]]  # constant per cluster
        var_cr2 = np.sum((U * adj) ** 2, axis=1) / N**2
        df_satt = _satterthwaite_df([(_cr2_rows(ones, codes, M, "sampling"), ones, codes, 1.0)], M, "sampling")
        n_floor = N**2 / float(np.dot(n_g, n_g))
        for key in estimators:
            if key == "iid":
                var, dof = var_iid, float(N - 1)
            elif key == "CR1":
                var, dof = var_cr1, float(M - 1)
            elif key == "CR2, t(M-1)":
                var, dof = var_cr2, float(M - 1)
            else:
                var, dof = var_cr2, df_satt
            se = np.sqrt(var)
            q = _t_quantile(dof, alpha)
            if key == "CR2, Wilson":
                pq = est * (1 - est)
                with np.errstate(divide="ignore", invalid="ignore"):
                    n_eff = np.where((pq > 0) & (var > 0), pq / var, n_floor)
                n_eff = np.minimum(n_eff, N)
                denom = 1 + q**2 / n_eff
                centre = (est + q**2 / (2 * n_eff)) / denom
                half = q / denom * np.sqrt(est * (1 - est) / n_eff + q**2 / (4 * n_eff**2))
                lo = np.where(est == 0.0, 0.0, np.maximum(0.0, centre - half))
                hi = np.where(est == 1.0, 1.0, np.minimum(1.0, centre + half))
            else:
                lo, hi = est - q * se, est + q * se
            cover = float(np.mean((lo <= mean) & (mean <= hi)))
            rows.append({
                "design": name, "estimator": key, "reference": COVERAGE_ESTIMATORS[key], "n_reps": n_reps,
                "coverage": cover, "coverage_mcse": math.sqrt(cover * (1 - cover) / n_reps),
                "width": float(np.mean(hi - lo)), "se_mean": float(se.mean()),
                "sd_estimate": float(est.std(ddof=1)), "bias": float(est.mean() - mean), "df_mean": dof,
                "n_items": N, "n_clusters": M, "n_clusters_effective": g_eff,
                "largest_share": float(n_g.max() / N),
            })
    out = pd.DataFrame(rows)
    out.attrs["sizes"] = all_sizes
    out.attrs.update(mean=mean, icc=icc, alpha=alpha, seed=seed)
    return out


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
    n_boot = check_int(n_boot, "n_boot", minimum=1)
    seed = check_seed(seed)
    if n_boot < 50:
        raise EvalkitInputError(
            "n_boot", f"n_boot={n_boot} is too small for a bootstrap interval; use at least 50 (999 is typical)")
    clus = np.asarray(clusters)
    codes, uniques = as_labels(clus, clus.shape[0])
    M = uniques.size
    if M < 2:
        raise EvalkitInputError("clusters", "only one cluster: the cluster bootstrap needs at least two clusters")
    if not callable(statistic):
        raise EvalkitInputError("statistic", f"statistic must be a callable (rows, cluster_ids) -> float, got "
                                             f"{type(statistic).__name__}")
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
            if not math.isfinite(reps[b]):
                reps[b] = np.nan
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            continue
    ok = reps[~np.isnan(reps)]
    n_fail = n_boot - ok.size
    if ok.size < 0.9 * n_boot:
        raise EvalkitInputError(
            "statistic", f"{n_fail} of {n_boot} bootstrap resamples failed; the statistic is unstable on this data")
    if not math.isfinite(full):
        raise EvalkitInputError("statistic", f"the statistic on the full data is {full}, not a finite number")
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    method = "cluster bootstrap" + (f" ({n_fail} failed resamples dropped)" if n_fail else "")
    return Estimate(full, float(ok.std(ddof=1)), float(lo), float(hi), math.inf, method, int(codes.size), int(M))


def icc_anova(y: npt.ArrayLike, clusters: npt.ArrayLike) -> float:
    """One-way ANOVA estimator of the intra-class correlation of outcomes.

    ``rho = (MSB - MSW) / (MSB + (n0 - 1) MSW)`` with ``n0 = (N - sum n_g^2 / N) / (M - 1)``, the
    usual estimator for unbalanced clusters and binary outcomes. It can be slightly negative when
    the true ICC is near zero; the value is returned unclipped.

    Paper: [MISSING].

    Parameters
    ----------
    y : (n,) array
        Outcomes (0/1 or continuous); NaN is refused.
    clusters : (n,) labels

    Raises
    ------
    ValueError
        NaN outcomes, fewer than two clusters, or no within-cluster replication.

    Examples
    --------
    Three clusters that mostly agree inside:

    >>> y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1])
    >>> round(icc_anova(y, np.repeat(np.arange(3), 4)), 3)
    0.75

    Notebook: ``00.1-why-the-average-lies``.
    """
    y = as_float_vector(y, "y")
    codes, uniques = as_labels(clusters, y.size)
    M, N = uniques.size, y.size
    if M < 2:
        raise EvalkitInputError("clusters", "the ICC needs at least two clusters")
    if N <= M:
        raise EvalkitInputError("clusters", "the ICC needs clusters with more than one item")
    n_g = np.bincount(codes, minlength=M).astype(float)
    mean_g = np.bincount(codes, weights=y, minlength=M) / n_g
    grand = y.mean()
    msb = np.sum(n_g * (mean_g - grand) ** 2) / (M - 1)
    msw = np.sum((y - mean_g[codes]) ** 2) / (N - M)
    n0 = (N - np.sum(n_g**2) / N) / (M - 1)
    denom = msb + (n0 - 1) * msw
    if denom <= 0:
        raise EvalkitInputError("y", "all outcomes are identical: the ICC is undefined")
    rho = float((msb - msw) / denom)
    floor = -1.0 / (n0 - 1.0) if n0 > 1 else -1.0
    if rho < max(floor, -1.0):
        warn(f"the ANOVA ICC {rho:.3g} is below its lower limit {max(floor, -1.0):.3g} (-1/(n0 - 1)); "
             "within-cluster outcomes disagree more than chance allows, check the cluster labels",
             category=RangeWarning)
    return rho


def icc_latent(sigma_u: float) -> float:
    """Latent-scale ICC of a logistic random-intercept model: ``sigma_u^2 / (sigma_u^2 + pi^2/3)``.

    Parameters
    ----------
    sigma_u : float
        Standard deviation of the cluster random intercept on the logit scale.
    """
    sigma_u = _real(sigma_u, "sigma_u")
    if not np.isfinite(sigma_u) or sigma_u < 0:
        raise EvalkitInputError("sigma_u", f"sigma_u must be a finite non-negative SD, got {sigma_u}")
    v = float(sigma_u) ** 2
    return v / (v + math.pi**2 / 3)


def deff_from_icc(m_bar: float | npt.ArrayLike, rho: float) -> float:
    """Design effect ``1 + (m - 1) rho`` of a mean over clusters, from the ICC and the cluster sizes.

    ``m_bar`` is either a number (the cluster size ``m``, exact for equal clusters) or the array
    of cluster sizes ``n_g``, in which case ``m = sum n_g^2 / sum n_g``, the size-weighted mean
    size. That is the exact design effect of an unweighted mean under equicorrelation ``rho``:
    ``Var(ybar) = sigma^2 / n * [1 + (sum n_g^2 / n - 1) rho]``. With unequal clusters the plain
    average size understates it (Kish 1965).

    Paper: [MISSING]; notebook ``00.1-why-the-average-lies`` teaches it.

    Parameters
    ----------
    m_bar : float or (M,) int array
        Cluster size, or the size of every cluster.
    rho : float in [-1, 1]
        Intra-class correlation of the outcomes.

    Raises
    ------
    ValueError
        A size below 1, non-integer or empty sizes, or ``rho`` outside ``[-1, 1]``.

    Examples
    --------
    >>> deff_from_icc(50, 0.2)
    10.8

    One cluster of 400 items and nine of 10: the average size is 49, the size-weighted 328.

    >>> round(deff_from_icc(np.array([400] + [10] * 9), 0.2), 2)
    66.47
    >>> round(deff_from_icc(49, 0.2), 2)
    10.6
    """
    rho = check_range(rho, "rho", -1.0, 1.0)
    if np.ndim(m_bar) == 0:
        m = float(m_bar)  # type: ignore[arg-type]
        if not m >= 1:
            raise EvalkitInputError("m_bar", f"m_bar is a cluster size and must be >= 1, got {m}")
    else:
        n_g = np.asarray(m_bar, dtype=float)
        if n_g.ndim != 1 or n_g.size == 0 or not np.isfinite(n_g).all() or (n_g < 1).any() \
                or (n_g != np.round(n_g)).any():
            raise EvalkitInputError("m_bar", "cluster sizes must be a non-empty 1-D array of integers >= 1")
        m = float(np.dot(n_g, n_g) / n_g.sum())
    if m > 1 and rho < -1.0 / (m - 1.0):
        raise EvalkitInputError(
            "rho", f"rho={rho} is below -1/(m - 1) = {-1.0 / (m - 1.0):.4g}, the smallest correlation clusters "
            f"of size {m:g} allow; the design effect would be negative")
    return 1.0 + (m - 1.0) * float(rho)


def n_effective(n: float, deff: float) -> float:
    """Effective sample size ``n / deff``: the number of independent items carrying the same information."""
    n = check_positive(n, "n")
    deff = check_positive(deff, "deff")
    return cap_n_effective(n / deff, n, stacklevel=4)


def deff_empirical(y: npt.ArrayLike, clusters: npt.ArrayLike, *, weights: npt.ArrayLike | None = None) -> float:
    """Empirical design effect ``V_cluster / V_iid`` of a (weighted) mean.

    Both variances are the uncorrected sandwich (CR0 over HC0), so the ratio isolates the effect
    of clustering from small-sample corrections.

    Raises
    ------
    ValueError
        NaN outcomes, misaligned labels or weights, non-positive or non-finite weights, fewer than
        two clusters, or outcomes that are all identical.

    Examples
    --------
    >>> y = np.array([1, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0])
    >>> round(deff_empirical(y, np.repeat(np.arange(4), 3)), 3)
    1.667
    """
    y = as_float_vector(y, "y")
    n = y.size
    w = np.ones(n) if weights is None else as_weights(weights, n)
    codes, uniques = as_labels(clusters, n)
    if uniques.size < 2:
        raise EvalkitInputError("clusters", "the design effect needs at least two clusters")
    W = w.sum()
    scores = w * (y - np.dot(w, y) / W)
    v_iid = float(np.sum(scores**2)) / W**2
    if v_iid == 0:
        raise EvalkitInputError("y", "all outcomes are identical: the design effect is undefined")
    v_cl = cluster_scores_variance(scores, codes, uniques.size, W, "CR0")
    return float(v_cl / v_iid)


def _calibration_bins(p: np.ndarray, y: np.ndarray, n_bins: int) -> pd.DataFrame:
    """Quantile bins of predicted probabilities ``p`` against the 0/1 outcomes ``y``.

    One row per bin: ``n``, the mean prediction ``p_mean``, the observed rate ``rate``, its binomial
    standard error under the predictions ``se = sqrt(p_mean (1 - p_mean) / n)`` and ``z = (rate - p_mean) / se``.
    The binomial SE treats the entries of a bin as independent. Shared by the propensity and
    factor-model calibration checks.
    """
    edges = np.unique(np.quantile(p, np.linspace(0, 1, int(n_bins) + 1)))
    b = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, max(edges.size - 2, 0))
    rows = []
    for k in np.unique(b):
        m = b == k
        pm, rate, nk = float(p[m].mean()), float(y[m].mean()), int(m.sum())
        se = math.sqrt(max(pm * (1 - pm), 1e-12) / nk)
        rows.append({"bin": int(k), "n": nk, "p_mean": pm, "rate": rate, "se": se, "z": (rate - pm) / se})
    return pd.DataFrame(rows, columns=["bin", "n", "p_mean", "rate", "se", "z"]).set_index("bin")
