"""Thin ipywidgets wiring over pure, tested evalkit functions, and the lessons' widget views.

A widget never computes anything itself: :func:`widget_live` connects controls to a function
``f(**values)`` that draws or prints, through ``ipywidgets.interactive_output``. Notebooks also
call ``f`` once with the defaults, so a headless run (CI, HTML export) still shows the result.

The *redraw* functions here are those ``f``: each computes one small study with evalkit's tested
functions, draws it with :mod:`evalkit.plots` and returns the numbers it drew (so tests can check
them). The matching ``widget_*`` function builds the controls, offering only settings the study
can answer (and within about 2 s per redraw on 2 cores: ``benchmarks/bench_widgets.py``), and
"what to look for" prompts above them.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._checks import _real, check_positive, check_range
from .errors import EvalkitInputError, EvalkitInputTypeError

__all__ = [
    "widget_live",
    "widget_slider",
    "widget_choice",
    "COVERAGE_WIDGET_LIMITS",
    "widget_coverage_redraw",
    "widget_coverage",
    "IRT_WIDGET_LIMITS",
    "widget_irt_redraw",
    "widget_irt",
]


def widget_slider(value: float, lo: float, hi: float, step: float, description: str) -> Any:
    """A float (or int, when all arguments are ints) slider with a readable label.

    Examples
    --------
    >>> widget_slider(10, 2, 50, 1, "clusters").value
    10
    """
    import ipywidgets as w

    lo_, hi_ = _real(lo, "lo"), _real(hi, "hi")
    if not lo_ < hi_:
        raise EvalkitInputError("hi", f"a slider needs lo < hi, got lo={lo!r}, hi={hi!r}")
    step_ = check_positive(step, "step")
    if step_ > hi_ - lo_:
        raise EvalkitInputError("step", f"step={step!r} is larger than the slider's range [{lo}, {hi}]")
    check_range(value, "value", lo_, hi_)
    if not isinstance(description, str):
        raise EvalkitInputTypeError("description", f"description must be a str, got {type(description).__name__}")
    style = {"description_width": "initial"}
    # room for the label *and* a usable track: with a fixed width a long label leaves no track at all
    layout = w.Layout(width=f"{max(320, 8 * len(description) + 260)}px")
    if all(isinstance(v, int) for v in (value, lo, hi, step)):
        return w.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                           continuous_update=False, style=style, layout=layout)
    return w.FloatSlider(value=value, min=lo, max=hi, step=step, description=description,
                         continuous_update=False, style=style, readout_format=".3g", layout=layout)


CHOICE_LABELS: dict[str, str] = {
    "mcar": "missing completely at random (MCAR)",
    "mar": "missing at random given the feature x (MAR)",
    "mar_cluster": "missing at random given the cluster",
    "mnar": "not at random: wrong answers go missing (MNAR)",
    "mnar_item": "not at random, item level (MNAR)",
}
"""Readable labels shown in drop-downs for the code names of :data:`evalkit.MECHANISMS`."""


def widget_choice(options: Sequence[Any], value: Any, description: str,
                  labels: dict[Any, str] | None = None) -> Any:
    """A drop-down menu that shows readable labels and returns the code value.

    ``labels`` maps values to the text shown (default: :data:`CHOICE_LABELS`, then the value itself).
    A yes/no choice (``options`` exactly ``True`` and ``False``) is a checkbox instead, labelled
    ``description``.

    Examples
    --------
    >>> menu = widget_choice(["mcar", "mar_cluster"], "mar_cluster", "mechanism")
    >>> menu.value, menu.label
    ('mar_cluster', 'missing at random given the cluster')
    >>> type(widget_choice([True, False], True, "with replacement")).__name__
    'Checkbox'
    """
    import ipywidgets as w

    opts = list(options) if not isinstance(options, (str, bytes)) else None
    if not opts:
        raise EvalkitInputError("options", f"options must be a non-empty sequence of values, got {options!r}")
    if value not in opts:
        raise EvalkitInputError("value", f"value {value!r} is not one of the options {opts}")
    if len(opts) == 2 and all(isinstance(o, bool) for o in opts) and set(opts) == {True, False}:
        return w.Checkbox(value=bool(value), description=description, indent=False,
                          layout=w.Layout(width=f"{max(160, 9 * len(description) + 40)}px"))
    names = {**CHOICE_LABELS, **(labels or {})}
    return w.Dropdown(options=[(str(names.get(o, o)), o) for o in opts], value=value, description=description,
                      style={"description_width": "initial"})


def widget_live(f: Callable[..., Any], *, prompts: Sequence[str] = (), static_first: bool = False,
                **controls: Any) -> Any:
    """Wire ipywidgets ``controls`` to ``f`` and return the assembled widget.

    Parameters
    ----------
    f : callable
        Called as ``f(**{name: control.value})`` whenever a control changes; it should draw a
        figure (``plt.show()``) or print.
    prompts : sequence of str
        "What to look for" questions shown above the controls.
    static_first : bool
        Draw the default figure into the cell's own output (so that a notebook read without a
        kernel shows it) and remove it at the first move of a control, when the live output area
        takes over: no stale copy of the defaults stays next to the live widget, and the notebook
        needs no separate call of ``f``. False: ``f`` draws into the output area only.
    **controls
        ``name=widget`` pairs; the names are ``f``'s keyword arguments.

    Returns
    -------
    ipywidgets.VBox
        The prompts, the controls and the output area. Display it as the last expression of a cell.

    Raises
    ------
    ValueError
        Without controls.

    Examples
    --------
    >>> import contextlib, io
    >>> seen = []
    >>> with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel the output area prints codes
    ...     box = widget_live(lambda n: seen.append(n), n=widget_slider(3, 1, 5, 1, "n"))
    >>> seen
    [3]
    """
    import ipywidgets as w

    if not controls:
        raise EvalkitInputError(
            "controls", "give at least one control, e.g. icc=widget_slider(0.1, 0, 0.5, 0.05, 'ICC')")
    if static_first:
        out = _live_output_replacing_static(f, controls)
    else:
        out = w.interactive_output(f, controls)
    box = w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap"))
    parts: list[Any] = []
    if prompts:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in prompts)
        parts.append(w.HTML(f"<b>What to look for</b><ul>{items}</ul>"))
    return w.VBox([*parts, box, out])


def _live_output_replacing_static(f: Callable[..., Any], controls: dict[str, Any]) -> Any:
    """An output area for ``f`` whose first drawing goes to the cell output and is erased at the first change."""
    import ipywidgets as w
    from IPython.display import display
    from IPython.utils.capture import capture_output

    out = w.Output()
    with capture_output() as cap:
        f(**{name: c.value for name, c in controls.items()})
    handles = [display(o.data, raw=True, metadata=o.metadata, display_id=True) for o in cap.outputs]
    if cap.stdout:
        handles.append(display({"text/plain": cap.stdout}, raw=True, display_id=True))

    def redraw(_change: Any = None) -> None:
        with out:
            out.clear_output(wait=True)
            f(**{name: c.value for name, c in controls.items()})
        while handles:
            h = handles.pop()
            if h is not None:
                h.update({"text/plain": ""}, raw=True)

    for c in controls.values():
        c.observe(redraw, names="value")
    return out


def _limits_check(values: dict[str, float], limits: dict[str, tuple[float, float, float]], see: str) -> None:
    """Refuse a setting outside its widget's ``(low, high, step)`` range; ``see`` ends the message."""
    for name, v in values.items():
        lo, hi, _ = limits[name]
        if not lo - 1e-9 <= v <= hi + 1e-9:
            raise EvalkitInputError(name, f"{name}={v} is outside the widget's range [{lo}, {hi}]; {see}")


