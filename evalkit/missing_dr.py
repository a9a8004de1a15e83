"""Doubly robust (AIPW) accuracy under missing responses and cluster dependence, with cluster cross-fitting.

The augmented inverse-probability-weighted estimator of the mean accuracy over *all* items,

.. math::

    \\hat\\theta = \\frac1n \\sum_i \\varphi_i, \\qquad
    \\varphi_i = \\hat m(X_i) + \\frac{R_i}{\\hat\\pi(X_i)} \\{Y_i - \\hat m(X_i)\\},

combines an outcome model ``m(x) = P(Y = 1 | x, R = 1)`` fitted on the answered items and a
response model ``pi(x) = P(R = 1 | x)``. It is consistent when either model is right (double
robustness; Robins, Rotnitzky and Zhao 1994), and when both are, its influence function
``psi_i = phi_i - theta`` is the efficient one, so its variance is the variance of a mean of
``phi``. Items come in clusters: the variance is that of ``phi``'s mean summed by cluster (CR0,
CR1 with ``t`` on ``M - 1`` df, or Bell–McCaffrey's CR2 with Satterthwaite df), never the i.i.d.
variance, which is reported only to show what ignoring the clusters costs.

**Cross-fitting by cluster** (Chernozhukov et al. 2018; Chiang, Kato, Ma and Sasaki 2022): the
clusters are split into ``K`` folds, and the nuisance models that predict for a fold's items are
fitted on the other folds' clusters only. Whole clusters, not items: an item's cluster-mates are
correlated with it, so item-level folds would let the nuisance fit see the held-out outcome's
cluster. Models with cluster effects (fixed effects, random intercept) then predict a held-out
cluster with its effect integrated out (over ``N(0, sigma_u^2)``, or over the training clusters'
fixed effects): under cross-fitting the nuisances are functions of the features only. The
non-cross-fitted version (``cross_fit=False``) fits on every item and predicts with each cluster's
own effect; it is kept for teaching and for parametric models, where it is also valid.

Paper: [MISSING] (Zeng, Arbour, Feller, Dasgupta, Sinha, Kennedy, NeurIPS 2025, arXiv 2510.20928).
Taught in ``notebooks/04.4-doubly-robust-aipw-and-cross-fitting.ipynb`` to
``04.7-doubly-robust-on-real-data.ipynb``; the equations are in
``docs/methods/missing-responses.md`` ("Doubly robust estimation").
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from ._checks import as_labels, check_alpha, warn
from .clustered import Estimate, _t_quantile, mean_estimate
from .errors import EvalkitInputError, EvalkitWarning, OverlapWarning, SmallClustersWarning
from .missing_propensity import (
    PropensityDiagnostics,
    PropensityFit,
    _as_features,
    _draw_diagnostics,
    propensity_diagnostics,
    propensity_fit,
)

__all__ = [
    "NuisanceModel",
    "DREstimate",
    "DRDiagnostics",
    "OVERLAP_BOUND",
    "dr_folds",
    "dr_estimate",
    "dr_compare",
    "dr_diagnostics_plot",
]

NuisanceModel = Literal["logistic", "fixed_effects", "random_intercept"]
_KINDS = {"logistic": "logistic", "fixed_effects": "fixed", "random_intercept": "random"}
OVERLAP_BOUND = 0.01
"""Fitted propensities below this trigger an :class:`~evalkit.errors.OverlapWarning`."""
_GH_T, _GH_W = np.polynomial.hermite_e.hermegauss(40)
_GH_W = _GH_W / _GH_W.sum()
_CALIBRATION_BINS = 10


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------

@dataclass(eq=False)
class DRDiagnostics(PropensityDiagnostics):
    """What to read before a doubly robust estimate: the propensity's checks, and the outcome model's calibration.

    The propensity part is :func:`evalkit.missing_propensity.propensity_diagnostics` of the
    (out-of-fold, when cross-fitted) propensities ``pi_hat``, so its fields read as there:

    Attributes
    ----------
    overlap : DataFrame
        Fitted propensities by response (rows ``answered``, ``missing``): ``n`` and the min, 5%,
        50%, 95% quantiles and max.
    balance : DataFrame
        One row per feature (propensity and outcome features, indexed by name) and one summary row
        ``clusters (largest share gap)``: the means over all items, over the answered items and over
        the answered items weighted by ``1 / pi_hat``, and the standardised mean differences against
        all items before (``smd_raw``) and after (``smd_weighted``) weighting.
    calibration : DataFrame
        Items in bins of ``pi_hat``: mean propensity, observed response rate, its binomial SE and ``z``.
    problems : list of str
        One sentence per failed propensity check (overlap, balance, calibration; thresholds as in
        :func:`~evalkit.missing_propensity.propensity_diagnostics`); empty when every check passes
        or when every item was answered (then nothing is weighted and the tables are empty).
    outcome_calibration : DataFrame
        The extra check of the outcome model: the answered items in bins of the (out-of-fold, when
        cross-fitted) outcome prediction, ``bin``, ``n``, mean ``predicted`` and ``observed``
        accuracy. A well-specified outcome model puts them on the diagonal.
    p_min, p_max : float
        Smallest and largest fitted propensity over all items.
    """

    outcome_calibration: pd.DataFrame = field(default_factory=pd.DataFrame)
    p_min: float = math.nan
    p_max: float = math.nan


@dataclass(frozen=True, eq=False)
class DREstimate(Estimate):
    """A doubly robust estimate: an :class:`~evalkit.clustered.Estimate` with its parts.

    The ``Estimate`` fields hold the estimate and the interval of the chosen ``se`` kind.

    Attributes
    ----------
    influence : (n,) array
        Influence values ``psi_i = phi_i - theta_hat`` (their mean is 0).
    pseudo : (n,) array
        The AIPW pseudo-outcomes ``phi_i``.
    outcome : (n,) array
        Outcome-model predictions ``m_hat(X_i)`` (out of fold when cross-fitted).
    propensity : (n,) array
        Response propensities ``pi_hat(X_i)`` (out of fold when cross-fitted).
    folds : (n,) int array or None
        Fold of each item (whole clusters per fold); None without cross-fitting.
    ses : dict
        Standard error by kind: ``iid``, ``CR0``, ``CR1``, ``CR2``.
    dfs : dict
        Degrees of freedom by kind: ``n - 1`` (iid), ``M - 1`` (CR0, CR1), Satterthwaite (CR2).
    diagnostics : DRDiagnostics or None
        None for a paired difference (see ``parts``).
    parts : tuple of DREstimate
        The two models' estimates of a :func:`dr_compare`; empty otherwise.
    """

    influence: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    pseudo: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    outcome: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    propensity: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    folds: np.ndarray | None = field(default=None, repr=False)
    ses: dict = field(default_factory=dict, repr=False)
    dfs: dict = field(default_factory=dict, repr=False)
    diagnostics: DRDiagnostics | None = field(default=None, repr=False)
    parts: tuple = field(default_factory=tuple, repr=False)

    def interval(self, se: str = "CR1", alpha: float = 0.05) -> tuple[float, float]:
        """The ``1 - alpha`` interval with another kind of standard error (``iid``, ``CR0``, ``CR1``, ``CR2``)."""
        check_alpha(alpha)
        if se not in self.ses:
            raise EvalkitInputError("se", f"se must be one of {sorted(self.ses)}, got {se!r}")
        q = _t_quantile(self.dfs[se], alpha)
        return self.estimate - q * self.ses[se], self.estimate + q * self.ses[se]

    def as_estimate(self, se: str = "CR1", alpha: float = 0.05) -> Estimate:
        """A plain :class:`~evalkit.clustered.Estimate` with the ``se`` kind's interval."""
        lo, hi = self.interval(se, alpha)
        method = self.method.rsplit(", ", 1)[0] + f", {se}"
        return Estimate(self.estimate, self.ses[se], lo, hi, self.dfs[se], method, self.n,
                        None if se == "iid" else self.n_clusters, self.n_clusters_effective)


