"""Build the numeric data files in ``data/`` from a copy of the upstream data.

evalkit carries the numeric tables of its six datasets in the repository's ``data/`` folder and
never the item texts. This script derives every one of those files from the converted upstream
copies (in the evalkit workspace: ``shared/data``), checking each input against the sha256 in
the registry (``evalkit.DATASETS``), and writes them deterministically:

- files without text are copied byte for byte (``.npz``, small ``.csv``), or, for the large
  ``.csv.gz`` tables, recompressed as ``.csv.xz`` with the very same CSV text inside (so the
  loaders parse exactly the same values);
- ``mcq_option_probs`` (ChemBench) loses its ``option_text`` column;
- each items table keeps its ids and labels and replaces every text column by numbers computed
  from it: ``<col>_chars`` (characters) and ``<col>_words`` (whitespace-separated words), and
  ``n_options`` for MMLU-Pro.

Usage (from the repository root)::

    PYTHONPATH=. python scripts/build_data.py [--source PATH] [--out data] [--only NAME ...] [--check]

``--source`` defaults to the first of ``$EVALKIT_DATA``'s folders and ``../shared/data`` that
holds the upstream files. ``--check`` writes nothing: it compares what it would write with the
files in ``--out`` (contents, not bytes) and exits 1 on any difference. The script prints every
output file's sha256; ``evalkit/datasets.py`` must register the same. Recompressing the large
tables takes a few minutes (xz, preset 6); the xz bytes depend on the liblzma version, which is
why ``--check`` and ``tests/test_datasets.py`` compare contents.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import evalkit as ek

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "data"

TEXT_COLUMNS: dict[str, tuple[str, ...]] = {
    "mmlu_pro_official": ("question", "options"),
    "chembench": ("description", "prompt", "target", "content"),
    "alpaca_eval": ("instruction",),
    "uncertainty_emotion": ("question", "context"),
}
"""Upstream item-table columns that hold text (never written to data/)."""

LENGTHS: dict[str, tuple[str, ...]] = {
    "mmlu_pro_official": ("question",),
    "chembench": ("content", "prompt"),
    "alpaca_eval": ("instruction",),
    "uncertainty_emotion": ("context",),
}
"""Text columns whose length (characters and words) goes into data/<dataset>/items.csv.xz."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def xz(data: bytes) -> bytes:
    """xz with fixed settings (no timestamps in the format: same input, same bytes)."""
    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=6)


def csv_bytes(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False, lineterminator="\n").encode("utf-8")


def decompressed(name: str, data: bytes) -> bytes:
    """The CSV text inside a data file (for content comparisons)."""
    if name.endswith(".gz"):
        import gzip

        return gzip.decompress(data)
    if name.endswith(".xz"):
        return lzma.decompress(data)
    return data


def default_source(evalkit_data: str | None = None) -> Path | None:
    """The first of EVALKIT_DATA's folders and ../shared/data that holds the upstream files.

    ``evalkit_data`` replaces the value of the environment variable when given.
    """
    spec = ek.DATASETS["mmlu_pro_official"]
    value = os.environ.get("EVALKIT_DATA", "") if evalkit_data is None else evalkit_data
    candidates = [Path(p) for p in value.split(os.pathsep) if p.strip()]
    candidates.append(REPO.parent / "shared" / "data")
    for c in candidates:
        if (c / spec.folder / spec.texts).is_file():
            return c.resolve()
    return None


def upstream(source: Path, name: str, filename: str) -> bytes:
    """An upstream file's bytes, checked against the registry (``upstream`` or ``files``)."""
    spec = ek.DATASETS[name]
    expected = spec.upstream.get(filename) or spec.files.get(filename)
    if expected is None:
        raise KeyError(f"{name}/{filename} is not registered as an upstream file")
    data = (source / spec.folder / filename).read_bytes()
    if sha256(data) != expected:
        raise ValueError(f"{source / spec.folder / filename}: sha256 {sha256(data)} is not the registered {expected}")
    return data


