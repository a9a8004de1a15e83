"""``evalkit report``: the one-page report on eval logs, its numbers and its command line."""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalkit as ek
from evalkit.__main__ import main

FIX = pathlib.Path(__file__).resolve().parent / "fixtures" / "eval_logs"
INSPECT_EVAL = FIX / "inspect_ai" / "logs" / "eval"
LM_EVAL = FIX / "lm_eval" / "output"


@pytest.fixture(scope="module")
def inspect_long() -> pd.DataFrame:
    return ek.log_read(INSPECT_EVAL, cluster="subject,category")


def test_accuracy_rows_are_the_core_estimators(inspect_long: pd.DataFrame) -> None:
    rep = ek.report_build(inspect_long, se="CR2")
    row = rep.accuracy.set_index(["task", "model"]).loc[("mcq_subjects", "mockllm/beta")]
    g = inspect_long[(inspect_long["task"] == "mcq_subjects") & (inspect_long["model"] == "mockllm/beta")]
    ok = g["status"] == "ok"
    assert row["n_items"] == 40 and row["n_graded"] == 32 and row["accuracy"] == pytest.approx(23 / 32)
    cr = ek.mean_estimate(g.loc[ok, "correct"].to_numpy(), g.loc[ok, "cluster"].to_numpy(), se="CR2",
                          interval="wilson")
    iid = ek.mean_estimate(g.loc[ok, "correct"].to_numpy(), se="iid", interval="wilson")
    assert 0 <= row["cr_low"] <= row["accuracy"] <= row["cr_high"] <= 1
    assert (row["cr_low"], row["cr_high"]) == pytest.approx((cr.ci_low, cr.ci_high), abs=1e-12)
    assert (row["iid_low"], row["iid_high"]) == pytest.approx((iid.ci_low, iid.ci_high), abs=1e-12)
    assert row["deff"] == pytest.approx(ek.deff_empirical(g.loc[ok, "correct"], g.loc[ok, "cluster"]))


def test_missing_section_counts_and_bounds(inspect_long: pd.DataFrame) -> None:
    rep = ek.report_build(inspect_long)
    reasons = rep.missing_by_reason.set_index(["task", "model", "status"])["n"]
    assert reasons[("mcq_subjects", "mockllm/beta", "error")] == 3
    assert reasons[("mcq_subjects", "mockllm/beta", "parse_failure")] == 5
    est = rep.missing_estimates.set_index(["task", "model", "estimator"])["estimate"]
    assert est[("mcq_subjects", "mockllm/beta", "missing as wrong")] == pytest.approx(23 / 40)
    assert est[("mcq_subjects", "mockllm/beta", "missing as right")] == pytest.approx((23 + 8) / 40)
    ipw = est[("mcq_subjects", "mockllm/beta", "IPW, random-intercept propensity")]
    assert 23 / 40 <= ipw <= 31 / 40  # a weighted mean of the answered items lies inside the bounds
    # short_answer has no missing item: no missing-data rows for it
    assert "short_answer" not in set(rep.missing_estimates["task"])


def test_comparisons_state_their_number_and_mdd(inspect_long: pd.DataFrame) -> None:
    rep = ek.report_build(inspect_long)
    c = rep.comparisons.set_index("task").loc["mcq_subjects"]
    # 40 items, 11 of them missing for one model or both (README: alpha 5, beta 8, 2 in common)
    assert c["n_comparisons"] == 1 and c["n_shared"] == 29
    z = stats.t.ppf(0.975, c["cr_df"]) + stats.t.ppf(0.8, c["cr_df"])
    assert c["mdd_80"] == pytest.approx(z * c["cr_se"])
    assert 0 <= c["p_value"] <= c["p_bonferroni"] <= 1


def test_mdd_has_the_power_it_claims() -> None:
    """At a true paired difference equal to the reported MDD, a z-test rejects about 80% of the time."""
    rng = np.random.default_rng(7)
    n, reps, sd = 400, 4000, 0.5
    se = sd / np.sqrt(n)
    mdd = ek.report.__dict__["_mdd"](se, np.inf, 0.05)
    means = rng.normal(mdd, se, size=reps)  # the sampling distribution of the estimate, SE known
    power = np.mean(np.abs(means / se) > stats.norm.ppf(0.975))
    assert abs(power - 0.8) < 4 * np.sqrt(0.8 * 0.2 / reps)


