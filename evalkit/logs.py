"""Importers: the logs that evaluation tools write, as evalkit long tables.

Three formats are read, each into the long table of :mod:`evalkit.data` (``model, item, cluster,
correct, status`` plus metadata columns), so that everything else in evalkit (cluster-robust
intervals, missing-response corrections, :func:`evalkit.report_build`) works on an eval you ran
yourself:

* **Inspect** (``inspect_ai``) logs, in both of its formats: the ``.eval`` zip archive (entries
  compressed with deflate or, since 2025, Zstandard) and the ``.json`` log. evalkit reads the
  format's own structure; with ``reader="inspect_ai"`` it uses the tool's own
  ``inspect_ai.log.read_eval_log`` instead (optional extra ``evalkit[inspect]``), and a test checks
  that the two paths agree.
* **lm-evaluation-harness** ``--log_samples`` output: ``samples_<task>_<time>.jsonl`` with the
  ``results_<time>.json`` beside it (for the model name).
* **Generic long tables** in CSV or JSON lines, with the columns above.

How outcomes become statuses
----------------------------
=========================================================  ===================================
what the log says                                          evalkit
=========================================================  ===================================
Inspect: score ``C`` / ``I`` (or numeric 1 / 0)             ``ok``, correct 1 / 0
Inspect: ``reason`` ``invalid_response_format``             ``parse_failure``
Inspect: ``N`` or ``reason`` ``no_response`` (empty answer) ``parse_failure`` (detail ``no_response``)
Inspect ``choice()`` scorer before ``reason`` existed:      ``parse_failure``
``I`` with an empty ``answer``
Inspect: the sample has an ``error``                        ``error``
lm-eval: filtered response ``[invalid]`` (a regex filter    ``parse_failure``
found no answer)
lm-eval: metric 1.0 / 0.0                                   ``ok``, correct 1 / 0
=========================================================  ===================================

A score the importer does not understand (partial credit ``P``, a string it has not seen, a
metric that is not 0/1) raises :class:`LogFormatError` naming the file and the sample: evalkit
never guesses. Note what a log *cannot* tell: Inspect's ``match()`` scorer, and lm-eval's
"flexible" filters, score an unparsable answer as simply wrong (``I`` / 0), so it is imported as
``ok``/0; only scorers that flag the failure (``choice()``, regex filters) give ``parse_failure``.

Epochs (several answers per sample)
-----------------------------------
``epochs="mean"`` (the default) gives one row per (model, item): ``correct`` is the mean over the
epochs that were answered and graded (a fraction such as 0.5 when epochs disagree), ``n_epochs``
and ``n_graded`` keep the counts, and the row is missing (with the most frequent reason) only when
no epoch was graded. That matches Inspect's default ``mean`` reducer, which also leaves errored
epochs out. ``epochs="all"`` keeps one row per epoch with an ``epoch`` column (for the planning
module, which separates within-item from between-item variance); it is not a valid long table
for the matrix view, since ``(model, item)`` repeats.

Clusters come from sample metadata (Inspect: ``metadata.<field>``; lm-eval: ``doc.<field>``) when
``cluster="<field>"`` is given, and from the task (lm-eval: the subtask) otherwise. Item ids are
``<task>/<sample id>``, so two tasks never share an item.
"""

from __future__ import annotations

import csv
import json
import pathlib
import struct
import zipfile
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from .data import LONG_COLUMNS, STATUSES

__all__ = [
    "LogFormatError",
    "log_read",
    "log_read_inspect",
    "log_read_lm_eval",
    "log_read_table",
]

Epochs = Literal["mean", "all"]
PathLike = str | pathlib.Path


class LogFormatError(ValueError):
    """A log file that evalkit cannot read or whose content it does not understand."""


def _fail(path: PathLike, what: str) -> LogFormatError:
    return LogFormatError(f"{path}: {what}")


# --------------------------------------------------------------------------------------------
# Inspect
# --------------------------------------------------------------------------------------------

_ZSTD = 93  # zip compression method number of Zstandard


def _zip_read(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: PathLike) -> bytes:
    """One entry of a zip archive, including Zstandard entries that ``zipfile`` (< 3.14) refuses."""
    if info.compress_type != _ZSTD:
        return zf.read(info)
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - zstandard is a dependency
        raise _fail(path, "entries are Zstandard-compressed; install the 'zstandard' package") from exc
    fp = zf.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = fp.read(30)
    if header[:4] != b"PK\x03\x04":
        raise _fail(path, f"damaged zip entry {info.filename!r}")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    data = zstandard.ZstdDecompressor().decompress(raw, max_output_size=max(info.file_size, 1))
    if len(data) != info.file_size:
        raise _fail(path, f"zip entry {info.filename!r} decompressed to the wrong size")
    return bytes(data)


