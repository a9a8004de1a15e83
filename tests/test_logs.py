"""Importers of real eval logs, checked against each fixture's documented ground truth.

The fixtures under ``tests/fixtures/eval_logs/`` are real files written by Inspect (0.3.285 and
0.3.170) and lm-evaluation-harness (0.4.13), copied unchanged; their ``README.md`` and
``ground_truth.csv`` state the outcome of every sample. Nothing here edits them.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil

import numpy as np
import pandas as pd
import pytest

import evalkit as ek

FIX = pathlib.Path(__file__).resolve().parent / "fixtures" / "eval_logs"
INSPECT = FIX / "inspect_ai"
LM_EVAL = FIX / "lm_eval"
HAS_INSPECT = importlib.util.find_spec("inspect_ai") is not None

# How each planned outcome must be imported: (status, correct). For the match() scorer an
# unparsable answer is indistinguishable from a wrong one in the log (both "I"), so it is ok/0.
EXPECTED = {
    "correct": ("ok", 1.0),
    "wrong": ("ok", 0.0),
    "unparsable_invalid_letter": ("parse_failure", np.nan),
    "empty_completion": ("parse_failure", np.nan),
    "error_in_solver": ("error", np.nan),
    "error_in_model_call": ("error", np.nan),
}


def _inspect_logs() -> list[pathlib.Path]:
    return sorted((INSPECT / "logs").glob("*/*"))


def _expected_inspect(truth: pd.DataFrame, task: str) -> pd.DataFrame:
    t = truth[truth["task"] == task].copy()
    prose = t["outcome"] == "unparsable_prose"
    status = t["outcome"].map(lambda o: EXPECTED.get(o, (None, None))[0])
    correct = t["outcome"].map(lambda o: EXPECTED.get(o, (None, np.nan))[1]).astype(float)
    if task == "mcq_subjects":
        status[prose], correct[prose] = "parse_failure", np.nan
    else:  # match(): prose is scored "I"
        status[prose], correct[prose] = "ok", 0.0
    t["status"], t["correct"] = status, correct
    return t


@pytest.mark.parametrize("path", _inspect_logs(), ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_inspect_every_sample_matches_the_ground_truth(path: pathlib.Path) -> None:
    truth = pd.read_csv(INSPECT / "ground_truth.csv")
    df = ek.log_read_inspect(path, cluster="subject,category", epochs="all")
    model, task = df["model"].iloc[0], df["task"].iloc[0]
    exp = _expected_inspect(truth[truth["model"] == model], task)
    assert len(df) == len(exp) == (40 if task == "mcq_subjects" else 24)
    got = df.set_index(["sample_id", "epoch"]).sort_index()
    exp = exp.set_index(["sample_id", "epoch"]).sort_index()
    assert got.index.equals(exp.index)
    assert (got["status"] == exp["status"]).all(), got.loc[got["status"] != exp["status"], ["status"]]
    np.testing.assert_array_equal(got["correct"].to_numpy(), exp["correct"].to_numpy())
    assert (got["cluster"] == exp["cluster"]).all()


def test_inspect_counts_match_the_readme() -> None:
    """The README's per-model accuracy in the log counts parse failures as wrong: 30/38 and 23/37."""
    for stem, n_correct, n_scored in (("2026-11-30T11-09-40-00-00_mcq-subjects_gAXxZJgREq8ZALtZACYmVL", 30, 38),
                                      ("2026-11-30T11-09-42-00-00_mcq-subjects_5Xdjo8KqChV8PRDEuEbgtb", 23, 37)):
        df = ek.log_read_inspect(INSPECT / "logs" / "eval" / f"{stem}.eval", cluster="subject")
        assert (df["correct"] == 1).sum() == n_correct
        assert (df["status"] != "error").sum() == n_scored
        assert (df["status"] == "error").sum() == 40 - n_scored