def _check_defaults(values: dict[str, Any], limits: dict[str, tuple[float, float, float]], others: Sequence[str],
                    see: str) -> None:
    """Refuse unknown starting values and numeric ones that are not numbers or lie outside the widget's range."""
    unknown = sorted(set(values) - set(limits) - set(others))
    if unknown:
        raise EvalkitInputError(unknown[0], f"unknown setting {unknown[0]!r}; the widget's settings are "
                                            f"{sorted([*limits, *others])}")
    _limits_check({k: _real(values[k], k) for k in limits}, limits, see)


def _limits_slider(values: dict[str, Any], limits: dict[str, tuple[float, float, float]], name: str, label: str,
                   as_int: bool = False) -> Any:
    """The slider of control ``name`` over its widget's ``(low, high, step)`` range, starting at ``values[name]``."""
    lo, hi, step = limits[name]
    if as_int:
        return widget_slider(int(values[name]), int(lo), int(hi), int(step), label)
    return widget_slider(float(values[name]), lo, hi, step, label)


# ---------------------------------------------------------------------------------------------
# Notebook 00: coverage of i.i.d., CR1 and CR2 intervals under three cluster-size designs
# ---------------------------------------------------------------------------------------------

COVERAGE_WIDGET_LIMITS: dict[str, tuple[float, float, float]] = {
    "icc": (0.0, 0.5, 0.02),
    "n_clusters": (2, 50, 1),
    "cluster_size": (5, 50, 1),
    "dominant_share": (0.2, 0.8, 0.05),
}
"""(low, high, step) of each control of :func:`widget_coverage`. At most 50 clusters of 50 items:
the question the widget answers is about *few* clusters, and 400 replications of 2,500 items for three
designs take about a second on 2 cores (``benchmarks/bench_widgets.py``)."""