def _inspect_eval_archive(path: pathlib.Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise _fail(path, f"not a readable .eval (zip) archive: {exc}") from exc
    with zf:
        infos = {i.filename: i for i in zf.infolist()}
        if "header.json" not in infos:
            raise _fail(path, "the .eval archive has no header.json (an unfinished or foreign log?)")
        header = json.loads(_zip_read(zf, infos["header.json"], path))
        samples = [json.loads(_zip_read(zf, info, path)) for name, info in sorted(infos.items())
                   if name.startswith("samples/") and name.endswith(".json")]
    return header, samples


def _inspect_json(path: pathlib.Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    obj = _json_load(path)
    if not isinstance(obj, dict) or "eval" not in obj:
        raise _fail(path, "not an Inspect JSON log (no 'eval' header)")
    samples = obj.get("samples")
    if samples is None:
        raise _fail(path, "the Inspect log has no samples (was it written with log_samples=False?)")
    return obj, list(samples)


def _json_load(path: pathlib.Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"cannot read the file: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not valid JSON ({exc.msg} at line {exc.lineno})") from exc


def _inspect_via_tool(path: pathlib.Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise ImportError("reader='inspect_ai' needs the inspect_ai package: pip install 'evalkit[inspect]'") from exc
    log = read_eval_log(str(path))
    header = {"eval": log.eval.model_dump(mode="json")}
    samples = [s.model_dump(mode="json") for s in (log.samples or [])]
    return header, samples


def _inspect_score(path: PathLike, sample: dict[str, Any], scorer: str | None) -> tuple[str, float, str]:
    """``(status, correct, detail)`` of one Inspect sample record."""
    sid = f"sample {sample.get('id')!r} epoch {sample.get('epoch')}"
    if sample.get("error"):
        err = sample["error"]
        message = err.get("message", "") if isinstance(err, dict) else str(err)
        return "error", np.nan, str(message)[:200]
    scores = sample.get("scores") or {}
    if not scores:
        raise _fail(path, f"{sid} has neither a score nor an error")
    if scorer is None:
        if len(scores) > 1:
            raise _fail(path, f"{sid} has several scorers {sorted(scores)}; choose one with scorer=...")
        scorer = next(iter(scores))
    if scorer not in scores:
        raise _fail(path, f"{sid} has no scorer {scorer!r}; it has {sorted(scores)}")
    score = scores[scorer]
    value, reason, answer = score.get("value"), score.get("reason"), score.get("answer")
    if reason in ("invalid_response_format", "no_response") or value == "N":
        return "parse_failure", np.nan, str(reason or "no_response")
    if value == "I" and scorer == "choice" and answer in ("", None):
        return "parse_failure", np.nan, "empty_answer"
    if value in ("C", "I"):
        return "ok", 1.0 if value == "C" else 0.0, ""
    if isinstance(value, bool):
        return "ok", float(value), ""
    if isinstance(value, int | float) and float(value) in (0.0, 1.0):
        return "ok", float(value), ""
    raise _fail(path, f"{sid}: score value {value!r} of scorer {scorer!r} is not C/I/N or 0/1 "
                      "(partial credit and other scales are not supported)")


def _cluster_field(path: PathLike, records: Sequence[dict[str, Any]], cluster: str | None, where: str) -> str | None:
    """The metadata field to cluster on: the first of ``cluster`` (comma-separated) that every record has.

    With ``cluster=None``: the only field every record's metadata has, if there is exactly one;
    otherwise None (cluster by task).
    """
    metas = [r.get(where) or {} for r in records]
    common = set(metas[0]).intersection(*metas[1:]) if metas else set()
    if cluster is None:
        return next(iter(common)) if len(common) == 1 else None
    for name in (c.strip() for c in cluster.split(",")):
        if name in common:
            return name
    have = sorted(common) or sorted(set().union(*metas))
    raise _fail(path, f"no cluster field {cluster!r} in the {where} of every sample; fields: {have}")


def log_read_inspect(path: PathLike, *, cluster: str | None = None, scorer: str | None = None,
                     epochs: Epochs = "mean", reader: Literal["builtin", "inspect_ai"] = "builtin") -> pd.DataFrame:
    """Read one Inspect log (``.eval`` or ``.json``) into an evalkit long table.

    Parameters
    ----------
    path : str or Path
        The log file.
    cluster : str, optional
        A sample metadata field to cluster on (e.g. ``"subject"``), or several separated by commas,
        of which the first that every sample has is used (``"subject,category"``). Default: the
        only metadata field the samples have, if there is exactly one; otherwise the task.
    scorer : str, optional
        Which scorer to read when the task has several.
    epochs : {"mean", "all"}
        See the module docstring.
    reader : {"builtin", "inspect_ai"}
        Read the format directly (default), or through ``inspect_ai.log.read_eval_log``.

    Returns
    -------
    DataFrame
        ``model, item, cluster, correct, status`` plus ``task, sample_id, detail, n_epochs,
        n_graded`` (or ``epoch`` with ``epochs="all"``) and ``source`` (the file name).

    Raises
    ------
    LogFormatError
        Unreadable file, missing cluster field, unknown score values.

    Examples
    --------
    >>> import evalkit as ek
    >>> df = ek.log_read_inspect("tests/fixtures/eval_logs/inspect_ai/logs/json/"
    ...     "2026-11-30T11-09-42-00-00_mcq-subjects_5Xdjo8KqChV8PRDEuEbgtb.json", cluster="subject")
    ... # doctest: +SKIP
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise _fail(p, "no such file")
    if reader == "inspect_ai":
        header, samples = _inspect_via_tool(p)
    elif reader != "builtin":
        raise ValueError(f"reader must be 'builtin' or 'inspect_ai', not {reader!r}")
    elif p.suffix == ".eval":
        header, samples = _inspect_eval_archive(p)
    else:
        header, samples = _inspect_json(p)
    ev = header.get("eval") or {}
    model, task = ev.get("model"), ev.get("task")
    if not model or not task:
        raise _fail(p, "the log header names no model or task")
    field = _cluster_field(p, samples, cluster, "metadata")
    rows = []
    for s in samples:
        status, correct, detail = _inspect_score(p, s, scorer)
        rows.append({
            "model": str(model), "item": f"{task}/{s['id']}", "task": str(task), "sample_id": str(s["id"]),
            "epoch": int(s.get("epoch", 1)),
            "cluster": str((s.get("metadata") or {})[field]) if field else str(task),
            "correct": correct, "status": status, "detail": detail,
        })
    if not rows:
        raise _fail(p, "the log has no samples")
    return _finish(pd.DataFrame(rows), epochs, p.name)


# --------------------------------------------------------------------------------------------
# lm-evaluation-harness
# --------------------------------------------------------------------------------------------

def _lm_eval_results(samples_path: pathlib.Path) -> dict[str, Any] | None:
    """The ``results_<time>.json`` written in the same run as ``samples_<task>_<time>.jsonl``."""
    stamp = samples_path.stem.rsplit("_", 1)[-1]
    candidate = samples_path.with_name(f"results_{stamp}.json")
    if candidate.is_file():
        obj = _json_load(candidate)
        return obj if isinstance(obj, dict) else None
    return None


def log_read_lm_eval(path: PathLike, *, cluster: str | None = None, metric: str | None = None,
                     filter: str | None = None, model: str | None = None) -> pd.DataFrame:
    """Read an lm-evaluation-harness ``samples_<task>_<time>.jsonl`` file into a long table.

    Parameters
    ----------
    path : str or Path
        The samples file (written with ``--log_samples``).
    cluster : str, optional
        A field of each document (``doc``) to cluster on (several, comma-separated: the first
        present). Default: the subtask. When the subtask belongs to a group (``group_subtasks`` in
        the results file), ``task`` is the group, so a group's subtasks are its clusters.
    metric : str, optional
        Which per-sample metric is the outcome (default: the first one the file lists, e.g.
        ``acc`` or ``exact_match``). It must be 0/1.
    filter : str, optional
        For tasks logged under several filters (one line per document and filter), which one;
        required when there is more than one.
    model : str, optional
        The model name; default: ``model_name`` from the ``results_<time>.json`` beside the file.

    Raises
    ------
    LogFormatError
        Unreadable lines, an ambiguous filter, a metric that is not 0/1, no model name.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise _fail(p, "no such file")
    if not p.name.startswith("samples_"):
        raise _fail(p, "an lm-eval samples file is named samples_<task>_<time>.jsonl")
    subtask = p.stem[len("samples_"):].rsplit("_", 1)[0]
    records = []
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise _fail(p, f"line {n} is not valid JSON ({exc.msg})") from exc
    if not records:
        raise _fail(p, "no records")
    if not all(isinstance(r, dict) and "doc_id" in r and "doc" in r for r in records):
        raise _fail(p, "records lack 'doc_id'/'doc': not an lm-eval samples file")
    filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in records))
    if filter is None:
        if len(filters) > 1:
            raise _fail(p, f"logged under several filters {filters}; choose one with filter=... (CLI: --filter)")
        filter = filters[0]
    elif filter not in filters:
        if len(filters) > 1:
            raise _fail(p, f"no filter {filter!r}; the file has {filters}")
        filter = filters[0]  # a task logged under one filter only: the choice does not apply to it
    records = [r for r in records if str(r.get("filter", "none")) == filter]
    metrics = records[0].get("metrics") or []
    if metric is None:
        if not metrics:
            raise _fail(p, "the records list no metrics; choose one with metric=...")
        metric = str(metrics[0])
    results = _lm_eval_results(p)
    group = next((str(g) for g, subs in ((results or {}).get("group_subtasks") or {}).items() if subtask in subs), None)
    task = group or subtask
    if model is None:
        model = (results or {}).get("model_name")
        if not model:
            raise _fail(p, "no results_<time>.json beside it names the model; pass model=... (CLI: --model)")
    # By default the subtask is the cluster (lm-eval's groups are the natural unit); a doc field on request.
    field = _cluster_field(p, [r for r in records if isinstance(r["doc"], dict)], cluster, "doc") if cluster else None
    rows = []
    for r in records:
        doc = r["doc"] if isinstance(r["doc"], dict) else {}
        if metric not in r:
            raise _fail(p, f"document {r['doc_id']} has no metric {metric!r}; it has {r.get('metrics')}")
        value = float(r[metric])
        filtered = r.get("filtered_resps")
        invalid = isinstance(filtered, list) and any(x == "[invalid]" for x in filtered)
        if invalid:
            status, correct, detail = "parse_failure", np.nan, "[invalid]"
        elif value in (0.0, 1.0):
            status, correct, detail = "ok", value, ""
        else:
            raise _fail(p, f"document {r['doc_id']}: metric {metric!r} = {value!r} is not 0/1")
        sample_id = str(doc.get("id", r["doc_id"]))
        label = str(doc[field]) if field else subtask
        rows.append({"model": str(model), "item": f"{subtask}/{sample_id}", "task": task, "subtask": subtask,
                     "sample_id": sample_id, "epoch": 1, "cluster": label, "correct": correct, "status": status,
                     "detail": detail, "metric": metric, "filter": filter})
    return _finish(pd.DataFrame(rows), "mean", p.name)


# --------------------------------------------------------------------------------------------
# Generic long tables
# --------------------------------------------------------------------------------------------

def log_read_table(path: PathLike) -> pd.DataFrame:
    """Read a long table written as CSV (``.csv``, ``.csv.gz``) or JSON lines (``.jsonl``).

    The columns ``model, item, cluster, correct`` are required; ``status`` defaults to ``ok`` where
    ``correct`` is given, and a row with no outcome and no status is an error (say why it is missing).
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise _fail(p, "no such file")
    try:
        if p.name.endswith((".jsonl", ".jsonl.gz")):
            df = pd.read_json(p, lines=True, dtype=False)
        else:
            df = pd.read_csv(p, dtype={"model": str, "item": str, "cluster": str})
    except (ValueError, OSError, UnicodeDecodeError, csv.Error) as exc:
        raise _fail(p, f"cannot read it as a table: {exc}") from exc
    needed = [c for c in ("model", "item", "cluster", "correct") if c not in df.columns]
    if needed:
        raise _fail(p, f"missing columns {needed}; a long table has {list(LONG_COLUMNS)}")
    if "status" not in df.columns:
        if df["correct"].isna().any():
            raise _fail(p, f"{int(df['correct'].isna().sum())} rows have no outcome and there is no 'status' "
                           f"column saying why; add one with values from {list(STATUSES)}")
        df["status"] = "ok"
    df["correct"] = pd.to_numeric(df["correct"], errors="coerce")
    df["source"] = p.name
    return df


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------

def _finish(df: pd.DataFrame, epochs: Epochs, source: str) -> pd.DataFrame:
    df["source"] = source
    # One order whatever the reader or the archive's entry order: by model, item, epoch.
    df = df.sort_values(["model", "item", "epoch"], kind="stable").reset_index(drop=True)
    if epochs == "all":
        return df.reset_index(drop=True)
    if epochs != "mean":
        raise ValueError(f"epochs must be 'mean' or 'all', not {epochs!r}")
    out = []
    for (_, _), g in df.groupby(["model", "item"], sort=False):
        first = g.iloc[0].to_dict()
        graded = g["status"] == "ok"
        first["n_epochs"] = len(g)
        first["n_graded"] = int(graded.sum())
        if graded.any():
            first["correct"] = float(g.loc[graded, "correct"].mean())
            first["status"] = "ok"
            first["detail"] = ""
        else:
            first["status"] = g["status"].mode().iloc[0]
            first["correct"] = np.nan
        first.pop("epoch", None)
        out.append(first)
    res = pd.DataFrame(out)
    lead = ["model", "item", "cluster", "correct", "status"]
    return res[lead + [c for c in res.columns if c not in lead]].reset_index(drop=True)


def _kind(path: pathlib.Path) -> str:
    name = path.name
    if name.endswith(".eval"):
        return "inspect"
    if name.startswith("results_") and name.endswith(".json"):
        return "lm_eval_results"
    if name.endswith(".json"):
        return "inspect"
    if name.startswith("samples_") and name.endswith(".jsonl"):
        return "lm_eval"
    if name.endswith((".csv", ".csv.gz", ".jsonl", ".jsonl.gz")):
        return "table"
    return "unknown"


def _lm_eval_samples_of(results: pathlib.Path) -> list[pathlib.Path]:
    stamp = results.stem[len("results_"):]
    found = sorted(results.parent.glob(f"samples_*_{stamp}.jsonl"))
    if not found:
        raise _fail(results, f"no samples_*_{stamp}.jsonl beside it: run lm-eval with --log_samples")
    return found


def _expand(paths: Iterable[PathLike]) -> list[pathlib.Path]:
    files: list[pathlib.Path] = []
    for raw in paths:
        p = pathlib.Path(raw)
        if p.is_dir():
            found = [f for f in sorted(p.rglob("*")) if f.is_file() and _kind(f) in ("inspect", "lm_eval", "table")
                     and not f.name.startswith(".")]
            if not found:
                raise _fail(p, "the folder holds no log this importer reads (.eval, Inspect .json, "
                               "lm-eval samples_*.jsonl, .csv, .jsonl)")
            files.extend(found)
        elif p.is_file() and _kind(p) == "lm_eval_results":
            files.extend(_lm_eval_samples_of(p))
        elif p.is_file():
            files.append(p)
        else:
            raise _fail(p, "no such file or folder")
    return files


def log_read(paths: PathLike | Sequence[PathLike], *, cluster: str | None = None, epochs: Epochs = "mean",
             scorer: str | None = None, metric: str | None = None, filter: str | None = None,
             progress: bool = False) -> pd.DataFrame:
    """Read eval logs of any supported format (files or folders) into one long table.

    Each file goes to :func:`log_read_inspect`, :func:`log_read_lm_eval` or :func:`log_read_table`
    by its name and content. When the same run is given twice (an Inspect ``.eval`` and its
    ``.json`` twin), the duplicate rows are an error: pass one of them.

    Parameters
    ----------
    paths : path or sequence of paths
        Files or folders (searched recursively).
    cluster, epochs, scorer, metric, filter
        Passed to the format's reader where it applies.
    progress : bool
        Show a progress bar over files.

    Returns
    -------
    DataFrame
        The long table, all files concatenated.

    Raises
    ------
    LogFormatError
        Naming the file: unknown format, unreadable content, duplicated (model, item) rows.
    """
    if isinstance(paths, str | pathlib.Path):
        paths = [paths]
    files = _expand(paths)
    if not files:
        raise LogFormatError("no log files given")
    iterator: Iterable[pathlib.Path] = files
    if progress and len(files) > 1:
        from tqdm.auto import tqdm
        iterator = tqdm(files, desc="reading logs", unit="file")
    frames = []
    for f in iterator:
        kind = _kind(f)
        if kind == "inspect":
            frames.append(log_read_inspect(f, cluster=cluster, scorer=scorer, epochs=epochs))
        elif kind == "lm_eval":
            frames.append(log_read_lm_eval(f, cluster=cluster, metric=metric, filter=filter))
        elif kind == "table":
            frames.append(log_read_table(f))
        else:
            raise _fail(f, "unknown log format (expected .eval, an Inspect .json, lm-eval samples_*.jsonl, "
                           ".csv or .jsonl)")
    df = pd.concat(frames, ignore_index=True, sort=False)
    if epochs == "mean":
        dup = df.duplicated(["model", "item"], keep=False)
        if dup.any():
            sources = sorted(set(df.loc[dup, "source"]))
            first = df.loc[dup, ["model", "item"]].iloc[0].tolist()
            raise LogFormatError(f"the same (model, item) appears in several files {sources[:4]}, e.g. {first}: "
                                 "pass each run once (an Inspect .eval and its .json twin are the same run)")
    return df

