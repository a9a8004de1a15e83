"""Missing responses under cluster dependence: weights, IPW, bounds and the one-call report.

A model refuses, times out, is filtered or produces output nobody can parse on some items. This
module estimates the accuracy it would have had on *all* items, with intervals that respect the
clustering of items:

* **weights** (``weights_compute``): inverse propensities (from
  :func:`evalkit.missing_propensity.propensity_fit`) with truncation and diagnostics;
* **estimators** (``ipw_estimate``, ``ipw_compare``, ``ipw_bootstrap``, ``missing_complete_case``,
  ``missing_bounds``): Hájek IPW with cluster-robust CR1/CR2 variance (through
  :func:`evalkit.clustered.mean_estimate`), the cluster bootstrap that refits the propensity,
  complete-case and the missing-as-wrong / missing-as-right bounds;
* **the one report call** ``missing_report``: every estimator side by side for one model or a
  pair, with ICC, design effect, effective n, the missingness breakdown and notes saying what the
  estimates cannot do (clusters without respondents, heavy truncation, a fitted propensity that fails
  its checks).

Propensity models live in :mod:`evalkit.missing_propensity`, the delta sensitivity analysis in
:mod:`evalkit.missing_sensitivity`, the simulation study and the teaching widget in
:mod:`evalkit.missing_study`; this module re-exports the first two.

Paper: [MISSING] (Handling Missing Responses under Cluster Dependence with Applications to
Language Model Evaluation). Taught in ``notebooks/02.1-missing-responses-mechanisms-and-ipw.ipynb`` to
``04.3-missing-reasons-and-a-tipping-point.ipynb``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from ._checks import as_labels, boundary_interval, check_alpha, check_interval, warn
from .clustered import (
    DFRule,
    Estimate,
    SEKind,
    _clusters_effective,
    _contrast_variance,
    _design_warn,
    bootstrap_cluster,
    deff_empirical,
    deff_from_icc,
    icc_anova,
    icc_latent,
    interval_t,
    mean_estimate,
    n_effective,
)
from .data import _long_validate
from .errors import DegenerateDataWarning, EvalkitInputError, EvalkitInputTypeError, OverlapWarning
from .missing_propensity import (
    PropensityDiagnostics,
    PropensityFit,
    PropensityKind,
    _as_features,
    _prep,
    propensity_diagnostics,
    propensity_fit,
)
from .missing_sensitivity import sensitivity_delta, sensitivity_plot, sensitivity_tipping_point

__all__ = [
    "PropensityFit",
    "Weights",
    "MissingDetails",
    "TRUNCATE_DEFAULT",
    "propensity_fit",
    "weights_compute",
    "ipw_estimate",
    "ipw_compare",
    "ipw_bootstrap",
    "missing_complete_case",
    "missing_bounds",
    "missing_breakdown",
    "missing_features",
    "missing_report",
    "sensitivity_delta",
    "sensitivity_tipping_point",
    "sensitivity_plot",
]

Truncation = None | str | tuple[str, float]
TRUNCATE_DEFAULT: Truncation = None
"""The one default truncation of :func:`ipw_estimate`, :func:`ipw_compare`, :func:`ipw_bootstrap` and
:func:`missing_report`: none. Truncation is a bias-for-variance trade the analyst chooses and reports."""
_MASS_CUT_WARN = 0.05  # warn when truncation removes more than this share of the weight mass
_SHARE_WARN = 0.10  # warn when one respondent carries more than this share of the weight ...
_SHARE_REL = 3.0  # ... and more than this multiple of the mean weight (or > 100 times the mean)


# --------------------------------------------------------------------------------------------
# weights
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Weights:
    """Inverse-propensity weights of the respondents, after truncation, with diagnostics.

    Attributes
    ----------
    w : (n_obs,) array
        Weights used (truncated). Hájek normalisation happens in the estimator
        (``sum w y / sum w``), so their scale is irrelevant.
    w_raw : (n_obs,) array
        ``1 / p`` before truncation.
    cap : float
        The truncation level (``inf`` when none).
    rule : str
        The truncation rule in words.
    max_weight : float
        Largest weight after truncation, relative to the mean weight.
    max_weight_raw : float
        Largest raw weight relative to the mean raw weight.
    ess : float
        Kish effective sample size ``(sum w)^2 / sum w^2`` of the truncated weights.
    ess_raw : float
    mass_cut : float
        Share of the raw weight mass removed by truncation, ``1 - sum w / sum w_raw``.
    n_capped : int
        Number of respondents whose weight was capped.
    """

    w: np.ndarray
    w_raw: np.ndarray
    cap: float
    rule: str
    max_weight: float
    max_weight_raw: float
    ess: float
    ess_raw: float
    mass_cut: float
    n_capped: int

    def summary(self) -> dict[str, float | int | str]:
        """The diagnostics as a dict (no arrays)."""
        return {"rule": self.rule, "cap": self.cap, "max_weight": self.max_weight,
                "max_weight_raw": self.max_weight_raw, "ess": self.ess, "ess_raw": self.ess_raw,
                "mass_cut": self.mass_cut, "n_capped": self.n_capped, "n": int(self.w.size)}


@dataclass(frozen=True, eq=False)
class MissingDetails:
    """What :func:`missing_report` stores in ``report.attrs["missing"]`` besides the table.

    Attributes
    ----------
    by_reason, by_cluster : DataFrame
        :func:`missing_breakdown` of the reported models.
    propensity : dict
        Model -> random-intercept :class:`PropensityFit`. Its arrays (``p``, ...) follow the model's
        items sorted by ``item``, the order the report fits in, not the row order of ``long_df``.
    weights : dict
        Model -> weight diagnostics (:meth:`Weights.summary`).
    notes : list of str
        What the estimates cannot do, in words (the same sentences as the report's ``note``
        column and its warnings): clusters without respondents, heavy truncation; and one sentence
        per failed propensity check, naming the model and the propensity.
    checks : dict
        Model -> {propensity name -> :class:`~evalkit.missing_propensity.PropensityDiagnostics`}:
        the checks of every propensity the report fits for that model (``"plain logistic"``,
        ``"random intercept"``, ``"doubly robust, cross-fitted logistic"`` whose entry is the DR
        estimate's :class:`~evalkit.missing_dr.DRDiagnostics`, and with ``compare`` the
        comparison's propensities where they differ from the model's own).
    """

    by_reason: pd.DataFrame
    by_cluster: pd.DataFrame
    propensity: dict
    weights: dict
    notes: list = field(default_factory=list)
    checks: dict = field(default_factory=dict)


def _kish(w: np.ndarray) -> float:
    return float(w.sum() ** 2 / np.sum(w**2))


def _sqrt_n_cap(w_raw: np.ndarray) -> float:
    """The cap ``c`` with ``c = sqrt(n) * mean(min(w_raw, c))``: after capping, no weight exceeds ``sqrt(n)`` means.

    Capping lowers the mean, so ``sqrt(n)`` times the *raw* mean does not keep that promise when an
    extreme weight inflates the raw mean. The fixed point is solved exactly: with the ``i``
    smallest weights uncapped (sum ``S_i``) it is ``c = k S_i / (n - k (n - i))``, ``k = sqrt(n)``;
    the largest valid ``c`` caps the fewest respondents.
    """
    n = w_raw.size
    k = math.sqrt(n)
    ws = np.sort(w_raw)
    if ws[-1] <= k * ws.mean():
        return float(k * ws.mean())
    S = np.concatenate([[0.0], np.cumsum(ws)])
    for i in range(n - 1, -1, -1):  # i respondents uncapped, n - i capped
        denom = n - k * (n - i)
        if denom <= 0:
            break
        c = k * S[i] / denom
        if (i == 0 or ws[i - 1] <= c) and c <= ws[i]:
            return float(c)
    return float(ws[0])  # not reached for n >= 1 (k >= 1); all weights equal after capping


def weights_compute(p: npt.ArrayLike, truncate: Truncation = TRUNCATE_DEFAULT) -> Weights:
    """Inverse-propensity weights ``w = 1 / p`` of the respondents, optionally truncated.

    Truncation lowers the variance when a few propensities are tiny, at the price of bias toward
    the complete-case estimate (the capped respondents stand for fewer non-respondents than they
    should). [MISSING] suggests a cap at the 90–95% quantile, or of order ``sqrt(n)``. How much it
    costs is data-dependent: read ``mass_cut`` and compare with the untruncated estimate
    (:func:`missing_report` shows both).

    Paper: [MISSING].

    Parameters
    ----------
    p : (n_obs,) array
        Fitted propensities of the items that *were* answered, in (0, 1].
    truncate : None, ("quantile", q), ("fixed", c) or "sqrt_n"
        * None (the default, :data:`TRUNCATE_DEFAULT`): no truncation;
        * ``("quantile", q)``: cap at the ``q`` quantile of the raw weights, ``q`` in (0, 1]
          (0.90–0.99 are usual);
        * ``("fixed", c)``: cap at ``c`` (on the ``1/p`` scale, so ``c >= 1``);
        * ``"sqrt_n"``: no respondent may stand for more than ``sqrt(n_obs)`` average respondents:
          the cap ``c`` solves ``c = sqrt(n_obs) * mean(min(w, c))``, so after truncation
          ``max(w) <= sqrt(n_obs) * mean(w)`` holds exactly, even when one extreme weight inflates
          the raw mean.

    Returns
    -------
    Weights

    Raises
    ------
    ValueError
        Propensities NaN, outside (0, 1], or exactly 0 (a respondent cannot have had probability 0
        of responding: the propensity model is separated; use a random intercept or truncation of
        a model that gives positive propensities); an unknown truncation rule.

    Warns
    -----
    EvalkitWarning
        One respondent carries a large share of the (truncated) weight: more than 10% of the
        total and more than 3 times the mean weight, or more than 100 times the mean. This holds
        for any number of respondents.

    Examples
    --------
    >>> W = weights_compute([0.5, 0.5, 0.25, 1.0], truncate=("fixed", 3.0))
    >>> W.w.tolist(), round(W.mass_cut, 3)
    ([2.0, 2.0, 3.0, 1.0], 0.111)
    """
    pa = np.asarray(p, dtype=float)
    if pa.ndim != 1 or pa.size == 0:
        raise EvalkitInputError(
            "p", f"p must be a non-empty one-dimensional array of propensities, got shape {pa.shape}")
    if np.isnan(pa).any():
        raise EvalkitInputError("p", f"p contains {int(np.isnan(pa).sum())} NaN propensities")
    if (pa <= 0).any():
        raise EvalkitInputError("propensities",
            f"{int((pa <= 0).sum())} respondents have propensity 0, so their inverse weight is infinite; the "
            "propensity model is separated (for example a cluster fixed effect at -inf). Use kind='random', "
            "drop the offending feature, or pass propensities bounded away from 0"
        )
    if (pa > 1).any():
        raise EvalkitInputError("propensities", "propensities must be at most 1")
    with np.errstate(divide="ignore", over="ignore"):
        overflow = bool(np.isinf(pa).any() or not np.isfinite(1.0 / pa).all())
    if overflow:
        raise EvalkitInputError(
            "p", f"p holds propensities as small as {pa.min():.3g}: their inverse weight overflows a float; "
            "bound the propensities away from 0 (or truncate them before weighting)")
    w_raw = 1.0 / pa
    n = pa.size
    if truncate is None:
        cap, rule = math.inf, "none"
    elif isinstance(truncate, str):
        if truncate != "sqrt_n":
            raise EvalkitInputError(
                "truncate", f"unknown truncation {truncate!r}; use None, 'sqrt_n', ('quantile', q) or ('fixed', c)")
        cap, rule = _sqrt_n_cap(w_raw), "sqrt(n) x mean weight"
    elif isinstance(truncate, tuple) and len(truncate) == 2:
        how, val = truncate[0], float(truncate[1])
        if how == "quantile":
            if not 0.0 < val <= 1.0:
                raise EvalkitInputError("truncate", f"the truncation quantile must be in (0, 1], got {val}")
            cap, rule = float(np.quantile(w_raw, val)), f"quantile {val:g}"
        elif how == "fixed":
            if not val >= 1.0:
                raise EvalkitInputError("p", f"a fixed cap is on the 1/p scale and must be >= 1, got {val}")
            cap, rule = val, f"fixed cap {val:g}"
        else:
            raise EvalkitInputError("truncate", f"unknown truncation {how!r}; use 'quantile' or 'fixed'")
    else:
        raise EvalkitInputError(
            "truncate", f"truncate must be None, 'sqrt_n', ('quantile', q) or ('fixed', c), got {truncate!r}")
    w = np.minimum(w_raw, cap)
    rel = float(w.max() / w.mean())
    share = float(w.max() / w.sum())
    if n > 1 and (rel > 100 or (share > _SHARE_WARN and rel > _SHARE_REL)):
        warn(f"one respondent carries {share:.0%} of the weight ({rel:.1f} times the mean weight, {n} "
             "respondents); the estimate leans on a single item. Report it with truncate=('quantile', 0.95) "
             "beside the untruncated estimate, and the bounds")
    return Weights(w, w_raw, float(cap), rule, rel, float(w_raw.max() / w_raw.mean()), _kish(w), _kish(w_raw),
                   float(1.0 - w.sum() / w_raw.sum()), int(np.sum(w_raw > cap)))


# --------------------------------------------------------------------------------------------
# estimators
# --------------------------------------------------------------------------------------------

def missing_complete_case(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                          se: Literal["iid", "CR0", "CR1", "CR2"] = "CR1", alpha: float = 0.05) -> Estimate:
    """Complete-case accuracy: the mean over answered items only (what most leaderboards report).

    Unbiased for the full-data accuracy only when missingness is unrelated to correctness (MCAR).

    Paper: [MISSING].

    Parameters
    ----------
    correct : (n,) array
        0/1 outcomes, NaN where missing.
    clusters : (n,) labels, optional
        Needed for the cluster-robust kinds.
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float

    Raises
    ------
    ValueError
        No observed outcome, non-0/1 values, or the errors of :func:`mean_estimate`.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> round(missing_complete_case(d["correct"], d["cluster"]).estimate, 3)
    0.599

    Taught in ``notebooks/02.1-missing-responses-mechanisms-and-ipw.ipynb``.
    """
    y, obs, clus = _prep(correct, clusters)
    est = mean_estimate(y[obs], None if clus is None else clus[obs], se=se, alpha=alpha)
    return _relabel(est, f"complete case, {se}")


def _relabel(est: Estimate, method: str) -> Estimate:
    return Estimate(est.estimate, est.se, est.ci_low, est.ci_high, est.df, method, est.n, est.n_clusters)


def missing_bounds(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                   se: Literal["iid", "CR0", "CR1", "CR2"] = "CR1", alpha: float = 0.05) -> tuple[Estimate, Estimate]:
    """Worst- and best-case accuracies: every missing answer counted wrong, or counted right.

    These Manski-style bounds need no assumption about why answers are missing; the full-data
    accuracy lies between them. Each comes with its own sampling interval over all ``n`` items.

    Paper: [MISSING].

    Returns
    -------
    lower, upper : Estimate
        Missing-as-wrong and missing-as-right.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> lo, hi = missing_bounds(d["correct"], d["cluster"])
    >>> round(lo.estimate, 3), round(hi.estimate, 3)
    (0.473, 0.683)
    """
    y = np.asarray(correct, dtype=float)
    if y.ndim != 1 or y.size == 0:
        raise EvalkitInputError("correct", "correct must be a non-empty 1-D array")
    clus = None if clusters is None else np.asarray(clusters)
    lo = mean_estimate(np.nan_to_num(y, nan=0.0), clus, se=se, alpha=alpha)
    hi = mean_estimate(np.nan_to_num(y, nan=1.0), clus, se=se, alpha=alpha)
    return _relabel(lo, f"missing as wrong, {se}"), _relabel(hi, f"missing as right, {se}")


_KIND_LABEL = {"logistic": "IPW logistic", "fixed": "IPW cluster fixed effects", "random": "IPW random intercept"}


def _ipw_parts(correct: npt.ArrayLike, clusters: npt.ArrayLike | None, features: npt.ArrayLike | None,
               p: npt.ArrayLike | None, kind: PropensityKind, method: str, truncate: Truncation,
               fit: PropensityFit | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None,
                                                          PropensityFit | None, Weights]:
    y, obs, clus = _prep(correct, clusters)
    if clus is not None and obs.any() and not obs.all():
        c_codes, c_uniq = as_labels(clus, clus.size)
        answered = np.bincount(c_codes, weights=obs.astype(float), minlength=c_uniq.size)
        if (answered == 0).any():
            empty = c_uniq[answered == 0]
            warn(f"{empty.size} of {c_uniq.size} clusters have no answered item (e.g. {empty[0]!r}): no weighting "
                 "can represent them, so the estimate is the accuracy over the other clusters' items only "
                 "(positivity fails there; report the bounds for those clusters)", stacklevel=4,
                 category=OverlapWarning)
    if p is not None:
        pa = np.asarray(p, dtype=float)
        if pa.shape != y.shape:
            raise EvalkitInputError("p", f"p has shape {pa.shape}, correct {y.shape}; give a propensity for every item")
        fit_out = None
    else:
        if obs.all():
            raise EvalkitInputError("y", "every item was answered: no weighting is needed; use missing_complete_case")
        fit_out = fit if fit is not None else propensity_fit(obs.astype(float), features, clus, kind=kind,
                                                            method=method)  # type: ignore[arg-type]
        pa = fit_out.p
    W = weights_compute(pa[obs], truncate)
    return y, obs, clus, fit_out, W


def ipw_estimate(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                 features: npt.ArrayLike | None = None, p: npt.ArrayLike | None = None,
                 kind: PropensityKind = "random", method: Literal["laplace", "aghq"] = "laplace",
                 truncate: Truncation = TRUNCATE_DEFAULT, se: Literal["iid", "CR0", "CR1", "CR2"] = "CR1",
                 alpha: float = 0.05) -> Estimate:
    """Inverse-probability-weighted (Hájek) accuracy with a cluster-robust interval.

    ``theta_hat = sum_j R_j w_j y_j / sum_j R_j w_j`` with ``w_j = 1 / p_hat_j`` from a propensity
    model (:func:`propensity_fit`, a random-intercept logistic model by default). Its variance is
    the cluster-robust sandwich of :func:`evalkit.clustered.mean_estimate` over the clusters that
    have respondents (CR0 or CR1 with ``t`` on ``M - 1`` degrees of freedom; CR2 with its
    Satterthwaite degrees of freedom, the working model of sampling weights). This variance treats
    the weights as known; :func:`ipw_bootstrap` also includes their estimation error.

    Paper: [MISSING].

    Parameters
    ----------
    correct : (n,) array
        0/1 outcomes for every item, NaN where the answer is missing.
    clusters : (n,) labels, optional
        Needed for clustered propensities and cluster-robust SEs.
    features : (n, k) array or DataFrame, optional
        Propensity features (NaN is refused).
    p : (n,) array, optional
        Known or externally fitted propensities; skips the propensity fit.
    kind : {"logistic", "fixed", "random"}
    method : {"laplace", "aghq"}
    truncate : see :func:`weights_compute`
    se : {"iid", "CR0", "CR1", "CR2"}
    alpha : float

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        Nothing observed, everything observed (use the complete-case estimate), bad propensities,
        and the errors of :func:`propensity_fit` and :func:`mean_estimate`.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> e = ipw_estimate(d["correct"], d["cluster"], features=d[["x"]])
    >>> round(e.estimate, 3), e.method
    (0.574, 'IPW random intercept, CR1')

    Taught in ``notebooks/02.1-missing-responses-mechanisms-and-ipw.ipynb`` (truncation in
    ``02.3-missing-responses-weight-truncation``).
    """
    check_alpha(alpha)
    y, obs, clus, fit, W = _ipw_parts(correct, clusters, features, p, kind, method, truncate)
    yo = y[obs]
    if yo.size and (yo == yo[0]).all():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateDataWarning)
            est = mean_estimate(yo, None if clus is None else clus[obs], weights=W.w, se=se, alpha=alpha)
        kish = float(W.w.sum() ** 2 / np.dot(W.w, W.w))
        lo, hi = boundary_interval(est.estimate, kish, alpha, "ipw_estimate", df=est.df, stacklevel=4)
        est = Estimate(est.estimate, est.se, lo, hi, est.df, est.method + ", Wilson (boundary)", est.n,
                       est.n_clusters, est.n_clusters_effective)
    else:
        est = mean_estimate(yo, None if clus is None else clus[obs], weights=W.w, se=se, alpha=alpha)
    label = "IPW (given p)" if p is not None else _KIND_LABEL[kind]
    if truncate is not None:
        label += f" [{W.rule}]"
    return _relabel(est, f"{label}, {se}")


def ipw_compare(correct_a: npt.ArrayLike, correct_b: npt.ArrayLike, clusters: npt.ArrayLike, *,
                p_a: npt.ArrayLike | None = None, p_b: npt.ArrayLike | None = None,
                features: npt.ArrayLike | None = None, kind: PropensityKind = "random",
                method: Literal["laplace", "aghq"] = "laplace", truncate: Truncation = TRUNCATE_DEFAULT,
                se: Literal["CR0", "CR1", "CR2"] = "CR1", alpha: float = 0.05, df: DFRule = "auto") -> Estimate:
    """Difference of two models' IPW accuracies on the same items, with a paired cluster-robust interval.

    Each model gets its own propensity model and Hájek weights, and ``theta_a - theta_b`` is the
    difference of two weighted means over different respondents with different weights. It is the
    contrast ``theta_a - theta_b`` of the weighted regression of both models' observed outcomes,
    stacked, on one indicator per model (``lm(y ~ model, weights = w)`` with ``w = 1/p``),
    clustered by the items' clusters, so an item's cluster holds both models' answers and the
    pairing is kept. The variance is that regression's sandwich, computed by evalkit's one
    implementation (:func:`evalkit.clustered.mean_estimate`'s): CR0, CR1 (``t`` with ``M - 1``
    degrees of freedom, ``M`` the clusters of ``clusters``), or the exact CR2 of Bell and McCaffrey
    with Satterthwaite degrees of freedom, as ``clubSandwich::vcovCR(fit, cluster, type = "CR2")``
    and ``coef_test(fit, vcov, test = "Satterthwaite")`` for that regression, with the working
    model of sampling weights (``weights_kind="sampling"``). Because the regression's hat matrix is
    block-diagonal across the two models, CR2 adjusts each model's cluster contributions with that
    model's own weights (as :func:`ipw_estimate` would), and the df combine both models' parts.

    This is not the CR2 of the per-item difference ``y_a - y_b`` weighted by one set of weights:
    with different respondents or weights there is no such single weighted mean. When both models
    are observed on the same items with the same weights it is the same estimator, and with no
    missing outcomes and unit weights it equals :func:`evalkit.clustered.paired_estimate`
    (estimate, SE and df). As in :func:`ipw_estimate`, the weights are treated as known.

    Paper: [MISSING]; Bell and McCaffrey (2002); Pustejovsky and Tipton (2018).

    Parameters
    ----------
    correct_a, correct_b : (n,) arrays
        Outcomes (NaN = missing) of the two models on the same items in the same order.
    clusters : (n,) labels
    p_a, p_b : (n,) arrays, optional
        Propensities; fitted with ``kind`` when omitted. ``p = 1`` everywhere (``np.ones(n)``)
        gives the complete-case comparison.
    features, kind, method, truncate, se, alpha
        As in :func:`ipw_estimate`.
    df : {"auto", "satterthwaite", "clusters"}
        As in :func:`evalkit.clustered.mean_estimate`: ``"auto"`` is Satterthwaite for CR2 and
        ``M - 1`` otherwise.

    Raises
    ------
    ValueError
        Different lengths, fewer than two clusters, an unknown ``se`` or ``df``, and the errors of
        :func:`ipw_estimate`.
    """
    check_alpha(alpha)
    ya = np.asarray(correct_a, dtype=float)
    yb = np.asarray(correct_b, dtype=float)
    if ya.shape != yb.shape:
        raise EvalkitInputError(
            "y_b", f"the two models have {ya.shape} and {yb.shape} outcomes; they must share the items")
    codes, uniques = as_labels(clusters, ya.size)
    M = uniques.size
    if M < 2:
        raise EvalkitInputError(
            "clusters", "only one cluster: the cluster-robust variance of a comparison needs at least two")
    if se not in ("CR0", "CR1", "CR2"):
        raise EvalkitInputError("se", f"se must be CR0, CR1 or CR2 for a comparison, got {se!r}")
    if df not in ("auto", "satterthwaite", "clusters"):
        raise EvalkitInputError("df", f"df must be 'auto', 'satterthwaite' or 'clusters', got {df!r}")
    thetas, groups = [], []
    for lam, y, p in ((1.0, ya, p_a), (-1.0, yb, p_b)):
        pp = None if p is None else p
        if pp is None and not np.isnan(y).any():
            pp = np.ones(y.size)
        yy, obs, _, _, W = _ipw_parts(y, clusters, features, pp, kind, method, truncate)
        theta = float(np.dot(W.w, yy[obs]) / W.w.sum())
        thetas.append(theta)
        groups.append((lam, W.w, yy[obs] - theta, codes[obs]))
    var, dof, _ = _contrast_variance(groups, M, se, df, "sampling")
    s = math.sqrt(var)
    est = thetas[0] - thetas[1]
    lo, hi = interval_t(est, s, dof, alpha)
    both = np.concatenate([g[3] for g in groups])
    unit = np.ones(both.size)
    Wg = np.bincount(both, minlength=M)
    _design_warn(M, _clusters_effective(unit, both, M), float(Wg.max() / Wg.sum()), 3)
    check_interval(est, lo, hi, "ipw_compare difference", lower=-1.0, upper=1.0)
    lab = "difference, IPW (given p)" if p_a is not None else f"difference, {_KIND_LABEL[kind]}"
    return Estimate(est, s, lo, hi, dof, f"{lab}, {se}", int(ya.size), int(M))


def ipw_bootstrap(correct: npt.ArrayLike, clusters: npt.ArrayLike, *, features: npt.ArrayLike | None = None,
                  kind: PropensityKind = "random", method: Literal["laplace", "aghq"] = "laplace",
                  truncate: Truncation = TRUNCATE_DEFAULT, n_boot: int = 999, seed: int | np.random.Generator,
                  alpha: float = 0.05, progress: bool = False) -> Estimate:
    """Cluster bootstrap of the IPW accuracy that refits the propensity model in every resample.

    Whole clusters are resampled with replacement (a cluster drawn twice enters the
    random-intercept fit as two clusters), the propensity model is refitted and the Hájek estimate
    recomputed. The spread therefore includes the estimation error of the weights, which the
    sandwich of :func:`ipw_estimate` ignores: use it as the reference interval.

    Paper: [MISSING].

    Parameters
    ----------
    correct, clusters, features, kind, method, truncate
        As in :func:`ipw_estimate`.
    n_boot : int
    seed : int or Generator
    alpha : float
    progress : bool

    Returns
    -------
    Estimate
        Percentile interval; see :func:`evalkit.clustered.bootstrap_cluster`.
    """
    y, obs, clus = _prep(correct, clusters)
    if clus is None:
        raise EvalkitInputError("clusters", "the cluster bootstrap needs clusters=")
    Xa, names = _as_features(features, y.size)

    def stat(rows: np.ndarray, ids: np.ndarray) -> float:
        r = obs[rows]
        if r.all() or not r.any():
            yy = y[rows][r]
            if not r.any():
                raise ValueError("no respondents in the resample")
            return float(yy.mean())
        X = Xa[rows] if Xa.shape[1] else None
        if X is not None and np.any(X.std(axis=0) == 0):
            raise ValueError("a feature is constant in this resample")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = propensity_fit(r.astype(float), X, ids, kind=kind, method=method)
            W = weights_compute(fit.p[r], truncate)
        return float(np.dot(W.w, y[rows][r]) / W.w.sum())

    est = bootstrap_cluster(stat, clus, n_boot=n_boot, seed=seed, alpha=alpha, progress=progress)
    return _relabel(est, f"{_KIND_LABEL[kind]}, {est.method}")


# --------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------

def _long_input(long_df: pd.DataFrame, cluster: str = "cluster") -> pd.DataFrame:
    """``long_df`` checked as a long table (errors name ``long_df``; clusters may sit in column ``cluster``).

    Returns the caller's table itself (not the validated copy), so labels keep their types.
    """
    if isinstance(long_df, pd.DataFrame) and cluster not in long_df.columns:
        raise EvalkitInputError("cluster", f"no column {cluster!r} in the long table; it has {list(long_df.columns)}")
    checked = long_df
    if isinstance(long_df, pd.DataFrame) and cluster != "cluster":
        checked = long_df.assign(cluster=long_df[cluster])
    _long_validate(checked, name="long_df")
    return long_df


def _long_columns(long_df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """A light check of ``long_df`` (a DataFrame with ``columns``, numeric ``correct``), for functions called once
    per model on a table that was validated before."""
    if not isinstance(long_df, pd.DataFrame):
        raise EvalkitInputTypeError("long_df", f"long_df must be a pandas DataFrame (a long table), got "
                                               f"{type(long_df).__name__}")
    lacking = [c for c in columns if c not in long_df.columns]
    if lacking:
        raise EvalkitInputError("long_df", f"the long table lacks columns {lacking}; it has {list(long_df.columns)}")
    if "correct" in columns and not pd.api.types.is_numeric_dtype(long_df["correct"]):
        raise EvalkitInputError("long_df", "column 'correct' must be numeric (0/1, NaN where missing), got dtype "
                                           f"{long_df['correct'].dtype}")
    return long_df


def missing_breakdown(long_df: pd.DataFrame, *, cluster: str = "cluster") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Missingness by reason and by cluster, per model.

    Parameters
    ----------
    long_df : DataFrame
        An evalkit long table.
    cluster : str
        Column holding the clusters.

    Returns
    -------
    by_reason : DataFrame
        ``model, status, n, share`` (every status present, including ``ok``).
    by_cluster : DataFrame
        ``model, cluster, n, n_missing, missing_rate`` and one count column per missing reason.
    """
    df = _long_input(long_df, cluster)
    by_reason = (df.groupby(["model", "status"], sort=True).size().rename("n").reset_index())
    by_reason["share"] = by_reason["n"] / by_reason.groupby("model")["n"].transform("sum")
    tab = pd.crosstab([df["model"], df[cluster]], df["status"])
    reasons = [c for c in tab.columns if c != "ok"]
    by_cluster = pd.DataFrame({"n": tab.sum(axis=1), "n_missing": tab[reasons].sum(axis=1) if reasons else 0})
    by_cluster["missing_rate"] = by_cluster["n_missing"] / by_cluster["n"]
    for r in reasons:
        by_cluster[r] = tab[r]
    by_cluster = by_cluster.reset_index().rename(columns={cluster: "cluster"})
    return by_reason, by_cluster


