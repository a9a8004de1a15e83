"""One plotting style for every evalkit figure.

Functions draw on a matplotlib ``Axes`` (created if not given) and return it, so notebooks can
compose them. Colours come from one palette: :data:`PALETTE` maps the roles evalkit uses
(``iid``, ``cluster``, ``ipw``, ``truth``...) to fixed colours, so the same idea has the same colour
in every notebook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

__all__ = ["PALETTE", "plot_style", "plot_intervals", "plot_coverage", "plot_mc_errors"]

PALETTE: dict[str, str] = {
    "iid": "#d95f02",
    "cluster": "#1b9e77",
    "CR0": "#66a61e",
    "CR1": "#1b9e77",
    "CR2": "#7570b3",
    "cc": "#7570b3",
    "ipw": "#1b9e77",
    "bound": "#999999",
    "truth": "#222222",
    "accent": "#e7298a",
    "neutral": "#666666",
}

_RC: dict[str, Any] = {
    "figure.figsize": (7.0, 4.0),
    "figure.dpi": 100,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "legend.frameon": False,
    "font.size": 10,
    "savefig.bbox": "tight",
}


def plot_style() -> None:
    """Apply evalkit's matplotlib style (call once at the top of a notebook)."""
    # matplotlib >= 3.11 types rcParams' keys as a Literal of the known names; ours are all known
    mpl.rcParams.update(cast(Any, _RC))


def _axes(ax: Axes | None, figsize: tuple[float, float] | None = None) -> Axes:
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_intervals(table: pd.DataFrame, *, label: str, methods: Sequence[str] | None = None,
                   order: Sequence[str] | None = None,
                   colors: Mapping[str, str] | None = None, truth: float | None = None,
                   ax: Axes | None = None, title: str | None = None, xlabel: str = "accuracy") -> Axes:
    """Forest plot of point estimates and intervals, one row per ``label`` and one offset per method.

    Parameters
    ----------
    table : DataFrame
        Long format with columns ``label``, ``method``, ``estimate``, ``ci_low``, ``ci_high``.
    label : str
        The column naming rows (for example ``"model"``).
    methods : sequence of str, optional
        Methods to draw, in order (default: all, in order of appearance).
    order : sequence of str, optional
        Row labels to draw, top to bottom (default: all, in order of appearance).
    colors : mapping, optional
        Method -> colour (default: :data:`PALETTE` where the method is a key, else a cycle).
    truth : float, optional
        Draw a vertical reference line.
    """
    need = {label, "method", "estimate", "ci_low", "ci_high"}
    if not need <= set(table.columns):
        raise ValueError(f"table needs columns {sorted(need)}")
    methods = list(pd.unique(table["method"])) if methods is None else list(methods)
    rows = list(pd.unique(table[label])) if order is None else list(order)
    ax = _axes(ax, (7.0, max(2.5, 0.28 * len(rows) + 1)))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    offsets: np.ndarray | list[float] = np.linspace(-0.25, 0.25, len(methods)) if len(methods) > 1 else [0.0]
    for k, (meth, off) in enumerate(zip(methods, offsets, strict=True)):
        sub = table[table["method"] == meth].set_index(label).reindex(rows)
        pos = np.arange(len(rows)) + off
        color = (colors or {}).get(meth) or PALETTE.get(meth) or cycle[k % len(cycle)]
        ax.errorbar(sub["estimate"], pos, xerr=[sub["estimate"] - sub["ci_low"], sub["ci_high"] - sub["estimate"]],
                    fmt="o", ms=3, lw=1.2, capsize=0, color=color, label=meth)
    if truth is not None:
        ax.axvline(truth, color=PALETTE["truth"], lw=1, ls="--", label="truth")
    ax.set_yticks(np.arange(len(rows)), rows)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    return ax


def plot_coverage(summary: pd.DataFrame, *, x: str, nominal: float = 0.95, ax: Axes | None = None,
                  title: str | None = None) -> Axes:
    """Coverage against a design parameter, one line per estimator, with ±2 Monte Carlo SE bands.

    Parameters
    ----------
    summary : DataFrame
        Columns ``x``, ``estimator``, ``coverage``, ``coverage_mcse`` (the reset-index output of
        :func:`evalkit.mc_summarise`).
    x : str
        The design column on the horizontal axis.
    nominal : float
        The nominal level, drawn as a reference line.
    """
    ax = _axes(ax)
    for name, g in summary.groupby("estimator", sort=False):
        g = g.sort_values(x)
        color = PALETTE.get(str(name))
        line, = ax.plot(g[x], g["coverage"], "o-", ms=4, label=str(name), color=color)
        ax.fill_between(g[x], g["coverage"] - 2 * g["coverage_mcse"], g["coverage"] + 2 * g["coverage_mcse"],
                        color=line.get_color(), alpha=0.15, lw=0)
    ax.axhline(nominal, color=PALETTE["truth"], lw=1, ls="--")
    ax.set_ylim(min(0.4, float(summary["coverage"].min()) - 0.05), 1.0)
    ax.set_xlabel(x)
    ax.set_ylabel("coverage of the 95% interval")
    if title:
        ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def plot_mc_errors(runs: pd.DataFrame, *, ax: Axes | None = None, scale: float = 100.0,
                   title: str | None = None) -> Axes:
    """Box plot of estimation errors ``estimate - truth`` per estimator (from :func:`evalkit.mc_run`)."""
    ax = _axes(ax)
    names = list(pd.unique(runs["estimator"]))
    groups = runs.groupby("estimator", sort=False)
    data = [((g["estimate"] - g["truth"]) * scale).dropna().to_numpy() for _, g in groups]
    ax.boxplot(data, orientation="horizontal", showfliers=False)
    ax.set_yticks(np.arange(1, len(names) + 1), names)
    ax.axvline(0, color=PALETTE["truth"], lw=1, ls="--")
    ax.set_xlabel("error (points)" if scale == 100 else "error")
    if title:
        ax.set_title(title)
    return ax
