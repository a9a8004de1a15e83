"""Tests for evalkit.reproduce: verdict rules, input checks, saving and the report."""

from __future__ import annotations

import doctest
import json
import math
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import evalkit.reproduce
from evalkit.reproduce import (
    COLUMNS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_TESTED,
    PAPER_ALIASES,
    PAPERS,
    REPRODUCED,
    ReproFrame,
    ReproTable,
    repro_report_write,
)
from evalkit.reproduce.cli import main


def one_row(**kwargs: object) -> dict:
    """Add one row to a fresh table (defaults: a reproduced design effect) and return it."""
    args = {
        "paper": "MISSING",
        "claim": "design effect",
        "setting": "m = 50, rho = 0.2",
        "paper_value": 10.8,
        "evalkit_value": 10.8,
        "tolerance": 0.05,
    }
    args.update(kwargs)
    table = ReproTable("00-why-the-average-lies")
    table.add(**args)  # type: ignore[arg-type]
    return table.to_frame().iloc[0].to_dict()


# --- verdict rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evalkit_value", "verdict"),
    [(10.8, REPRODUCED), (10.84, REPRODUCED), (10.76, REPRODUCED), (10.9, NOT_REPRODUCED), (10.7, NOT_REPRODUCED)],
)
def test_numeric_rule_compares_distance_with_tolerance(evalkit_value: float, verdict: str) -> None:
    assert one_row(evalkit_value=evalkit_value)["verdict"] == verdict


def test_numeric_rule_includes_the_boundary_despite_float_noise() -> None:
    # 0.1 + 0.2 - 0.2 is not exactly 0.1 in binary; a difference equal to the tolerance still counts.
    assert one_row(paper_value=0.2, evalkit_value=0.1 + 0.2, tolerance=0.1)["verdict"] == REPRODUCED
    assert one_row(paper_value=46, evalkit_value=46, tolerance=0)["verdict"] == REPRODUCED


@pytest.mark.parametrize(("holds", "verdict"), [(True, REPRODUCED), (False, NOT_REPRODUCED)])
def test_holds_decides_when_given(holds: bool, verdict: str) -> None:
    row = one_row(paper_value="below 0.95", evalkit_value=0.83, tolerance="4 MCSE", holds=holds)
    assert row["verdict"] == verdict


def test_holds_must_agree_with_the_numeric_rule() -> None:
    # Before: holds=True turned a miss of 88 into "reproduced". Now the numbers decide.
    with pytest.raises(ValueError, match="holds=True disagrees"):
        one_row(evalkit_value=99.0, holds=True)
    with pytest.raises(ValueError, match="holds=False disagrees"):
        one_row(evalkit_value=10.8, holds=False)
    assert one_row(evalkit_value=10.8, holds=True)["verdict"] == REPRODUCED
    with pytest.raises(ValueError, match="disagrees"):
        one_row(paper_value="< 0.60", evalkit_value=0.7, tolerance=None, threshold=0.6, compare="<", holds=True)