def missing_features(
    long_df: pd.DataFrame, *, model: str, texts: pd.Series | None = None, lengths: pd.Series | None = None
) -> pd.DataFrame:
    """Item features for a propensity model: accuracy among the *other* models, question length.

    Paper: [MISSING] (item difficulty and length as propensity features).

    Parameters
    ----------
    long_df : DataFrame
        Long table with several models on the same items.
    model : str
        The model whose missingness is being modelled; its own answers are left out of the
        difficulty feature (otherwise it would leak the outcome into the propensity).
    texts : Series, optional
        Question text indexed by item id; adds ``log_length = log(1 + characters)``.
    lengths : Series, optional
        The same from the question lengths in characters, indexed by item id (for example
        ``dataset_items(name).set_index("item")["question_chars"]``: evalkit carries lengths, not
        texts). Give ``texts`` or ``lengths``, not both.

    Returns
    -------
    DataFrame
        Indexed by item: ``acc_others`` (mean correctness of the other models' gradable answers;
        items no other model answered get the overall mean, with a warning) and, with ``texts``
        or ``lengths``, ``log_length``.

    Raises
    ------
    ValueError
        Unknown model, a table with a single model, both ``texts`` and ``lengths``, or items
        without a text or length.
    """
    df = _long_columns(long_df, ("model", "item", "correct"))
    if model not in set(df["model"]):
        raise EvalkitInputError("model", f"model {model!r} is not in the table")
    if df["model"].nunique() < 2:
        raise EvalkitInputError(
            "model", "the table has a single model: 'accuracy among the other models' needs at least two")
    y = df["correct"].to_numpy(dtype=float)
    ok = ~np.isnan(y)
    tot = pd.DataFrame({"item": df["item"].to_numpy(), "s": np.where(ok, y, 0.0), "c": ok.astype(float)})
    mine = (df["model"] == model).to_numpy()
    all_ = tot.groupby("item", sort=False)[["s", "c"]].sum()
    own = tot[mine].groupby("item", sort=False)[["s", "c"]].sum()
    items = pd.Index(df.loc[mine, "item"].unique(), name="item")
    s = all_["s"].reindex(items) - own["s"].reindex(items)
    c = all_["c"].reindex(items) - own["c"].reindex(items)
    acc = (s / c.where(c > 0)).rename("acc_others")
    if acc.isna().any():
        overall = float(np.nansum(np.where(~mine & ok, y, 0.0)) / max(1, np.sum(~mine & ok)))
        warn(f"{int(acc.isna().sum())} items were answered by no other model; their acc_others is the overall mean")
        acc = acc.fillna(overall)
    out = pd.DataFrame({"acc_others": acc})
    if texts is not None and lengths is not None:
        raise EvalkitInputError("texts", "give texts or lengths, not both")
    if texts is not None or lengths is not None:
        lens = (texts.astype(str).str.len() if texts is not None else pd.Series(lengths)).reindex(items)
        if lens.isna().any():
            raise EvalkitInputError(
                "texts", f"{int(lens.isna().sum())} items have no {'text' if texts is not None else 'length'}")
        out["log_length"] = np.log1p(lens.to_numpy(dtype=float))
    return out