def test_inspect_epochs_are_averaged_with_counts() -> None:
    df = ek.log_read_inspect(INSPECT / "logs" / "json" /
                             "2026-11-30T11-09-42-00-00_short-answer_iNtnvrKAxnKSazTSxKUter.json")
    assert df["cluster"].unique().tolist() == ["capitals", "numbers"]  # the only metadata field
    by = df.set_index("sample_id")
    # README: cap-02 0, cap-03 1 (errored epoch left out), cap-06 0.5, num-02 0.5, num-05 0; mean 0.75
    assert by.loc["cap-03", ["n_epochs", "n_graded"]].tolist() == [2, 1]
    assert by.loc[["cap-02", "cap-03", "cap-06", "num-02", "num-05"], "correct"].tolist() == [0, 1, 0.5, 0.5, 0]
    assert df["correct"].mean() == pytest.approx(0.75)


def test_eval_and_json_twins_agree() -> None:
    for stem in ("2026-11-30T11-09-42-00-00_mcq-subjects_5Xdjo8KqChV8PRDEuEbgtb",
                 "2026-11-30T11-09-42-00-00_short-answer_iNtnvrKAxnKSazTSxKUter"):
        a = ek.log_read_inspect(INSPECT / "logs" / "eval" / f"{stem}.eval").drop(columns="source")
        b = ek.log_read_inspect(INSPECT / "logs" / "json" / f"{stem}.json").drop(columns="source")
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.skipif(not HAS_INSPECT, reason="inspect_ai is not installed (pip install 'evalkit[inspect]')")
@pytest.mark.parametrize("path", _inspect_logs(), ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_builtin_reader_agrees_with_inspect_ai(path: pathlib.Path) -> None:
    a = ek.log_read_inspect(path, cluster="subject,category", epochs="all")
    b = ek.log_read_inspect(path, cluster="subject,category", epochs="all", reader="inspect_ai")
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.skipif(not HAS_INSPECT, reason="inspect_ai is not installed (pip install 'evalkit[inspect]')")
def test_fresh_inspect_log_from_the_mock_model(tmp_path: pathlib.Path) -> None:
    """Run a tiny task with Inspect's built-in mock model today, and import the log it writes."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match

    def answer(text: str) -> ModelOutput:
        out = ModelOutput.from_content(model="mock", content=text)
        # Usage given, so that mockllm does not fetch a tokenizer to count tokens (no network in tests).
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    targets = ["yes", "yes", "no", "no", "yes", "no"]
    samples = [Sample(input=f"question {i}", target=t, id=f"s{i}", metadata={"group": "g1" if i < 3 else "g2"})
               for i, t in enumerate(targets)]
    model = get_model("mockllm/model", custom_outputs=[answer("yes")] * len(samples))
    logs = eval(Task(dataset=MemoryDataset(samples), scorer=match(location="any")), model=model,
                log_dir=str(tmp_path), display="none", log_format="eval")
    assert logs[0].status == "success", logs[0].error
    files = list(tmp_path.glob("*.eval"))
    assert len(files) == 1
    df = ek.log_read(files)
    assert len(df) == 6 and (df["status"] == "ok").all()
    assert sorted(df["cluster"].unique()) == ["g1", "g2"]
    assert df.set_index("sample_id")["correct"].to_dict() == {f"s{i}": float(t == "yes") for i, t in enumerate(targets)}
    # and the tool's own reader sees the same
    pd.testing.assert_frame_equal(df.drop(columns="source"),
                                  ek.log_read_inspect(files[0], reader="inspect_ai").drop(columns="source"))


def test_lm_eval_scripted_model_matches_the_readme() -> None:
    out = LM_EVAL / "output" / "scripted"
    df = ek.log_read(out, filter="strict-match")
    acc = df[df["task"] == "mini_mcq"]
    assert sorted(acc["cluster"].unique()) == ["mini_mcq_humanities", "mini_mcq_science"]
    by = acc.groupby("cluster")["correct"].mean()
    assert by["mini_mcq_science"] == pytest.approx(0.7) and by["mini_mcq_humanities"] == pytest.approx(0.85)
    short = df[df["task"] == "mini_short"].set_index("sample_id")
    invalid = ["cap-04", "num-03", "cap-05", "slang-02"]  # README: [invalid] under strict-match
    assert sorted(short.index[short["status"] == "parse_failure"]) == sorted(invalid)
    assert (short.loc[["cap-02", "num-02", "num-05"], "correct"] == 0).all()
    assert short["correct"].sum() == 7  # 7/14 under strict-match
    flex = ek.log_read(out / "samples_mini_short_2026-11-30T11-10-12.760310.jsonl", filter="flexible-extract")
    assert (flex["status"] == "ok").all() and flex["correct"].sum() == 9  # 9/14


def test_lm_eval_against_ground_truth_csv() -> None:
    truth = pd.read_csv(LM_EVAL / "ground_truth.csv")
    df = ek.log_read(LM_EVAL / "output", filter="strict-match", cluster="subject,category")
    mcq = df[df["task"] == "mini_mcq"].set_index(["model", "sample_id"])
    t = truth[truth["task"].str.startswith("mini_mcq")].set_index(["model", "id"])
    np.testing.assert_array_equal(mcq.loc[t.index, "correct"].to_numpy(), t["acc"].to_numpy())
    assert (mcq.loc[t.index, "cluster"].to_numpy() == t["cluster"].to_numpy()).all()
    short = df[df["task"] == "mini_short"].set_index(["model", "sample_id"])
    ts = truth[truth["task"] == "mini_short"].set_index(["model", "id"])
    graded = short.loc[ts.index, "status"] == "ok"
    np.testing.assert_array_equal(short.loc[ts.index, "correct"][graded].to_numpy(),
                                  ts["strict_match"][graded.to_numpy()].to_numpy())


def test_lm_eval_results_file_expands_to_its_samples() -> None:
    res = next((LM_EVAL / "output" / "dummy").glob("results_*.json"))
    df = ek.log_read(res, filter="strict-match")
    assert set(df["task"]) == {"mini_mcq", "mini_short"}
    assert len(df) == 40 + 14
    assert (df.loc[df["task"] == "mini_short", "status"] == "parse_failure").all()  # every "lol" is [invalid]


def test_generic_table_roundtrip(tmp_path: pathlib.Path) -> None:
    long = ek.simulate_clustered(n_clusters=5, cluster_size=4, mean=0.6, icc=0.1, rng=1)
    path = tmp_path / "t.csv"
    long.to_csv(path, index=False)
    back = ek.log_read(path)
    assert len(back) == len(long) and back["correct"].sum() == long["correct"].sum()
    jsonl = tmp_path / "t.jsonl"
    long.to_json(jsonl, orient="records", lines=True)
    assert ek.log_read(jsonl)["correct"].sum() == long["correct"].sum()


def test_bad_input_names_the_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ek.LogFormatError, match="no such file"):
        ek.log_read(tmp_path / "nope.eval")
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ek.LogFormatError, match="broken.eval"):
        ek.log_read(bad)
    weird = tmp_path / "x.parquet"
    weird.write_bytes(b"")
    with pytest.raises(ek.LogFormatError, match="unknown log format"):
        ek.log_read(weird)
    table = tmp_path / "t.csv"
    pd.DataFrame({"model": ["a"], "item": ["i"], "cluster": ["c"], "correct": [np.nan]}).to_csv(table, index=False)
    with pytest.raises(ek.LogFormatError, match="no outcome"):
        ek.log_read(table)
    # several filters: the first the file lists is reported, and a note says so (review C6)
    two = ek.log_read(LM_EVAL / "output" / "scripted")
    assert set(two.loc[two["task"] == "mini_short", "filter"]) == {"strict-match"}
    assert any("logged under the filters" in n and "--filter" in n for n in two.attrs["evalkit_notes"])
    with pytest.raises(ek.LogFormatError, match="no cluster field"):
        ek.log_read(INSPECT / "logs" / "eval", cluster="difficulty")
    with pytest.raises(ek.LogFormatError, match="same \\(model, item\\)"):
        ek.log_read(INSPECT / "logs")  # the .json twins duplicate their .eval runs
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ek.LogFormatError, match="holds no log"):
        ek.log_read(empty)


def test_unknown_score_value_is_an_error_not_a_guess(tmp_path: pathlib.Path) -> None:
    src = INSPECT / "logs" / "json" / "2026-11-30T11-09-42-00-00_short-answer_iNtnvrKAxnKSazTSxKUter.json"
    text = src.read_text(encoding="utf-8").replace('"value": "C"', '"value": "P"', 1)
    dst = tmp_path / "partial.json"
    dst.write_text(text, encoding="utf-8")
    with pytest.raises(ek.LogFormatError, match="partial credit"):
        ek.log_read(dst)


def test_lm_eval_without_results_needs_a_model_name(tmp_path: pathlib.Path) -> None:
    src = next((LM_EVAL / "output" / "scripted").glob("samples_mini_mcq_science_*.jsonl"))
    shutil.copy(src, tmp_path / src.name)
    with pytest.raises(ek.LogFormatError, match="model"):
        ek.log_read(tmp_path / src.name)
    df = ek.log_read_lm_eval(tmp_path / src.name, model="scripted")
    assert df["correct"].mean() == pytest.approx(0.7)


# ------------------------------------------------------------------------------------------------
# Regression tests: review 2026-12 (A #9, #11, the importer crashes; C #2, #3, #8, the 21 s read)
# ------------------------------------------------------------------------------------------------

LAYOUTS = FIX / "layouts"


def _finish_reference(df: pd.DataFrame) -> pd.DataFrame:
    """The per-(model, item) loop the vectorised reduction replaces (evalkit's epoch mean)."""
    out = []
    for _, g in df.sort_values(["model", "item", "epoch"], kind="stable").groupby(["model", "item"], sort=False):
        graded = g["status"] == "ok"
        status = "ok" if graded.any() else g["status"].mode().iloc[0]
        out.append({"model": g["model"].iloc[0], "item": g["item"].iloc[0], "status": status,
                    "correct": float(g.loc[graded, "correct"].mean()) if graded.any() else np.nan,
                    "n_epochs": len(g), "n_graded": int(graded.sum()),
                    "n_parse_failure": int((g["status"] == "parse_failure").sum()),
                    "correct_tool": float(g["correct_tool"].mean())})
    return pd.DataFrame(out)


def test_vectorised_epoch_reduction_equals_the_per_item_loop() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    status = rng.choice(["ok", "ok", "ok", "parse_failure", "error", "refusal"], n)
    correct = np.where(status == "ok", rng.integers(0, 2, n).astype(float), np.nan)
    tool = np.where(status == "error", np.nan, np.nan_to_num(correct))
    df = pd.DataFrame({"model": rng.choice(["a", "b"], n), "item": [f"t/{i}" for i in rng.integers(0, 700, n)],
                       "epoch": np.arange(n), "cluster": "c", "correct": correct, "status": status, "detail": "",
                       "correct_tool": tool})
    got = ek.logs._finish(df.copy(), "mean", "x").sort_values(["model", "item"]).reset_index(drop=True)
    ref = _finish_reference(df).sort_values(["model", "item"]).reset_index(drop=True)
    for col in ref.columns:
        pd.testing.assert_series_equal(got[col], ref[col], check_dtype=False, check_names=False, obj=col)


@pytest.mark.parametrize("path", sorted((INSPECT / "logs").glob("eval*/*.eval")) + sorted(
    (LAYOUTS / "inspect_ai").glob("*/*.eval")), ids=lambda p: f"{p.parent.name}/{p.name[:30]}")
def test_summaries_fast_path_equals_every_sample_record(path: pathlib.Path) -> None:
    header, fast = ek.logs._inspect_eval_archive(path)
    _, full = ek.logs._inspect_eval_archive(path, full=True)
    key = {(s["id"], s["epoch"]): ek.logs._inspect_score(path, s, None) for s in full}
    got = {(s["id"], s["epoch"]): ek.logs._inspect_score(path, s, None) for s in fast}
    assert got.keys() == key.keys()
    for k, v in key.items():
        assert got[k][0] == v[0] and got[k][3] == v[3] or (np.isnan(got[k][3]) and np.isnan(v[3]))
    assert [s.get("metadata") for s in sorted(fast, key=lambda s: (s["id"], s["epoch"]))] == \
        [s.get("metadata") for s in sorted(full, key=lambda s: (s["id"], s["epoch"]))]


@pytest.mark.skipif(not HAS_INSPECT, reason="inspect_ai is not installed (pip install 'evalkit[inspect]')")
@pytest.mark.parametrize("path", sorted((LAYOUTS / "inspect_ai").glob("[re]*/*.eval")), ids=lambda p: p.name[-30:])
def test_new_layouts_builtin_reader_agrees_with_inspect_ai(path: pathlib.Path) -> None:
    a = ek.log_read_inspect(path, epochs="all")
    b = ek.log_read_inspect(path, epochs="all", reader="inspect_ai")
    pd.testing.assert_frame_equal(a.drop(columns="source"), b.drop(columns="source"))


def test_log_format_error_is_an_input_error() -> None:
    assert issubclass(ek.LogFormatError, ek.EvalkitInputError)
    err = ek.LogFormatError("x.eval: broken")
    assert err.argument == "path" and str(err) == "x.eval: broken" and isinstance(err, ValueError)


def _json_log(tmp_path: pathlib.Path, edit) -> pathlib.Path:  # noqa: ANN001
    import json

    src = INSPECT / "logs" / "json" / "2026-11-30T11-09-42-00-00_short-answer_iNtnvrKAxnKSazTSxKUter.json"
    log = json.loads(src.read_text(encoding="utf-8"))
    edit(log)
    dst = tmp_path / "edited.json"
    dst.write_text(json.dumps(log), encoding="utf-8")
    return dst


def test_a9_duplicate_ids_raise(tmp_path: pathlib.Path) -> None:
    def twice(log: dict) -> None:
        log["samples"].append(dict(log["samples"][0]))

    with pytest.raises(ek.LogFormatError, match="twice with the same id and epoch"):
        ek.log_read(_json_log(tmp_path, twice))
    src = next((LM_EVAL / "output" / "scripted").glob("samples_mini_mcq_science_*.jsonl"))
    lines = src.read_text().splitlines()
    dst = tmp_path / src.name
    dst.write_text("\n".join(lines + lines[:1]) + "\n")
    with pytest.raises(ek.LogFormatError, match="share an id"):
        ek.log_read_lm_eval(dst, model="m")


@pytest.mark.parametrize("what", ["list", "no_id", "score_not_dict", "epoch_none"])
def test_malformed_inspect_samples_name_the_file(tmp_path: pathlib.Path, what: str) -> None:
    def edit(log: dict) -> None:
        s = log["samples"][0]
        if what == "list":
            log["samples"][0] = [s]
        elif what == "no_id":
            del s["id"]
        elif what == "score_not_dict":
            s["scores"] = {"match": "C"}
        else:
            s["epoch"] = None

    path = _json_log(tmp_path, edit)
    if what == "epoch_none":
        assert len(ek.log_read(path, epochs="all")) == 24   # epoch None is read as epoch 1
        return
    with pytest.raises(ek.LogFormatError, match="edited.json"):
        ek.log_read(path)


def test_corrupt_eval_entry_names_the_file_and_entry(tmp_path: pathlib.Path) -> None:
    import zipfile

    src = next((INSPECT / "logs" / "eval-0.3.170").glob("*short-answer*.eval"))
    dst = tmp_path / "corrupt.eval"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename in ("summaries.json",) or info.filename.startswith("samples/cap-01"):
                data = data[: len(data) // 2]
            zout.writestr(info.filename, data)
    with pytest.raises(ek.LogFormatError, match="corrupt.eval.*not valid JSON"):
        ek.log_read(dst)


def test_a11_text_outcomes_are_an_error_not_nan(tmp_path: pathlib.Path) -> None:
    table = tmp_path / "yn.csv"
    pd.DataFrame({"model": ["a", "a"], "item": ["i", "j"], "cluster": ["c", "c"], "correct": ["yes", "no"]}).to_csv(
        table, index=False)
    with pytest.raises(ek.LogFormatError, match="'yes'"):
        ek.log_read(table)


def test_on_error_note_leaves_one_bad_file_out(tmp_path: pathlib.Path) -> None:
    good = next((INSPECT / "logs" / "eval").glob("*short-answer*.eval"))
    (tmp_path / good.name).write_bytes(good.read_bytes())
    (tmp_path / "broken.eval").write_bytes(b"not a zip")
    df = ek.log_read(tmp_path, on_error="note")
    assert len(df) == 12 and any("broken.eval" in n for n in df.attrs["evalkit_notes"])
    with pytest.raises(ek.LogFormatError, match="broken.eval"):
        ek.log_read(tmp_path)
