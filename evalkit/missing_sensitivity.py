"""Delta-adjusted sensitivity analysis for missing answers that are not missing at random (MNAR).

Under MAR a missing answer is correct with the probability that a comparable answered item is;
the analysis shifts that log-odds by ``delta`` and asks where a conclusion tips.

Paper: [MISSING]. Taught in ``notebooks/03.4-missing-responses-claims-widths-and-mnar.ipynb`` and
``04.3-missing-reasons-and-a-tipping-point.ipynb``.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special

from ._checks import as_float_vector, check_alpha, check_positive, check_table, warn
from .clustered import mean_estimate
from .errors import DegenerateDataWarning, EvalkitInputError
from .missing_propensity import PropensityKind, _as_features, _prep, propensity_fit

__all__ = ["sensitivity_delta", "sensitivity_tipping_point", "sensitivity_plot"]


# --------------------------------------------------------------------------------------------
# sensitivity analysis
# --------------------------------------------------------------------------------------------

def _outcome_predictions(correct: np.ndarray, clusters: np.ndarray | None, features: npt.ArrayLike | None,
                         kind: PropensityKind) -> np.ndarray:
    """``P(Y = 1 | x, cluster)`` for every item from a model fitted on the answered items (MAR)."""
    y = np.asarray(correct, dtype=float)
    obs = ~np.isnan(y)
    Xa, _ = _as_features(features, y.size)
    yo = y[obs]
    if yo.min() == yo.max():
        return np.full(y.size, float(yo[0]))
    Xo = Xa[obs] if Xa.shape[1] else None
    use_kind = kind if clusters is not None else "logistic"
    if use_kind != "logistic" and clusters is not None and np.unique(clusters[obs]).size < 2:
        use_kind = "logistic"
    if Xo is not None and np.any(Xo.std(axis=0) == 0):
        raise EvalkitInputError("features", "a feature is constant among the answered items; drop it")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = propensity_fit(yo, Xo, None if clusters is None else clusters[obs], kind=use_kind)
    Xall = Xa if Xa.shape[1] else None
    if use_kind == "logistic":
        return fit.predict(Xall, np.zeros(y.size) if Xall is None else None) if Xall is not None else \
            np.full(y.size, float(special.expit(fit.intercept)))
    eff = fit.cluster_effect
    if kind == "fixed":
        eff = np.clip(eff, -15, 15)
        fit = dataclasses.replace(fit, cluster_effect=eff)
    return fit.predict(Xall if Xall is not None else None, clusters) if Xall is not None else \
        fit.predict(None, clusters)


def _imputed_values(y: np.ndarray, m: np.ndarray, delta: float) -> np.ndarray:
    v = y.copy()
    miss = np.isnan(y)
    v[miss] = special.expit(special.logit(np.clip(m[miss], 1e-12, 1 - 1e-12)) + delta)
    return v


def sensitivity_delta(correct: npt.ArrayLike, clusters: npt.ArrayLike | None = None, *,
                      correct_b: npt.ArrayLike | None = None, features: npt.ArrayLike | None = None,
                      deltas: npt.ArrayLike | None = None, apply_to: Literal["a", "b", "both"] = "a",
                      kind: PropensityKind = "random", se: Literal["iid", "CR1", "CR2"] = "CR1",
                      alpha: float = 0.05) -> pd.DataFrame:
    """Delta-adjusted MNAR sensitivity analysis for one model's accuracy or a two-model difference.

    Under MAR, a missing answer is correct with the probability ``m(x, cluster)`` that a comparable
    *answered* item is (a random-intercept logistic outcome model fitted on the answered items).
    The MNAR departure shifts the non-responders' log-odds of being correct by ``delta``:
    ``logit P(Y = 1 | missing) = logit m + delta``. ``delta < 0`` says the unanswered items would
    more often have been wrong (refusing hard questions). The full-data accuracy is the mean of
    the observed outcomes and the imputed probabilities; its interval is the cluster-robust
    interval of that per-item mean (it treats the outcome model as known). ``delta = 0`` is the
    MAR outcome-model estimate, close to IPW.

    With ``correct_b`` the quantity is the paired difference ``A - B`` and ``apply_to`` says whose
    missing answers are shifted.

    Paper: [MISSING].

    Parameters
    ----------
    correct : (n,) array
        Model A's outcomes (NaN = missing).
    clusters : (n,) labels, optional
    correct_b : (n,) array, optional
        Model B's outcomes on the same items.
    features : (n, k), optional
        Outcome-model features.
    deltas : array, optional
        Log-odds shifts to evaluate (default: 25 values from -3 to 3).
    apply_to : {"a", "b", "both"}
    kind : {"logistic", "fixed", "random"}
        Outcome model.
    se : {"iid", "CR1", "CR2"}
    alpha : float

    Returns
    -------
    DataFrame
        One row per ``delta``: ``delta, estimate, se, ci_low, ci_high``; ``attrs`` records the
        setting (``quantity``, ``apply_to``).

    Examples
    --------
    >>> import evalkit as ek
    >>> d = ek.simulate_clustered(n_clusters=20, cluster_size=30, mean=0.6, icc=0.2, rng=1, beta_x=1.0)
    >>> d = ek.simulate_missing(d, mechanism="mar_cluster", response_rate=0.8, strength=1.5, rng=2)
    >>> t = sensitivity_delta(d["correct"], d["cluster"], features=d[["x"]], deltas=[-1.0, 0.0, 1.0])
    >>> t["estimate"].round(3).tolist()
    [0.536, 0.576, 0.617]

    Taught in ``notebooks/03.4-missing-responses-claims-widths-and-mnar.ipynb`` and
    ``04.3-missing-reasons-and-a-tipping-point.ipynb``.
    """
    check_alpha(alpha)
    if deltas is not None:
        as_float_vector(deltas, "deltas")
    ya, obs_a, clus = _prep(correct, clusters)
    for name, yy in (("correct", ya), ("correct_b", None if correct_b is None else _prep(correct_b, clusters)[0])):
        seen = None if yy is None else yy[~np.isnan(yy)]
        if seen is not None and seen.size and (seen == seen[0]).all() and yy is not None and np.isnan(yy).any():
            warn(f"{name}: every observed outcome is {seen[0]:g}, so the outcome model predicts {seen[0]:g} for "
                 "every missing item and no shift delta on the logit scale moves it; this analysis carries no "
                 "information about the missing answers (report missing_bounds instead)",
                 category=DegenerateDataWarning)
    ma = _outcome_predictions(ya, clus, features, kind) if not obs_a.all() else ya
    yb = mb = None
    if correct_b is not None:
        yb, obs_b, _ = _prep(correct_b, clusters)
        if yb.shape != ya.shape:
            raise EvalkitInputError("correct", "correct and correct_b must cover the same items")
        mb = _outcome_predictions(yb, clus, features, kind) if not obs_b.all() else yb
    if apply_to not in ("a", "b", "both"):
        raise EvalkitInputError("apply_to", "apply_to must be 'a', 'b' or 'both'")
    rows = []
    grid = np.linspace(-3.0, 3.0, 25) if deltas is None else np.asarray(deltas, dtype=float)
    for d in grid:
        da = d if apply_to in ("a", "both") else 0.0
        va = _imputed_values(ya, ma, da)
        if yb is None:
            v = va
        else:
            db = d if apply_to in ("b", "both") else 0.0
            v = va - _imputed_values(yb, mb, db)  # type: ignore[arg-type]
        est = mean_estimate(v, clus, se=se, alpha=alpha, binary=False)
        rows.append({"delta": float(d), "estimate": est.estimate, "se": est.se, "ci_low": est.ci_low,
                     "ci_high": est.ci_high})
    out = pd.DataFrame(rows)
    out.attrs.update(quantity="accuracy" if yb is None else "difference", apply_to=apply_to, se=se, alpha=alpha)
    return out


def sensitivity_tipping_point(table: pd.DataFrame, *, reference: float | None = None,
                              criterion: Literal["interval", "estimate"] = "interval") -> dict[str, Any]:
    """The smallest shifts ``delta`` (negative and positive) at which the conclusion changes.

    The conclusion at ``delta`` compares the result with ``reference`` (default 0 for a
    difference, required for an accuracy, e.g. a competitor's score or a release threshold):
    with ``criterion="interval"`` it is "above" (``ci_low > reference``), "below"
    (``ci_high < reference``) or "undecided"; with ``"estimate"`` it is the side of the point
    estimate. The tipping points are found by linear interpolation between grid values, walking
    away from ``delta = 0``.

    Paper: [MISSING].

    Parameters
    ----------
    table : DataFrame
        Output of :func:`sensitivity_delta` (must contain ``delta = 0`` or bracket it).
    reference : float, optional
    criterion : {"interval", "estimate"}

    Returns
    -------
    dict
        ``conclusion_at_0``, ``delta_low`` (the largest negative delta that flips it, or None),
        ``delta_high`` (the smallest positive one, or None), ``reference``, ``criterion``.
    """
    check_table(table, "table", ("delta", "estimate", "ci_low", "ci_high"), source="sensitivity_delta")
    if reference is None:
        if table.attrs.get("quantity") == "accuracy":
            raise EvalkitInputError(
                "reference", "for one model's accuracy give reference= (the value the conclusion is about)")
        reference = 0.0
    if criterion not in ("interval", "estimate"):
        raise EvalkitInputError("criterion", "criterion must be 'interval' or 'estimate'")
    t = table.sort_values("delta").reset_index(drop=True)
    d = t["delta"].to_numpy(dtype=float)
    if not (d.min() <= 0 <= d.max()):
        raise EvalkitInputError("table", "the table's delta grid must include 0 (or bracket it); rerun "
                                         "sensitivity_delta with deltas around 0")

    def side(lo: float, est: float, hi: float) -> str:
        if criterion == "estimate":
            return "above" if est > reference else "below"
        return "above" if lo > reference else ("below" if hi < reference else "undecided")

    cols = {c: t[c].to_numpy(dtype=float) for c in ("ci_low", "estimate", "ci_high")}
    at0 = {c: float(np.interp(0.0, d, v)) for c, v in cols.items()}
    c0 = side(at0["ci_low"], at0["estimate"], at0["ci_high"])

    def crossing(order: np.ndarray) -> float | None:
        prev_d, prev = 0.0, at0
        for i in order:
            cur = {c: float(cols[c][i]) for c in cols}
            if side(cur["ci_low"], cur["estimate"], cur["ci_high"]) != c0:
                key = {"above": "ci_low", "below": "ci_high"}.get(c0, None) if criterion == "interval" else "estimate"
                if key is None:  # undecided at 0: the bound that crossed the reference
                    key = "ci_low" if cur["ci_low"] > reference else "ci_high"
                a, b = prev[key] - reference, cur[key] - reference
                frac = a / (a - b) if a != b else 1.0
                return float(prev_d + frac * (d[i] - prev_d))
            prev_d, prev = float(d[i]), cur
        return None

    neg = np.flatnonzero(d < 0)[::-1]
    pos = np.flatnonzero(d > 0)
    return {"conclusion_at_0": c0, "delta_low": crossing(neg), "delta_high": crossing(pos),
            "reference": float(reference), "criterion": criterion}


def sensitivity_plot(table: pd.DataFrame, *, reference: float | None = None, tipping: dict | None = None,
                     ax: Any = None, label: str | None = None, scale: float = 100.0) -> Any:
    """Plot the estimate and its interval against ``delta`` with the reference and tipping points.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`sensitivity_delta`.
    reference : float, optional
        Horizontal line (0 for differences by default).
    tipping : dict, optional
        Output of :func:`sensitivity_tipping_point`; its deltas are marked.
    ax : matplotlib Axes, optional
    label : str, optional
    scale : float
        Multiply the y values (100 = accuracy points).

    Returns
    -------
    matplotlib Axes
    """
    check_table(table, "table", ("delta", "estimate", "ci_low", "ci_high"), source="sensitivity_delta")
    check_positive(scale, "scale")
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    d = table["delta"].to_numpy()
    ax.fill_between(d, table["ci_low"] * scale, table["ci_high"] * scale, alpha=0.25, label="95% interval")
    ax.plot(d, table["estimate"] * scale, lw=2, label=label or "estimate")
    if reference is None and table.attrs.get("quantity") == "difference":
        reference = 0.0
    if reference is not None:
        ax.axhline(reference * scale, color="k", lw=0.8, ls="--")
    if tipping:
        for key in ("delta_low", "delta_high"):
            if tipping.get(key) is not None:
                ax.axvline(tipping[key], color="C3", lw=1, ls=":")
                ax.annotate(f"tips at {tipping[key]:.2f}", (tipping[key], ax.get_ylim()[1]), fontsize=8,
                            ha="center", va="top", color="C3")
    ax.axvline(0, color="grey", lw=0.6)
    ax.set_xlabel(r"$\delta$: shift of the log-odds of a missing answer being correct")
    ax.set_ylabel("difference (points)" if table.attrs.get("quantity") == "difference" else "accuracy (points)")
    ax.legend(loc="best", fontsize=8)
    return ax
