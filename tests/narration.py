"""The narration guard: every number a lesson's prose states is one that a cell of it prints.

A lesson that says "the interval covers 91.3% of the time" must have a cell whose output shows
0.913 or 91.3% (or a value that rounds to it at the precision the prose uses). Numbers copied by
hand into markdown drift from the outputs when code or data change; this guard turns that drift
into a failing test that names the notebook, the cell and the number.

What is checked
---------------
Numbers in markdown cells that have a decimal point or at least three digits (``0.95``, ``12,032``,
``4.68×``, ``−1.3``, ``91.3%``). A number is *printed* when some number in the notebook's outputs
(streams, ``text/plain``, ``text/html``, ``text/markdown``) or in its code cells equals it after
rounding to the decimals the prose writes, in the same form, as a percentage (0.913 for 91.3%) or
as a fraction (91.3 for 0.913). Signs are ignored ("a drop of 1.3" for an output of -1.3).

What is exempt
--------------
Years (whole numbers 1900–2099 written without a decimal point), arXiv identifiers, version
strings (``0.4.13``), anything inside a link target, a URL, inline code or a fenced code block,
a LaTeX subscript or superscript (``z_{0.975}``), the cells of a References section,
numbers glued to a letter (model names such as ``Qwen2.5-72B``, ``v1``, ``GPT-4o``), and the
section numbers that open a heading (``## 3.2 The method``), name a lesson file (``05.1-irt``) or a
lesson (``see 09.2``: two digits with a leading zero, a point and one digit).
"""

from __future__ import annotations

import html
import json
import pathlib
import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

__all__ = ["Miss", "check_notebook", "prose_numbers", "printed_numbers"]

# A number as prose writes it: optional sign (ASCII or Unicode minus), digits with optional
# thousands separators, optional decimals, optional exponent.
_NUMBER = re.compile(
    r"(?<![A-Za-z_\d.])"  # not glued to an identifier or another number
    r"(?P<sign>[-−–]?)"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)"
    r"(?P<frac>\.\d+)?"
    r"(?P<exp>[eE][-+−]?\d+)?"
    r"(?![\d]|\.\d|[A-Za-wyzA-Z_])"  # not followed by more digits or a letter (an 'x' suffix is fine)
)
_OUT_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+")

_FENCED = re.compile(r"```.*?```", re.S)
_INLINE_CODE = re.compile(r"`[^`]*`")
_SUBSCRIPT = re.compile(r"[_^]\{[^{}]*\}")
_REFERENCES = re.compile(r"^\s*#+\s*(References|Bibliography|Further reading)\b", re.M | re.I)
_ANY_HEADING = re.compile(r"^\s*#+\s", re.M)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_URL = re.compile(r"https?://\S+|www\.\S+")
_HTML_TAG = re.compile(r"<[^>]+>")
_ARXIV = re.compile(r"\b\d{4}\.\d{4,5}(?:v\d+)?\b")
_VERSION = re.compile(r"\b\d+\.\d+\.\d+(?:\.\d+)*\b")
_HEADING_NUMBER = re.compile(r"^(\s*#+\s*)\d+(?:\.\d+)*", re.M)
_LESSON_FILE = re.compile(r"\b\d{2}(?:\.\d)?-[a-z]")
# a lesson's number as a name ("see 09.2", "[03.4 · MNAR]", "parts 09.1–09.3"): two digits with a
# leading zero, a point and one digit; no quantity is written with a leading zero
_LESSON_NUMBER = re.compile(r"(?<![\d.,])0\d\.\d(?![\d])")


@dataclass(frozen=True)
class Miss:
    """A number in the prose that no output or code of the notebook shows."""

    notebook: str
    cell: int
    number: str
    context: str

    def __str__(self) -> str:
        return f"{self.notebook}: markdown cell {self.cell}: {self.number!r} is printed by no cell ({self.context})"


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """Replace every match of ``pattern`` by spaces of the same length (keeps offsets for context)."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def prose_numbers(markdown: str) -> list[tuple[str, float, int, int]]:
    """The checked numbers of a markdown text: ``(as written, value, decimals, offset)``.

    ``value`` is the absolute value; ``decimals`` the number of digits after the point as written.
    """
    ref = _REFERENCES.search(markdown)
    if ref:  # a references list is exempt up to the next heading, not the rest of the cell
        nxt = _ANY_HEADING.search(markdown, ref.end())
        markdown = markdown[:ref.start()] + (markdown[nxt.start():] if nxt else "")
    text = markdown.replace("{,}", ",").replace("\\!", "")
    for pattern in (_FENCED, _INLINE_CODE, _SUBSCRIPT, _LINK_TARGET, _URL, _HTML_TAG, _ARXIV, _VERSION, _LESSON_FILE,
                    _LESSON_NUMBER):
        text = _blank(text, pattern)
    text = _HEADING_NUMBER.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), text)
    found = []
    for m in _NUMBER.finditer(text):
        int_part = m.group("int").replace(",", "")
        frac = m.group("frac") or ""
        exp = (m.group("exp") or "").replace("−", "-")
        if not frac and not exp and len(int_part) < 3:
            continue
        if not frac and not exp and len(int_part) == 4 and 1900 <= int(int_part) <= 2099:
            continue
        value = abs(float(int_part + frac + exp))
        decimals = len(frac) - 1 if frac else 0
        if exp:
            decimals = max(decimals - int(exp[1:]), 0)
        found.append((m.group(0).strip(), value, decimals, m.start()))
    return found


def _output_texts(cell: dict[str, Any]) -> list[str]:
    texts = []
    for out in cell.get("outputs", []) or []:
        if out.get("output_type") == "stream":
            t = out.get("text", "")
            texts.append("".join(t) if isinstance(t, list) else str(t))
            continue
        data = out.get("data", {}) or {}
        for mime in ("text/plain", "text/markdown", "text/html", "text/latex"):
            if mime in data:
                t = data[mime]
                t = "".join(t) if isinstance(t, list) else str(t)
                if mime == "text/html":
                    t = html.unescape(_HTML_TAG.sub(" ", t))
                texts.append(t)
    return texts


def printed_numbers(notebook: dict[str, Any]) -> list[float]:
    """Every number (absolute value) in the notebook's outputs and code cells, sorted."""
    values: set[float] = set()
    for cell in notebook.get("cells", []):
        texts = _output_texts(cell)
        if cell.get("cell_type") == "code":
            texts.append(_source(cell))
        for t in texts:
            for m in _OUT_NUMBER.finditer(t.replace("−", "-")):
                try:
                    values.add(abs(float(m.group(0).replace(",", ""))))
                except ValueError:
                    continue
    return sorted(values)


def _shown(value: float, decimals: int, haystack: list[float]) -> bool:
    """Whether some printed number rounds to ``value`` at ``decimals``, plain, percent or fraction."""
    half = 0.5 * 10.0 ** (-decimals) * (1 + 1e-9) + 1e-12
    for scale in (1.0, 100.0, 0.01):
        lo, hi = (value - half) / scale, (value + half) / scale
        i = bisect_left(haystack, lo)
        if i < len(haystack) and haystack[i] <= hi:
            return True
    return False


def check_notebook(path: str | pathlib.Path) -> list[Miss]:
    """Every number in ``path``'s markdown that no output or code cell of it shows."""
    path = pathlib.Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    haystack = printed_numbers(nb)
    misses = []
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        for written, value, decimals, offset in prose_numbers(text):
            if not _shown(value, decimals, haystack):
                context = " ".join(text[max(0, offset - 40): offset + len(written) + 40].split())
                misses.append(Miss(path.name, index, written, f"...{context}..."))
    return misses
