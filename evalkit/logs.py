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
Inspect: ``reason`` ``refusal``                             ``refusal``
Inspect: ``reason`` ``grader_failed`` / ``scoring_failed``  ``grading_failure`` (not the model's)
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
no epoch was graded; ``n_parse_failure`` counts the unparsable epochs and ``epoch_statuses``
lists every epoch's status. Inspect's own ``mean`` reducer differs: it also leaves errored epochs
out, but counts an unparsable epoch as 0; ``correct_tool`` holds that value beside evalkit's, so
the two can be compared. ``epochs="all"`` keeps one row per epoch with an ``epoch`` column (for the planning
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
from .errors import EvalkitInputError

__all__ = [
    "LogFormatError",
    "log_read",
    "log_read_inspect",
    "log_read_lm_eval",
    "log_read_table",
]

Epochs = Literal["mean", "all"]
PathLike = str | pathlib.Path


class LogFormatError(EvalkitInputError):
    """A log file that evalkit cannot read or whose content it does not understand.

    An :class:`evalkit.errors.EvalkitInputError` (so also a ``ValueError``) whose ``argument`` is
    ``"path"``: the message starts with the file's name.
    """

    def __init__(self, message: str, argument: str = "path") -> None:
        super().__init__(argument, message)
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])


INSPECT_SIDE_FILES = ("eval-set.json", "logs.json", "listing.json")
"""Files an Inspect ``eval_set`` (or a log folder) writes beside its logs, which are not logs."""

_REFUSAL_REASONS = ("refusal", "refused", "content_filter")
_GRADING_REASONS = ("grader_failed", "scoring_failed", "scorer_failed", "grader_error")


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