def test_epoch_means_skip_ipw_with_a_note() -> None:
    df = ek.log_read(INSPECT_EVAL / "2026-11-30T11-09-42-00-00_short-answer_iNtnvrKAxnKSazTSxKUter.eval")
    df.loc[df.index[0], ["status", "correct"]] = ["error", np.nan]
    rep = ek.report_build(df)
    assert rep.missing_estimates.empty
    assert any("epoch means" in n for n in rep.notes)


def test_write_markdown_and_self_contained_html(inspect_long: pd.DataFrame, tmp_path: pathlib.Path) -> None:
    paths = ek.report_write(ek.report_build(inspect_long), tmp_path / "out")
    md = paths["markdown"].read_text()
    html = paths["html"].read_text()
    for heading in ("Accuracy", "Missing answers by reason", "Paired comparisons"):
        assert f"## {heading}" in md and f"<h2>{heading}</h2>" in html
    assert "data:image/png;base64," in html and "src='accuracy" not in html
    assert (tmp_path / "out" / "accuracy_mcq_subjects.png").stat().st_size > 1000


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="lacks columns"):
        ek.report_build(pd.DataFrame({"model": ["a"], "item": ["i"]}))
    df = ek.log_read(INSPECT_EVAL, cluster="subject,category")
    with pytest.raises(ValueError, match="alpha"):
        ek.report_build(df, alpha=1.5)
    with pytest.raises(ValueError, match="cluster"):
        ek.report_build(df, cluster="nope")
    with pytest.raises(ValueError, match="se must be"):
        ek.report_build(df, se="CR9")


def test_command_line(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert main(["report", str(LM_EVAL), "--filter", "strict-match", "--out", str(out)]) == 0
    assert (out / "report.md").exists() and (out / "report.html").exists()
    assert "2 models" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "missing.eval"), "--out", str(out)]) == 2
    assert "missing.eval: no such file" in capsys.readouterr().err
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main(["report", str(INSPECT_EVAL), "--out", str(a_file)]) == 2
    assert "not a folder" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------
# Regression tests: reviews 2026-12 (bad inputs A, the 71-model table B, today's logs C)
# ------------------------------------------------------------------------------------------------

LAYOUTS = FIX / "layouts"
INSPECT_NEW = LAYOUTS / "inspect_ai"


def _table(n_models: int = 4, n_items: int = 120, seed: int = 0, miss: dict[int, float] | None = None,
           uniform: bool = False) -> pd.DataFrame:
    """A long table with a 2-way `cluster` column and a 12-way `category` column."""
    rng = np.random.default_rng(seed)
    cat = np.arange(n_items) % 12
    rows = []
    for m in range(n_models):
        p = 0.45 + 0.1 * m + 0.25 * (cat % 3 == 0)
        y = (rng.random(n_items) < np.clip(p, 0, 1)).astype(float)
        status = np.full(n_items, "ok", dtype=object)
        rate = (miss or {}).get(m, 0.0)
        if rate:
            gone = rng.random(n_items) < (rate if uniform else rate * np.where(y == 0, 1.6, 0.2))
            status[gone] = "parse_failure"
            y[gone] = np.nan
        rows.append(pd.DataFrame({"model": f"m{m}", "item": [f"i{j:03d}" for j in range(n_items)],
                                  "cluster": np.where(cat < 6, "A", "B"), "category": [f"c{c:02d}" for c in cat],
                                  "correct": y, "status": status}))
    return pd.concat(rows, ignore_index=True)


