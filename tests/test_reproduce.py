"""Tests for evalkit.reproduce: verdict rules, input checks, saving and the report."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from evalkit.reproduce import COLUMNS, NOT_REPRODUCED, REPRODUCED, ReproTable, main, repro_report_write


def one_row(**kwargs: object) -> dict:
    """Add one row to a fresh table (defaults: a reproduced design effect) and return it."""
    args = {
        "paper": "papers/000",
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


def test_holds_overrides_the_numeric_rule() -> None:
    assert one_row(evalkit_value=99.0, holds=True)["verdict"] == REPRODUCED
    assert one_row(evalkit_value=10.8, holds=False)["verdict"] == NOT_REPRODUCED


def test_numpy_scalars_are_accepted_and_saved_as_plain_json(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("papers/000", "a", "s", np.float32(0.5), np.float64(0.5), tolerance=np.int64(0), holds=np.bool_(True))
    table.add("papers/000", "b", "s", np.int64(46), np.float64(46.3), tolerance=np.float64(0.5))
    assert table.to_frame()["verdict"].tolist() == [REPRODUCED, REPRODUCED]
    saved = json.loads(table.save(tmp_path).read_text())
    assert saved[1]["paper_value"] == 46.0 and saved[1]["tolerance"] == 0.5


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
        ({"paper": "000"}, ValueError, "papers/000"),
        ({"paper": "papers/0"}, ValueError, "papers/000"),
        ({"paper": 0}, TypeError, "paper must be a string"),
        ({"claim": ""}, ValueError, "claim must not be empty"),
        ({"setting": None}, TypeError, "setting must be a string"),
        ({"note": 3}, TypeError, "note must be a string"),
        ({"holds": 1}, TypeError, "holds must be True, False or None"),
        ({"holds": "yes"}, TypeError, "holds must be True, False or None"),
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
    table.add("papers/000", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.add("papers/002", "b", "s", "monotone", 0.7, holds=True, note="why")
    frame = table.to_frame()
    assert list(frame.columns) == list(COLUMNS)
    assert frame["claim"].tolist() == ["a", "b"]
    assert frame["notebook"].unique().tolist() == ["00-x"]
    assert frame["paper_value"].tolist() == [1.0, "monotone"]
    assert frame["tolerance"].tolist()[1] is None


def test_adding_the_same_row_again_replaces_it() -> None:
    table = ReproTable("00-x")
    table.add("papers/000", "deff", "m=50", 10.8, 9.0, tolerance=0.1)
    table.add("papers/000", "other", "m=50", 10.8, 10.8, tolerance=0.1)
    table.add("papers/000", "deff", "m=50", 10.8, 10.8, tolerance=0.1)  # a re-run cell
    frame = table.to_frame()
    assert len(table) == 2
    assert frame["claim"].tolist() == ["deff", "other"]
    assert frame["verdict"].tolist() == [REPRODUCED, REPRODUCED]


def test_show_formats_numbers_and_drops_the_notebook_column() -> None:
    table = ReproTable("00-x")
    table.add("papers/000", "deff", "m=50", 10.8, 10.80000001, tolerance=0.05)
    table.add("papers/000", "n eff", "500 items", 46, 46.2962963, tolerance=1)
    table.add("papers/000", "coverage", "rho=0.2", "below 0.95", 0.8312345, holds=True)
    shown = table.show()
    assert "notebook" not in shown.columns
    assert shown["evalkit_value"].tolist() == ["10.8", "46.3", "0.8312"]
    assert shown["paper_value"].tolist() == ["10.8", "46", "below 0.95"]
    assert shown["tolerance"].tolist() == ["0.05", "1", ""]


# --- saving and the report -----------------------------------------------------------------


def test_save_without_a_folder_does_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    table = ReproTable("00-x")
    table.add("papers/000", "a", "s", 1.0, 1.0, tolerance=0.0)
    assert table.save() is None
    monkeypatch.setenv("EVALKIT_REPORT_DIR", "")
    assert table.save() is None
    assert list(tmp_path.iterdir()) == []


def test_save_uses_the_environment_and_overwrites(tmp_path, monkeypatch) -> None:
    rows_dir = tmp_path / "rows"
    monkeypatch.setenv("EVALKIT_REPORT_DIR", str(rows_dir))
    table = ReproTable("00-x")
    table.add("papers/000", "a", "s", 1.0, 1.0, tolerance=0.0)
    path = table.save()
    assert path == rows_dir / "00-x.json"
    table.add("papers/000", "b", "s", 1.0, 2.0, tolerance=0.5)
    table.show()  # show saves too
    saved = json.loads(path.read_text())
    assert [row["claim"] for row in saved] == ["a", "b"]
    assert sorted(p.name for p in rows_dir.iterdir()) == ["00-x.json"]


def test_round_trip_through_save_and_report(tmp_path) -> None:
    rows_dir, out_dir = tmp_path / "rows", tmp_path / "report"
    first = ReproTable("00-why-the-average-lies")
    first.add("papers/000", "deff", "m = 50, rho = 0.2", 10.8, 10.8, tolerance=0.05)
    first.add("papers/000", "iid covers | CR covers", "rho = 0.2", "below 0.95", 0.83, holds=True, note="a|b")
    second = ReproTable("01-missing-responses")
    second.add("papers/000", "IPW bias", "MNAR", 0.0, 0.03, tolerance=0.01, note="fewer clusters")
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
    assert report["totals"] == {"rows": 3, REPRODUCED: 2, NOT_REPRODUCED: 1}
    assert report["notebooks"] == ["00-why-the-average-lies", "01-missing-responses"]
    assert report["rows"] == expected.to_dict(orient="records")

    md = md_path.read_text()
    assert "2 reproduced, 1 not reproduced" in md
    assert "## 00-why-the-average-lies" in md and "## 01-missing-responses" in md
    assert "iid covers \\| CR covers" in md  # pipes in cells are escaped
    table_lines = [line for line in md.splitlines() if line.startswith("| papers/")]
    assert len(table_lines) == 3
    assert all(line.count(" | ") == 7 for line in table_lines)


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
        ('[{"paper": "papers/000"}]', "lacks the columns"),
    ],
)
def test_report_refuses_malformed_row_files(tmp_path, content: str, match: str) -> None:
    (tmp_path / "00-x.json").write_text(content)
    with pytest.raises(ValueError, match=match):
        repro_report_write(tmp_path, tmp_path / "out")


def test_report_refuses_an_unknown_verdict(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("papers/000", "a", "s", 1.0, 1.0, tolerance=0.0)
    path = table.save(tmp_path)
    rows = json.loads(path.read_text())
    rows[0]["verdict"] = "close enough"
    path.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="verdict"):
        repro_report_write(tmp_path, tmp_path / "out")


def test_command_line(tmp_path, capsys) -> None:
    table = ReproTable("00-x")
    table.add("papers/000", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.save(tmp_path / "rows")
    assert main([str(tmp_path / "rows"), str(tmp_path / "out")]) == 0
    assert "1 reproduced, 0 not reproduced" in capsys.readouterr().out
    assert main([str(tmp_path / "empty"), str(tmp_path / "out")]) == 1
    assert "error: no row folder" in capsys.readouterr().err


def test_module_runs_as_a_script(tmp_path) -> None:
    table = ReproTable("00-x")
    table.add("papers/000", "a", "s", 1.0, 1.0, tolerance=0.0)
    table.save(tmp_path / "rows")
    done = subprocess.run(
        [sys.executable, "-m", "evalkit.reproduce", str(tmp_path / "rows"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "reproduction_report.csv").is_file()
