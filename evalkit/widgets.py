"""Thin ipywidgets wiring over pure, tested evalkit functions.

A widget never computes anything itself: :func:`widget_live` connects controls to a function
``f(**values)`` that draws or prints, through ``ipywidgets.interactive_output``. Notebooks also
call ``f`` once with the defaults, so a headless run (CI, HTML export) still shows the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["widget_live", "widget_slider", "widget_choice"]


def widget_slider(value: float, lo: float, hi: float, step: float, description: str) -> Any:
    """A float (or int, when all arguments are ints) slider with a readable label."""
    import ipywidgets as w

    style = {"description_width": "initial"}
    if all(isinstance(v, int) for v in (value, lo, hi, step)):
        return w.IntSlider(value=value, min=lo, max=hi, step=step, description=description,
                           continuous_update=False, style=style)
    return w.FloatSlider(value=value, min=lo, max=hi, step=step, description=description,
                         continuous_update=False, style=style, readout_format=".3g")


def widget_choice(options: list[Any], value: Any, description: str) -> Any:
    """A drop-down menu."""
    import ipywidgets as w

    return w.Dropdown(options=options, value=value, description=description, style={"description_width": "initial"})


def widget_live(f: Callable[..., Any], **controls: Any) -> Any:
    """Wire ipywidgets ``controls`` to ``f`` and return the assembled widget.

    Parameters
    ----------
    f : callable
        Called as ``f(**{name: control.value})`` whenever a control changes; it should draw a
        figure (``plt.show()``) or print.
    **controls
        ``name=widget`` pairs; the names are ``f``'s keyword arguments.

    Returns
    -------
    ipywidgets.VBox
        The controls above the output area. Display it as the last expression of a cell.
    """
    import ipywidgets as w

    if not controls:
        raise ValueError("give at least one control, e.g. icc=widget_slider(0.1, 0, 0.5, 0.05, 'ICC')")
    out = w.interactive_output(f, controls)
    box = w.HBox(list(controls.values()), layout=w.Layout(flex_flow="row wrap"))
    return w.VBox([box, out])
