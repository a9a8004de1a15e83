"""Benchmark of ``evalkit report``: reading a large Inspect log, and building the report of a large table.

Usage::

    python benchmarks/bench_report.py            # 20,000-sample .eval; 71 models x 1,700 items, 12 clusters
    python benchmarks/bench_report.py --quick    # 2,000 samples; 20 models x 500 items

(a) Log reading: a 20,000-sample Inspect ``.eval`` archive is written from the samples of a fixture
log (``tests/fixtures/eval_logs``, copied with new ids), then read by ``evalkit.log_read_inspect``
and by Inspect's own ``inspect_ai.log.read_eval_log`` in the same process (the ratio is the
figure to read; Inspect is the optional ``inspect`` extra and is skipped when absent). When the
git history is at hand, the previous evalkit reader (its per-item loop over (model, item)
groups) runs too.

(b) ``report_build`` on a synthetic 71-model x 1,700-item table with 12 clusters of unequal size,
model-dependent missing answers (parse failures), every pair of models compared (``top_k=71``),
CR2 with Satterthwaite df, and CR1. In the same process, alternating with it: the same
``report_build`` with the doubly robust feature computed by ``missing_features`` over the task's
whole table for every model (the path before the per-task item sums, selected by disabling
``evalkit.report._Difficulty``), with the largest difference between the two reports' numbers
(0: the same bits). Wall and CPU seconds are recorded; with one BLAS thread the CPU time is the
wall time on a quiet machine. When the git history is at hand, the much older ``report_build``
(one ``mean_estimate`` per pair) runs once too.

Times are the best of ``--repeat`` runs on a shared machine: compare the ratios. Prints a table and
writes ``benchmarks/results/report.json`` (``report-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import types
import warnings
import zipfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _results import best_time, write_results  # noqa: E402

import evalkit as ek  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURE = (ROOT / "tests/fixtures/eval_logs/inspect_ai/logs/eval"
           / "2026-11-30T11-09-42-00-00_mcq-subjects_5Xdjo8KqChV8PRDEuEbgtb.eval")
BASE_COMMIT = "a0f42cd"  # the report and the readers before the vectorised paths


def _old_module(path: str, name: str) -> types.ModuleType | None:
    """The file ``path`` of evalkit at BASE_COMMIT, imported as ``evalkit.<name>`` (None without git)."""
    try:
        src = subprocess.run(["git", "show", f"{BASE_COMMIT}:{path}"], cwd=ROOT, capture_output=True, text=True,
                             check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    spec = importlib.util.spec_from_loader(f"evalkit.{name}", loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    mod.__package__ = "evalkit"
    sys.modules[f"evalkit.{name}"] = mod
    exec(compile(src, f"{BASE_COMMIT}:{path}", "exec"), mod.__dict__)  # noqa: S102 - the project's own history
    return mod


_SUMMARY_KEYS = ("id", "epoch", "input", "choices", "target", "metadata", "scores", "model_usage", "started_at",
                 "completed_at", "total_time", "working_time", "uuid", "turn_count")


def write_big_eval(path: pathlib.Path, n_samples: int) -> None:
    """A ``.eval`` archive with ``n_samples`` samples copied (with new ids) from a fixture log."""
    with zipfile.ZipFile(FIXTURE) as zf:
        names = zf.namelist()
        header = json.loads(ek.logs._zip_read(zf, zf.getinfo("header.json"), FIXTURE))
        samples = [json.loads(ek.logs._zip_read(zf, zf.getinfo(n), FIXTURE)) for n in names
                   if n.startswith("samples/")]
        others = {n: ek.logs._zip_read(zf, zf.getinfo(n), FIXTURE) for n in names
                  if not n.startswith("samples/") and n != "header.json"}
    ids = [f"s{i:05d}" for i in range(n_samples)]
    header["eval"]["dataset"]["samples"] = n_samples
    header["eval"]["dataset"]["sample_ids"] = ids
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        out.writestr("header.json", json.dumps(header))
        for n, data in others.items():
            if n.startswith(("summaries", "reductions", "_journal/summaries")):
                continue
            out.writestr(n, data)
        summaries = []
        for i, sid in enumerate(ids):
            s = dict(samples[i % len(samples)])
            s["id"] = sid
            s["epoch"] = 1
            out.writestr(f"samples/{sid}_epoch_1.json", json.dumps(s))
            summary = {k: s[k] for k in _SUMMARY_KEYS if k in s}
            if s.get("error"):
                summary["error"] = str((s["error"] or {}).get("message", s["error"]))
            summaries.append(summary)
        out.writestr("summaries.json", json.dumps(summaries))   # as Inspect writes it at the end of a run


def _full_frame(path: pathlib.Path) -> pd.DataFrame:
    """The importer's rows from every full sample record (not summaries.json), for the time of that path."""
    _, samples = ek.logs._inspect_eval_archive(path, full=True)
    rows = [(s["id"], s.get("epoch", 1), *ek.logs._inspect_score(path, s, None)) for s in samples]
    return pd.DataFrame({"model": "m", "item": [r[0] for r in rows], "epoch": [r[1] for r in rows],
                         "cluster": "c", "status": [r[2] for r in rows], "correct": [r[3] for r in rows],
                         "detail": [r[4] for r in rows], "correct_tool": [r[5] for r in rows]})