# --------------------------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------------------------

def _outcomes(correct: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(correct, dtype=float)
    if y.ndim != 1 or y.size == 0:
        raise EvalkitInputError("correct", f"correct must be a non-empty 1-D array (0/1, NaN = missing), "
                                f"got shape {y.shape}")
    obs = ~np.isnan(y)
    if not np.isin(y[obs], (0.0, 1.0)).all():
        raise EvalkitInputError("correct", "correct must hold 0/1 where observed and NaN where missing")
    if not obs.any():
        raise EvalkitInputError("correct", "no outcome is observed: the accuracy is not identified; only the "
                                "bounds [0, 1] are available (missing_bounds)")
    return y, obs


def _given(p: Any, n: int, name: str, *, closed_low: bool, closed_high: bool) -> np.ndarray:
    a = np.asarray(p, dtype=float)
    if a.shape != (n,):
        raise EvalkitInputError(name, f"{name} has shape {a.shape}; give one probability per item ({n})")
    if np.isnan(a).any():
        raise EvalkitInputError(name, f"{name} contains {int(np.isnan(a).sum())} NaN probabilities")
    low_bad = a < 0 if closed_low else a <= 0
    high_bad = a > 1 if closed_high else a >= 1
    if (low_bad | high_bad).any():
        rng = f"{'[' if closed_low else '('}0, 1{']' if closed_high else ')'}"
        raise EvalkitInputError(name, f"{name} must be probabilities in {rng}; {int((low_bad | high_bad).sum())} "
                                f"are not (for example {a[low_bad | high_bad][0]!r})")
    return a


def _model_kind(model: Any, name: str) -> str | None:
    if isinstance(model, str):
        if model not in _KINDS:
            raise EvalkitInputError(name, f"{name} must be one of {sorted(_KINDS)} or an array of probabilities, "
                                    f"got {model!r}")
        return _KINDS[model]
    return None


def dr_folds(clusters: npt.ArrayLike, folds: int = 5, *, seed: int = 0) -> np.ndarray:
    """Assign whole clusters to ``folds`` cross-fitting folds at random (seeded).

    The clusters are shuffled with ``numpy.random.default_rng(seed)`` and dealt to the folds in
    turn, so every fold holds ``floor(M / K)`` or ``ceil(M / K)`` clusters and every item of a
    cluster is in the same fold.

    Paper: [MISSING]; Chiang, Kato, Ma and Sasaki (2022).

    Parameters
    ----------
    clusters : (n,) labels
    folds : int
        ``K``, between 2 and the number of clusters ``M``.
    seed : int

    Returns
    -------
    (n,) int array
        Fold ``0 .. K-1`` of each item.

    Examples
    --------
    >>> f = dr_folds(["a", "a", "b", "b", "c", "c", "d", "d"], folds=2, seed=1)
    >>> bool(f[0] == f[1] and f[4] == f[5]), np.bincount(f).tolist()
    (True, [4, 4])
    """
    codes, uniques = as_labels(clusters, np.asarray(clusters).shape[0])
    M = uniques.size
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or not 2 <= folds <= M:
        raise EvalkitInputError("folds", f"folds must be an int between 2 and the number of clusters ({M}), "
                                f"got {folds!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise EvalkitInputError("seed", f"seed must be an int, got {seed!r}")
    perm = np.random.default_rng(int(seed)).permutation(M)
    fold_of_cluster = np.empty(M, dtype=np.intp)
    fold_of_cluster[perm] = np.arange(M) % int(folds)
    return fold_of_cluster[codes]


# --------------------------------------------------------------------------------------------
# nuisance fits
# --------------------------------------------------------------------------------------------

def _fit(target: np.ndarray, X: np.ndarray | None, clus: np.ndarray, kind: str, method: str,
         what: str) -> PropensityFit:
    """A logistic / fixed-effects / random-intercept fit of a 0/1 target (response or outcome)."""
    if target.size == 0:
        raise EvalkitInputError("correct", f"the {what} model has no items to fit on")
    if target.min() == target.max():
        raise EvalkitInputError("correct", f"every item the {what} model is fitted on has the same value "
                                f"({int(target[0])}); the model is not identified. Use fewer folds, or pass "
                                "predictions")
    if X is not None and X.shape[1] and np.any(X.std(axis=0) == 0):
        raise EvalkitInputError("features", f"a feature is constant on the items the {what} model is fitted on "
                                "(a fold or the answered items); drop it or use fewer folds")
    Xf = X if X is not None and X.shape[1] else None
    if what != "outcome":
        return propensity_fit(target, Xf, clus, kind=kind, method=method)  # type: ignore[arg-type]
    # the outcome model is fitted with the propensity code on the answered items' correctness: its
    # caveats speak of "propensities" and weights, so they are reworded for the outcome model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = propensity_fit(target, Xf, clus, kind=kind, method=method)  # type: ignore[arg-type]
    for w in caught:
        if issubclass(w.category, EvalkitWarning):
            warn(_outcome_caveat(str(w.message)), category=w.category)
        else:
            warnings.warn(w.message, w.category, stacklevel=2)
    return fit


_LOGISTIC_SEPARATION = re.compile(r"^logistic propensity: separation: (\d+) fitted propensities are numerically "
                                  r"1 \((\d+)\) or 0 \((\d+)\)")


def _outcome_caveat(message: str) -> str:
    """A caveat of :func:`propensity_fit` when it fits the outcome model, in the outcome model's words."""
    m = _LOGISTIC_SEPARATION.match(message)
    if m:
        n, n1, n0 = m.groups()
        return (f"logistic outcome model: separation: {n} fitted probabilities of a correct answer are numerically "
                f"1 ({n1}) or 0 ({n0}); the features predict correctness on the answered items almost perfectly, "
                "so the outcome model has no finite maximum and predicts those items as certainly right (1) or "
                "wrong (0); the propensities and weights are not affected. Compare with the IPW and complete-case "
                "estimates, or coarsen the feature")
    return f"outcome model (fitted on the answered items' correctness): {message}"


def _predict(fit: PropensityFit, X: np.ndarray | None, clus: np.ndarray, conditional: bool) -> np.ndarray:
    """Predictions; cluster effects used when ``conditional`` and the cluster was in the fit, else integrated out."""
    Xk = X if X is not None and X.shape[1] else None
    lin = fit.intercept + (Xk @ fit.coef if Xk is not None else 0.0)
    eta: np.ndarray = np.broadcast_to(np.asarray(lin, dtype=float), clus.shape).copy()
    if fit.kind == "logistic":
        return np.asarray(special.expit(eta))
    pos = np.clip(np.searchsorted(fit.cluster_labels, clus), 0, fit.cluster_labels.size - 1)
    known = (fit.cluster_labels[pos] == clus) if conditional else np.zeros(clus.size, dtype=bool)
    out = np.empty(clus.size)
    if known.any():
        with np.errstate(invalid="ignore", over="ignore"):
            out[known] = special.expit(eta[known] + fit.cluster_effect[pos[known]])
    new = ~known
    if new.any():
        e = eta[new]
        if fit.kind == "random":               # E_u expit(eta + u), u ~ N(0, sigma_u^2)
            out[new] = special.expit(e[:, None] + fit.sigma_u * _GH_T[None, :]) @ _GH_W
        else:                                   # fixed effects: average over the fitted clusters' effects
            eff = fit.cluster_effect
            with np.errstate(invalid="ignore", over="ignore"):
                out[new] = special.expit(e[:, None] + eff[None, :]).mean(axis=1)
    return out


def _nuisances(y: np.ndarray, obs: np.ndarray, clus: np.ndarray, Xo: np.ndarray | None, Xp: np.ndarray | None,
               outcome_model: Any, propensity_model: Any, fold: np.ndarray | None,
               method: str) -> tuple[np.ndarray, np.ndarray]:
    n = y.size
    ko, kp = _model_kind(outcome_model, "outcome_model"), _model_kind(propensity_model, "propensity_model")
    m = None if ko else _given(outcome_model, n, "outcome_model", closed_low=True, closed_high=True)
    p = None if kp else _given(propensity_model, n, "propensity_model", closed_low=False, closed_high=True)
    R = obs.astype(float)
    if m is None or p is None:
        if fold is None:
            parts = [(np.ones(n, dtype=bool), np.ones(n, dtype=bool), True)]
        else:
            parts = [(fold != k, fold == k, False) for k in np.unique(fold)]
        m_hat = np.empty(n) if m is None else m
        p_hat = np.empty(n) if p is None else p
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="only .* clusters: a cluster-level propensity")
            for train, test, cond in parts:
                if m is None:
                    tr = train & obs
                    fo = _fit(y[tr], None if Xo is None else Xo[tr], clus[tr], str(ko), method, "outcome")
                    m_hat[test] = _predict(fo, None if Xo is None else Xo[test], clus[test], cond)
                if p is None:
                    if R[train].min() == 1.0:          # every training item answered: propensity 1
                        p_hat[test] = 1.0
                        continue
                    fp = _fit(R[train], None if Xp is None else Xp[train], clus[train], str(kp), method,
                              "propensity")
                    p_hat[test] = _predict(fp, None if Xp is None else Xp[test], clus[test], cond)
        m, p = m_hat, p_hat
    return m, p


# --------------------------------------------------------------------------------------------
# diagnostics
# --------------------------------------------------------------------------------------------

def _outcome_calibration(m: np.ndarray, y: np.ndarray, obs: np.ndarray,
                         bins: int = _CALIBRATION_BINS) -> pd.DataFrame:
    mo, yo = m[obs], y[obs]
    edges = np.unique(np.quantile(mo, np.linspace(0, 1, bins + 1)))
    if edges.size < 2:
        return pd.DataFrame({"bin": [0], "n": [mo.size], "predicted": [mo.mean()], "observed": [yo.mean()]})
    b = np.clip(np.searchsorted(edges, mo, side="right") - 1, 0, edges.size - 2)
    df = pd.DataFrame({"bin": b, "m": mo, "y": yo}).groupby("bin")
    out = pd.DataFrame({"n": df.size(), "predicted": df["m"].mean(), "observed": df["y"].mean()}).reset_index()
    return out


def _diagnostics(p: np.ndarray, m: np.ndarray, y: np.ndarray, obs: np.ndarray, clus: np.ndarray,
                 feats: list[tuple[np.ndarray, list[str]]]) -> DRDiagnostics:
    """The propensity's checks (:func:`propensity_diagnostics` on every feature of either model and the clusters)
    with the outcome model's calibration."""
    cols, names = [], []
    for X, nm in feats:
        for k, name in enumerate(nm):
            if name not in names:
                cols.append(X[:, k])
                names.append(name)
    if obs.all():  # nothing is missing: no propensity to check, nothing weighted
        checks = PropensityDiagnostics(
            pd.DataFrame(columns=["n", "min", "q05", "median", "q95", "max"]),
            pd.DataFrame(columns=["mean_all", "mean_answered", "mean_weighted", "smd_raw", "smd_weighted"]),
            pd.DataFrame(columns=["n", "p_mean", "response_rate", "se", "z"]), [])
    else:
        X_all = pd.DataFrame(np.column_stack(cols), columns=names) if cols else None
        checks = propensity_diagnostics(obs.astype(float), p, X_all, clus, plot=False)
    return DRDiagnostics(checks.overlap, checks.balance, checks.calibration, checks.problems,
                         outcome_calibration=_outcome_calibration(m, y, obs), p_min=float(p.min()),
                         p_max=float(p.max()))


# --------------------------------------------------------------------------------------------
# the estimator
# --------------------------------------------------------------------------------------------

def _variances(phi: np.ndarray, clus: np.ndarray, alpha: float) -> tuple[dict, dict, float | None]:
    ses, dfs = {}, {}
    g_eff = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the design warnings are raised once, below, for the chosen kind
        for k in ("iid", "CR0", "CR1", "CR2"):
            e = mean_estimate(phi, None if k == "iid" else clus, se=k, alpha=alpha, binary=False)
            ses[k], dfs[k] = e.se, e.df
            if k != "iid":
                g_eff = e.n_clusters_effective
    return ses, dfs, g_eff


def _label(outcome_model: Any, propensity_model: Any, cross_fit: bool, folds: int, normalise: bool = False) -> str:
    def nm(x: Any) -> str:
        return x if isinstance(x, str) else "given"
    cf = f"cluster cross-fit K={folds}" if cross_fit else "no cross-fit"
    nw = ", normalised weights" if normalise else ""
    return f"DR (outcome {nm(outcome_model)}, propensity {nm(propensity_model)}, {cf}{nw})"


def _pseudo(y: np.ndarray, obs: np.ndarray, m: np.ndarray, p: np.ndarray, bound: float, stacklevel: int) -> np.ndarray:
    if (p[obs] <= 0).any():
        raise EvalkitInputError("propensity_model", f"{int((p[obs] <= 0).sum())} answered items have propensity 0; "
                                "the inverse weight is infinite (a separated propensity model, e.g. a cluster "
                                "fixed effect at -inf). Use another model or pass propensities bounded away from 0")
    low = int(np.sum(p < bound))
    if low:
        warn(f"{low} items have a fitted propensity below {bound:g} (smallest {p.min():.2g}): the inverse weights "
             f"of such items are large and the estimate leans on few answered items, or extrapolates the outcome "
             "model to items like them that are never answered. Read diagnostics.overlap and report the bounds",
             stacklevel=stacklevel, category=OverlapWarning)
    resid = np.where(obs, np.nan_to_num(y) - m, 0.0)
    return m + np.where(obs, resid / np.where(obs, p, 1.0), 0.0)


def _pseudo_normalised(y: np.ndarray, obs: np.ndarray, m: np.ndarray, p: np.ndarray,
                       fold: np.ndarray | None) -> np.ndarray:
    """Pseudo-outcomes of the normalised (Hajek-type) AIPW: weights rescaled to mean one in each fold.

    In fold ``k`` (all items without cross-fitting) the correction is the weighted mean residual
    ``T_k = sum_k w_i e_i / sum_k w_i`` with ``w_i = R_i / pi_hat_i``, ``e_i = Y_i - m_hat_i``, and
    ``phi_i = m_hat_i + T_k + w_i (e_i - T_k) / mean_k(w)``: the mean of ``phi`` over the fold is
    ``mean_k(m_hat) + T_k`` and ``phi - theta_hat`` carries the linearisation of the ratio. Still
    doubly robust: ``T_k`` estimates ``E[Y - m_hat]`` when ``pi`` is right, and 0 when ``m`` is.
    """
    f = np.zeros(y.size, dtype=np.intp) if fold is None else fold
    w = np.where(obs, 1.0 / np.where(obs, p, 1.0), 0.0)
    e = np.where(obs, np.nan_to_num(y) - m, 0.0)
    phi = m.astype(float).copy()
    for k in np.unique(f):
        s = f == k
        ws = w[s].sum()
        if ws == 0:                             # no answered item in the fold: no correction
            continue
        t = float(np.dot(w[s], e[s]) / ws)
        phi[s] += t + w[s] * (e[s] - t) / (ws / s.sum())
    return phi


def _prepare(correct: npt.ArrayLike, clusters: npt.ArrayLike, features: Any, outcome_features: Any,
             propensity_features: Any, folds: int, seed: int, cross_fit: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, list[str]],
                        tuple[np.ndarray, list[str]], np.ndarray | None]:
    y, obs = _outcomes(correct)
    if clusters is None:
        raise EvalkitInputError("clusters", "dr_estimate needs cluster labels (folds and the variance are by cluster)")
    clus_in = np.asarray(clusters)
    codes, uniques = as_labels(clus_in, y.size)
    if uniques.size < 2:
        raise EvalkitInputError("clusters", "only one cluster: the cluster-robust variance needs at least two")
    clus = codes
    fo = outcome_features if outcome_features is not None else features
    fp = propensity_features if propensity_features is not None else features
    Xo = _as_features(fo, y.size)
    Xp = _as_features(fp, y.size)
    fold = dr_folds(codes, folds, seed=seed) if cross_fit else None
    if not cross_fit and (isinstance(folds, bool) or not isinstance(folds, (int, np.integer))):
        raise EvalkitInputError("folds", f"folds must be an int, got {folds!r}")
    return y, obs, clus, Xo, Xp, fold