def test_numpy_scalars_are_accepted_and_saved_as_plain_json(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", np.float32(0.5), np.float64(0.5), tolerance=np.int64(0), holds=np.bool_(True))
    table.add("MISSING", "b", "s", np.int64(46), np.float64(46.3), tolerance=np.float64(0.5),
              threshold=np.float32(46), compare=">", mcse=np.float64(0.1), full_run_value=np.int64(47))
    assert table.to_frame()["verdict"].tolist() == [REPRODUCED, REPRODUCED]
    saved = json.loads(table.save(tmp_path).read_text())
    assert saved[1]["paper_value"] == 46.0 and saved[1]["tolerance"] == 0.5
    assert saved[1]["mcse"] == 0.1 and saved[1]["full_run_value"] == 47.0 and saved[0]["holds"] is True


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tolerance": None},  # number without a tolerance
        {"paper_value": "about 10", "tolerance": 0.5},  # text paper value
        {"tolerance": "roughly"},  # text tolerance
    ],
)
def test_row_without_a_verdict_rule_is_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="no verdict rule"):
        one_row(**kwargs)


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"evalkit_value": math.nan}, ValueError, "evalkit_value must be finite"),
        ({"evalkit_value": math.inf}, ValueError, "evalkit_value must be finite"),
        ({"evalkit_value": "10.8"}, TypeError, "evalkit_value must be a real number"),
        ({"evalkit_value": True}, TypeError, "evalkit_value must be a real number"),
        ({"evalkit_value": None}, TypeError, "evalkit_value must be a real number"),
        ({"paper_value": math.nan}, ValueError, "paper_value must be finite"),
        ({"paper_value": "  "}, ValueError, "paper_value must not be empty"),
        ({"paper_value": None}, TypeError, "paper_value must be a real number"),
        ({"tolerance": -0.1}, ValueError, "non-negative"),
        ({"tolerance": math.inf}, ValueError, "tolerance must be finite"),
        ({"paper": "000"}, ValueError, "one of the labels"),
        ({"paper": "papers/0"}, ValueError, "one of the labels"),
        ({"paper": "papers/005"}, ValueError, "one of the labels"),
        ({"paper": "missing"}, ValueError, "one of the labels"),
        ({"paper": 0}, TypeError, "paper must be a string"),
        ({"claim": ""}, ValueError, "claim must not be empty"),
        ({"setting": None}, TypeError, "setting must be a string"),
        ({"note": 3}, TypeError, "note must be a string"),
        ({"holds": 1}, TypeError, "holds must be True, False or None"),
        ({"holds": "yes"}, TypeError, "holds must be True, False or None"),
        ({"mcse": -0.1}, ValueError, "mcse must be non-negative"),
        ({"mcse": math.nan}, ValueError, "mcse must be finite"),
        ({"full_run_value": math.inf}, ValueError, "full_run_value must be finite"),
        ({"threshold": 0.6}, ValueError, "threshold and compare together"),
        ({"compare": "<"}, ValueError, "threshold and compare together"),
        ({"threshold": 0.6, "compare": "=="}, ValueError, "compare must be one of"),
        ({"threshold": "0.6", "compare": "<"}, TypeError, "threshold must be a real number"),
        ({"paper_value": "x", "tolerance": "t", "holds": True, "mcse": 0.1}, ValueError, "mcse needs a numeric"),
        ({"paper_value": "x", "tolerance": "t", "holds": True, "full_run_value": 1.0}, ValueError,
         "full_run_value needs a numeric"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        one_row(**kwargs)


@pytest.mark.parametrize("name", ["", "   ", "../00-x", "notebooks/00-x", "00 x", "-00"])
def test_notebook_name_must_be_a_file_stem(name: str) -> None:
    with pytest.raises(ValueError):
        ReproTable(name)


def test_notebook_name_drops_the_ipynb_suffix() -> None:
    assert ReproTable("01-missing-responses.ipynb").notebook == "01-missing-responses"


# --- the table -----------------------------------------------------------------------------


def test_to_frame_has_the_documented_columns_in_order() -> None:
    table = ReproTable("00-x")
    assert list(table.to_frame().columns) == list(COLUMNS)
    assert len(table.to_frame()) == 0
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.add("CBMM", "b", "s", "monotone", 0.7, holds=True, note="why")
    frame = table.to_frame()
    assert list(frame.columns) == list(COLUMNS)
    assert frame["claim"].tolist() == ["a", "b"]
    assert frame["notebook"].unique().tolist() == ["00-x"]
    assert frame["paper_value"].tolist() == [1.0, "monotone"]
    assert frame["tolerance"].tolist()[1] is None


def test_adding_the_same_row_again_replaces_it() -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "deff", "m=50", 10.8, 9.0, tolerance=0.1)
    table.add("MISSING", "other", "m=50", 10.8, 10.8, tolerance=0.1)
    table.add("MISSING", "deff", "m=50", 10.8, 10.8, tolerance=0.1)  # a re-run cell
    frame = table.to_frame()
    assert len(table) == 2
    assert frame["claim"].tolist() == ["deff", "other"]
    assert frame["verdict"].tolist() == [REPRODUCED, REPRODUCED]