def _row(model: str, name: str, est: Estimate, **extra: Any) -> dict[str, Any]:
    d = {"model": model, "estimator": name, "estimate": est.estimate, "se": est.se, "ci_low": est.ci_low,
         "ci_high": est.ci_high, "width": est.width, "df": est.df, "n": est.n, "n_clusters": est.n_clusters}
    d.update(extra)
    return d


def _deff_or_nan(y: np.ndarray, cl: np.ndarray, w: np.ndarray | None = None) -> float:
    try:
        return deff_empirical(y, cl, weights=w)
    except ValueError:
        return float("nan")


def _report_input(long_df: pd.DataFrame, features: Sequence[str] | None, cluster: str, model: str | None,
                  compare: tuple[str, str] | None) -> tuple[pd.DataFrame, list[str], list[str]]:
    """Validated long table (clusters in ``cluster``), the feature names and the models to report."""
    df = _long_validate(long_df, name="long_df")
    if cluster != "cluster":
        if cluster not in long_df.columns:
            raise EvalkitInputError("cluster", f"no column {cluster!r} to cluster on")
        df["cluster"] = long_df[cluster].astype(str).to_numpy()
    feats = list(features or [])
    for f in feats:
        if f not in df.columns:
            raise EvalkitInputError("features", f"feature column {f!r} is not in the long table")
    models_all = sorted(df["model"].unique())
    if compare is not None:
        if len(compare) != 2 or compare[0] == compare[1]:
            raise EvalkitInputError("compare", "compare must name two different models")
        models = list(compare)
    elif model is not None:
        models = [model]
    elif len(models_all) == 1:
        models = models_all
    else:
        raise EvalkitInputError("model", f"the table has {len(models_all)} models; pass model= or compare=(a, b)")
    for m in models:
        if m not in models_all:
            raise EvalkitInputError("model", f"model {m!r} is not in the table (it has {models_all[:5]}...)")
    sub = df[df["model"].isin(models)].copy()
    labels = sub.groupby("item", sort=True)["cluster"].nunique()
    if (labels > 1).any():
        bad = labels.index[labels > 1][:3].tolist()
        ex = sub[sub["item"] == bad[0]][["model", "cluster"]].to_dict("records")
        raise EvalkitInputError(
            "cluster", f"{int((labels > 1).sum())} items have different {cluster!r} labels in different models "
                         f"(e.g. item {bad[0]!r}: {ex}); a cluster is a property of the item. Fix the labels "
                         "(for example take them from the benchmark's item table) before the report")
    return sub, feats, models