def lengths(texts: pd.Series, col: str) -> pd.DataFrame:
    """``<col>_chars`` and ``<col>_words`` of a text column (no missing texts allowed)."""
    if texts.isna().any():
        raise ValueError(f"{col}: {int(texts.isna().sum())} missing texts")
    s = texts.astype(str)
    return pd.DataFrame({f"{col}_chars": s.str.len().astype("int64"), f"{col}_words": s.str.split().str.len()})


def items_table(name: str, source: Path) -> pd.DataFrame:
    """The numeric items table of a dataset: ids and labels, then lengths computed from texts."""
    raw = ek.dataset_texts(name, root=source).drop(columns="item")
    out = raw.drop(columns=list(TEXT_COLUMNS[name]))
    if name == "mmlu_pro_official":
        out["n_options"] = raw["options"].map(lambda s: len(json.loads(s))).astype("int64")
    for col in LENGTHS[name]:
        out = pd.concat([out, lengths(raw[col], col)], axis=1)
    return out


def option_probs_table(source: Path) -> pd.DataFrame:
    raw = pd.read_csv(io.BytesIO(upstream(source, "chembench", "mcq_option_probs.csv.gz")), compression="gzip")
    return raw.drop(columns=["option_text"])


@dataclass(frozen=True)
class Recipe:
    """How one output file is made: its uncompressed content, and whether it is stored as xz."""

    content: Callable[[Path], bytes]
    how: str
    compress: bool
    upstream: str = ""
    """The upstream file whose content this is, for copies and recompressed tables."""


HOW: dict[str, str] = {
    "copy": "copied byte for byte",
    "recompress": "the same CSV text, recompressed (gzip -> xz)",
    "table": "the upstream table without its text columns",
    "items": "ids and labels; text columns replaced by their lengths",
}


def _copy(name: str, filename: str) -> Recipe:
    return Recipe(lambda source: upstream(source, name, filename), "copy", compress=False, upstream=filename)


def _recompress(name: str, filename: str) -> Recipe:
    return Recipe(
        lambda source: decompressed(filename, upstream(source, name, filename)), "recompress", True, upstream=filename
    )


def _table(make: Callable[[Path], pd.DataFrame], how: str = "table") -> Recipe:
    return Recipe(lambda source: csv_bytes(make(source)), how, compress=True)


def _items(name: str) -> Recipe:
    return _table(lambda source: items_table(name, source), "items")


RECIPES: dict[str, dict[str, Recipe]] = {
    "mmlu_pro_official": {
        "responses_long.csv.xz": _recompress("mmlu_pro_official", "responses_long.csv.gz"),
        "items.csv.xz": _items("mmlu_pro_official"),
        "matrix_correct_nan_missing.npz": _copy("mmlu_pro_official", "matrix_correct_nan_missing.npz"),
        "model_sources.csv": _copy("mmlu_pro_official", "model_sources.csv"),
    },
    "chembench": {
        "responses_long.csv.xz": _recompress("chembench", "responses_long.csv.gz"),
        "items.csv.xz": _items("chembench"),
        "mcq_option_probs.csv.xz": _table(option_probs_table),
        "matrix_correct.npz": _copy("chembench", "matrix_correct.npz"),
    },
    "livecodebench_gen": {
        f: _copy("livecodebench_gen", f)
        for f in ("responses_long.csv.gz", "items.csv", "models.csv", "matrix_pass_at_1_pct.npz")
    },
    "alpaca_eval": {
        "judgments_long.csv.xz": _recompress("alpaca_eval", "judgments_long.csv.gz"),
        "items.csv.xz": _items("alpaca_eval"),
        "model_output_lengths.csv.xz": _recompress("alpaca_eval", "model_output_lengths.csv.gz"),
    },
    "uncertainty_emotion": {
        "option_probs_long.csv.xz": _recompress("uncertainty_emotion", "option_probs_long.csv.gz"),
        "items.csv.xz": _items("uncertainty_emotion"),
        "option_labels.json": _copy("uncertainty_emotion", "option_labels.json"),
    },
    "oll_v2_factor_model": {f: _copy("oll_v2_factor_model", f) for f in ek.DATASETS["oll_v2_factor_model"].files},
}
"""Dataset -> output file -> how it is made. Covers exactly the registered files of six datasets."""

