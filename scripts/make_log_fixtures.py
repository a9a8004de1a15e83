"""Write the log-layout fixtures under ``tests/fixtures/eval_logs/layouts/`` with today's inspect-ai.

Usage::

    pip install -e ".[inspect]"
    python scripts/make_log_fixtures.py

Offline: two scripted ``mockllm`` models (the built-in mock provider with a callable
``custom_outputs``, token usage set so no tokenizer is fetched) answer toy arithmetic questions
written for these fixtures (``What is a + b?``). Each folder holds one layout the report must read:

``inspect_ai/eval_set_json/``
    an ``eval_set`` in the JSON log format: its ``eval-set.json`` and ``logs.json`` index files sit
    beside the logs.
``inspect_ai/status/``
    a run that stopped with status ``error`` (``fail_on_error=True`` and a failing model call),
    and a run with status ``cancelled`` (the model call raises ``KeyboardInterrupt`` half-way).
``inspect_ai/reasons/``
    a scorer that gives Inspect's standard reasons ``refusal``, ``grader_failed`` and
    ``invalid_response_format`` (and plain ``C`` / ``I``).
``inspect_ai/epochs/``
    three epochs per sample, some of them unparsable (``invalid_response_format``).
``inspect_ai/cancelled/``
    two logs whose header says ``"status": "cancelled"``, as Inspect closes a run cancelled while it
    runs: a ``.eval`` with the 4 samples done of 12 planned, and a JSON log cancelled before its first
    sample (the header only, no samples). Derived from the interrupted ``status_cancelled`` run above
    (its start record and the samples it wrote) by ``inspect_cancelled()``, which needs no inspect-ai:
    ``python scripts/make_log_fixtures.py --derived`` rewrites them alone.

The planned outcome of every sample is in ``PLAN`` below and written to ``ground_truth.csv``;
the report's tests compare evalkit's numbers with the logs' own ``results`` (Inspect's headline
accuracy). lm-evaluation-harness is not installed by this script (it pulls in torch and
transformers); its layouts (several filters, groups) are the committed 0.4.13 logs in
``tests/fixtures/eval_logs/lm_eval`` and the two-runs-one-name layout is written by
``lm_eval_same_name()`` below from those files, as the tool writes them when ``--model_args``
gives no name.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "eval_logs" / "layouts"
N = 12
SAMPLES = [(f"add-{i:02d}", "easy" if i <= 6 else "hard", i * 3 + 1, i + 4) for i in range(1, N + 1)]

# (model, sample id, epoch) -> code; unlisted = C.
#   C correct  W wrong  U unparsable  R refusal  G the grader fails  X the model call raises
#   K the model call raises KeyboardInterrupt (the run is cancelled)
PLAN: dict[str, dict[tuple[str, int], str]] = {
    "alpha": {("add-02", 1): "W", ("add-05", 1): "U", ("add-08", 1): "R", ("add-11", 1): "G",
              ("add-03", 2): "U", ("add-07", 3): "U", ("add-09", 2): "W"},
    "beta": {("add-01", 1): "W", ("add-04", 1): "R", ("add-06", 1): "R", ("add-10", 1): "U", ("add-12", 1): "G",
             ("add-02", 2): "U", ("add-02", 3): "U", ("add-08", 3): "W"},
}
STOP = {"status_error": ("add-05", "X"), "status_cancelled": ("add-07", "K")}


def _task(name: str, epochs: int = 1):  # noqa: ANN202 - inspect_ai types
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState, generate

    @scorer(metrics=[accuracy(), stderr()])
    def scripted():  # noqa: ANN202
        async def score(state: TaskState, target: Target) -> Score:
            text = state.output.completion
            if text.startswith("ANSWER: "):
                ans = text.removeprefix("ANSWER: ")
                return Score(value=CORRECT if ans == target.text else INCORRECT, answer=ans)
            if text.startswith("I cannot help"):
                return Score(value=INCORRECT, answer="", reason="refusal")
            if text.startswith("[grader]"):
                return Score(value=INCORRECT, answer="", reason="grader_failed", explanation="the grader timed out")
            return Score(value=INCORRECT, answer="", reason="invalid_response_format")

        return score

    samples = [Sample(id=sid, input=f"What is {a} + {b}? Reply 'ANSWER: <number>'.", target=str(a + b),
                      metadata={"level": level}) for sid, level, a, b in SAMPLES]
    return Task(dataset=MemoryDataset(samples, name=name), solver=generate(), scorer=scripted(), epochs=epochs,
                name=name)


def _model(name: str, stop: tuple[str, str] | None = None):  # noqa: ANN202
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver._task_state import sample_state

    truth = {sid: str(a + b) for sid, _, a, b in SAMPLES}

    def outputs(input, tools, tool_choice, config):  # noqa: ANN001, ANN202, A002
        state = sample_state()
        sid, epoch = str(state.sample_id), state.epoch
        code = PLAN[name].get((sid, epoch), "C")
        if stop is not None and sid == stop[0]:
            code = stop[1]
        if code == "X":
            raise RuntimeError(f"simulated model API failure for {sid}")
        if code == "K":
            raise KeyboardInterrupt
        text = {"C": f"ANSWER: {truth[sid]}", "W": f"ANSWER: {int(truth[sid]) + 1}", "U": "It is hard to say.",
                "R": "I cannot help with that.", "G": "[grader] ANSWER: ?"}[code]
        out = ModelOutput.from_content(model=name, content=text)
        out.usage = ModelUsage(input_tokens=8, output_tokens=len(text.split()), total_tokens=8 + len(text.split()))
        return out

    return get_model(f"mockllm/{name}", custom_outputs=outputs, memoize=False)


def main() -> None:
    import inspect_ai
    from inspect_ai import eval, eval_set

    shutil.rmtree(OUT / "inspect_ai", ignore_errors=True)
    (OUT / "inspect_ai").mkdir(parents=True)
    os.environ.setdefault("INSPECT_DISPLAY", "none")
    common = {"display": "none", "max_samples": 1}
    # an eval set in the JSON format
    ok, _ = eval_set([_task("arith")], log_dir=str(OUT / "inspect_ai" / "eval_set_json"),
                     model=[_model("alpha"), _model("beta")], log_format="json", **common)
    assert ok
    # one scorer with Inspect's standard reasons; and three epochs
    for folder, epochs in (("reasons", 1), ("epochs", 3)):
        for name in ("alpha", "beta"):
            eval(_task(f"arith_{folder}", epochs=epochs), model=_model(name),
                 log_dir=str(OUT / "inspect_ai" / folder), log_format="eval", **common)
    # runs that stopped: an error (fail_on_error) and a cancellation
    for task_name, stop in STOP.items():
        try:
            eval(_task(task_name), model=_model("alpha", stop), log_dir=str(OUT / "inspect_ai" / "status"),
                 log_format="eval", fail_on_error=True, **common)
        except (KeyboardInterrupt, RuntimeError) as exc:  # the cancelled run re-raises; its log is written
            print(f"{task_name}: {type(exc).__name__}", file=sys.stderr)
    lm_eval_same_name()
    inspect_cancelled()
    with open(OUT / "ground_truth.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "sample_id", "epoch", "cluster", "code"])
        for name in ("alpha", "beta"):
            for sid, level, _, _ in SAMPLES:
                for epoch in (1, 2, 3):
                    w.writerow([f"mockllm/{name}", sid, epoch, level, PLAN[name].get((sid, epoch), "C")])
    (OUT / "VERSIONS.json").write_text(json.dumps({"inspect_ai": inspect_ai.__version__}, indent=1) + "\n")
    print(f"wrote {OUT}")


def inspect_cancelled() -> None:
    """Logs closed with ``"status": "cancelled"``: 4 of 12 samples done (``.eval``), and none (header-only JSON).

    Built from the interrupted ``status_cancelled`` run of ``inspect_ai/status/``: its start record
    (the task, the model and the 12 planned sample ids) and the samples it wrote, under the header
    Inspect writes when it closes a cancelled run (``status``, ``stats``, ``error``; no ``results``).
    """
    import zipfile

    sys.path.insert(0, str(ROOT))
    from evalkit.logs import _zip_read

    src = next((OUT / "inspect_ai" / "status").glob("*_status-cancelled_*.eval"))
    dst = OUT / "inspect_ai" / "cancelled"
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    with zipfile.ZipFile(src) as zin:
        entries = {i.filename: _zip_read(zin, i, src) for i in zin.infolist()}
    start = json.loads(entries["_journal/start.json"])
    samples = {k: v for k, v in entries.items() if k.startswith("samples/")}
    started = start["eval"]["created"]
    stats = {"started_at": started, "completed_at": started, "model_usage": {}}
    header = {**start, "status": "cancelled", "stats": stats, "error": None}
    with zipfile.ZipFile(dst / src.name.replace("status-cancelled", "status-cancelled-4-of-12"), "w",
                         compression=zipfile.ZIP_DEFLATED) as zout:
        zout.writestr("_journal/start.json", entries["_journal/start.json"])
        for name in sorted(samples):
            zout.writestr(name, samples[name])
        zout.writestr("header.json", json.dumps(header, indent=1))
    none_run = {**header, "eval": {**header["eval"], "task": "status_cancelled_at_start"}}
    name = src.with_suffix(".json").name.replace("status-cancelled", "status-cancelled-before-any-sample")
    (dst / name).write_text(json.dumps(none_run, indent=1) + "\n")


def lm_eval_same_name() -> None:
    """Two lm-eval runs whose results name the same model (as when ``--model_args`` names none).

    Written from the committed 0.4.13 ``dummy`` and ``scripted`` runs: only ``model_name`` (and the
    sanitized name) is set to the one generated name; ``model_source`` and ``config`` keep each
    run's own model.
    """
    src = ROOT / "tests" / "fixtures" / "eval_logs" / "lm_eval" / "output"
    dst = OUT / "lm_eval_same_name"
    shutil.rmtree(dst, ignore_errors=True)
    for run in ("dummy", "scripted"):
        (dst / f"run_{run}").mkdir(parents=True)
        for f in sorted((src / run).iterdir()):
            if f.name.startswith("samples_mini_mcq_science"):
                shutil.copy(f, dst / f"run_{run}" / f.name)
            elif f.name.startswith("results_"):
                obj = json.loads(f.read_text())
                obj["model_name"] = obj["model_name_sanitized"] = "__main__.LM"
                (dst / f"run_{run}" / f.name).write_text(json.dumps(obj, indent=2))


if __name__ == "__main__":
    if sys.argv[1:] == ["--derived"]:
        inspect_cancelled()
    else:
        main()