def _check_notes(m: str, checks: dict[str, PropensityDiagnostics]) -> list[str]:
    """One note per failed check of each propensity, naming the model and the propensity."""
    return [f"model {m!r}: propensity check failed ({name}): {p}" for name, c in checks.items() for p in c.problems]


def _report_ipw(m: str, y: np.ndarray, cl: np.ndarray, X: pd.DataFrame | None, truncate: Truncation,
                method: Literal["laplace", "aghq"], n_boot: int, seed: int, alpha: float,
                info: dict[str, Any]) -> tuple[list[dict[str, Any]], PropensityFit, dict, list[str],
                                               dict[str, PropensityDiagnostics], dict[str, np.ndarray]]:
    """The IPW rows of one model with some missing answers, the notes saying what they cannot do, the checks of
    both propensities (overlap, balance after weighting, calibration) and their fitted values."""
    obs = ~np.isnan(y)
    yo, co = y[obs], cl[obs]
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    empty = sorted(set(np.unique(cl).tolist()) - set(np.unique(co).tolist()), key=str)
    ri_note = ""
    if empty:
        M = np.unique(cl).size
        ri_note = (f"IPW estimates the accuracy of the {M - len(empty)} of {M} clusters that have respondents; "
                   f"cluster(s) {empty[:5]}{' ...' if len(empty) > 5 else ''} have no answered item, so only the "
                   "bounds speak for them")
        notes.append(f"model {m!r}: {ri_note}")
        warn(f"model {m!r}: {ri_note}")
    fit_l = propensity_fit(obs.astype(float), X, cl, kind="logistic")
    checks = {"plain logistic": propensity_diagnostics(obs.astype(float), fit_l, X, cl, plot=False)}
    W = weights_compute(fit_l.p[obs], truncate)
    rows.append(_row(m, "IPW logistic, CR1", mean_estimate(yo, co, weights=W.w, se="CR1", alpha=alpha),
                     deff_emp=_deff_or_nan(yo, co, W.w), ess=W.ess, mass_cut=W.mass_cut, max_weight=W.max_weight,
                     truncation=W.rule, **info))
    fit_r = propensity_fit(obs.astype(float), X, cl, kind="random", method=method)
    checks["random intercept"] = propensity_diagnostics(obs.astype(float), fit_r, X, cl, plot=False)
    W = weights_compute(fit_r.p[obs], truncate)
    info_r = dict(info, icc_missing_latent=icc_latent(fit_r.sigma_u), sigma_u=fit_r.sigma_u)
    cut_note = ""
    if W.mass_cut > _MASS_CUT_WARN:
        cut_note = (f"truncation ({W.rule}) cut {W.mass_cut:.0%} of the weight mass: the truncated estimate "
                    "moves toward complete case; compare the untruncated row")
        notes.append(f"model {m!r}: {cut_note}")
        warn(f"model {m!r}: {cut_note}")
    note = "; ".join(x for x in (ri_note, cut_note) if x)
    for s in ("CR1", "CR2"):
        est = mean_estimate(yo, co, weights=W.w, se=s, alpha=alpha)
        rows.append(_row(m, f"IPW random intercept, {s}", est, deff_emp=_deff_or_nan(yo, co, W.w), ess=W.ess,
                         mass_cut=W.mass_cut, max_weight=W.max_weight, truncation=W.rule, note=note, **info_r))
    if truncate is not None:
        W0 = weights_compute(fit_r.p[obs], None)
        est = mean_estimate(yo, co, weights=W0.w, se="CR1", alpha=alpha)
        rows.append(_row(m, "IPW random intercept, CR1, untruncated", est, deff_emp=_deff_or_nan(yo, co, W0.w),
                         ess=W0.ess, mass_cut=0.0, max_weight=W0.max_weight, truncation="none", note=ri_note,
                         **info_r))
    if n_boot:
        b = ipw_bootstrap(y, cl, features=X, kind="random", method=method, truncate=truncate,
                          n_boot=n_boot, seed=seed, alpha=alpha)
        rows.append(_row(m, "IPW random intercept, cluster bootstrap", b, truncation=W.rule, note=ri_note, **info_r))
    summary: dict[str, Any] = dict(W.summary())
    summary["propensity_checks"] = checks["random intercept"]
    return rows, fit_r, summary, notes, checks, {"plain logistic": fit_l.p, "random intercept": fit_r.p}


