"""Write MMLU-Pro official outcomes as Inspect JSON logs, one file per model (numbers only).

Lesson 09 reads a report of realistic size: the 12,032 MMLU-Pro questions answered by a few of
the leaderboard's models, imported through the same Inspect reader a user's own log would go
through. The logs carry no item text: a sample has the question id, the metadata fields
``category`` (14) and ``src`` (the 91 original source datasets), and one ``choice`` score whose
value is ``C`` (right) or ``I`` (wrong) with the extracted answer letter, or ``N`` with reason
``invalid_response_format`` (no answer letter extracted). Questions absent from a model's output
file are left out of its log, as a run that never reached them would be.

Usage::

    python scripts/make_mmlu_inspect_log.py --out DIR [--models ID ID ...]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import evalkit as ek

DEFAULT_MODELS = ("Mixtral-8x7B-v0.1_5shots", "Meta-Llama-3_1-8B-Instruct_5shots", "gemma-7b_5shots")
"""Three models within a few points of each other (so the paired comparisons have something to find)."""


def write_logs(out: str | pathlib.Path, models: tuple[str, ...] | list[str] = DEFAULT_MODELS) -> list[pathlib.Path]:
    """Write one Inspect JSON log per model into ``out`` and return their paths."""
    long = ek.dataset_load("mmlu_pro_official")
    missing = sorted(set(models) - set(long["model"].unique()))
    if missing:
        raise SystemExit(f"unknown model ids {missing}; see data/mmlu_pro_official/model_sources.csv")
    folder = pathlib.Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for model in models:
        rows = long[(long["model"] == model) & (long["status"] != "not_run")]
        samples = []
        columns = [rows[c] for c in ("item", "category", "src", "correct", "status", "pred")]
        for item, category, src, correct, status, pred in zip(*columns, strict=True):
            if status == "parse_failure":
                score = {"value": "N", "reason": "invalid_response_format"}
            else:   # the extracted answer letter, as Inspect's choice() scorer records it
                score = {"value": "C" if correct == 1 else "I", "answer": str(pred)}
            samples.append({"id": str(item), "epoch": 1, "metadata": {"category": str(category), "src": str(src)},
                            "scores": {"choice": score}})
        log = {"version": 2, "status": "success",
               "eval": {"task": "mmlu_pro", "model": model.replace("_5shots", ""),
                        "dataset": {"name": "TIGER-Lab/MMLU-Pro", "samples": len(samples)}},
               "samples": samples}
        path = folder / f"mmlu-pro_{model.replace('_5shots', '')}.json"
        path.write_text(json.dumps(log), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the .json logs")
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS), help="model ids of mmlu_pro_official")
    args = parser.parse_args(argv)
    for path in write_logs(args.out, args.models):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