def test_b1_cluster_option_reaches_tables(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    df = _table()
    rep = ek.report_build(df, cluster="category")
    assert set(rep.accuracy["n_clusters"]) == {12}
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    assert main(["report", str(path), "--cluster", "category", "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert "clusters = `category`" in md
    assert main(["report", str(path), "--cluster", "no_such_column", "--out", str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err
    assert "no_such_column" in err and "category" in err
    assert not (tmp_path / "r2").exists()
    only = tmp_path / "only_category.csv"
    df.drop(columns="cluster").to_csv(only, index=False)
    assert main(["report", str(only), "--cluster", "category", "--out", str(tmp_path / "r3")]) == 0
    with pytest.raises(ek.EvalkitInputError, match="category"):
        ek.report_build(df.drop(columns="cluster"))


def test_b2_heavy_missingness_is_in_the_headline() -> None:
    df = _table(n_models=4, miss={3: 0.75}, uniform=True)
    rep = ek.report_build(df, cluster="category")
    acc = rep.accuracy.set_index("model")
    y = df[df["model"] == "m3"]
    assert acc.loc["m3", "share_answered"] == pytest.approx((y["status"] == "ok").mean())
    assert acc.loc["m3", "accuracy_missing_wrong"] == pytest.approx(y["correct"].fillna(0).mean())
    assert acc.loc["m3", "rank"] == 1 and acc.loc["m3", "rank_missing_wrong"] == 4 and acc.loc["m3", "rank_flag"]
    assert any("ranking depends on how missing answers are counted" in n and "m3 #1 -> #4" in n for n in rep.notes)
    assert rep.notes_table.iloc[0]["severity"] <= 2


def test_b3_bounds_are_wilson_inside_the_unit_interval_and_no_unusable_advice() -> None:
    rep = ek.report_build(_table(miss={0: 0.3, 1: 0.3}), cluster="category")
    est = rep.missing_estimates
    bounds = est[est["estimator"].str.startswith("missing as")]
    assert (bounds["interval"] == "Wilson").all()
    assert ((bounds["ci_low"] >= 0) & (bounds["ci_high"] <= 1)).all()
    assert not any("interval='wilson'" in n for n in rep.notes)


def test_b4_c12_design_notes_once_per_task_without_advice_already_followed() -> None:
    rep = ek.report_build(_table(n_models=6), cluster="cluster")   # two clusters: G* <= 2 for every model
    design = [n for n in rep.notes if "effective number of clusters" in n]
    assert len(design) == 1 and "for 6 of 6 models" in design[0]
    assert not any("Prefer CR2" in n for n in rep.notes)
    assert rep.accuracy["g_star"].between(1, 2).all()


def test_b5_top_k_baseline_and_clipped_paired_intervals() -> None:
    df = _table(n_models=14, n_items=60)
    rep = ek.report_build(df, cluster="cluster")       # 14 models: by default the best 10
    assert len(rep.comparisons) == 45 and (rep.comparisons["n_comparisons"] == 45).all()
    assert any("the 10 models with the highest" in n for n in rep.notes)
    base = ek.report_build(df, cluster="cluster", baseline="m0")
    assert len(base.comparisons) == 13 and (base.comparisons["model_a"] == "m0").all()
    top = ek.report_build(df, cluster="cluster", top_k=3)
    assert len(top.comparisons) == 3
    assert ((rep.comparisons["cr_low"] >= -1) & (rep.comparisons["cr_high"] <= 1)).all()
    with pytest.raises(ek.EvalkitInputError, match="baseline"):
        ek.report_build(df, cluster="cluster", baseline="nobody")
    with pytest.raises(ek.EvalkitInputError, match="top_k"):
        ek.report_build(df, cluster="cluster", top_k=1)


def test_b6_reasons_without_ok_and_effective_n_capped(tmp_path: pathlib.Path) -> None:
    rep = ek.report_build(_table(miss={0: 0.3}), cluster="category")
    assert "ok" not in set(rep.missing_by_reason["status"])
    assert (rep.accuracy["n_effective"] <= rep.accuracy["n_graded"] + 1e-9).all()
    md = ek.report_write(rep, tmp_path)["markdown"].read_text()
    assert "| cr_se |" in md or " cr_se " in md


def test_paired_comparisons_from_cluster_sums_equal_mean_estimate() -> None:
    """The closed-form CR2 / Satterthwaite / CR1 of every pair equals mean_estimate on the pair's differences."""
    df = _table(n_models=6, n_items=150, miss={1: 0.3, 4: 0.5})
    for se in ("CR2", "CR1"):
        rep = ek.report_build(df, cluster="category", se=se)
        tg = rep.comparisons
        wide = df[df["status"] == "ok"].pivot_table(index="item", columns="model", values="correct")
        clus = df.drop_duplicates("item").set_index("item")["category"]
        ref = pd.DataFrame(ek.report._pair_rows_reference("all items", wide, clus, list(zip(tg["model_a"],
                           tg["model_b"], strict=True)), se, 0.05)).set_index(["model_a", "model_b"])
        got = tg.set_index(["model_a", "model_b"])
        for col in ("n_shared", "difference", "iid_se", "cr_se", "cr_df", "cr_low", "cr_high"):
            np.testing.assert_allclose(got[col].to_numpy(float), ref.loc[got.index, col].to_numpy(float),
                                       rtol=1e-10, atol=1e-12, err_msg=f"{se} {col}")


def test_c1_nothing_graded_writes_a_report_that_says_so(tmp_path: pathlib.Path) -> None:
    df = _table(n_models=2)
    df["correct"], df["status"] = np.nan, "error"
    rep = ek.report_build(df)
    assert rep.accuracy.empty and any("no answer was graded in any task" in n for n in rep.notes)
    paths = ek.report_write(rep, tmp_path / "r")
    assert "No answer was graded" in paths["markdown"].read_text()
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    assert main(["report", str(csv), "--out", str(tmp_path / "cli")]) == 0


def test_c2_inspect_eval_set_folder_in_json_format() -> None:
    folder = INSPECT_NEW / "eval_set_json"
    assert (folder / "eval-set.json").exists() and (folder / "logs.json").exists()
    df = ek.log_read(folder)
    assert df["model"].nunique() == 2 and set(df["source"]).isdisjoint({"eval-set.json", "logs.json"})
    with pytest.raises(ek.LogFormatError, match="index of an Inspect eval set"):
        ek.log_read(folder / "eval-set.json")


def test_c3_refusal_and_grading_failure_are_not_wrong_answers() -> None:
    df = ek.log_read(INSPECT_NEW / "reasons")
    truth = pd.read_csv(LAYOUTS / "ground_truth.csv")
    truth = truth[truth["epoch"] == 1].set_index(["model", "sample_id"])["code"]
    want = {"C": "ok", "W": "ok", "U": "parse_failure", "R": "refusal", "G": "grading_failure"}
    got = df.set_index(["model", "sample_id"])["status"]
    assert got.to_dict() == {k: want[v] for k, v in truth.items()}
    assert "grading_failure" in ek.STATUSES and "grading_failure" in ek.MISSING_REASONS


def test_c4_runs_that_stopped_are_said_with_samples_done_and_planned() -> None:
    df = ek.log_read(INSPECT_NEW / "status")
    notes = df.attrs["evalkit_notes"]
    assert any("status is 'error'" in n and "of 12 planned" in n for n in notes)
    assert any("unfinished" in n and "of 12 planned" in n for n in notes)
    rep = ek.report_build(df)
    assert any("status is 'error'" in n for n in rep.notes)
    assert set(rep.runs["status"]) == {"error", "started"}


def test_c4_cancelled_runs_give_a_report_with_samples_done_and_planned(
        tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = INSPECT_NEW / "cancelled"           # 4 of 12 samples done; and a header-only log, none done
    assert main(["report", str(folder), "--out", str(tmp_path / "r")]) == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert "the run's status is 'cancelled'" in md and "4 of 12 planned sample-epochs are in the log" in md
    assert "0 of 12 planned sample-epochs were run" in md        # the header-only log, named, not a traceback
    assert "log_samples=False" not in md
    head_only = next(folder.glob("*before-any-sample*.json"))
    with pytest.raises(ek.LogFormatError, match=r"status is 'cancelled'.*0 of 12 planned"):
        ek.log_read(head_only)
    df = ek.log_read(folder, on_error="note")
    assert len(df) == 4 and df.attrs["evalkit_runs"][0]["samples_planned"] == 12
    capsys.readouterr()


def test_c5_lm_eval_runs_sharing_a_generated_name_are_told_apart(tmp_path: pathlib.Path) -> None:
    df = ek.log_read(LAYOUTS / "lm_eval_same_name")
    assert df["model"].nunique() == 2
    assert any("share the model name" in n for n in df.attrs["evalkit_notes"])
    src = next((LM_EVAL / "scripted").glob("samples_mini_mcq_science_*.jsonl"))
    (tmp_path / src.name).write_bytes(src.read_bytes())
    assert main(["report", str(tmp_path / src.name), "--model", "my-model", "--out", str(tmp_path / "r")]) == 0


def test_c6_scorer_metric_filter_choices_never_block_a_folder(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "r"
    assert main(["report", str(LM_EVAL), "--out", str(out)]) == 0            # two filters, no --filter
    assert main(["report", str(LM_EVAL), "--metric", "acc_norm", "--out", str(out)]) == 0
    df = ek.log_read(LM_EVAL, metric="acc_norm", filter="flexible-extract")
    notes = df.attrs["evalkit_notes"]
    assert any("no metric 'acc_norm'" in n for n in notes)          # mini_short has exact_match only
    assert any("no filter 'flexible-extract'" in n for n in notes)  # the mcq tasks have 'none' only
    assert set(df.loc[df["subtask"] == "mini_mcq_science", "metric"]) == {"acc_norm"}
    assert main(["report", str(INSPECT_EVAL), "--scorer", "match", "--out", str(out)]) == 0


def test_c7_without_cluster_the_bounds_are_still_computed_and_fields_listed(tmp_path: pathlib.Path) -> None:
    import json

    src = INSPECT_EVAL.parent / "json" / "2026-11-30T11-09-42-00-00_mcq-subjects_5Xdjo8KqChV8PRDEuEbgtb.json"
    log = json.loads(src.read_text())
    for s in log["samples"]:
        s["metadata"]["difficulty"] = "easy"          # two fields: no default cluster field
    (tmp_path / "two_fields.json").write_text(json.dumps(log))
    df = ek.log_read(tmp_path / "two_fields.json")
    assert set(df["cluster"]) == {"mcq_subjects"}
    rep = ek.report_build(df)
    est = rep.missing_estimates
    assert {"missing as wrong", "missing as right"} <= set(est["estimator"])
    assert any("metadata fields are ['difficulty', 'subject']" in n for n in rep.notes)


def test_c8_epochs_keep_statuses_and_inspect_reducer() -> None:
    df = ek.log_read(INSPECT_NEW / "epochs")
    assert (df["n_epochs"] == 3).all() and df["epoch_statuses"].str.count(",").eq(2).all()
    truth = pd.read_csv(LAYOUTS / "ground_truth.csv")
    n_u = truth.groupby("model")["code"].apply(lambda c: int((c == "U").sum()))
    assert df.groupby("model")["n_parse_failure"].sum().to_dict() == n_u.to_dict()
    rep = ek.report_build(df)
    acc = rep.accuracy.set_index("model")
    for model in sorted(set(df["model"])):
        assert acc.loc[model, "n_epoch_unparsable"] == n_u[model]
        assert acc.loc[model, "accuracy_tool"] < acc.loc[model, "accuracy"]   # Inspect counts them 0
    assert any("epoch answers were unparsable" in n for n in rep.notes)


@pytest.mark.parametrize("folder", ["reasons", "epochs", "eval_set_json"])
def test_c9_tools_own_numbers_are_reconciled(folder: str) -> None:
    rep = ek.report_build(ek.log_read(INSPECT_NEW / folder))
    tn = rep.tool_numbers
    assert len(tn) >= 1
    np.testing.assert_allclose(tn["recomputed"], tn["tool_value"], atol=1e-12)


def test_c9_lm_eval_numbers_are_reconciled() -> None:
    rep = ek.report_build(ek.log_read(LM_EVAL))
    tn = rep.tool_numbers
    assert len(tn) == 6
    np.testing.assert_allclose(tn["recomputed"], tn["tool_value"], atol=1e-12)


def test_c10_n_comparisons_counts_the_comparisons_made() -> None:
    df = _table(n_models=3)
    df.loc[df["model"] == "m2", ["correct", "status"]] = [np.nan, "error"]
    rep = ek.report_build(df, cluster="category")
    assert len(rep.comparisons) == 1 and rep.comparisons["n_comparisons"].iloc[0] == 1


def test_c11_different_item_sets_are_noted() -> None:
    df = _table(n_models=2)
    df = df[~((df["model"] == "m1") & (df["item"] > "i060"))]
    rep = ek.report_build(df, cluster="category")
    assert any("different item sets" in n for n in rep.notes)


def test_c13_html_has_no_literal_markdown_and_one_colour_per_model(tmp_path: pathlib.Path) -> None:
    rep = ek.report_build(_table(n_models=12, miss={0: 0.3, 5: 0.3}), cluster="category")
    paths = ek.report_write(rep, tmp_path)
    text = paths["html"].read_text()
    assert "`" not in text and "<code>category</code>" in text
    c1 = ek.report._model_colours(["m1", "m0", "m2"])
    c2 = ek.report._model_colours(["m2", "m0", "m1"])
    assert c1 == c2 and len(set(c1.values())) == 3


def test_a1_outcomes_outside_zero_one_are_refused(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    df = _table(n_models=2)
    for scale in (100.0, None):
        bad = df.copy()
        bad["correct"] = bad["correct"] * 100 if scale else bad["correct"] * 2 - 1
        with pytest.raises(ek.EvalkitInputError, match="0/1"):
            ek.report_build(bad)
        path = tmp_path / "bad.csv"
        bad.to_csv(path, index=False)
        assert main(["report", str(path), "--out", str(tmp_path / "r")]) == 2
        assert "0/1" in capsys.readouterr().err


def test_a2_epoch_means_with_a_zero_width_interval_get_a_note() -> None:
    df = ek.log_read(INSPECT_NEW / "epochs")
    rep = ek.report_build(df)
    row = rep.accuracy.iloc[0]
    if row["cr_high"] - row["cr_low"] == 0:
        assert any("zero width" in n for n in rep.notes)
    assert (rep.accuracy[["iid_low", "cr_low"]] >= 0).all().all()
    assert (rep.accuracy[["iid_high", "cr_high"]] <= 1).all().all()


def test_a10_report_validates_its_table() -> None:
    df = _table(n_models=2)
    for status in ("timeout", "OK"):
        bad = df.copy()
        bad.loc[0, "status"] = status
        with pytest.raises(ek.EvalkitInputError, match="status"):
            ek.report_build(bad)
    with pytest.raises(ek.EvalkitInputError, match="duplicate"):
        ek.report_build(pd.concat([df, df.iloc[:1]]))
    bad = df.copy()
    bad.loc[0, "status"] = "refusal"                  # an outcome on a refusal row
    with pytest.raises(ek.EvalkitInputError, match="outcome"):
        ek.report_build(bad)
    bad = df.copy().assign(task="t")
    bad.loc[0, "task"] = np.nan
    with pytest.raises(ek.EvalkitInputError, match="task"):
        ek.report_build(bad)
    bad = df.copy()
    bad.loc[0, "cluster"] = np.nan
    with pytest.raises(ek.EvalkitInputError, match="cluster"):
        ek.report_build(bad)


def test_a20_identical_models_give_p_one_and_a_note() -> None:
    df = _table(n_models=1)
    df = pd.concat([df, df.assign(model="twin")], ignore_index=True)
    rep = ek.report_build(df, cluster="category")
    c = rep.comparisons.iloc[0]
    assert c["difference"] == 0 and c["p_value"] == 1.0 and np.isfinite(c["mdd_80"])
    assert any("same answer on every item" in n for n in rep.notes)


def test_a29_task_names_that_slug_alike_keep_their_figures(tmp_path: pathlib.Path) -> None:
    a, b = _table(n_models=2), _table(n_models=2)
    df = pd.concat([a.assign(task="math/algebra", item="x" + a["item"]), b.assign(task="math_algebra")])
    ek.report_write(ek.report_build(df, cluster="category"), tmp_path)
    assert len(list(tmp_path.glob("accuracy_*.png"))) == 2


def test_one_bad_model_never_aborts_the_report() -> None:
    df = _table(n_models=3)
    one = df["model"] == "m1"
    df.loc[one, "correct"] = 1.0                      # every answer correct
    df.loc[one & (df["item"] != "i000"), ["correct", "status"]] = [np.nan, "error"]   # one graded item
    rep = ek.report_build(df, cluster="category")
    assert set(rep.accuracy["model"]) == {"m0", "m1", "m2"}
    all_right = _table(n_models=2).assign(correct=1.0)
    rep = ek.report_build(all_right, cluster="category")
    assert (rep.accuracy["cr_high"] == 1).all() and (rep.accuracy["cr_low"] < 1).all()


def test_true_false_outcomes_and_header_only_csv(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    df = _table(n_models=2)
    df["correct"] = df["correct"].astype(bool)
    path = tmp_path / "tf.csv"
    df.to_csv(path, index=False)
    assert main(["report", str(path), "--out", str(tmp_path / "r")]) == 0
    head = tmp_path / "head.csv"
    head.write_text("model,item,cluster,correct\n")
    assert main(["report", str(head), "--out", str(tmp_path / "r2")]) == 2
    assert "no rows" in capsys.readouterr().err


@pytest.mark.parametrize("folder", [INSPECT_EVAL, INSPECT_EVAL.parent / "json", INSPECT_EVAL.parent / "eval-0.3.170",
                                    LM_EVAL, *sorted(p for p in INSPECT_NEW.iterdir() if p.is_dir()),
                                    LAYOUTS / "lm_eval_same_name"], ids=lambda p: p.name)
def test_every_fixture_folder_gives_a_report_with_no_option(folder: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert main(["report", str(folder), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.html").stat().st_size > 1000