def _report_model(m: str, d: pd.DataFrame, feats: list[str], truncate: Truncation,
                  method: Literal["laplace", "aghq"], n_boot: int, seed: int, guess_rate: float | None,
                  alpha: float) -> tuple[list[dict[str, Any]], PropensityFit | None, dict | None, list[str],
                                         dict[str, PropensityDiagnostics], dict[str, np.ndarray]]:
    """Every row of one model (complete case, bounds, optional guess rule, IPW, DR), its notes, the checks of
    every propensity fitted for it (a failed one is a note) and the IPW propensities' fitted values."""
    y = d["correct"].to_numpy(dtype=float)
    obs = ~np.isnan(y)
    cl = d["cluster"].to_numpy()
    if not obs.any():
        raise ValueError(f"model {m!r} has no gradable answer; only the bounds [0, 1] are available")
    X = d[feats] if feats else None
    if X is not None and X.isna().any().any():
        bad = X.columns[X.isna().any()].tolist()
        raise EvalkitInputError(
            "features", f"feature columns {bad} have NaN for model {m!r}; impute them before the report")
    yo, co = y[obs], cl[obs]
    n_g = np.unique(co, return_counts=True)[1]
    m_w = float(np.sum(n_g.astype(float) ** 2) / yo.size)  # size-weighted cluster size, sum n_g^2 / n
    info: dict[str, Any] = {"response_rate": float(obs.mean()), "m_weighted": m_w}
    try:
        rho = icc_anova(yo, co)
        deff = deff_from_icc(m_w, float(np.clip(rho, 0, 1)))
        info.update(icc=rho, deff=deff, n_eff=n_effective(yo.size, deff))
    except ValueError:
        info.update(icc=np.nan, deff=np.nan, n_eff=np.nan)
    rows: list[dict[str, Any]] = []
    s: SEKind
    for s in ("iid", "CR1", "CR2"):
        rows.append(_row(m, f"complete case, {s}", missing_complete_case(y, cl, se=s, alpha=alpha),
                         deff_emp=_deff_or_nan(yo, co), **info))
    lo, hi = missing_bounds(y, cl, se="CR1", alpha=alpha)
    rows.append(_row(m, "missing as wrong, CR1", lo, deff_emp=_deff_or_nan(np.nan_to_num(y), cl), **info))
    rows.append(_row(m, "missing as right, CR1", hi, deff_emp=_deff_or_nan(np.nan_to_num(y, nan=1.0), cl), **info))
    if guess_rate is not None:
        if not 0 <= guess_rate <= 1:
            raise EvalkitInputError("guess_rate", "guess_rate must be a probability")
        v = np.where(obs, y, guess_rate)
        g = mean_estimate(v, cl, se="CR1", alpha=alpha, binary=False)
        rows.append(_row(m, f"missing as guess ({guess_rate:g}), CR1", g, deff_emp=_deff_or_nan(v, cl), **info))
    if obs.all():
        warn(f"model {m!r}: every item was answered; the IPW rows equal the complete-case rows")
        for name in ("IPW logistic, CR1", "IPW random intercept, CR1", "IPW random intercept, CR2"):
            rows.append(_row(m, name, missing_complete_case(y, cl, se=name[-3:], alpha=alpha),  # type: ignore[arg-type]
                             deff_emp=_deff_or_nan(yo, co), **info))
        return rows, None, None, [], {}, {}
    ipw_rows, fit_r, wdiag, notes, checks, p_fit = _report_ipw(m, y, cl, X, truncate, method, n_boot, seed, alpha,
                                                                info)
    if X is not None:
        dr_rows, dr_checks = _report_dr(m, y, cl, X, seed, alpha, info)
        ipw_rows += dr_rows
        checks.update(dr_checks)
    return rows + ipw_rows, fit_r, wdiag, notes + _check_notes(m, checks), checks, p_fit