def test_show_formats_numbers_and_drops_the_notebook_column() -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "deff", "m=50", 10.8, 10.80000001, tolerance=0.05)
    table.add("MISSING", "n eff", "500 items", 46, 46.2962963, tolerance=1)
    table.add("MISSING", "coverage", "rho=0.2", "below 0.95", 0.8312345, holds=True)
    shown = table.show()
    assert "notebook" not in shown.columns
    assert shown["evalkit_value"].tolist() == ["10.8", "46.3", "0.8312"]
    assert shown["paper_value"].tolist() == ["10.8", "46", "below 0.95"]
    assert shown["tolerance"].tolist() == ["0.05", "1", ""]


# --- saving and the report -----------------------------------------------------------------


def test_save_without_a_folder_does_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    assert table.save() is None
    monkeypatch.setenv("EVALKIT_REPORT_DIR", "")
    assert table.save() is None
    assert list(tmp_path.iterdir()) == []


def test_save_uses_the_environment_and_overwrites(tmp_path, monkeypatch) -> None:
    rows_dir = tmp_path / "rows"
    monkeypatch.setenv("EVALKIT_REPORT_DIR", str(rows_dir))
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    path = table.save()
    assert path == rows_dir / "00-x.json"
    table.add("MISSING", "b", "s", 1.0, 2.0, tolerance=0.5)
    table.show()  # show saves too
    saved = json.loads(path.read_text())
    assert [row["claim"] for row in saved] == ["a", "b"]
    assert sorted(p.name for p in rows_dir.iterdir()) == ["00-x.json"]


def test_round_trip_through_save_and_report(tmp_path) -> None:
    rows_dir, out_dir = tmp_path / "rows", tmp_path / "report"
    first = ReproTable("00-why-the-average-lies")
    first.add("MISSING", "deff", "m = 50, rho = 0.2", 10.8, 10.8, tolerance=0.05)
    first.add("MISSING", "iid covers | CR covers", "rho = 0.2", "below 0.95", 0.83, holds=True, note="a|b")
    second = ReproTable("01-missing-responses")
    second.add("MISSING", "IPW bias", "MNAR", 0.0, 0.03, tolerance=0.01, note="fewer clusters")
    assert first.save(rows_dir) == rows_dir / "00-why-the-average-lies.json"
    second.save(rows_dir)

    md_path = repro_report_write(rows_dir, out_dir)
    assert md_path == out_dir / "reproduction_report.md"

    expected = pd.DataFrame(
        first.to_frame().to_dict(orient="records") + second.to_frame().to_dict(orient="records"), dtype=object
    )
    csv = pd.read_csv(out_dir / "reproduction_report.csv", keep_default_na=False)
    assert list(csv.columns) == list(COLUMNS)
    assert csv["claim"].tolist() == expected["claim"].tolist()
    assert csv["verdict"].tolist() == [REPRODUCED, REPRODUCED, NOT_REPRODUCED]
    np.testing.assert_allclose(csv["evalkit_value"], expected["evalkit_value"].astype(float))

    report = json.loads((out_dir / "reproduction_report.json").read_text())
    assert report["totals"] == {"rows": 3, REPRODUCED: 2, NOT_REPRODUCED: 1, INCONCLUSIVE: 0, NOT_TESTED: 0,
                                "with_authors_value": 0}
    assert report["notebooks"] == ["00-why-the-average-lies", "01-missing-responses"]
    assert report["rows"] == expected.to_dict(orient="records")

    md = md_path.read_text()
    assert "2 reproduced, 1 not reproduced" in md
    assert "## 00-why-the-average-lies" in md and "## 01-missing-responses" in md
    assert "iid covers \\| CR covers" in md  # pipes in cells are escaped
    table_lines = [line for line in md.splitlines() if line.startswith("| MISSING")]
    assert len(table_lines) == 3
    assert all(line.count(" | ") == 13 for line in table_lines)
    assert f"- **MISSING**: {PAPERS['MISSING']}" in md  # the citation, not a file path


def test_report_lists_a_notebook_that_saved_no_rows(tmp_path) -> None:
    ReproTable("02-irt-at-scale").save(tmp_path)
    md = repro_report_write(tmp_path, tmp_path / "out").read_text()
    assert "## 02-irt-at-scale" in md and "0 reproduced, 0 not reproduced" in md