FROM_TEXTS: tuple[tuple[str, str], ...] = tuple((n, "items.csv.xz") for n in LENGTHS)
"""The output files computed from item texts (regenerated and compared by the tests)."""

SAME_CONTENT: tuple[tuple[str, str, str], ...] = tuple(
    (n, out, r.upstream) for n in RECIPES for out, r in RECIPES[n].items() if r.how == "recompress"
)
"""(dataset, output, upstream): recompressed tables whose CSV text equals the upstream one."""


def notice(name: str) -> str:
    """The header of ``data/<folder>/SOURCE.md``: what is here, licence, then the upstream notes."""
    spec = ek.DATASETS[name]
    share_alike = (
        " Share-alike: these files, and anything derived from them, stay under CC BY-SA 4.0."
        if "BY-SA" in spec.licence
        else ""
    )
    rows = "\n".join(f"| `{f}` | {HOW[r.how]} |" for f, r in RECIPES[name].items())
    return (
        f"# `{name}` in evalkit's `data/`\n\n"
        f"Source: {spec.source_url} @ {spec.commit}.\n"
        f"Licence: {spec.licence}.{share_alike}\n\n"
        "Built by `scripts/build_data.py` from the converted upstream copies described below, each checked "
        "by sha256; `evalkit/datasets.py` registers the sha256 of every file here. Item texts (questions, "
        "prompts, instructions, contexts, option texts) are not in this folder, only numbers computed from "
        "them.\n\n| file | how it was made |\n|---|---|\n"
        f"{rows}\n\n"
        "The upstream conversion notes follow unchanged; they describe the upstream files, of which this "
        "folder keeps the numeric columns.\n\n---\n\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None, help="folder holding the upstream dataset folders")
    parser.add_argument("--out", type=Path, default=OUT, help="output data folder (default: data/)")
    parser.add_argument("--only", nargs="+", choices=sorted(RECIPES), help="build only these datasets")
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = parser.parse_args(argv)
    source = args.source or default_source()
    if source is None:
        parser.error("no upstream data found: pass --source (the folder holding mmlu_pro_official/, chembench/, ...)")
    print(f"upstream data: {source}")
    differ = 0
    for name in args.only or RECIPES:
        spec = ek.DATASETS[name]
        folder = args.out / spec.folder
        for filename, recipe in RECIPES[name].items():
            content = recipe.content(source)
            target = folder / filename
            if target.is_file():
                existing = target.read_bytes()
                same = (decompressed(filename, existing) if recipe.compress else existing) == content
            else:
                same = False
            if args.check:
                differ += not same
                print(f"{'same   ' if same else 'DIFFERS'} {spec.folder}/{filename}")
                continue
            if not same:  # an existing file with the same content is kept as it is (same bytes, same sha256)
                folder.mkdir(parents=True, exist_ok=True)
                target.write_bytes(xz(content) if recipe.compress else content)
            data = target.read_bytes()
            note = (
                "" if spec.files.get(filename) == sha256(data) else "   <- register this sha256 in evalkit/datasets.py"
            )
            kept = "kept   " if same else "written"
            print(
                f"{kept} {spec.folder}/{filename:40s} {len(data) / 1e6:7.3f} MB  sha256 {sha256(data)}{note}",
                flush=True,
            )
        if not args.check:
            upstream_notes = (source / spec.folder / "SOURCE.md").read_text(encoding="utf-8")
            (folder / "SOURCE.md").write_text(notice(name) + upstream_notes, encoding="utf-8")
    if differ:
        print(f"{differ} file(s) differ from the upstream-derived contents", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