def _report_dr(m: str, y: np.ndarray, cl: np.ndarray, X: pd.DataFrame, seed: int, alpha: float,
               info: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, PropensityDiagnostics]]:
    """The doubly robust rows (logistic outcome and propensity on the report's features, 5 folds of clusters) and
    the checks of its cross-fitted propensity (:attr:`DREstimate.diagnostics`)."""
    from .missing_dr import dr_estimate

    K = min(5, int(np.unique(cl).size))
    try:
        e = dr_estimate(y, cl, features=X, folds=K, seed=seed, alpha=alpha)
    except ValueError as exc:
        warn(f"model {m!r}: the doubly robust rows are not computed: {exc}")
        return [], {}
    note = (f"AIPW, outcome and propensity logistic on {list(X.columns)}, cross-fitted on {K} folds of whole "
            "clusters; consistent if either model is right")
    deff = (e.ses["CR1"] / e.ses["iid"]) ** 2 if e.ses["iid"] > 0 else float("nan")
    rows = [_row(m, f"DR logistic, cross-fit, {s}", e.as_estimate(s, alpha), deff_emp=deff, note=note, **info)
            for s in ("CR1", "CR2")]
    return rows, ({} if e.diagnostics is None else {"doubly robust, cross-fitted logistic": e.diagnostics})