def dr_estimate(correct: npt.ArrayLike, clusters: npt.ArrayLike, *, features: Any = None,
                outcome_features: Any = None, propensity_features: Any = None,
                outcome_model: NuisanceModel | npt.ArrayLike = "logistic",
                propensity_model: NuisanceModel | npt.ArrayLike = "logistic",
                cross_fit: bool = True, folds: int = 5, seed: int = 0,
                se: Literal["CR0", "CR1", "CR2", "iid"] = "CR1", alpha: float = 0.05,
                method: Literal["laplace", "aghq"] = "laplace", overlap_bound: float = OVERLAP_BOUND,
                normalise: bool = False) -> DREstimate:
    """Doubly robust (AIPW) accuracy over all items, with a cluster-robust interval.

    ``theta_hat = mean_i phi_i`` with ``phi_i = m_hat_i + R_i (Y_i - m_hat_i) / pi_hat_i``: the
    outcome model's prediction for every item, corrected on the answered items by their
    inverse-propensity-weighted residuals (Robins, Rotnitzky and Zhao 1994). Consistent when the
    outcome model or the propensity model is right and answers are missing at random given the
    features (double robustness). The influence values are ``psi_i = phi_i - theta_hat``; the
    variance sums them by cluster: ``V_CR0 = sum_g (sum_{i in g} psi_i)^2 / n^2``, CR1 is
    ``M / (M - 1)`` times it (``t`` on ``M - 1`` df), CR2 is Bell and McCaffrey's adjustment of
    the mean of ``phi`` (working independence) with its Satterthwaite df. Treating the fitted
    nuisances as known is justified by Neyman orthogonality of the AIPW score under cross-fitting
    (Chernozhukov et al. 2018), for clustered data with folds of whole clusters (Chiang, Kato, Ma
    and Sasaki 2022), when both models converge fast enough (the product of their errors
    ``o(M^{-1/2})``); with a wrong model the estimate stays consistent but this variance need not.
    The i.i.d. SE (``ses["iid"]``) ignores the clusters and is reported only for comparison.

    Paper: [MISSING].

    Parameters
    ----------
    correct : (n,) array
        0/1 outcomes for every item, NaN where the answer is missing.
    clusters : (n,) labels
    features : (n, k) array or DataFrame, optional
        Default features of both models.
    outcome_features, propensity_features : (n, k) array or DataFrame, optional
        Features of each model (override ``features``). None for both gives intercept-only models
        (the outcome model is then the answered items' mean, the propensity the response rate).
    outcome_model, propensity_model : {"logistic", "fixed_effects", "random_intercept"} or (n,) array
        Logistic regression on the features; with cluster fixed effects; with a random cluster
        intercept (:func:`evalkit.missing_propensity.propensity_fit`). Or predictions given for
        every item: outcome probabilities in ``[0, 1]`` (a judge's or another model's score, as in
        prediction-powered inference), propensities in ``(0, 1]``. Given predictions are used as
        they are (not cross-fitted: they must not have been fitted on these items' outcomes).
    cross_fit : bool
        Cross-fit by cluster (default). False fits each model once on all items and predicts each
        cluster with its own fitted effect (teaching, and parametric models).
    folds : int
        ``K``, the number of folds of whole clusters (:func:`dr_folds`).
    seed : int
        Seed of the fold assignment.
    se : {"CR1", "CR2", "CR0", "iid"}
        Which standard error the returned interval uses; all four are in ``ses``.
    alpha : float
    method : {"laplace", "aghq"}
        Random-intercept fitting method.
    overlap_bound : float
        Propensities below it are flagged (:data:`OVERLAP_BOUND`, 0.01).
    normalise : bool
        False (default): the AIPW above (what DoubleML's average potential outcome computes).
        True: the normalised (Hajek-type) correction, the inverse weights rescaled to mean one in
        each fold (over all items without cross-fitting), ``phi_i = m_hat_i + T_k + w_i (e_i -
        T_k) / mean_k(w)`` with ``w_i = R_i / pi_hat_i``, ``e_i = Y_i - m_hat_i`` and ``T_k`` the
        weighted mean residual of fold ``k``; still doubly robust, and its influence values carry
        the linearisation of the ratio. It removes the part of the finite-sample bias that comes
        from out-of-fold weights whose mean is not one.

    Returns
    -------
    DREstimate
        An :class:`~evalkit.clustered.Estimate` with the influence values, pseudo-outcomes,
        nuisance predictions, folds, every SE kind and :class:`DRDiagnostics`.

    Raises
    ------
    EvalkitInputError
        Outcomes not 0/1/NaN, nothing observed, missing or misaligned clusters, fewer than two
        clusters, bad ``folds`` or ``seed``, given predictions of the wrong length, NaN or outside
        their range, an unknown model, a fold whose answered items are all correct or all wrong,
        an answered item with propensity 0.

    Warns
    -----
    OverlapWarning
        Fitted propensities below ``overlap_bound`` (answered or missing items: either the weights are
        extreme or items like the missing ones are almost never answered, and the outcome model
        extrapolates to them).

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=30, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar", response_rate=0.7, strength=1.0, rng=2)
    >>> e = ek.dr_estimate(d["correct"], d["cluster"], features=d[["x"]], folds=5, seed=0)
    >>> round(e.estimate, 3), e.df, e.n_clusters
    (0.607, 29.0, 30)
    """
    check_alpha(alpha)
    if se not in ("iid", "CR0", "CR1", "CR2"):
        raise EvalkitInputError("se", f"se must be 'iid', 'CR0', 'CR1' or 'CR2', got {se!r}")
    y, obs, clus, (Xo, no), (Xp, npn), fold = _prepare(correct, clusters, features, outcome_features,
                                                       propensity_features, folds, seed, cross_fit)
    if not isinstance(normalise, (bool, np.bool_)):
        raise EvalkitInputError("normalise", f"normalise must be True or False, got {normalise!r}")
    m, p = _nuisances(y, obs, clus, Xo, Xp, outcome_model, propensity_model, fold, method)
    phi = _pseudo(y, obs, m, p, overlap_bound, stacklevel=3)
    if normalise:
        phi = _pseudo_normalised(y, obs, m, p, fold)
    label = _label(outcome_model, propensity_model, cross_fit, folds, normalise)
    return _result(phi, clus, se, alpha, label, m, p, fold, _diagnostics(p, m, y, obs, clus, [(Xp, npn), (Xo, no)]))


