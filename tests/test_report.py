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