def _report_compare(per_model: dict[str, pd.DataFrame], compare: tuple[str, str], feats: list[str],
                    truncate: Truncation, method: Literal["laplace", "aghq"], alpha: float,
                    p_own: dict[str, dict[str, np.ndarray]]
                    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, PropensityDiagnostics]], list[str]]:
    """The rows of the difference A - B on the shared items, with the checks of the comparison's propensities.

    A comparison propensity equal to the one of the model's own rows (same items, same features) was checked
    there; the others are checked here and each failed check is a note."""
    df_a, df_b = (per_model[k] for k in compare)
    both = df_a[["item", "cluster", "correct"]].merge(df_b[["item", "correct"]], on="item", suffixes=("_a", "_b"))
    if len(both) == 0:
        raise EvalkitInputError("models", "the two models share no items")
    ya, yb, cl = (both["correct_a"].to_numpy(dtype=float), both["correct_b"].to_numpy(dtype=float),
                  both["cluster"].to_numpy())
    lab = f"{compare[0]} - {compare[1]}"
    rows: list[dict[str, Any]] = []
    jointly = ~np.isnan(ya) & ~np.isnan(yb)
    if np.unique(cl[jointly]).size >= 2:
        ones = np.ones(int(jointly.sum()))
        est = ipw_compare(ya[jointly], yb[jointly], cl[jointly], p_a=ones, p_b=ones, se="CR1", alpha=alpha)
        rows.append(_row(lab, "complete case (items both answered), CR1", _relabel(est, "complete case, CR1"),
                         note=f"uses the {int(jointly.sum())} of {ya.size} shared items that both models answered"))
    la, ha = missing_bounds(ya, cl)
    lb, hb = missing_bounds(yb, cl)
    rows.append({"model": lab, "estimator": "bounds (worst A - best B, best A - worst B)",
                 "ci_low": la.estimate - hb.estimate, "ci_high": ha.estimate - lb.estimate,
                 "estimate": np.nan, "n": len(both), "n_clusters": np.unique(cl).size})
    Xab = df_a.set_index("item").loc[both["item"], feats].to_numpy(dtype=float) if feats else None
    kind_: PropensityKind
    checks: dict[str, dict[str, PropensityDiagnostics]] = {}
    notes: list[str] = []
    for kind_ in ("logistic", "random"):
        pa = _p_or_ones(ya, Xab, cl, kind_, method)
        pb = _p_or_ones(yb, Xab, cl, kind_, method)
        name = "plain logistic" if kind_ == "logistic" else "random intercept"
        for k, other, yk, pk in ((compare[0], compare[1], ya, pa), (compare[1], compare[0], yb, pb)):
            own = p_own.get(k, {}).get(name)
            r = ~np.isnan(yk)
            if r.all() or (own is not None and own.shape == pk.shape and np.allclose(own, pk, rtol=0, atol=1e-12)):
                continue
            label = f"{name}, comparison on the {yk.size} items shared with {other!r}"
            checks.setdefault(k, {})[label] = propensity_diagnostics(r.astype(float), pk, Xab, cl, plot=False)
            notes += _check_notes(k, {label: checks[k][label]})
        cr_kinds: tuple[Literal["CR1", "CR2"], ...] = ("CR1",) if kind_ == "logistic" else ("CR1", "CR2")
        for cr in cr_kinds:
            est = ipw_compare(ya, yb, cl, p_a=pa, p_b=pb, truncate=truncate, se=cr, alpha=alpha)
            rows.append(_row(lab, f"{_KIND_LABEL[kind_]}, {cr}", est))
    return rows, checks, notes