def _result(phi: np.ndarray, clus: np.ndarray, se: str, alpha: float, label: str, m: np.ndarray, p: np.ndarray,
            fold: np.ndarray | None, diag: DRDiagnostics | None, parts: tuple = ()) -> DREstimate:
    theta = float(phi.mean())
    ses, dfs, g_eff = _variances(phi, clus, alpha)
    M = int(np.unique(clus).size)
    q = _t_quantile(dfs[se], alpha)
    if se != "iid" and g_eff is not None and g_eff < 10:
        warn(f"the effective number of clusters is {g_eff:.1f}: no cluster-robust interval can be trusted with "
             "so few", stacklevel=4, category=SmallClustersWarning)
    return DREstimate(theta, ses[se], theta - q * ses[se], theta + q * ses[se], dfs[se], f"{label}, {se}",
                      int(phi.size), None if se == "iid" else M, g_eff, influence=phi - theta, pseudo=phi,
                      outcome=m, propensity=p, folds=fold, ses=ses, dfs=dfs, diagnostics=diag, parts=parts)


def dr_compare(correct_a: npt.ArrayLike, correct_b: npt.ArrayLike, clusters: npt.ArrayLike, *,
               features: Any = None, outcome_features: Any = None, propensity_features: Any = None,
               outcome_model: NuisanceModel | tuple[npt.ArrayLike, npt.ArrayLike] = "logistic",
               propensity_model: NuisanceModel | tuple[npt.ArrayLike, npt.ArrayLike] = "logistic",
               cross_fit: bool = True, folds: int = 5, seed: int = 0,
               se: Literal["CR0", "CR1", "CR2", "iid"] = "CR1", alpha: float = 0.05,
               method: Literal["laplace", "aghq"] = "laplace", overlap_bound: float = OVERLAP_BOUND,
               normalise: bool = False) -> DREstimate:
    """Doubly robust difference of two models' accuracies on the same items, paired by cluster.

    Each model gets its own outcome and response models (fitted on the same folds of whole
    clusters), its own pseudo-outcomes ``phi_a``, ``phi_b``, and the difference is
    ``mean_i (phi_a,i - phi_b,i)``. Its influence values ``phi_a - phi_b - (theta_a - theta_b)``
    are summed by cluster, so an item's cluster carries both models' answers and the pairing is
    kept: the variance is that of the mean of the per-item difference of pseudo-outcomes (CR0,
    CR1, CR2 as in :func:`dr_estimate`).

    Paper: [MISSING].

    Parameters
    ----------
    correct_a, correct_b : (n,) arrays
        The two models' outcomes (NaN = missing) on the same items in the same order.
    clusters, features, outcome_features, propensity_features, cross_fit, folds, seed, se, alpha
        As in :func:`dr_estimate`; the features are the items' and shared by both models.
    method, overlap_bound, normalise
        As in :func:`dr_estimate`.
    outcome_model, propensity_model : str or (array_a, array_b)
        A model name for both, or a pair of given predictions.

    Returns
    -------
    DREstimate
        The difference A - B; ``parts`` holds the two models' :class:`DREstimate`.

    Raises
    ------
    EvalkitInputError
        Different lengths, and the errors of :func:`dr_estimate`.

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=30, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> a = ek.simulate_missing(d, mechanism="mar", response_rate=0.7, rng=2)["correct"]
    >>> b = ek.simulate_missing(d, mechanism="mar", response_rate=0.9, rng=3)["correct"]
    >>> e = ek.dr_compare(a, b, d["cluster"], features=d[["x"]])
    >>> bool(abs(e.estimate) < 2 * e.se)
    True
    """
    ya, yb = np.asarray(correct_a, dtype=float), np.asarray(correct_b, dtype=float)
    if ya.shape != yb.shape:
        raise EvalkitInputError("correct_b", f"the two models have {ya.shape} and {yb.shape} outcomes; they must "
                                "share the items")

    def pick(x: Any, k: int) -> Any:
        if isinstance(x, str):
            return x
        if not isinstance(x, tuple) or len(x) != 2:
            raise EvalkitInputError("outcome_model", "give a model name or a pair (predictions_a, predictions_b)")
        return x[k]

    parts = []
    for k, y in enumerate((ya, yb)):
        parts.append(dr_estimate(y, clusters, features=features, outcome_features=outcome_features,
                                 propensity_features=propensity_features, outcome_model=pick(outcome_model, k),
                                 propensity_model=pick(propensity_model, k), cross_fit=cross_fit, folds=folds,
                                 seed=seed, se=se, alpha=alpha, method=method, overlap_bound=overlap_bound,
                                 normalise=normalise))
    codes, _ = as_labels(np.asarray(clusters), ya.size)
    phi = parts[0].pseudo - parts[1].pseudo
    lab = "difference, " + parts[0].method.rsplit(", ", 1)[0]
    return _result(phi, codes, se, alpha, lab, parts[0].outcome - parts[1].outcome,
                   np.full(phi.size, math.nan), parts[0].folds, None, tuple(parts))