WIDTH_CAP_POINTS = 100.0
"""The width panel of :func:`widget_coverage_redraw` runs to 25, 50 or at most 100 percentage points (an interval
as wide as the whole accuracy scale); wider bars (CR1's t(1) and CR2's Satterthwaite t at two clusters) are cut
there and their value printed above them."""

COVERAGE_WIDGET_ESTIMATORS: tuple[str, ...] = ("iid", "CR1", "CR2")
COVERAGE_WIDGET_LABELS: dict[str, str] = {"iid": "iid", "CR1": "CR1, t(M-1)", "CR2": "CR2, Satterthwaite"}


def widget_coverage_redraw(icc: float = 0.1, n_clusters: int = 10, cluster_size: int = 20,
                           dominant_share: float = 0.5, *, n_reps: int = 400, seed: int = 20261130,
                           show: bool = True) -> Any:
    """Coverage and width of i.i.d., CR1 and CR2 intervals in three cluster-size designs.

    The view behind notebook 00.3's widget ([MISSING]; Bell and McCaffrey 2002): for balanced,
    skewed (log-normal) and one-dominant cluster sizes with ``n_clusters`` clusters of average
    size ``cluster_size``, :func:`evalkit.coverage_study` draws ``n_reps`` benchmarks at the given
    ICC and scores the i.i.d. interval (``t_{n-1}``), CR1 with ``t_{M-1}`` and CR2 with the
    Satterthwaite degrees of freedom; :func:`evalkit.plot_coverage_designs` draws the coverage with
    ±2 Monte Carlo SE bars, and a second panel the mean interval width.

    Parameters
    ----------
    icc : float
        Intra-class correlation on the 0/1 scale, within :data:`COVERAGE_WIDGET_LIMITS`.
    n_clusters, cluster_size : int
        Number of clusters ``M`` and their average size.
    dominant_share : float
        Share of the items in the large cluster of the ``"dominant"`` design.
    n_reps : int
        Replications per design (400: Monte Carlo SE about 1.1 points at 95% coverage).
    seed : int
    show : bool
        Call ``plt.show()`` (False in tests).

    Returns
    -------
    DataFrame
        The :func:`evalkit.coverage_study` rows drawn (``design, estimator, coverage,
        coverage_mcse, width, df_mean, n_clusters_effective, ...``), estimators relabelled
        ``"iid"``, ``"CR1, t(M-1)"``, ``"CR2, Satterthwaite"``.

    Raises
    ------
    ValueError
        A setting outside :data:`COVERAGE_WIDGET_LIMITS` (or a dominant share that leaves another
        cluster empty).

    Examples
    --------
    >>> res = widget_coverage_redraw(icc=0.2, n_clusters=5, cluster_size=10, n_reps=100, show=False)
    >>> sorted(res["design"].unique())
    ['balanced', 'dominant', 'skewed']
    >>> import matplotlib.pyplot as plt; plt.close("all")

    Notebook 00, section 4, wires it with :func:`widget_coverage`.
    """
    import matplotlib.pyplot as plt

    from .clustered import coverage_study
    from .plots import DESIGN_LABELS, _dodged, plot_color, plot_coverage_designs

    _limits_check({"icc": icc, "n_clusters": n_clusters, "cluster_size": cluster_size,
                   "dominant_share": dominant_share}, COVERAGE_WIDGET_LIMITS, "see COVERAGE_WIDGET_LIMITS")
    res = coverage_study(designs=("balanced", "skewed", "dominant"), n_clusters=int(n_clusters),
                         cluster_size=int(cluster_size), icc=float(icc), n_reps=int(n_reps), seed=seed,
                         estimators=COVERAGE_WIDGET_ESTIMATORS, dominant_share=float(dominant_share))
    res = res.assign(estimator=res["estimator"].map(COVERAGE_WIDGET_LABELS))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12.0, 5.2), width_ratios=[1.3, 1.0], layout="constrained")
    plot_coverage_designs(res, ax=ax1, legend=False)
    ax1.set_title("coverage")
    designs = list(dict.fromkeys(res["design"]))
    names = list(dict.fromkeys(res["estimator"]))
    cut = 0
    for name, pos, g in _dodged(res, "estimator", names, "design", designs, 0.25):
        w = 100 * g["width"].to_numpy(dtype=float)
        ax2.bar(pos, np.minimum(w, WIDTH_CAP_POINTS), width=0.24, color=plot_color(name), label=name)
        for x, v in zip(pos, w, strict=True):
            if v > WIDTH_CAP_POINTS:  # wider than the whole 0-1 scale: cut at the cap, its value printed
                cut += 1
                ax2.text(x, WIDTH_CAP_POINTS, f"{v:.0f}", ha="center", va="bottom", fontsize=10)
    # the axis moves in three steps only (25, 50, 100 points), so that widths stay comparable between settings
    widest = float(np.nanmax(100 * res["width"].to_numpy(dtype=float)))
    top = next(t for t in (25.0, 50.0, WIDTH_CAP_POINTS) if widest <= t or t == WIDTH_CAP_POINTS)
    ax2.set_ylim(0, 1.12 * top)
    ax2.set_xticks(np.arange(len(designs)), [DESIGN_LABELS.get(d, d) for d in designs])
    ax2.set_ylabel("mean interval width\n(percentage points)")
    ax2.set_title("width" if not cut else f"width ({cut} bars cut at {WIDTH_CAP_POINTS:.0f}:\n"
                  "wider than the whole 0–1 scale: t with few degrees of freedom)")
    handles, labels = ax1.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels))
    eff = res.drop_duplicates("design").set_index("design")["n_clusters_effective"]
    fig.suptitle(f"ICC {icc:.2f}, {n_clusters} clusters × {cluster_size} items on average, {n_reps} replications\n"
                 "effective clusters: " + ", ".join(f"{d} {eff[d]:.1f}" for d in designs))
    if show:
        plt.show()
    return res


