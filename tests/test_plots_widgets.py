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
    assert np.isclose(matplotlib.rcParams["figure.figsize"][0], 8.0)
    # readable from the back of a room: 12-point text, at least 110 dpi on screen
    assert matplotlib.rcParams["font.size"] >= 12 and matplotlib.rcParams["axes.labelsize"] >= 12
    assert matplotlib.rcParams["figure.dpi"] >= 110 and matplotlib.rcParams["figure.constrained_layout.use"]


def test_plot_intervals_follows_the_requested_order():
    table = pd.DataFrame({"model": ["a", "b", "c"], "method": ["iid"] * 3, "estimate": [0.1, 0.2, 0.3],
                          "ci_low": [0.0, 0.1, 0.2], "ci_high": [0.2, 0.3, 0.4]})
    ax = ek.plot_intervals(table, label="model", order=["c", "a"])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["c", "a"]


def test_every_estimator_has_its_own_colour():
    colours = list(ek.ESTIMATOR_COLORS.values())
    assert len(set(c.lower() for c in colours)) == len(colours), "two estimators share a colour"
    assert set(ek.COLOR_ALIASES.values()) <= set(ek.ESTIMATOR_COLORS)
    assert ek.plot_color("complete case, CR1") == ek.ESTIMATOR_COLORS["cc"]
    assert ek.plot_color("IPW random intercept, CR2") == ek.ESTIMATOR_COLORS["ipw_ri"]
    assert ek.plot_color("IPW logistic, CR1") == ek.ESTIMATOR_COLORS["ipw"]
    assert ek.plot_color("by source") == ek.plot_color("CR2") != ek.plot_color("by category")
    assert ek.plot_color("mean, CR0") == ek.ESTIMATOR_COLORS["CR0"]
    unknown = ek.plot_color("an estimator nobody registered")
    assert unknown == ek.plot_color("an estimator nobody registered")
    assert unknown not in colours
    assert ek.PALETTE["cluster"] == ek.ESTIMATOR_COLORS["CR1"]


def test_plot_intervals_uses_the_fixed_colours():
    table = pd.DataFrame({"model": ["a", "a"], "method": ["iid", "CR2"], "estimate": [0.5, 0.5],
                          "ci_low": [0.4, 0.3], "ci_high": [0.6, 0.7]})
    ax = ek.plot_intervals(table, label="model")
    got = [matplotlib.colors.to_hex(c.lines[0].get_color()) for c in ax.containers]
    assert got == [ek.plot_color("iid").lower(), ek.plot_color("CR2").lower()]


def test_plot_coverage_says_when_a_line_hides_another():
    s = pd.DataFrame({"n": [2, 5, 2, 5, 2, 5], "estimator": ["iid"] * 2 + ["CR1"] * 2 + ["CR2"] * 2,
                      "coverage": [0.8, 0.7, 0.93, 0.94, 0.93, 0.94], "coverage_mcse": [0.01] * 6})
    ax = ek.plot_coverage(s, x="n", xlabel="number of clusters")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["iid", "CR1", "CR2\n(dashed: the same as CR1)"]
    assert ax.get_lines()[2].get_linestyle() == "--" and ax.get_xlabel() == "number of clusters"


def test_plot_coverage_designs_draws_each_estimator_with_its_error_bar():
    s = pd.DataFrame({"design": ["balanced", "skewed", "dominant"] * 2, "estimator": ["iid"] * 3 + ["CR2"] * 3,
                      "coverage": [0.7, 0.6, 0.5, 0.95, 0.93, 0.9], "coverage_mcse": [0.01, 0.01, 0.01, 0.005, 0.006,
                                                                                      0.007]})
    ax = ek.plot_coverage_designs(s, title="t")
    assert len(ax.containers) == 2
    cr2 = ax.containers[1]
    assert np.allclose(cr2.lines[0].get_ydata(), [0.95, 0.93, 0.9])
    seg = cr2.lines[2][0].get_segments()  # the error bars: +-2 MCSE
    assert np.allclose([b[1, 1] - b[0, 1] for b in seg], [0.02, 0.024, 0.028])
    assert "Monte Carlo" in ax.get_ylabel()
    with pytest.raises(ValueError, match="needs columns"):
        ek.plot_coverage_designs(s.drop(columns="coverage_mcse"))