def test_report_without_row_files_fails_clearly(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="no row folder"):
        repro_report_write(tmp_path / "missing", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match=r"no \*\.json row files.*make all"):
        repro_report_write(tmp_path, tmp_path / "out")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("{not json", "not valid JSON"),
        ('{"a": 1}', "JSON list"),
        ('[{"paper": "MISSING"}]', "row 0 lacks the columns"),
    ],
)
def test_report_refuses_malformed_row_files(tmp_path, content: str, match: str) -> None:
    (tmp_path / "00-x.json").write_text(content)
    with pytest.raises(ValueError, match=match):
        repro_report_write(tmp_path, tmp_path / "out")


def test_report_refuses_an_unknown_verdict(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    path = table.save(tmp_path)
    rows = json.loads(path.read_text())
    rows[0]["verdict"] = "close enough"
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="verdict"):
        repro_report_write(tmp_path, tmp_path / "out")


def test_command_line(tmp_path, capsys) -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.save(tmp_path / "rows")
    assert main([str(tmp_path / "rows"), str(tmp_path / "out")]) == 0
    assert "1 reproduced, 0 not reproduced" in capsys.readouterr().out
    assert main([str(tmp_path / "empty"), str(tmp_path / "out")]) == 1
    assert "no row folder" in capsys.readouterr().err


def test_module_runs_as_a_script(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.save(tmp_path / "rows")
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.reproduce", str(tmp_path / "rows"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "reproduction_report.csv").is_file()


# --- paper labels --------------------------------------------------------------------------


def test_papers_registry_has_the_five_labels_with_full_citations() -> None:
    assert list(PAPERS) == ["MISSING", "FAQ", "CBMM", "HARMONY", "ECC", "MILLER"]
    assert "Handling Missing Responses under Cluster Dependence" in PAPERS["MISSING"]
    assert "arXiv:2601.20251" in PAPERS["FAQ"] and "arXiv:2605.17110" in PAPERS["ECC"]
    assert "Qu, Qiang Heng, Hao Zeng, Xiaoqian Liu" in PAPERS["CBMM"]
    assert "arXiv:2509.25671" in PAPERS["HARMONY"] and "arXiv:2605.07046" in PAPERS["CBMM"]
    assert set(PAPER_ALIASES.values()) == set(PAPERS) - {"MILLER"}  # the aliases predate the planning label
    assert "arXiv:2411.00640" in PAPERS["MILLER"]


@pytest.mark.parametrize(("old", "new"), sorted(PAPER_ALIASES.items()))
def test_old_paper_keys_still_work_as_deprecated_aliases(old: str, new: str) -> None:
    table = ReproTable("00-x")
    with pytest.warns(PendingDeprecationWarning, match=f"use the label '{new}'"):
        table.add(old, "a", "s", 1.0, 1.0, tolerance=0.0)
    table.add(new, "a", "s", 1.0, 1.0, tolerance=0.0)  # the same row: replaced, not duplicated
    assert table.to_frame()["paper"].tolist() == [new]


def test_deprecated_keys_are_silent_under_default_warning_filters() -> None:
    # Notebooks still using "papers/000" must not grow warning output until their owners update them.
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
        one_row(paper="papers/000")
    assert caught == []


# --- Monte-Carlo-aware verdicts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "mcse", "verdict"),
    [
        (0.50, 0.02, REPRODUCED),  # 5 MCSE below the threshold
        (0.57, 0.02, INCONCLUSIVE),  # 1.5 MCSE below: a longer run could land on either side
        (0.60, 0.02, INCONCLUSIVE),
        (0.63, 0.02, INCONCLUSIVE),
        (0.65, 0.02, NOT_REPRODUCED),  # 2.5 MCSE above
        (0.57, None, REPRODUCED),  # no MCSE given: the plain threshold rule
        (0.59, 0.0, REPRODUCED),
    ],
)
def test_threshold_claim_is_inconclusive_within_two_mcse(value: float, mcse: float | None, verdict: str) -> None:
    row = one_row(paper_value="< 0.60", evalkit_value=value, tolerance=None, threshold=0.60, compare="<", mcse=mcse)
    assert row["verdict"] == verdict


