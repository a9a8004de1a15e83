"""Plots draw what they are given; widgets wire controls to a function and call it."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import evalkit as ek  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_plot_intervals_draws_one_point_per_row_and_method():
    table = pd.DataFrame({
        "model": ["a", "a", "b", "b"], "method": ["iid", "cluster", "iid", "cluster"],
        "estimate": [0.5, 0.5, 0.6, 0.6], "ci_low": [0.45, 0.4, 0.55, 0.5], "ci_high": [0.55, 0.6, 0.65, 0.7],
    })
    ax = ek.plot_intervals(table, label="model", truth=0.55, title="t")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    assert len(ax.containers) == 2  # one errorbar container per method
    with pytest.raises(ValueError, match="needs columns"):
        ek.plot_intervals(table.drop(columns="ci_low"), label="model")


def test_plot_coverage_and_errors_from_a_study():
    runs = ek.mc_run(lambda rng: ek.simulate_clustered(n_clusters=5, cluster_size=5, mean=0.5, icc=0.1, rng=rng),
                     {"iid": lambda d: ek.mean_estimate(d["correct"], se="iid")}, truth=0.5, n_reps=20, seed=1,
                     progress=False)
    runs["icc"] = 0.1
    summary = ek.mc_summarise(runs).reset_index()
    ax = ek.plot_coverage(summary, x="icc")
    assert ax.get_lines()[0].get_ydata()[0] == pytest.approx(summary["coverage"].iloc[0])
    ax2 = ek.plot_mc_errors(runs)
    assert [t.get_text() for t in ax2.get_yticklabels()] == ["iid"]


def test_widget_live_calls_the_function_with_control_values():
    calls = []
    box = ek.widget_live(lambda icc, n: calls.append((icc, n)),
                         icc=ek.widget_slider(0.1, 0.0, 0.5, 0.05, "ICC"),
                         n=ek.widget_slider(10, 2, 50, 1, "clusters"))
    assert calls and calls[-1] == (0.1, 10)
    box.children[0].children[1].value = 20
    assert calls[-1] == (0.1, 20)
    assert isinstance(ek.widget_slider(10, 2, 50, 1, "x").value, int)
    assert ek.widget_choice(["a", "b"], "b", "pick").value == "b"
    with pytest.raises(ValueError, match="at least one control"):
        ek.widget_live(lambda: None)


def test_plot_style_sets_the_house_rc():
    ek.plot_style()
    assert matplotlib.rcParams["axes.spines.top"] is False
    assert np.isclose(matplotlib.rcParams["figure.figsize"][0], 7.0)


def test_plot_intervals_follows_the_requested_order():
    table = pd.DataFrame({"model": ["a", "b", "c"], "method": ["iid"] * 3, "estimate": [0.1, 0.2, 0.3],
                          "ci_low": [0.0, 0.1, 0.2], "ci_high": [0.2, 0.3, 0.4]})
    ax = ek.plot_intervals(table, label="model", order=["c", "a"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c", "a"]
