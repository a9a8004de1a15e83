"""Lessons say only what their cells print (the narration guard, tests/narration.py), and speak of
statistics only (no text about the kit's own development in the product)."""

from __future__ import annotations

import json
import pathlib
import re

import pytest
from narration import check_notebook, prose_numbers

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("**/*.ipynb") if ".ipynb_checkpoints" not in p.parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.relative_to(ROOT / "notebooks").as_posix() for p in NOTEBOOKS])
def test_every_number_in_the_prose_is_printed_by_a_cell(path: pathlib.Path) -> None:
    misses = check_notebook(path)
    assert not misses, f"{len(misses)} numbers in the prose that no cell prints:\n" + "\n".join(map(str, misses))


# ---- the guard itself -------------------------------------------------------------------------


def _notebook(tmp_path: pathlib.Path, markdown: str, output: str, code: str = "print(x)") -> pathlib.Path:
    nb = {
        "nbformat": 4, "nbformat_minor": 5, "metadata": {},
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": code, "execution_count": 1,
             "outputs": [{"output_type": "stream", "name": "stdout", "text": output}]},
            {"cell_type": "markdown", "metadata": {}, "source": markdown},
        ],
    }
    path = tmp_path / "lesson.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_the_guard_passes_numbers_that_a_cell_prints(tmp_path: pathlib.Path) -> None:
    output = "coverage 0.9134, n = 12032, deff 4.678, diff -0.0131"
    prose = ("Coverage is 91.3% (0.913), over 12,032 items; the design effect is 4.68× and "
             "model B loses 1.3 points (−0.013).")
    assert check_notebook(_notebook(tmp_path, prose, output)) == []


def test_the_guard_fails_on_a_wrong_number(tmp_path: pathlib.Path) -> None:
    output = "coverage 0.9134, n = 12032, deff 4.678"
    misses = check_notebook(_notebook(tmp_path, "Coverage is 92.3% over 12,032 items; deff 4.68.", output))
    assert [m.number for m in misses] == ["92.3"]
    assert misses[0].cell == 1 and misses[0].notebook == "lesson.ipynb"
    misses = check_notebook(_notebook(tmp_path, "The design effect is 4.70 here.", output))
    assert [m.number for m in misses] == ["4.70"]  # 4.678 rounds to 4.68, not 4.70
    misses = check_notebook(_notebook(tmp_path, "About 12,000 items.", output))
    assert [m.number for m in misses] == ["12,000"]  # rounding as written: 12,032 is not 12,000


def test_the_guard_reads_numbers_in_code_and_html_outputs(tmp_path: pathlib.Path) -> None:
    path = _notebook(tmp_path, "We draw 2,000 replications; the table shows 0.954.", "", code="reps = 2000")
    nb = json.loads(path.read_text())
    nb["cells"][0]["outputs"] = [{"output_type": "display_data", "metadata": {},
                                  "data": {"text/html": "<td>0.954</td>", "text/plain": "<table>"}}]
    path.write_text(json.dumps(nb))
    assert check_notebook(path) == []


def test_the_guard_exempts_years_ids_links_code_and_names() -> None:
    prose = ("Miller (2024), arXiv:2411.00640v1, [the paper](https://example.org/a/1234.5678), "
             "`seed=12345`, lm-eval 0.4.13, Qwen2.5-72B, see 05.1-irt-the-2pl-model-and-cbmm, $z_{0.975}$, "
             "parts 09.1–09.3.\n"
             "## 3.2 The method\n```\nx = 0.123\n```")
    assert prose_numbers(prose) == []
    assert [n for n, *_ in prose_numbers("but 0.123 and 1,111 and 250 are checked; 45 is not")] == [
        "0.123", "1,111", "250"]
    assert [n for n, *_ in prose_numbers("lesson 03.2 says 3.2 and 10.5 and 0.05")] == ["3.2", "10.5", "0.05"]


def test_only_the_references_list_is_exempt_not_the_rest_of_its_cell() -> None:
    refs = "## References\n- Miller, E. (2024), pp. 120–135, 0.5 of a page.\n"
    assert prose_numbers(refs) == []
    before = "The gain is 17.64 points.\n\n" + refs
    after = refs + "\n## Summary\nThe gain is 17.64 points.\n"
    assert [n for n, *_ in prose_numbers(before)] == ["17.64"]
    assert [n for n, *_ in prose_numbers(after)] == ["17.64"]


# ---- the product speaks of statistics only ------------------------------------------------------

# Phrases that belong to the kit's development, not to a lesson: the tracker, the history of the
# kit's own runs, goals set for its developers, the machine's load and CI budgets.
PROJECT_TEXT = re.compile(
    r"\bissue\s*#?\d+|\bissues?/\d+|github\.com/[^\s)]*/issues|\bthe (previous|last|earlier) "
    r"(session|run|edition|version of (this|the) (kit|lesson|notebook))|\bfirst edition\b|"
    r"\bprevious(ly)? measured\b|\bmachine load\b|\bload average\b|\bunder (heavy )?load\b|"
    r"\bCI (time|budget)\b|\btime budget of CI\b|\bthe goal (is|was) (missed|met)\b|"
    r"\bour developers\b|\bthis session\b|\bclosing note\b|\bcores? (were|was) busy\b|"
    r"\bbenchmark (ran|running) beside\b|\bthe issue (that|which) asked\b|\b(previous|earlier) session\b|"
    r"\bCI runs\b|\bminutes on 2 (shared )?cores\b|\bon 2 shared cores\b|\bone BLAS thread\b|"
    r"\bthe \d+ ?s goal\b|\bpy-spy\b|\bnot among the kit's sources\b",
    re.I,
)


def _lesson_texts() -> list[tuple[str, str]]:
    texts = []
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        for i, cell in enumerate(nb["cells"]):
            src = cell.get("source", "")
            texts.append((f"{path.relative_to(ROOT)} cell {i}", "".join(src) if isinstance(src, list) else src))
    return texts


def _doc_texts() -> list[tuple[str, str]]:
    files = [*sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "evalkit").rglob("*.py"))]
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in files]


@pytest.mark.parametrize("where", ["lessons", "docs and docstrings"])
def test_the_product_has_no_project_internal_text(where: str) -> None:
    texts = _lesson_texts() if where == "lessons" else _doc_texts()
    hits = [f"{name}: {m.group(0)!r}" for name, text in texts for m in PROJECT_TEXT.finditer(text)]
    assert not hits, "text about the kit's development, not statistics:\n" + "\n".join(hits)


def test_the_project_text_check_can_fail() -> None:
    for phrase in ("as issue #17 asks", "the previous run measured 47 s", "under heavy load",
                   "the goal is missed", "the first edition said"):
        assert PROJECT_TEXT.search(phrase), phrase
    assert not PROJECT_TEXT.search("the design effect is the variance inflation of a clustered mean")