def test_plot_irt_recovery_skips_excluded_items():
    truth = {"theta": np.array([-1.0, 0.0, 1.0]), "b": np.array([0.0, 1.0, 2.0])}
    axes = ek.plot_irt_recovery(truth, np.array([-1.0, 0.1, 0.9]), np.array([0.1, np.nan, 2.1]))
    assert axes[1].collections[0].get_offsets().shape == (2, 2)
    assert "logit scale" in axes[0].get_ylabel()


def test_widget_live_shows_prompts_above_the_controls():
    box = ek.widget_live(lambda n: None, prompts=["look <here>"], n=ek.widget_slider(1, 0, 2, 1, "n"))
    assert "look &lt;here&gt;" in box.children[0].value and len(box.children) == 3


def test_irt_widget_recovers_and_shows_the_mnar_bias():
    mcar = ek.widget_irt_redraw(missing=0.2, n_models=100, n_items=400, mechanism="mcar", show=False)
    mnar = ek.widget_irt_redraw(missing=0.2, n_models=100, n_items=400, mechanism="mnar", show=False)
    assert mcar["r_theta"] > 0.98 and abs(mcar["bias_b"]) < 0.1
    # only wrong answers removed: every item looks easier (the simulation's bias is about +0.5 at 20%)
    assert mnar["bias_b"] > 0.3
    assert 0.18 < mnar["missing"] < 0.22


@pytest.mark.parametrize("mechanism", ["mcar", "mar", "mnar"])
def test_irt_widget_corners_are_all_answerable(mechanism):
    lim = ek.IRT_WIDGET_LIMITS
    for sigma in (lim["sigma"][0], lim["sigma"][1]):
        out = ek.widget_irt_redraw(sigma=sigma, missing=lim["missing"][1], n_models=int(lim["n_models"][0]),
                                   n_items=int(lim["n_items"][0]), mechanism=mechanism, show=False)
        assert all(np.isfinite(v) for v in out.values()), out
        plt.close("all")


def test_irt_widget_refuses_settings_it_does_not_offer():
    with pytest.raises(ValueError, match="missing=0.55 is outside"):
        ek.widget_irt_redraw(missing=0.55, mechanism="mnar", show=False)
    with pytest.raises(ValueError, match="mechanism"):
        ek.widget_irt_redraw(mechanism="nmar", show=False)
    box = ek.widget_irt()
    sliders = {c.description: c for c in box.children[1].children}
    assert sliders["missing fraction"].max == ek.IRT_WIDGET_LIMITS["missing"][1]
    assert sliders["models"].min == ek.IRT_WIDGET_LIMITS["n_models"][0]


def test_coverage_widget_shows_three_designs_and_the_dominant_cluster_breaks_cr1():
    res = ek.widget_coverage_redraw(icc=0.2, n_clusters=10, cluster_size=20, dominant_share=0.8, n_reps=400,
                                    show=False)
    assert set(res["design"]) == {"balanced", "skewed", "dominant"}
    assert list(pd.unique(res["estimator"])) == ["iid", "CR1, t(M-1)", "CR2, Satterthwaite"]
    cov = res.set_index(["design", "estimator"])["coverage"]
    mcse = res.set_index(["design", "estimator"])["coverage_mcse"]
    tol = ek.mc_tolerance(0.95, 400)
    # balanced: CR1 with t(M-1) holds its level; one cluster with 80% of the items: it cannot
    assert abs(cov["balanced", "CR1, t(M-1)"] - 0.95) <= tol
    assert cov["dominant", "CR1, t(M-1)"] < 0.95 - tol
    assert cov["dominant", "CR2, Satterthwaite"] > 0.95 - tol
    assert (mcse > 0).all()
    fig = plt.gcf()
    assert "effective clusters" in fig.get_suptitle()


def test_coverage_widget_refuses_settings_it_does_not_offer():
    with pytest.raises(ValueError, match="n_clusters=100 is outside"):
        ek.widget_coverage_redraw(n_clusters=100, show=False)
    box = ek.widget_coverage()
    sliders = {c.description: c for c in box.children[1].children}
    assert sliders["clusters"].max == ek.COVERAGE_WIDGET_LIMITS["n_clusters"][1]
    assert "What to look for" in box.children[0].value