def _json_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: PathLike) -> Any:
    try:
        return json.loads(_zip_read(zf, info, path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(path, f"entry {info.filename!r} of the .eval archive is not valid JSON ({exc})") from exc


def _inspect_eval_archive(path: pathlib.Path, *, full: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and sample records of a ``.eval`` archive.

    A finished log also holds ``summaries.json``: one small record per sample with its id, epoch,
    metadata, scores and error, which is all the importer needs, and a tenth of the bytes to
    parse (the full sample also stores every message and event). It is used when it lists exactly
    the samples the archive holds; otherwise (an unfinished log, ``full=True``) every sample is read.
    """
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise _fail(path, f"not a readable .eval (zip) archive: {exc}") from exc
    with zf:
        infos = {i.filename: i for i in zf.infolist()}
        if "header.json" in infos:
            header = _json_entry(zf, infos["header.json"], path)
        elif "_journal/start.json" in infos:
            # an unfinished log (the run was interrupted before Inspect wrote its header): the
            # journal's start record has the eval spec; the samples written so far are read
            header = _json_entry(zf, infos["_journal/start.json"], path)
            if isinstance(header, dict):
                header = {**header, "status": "started"}
        else:
            raise _fail(path, "the .eval archive has no header.json (a foreign file?)")
        if not isinstance(header, dict):
            raise _fail(path, "header.json is not an object")
        entries = sorted(n for n in infos if n.startswith("samples/") and n.endswith(".json"))
        if not full and "summaries.json" in infos:
            summaries = _json_entry(zf, infos["summaries.json"], path)
            if (isinstance(summaries, list) and len(summaries) == len(entries)
                    and all(isinstance(x, dict) and "scores" in x for x in summaries)
                    and {f"samples/{x.get('id')}_epoch_{x.get('epoch')}.json" for x in summaries} == set(entries)):
                return header, summaries
        samples = [_json_entry(zf, infos[name], path) for name in entries]
    return header, samples


def _inspect_json(path: pathlib.Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    obj = _json_load(path)
    if not isinstance(obj, dict) or "eval" not in obj:
        raise _fail(path, "not an Inspect JSON log (no 'eval' header)")
    samples = obj.get("samples")
    if samples is None and str(obj.get("status") or "success") == "success":
        raise _fail(path, "the Inspect log has no samples (was it written with log_samples=False?)")
    return obj, list(samples or [])


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


def _value_float(value: Any) -> float:
    """Inspect's own ``value_to_float``: C/Y/yes/true -> 1, I/N/no/false -> 0, P -> 0.5, numbers as they are."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("c", "y", "yes", "true", "correct"):
            return 1.0
        if v in ("i", "n", "no", "false", "incorrect"):
            return 0.0
        if v == "p":
            return 0.5
        try:
            return float(v)
        except ValueError:
            return 0.0
    return 0.0


def _inspect_score(path: PathLike, sample: dict[str, Any], scorer: str | None) -> tuple[str, float, str, float]:
    """``(status, correct, detail, tool_value)`` of one Inspect sample record.

    ``tool_value`` is what Inspect itself counts for the sample (its ``value_to_float``; NaN when
    the sample errored and Inspect leaves it out).
    """
    if not isinstance(sample, dict):
        raise _fail(path, f"a sample record is a {type(sample).__name__}, not an object")
    sid = f"sample {sample.get('id')!r} epoch {sample.get('epoch')}"
    if sample.get("error"):
        err = sample["error"]
        message = err.get("message", "") if isinstance(err, dict) else str(err)
        return "error", np.nan, str(message)[:200], np.nan
    scores = sample.get("scores") or {}
    if not isinstance(scores, dict) or not scores:
        raise _fail(path, f"{sid} has neither a score nor an error")
    if scorer is None:
        if len(scores) > 1:
            raise _fail(path, f"{sid} has several scorers {sorted(scores)}; choose one with scorer=... "
                              "(CLI: --scorer)")
        scorer = next(iter(scores))
    if scorer not in scores:
        raise _fail(path, f"{sid} has no scorer {scorer!r}; it has {sorted(scores)}")
    score = scores[scorer]
    if not isinstance(score, dict):
        raise _fail(path, f"{sid}: the score of {scorer!r} is a {type(score).__name__}, not an object")
    value, answer = score.get("value"), score.get("answer")
    meta = score.get("metadata")
    reason = score.get("reason") or (meta.get("reason") if isinstance(meta, dict) else None)
    tool = _value_float(value)
    if reason in _REFUSAL_REASONS:
        return "refusal", np.nan, str(reason), tool
    if reason in _GRADING_REASONS:
        return "grading_failure", np.nan, str(reason), tool
    if reason in ("invalid_response_format", "no_response") or value == "N":
        return "parse_failure", np.nan, str(reason or "no_response"), tool
    if value == "I" and scorer == "choice" and answer in ("", None):
        return "parse_failure", np.nan, "empty_answer", tool
    if value in ("C", "I"):
        return "ok", 1.0 if value == "C" else 0.0, "", tool
    if isinstance(value, bool):
        return "ok", float(value), "", tool
    if isinstance(value, int | float) and float(value) in (0.0, 1.0):
        return "ok", float(value), "", tool
    raise _fail(path, f"{sid}: score value {value!r} of scorer {scorer!r} is not C/I/N or 0/1 "
                      "(partial credit and other scales are not supported)")


def _cluster_field(path: PathLike, records: Sequence[dict[str, Any]], cluster: str | None, where: str) -> str | None:
    """The metadata field to cluster on: the first of ``cluster`` (comma-separated) that every record has.

    With ``cluster=None``: the only field every record's metadata has, if there is exactly one;
    otherwise None (cluster by task).
    """
    metas: list[dict[str, Any]] = [m if isinstance(m := r.get(where), dict) else {} for r in records]
    common = set(metas[0]).intersection(*metas[1:]) if metas else set()
    if cluster is None:
        return next(iter(common)) if len(common) == 1 else None
    for name in (c.strip() for c in cluster.split(",")):
        if name in common:
            return name
    have = sorted(common) or sorted(set().union(*metas))
    raise _fail(path, f"no cluster field {cluster!r} in the {where} of every sample; fields: {have}")


def _meta_fields(records: Sequence[dict[str, Any]], where: str) -> list[str]:
    metas: list[dict[str, Any]] = [m if isinstance(m := r.get(where), dict) else {} for r in records]
    return sorted(set(metas[0]).intersection(*metas[1:])) if metas else []


def _set_info(df: pd.DataFrame, notes: list[str], summaries: list[dict[str, Any]], run: dict[str, Any]) -> None:
    df.attrs["evalkit_notes"] = list(notes)
    df.attrs["evalkit_tool_summaries"] = list(summaries)
    df.attrs["evalkit_runs"] = [run]


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
        n_graded, n_parse_failure, correct_tool`` (or ``epoch`` with ``epochs="all"``) and
        ``source`` (the file name). ``correct_tool`` is what Inspect's own ``mean`` reducer
        gives the sample (an unparsable epoch counts 0). ``attrs["evalkit_notes"]`` says what
        the reader noticed (a run that stopped with an error or was cancelled, with the samples
        done and planned); ``attrs["evalkit_tool_summaries"]`` holds Inspect's own headline
        metrics from the log's ``results``.

    Raises
    ------
    LogFormatError
        Unreadable file, missing cluster field, unknown score values, the same sample and epoch twice.

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
        raise EvalkitInputError("reader", f"reader must be 'builtin' or 'inspect_ai', not {reader!r}")
    elif p.suffix == ".eval":
        header, samples = _inspect_eval_archive(p)
    else:
        header, samples = _inspect_json(p)
    ev = header.get("eval") or {}
    model, task = ev.get("model"), ev.get("task")
    if not model or not task:
        raise _fail(p, "the log header names no model or task")
    notes: list[str] = []
    run_status = str(header.get("status") or "success")
    dataset = ev.get("dataset") or {}
    n_epochs_planned = int((ev.get("config") or {}).get("epochs") or 1)
    planned = dataset.get("samples")
    if run_status != "success":
        done = len(samples)
        total = f"{int(planned) * n_epochs_planned}" if isinstance(planned, int) else "an unknown number of"
        what = "the log is unfinished (the run stopped before Inspect closed it)" if run_status == "started" \
            else f"the run's status is {run_status!r}"
        notes.append(f"{p.name}: {what} ({task}, {model}): {done} of {total} planned "
                     "sample-epochs are in the log; the accuracy describes only those, and the comparisons "
                     "only the samples both models ran")
    summaries = []
    for sc in ((header.get("results") or {}).get("scores") or []):
        if not isinstance(sc, dict):
            continue
        for mname, m in (sc.get("metrics") or {}).items():
            if isinstance(m, dict) and mname in ("accuracy", "mean") and isinstance(m.get("value"), int | float):
                summaries.append({"tool": "inspect_ai", "source": p.name, "task": str(task), "model": str(model),
                                  "scorer": str(sc.get("name")), "metric": mname, "value": float(m["value"]),
                                  "scored_samples": sc.get("scored_samples")})
    if not samples:
        if run_status == "success":
            raise _fail(p, "the log has no samples (run status 'success')")
        raise _fail(p, f"the log has no samples: the run's status is {run_status!r} ({task}, {model}) and it "
                       f"stopped before its first sample finished: 0 of {total} planned sample-epochs were run")
    bad = [type(s).__name__ for s in samples if not isinstance(s, dict)]
    if bad:
        raise _fail(p, f"{len(bad)} sample records are not objects (e.g. a {bad[0]})")
    if any("id" not in s for s in samples):
        raise _fail(p, "a sample record has no 'id'")
    scorers = sorted({k for s in samples for k in (s.get("scores") or {})} if all(
        isinstance(s.get("scores") or {}, dict) for s in samples) else set())
    if scorer is not None and scorer not in scorers and len(scorers) == 1:
        notes.append(f"{p.name}: no scorer {scorer!r}; its only scorer {scorers[0]!r} is used")
        scorer = scorers[0]
    field = _cluster_field(p, samples, cluster, "metadata")
    if field is None:
        fields = _meta_fields(samples, "metadata")
        if fields:
            notes.append(f"{task}: clustered by task (no --cluster given); the samples' metadata fields are "
                         f"{fields}")
    n = len(samples)
    status, correct, detail, tool = [""] * n, np.empty(n), [""] * n, np.empty(n)
    for i, s in enumerate(samples):
        status[i], correct[i], detail[i], tool[i] = _inspect_score(p, s, scorer)
    ids = [str(s["id"]) for s in samples]
    ep = [s.get("epoch") for s in samples]
    if any(e is not None and not isinstance(e, int) for e in ep):
        raise _fail(p, "a sample's epoch is not an integer")
    df = pd.DataFrame({
        "model": str(model), "item": [f"{task}/{i}" for i in ids], "task": str(task), "sample_id": ids,
        "epoch": np.array([1 if e is None else e for e in ep], dtype=np.int64),
        "cluster": [str((s.get("metadata") or {})[field]) for s in samples] if field else str(task),
        "correct": correct, "status": status, "detail": detail, "correct_tool": tool,
        "scorer": scorer or (scorers[0] if len(scorers) == 1 else ""),
    })
    dup = df.duplicated(["item", "epoch"])
    if dup.any():
        first = df.loc[dup, ["sample_id", "epoch"]].iloc[0].tolist()
        raise _fail(p, f"{int(dup.sum())} samples appear twice with the same id and epoch, e.g. {first}")
    out = _finish(df, epochs, p.name)
    run = {"tool": "inspect_ai", "source": p.name, "task": str(task), "model": str(model), "status": run_status,
           "samples_logged": len(samples), "samples_planned": planned, "epochs": n_epochs_planned,
           "scorer": str(out["scorer"].iloc[0]), "cluster_field": field or "task"}
    _set_info(out, notes, summaries, run)
    return out


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
        ``acc`` or ``exact_match``). It must be 0/1. A metric the file does not have is noted
        and the default used.
    filter : str, optional
        For tasks logged under several filters (one line per document and filter), which one.
        Default: the first the file lists (lm-eval's first ``filter_list`` entry), with a note
        naming the others. A filter the file does not have is noted and the default used.
    model : str, optional
        The model name; default: ``model_name`` from the ``results_<time>.json`` beside the file.

    Returns
    -------
    DataFrame
        As :func:`log_read_inspect`, with ``subtask, metric, filter`` columns; ``correct_tool``
        is lm-eval's own per-document value (``[invalid]`` counts 0). ``attrs`` carry the notes
        and lm-eval's own aggregate from the results file.

    Raises
    ------
    LogFormatError
        Unreadable lines, a metric that is not 0/1, no model name, two documents with the same id.
    """
    p = pathlib.Path(path)
    if not p.is_file():
        raise _fail(p, "no such file")
    if not p.name.startswith("samples_"):
        raise _fail(p, "an lm-eval samples file is named samples_<task>_<time>.jsonl")
    subtask = p.stem[len("samples_"):].rsplit("_", 1)[0]
    records = []
    try:
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise _fail(p, f"line {n} is not valid JSON ({exc.msg})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(p, f"cannot read the file: {exc}") from exc
    if not records:
        raise _fail(p, "no records")
    if not all(isinstance(r, dict) and "doc_id" in r and "doc" in r for r in records):
        raise _fail(p, "records lack 'doc_id'/'doc': not an lm-eval samples file")
    notes: list[str] = []
    filters = list(dict.fromkeys(str(r.get("filter", "none")) for r in records))
    if filter is None or filter not in filters:
        if filter is not None:
            notes.append(f"{p.name}: no filter {filter!r} (it has {filters}); {filters[0]!r} is used")
        elif len(filters) > 1:
            notes.append(f"{subtask}: logged under the filters {filters}; the first, {filters[0]!r}, is reported "
                         "(choose another with --filter)")
        filter = filters[0]
    records = [r for r in records if str(r.get("filter", "none")) == filter]
    metrics = [str(m) for m in (records[0].get("metrics") or [])]
    if metric is not None and metric not in metrics:
        if not metrics:
            raise _fail(p, f"the records list no metrics and have no {metric!r}")
        notes.append(f"{p.name}: no metric {metric!r} (it has {metrics}); {metrics[0]!r} is used")
        metric = None
    if metric is None:
        if not metrics:
            raise _fail(p, "the records list no metrics; choose one with metric=... (CLI: --metric)")
        metric = metrics[0]
    results = _lm_eval_results(p)
    group = next((str(g) for g, subs in ((results or {}).get("group_subtasks") or {}).items() if subtask in subs), None)
    task = group or subtask
    if model is None:
        model = (results or {}).get("model_name")
        if not model:
            raise _fail(p, "no results_<time>.json beside it names the model; pass model=... (CLI: --model)")
    # By default the subtask is the cluster (lm-eval's groups are the natural unit); a doc field on request.
    docs = [r for r in records if isinstance(r["doc"], dict)]
    field = _cluster_field(p, docs, cluster, "doc") if cluster else None
    n = len(records)
    status, correct, detail, tool = [""] * n, np.empty(n), [""] * n, np.empty(n)
    sample_ids, labels = [""] * n, [""] * n
    for i, r in enumerate(records):
        doc = r["doc"] if isinstance(r["doc"], dict) else {}
        if metric not in r:
            raise _fail(p, f"document {r['doc_id']} has no metric {metric!r}; it has {r.get('metrics')}")
        try:
            value = float(r[metric])
        except (TypeError, ValueError):
            raise _fail(p, f"document {r['doc_id']}: metric {metric!r} = {r[metric]!r} is not a number") from None
        filtered = r.get("filtered_resps")
        invalid = isinstance(filtered, list) and any(x == "[invalid]" for x in filtered)
        tool[i] = value
        if invalid:
            status[i], correct[i], detail[i] = "parse_failure", np.nan, "[invalid]"
        elif value in (0.0, 1.0):
            status[i], correct[i] = "ok", value
        else:
            raise _fail(p, f"document {r['doc_id']}: metric {metric!r} = {value!r} is not 0/1")
        sample_ids[i] = str(doc.get("id", r["doc_id"]))
        labels[i] = str(doc[field]) if field else subtask
    df = pd.DataFrame({"model": str(model), "item": [f"{subtask}/{s}" for s in sample_ids], "task": task,
                       "subtask": subtask, "sample_id": sample_ids, "epoch": 1, "cluster": labels,
                       "correct": correct, "status": status, "detail": detail, "correct_tool": tool,
                       "metric": metric, "filter": filter})
    dup = df.duplicated("item")
    if dup.any():
        example = df.loc[dup, "sample_id"].iloc[0]
        raise _fail(p, f"{int(dup.sum())} documents share an id with another (e.g. {example!r}) "
                       f"under filter {filter!r}; evalkit will not merge them")
    out = _finish(df, "mean", p.name)
    summaries = []
    res = ((results or {}).get("results") or {}).get(subtask) or {}
    key = f"{metric},{filter}"
    if isinstance(res.get(key), int | float):
        summaries.append({"tool": "lm_eval", "source": p.name, "task": subtask, "model": str(model),
                          "scorer": filter, "metric": metric, "value": float(res[key]),
                          "scored_samples": res.get("sample_len")})
    cfg = (results or {}).get("config") or {}
    run = {"tool": "lm_eval", "source": p.name, "task": subtask, "model": str(model), "status": "success",
           "samples_logged": len(records), "samples_planned": res.get("sample_len"), "epochs": 1,
           "scorer": f"{metric} ({filter})", "cluster_field": field or "subtask",
           "model_source": (results or {}).get("model_source"), "config_model": cfg.get("model"),
           "model_args": json.dumps(cfg.get("model_args"), sort_keys=True, default=str),
           "folder": str(p.parent)}
    _set_info(out, notes, summaries, run)
    return out


# --------------------------------------------------------------------------------------------
# Generic long tables
# --------------------------------------------------------------------------------------------

def log_read_table(path: PathLike) -> pd.DataFrame:
    """Read a long table written as CSV (``.csv``, ``.csv.gz``) or JSON lines (``.jsonl``).

    The columns ``model, item, correct`` are required, and ``cluster`` unless another column is
    named as the cluster in :func:`evalkit.report_build`; ``status`` defaults to ``ok`` where
    ``correct`` is given, and a row with no outcome and no status is an error (say why it is
    missing). ``correct`` must be numeric 0/1 (or ``True``/``False``): text such as ``yes`` is an
    error naming a bad value, never a silent NaN.
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
    if df.empty:
        raise _fail(p, "the table has no rows")
    needed = [c for c in ("model", "item", "correct") if c not in df.columns]
    if needed:
        raise _fail(p, f"missing columns {needed}; a long table has {list(LONG_COLUMNS)}")
    if "status" not in df.columns:
        if df["correct"].isna().any():
            raise _fail(p, f"{int(df['correct'].isna().sum())} rows have no outcome and there is no 'status' "
                           f"column saying why; add one with values from {list(STATUSES)}")
        df["status"] = "ok"
    raw = df["correct"]
    if raw.dtype == bool:
        num = raw.astype(float)
    else:
        num = pd.to_numeric(raw.map(lambda v: {"True": 1.0, "False": 0.0, "true": 1.0, "false": 0.0}.get(v, v)
                                    if isinstance(v, str) else v), errors="coerce")
        bad = num.isna() & raw.notna()
        if bad.any():
            raise _fail(p, f"column 'correct' has {int(bad.sum())} values that are not numbers, such as "
                           f"{raw[bad].iloc[0]!r}; code outcomes as 0/1")
    df["correct"] = num.astype(float)
    df["source"] = p.name
    return df


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------

def _finish(df: pd.DataFrame, epochs: Epochs, source: str) -> pd.DataFrame:
    """Sort, and (``epochs="mean"``) reduce the epochs of each (model, item) to one row, vectorised."""
    df["source"] = source
    # One order whatever the reader or the archive's entry order: by model, item, epoch.
    df = df.sort_values(["model", "item", "epoch"], kind="stable").reset_index(drop=True)
    if epochs == "all":
        return df
    if epochs != "mean":
        raise EvalkitInputError("epochs", f"epochs must be 'mean' or 'all', not {epochs!r}")
    if "correct_tool" not in df.columns:
        df["correct_tool"] = df["correct"]
    key = df["model"].astype(str) + "\x00" + df["item"].astype(str)
    codes, _ = pd.factorize(key, sort=False)      # rows are sorted, so the codes increase
    n_groups = int(codes.max()) + 1
    graded = (df["status"] == "ok").to_numpy()
    n_ep = np.bincount(codes, minlength=n_groups)
    n_gr = np.bincount(codes, weights=graded, minlength=n_groups).astype(np.int64)
    unpars = np.bincount(codes, weights=(df["status"] == "parse_failure").to_numpy(), minlength=n_groups)
    y = np.where(graded, df["correct"].to_numpy(dtype=float), 0.0)
    s = np.bincount(codes, weights=y, minlength=n_groups)
    tool = df["correct_tool"].to_numpy(dtype=float)
    has_tool = ~np.isnan(tool)
    t_n = np.bincount(codes, weights=has_tool, minlength=n_groups)
    t_s = np.bincount(codes, weights=np.where(has_tool, tool, 0.0), minlength=n_groups)
    first = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    res = df.iloc[first].drop(columns=["epoch"]).reset_index(drop=True)
    res["n_epochs"] = n_ep
    res["n_graded"] = n_gr
    res["n_parse_failure"] = unpars.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        res["correct"] = np.where(n_gr > 0, s / np.maximum(n_gr, 1), np.nan)
        res["correct_tool"] = np.where(t_n > 0, t_s / np.maximum(t_n, 1), np.nan)
    any_graded = n_gr > 0
    status = res["status"].to_numpy(dtype=object).copy()
    detail = res["detail"].to_numpy(dtype=object).copy()
    status[any_graded] = "ok"
    detail[any_graded] = ""
    multi = (n_ep > 1) & ~any_graded
    if multi.any():
        # no epoch graded: the most frequent reason (ties: the first in alphabetical order)
        sub = pd.DataFrame({"g": codes, "status": df["status"].to_numpy()})
        sub = sub[multi[codes]]
        counts = sub.groupby(["g", "status"]).size().reset_index(name="k")
        counts = counts.sort_values(["g", "k", "status"], ascending=[True, False, True])
        mode = counts.drop_duplicates("g").set_index("g")["status"]
        status[mode.index.to_numpy()] = mode.to_numpy()
    res["status"] = status
    res["detail"] = detail
    if (n_ep > 1).any():
        st = df["status"].to_numpy(dtype=object)
        joined = pd.Series(st).groupby(codes, sort=False).agg(",".join)
        res["epoch_statuses"] = joined.to_numpy()
    lead = ["model", "item", "cluster", "correct", "status"]
    return res[lead + [c for c in res.columns if c not in lead]]


def _kind(path: pathlib.Path) -> str:
    name = path.name
    if name in INSPECT_SIDE_FILES:
        return "side"
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
                     and not f.name.startswith(".") and not any(part.startswith(".") for part in f.parts[-3:-1])]
            if not found:
                raise _fail(p, "the folder holds no log this importer reads (.eval, Inspect .json, "
                               "lm-eval samples_*.jsonl, .csv, .jsonl)")
            files.extend(found)
        elif p.is_file() and _kind(p) == "lm_eval_results":
            files.extend(_lm_eval_samples_of(p))
        elif p.is_file() and _kind(p) == "side":
            raise _fail(p, "this is the index of an Inspect eval set, not a log: pass its folder or its .eval files")
        elif p.is_file():
            files.append(p)
        else:
            raise _fail(p, "no such file or folder")
    return files


def _disambiguate_lm_eval(frames: list[pd.DataFrame], notes: list[str]) -> None:
    """Give lm-eval runs that share a generated ``model_name`` but differ in model names of their own."""
    by_name: dict[str, set[tuple[str, str, str]]] = {}
    for f in frames:
        for run in f.attrs.get("evalkit_runs", []):
            if run.get("tool") == "lm_eval":
                ident = (str(run.get("config_model")), str(run.get("model_args")), str(run.get("folder")))
                by_name.setdefault(run["model"], set()).add(ident)
    clash = {name for name, ids in by_name.items() if len(ids) > 1}
    for f in frames:
        for run in f.attrs.get("evalkit_runs", []):
            if run.get("tool") == "lm_eval" and run["model"] in clash:
                cfg, args, folder = str(run.get("config_model")), str(run.get("model_args")), str(run.get("folder"))
                others = by_name[run["model"]]
                if len({c for c, _, _ in others}) == len(others):
                    label = f"{run['model']} [{cfg}]"
                elif len({(c, a) for c, a, _ in others}) == len(others):
                    label = f"{run['model']} [{cfg} {args}]"
                else:
                    label = f"{run['model']} [{pathlib.Path(folder).name}]"
                notes.append(f"lm-eval runs in different folders share the model name {run['model']!r}; "
                             f"{folder} is reported as {label!r} (from model_source / config.model / the folder)")
                f["model"] = label
                run["model"] = label
                for s in f.attrs.get("evalkit_tool_summaries", []):
                    s["model"] = label


def log_read(paths: PathLike | Sequence[PathLike], *, cluster: str | None = None, epochs: Epochs = "mean",
             scorer: str | None = None, metric: str | None = None, filter: str | None = None,
             model: str | None = None, on_error: Literal["raise", "note"] = "raise",
             progress: bool = False) -> pd.DataFrame:
    """Read eval logs of any supported format (files or folders) into one long table.

    Each file goes to :func:`log_read_inspect`, :func:`log_read_lm_eval` or :func:`log_read_table`
    by its name and content. Folders are searched recursively; the index files of an Inspect eval
    set (``eval-set.json``, ``logs.json``) are skipped. When the same run is given twice (an
    Inspect ``.eval`` and its ``.json`` twin), the duplicate rows are an error: pass one of them.

    Parameters
    ----------
    paths : path or sequence of paths
        Files or folders (searched recursively).
    cluster, epochs, scorer, metric, filter
        Passed to the format's reader where it applies; a ``scorer``, ``metric`` or ``filter`` a
        file does not have is noted for that file (its only one, or its first, is used).
    model : str, optional
        The model name of lm-eval samples files that have no ``results_*.json`` beside them.
    on_error : {"raise", "note"}
        ``"note"``: a file that cannot be read is left out and named in
        ``attrs["evalkit_notes"]`` (the command line's choice); an error only if no file is left.
    progress : bool
        Show a progress bar over files.

    Returns
    -------
    DataFrame
        The long table, all files concatenated. ``attrs`` carry ``evalkit_notes`` (what the
        readers noticed), ``evalkit_tool_summaries`` (the tools' own headline numbers) and
        ``evalkit_runs`` (one record per file: tool, status, samples logged and planned, scorer).

    Raises
    ------
    LogFormatError
        Naming the file: unknown format, unreadable content, duplicated (model, item) rows.
    """
    if isinstance(paths, str | pathlib.Path):
        paths = [paths]
    if on_error not in ("raise", "note"):
        raise EvalkitInputError("on_error", f"on_error must be 'raise' or 'note', not {on_error!r}")
    files = _expand(paths)
    if not files:
        raise LogFormatError("no log files given: paths is empty (give a log file, a folder or a list of them)",
                             argument="paths")
    iterator: Iterable[pathlib.Path] = files
    if progress and len(files) > 1:
        from tqdm.auto import tqdm
        iterator = tqdm(files, desc="reading logs", unit="file")
    frames: list[pd.DataFrame] = []
    notes: list[str] = []
    for f in iterator:
        kind = _kind(f)
        try:
            if kind == "inspect":
                frames.append(log_read_inspect(f, cluster=cluster, scorer=scorer, epochs=epochs))
            elif kind == "lm_eval":
                frames.append(log_read_lm_eval(f, cluster=cluster, metric=metric, filter=filter, model=model))
            elif kind == "table":
                frames.append(log_read_table(f))
            else:
                raise _fail(f, "unknown log format (expected .eval, an Inspect .json, lm-eval samples_*.jsonl, "
                               ".csv or .jsonl)")
        except LogFormatError as exc:
            if on_error == "raise":
                raise
            notes.append(f"file left out: {exc}")
    if not frames:
        raise LogFormatError("no file could be read: " + "; ".join(notes))
    _disambiguate_lm_eval(frames, notes)
    summaries = [s for fr in frames for s in fr.attrs.get("evalkit_tool_summaries", [])]
    runs = [r for fr in frames for r in fr.attrs.get("evalkit_runs", [])]
    notes = [n for fr in frames for n in fr.attrs.get("evalkit_notes", [])] + notes
    for fr in frames:
        fr.attrs = {}
    df = pd.concat(frames, ignore_index=True, sort=False)
    if epochs == "mean":
        dup = df.duplicated(["model", "item"], keep=False)
        if dup.any():
            sources = sorted(set(df.loc[dup, "source"]))
            first = df.loc[dup, ["model", "item"]].iloc[0].tolist()
            raise LogFormatError(f"the same (model, item) appears in several files {sources[:4]}, e.g. {first}: "
                                 "pass each run once (an Inspect .eval and its .json twin are the same run)")
    df.attrs["evalkit_notes"] = list(dict.fromkeys(notes))
    df.attrs["evalkit_tool_summaries"] = summaries
    df.attrs["evalkit_runs"] = runs
    return df