@pytest.mark.parametrize(
    ("value", "verdict"),
    [(10.8, REPRODUCED), (10.95, INCONCLUSIVE), (10.65, INCONCLUSIVE), (11.3, NOT_REPRODUCED)],
)
def test_numeric_claim_is_inconclusive_near_either_edge_of_the_band(value: float, verdict: str) -> None:
    # band [10.3, 11.3]... with tolerance 0.2: edges 10.6 and 11.0; 2 MCSE = 0.1
    assert one_row(evalkit_value=value, tolerance=0.2, mcse=0.05)["verdict"] == verdict


def test_a_longer_run_that_disagrees_forbids_reproduced() -> None:
    # The short run passes, the recorded full run misses: before, the note said so and the row still read "reproduced".
    row = one_row(paper_value="< 2", evalkit_value=1.4, tolerance=None, threshold=2.0, compare="<",
                  full_run_value=2.1, note="2.1 in the full 1,000-rep study")
    assert row["verdict"] == NOT_REPRODUCED
    assert one_row(evalkit_value=10.8, full_run_value=10.82)["verdict"] == REPRODUCED
    assert one_row(evalkit_value=10.8, full_run_value=11.0)["verdict"] == NOT_REPRODUCED
    inconclusive = one_row(paper_value="< 2", evalkit_value=1.9, tolerance=None, threshold=2.0, compare="<",
                           mcse=0.1, full_run_value=1.0)
    assert inconclusive["verdict"] == INCONCLUSIVE


# --- showing notes in full -------------------------------------------------------------------


def test_show_displays_long_notes_in_full() -> None:
    note = "MMLU-Pro's clusters are large (median 80 items, ICC ~0.09), so deff is in the tens; " * 2
    table = ReproTable("00-x")
    table.add("MISSING", "widening", "real data", "1.3-1.5x", 3.1, holds=False, note=note)
    shown = table.show()
    assert isinstance(shown, ReproFrame)
    assert note.strip() in repr(shown)
    assert note.strip() in shown._repr_html_()
    assert note.strip() in repr(shown.loc[:, ["claim", "note"]])  # still in full after selecting columns


def test_show_adds_mcse_and_full_run_columns_only_when_used() -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    assert "mcse" not in table.show().columns
    table.add("MISSING", "b", "s", "< 0.6", 0.4, threshold=0.6, compare="<", mcse=0.01)
    shown = table.show()
    assert list(shown.columns) == ["paper", "claim", "setting", "paper_value", "evalkit_value", "tolerance", "mcse",
                                   "verdict", "note"]
    assert shown["tolerance"].tolist() == ["0", "< 0.6"]
    assert shown["mcse"].tolist() == ["", "0.01"]


# --- the report re-checks every row -----------------------------------------------------------


def saved_rows(tmp_path: pathlib.Path) -> tuple[pathlib.Path, list[dict]]:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.add("MISSING", "b", "s", "< 0.6", 0.5, threshold=0.6, compare="<", mcse=0.01)
    path = table.save(tmp_path / "rows")
    assert path is not None
    return path, json.loads(path.read_text())


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("verdict", NOT_REPRODUCED, r"says 'not reproduced', but its values give 'reproduced'"),
        ("evalkit_value", 5.0, r"says 'reproduced', but its values give 'not reproduced'"),
        ("evalkit_value", "1.0", "evalkit_value must be a real number"),
        ("evalkit_value", None, "evalkit_value must be a real number"),
        ("tolerance", -1.0, "tolerance must be non-negative"),
        ("paper", "papers/9", "paper must be one of the labels"),
        ("notebook", "01-y", "belongs to notebook '01-y'"),
    ],
)
def test_report_recomputes_verdicts_and_names_the_file_and_row(tmp_path, field: str, value: object,
                                                                match: str) -> None:
    path, rows = saved_rows(tmp_path)
    rows[0][field] = value
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=match) as info:
        repro_report_write(path.parent, tmp_path / "out")
    assert f"{path}, row 0" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_report_refuses_an_unknown_column(tmp_path) -> None:
    path, rows = saved_rows(tmp_path)
    rows[1]["verdict_override"] = "reproduced"
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"row 1 has unknown columns \['verdict_override'\]"):
        repro_report_write(path.parent, tmp_path / "out")