def test_widget_controls_are_usable_and_readable():
    """A long label leaves the slider a track; drop-downs show readable labels and return code values."""
    slider = ek.widget_slider(0.5, 0.2, 0.8, 0.05, "largest cluster's share (dominant design)")
    width = int(slider.layout.width.removesuffix("px"))
    assert width >= 8 * len(slider.description) + 200  # label plus at least 200 px of track
    menu = ek.widget_choice(list(ek.MECHANISMS), "mar_cluster", "mechanism")
    assert menu.value == "mar_cluster"
    assert all(label != value for label, value in menu.options)  # no code name shown as its own label
    assert ek.widget_choice(["a", "b"], "b", "pick", labels={"a": "first"}).options == (("first", "a"), ("b", "b"))


def test_static_first_draws_once_and_redraws_live_on_change():
    import contextlib
    import io

    calls = []
    with contextlib.redirect_stdout(io.StringIO()):
        box = ek.widget_live(lambda n: calls.append(n), static_first=True, n=ek.widget_slider(3, 1, 5, 1, "n"))
        box.children[0].children[0].value = 4
    assert calls == [3, 4]


@pytest.mark.parametrize("delta, icc, cluster_size", [(0.005, 0.05, 20), (0.03, 0.3, 200)])
def test_power_plot_x_axis_reaches_every_design(delta, icc, cluster_size):
    """Every curve reaches the target power inside the x-axis, whatever the setting."""
    ax = ek.plan_power_plot(delta=delta, icc=icc, cluster_size=cluster_size, k=4)
    needs = [float(t.get_text().split("n = ")[1].replace(",", "")) for t in ax.get_legend().get_texts()]
    assert max(line.get_xdata().max() for line in ax.get_lines() if len(line.get_xdata()) > 2) >= max(needs)


def test_widget_axes_stay_put_and_say_what_they_cut():
    """Fixed axes between settings: coverage 1.0 inside the frame, widths capped and printed, IRT points clipped and
    counted, a yes/no control as a checkbox."""
    res = ek.widget_coverage_redraw(icc=0.5, n_clusters=2, cluster_size=10, n_reps=100, show=False)
    fig = plt.gcf()
    ax_cov, ax_width = fig.axes[:2]
    assert ax_cov.get_ylim()[1] > 1.0 and ax_cov.get_legend() is None and fig.legends  # legend outside the axes
    assert (100 * res["width"] > ek.widgets.WIDTH_CAP_POINTS).any()  # two clusters: t(1) is wider than the scale
    assert ax_width.get_ylim()[1] < 1.2 * ek.widgets.WIDTH_CAP_POINTS and "cut at 100" in ax_width.get_title()
    printed = {t.get_text() for t in ax_width.texts}
    assert f"{100 * res['width'].max():.0f}" in printed
    plt.close("all")
    out = ek.widget_irt_redraw(sigma=0.5, missing=0.0, n_models=100, n_items=200, show=False)
    axes = plt.gcf().axes
    assert axes[1].get_ylim() == ek.widgets.IRT_WIDGET_AXES[1]
    assert out["n_outside_b"] >= 1 and f"{int(out['n_outside_b'])} outside the axes" in axes[1].get_title()
    plt.close("all")
    assert type(ek.widget_choice([True, False], False, "with replacement")).__name__ == "Checkbox"


def test_irt_widget_does_not_call_parameter_dependent_missingness_mar():
    """simulate_2pl's "mar" depends on latent ability and difficulty: not MAR (notebook 05.2, section 1)."""
    box = ek.widget_irt(mechanism="mar")
    menu = {c.description: c for c in box.children[1].children}["mechanism"]
    assert menu.value == "mar"
    assert "at random given" not in menu.label and "parameter-dependent" in menu.label
    prompts = box.children[0].value
    assert "MCAR and MAR" not in prompts and "parameter-dependent" in prompts
    plt.close("all")
    ek.widget_irt_redraw(missing=0.1, mechanism="mar", n_models=100, n_items=200, show=False)
    title = plt.gcf().get_suptitle()
    assert title.startswith("parameter-dependent missingness") and "MAR," not in title
    plt.close("all")