def widget_coverage(**defaults: Any) -> Any:
    """The live widget of notebook 00.3: :func:`widget_coverage_redraw` over feasible settings.

    Parameters
    ----------
    **defaults
        Starting values (``icc``, ``n_clusters``, ``cluster_size``, ``dominant_share``).

    Returns
    -------
    ipywidgets.VBox

    Examples
    --------
    >>> import contextlib, io
    >>> import matplotlib.pyplot as plt
    >>> with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel the output area prints codes
    ...     box = widget_coverage(n_clusters=4, cluster_size=5)
    >>> [c.description for c in box.children[1].children]
    ['ICC', 'clusters', 'items per cluster', "largest cluster's share (dominant design)"]
    >>> plt.close("all")
    """
    v = {"icc": 0.1, "n_clusters": 10, "cluster_size": 20, "dominant_share": 0.5, **defaults}
    lim = COVERAGE_WIDGET_LIMITS
    _check_defaults(v, lim, (), "see evalkit.COVERAGE_WIDGET_LIMITS")
    return widget_live(
        lambda **kw: widget_coverage_redraw(**kw),
        static_first=True,
        prompts=[
            "Balanced sizes: at how few clusters does CR1 with t(M-1) still cover 95%?",
            "Skewed and dominant sizes: does adding clusters fix CR1? Watch the effective number of clusters "
            "in the title, not M.",
            "CR2 with Satterthwaite df holds its level: what does it pay for that in the width panel?",
            "Set the ICC to 0: which interval is then too wide, and by how much?",
        ],
        icc=_limits_slider(v, lim, "icc", "ICC"),
        n_clusters=_limits_slider(v, lim, "n_clusters", "clusters", as_int=True),
        cluster_size=_limits_slider(v, lim, "cluster_size", "items per cluster", as_int=True),
        dominant_share=_limits_slider(v, lim, "dominant_share", "largest cluster's share (dominant design)"),
    )


# ---------------------------------------------------------------------------------------------
# Notebook 05.2: recovery of a 2PL fit under temperature, missingness and size
# ---------------------------------------------------------------------------------------------