def test_report_rejects_duplicate_rows(tmp_path) -> None:
    path, rows = saved_rows(tmp_path)
    path.write_text(json.dumps(rows + [dict(rows[0])]))
    with pytest.raises(ValueError, match=r"row 2 repeats .*row 0"):
        repro_report_write(path.parent, tmp_path / "out")


def test_report_counts_inconclusive_rows(tmp_path) -> None:
    path, rows = saved_rows(tmp_path)
    rows[1]["evalkit_value"], rows[1]["verdict"] = 0.59, INCONCLUSIVE
    path.write_text(json.dumps(rows))
    md = repro_report_write(path.parent, tmp_path / "out").read_text()
    assert "1 reproduced, 0 not reproduced, 1 inconclusive" in md
    report = json.loads((tmp_path / "out" / "reproduction_report.json").read_text())
    assert report["totals"][INCONCLUSIVE] == 1


def test_report_files_are_written_together_or_not_at_all(tmp_path, monkeypatch) -> None:
    path, _ = saved_rows(tmp_path)
    out = tmp_path / "out"
    repro_report_write(path.parent, out)
    before = {p.name: p.read_text() for p in out.iterdir()}
    table = ReproTable("01-y")
    table.add("CBMM", "new", "s", 2.0, 2.0, tolerance=0.0)
    table.save(path.parent)

    real_replace = pathlib.Path.replace

    def failing_replace(self: pathlib.Path, target):  # the CSV is the last file to be moved into place
        if self.name.endswith(".tmp") and str(target).endswith("reproduction_report.csv"):
            raise OSError("disk full")
        return real_replace(self, target)

    monkeypatch.setattr(pathlib.Path, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        repro_report_write(path.parent, out)
    monkeypatch.undo()
    assert {p.name: p.read_text() for p in out.iterdir()} == before  # the old report, whole; no temporary files

    real_write = pathlib.Path.write_text

    def failing_write(self: pathlib.Path, *args, **kwargs):
        if ".reproduction_report.json" in self.name:
            raise OSError("quota")
        return real_write(self, *args, **kwargs)

    fresh = tmp_path / "fresh"
    monkeypatch.setattr(pathlib.Path, "write_text", failing_write)
    with pytest.raises(OSError, match="quota"):
        repro_report_write(path.parent, fresh)
    assert list(fresh.iterdir()) == []


# --- the command line -----------------------------------------------------------------------


def test_command_line_reports_bad_paths_without_a_traceback(tmp_path, capsys) -> None:
    path, _ = saved_rows(tmp_path)
    a_file = tmp_path / "taken"
    a_file.write_text("x")
    assert main([str(path.parent), str(a_file)]) == 1
    assert "the output folder" in capsys.readouterr().err and a_file.read_text() == "x"
    assert main([str(path), str(tmp_path / "out")]) == 1  # the row *file* given as the folder
    assert "is a file" in capsys.readouterr().err
    (path.parent / "old.json").mkdir()  # a directory named like a row file
    assert main([str(path.parent), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "old.json is not a file" in err and "Traceback" not in err


def test_module_runs_without_a_runpy_warning(tmp_path) -> None:
    # Before, evalkit/__init__ imported evalkit.reproduce and runpy warned (the Makefile silenced it with -W).
    path, _ = saved_rows(tmp_path)
    done = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-m", "evalkit.reproduce", str(path.parent),
         str(tmp_path / "out")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "2 reproduced, 0 not reproduced, 0 inconclusive" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "evalkit.reproduce", str(path), str(tmp_path / "out2")],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr


def test_docstring_examples_run() -> None:
    result = doctest.testmod(evalkit.reproduce, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# --- three columns: paper, authors' code or released results, evalkit -------------------------

FAQ_LOGS = {
    "repository": "skbwu/efficiently-evaluating-llms",
    "commit": "cb93100",
    "file": "logs/final/cleaned/faq_summary.csv",
    "how": "(mean uniform width / mean FAQ width)^2 per seed, mean over 100 seeds",
}


def test_authors_value_gets_its_own_verdicts() -> None:
    # evalkit 4.15, authors 4.27, paper 4.68 (tolerance 0.3): evalkit matches the authors, not the
    # paper, and the authors' own logs do not give the paper's number either.
    row = one_row(paper="FAQ", paper_value=4.68, evalkit_value=4.15, tolerance=0.3, authors_value=4.27,
                  authors_source=FAQ_LOGS)
    assert row["verdict"] == NOT_REPRODUCED
    assert row["authors_verdict"] == REPRODUCED
    assert row["authors_vs_paper"] == NOT_REPRODUCED
    assert row["authors_tolerance"] == 0.3 and row["authors_source"] == FAQ_LOGS
    row = one_row(paper="FAQ", paper_value=5.01, evalkit_value=4.0, tolerance=0.3, authors_value=5.006,
                  authors_source=FAQ_LOGS, authors_tolerance=2.0)
    assert (row["verdict"], row["authors_verdict"], row["authors_vs_paper"]) == (
        NOT_REPRODUCED, REPRODUCED, REPRODUCED)


def test_authors_verdict_is_inconclusive_within_two_mcse() -> None:
    row = one_row(paper_value=1.0, evalkit_value=1.25, tolerance=0.2, authors_value=1.0,
                  authors_source=FAQ_LOGS, mcse=0.05)
    assert row["authors_verdict"] == INCONCLUSIVE


def test_authors_vs_paper_follows_a_threshold_claim() -> None:
    row = one_row(paper_value="< 0.60", evalkit_value=0.5, tolerance=None, threshold=0.6, compare="<",
                  authors_value=0.7, authors_tolerance=0.05, authors_source=FAQ_LOGS)
    assert (row["verdict"], row["authors_verdict"], row["authors_vs_paper"]) == (
        REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED)


def test_row_without_authors_value_has_empty_authors_columns() -> None:
    row = one_row()
    assert all(row[c] is None for c in ("authors_value", "authors_tolerance", "authors_source",
                                        "authors_verdict", "authors_vs_paper"))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"authors_value": 1.0}, TypeError, "authors_source must be a mapping"),
        ({"authors_value": 1.0, "authors_source": {"repository": "a/b"}}, ValueError, "missing"),
        ({"authors_value": 1.0, "authors_source": {**FAQ_LOGS, "url": "x"}}, ValueError, "unknown"),
        ({"authors_value": 1.0, "authors_source": {**FAQ_LOGS, "how": " "}}, ValueError, "must not be empty"),
        ({"authors_value": math.nan, "authors_source": FAQ_LOGS}, ValueError, "finite"),
        ({"authors_source": FAQ_LOGS}, ValueError, "needs an authors_value"),
        ({"authors_value": 1.0, "authors_source": FAQ_LOGS, "tolerance": "4 MCSE", "holds": True,
          "paper_value": "about 1"}, ValueError, "give authors_tolerance"),
    ],
)
def test_authors_value_needs_its_provenance(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        one_row(**kwargs)


def test_show_adds_the_authors_columns_only_when_used() -> None:
    table = ReproTable("06-x")
    table.add("FAQ", "ESS at 5%", "MMLU-Pro", 4.68, 4.15, tolerance=0.3)
    assert "authors_value" not in table.show().columns
    table.add("FAQ", "ESS at 12.5%", "MMLU-Pro", 5.01, 4.9, tolerance=0.3, authors_value=5.006,
              authors_source=FAQ_LOGS)
    shown = table.show()
    assert list(shown.columns[-5:]) == ["authors_value", "authors_verdict", "authors_vs_paper", "authors_source",
                                        "note"]
    assert shown["authors_value"].tolist() == ["", "5.006"]
    assert shown["authors_source"].iloc[1].startswith("skbwu/efficiently-evaluating-llms @ cb93100, logs/")


def test_report_shows_three_columns_and_recomputes_the_authors_verdicts(tmp_path) -> None:
    table = ReproTable("06-x")
    table.add("FAQ", "ESS at 5%", "MMLU-Pro", 4.68, 4.15, tolerance=0.3, authors_value=4.27,
              authors_source=FAQ_LOGS)
    table.add("FAQ", "coverage", "MMLU-Pro", 0.95, 0.95, tolerance=0.01)
    path = table.save(tmp_path / "rows")
    md = repro_report_write(tmp_path / "rows", tmp_path / "out").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| paper |"))
    assert "authors' value" in header and "evalkit vs authors" in header and "authors vs paper" in header
    line = next(line for line in md.splitlines() if "ESS at 5%" in line)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3:6] == ["4.68", "4.27 [1]", "4.15"]
    assert cells[10:13] == [NOT_REPRODUCED, REPRODUCED, NOT_REPRODUCED]
    assert "1. skbwu/efficiently-evaluating-llms @ cb93100, logs/final/cleaned/faq_summary.csv" in md
    data = json.loads((tmp_path / "out" / "reproduction_report.json").read_text())
    assert data["totals"]["with_authors_value"] == 1
    csv = pd.read_csv(tmp_path / "out" / "reproduction_report.csv")
    assert json.loads(csv["authors_source"].iloc[0]) == FAQ_LOGS
    # a stored authors' verdict that its values do not give is refused
    rows = json.loads(path.read_text())
    rows[0]["authors_verdict"] = NOT_REPRODUCED
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="authors_verdict"):
        repro_report_write(tmp_path / "rows", tmp_path / "out")