# --------------------------------------------------------------------------------------------
# outcome regression (for the simulation study and the report)
# --------------------------------------------------------------------------------------------

def _or_estimate(correct: npt.ArrayLike, clusters: npt.ArrayLike, features: Any = None, *,
                 se: str = "CR1", alpha: float = 0.05) -> Estimate:
    """Outcome-regression (g-computation) accuracy ``mean_i m_hat(X_i)`` with a logistic outcome model.

    Its influence values are ``m_i - theta + d' H^{-1} R_i Z_i (Y_i - m_i)`` with ``H`` the
    logistic information per item and ``d = mean_i m_i (1 - m_i) Z_i`` (the delta method on the
    stacked estimating equations), summed by cluster (CR1, ``t`` on ``M - 1`` df).
    """
    y, obs = _outcomes(correct)
    codes, uniques = as_labels(np.asarray(clusters), y.size)
    X, _ = _as_features(features, y.size)
    Z = np.column_stack([np.ones(y.size), X])
    fit = _fit(y[obs], X[obs] if X.shape[1] else None, codes[obs], "logistic", "laplace", "outcome")
    beta = np.concatenate([[fit.intercept], fit.coef])
    m = special.expit(Z @ beta)
    theta = float(m.mean())
    n = y.size
    v = m * (1 - m)
    H = (Z[obs] * v[obs, None]).T @ Z[obs] / n
    d = (Z * v[:, None]).mean(axis=0)
    score = np.where(obs, np.nan_to_num(y) - m, 0.0)[:, None] * Z
    psi = m - theta + score @ np.linalg.solve(H, d)
    M = uniques.size
    U = np.bincount(codes, weights=psi, minlength=M)
    if se == "iid":
        var, dof, Mo = float(np.sum(psi**2) / (n * (n - 1))), float(n - 1), None
    else:
        var, dof, Mo = float(M / (M - 1) * np.sum(U**2) / n**2), float(M - 1), int(M)
    s = math.sqrt(var)
    q = _t_quantile(dof, alpha)
    return Estimate(theta, s, theta - q * s, theta + q * s, dof, f"outcome regression (logistic), {se}", n, Mo)


