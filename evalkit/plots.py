"""One plotting style and one colour per estimator for every evalkit figure.

Functions draw on a matplotlib ``Axes`` (created if not given) and return it, so notebooks can
compose them. Colours come from one fixed mapping, :data:`ESTIMATOR_COLORS`: an estimator (or a
role such as ``truth``) has the same colour in every figure of every notebook, and two different
estimators never share a colour. :func:`plot_color` looks a name up; names that are not
registered get a colour derived from the name itself (so still the same in every notebook), and
should be added to the mapping when they appear in a lesson.

The style (:func:`plot_style`) is sized for a projector: 12-point text, thick lines, 110 dpi on
screen and 150 dpi when saved, constrained layout so that titles and labels do not overlap.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, cast

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._checks import as_float_vector, check_positive, check_range, check_table
from .errors import EvalkitInputError, EvalkitInputTypeError

__all__ = [
    "ESTIMATOR_COLORS",
    "COLOR_ALIASES",
    "PALETTE",
    "plot_color",
    "plot_style",
    "plot_intervals",
    "plot_coverage",
    "plot_coverage_designs",
    "plot_irt_recovery",
    "plot_mc_errors",
]

# Okabe–Ito and Paul Tol's colour-blind-safe palettes; every value below is distinct (tested).
ESTIMATOR_COLORS: dict[str, str] = {
    # roles
    "truth": "#222222",
    "neutral": "#777777",
    "bound": "#AAAAAA",
    "accent": "#AA4499",
    # interval kinds for a mean (notebook 00 and every clustered interval)
    "iid": "#D55E00",                # vermillion: the naive interval is always the warning colour
    "CR0": "#DDCC77",
    "CR1": "#0072B2",
    "CR2": "#009E73",
    "by category": "#CC79A7",        # cluster-robust, clustered by MMLU-Pro's 14 categories
    "cluster bootstrap": "#882255",
    # missing responses (notebooks 02-04)
    "cc": "#E69F00",                 # complete case
    "ipw": "#56B4E9",                # IPW, plain logistic propensity
    "ipw_ri": "#332288",             # IPW, random-intercept propensity
    # item response theory (notebooks 05.1-05.4)
    "cbmm": "#117733",
    "cbmm plain": "#88CCEE",
    "lbfgs": "#CC6677",
    "mirt": "#999933",
    "scratch": "#44AA99",
}
"""Estimator (or role) -> colour; no two entries share a colour. Other spellings of the same
estimator are in :data:`COLOR_ALIASES`; use :func:`plot_color` to look any name up."""

COLOR_ALIASES: dict[str, str] = {
    "cluster": "CR1",
    "cr1, t(m-1)": "CR1",
    "cr2, satterthwaite": "CR2",
    "by source": "CR2",              # the source clustering is always shown with CR2
    "complete case": "cc",
    "ipw logistic": "ipw",
    "ipw random intercept": "ipw_ri",
    "missing as wrong": "bound",
    "missing as right": "bound",
    "bounds": "bound",
    "cbmm accelerated": "cbmm",
    "cbmm, accelerated": "cbmm",
    "cbmm, plain": "cbmm plain",
    "l-bfgs-b": "lbfgs",
}
"""Lower-case name prefixes -> a key of :data:`ESTIMATOR_COLORS` (evalkit's long report names,
such as ``"complete case, CR1"``, start with one of these)."""

_RESERVE = ["#661100", "#6699CC", "#997700", "#1F77B4", "#8C564B", "#BCBD22", "#7F7F7F", "#E377C2"]

PALETTE: dict[str, str] = {**ESTIMATOR_COLORS, "cluster": ESTIMATOR_COLORS["CR1"]}
"""The mapping under its older name, with the older key ``"cluster"`` (kept for existing code)."""


def plot_color(name: str) -> str:
    """The fixed colour of an estimator or role, the same in every figure and notebook.

    Exact keys of :data:`ESTIMATOR_COLORS` come first; then evalkit's long report names
    (``"complete case, CR1"`` is coloured as complete case, ``"IPW random intercept, CR2"`` as
    the random-intercept IPW); then the interval kind at the end of a name (``", CR2"``). A name
    that matches nothing gets a colour computed from its text (stable across runs and notebooks).

    Parameters
    ----------
    name : str
        The estimator's label as it appears in a legend.

    Returns
    -------
    str
        A hex colour.

    Examples
    --------
    >>> plot_color("iid")
    '#D55E00'
    >>> plot_color("IPW random intercept, CR2") == plot_color("ipw_ri")
    True
    >>> plot_color("my new estimator") == plot_color("my new estimator")
    True

    Used in every notebook; notebook 00.1 introduces it.
    """
    if not isinstance(name, str):
        raise EvalkitInputTypeError(
            "name", f"name must be a str (a legend label), got {type(name).__name__} {name!r}; a None or NaN label "
            "would silently get the colour of its text")
    key = name
    if key in ESTIMATOR_COLORS:
        return ESTIMATOR_COLORS[key]
    low = key.lower()
    for prefix in sorted(COLOR_ALIASES, key=len, reverse=True):
        if low.startswith(prefix):
            return ESTIMATOR_COLORS[COLOR_ALIASES[prefix]]
    tail = key.rsplit(",", 1)[-1].strip()
    if tail in ESTIMATOR_COLORS:
        return ESTIMATOR_COLORS[tail]
    return _RESERVE[zlib.crc32(key.encode()) % len(_RESERVE)]


_RC: dict[str, Any] = {
    "figure.figsize": (8.0, 4.5),
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "figure.constrained_layout.use": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.titlesize": 13,
    "axes.titleweight": "bold",
    "figure.titlesize": 13,
    "figure.titleweight": "bold",
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "legend.frameon": False,
    "font.size": 12,
    "lines.linewidth": 2.0,
    "lines.markersize": 6,
    "savefig.bbox": "tight",
}


def plot_style() -> None:
    """Apply evalkit's matplotlib style, sized for a projector (call once at the top of a notebook).

    Examples
    --------
    >>> import matplotlib
    >>> plot_style()
    >>> matplotlib.rcParams["font.size"]
    12.0
    """
    # matplotlib >= 3.11 types rcParams' keys as a Literal of the known names; ours are all known
    mpl.rcParams.update(cast(Any, _RC))


def _tight(fig: Figure) -> None:
    """``fig.tight_layout()``, unless the figure already has a layout engine (:func:`plot_style`
    turns on constrained layout, and switching engines warns)."""
    if fig.get_layout_engine() is None:
        fig.tight_layout()


def _axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _dodged(table: pd.DataFrame, group: str, names: Sequence[Any], at: str, ats: Sequence[Any],
            half_width: float) -> Iterator[tuple[Any, np.ndarray, pd.DataFrame]]:
    """Each ``group`` value of ``table`` in turn, its rows indexed by ``at`` in the order ``ats``.

    Yields ``(name, positions, rows)``: ``positions`` are ``0, 1, ...`` (one per ``ats``) shifted by
    the group's offset, the groups spread evenly over ``[-half_width, half_width]`` so that they sit
    side by side at each position (one group: no shift).
    """
    offsets = np.linspace(-half_width, half_width, len(names)) if len(names) > 1 else np.zeros(1)
    for name, off in zip(names, offsets, strict=True):
        yield name, np.arange(len(ats)) + off, table[table[group] == name].set_index(at).reindex(ats)


def _titled_legend(ax: Axes, title: str | None, loc: Literal["best", "lower left"] | None = None) -> Axes:
    """The common end of a plot: the optional title and the legend (at ``loc``, else matplotlib's default)."""
    if title:
        ax.set_title(title)
    if loc is None:
        ax.legend()
    else:
        ax.legend(loc=loc)
    return ax


def plot_intervals(table: pd.DataFrame, *, label: str, methods: Sequence[str] | None = None,
                   order: Sequence[str] | None = None,
                   colors: Mapping[str, str] | None = None, truth: float | None = None,
                   ax: Axes | None = None, title: str | None = None,
                   xlabel: str = "accuracy (proportion correct)") -> Axes:
    """Forest plot of point estimates and intervals, one row per ``label`` and one offset per method.

    Parameters
    ----------
    table : DataFrame
        Long format with columns ``label``, ``method``, ``estimate``, ``ci_low``, ``ci_high``.
    label : str
        The column naming rows (for example ``"model"``: the rows are then labelled by model).
    methods : sequence of str, optional
        Methods to draw, in order (default: all, in order of appearance).
    order : sequence of str, optional
        Row labels to draw, top to bottom (default: all, in order of appearance).
    colors : mapping, optional
        Method -> colour, overriding :func:`plot_color` (avoid it: the fixed mapping keeps one
        colour per estimator across notebooks).
    truth : float, optional
        Draw a vertical reference line.
    xlabel : str
        The horizontal axis label, in words with units.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        When a needed column is missing.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"model": ["a", "a"], "method": ["iid", "CR2"], "estimate": [0.5, 0.5],
    ...                   "ci_low": [0.45, 0.4], "ci_high": [0.55, 0.6]})
    >>> ax = plot_intervals(t, label="model")
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['iid', 'CR2']
    >>> plt.close("all")

    Notebook 00 (section 5) uses it for the MMLU-Pro leaderboard.
    """
    need = {label, "method", "estimate", "ci_low", "ci_high"}
    if not need <= set(table.columns):
        raise EvalkitInputError("table", f"table needs columns {sorted(need)}")
    methods = list(pd.unique(table["method"])) if methods is None else list(methods)
    rows = list(pd.unique(table[label])) if order is None else list(order)
    ax = _axes(ax, (8.0, max(3.0, 0.36 * len(rows) + 1.2)))
    for meth, pos, sub in _dodged(table, "method", methods, label, rows, 0.25):
        color = (colors or {}).get(meth) or plot_color(str(meth))
        ax.errorbar(sub["estimate"], pos, xerr=[sub["estimate"] - sub["ci_low"], sub["ci_high"] - sub["estimate"]],
                    fmt="o", ms=4, lw=2, capsize=0, color=color, label=meth)
    if truth is not None:
        ax.axvline(truth, color=plot_color("truth"), lw=1, ls="--", label="truth")
    ax.set_yticks(np.arange(len(rows)), [str(r) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    return _titled_legend(ax, title, "best")


def _same_as(y: np.ndarray, drawn: dict[str, np.ndarray]) -> str | None:
    for name, other in drawn.items():
        if other.shape == y.shape and np.allclose(other, y, atol=1e-12, equal_nan=True):
            return name
    return None


def plot_coverage(summary: pd.DataFrame, *, x: str, nominal: float = 0.95, ax: Axes | None = None,
                  title: str | None = None, xlabel: str | None = None) -> Axes:
    """Coverage against a design parameter, one line per estimator, with ±2 Monte Carlo SE bands.

    A line that coincides with one drawn before it (CR1 and CR2 with equal cluster sizes, for
    example) is drawn dashed on top of it and its legend entry says so, so that no estimator is
    hidden.

    Parameters
    ----------
    summary : DataFrame
        Columns ``x``, ``estimator``, ``coverage``, ``coverage_mcse`` (the reset-index output of
        :func:`evalkit.mc_summarise`).
    x : str
        The design column on the horizontal axis.
    nominal : float
        The nominal level, drawn as a reference line.
    xlabel : str, optional
        The horizontal axis label in words (default: the column name).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"icc": [0.0, 0.1] * 2, "estimator": ["iid", "iid", "CR1", "CR1"],
    ...                   "coverage": [0.95, 0.8, 0.95, 0.8], "coverage_mcse": [0.01] * 4})
    >>> ax = plot_coverage(s, x="icc", xlabel="intra-class correlation")
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['iid', 'CR1\\n(dashed: the same as iid)']
    >>> plt.close("all")

    Notebook 00 (section 4) draws coverage against the ICC and against the number of clusters with it.
    """
    check_table(summary, "summary", (x, "estimator", "coverage", "coverage_mcse"), source="mc_summarise")
    check_range(nominal, "nominal", 0.0, 1.0, closed="neither")
    ax = _axes(ax)
    drawn: dict[str, np.ndarray] = {}
    for name, g in summary.groupby("estimator", sort=False):
        g = g.sort_values(x)
        y = g["coverage"].to_numpy(dtype=float)
        twin = _same_as(y, drawn)
        label = str(name) if twin is None else f"{name}\n(dashed: the same as {twin})"
        color = plot_color(str(name))
        ax.plot(g[x], y, "o--" if twin else "o-", ms=5, label=label, color=color)
        ax.fill_between(g[x], y - 2 * g["coverage_mcse"], y + 2 * g["coverage_mcse"], color=color, alpha=0.15, lw=0)
        drawn[str(name)] = y
    ax.axhline(nominal, color=plot_color("truth"), lw=1, ls="--")
    ax.set_ylim(min(0.4, float(summary["coverage"].min()) - 0.05), 1.0)
    ax.set_xlabel(xlabel or x)
    ax.set_ylabel(f"coverage of the {nominal:.0%} interval")
    return _titled_legend(ax, title)


DESIGN_LABELS: dict[str, str] = {
    "balanced": "balanced\n(equal sizes)",
    "skewed": "skewed\n(log-normal sizes)",
    "dominant": "one dominant\ncluster",
}


def plot_coverage_designs(summary: pd.DataFrame, *, nominal: float = 0.95, ax: Axes | None = None,
                          title: str | None = None, legend: bool = True) -> Axes:
    """Coverage of each interval method in each cluster-size design, with ±2 Monte Carlo SE bars.

    Parameters
    ----------
    summary : DataFrame
        Columns ``design``, ``estimator``, ``coverage``, ``coverage_mcse`` (one row per pair).
    nominal : float
        Nominal level, drawn as a dashed line.
    legend : bool
        Draw the legend outside the axes, to their right (False: none, e.g. when the caller draws
        one legend for a whole figure).

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        When a needed column is missing.

    Notes
    -----
    The vertical axis runs to 1.04, so that a coverage of 100% is drawn above the frame, not on it,
    and starts at 0.8 unless a point or its bar goes lower (then at the next lower multiple of 0.2),
    so that it moves in few, visible steps between settings.

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"design": ["balanced", "balanced", "dominant", "dominant"],
    ...                   "estimator": ["iid", "CR2", "iid", "CR2"], "coverage": [0.7, 0.94, 0.6, 0.9],
    ...                   "coverage_mcse": [0.01, 0.005, 0.01, 0.007]})
    >>> ax = plot_coverage_designs(s)
    >>> len(ax.containers)
    2
    >>> plt.close("all")

    Notebook 00 (section 4) draws it through :func:`evalkit.widget_coverage_redraw`.
    """
    need = {"design", "estimator", "coverage", "coverage_mcse"}
    if not need <= set(summary.columns):
        raise EvalkitInputError("summary", f"summary needs columns {sorted(need)}")
    ax = _axes(ax)
    designs = list(pd.unique(summary["design"]))
    names = list(pd.unique(summary["estimator"]))
    for name, pos, g in _dodged(summary, "estimator", names, "design", designs, 0.22):
        ax.errorbar(pos, g["coverage"], yerr=2 * g["coverage_mcse"], fmt="o", ms=7,
                    lw=2, capsize=4, color=plot_color(str(name)), label=str(name), clip_on=False)
    ax.axhline(nominal, color=plot_color("truth"), lw=1, ls="--", label=f"nominal {nominal:.0%}")
    ax.set_xticks(np.arange(len(designs)), [DESIGN_LABELS.get(str(d), str(d)) for d in designs])
    ax.set_xlim(-0.6, len(designs) - 0.4)
    lo = float(np.nanmin(summary["coverage"] - 2 * summary["coverage_mcse"]))
    bottom = 0.8 if lo >= 0.81 else max(0.0, 0.2 * np.floor((lo - 0.01) / 0.2))
    ax.set_ylim(bottom, 1.04)
    ax.set_yticks([t for t in np.arange(0.0, 1.0001, 0.05 if bottom >= 0.8 else 0.1) if t >= bottom - 1e-9])
    ax.set_ylabel(f"coverage of the {nominal:.0%} interval\n(bars: ±2 Monte Carlo SE)")
    ax.set_xlabel("cluster sizes")
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax


def plot_irt_recovery(truth: Mapping[str, Any], theta: np.ndarray, b: np.ndarray, *,
                      axes: Sequence[Axes] | None = None,
                      limits: Sequence[tuple[float, float]] | None = None) -> Sequence[Axes]:
    """Fitted against true abilities and easiness of a simulated 2PL fit, with the identity line.

    Parameters
    ----------
    truth : mapping
        The ``truth`` dict of :func:`evalkit.simulate_2pl` (``theta``, ``b``, ``sigma``).
    theta : (n_models,) array
        Fitted abilities.
    b : (n_items,) array
        Fitted easiness (NaN for items the fit excluded; they are not drawn).
    axes : two Axes, optional
    limits : two (low, high) pairs, optional
        Fixed axis limits of the ability and the easiness panel (both axes of each). Points outside
        are drawn on the edge as open triangles, and ``_irt_recovery_outside`` counts them.
        Default: each panel spans its points.

    Returns
    -------
    list of two Axes

    Examples
    --------
    >>> import numpy as np
    >>> truth = {"theta": np.array([-1.0, 1.0]), "b": np.array([0.0, 1.0, np.nan])}
    >>> ax = plot_irt_recovery(truth, np.array([-0.9, 1.1]), np.array([0.1, 0.8, np.nan]))
    >>> ax[0].get_xlabel()
    'true ability θ (logit scale)'
    >>> plt.close("all")

    Notebook ``05.2-irt-recovery-and-standard-errors`` (its widget) draws it through
    :func:`evalkit.widget_irt_redraw`.
    """
    if not isinstance(truth, Mapping) or not {"theta", "b"} <= set(truth):
        keys = sorted(map(str, truth)) if isinstance(truth, Mapping) else None
        raise EvalkitInputError("truth", "truth must be the truth dict of simulate_2pl (with 'theta' and 'b'), got "
                                         f"{type(truth).__name__} with keys {keys}")
    t_true = as_float_vector(truth["theta"], "truth")
    b_true = as_float_vector(truth["b"], "truth", allow_nan=True)
    t_fit = as_float_vector(theta, "theta", allow_nan=True)
    b_fit = as_float_vector(b, "b", allow_nan=True)
    if t_fit.size != t_true.size:
        raise EvalkitInputError("theta", f"theta has {t_fit.size} abilities but the truth has {t_true.size}")
    if b_fit.size != b_true.size:
        raise EvalkitInputError("b", f"b has {b_fit.size} easiness values but the truth has {b_true.size}")
    if axes is None:
        _, ax_arr = plt.subplots(1, 2, figsize=(9.0, 4.0))
        axes = list(ax_arr)
    ok = np.isfinite(b_fit) & np.isfinite(b_true)
    kept = np.isfinite(t_fit) & np.isfinite(t_true)
    panels = [(axes[0], t_true[kept], t_fit[kept], "ability θ", 14), (axes[1], b_true[ok], b_fit[ok], "easiness b", 6)]
    for j, (ax, xs, ys, what, size) in enumerate(panels):
        if limits is None:
            lim = [float(np.nanmin([xs.min(), ys.min()])), float(np.nanmax([xs.max(), ys.max()]))]
            inside = np.ones(xs.size, dtype=bool)
        else:
            lim = [float(limits[j][0]), float(limits[j][1])]
            inside = (xs >= lim[0]) & (xs <= lim[1]) & (ys >= lim[0]) & (ys <= lim[1])
        ax.scatter(xs[inside], ys[inside], s=size, alpha=0.6, color=plot_color("cbmm"), label="cBMM fit")
        if not inside.all():
            ax.scatter(np.clip(xs[~inside], lim[0], lim[1]), np.clip(ys[~inside], lim[0], lim[1]), s=40, marker="^",
                       facecolors="none", edgecolors=plot_color("accent"), clip_on=False,
                       label="outside the axes (at the edge)")
        ax.plot(lim, lim, color=plot_color("truth"), lw=1, ls="--", label="fitted = true")
        if limits is not None:
            ax.set_xlim(*lim)
            ax.set_ylim(*lim)
        ax.set_xlabel(f"true {what} (logit scale)")
        ax.set_ylabel(f"fitted {what} (logit scale)")
    axes[0].legend(loc="upper left")
    if limits is not None and len(axes[1].collections) > 1:
        axes[1].legend(loc="upper left")
    return axes


def _irt_recovery_outside(truth: Mapping[str, Any], theta: np.ndarray, b: np.ndarray,
                         limits: Sequence[tuple[float, float]]) -> tuple[int, int]:
    """How many abilities and easiness values :func:`plot_irt_recovery` draws on the edge at ``limits``.

    A point is outside when its true or its fitted value leaves the panel's ``(low, high)``;
    excluded (NaN) values are not counted.

    Examples
    --------
    >>> import numpy as np
    >>> truth = {"theta": np.array([-1.0, 1.0]), "b": np.array([0.0, 1.0, 0.5])}
    >>> _irt_recovery_outside(truth, np.array([-0.9, 1.1]), np.array([0.1, 15.0, np.nan]), [(-4, 4), (-5, 5)])
    (0, 1)
    """
    counts = []
    for (lo, hi), true, fit in ((limits[0], truth["theta"], theta), (limits[1], truth["b"], b)):
        t, f = np.asarray(true, float), np.asarray(fit, float)
        ok = np.isfinite(t) & np.isfinite(f)
        counts.append(int(np.sum(ok & ((t < lo) | (t > hi) | (f < lo) | (f > hi)))))
    return counts[0], counts[1]


def plot_mc_errors(runs: pd.DataFrame, *, ax: Axes | None = None, scale: float = 100.0,
                   title: str | None = None) -> Axes:
    """Box plot of estimation errors ``estimate - truth`` per estimator (from :func:`evalkit.mc_run`).

    Parameters
    ----------
    runs : DataFrame
        :func:`evalkit.mc_run` output (columns ``estimator``, ``estimate``, ``truth``).
    scale : float
        Multiplier of the errors (100: percentage points).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"estimator": ["cc"] * 3 + ["ipw"] * 3, "estimate": [0.5, 0.6, 0.55, 0.6, 0.62, 0.58],
    ...                      "truth": [0.6] * 6})
    >>> ax = plot_mc_errors(runs)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['cc', 'ipw']
    >>> plt.close("all")
    """
    check_table(runs, "runs", ("estimator", "estimate", "truth"), source="mc_run")
    check_positive(scale, "scale")
    ax = _axes(ax)
    names = list(pd.unique(runs["estimator"]))
    groups = runs.groupby("estimator", sort=False)
    data = [((g["estimate"] - g["truth"]) * scale).dropna().to_numpy() for _, g in groups]
    box = ax.boxplot(data, orientation="horizontal", showfliers=False, patch_artist=True)
    for patch, name in zip(box["boxes"], names, strict=True):
        patch.set_facecolor(plot_color(str(name)))
        patch.set_alpha(0.6)
    ax.set_yticks(np.arange(1, len(names) + 1), [str(n) for n in names])
    ax.axvline(0, color=plot_color("truth"), lw=1, ls="--")
    ax.set_xlabel("estimation error (percentage points)" if scale == 100 else "estimation error")
    if title:
        ax.set_title(title)
    return ax