IRT_WIDGET_LIMITS: dict[str, tuple[float, float, float]] = {
    "sigma": (0.5, 2.0, 0.25),
    "missing": (0.0, 0.4, 0.05),
    "n_models": (100, 400, 50),
    "n_items": (200, 1600, 200),
}
"""(low, high, step) of each control of :func:`widget_irt`. Why these: under ``"mnar"`` only wrong
answers go missing and about half the answers are wrong, so beyond 40% missing nearly every item is
answered right by every model and has no information left (at 55% the simulator cannot remove
enough); below 100 models or 200 items, or at a temperature below 0.5, maximum likelihood runs into
quasi-separation and needs thousands of iterations (seconds per redraw) for parameters that are not
identified anyway."""

_IRT_MAX_ITER = 400

_IRT_MECHANISM_LABELS: dict[str, str] = {
    "mcar": "missing completely at random (MCAR)",
    "mar": "parameter-dependent: weak models on hard items (not MAR)",
    "mnar": "not at random: wrong answers go missing (MNAR)",
}
"""Drop-down labels of :func:`widget_irt`'s mechanisms. :func:`evalkit.simulate_2pl`'s ``"mar"`` depends on
the latent ability and difficulty, not on observed data, so it is not MAR in the sense of notebook 02.1
(it is ignorable for the joint fit because the fit treats those as parameters)."""

_IRT_MECHANISM_TITLES = {"mcar": "MCAR", "mar": "parameter-dependent missingness", "mnar": "MNAR"}

IRT_WIDGET_AXES: tuple[tuple[float, float], tuple[float, float]] = ((-4.0, 4.0), (-5.0, 5.0))
"""Fixed limits of the ability and easiness panels of :func:`widget_irt_redraw` (both axes), so that
moving a control moves the points, not the frame. They hold the simulated truths (standard-normal
abilities, easiness within about ±3.5); a fitted value beyond them (a nearly separated item at the
smallest settings) is drawn on the edge and counted in the panel's title."""


def widget_irt_redraw(sigma: float = 1.0, missing: float = 0.1, n_models: int = 200, n_items: int = 800,
                      mechanism: str = "mcar", *, seed: int = 2026, show: bool = True) -> dict[str, float]:
    """Simulate a 2PL matrix, fit it by cBMM and plot fitted against true ability and easiness.

    The view behind the widget of notebook ``05.2-irt-recovery-and-standard-errors`` ([CBMM]):
    :func:`evalkit.simulate_2pl` with the given temperature, missing fraction and mechanism,
    :func:`evalkit.irt_fit` (at most 400 iterations, so a redraw stays fast; the title says when
    that cap stopped the fit), and :func:`evalkit.plot_irt_recovery`.

    Parameters
    ----------
    sigma : float
        Temperature of the model, in :data:`IRT_WIDGET_LIMITS` ``["sigma"]``.
    missing : float
        Fraction of entries removed, in ``[0, 0.4]``.
    n_models, n_items : int
        Matrix size, within :data:`IRT_WIDGET_LIMITS`.
    mechanism : {"mcar", "mar", "mnar"}
    seed : int
        Seed of the simulation (the same seed for every setting, so changes come from the setting).
    show : bool
        Call ``plt.show()`` (False in tests).

    Returns
    -------
    dict
        ``r_theta`` (correlation of fitted and true ability over the models the fit kept),
        ``bias_b`` (mean fitted minus true easiness over the items it kept), ``n_excluded_items``,
        ``n_excluded_models``, ``n_iter``, ``missing`` (realised fraction), ``n_outside_theta`` and
        ``n_outside_b`` (points outside :data:`IRT_WIDGET_AXES`, drawn on the edge).

    Raises
    ------
    ValueError
        A setting outside :data:`IRT_WIDGET_LIMITS` (the message says why it is not offered) or
        an unknown mechanism.

    Examples
    --------
    >>> out = widget_irt_redraw(n_models=100, n_items=200, show=False)
    >>> out["r_theta"] > 0.9
    True
    >>> import matplotlib.pyplot as plt; plt.close("all")

    Notebook ``05.2-irt-recovery-and-standard-errors`` wires it with :func:`widget_irt`.
    """
    import matplotlib.pyplot as plt

    from ._checks import EvalkitWarning
    from .irt import irt_fit
    from .plots import _irt_recovery_outside, plot_irt_recovery
    from .simulate import simulate_2pl

    _limits_check({"sigma": sigma, "missing": missing, "n_models": n_models, "n_items": n_items},
                  IRT_WIDGET_LIMITS, "see IRT_WIDGET_LIMITS for why")
    if mechanism not in ("mcar", "mar", "mnar"):
        raise EvalkitInputError("mechanism", f"mechanism must be 'mcar', 'mar' or 'mnar', got {mechanism!r}")
    Y, truth = simulate_2pl(int(n_models), int(n_items), rng=np.random.default_rng(seed), sigma=sigma,
                            missing=missing, mechanism=mechanism)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # excluded and quasi-separated items are reported below
        fit = irt_fit(Y, sigma=sigma, max_iter=_IRT_MAX_ITER)
    kept = np.isfinite(fit.theta)
    r_theta = float(np.corrcoef(fit.theta[kept], truth["theta"][kept])[0, 1])
    items = np.isfinite(fit.b)
    bias_b = float(np.mean(fit.b[items] - truth["b"][items]))
    out = {"r_theta": r_theta, "bias_b": bias_b, "n_excluded_items": float(np.sum(~items)),
           "n_excluded_models": float(np.sum(~kept)), "n_iter": float(fit.n_iter),
           "missing": float(truth["missing"])}
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.6))
    plot_irt_recovery(truth, fit.theta, fit.b, axes=axes, limits=IRT_WIDGET_AXES)
    out_theta, out_b = _irt_recovery_outside(truth, fit.theta, fit.b, IRT_WIDGET_AXES)
    out["n_outside_theta"], out["n_outside_b"] = float(out_theta), float(out_b)
    axes[0].set_title(f"ability: r = {r_theta:.3f}" + (f"\n{out_theta} outside the axes" if out_theta else ""))
    axes[1].set_title(f"easiness: mean(fitted − true) = {bias_b:+.2f}"
                      + (f"\n{out_b} outside the axes, drawn at the edge" if out_b else ""))
    note = []
    if out["n_excluded_items"] or out["n_excluded_models"]:
        note.append(f"{int(out['n_excluded_items'])} items, {int(out['n_excluded_models'])} models excluded "
                    "(no variation left)")
    if fit.n_iter >= _IRT_MAX_ITER:
        note.append(f"stopped at the {_IRT_MAX_ITER}-iteration cap")
    fig.suptitle(f"{_IRT_MECHANISM_TITLES[mechanism]}, {truth['missing']:.0%} missing, σ = {sigma:g}, "
                 f"{n_models} models × {n_items} items" + ("\n" + "; ".join(note) if note else ""))
    if show:
        plt.show()
    return out