# --------------------------------------------------------------------------------------------
# figure
# --------------------------------------------------------------------------------------------

def dr_diagnostics_plot(est: DREstimate, *, correct: npt.ArrayLike | None = None, ax: Any = None) -> Any:
    """Four panels to read before a DR estimate: the propensity's three checks and the outcome model's calibration.

    The first three are the panels of :func:`evalkit.missing_propensity.propensity_diagnostics`,
    drawn from ``est.diagnostics``. Overlap: histograms of the fitted propensities of the answered
    and the missing items (mass near 0 among the missing means extrapolation). Balance: each
    feature's and the cluster shares' absolute standardised mean difference between the answered
    and all items, before and after inverse-propensity weighting (the dotted line is 0.1).
    Propensity calibration: the observed response rate against the mean propensity, in bins of
    the propensity (±2 SE). Outcome calibration: the answered items' mean outcome against the
    mean prediction, in bins of the prediction.

    Paper: [MISSING].

    Parameters
    ----------
    est : DREstimate
        From :func:`dr_estimate` (not a paired difference).
    correct : (n,) array, optional
        The outcomes given to :func:`dr_estimate`, to split the propensities by response; without
        them the split is read from the pseudo-outcomes (``phi == m_hat`` exactly for missing items).
    ax : sequence of four matplotlib Axes, optional

    Returns
    -------
    matplotlib Figure

    Raises
    ------
    EvalkitInputError
        A paired difference (plot its ``parts``), or ``ax`` not four Axes.
    """
    import matplotlib.pyplot as plt

    if not isinstance(est, DREstimate):
        raise EvalkitInputError("est", f"est must be a DREstimate (from dr_estimate or dr_compare), got "
                                       f"{type(est).__name__}")
    if est.diagnostics is None:
        raise EvalkitInputError("est", "a paired difference has no diagnostics of its own; plot est.parts[0] and [1]")
    if correct is not None:
        obs = ~np.isnan(np.asarray(correct, dtype=float))
    else:
        obs = est.pseudo != est.outcome
    if ax is None:
        fig, axes = plt.subplots(1, 4, figsize=(15, 3.6))
    else:
        axes = list(ax)
        if len(axes) != 4:
            raise EvalkitInputError("ax", f"ax must be four Axes (overlap, balance, propensity and outcome "
                                          f"calibration), got {len(axes)}")
        fig = axes[0].figure
    dg = est.diagnostics
    _draw_diagnostics(axes[:3], est.propensity, obs, dg.balance, dg.calibration)
    axes[2].set_title("propensity calibration (±2 SE)")
    cal = dg.outcome_calibration
    axes[3].plot([0, 1], [0, 1], color="0.5", ls=":", lw=0.8)
    axes[3].scatter(cal["predicted"], cal["observed"], s=12 + 60 * cal["n"] / cal["n"].max())
    axes[3].set(xlabel="mean predicted (answered items)", ylabel="observed accuracy", title="outcome calibration",
                xlim=(0, 1), ylim=(0, 1))
    from .plots import _tight
    _tight(fig)
    return fig