def bench_logs(n_samples: int, repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {"n_samples": n_samples}
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "big.eval"
        write_big_eval(path, n_samples)
        out["file_mb"] = path.stat().st_size / 1e6
        t_new, df = best_time(lambda: ek.log_read_inspect(path), repeat)
        out["evalkit_s"] = t_new
        out["rows"] = len(df)
        old = _old_module("evalkit/logs.py", "_logs_before")
        if old is not None:
            t_old, df_old = best_time(lambda: old.log_read_inspect(path), 1)
            out["evalkit_before_s"] = t_old
            out["speedup_vs_before"] = t_old / t_new
            same = df_old.set_index("item")[["correct", "status"]].sort_index()
            mine = df.set_index("item")[["correct", "status"]].sort_index()
            out["same_rows_as_before"] = bool(same.equals(mine))
        if importlib.util.find_spec("inspect_ai") is not None:
            from inspect_ai.log import read_eval_log
            t_tool, log = best_time(lambda: read_eval_log(str(path)), repeat)
            out["inspect_read_eval_log_s"] = t_tool
            out["evalkit_over_inspect"] = t_new / t_tool
            out["inspect_samples"] = len(log.samples or [])
            try:
                from inspect_ai.log import read_eval_log_sample_summaries
                t_sum, _ = best_time(lambda: read_eval_log_sample_summaries(str(path)), repeat)
                out["inspect_read_sample_summaries_s"] = t_sum
                out["evalkit_over_inspect_summaries"] = t_new / t_sum
            except ImportError:
                pass
        else:
            out["inspect_read_eval_log_s"] = None
            out["note"] = "inspect_ai is not installed (pip install -e '.[inspect]'): no Inspect ratio"
        t_full, _ = best_time(lambda: ek.logs._finish(_full_frame(path), "mean", path.name), 1)
        out["evalkit_every_sample_s"] = t_full
    return out


def synthetic_table(n_models: int, n_items: int, n_clusters: int, seed: int = 0) -> pd.DataFrame:
    """A leaderboard-like long table: unequal clusters, cluster effects, model-dependent parse failures."""
    rng = np.random.default_rng(seed)
    sizes = rng.dirichlet(np.full(n_clusters, 2.0)) * n_items
    cl = np.repeat(np.arange(n_clusters), np.maximum(1, np.round(sizes).astype(int)))[:n_items]
    cl = np.concatenate([cl, np.full(n_items - cl.size, n_clusters - 1)])
    u = rng.normal(0, 0.8, n_clusters)[cl] + rng.normal(0, 1.0, n_items)
    ability = rng.normal(0.5, 1.0, n_models)
    p = 1 / (1 + np.exp(-(ability[:, None] - u[None, :])))
    y = (rng.random((n_models, n_items)) < p).astype(float)
    miss_rate = rng.beta(0.6, 6.0, n_models)
    miss_rate[0] = 0.73                                  # one model with most answers unparsable
    miss = rng.random((n_models, n_items)) < miss_rate[:, None] * (0.5 + rng.random(n_clusters))[cl][None, :]
    status = np.where(miss, "parse_failure", "ok")
    y[miss] = np.nan
    models = [f"model-{i:03d}" for i in range(n_models)]
    return pd.DataFrame({"model": np.repeat(models, n_items), "item": np.tile([f"i{j:05d}" for j in range(n_items)],
                                                                              n_models),
                         "cluster": np.tile([f"cat{c:02d}" for c in cl], n_models), "correct": y.ravel(),
                         "status": status.ravel(), "task": "leaderboard"})


def _with_cpu(f: Callable[[], Any]) -> Callable[[], tuple[Any, float]]:
    """``f`` returning its result and the CPU seconds it took (every thread of the process)."""
    def run() -> tuple[Any, float]:
        c = time.process_time()
        out = f()
        return out, time.process_time() - c
    return run


def _per_model_pass(df: pd.DataFrame, se: str, top_k: int) -> ek.Report:
    """``report_build`` as it was before the per-task item sums: ``missing_features`` over the task per model."""
    saved = ek.report._Difficulty.acc_others
    ek.report._Difficulty.acc_others = lambda self, g: None  # type: ignore[method-assign]
    try:
        return ek.report_build(df, se=se, top_k=top_k)
    finally:
        ek.report._Difficulty.acc_others = saved  # type: ignore[method-assign]


def _max_diff(a: ek.Report, b: ek.Report) -> float:
    """Largest absolute difference between the numeric columns of every table of two reports."""
    worst = 0.0
    for name in ("accuracy", "missing_estimates", "comparisons", "missing_by_cluster"):
        x, y = getattr(a, name), getattr(b, name)
        if x.shape != y.shape:
            return float("inf")
        num = x.select_dtypes("number").columns
        d = np.abs(x[num].to_numpy(float) - y[num].to_numpy(float))
        both_nan = np.isnan(x[num].to_numpy(float)) & np.isnan(y[num].to_numpy(float))
        d = np.where(both_nan, 0.0, d)
        worst = max(worst, float(np.max(d, initial=0.0)) if not np.isnan(d).any() else float("inf"))
    return worst


def bench_report(n_models: int, n_items: int, n_clusters: int, repeat: int) -> dict[str, Any]:
    df = synthetic_table(n_models, n_items, n_clusters)
    out: dict[str, Any] = {"n_models": n_models, "n_items": n_items, "n_clusters": n_clusters,
                           "n_pairs": n_models * (n_models - 1) // 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # today's report and the per-model-pass baseline, alternated so that both see the same load
        t_new, t_pass = np.inf, np.inf
        c_new, c_pass = np.inf, np.inf
        for _ in range(max(1, repeat)):
            t, (rep, c) = best_time(_with_cpu(lambda: ek.report_build(df, se="CR2", top_k=n_models)))
            t_new, c_new = min(t_new, t), min(c_new, c)
            t, (rep_pass, c) = best_time(_with_cpu(lambda: _per_model_pass(df, "CR2", n_models)))
            t_pass, c_pass = min(t_pass, t), min(c_pass, c)
        out["report_build_s"] = t_new
        out["report_build_cpu_s"] = c_new
        out["comparisons"] = len(rep.comparisons)
        out["per_model_pass_s"] = t_pass
        out["per_model_pass_cpu_s"] = c_pass
        out["speedup_vs_per_model_pass"] = t_pass / t_new
        out["cpu_speedup_vs_per_model_pass"] = c_pass / c_new
        out["max_abs_diff_vs_per_model_pass"] = _max_diff(rep, rep_pass)
        t_cr1, (_, c_cr1) = best_time(_with_cpu(lambda: ek.report_build(df, se="CR1", top_k=n_models)), 1)
        out["report_build_cr1_s"] = t_cr1
        out["report_build_cr1_cpu_s"] = c_cr1
        old = _old_module("evalkit/report.py", "_report_before")
        if old is not None:
            t_old, rep_old = best_time(lambda: old.report_build(df, se="CR2"), 1)
            out["report_build_before_s"] = t_old
            out["speedup_vs_before"] = t_old / t_new
            a = rep.comparisons.set_index(["model_a", "model_b"])
            b = rep_old.comparisons.set_index(["model_a", "model_b"]).reindex(a.index)
            out["max_abs_diff_cr_se_vs_before"] = float(np.nanmax(np.abs(a["cr_se"] - b["cr_se"])))
            out["max_abs_diff_cr_df_vs_before"] = float(np.nanmax(np.abs(a["cr_df"] - b["cr_df"])))
            acc_a = rep.accuracy.set_index("model")
            acc_b = rep_old.accuracy.set_index("model").reindex(acc_a.index)
            out["max_abs_diff_cr_low_accuracy_vs_before"] = float(np.nanmax(np.abs(acc_a["cr_low"] - acc_b["cr_low"])))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    n_samples = 2_000 if args.quick else 20_000
    shape = (20, 500, 12) if args.quick else (71, 1_700, 12)
    load = os.getloadavg()
    logs = bench_logs(n_samples, args.repeat)
    rep = bench_report(*shape, repeat=args.repeat)
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    print(f"(a) reading a {n_samples:,}-sample .eval ({logs['file_mb']:.0f} MB):")
    print(f"    evalkit {logs['evalkit_s']:.2f} s (from every full sample record: "
          f"{logs['evalkit_every_sample_s']:.2f} s)", end="")
    if logs.get("evalkit_before_s") is not None:
        print(f"; before {logs['evalkit_before_s']:.2f} s ({logs['speedup_vs_before']:.1f}x)", end="")
    if logs.get("inspect_read_eval_log_s") is not None:
        print(f"; Inspect read_eval_log {logs['inspect_read_eval_log_s']:.2f} s "
              f"(evalkit / Inspect = {logs['evalkit_over_inspect']:.2f})", end="")
        if logs.get("inspect_read_sample_summaries_s") is not None:
            print(f"; Inspect read_eval_log_sample_summaries {logs['inspect_read_sample_summaries_s']:.2f} s "
                  f"(ratio {logs['evalkit_over_inspect_summaries']:.2f})", end="")
    print()
    print(f"(b) report_build, {shape[0]} models x {shape[1]:,} items, {shape[2]} clusters, "
          f"{rep['comparisons']} comparisons:")
    print(f"    CR2 {rep['report_build_s']:.2f} s ({rep['report_build_cpu_s']:.2f} CPU s), CR1 "
          f"{rep['report_build_cr1_s']:.2f} s ({rep['report_build_cr1_cpu_s']:.2f} CPU s); with a pass over the task "
          f"table per model (the path before the per-task item sums) {rep['per_model_pass_s']:.2f} s "
          f"({rep['per_model_pass_cpu_s']:.2f} CPU s): {rep['speedup_vs_per_model_pass']:.1f}x wall, "
          f"{rep['cpu_speedup_vs_per_model_pass']:.1f}x CPU, largest difference "
          f"{rep['max_abs_diff_vs_per_model_pass']:.1e}")
    print("   ", end="")
    if rep.get("report_build_before_s") is not None:
        print(f"; before (CR2) {rep['report_build_before_s']:.2f} s ({rep['speedup_vs_before']:.1f}x); "
              f"largest difference in cr_se {rep['max_abs_diff_cr_se_vs_before']:.1e}, "
              f"cr_df {rep['max_abs_diff_cr_df_vs_before']:.1e}", end="")
    print()
    payload = {"logs": logs, "report": rep, "load_average_at_start": list(load)}
    path = write_results("report-quick" if args.quick else "report", payload, sys.argv)
    print(json.dumps(payload, default=float))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