def missing_report(long_df: pd.DataFrame, *, features: Sequence[str] | None = None, cluster: str = "cluster",
                   model: str | None = None, compare: tuple[str, str] | None = None,
                   truncate: Truncation = TRUNCATE_DEFAULT, n_boot: int = 0, seed: int = 0,
                   guess_rate: float | None = None, method: Literal["laplace", "aghq"] = "laplace",
                   alpha: float = 0.05) -> pd.DataFrame:
    """Every missing-data estimator of one model's accuracy (or a two-model comparison), side by side.

    The one call to take an eval log with missing answers through: it validates the long table,
    then reports complete-case accuracy (i.i.d., CR1, CR2), the missing-as-wrong and
    missing-as-right bounds, optionally the scorer's random-guess replacement, IPW with a plain
    logistic propensity and with a random-intercept propensity (CR1, CR2; with truncation also
    the untruncated CR1 row beside them), optionally the cluster bootstrap refitting the
    propensity, and, when ``features`` are given, the doubly robust estimate (logistic outcome and
    propensity models on the features, cross-fitted on five folds of whole clusters, CR1 and CR2;
    :func:`evalkit.missing_dr.dr_estimate`). Each row carries its SE, ``1 - alpha`` interval and the
    empirical design effect
    ``V_cluster / V_iid`` of that estimator; the model-level ICC of the observed outcomes (ANOVA),
    the size-weighted cluster size ``m = sum n_g^2 / n``, the design effect ``1 + (m - 1) rho``,
    the effective n, the response rate, the latent ICC of *missingness* implied by the
    random-intercept propensity, the weight diagnostics, the truncation rule and a ``note`` saying
    what a row cannot do are columns too.

    What the report says it cannot do (a warning, a ``note`` on the rows concerned and a sentence
    in ``attrs["missing"].notes``): a cluster with no answered item (IPW then estimates the
    accuracy of the other clusters only; the warning names the clusters), and truncation that cuts
    more than 5% of the weight mass. Every propensity the report fits is checked before its rows
    are read (:func:`propensity_diagnostics`: overlap, balance of the features and cluster shares
    after weighting, calibration): the plain logistic and the random-intercept propensity of each
    model, the cross-fitted propensity of its doubly robust rows, and with ``compare`` the
    comparison's propensities on the shared items where they differ from the model's own. The
    results are in ``attrs["missing"].checks`` (the random-intercept one also under
    ``"propensity_checks"`` in that model's weight diagnostics), and each failed check adds a
    sentence naming the model and the propensity to ``attrs["missing"].notes``.

    Paper: [MISSING]. Taught in ``notebooks/02.2-missing-responses-propensity-checks-and-report.ipynb``.

    Parameters
    ----------
    long_df : DataFrame
        evalkit long table (``model, item, cluster, correct, status`` + feature columns).
    features : sequence of str, optional
        Columns used as propensity features. NaN in a feature raises: impute it first.
    cluster : str
        Column to cluster on (e.g. ``"cluster"``, ``"src"``, ``"category"``). Each item must carry
        the same label in every reported model.
    model : str, optional
        Which model to report when the table has several (not needed with one model).
    compare : (str, str), optional
        Report both models and their difference (A - B) on the shared items. The complete-case
        difference uses the items both answered, and its ``n`` says how many.
    truncate : see :func:`weights_compute`
        Applied to the IPW rows; the default is :data:`TRUNCATE_DEFAULT` (none), the same as
        :func:`ipw_estimate`.
    n_boot : int
        Cluster bootstrap resamples for an extra IPW row (0 = skip; 999 for a final report).
    seed : int
        Seed of the bootstrap.
    guess_rate : float, optional
        Add a row counting each missing answer as correct with this probability (e.g. 0.1 for
        MMLU-Pro's random-guess replacement of unparsable answers).
    method : {"laplace", "aghq"}
        Random-intercept fitting method.
    alpha : float

    Returns
    -------
    DataFrame
        One row per (model, estimator). ``attrs["missing"]`` is a :class:`MissingDetails` with
        the breakdown by reason and by cluster (:func:`missing_breakdown`), the fitted
        random-intercept :class:`PropensityFit` per model, the weight diagnostics, the checks of every
        fitted propensity and the notes.

    Raises
    ------
    ValueError
        Invalid long table, unknown model, duplicated items, missing or NaN feature columns,
        fewer than two clusters, an item whose cluster label differs between the reported models.

    Warns
    -----
    EvalkitWarning
        A cluster without respondents (named), truncation cutting more than 5% of the weight
        mass, and the warnings of :func:`propensity_fit` and :func:`weights_compute`.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> rep = ek.missing_report(d, features=["x"])
    >>> est = rep.set_index("estimator")["estimate"]
    >>> est[["complete case, CR1", "IPW random intercept, CR1"]].round(3).tolist()
    [0.599, 0.574]
    """
    check_alpha(alpha)
    sub, feats, models = _report_input(long_df, features, cluster, model, compare)
    by_reason, by_cluster = missing_breakdown(sub, cluster="cluster")
    rows: list[dict[str, Any]] = []
    fits: dict[str, PropensityFit] = {}
    wdiag: dict[str, dict] = {}
    notes: list[str] = []
    checks: dict[str, dict[str, PropensityDiagnostics]] = {}
    p_own: dict[str, dict[str, np.ndarray]] = {}
    per_model: dict[str, pd.DataFrame] = {}
    for m in models:
        d = sub[sub["model"] == m].sort_values("item").reset_index(drop=True)
        per_model[m] = d
        r, fit, wd, nt, ck, p_own[m] = _report_model(m, d, feats, truncate, method, n_boot, seed, guess_rate, alpha)
        rows += r
        notes += nt
        if ck:
            checks[m] = ck
        if fit is not None and wd is not None:
            fits[m], wdiag[m] = fit, wd
    if compare is not None:
        r, ck_cmp, nt = _report_compare(per_model, compare, feats, truncate, method, alpha, p_own)
        rows += r
        notes += nt
        for k, v in ck_cmp.items():
            checks.setdefault(k, {}).update(v)
    out = pd.DataFrame(rows)
    if "note" in out.columns:
        out["note"] = out["note"].fillna("")
    # one object (compared by identity), so that pd.concat of several reports works
    out.attrs["missing"] = MissingDetails(by_reason, by_cluster, fits, wdiag, notes, checks)
    return out


def _p_or_ones(y: np.ndarray, X: np.ndarray | None, cl: np.ndarray, kind: PropensityKind, method: str) -> np.ndarray:
    obs = ~np.isnan(y)
    if obs.all():
        return np.ones(y.size)
    return propensity_fit(obs.astype(float), X, cl, kind=kind, method=method).p  # type: ignore[arg-type]