def test_report_reads_row_files_written_before_the_authors_columns(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("MISSING", "a", "s", 1.0, 1.0, tolerance=0.0)
    path = table.save(tmp_path)
    rows = json.loads(path.read_text())
    old = [{k: v for k, v in r.items() if not k.startswith("authors_")} for r in rows]
    path.write_text(json.dumps(old))
    md = repro_report_write(tmp_path, tmp_path / "out").read_text()
    assert "1 reproduced" in md


@pytest.mark.parametrize("value", [0.30, 0.61, 0.95])
def test_not_tested_because_without_full_size_run_is_not_tested_whatever_its_value(value: float) -> None:
    row = one_row(paper_value="< 0.6", evalkit_value=value, tolerance=None, threshold=0.6, compare="<",
                  not_tested_because="40 of 1,111 models")
    assert row["verdict"] == NOT_TESTED
    assert row["not_tested_because"] == "40 of 1,111 models"


@pytest.mark.parametrize(("full", "verdict"), [(0.5, REPRODUCED), (0.7, NOT_REPRODUCED)])
def test_not_tested_because_with_full_size_run_takes_the_full_runs_verdict(full: float, verdict: str) -> None:
    # The reduced run fails the rule (0.65 > 0.6); only the full-size run decides.
    row = one_row(paper_value="< 0.6", evalkit_value=0.65, tolerance=None, threshold=0.6, compare="<",
                  not_tested_because="40 of 1,111 models", full_run_value=full)
    assert row["verdict"] == verdict


def test_not_tested_because_still_needs_a_rule_and_a_text() -> None:
    with pytest.raises(ValueError, match="no verdict rule"):
        one_row(paper_value="small", evalkit_value=0.1, tolerance=None, not_tested_because="40 models")
    with pytest.raises(ValueError, match="not_tested_because"):
        one_row(paper_value=0.5, evalkit_value=0.5, tolerance=0.1, not_tested_because="  ")


def test_report_counts_not_tested_rows_and_reads_old_row_files(tmp_path) -> None:
    table = ReproTable("06.2-x")
    table.add("FAQ", "ESS", "full", 5.0, 4.2, 0.5, not_tested_because="40 models")
    table.add("FAQ", "ESS", "other", 5.0, 5.1, 0.5)
    rows_dir = tmp_path / "rows"
    table.save(rows_dir)
    old = ReproTable("06.1-y")
    old.add("FAQ", "coverage", "s", 0.9, 0.91, 0.02)
    path = old.save(rows_dir)
    assert path is not None
    stored = json.loads(path.read_text())
    for row in stored:
        del row["not_tested_because"]  # a row file written before the column existed
    path.write_text(json.dumps(stored))
    md = repro_report_write(rows_dir, tmp_path / "out").read_text()
    assert "2 reproduced, 0 not reproduced, 0 inconclusive, 1 not tested in the paper's setting" in md
    assert "| 40 models | not tested in the paper's setting |" in md
    shown = table.show()
    assert list(shown["verdict"]) == [NOT_TESTED, REPRODUCED] and "not_tested_because" in shown.columns