def widget_irt(**defaults: Any) -> Any:
    """The live widget of notebook 05.2: :func:`widget_irt_redraw` with only feasible settings offered.

    Parameters
    ----------
    **defaults
        Starting values (``sigma``, ``missing``, ``n_models``, ``n_items``, ``mechanism``).

    Returns
    -------
    ipywidgets.VBox

    Examples
    --------
    >>> import contextlib, io
    >>> import matplotlib.pyplot as plt
    >>> with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel the output area prints codes
    ...     box = widget_irt(n_models=100, n_items=200)
    >>> [c.description for c in box.children[1].children]
    ['temperature σ', 'missing fraction', 'models', 'items', 'mechanism']
    >>> plt.close("all")
    """
    v = {"sigma": 1.0, "missing": 0.1, "n_models": 200, "n_items": 800, "mechanism": "mcar", **defaults}
    lim = IRT_WIDGET_LIMITS
    _check_defaults(v, lim, ("mechanism",), "see evalkit.IRT_WIDGET_LIMITS")
    return widget_live(
        lambda **kw: widget_irt_redraw(**kw),
        static_first=True,
        prompts=[
            "MCAR and parameter-dependent missingness: the points stay on the dashed line even at 40% missing; "
            "only the scatter grows.",
            "MNAR: the abilities keep their order, but the easiness cloud moves above the line. How far, at 20%?",
            "Temperature: what changes in the fitted values when σ doubles, and what does not?",
            "Fewer models: which panel gets noisier, abilities or easiness, and why?",
        ],
        sigma=_limits_slider(v, lim, "sigma", "temperature σ"),
        missing=_limits_slider(v, lim, "missing", "missing fraction"),
        n_models=_limits_slider(v, lim, "n_models", "models", as_int=True),
        n_items=_limits_slider(v, lim, "n_items", "items", as_int=True),
        mechanism=widget_choice(["mcar", "mar", "mnar"], v["mechanism"], "mechanism", labels=_IRT_MECHANISM_LABELS),
    )
