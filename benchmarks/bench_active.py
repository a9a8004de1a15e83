"""Benchmark of active evaluation (FAQ / Pro-Active Inference, [FAQ] arXiv 2601.20251) on CPU.

Usage::

    python benchmarks/bench_active.py                  # full MMLU-Pro table (all test models at 5%)
    python benchmarks/bench_active.py --quick          # 2,000 items, 200 test models: a few minutes
    python benchmarks/bench_active.py --part ablation  # history-sparsity ablation, second suite, 7.5%
    python benchmarks/bench_active.py --part loo       # leave-one-model-out on the real matrices

Data (``--part mmlu``): a semi-synthetic MMLU-Pro leaderboard, ``Y ~ Bernoulli(sigmoid(U V'))``
drawn from the fitted Open LLM Leaderboard v2 factor model (a model of the real leaderboard, not
its responses), split by model into history (1,000), validation (100) and test (1,111). The
factor model is REFIT on the historical draws (``--rank K`` fixes the rank; by default it is chosen
between 32 and 64 by held-out log loss on a 2,000-item subset, then refit on all 12,032 items); the
hyper-parameters are tuned on the validation models only. Every method then runs on the first
``--test-models`` test models as one stacked computation (one trial each at 5%), and on
``--large-models`` of them at 12.5% and 25%.

Measured on 2 shared cores (notebook 06 quotes them)::

    python benchmarks/bench_active.py --rank 32 --large-models 300   # 22 min, one BLAS thread, load 2-4
    python benchmarks/bench_active.py --part ablation                 # 10 min
    python benchmarks/bench_active.py --part loo                      # 23 min (21 on MMLU-Pro official)

Timing: wall seconds per (budget, method) and a straightforward per-model loop on a few models
(the same code called one model at a time), whose per-model time times the number of test models
is the loop estimate; ``speedup_vs_loop`` is their ratio, measured in the same process (the
machine is shared, so ratios are more meaningful than seconds). Peak memory is the process's
maximum resident set size.

Prints a table and, last, one JSON line with one record per (budget, method): ``budget``
(fraction), ``method``, ``setting``, ``ess`` (pooled realised MSE), ``ess_authors`` (the released code's
definition against its own uniform baseline), ``ess_width_wr`` (width ratio against evalkit's uniform),
``ess_ceiling`` (the generator's probabilities known), ``coverage``, ``coverage_mcse``, ``seconds`` and more.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import sys
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd
from _results import write_results  # benchmarks/_results.py (the script's folder is on sys.path)

import evalkit.active as _active
from evalkit import EvalkitWarning
from evalkit.active import AUTHORS_PARAMS, ActiveParams, active_factor_fit, active_run
from evalkit.active_evaluation import SPARSITY, active_semisynthetic, active_study

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _active_baseline import faq_run_baseline  # noqa: E402  (the FAQ step before blocking and threads)

warnings.filterwarnings("ignore", category=EvalkitWarning)

TUNE_GRID = {"rho": (0.1, 0.3), "tau": (0.1, 0.3)}
"""Tuning grid (beta0 = 1 and gamma = 0.2 stay at their defaults): 4 points, on the validation
models at 5%. The notebook tunes a larger grid on the reduced configuration."""


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

COLUMNS = ["budget", "n_b", "method", "setting", "n_models", "ess", "ess_low", "ess_high", "ess_authors",
           "ess_width_wr", "ess_per_model", "ess_ceiling", "coverage", "coverage_mcse", "coverage_mcse_model", "width",
           "bias", "seconds"]
"""``ess`` is evalkit's pooled realised-MSE multiplier; ``ess_authors`` the source's (per-seed width
ratio squared against their Bernoulli-sampling Horvitz-Thompson uniform, ``uniform_ht``), which
scores the interval: read it on the ``faithful`` and ``authors`` rows (the source's interval)."""


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def part_mmlu(quick: bool, seed: int, large_models: int, test_models: int, rank: int) -> tuple[pd.DataFrame,
                                                                                             dict[str, Any]]:
    n_items = 2000 if quick else None
    n_test = 200 if quick else 1111
    n_hist = 400 if quick else 1000
    t0 = time.perf_counter()
    data = active_semisynthetic("mmlu_pro", n_hist=n_hist, n_val=50, n_test=n_test, n_items=n_items, seed=seed)
    t_data = time.perf_counter() - t0
    _log("data drawn; refit next")
    t0, c0 = time.perf_counter(), time.process_time()
    if rank > 0:
        fac = active_factor_fit(data.H, rank=rank, max_iter=150)
    else:
        fac = active_study(data, budgets=[0.05], methods=("uniform",), ranks=(32, 64), params=ActiveParams(),
                           seed=seed, cv_items=2000, max_iter=150).factors
    t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
    _log(f"refit done (rank {fac.rank}) in {t_fit:.0f} s; tuning next")
    sub = data.Z_test[: min(test_models, n_test)]
    data5 = dataclasses.replace(data, Z_test=sub, P_test=data.P_test[: len(sub)])
    t0, c0 = time.perf_counter(), time.process_time()
    core = active_study(data5, budgets=[0.05], methods=("uniform", "uniform_ht", "stratified", "ppi", "faq",
                                                         "faq_weighted"),
                        factors=fac, grid=TUNE_GRID, seed=seed)
    t_core, c_core = time.perf_counter() - t0, time.process_time() - c0
    _log(f"tuning and the 5% table done in {t_core:.0f} s ({core.params})")
    # the source's ESS needs the source's interval: FAQ with the closed-form variance and Wald, with
    # evalkit's tuned hyper-parameters ("faithful") and with the source's own ("authors")
    both = [core.table.assign(setting="default")]
    for setting, prm in (("faithful", core.params), ("authors", AUTHORS_PARAMS)):
        st = active_study(data5, budgets=[0.05], methods=("uniform_ht", "faq"), factors=fac, params=prm, seed=seed,
                          variance="source", interval="wald")
        both.append(st.table[st.table["method"] == "faq"].assign(setting=setting))
        _log(f"{setting}: {st.table[['method', 'ess', 'ess_authors', 'coverage']].to_string(index=False)}")
    core = dataclasses.replace(core, table=pd.concat(both, ignore_index=True))
    N = data.Z_test.shape[1]
    nb5 = int(round(0.05 * N))
    # today's FAQ step, the step before blocking and threads, and the per-model loop, same process
    sp = faq_speed(sub, fac, nb5, core.params, seed)
    tables = [core.table]
    if large_models > 0:
        big = dataclasses.replace(data, Z_test=sub[:large_models], P_test=data.P_test[:large_models])
        for f in (0.125, 0.25):
            _log(f"budget {f}")
            st = active_study(big, budgets=[f], methods=("uniform", "uniform_ht", "stratified", "ppi", "faq",
                                                         "faq_weighted"),
                              factors=fac, params=core.params, seed=seed)
            tables.append(st.table.assign(setting="default"))
            st = active_study(big, budgets=[f], methods=("uniform_ht", "faq"), factors=fac, params=core.params,
                              seed=seed, variance="source", interval="wald")
            tables.append(st.table[st.table["method"] == "faq"].assign(setting="faithful"))
    table = pd.concat(tables, ignore_index=True)
    table.insert(1, "n_b", table["budget"])
    table["budget"] = table.pop("fraction")
    n_run = len(sub)
    extra = {
        "n_items": N, "n_hist": n_hist, "n_test_models_run": n_run, "large_models": large_models,
        "rank": fac.rank,
        "cv": None if fac.cv is None else fac.cv.to_dict(orient="records"),
        "params": core.params.__dict__, "tuning_top": core.tuning.head(3).to_dict(orient="records"),
        "seconds_data": t_data, "seconds_refit": t_fit, "cpu_seconds_refit": c_fit,
        "seconds_tune_and_5pct_table": t_core, "cpu_seconds_tune_and_5pct_table": c_core,
        **{f"faq_5pct_{k}": v for k, v in sp.items()},
    }
    return table, extra


def faq_speed(sub: np.ndarray, fac: Any, budget: int, params: ActiveParams, seed: int,
              n_loop: int = 4) -> dict[str, Any]:
    """FAQ at one budget on every row of ``sub``: today's step (2 threads, 1 thread), the step
    before blocking and threads (the baseline, same process) and the per-model loop.

    Every run uses the source's variance (``variance="source"``), the one the baseline computes,
    so that the bit-for-bit comparison compares like with like.

    Wall and CPU seconds (``time.process_time``: every thread of the process) of each, the ratios
    of the baseline's and the loop's times to today's, and whether the numbers are bit-identical.
    """
    n = len(sub)

    def timed(f: Any) -> tuple[Any, float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        out = f()
        return out, time.perf_counter() - t0, time.process_time() - c0

    new2, s_new2, c_new2 = timed(lambda: active_run(sub, fac, budget, method="faq", params=params, seed=seed,
                                                       variance="source"))
    _log(f"faq (2 threads) on {n} models: {s_new2:.1f} s wall, {c_new2:.1f} s CPU")
    threads, _active._THREADS = _active._THREADS, 1
    try:
        new1, s_new1, c_new1 = timed(lambda: active_run(sub, fac, budget, method="faq", params=params, seed=seed,
                                                           variance="source"))
    finally:
        _active._THREADS = threads
    _log(f"faq (1 thread): {s_new1:.1f} s wall, {c_new1:.1f} s CPU")
    (b_est, b_se), s_old, c_old = timed(lambda: faq_run_baseline(sub, fac, budget, params, seed))
    _log(f"faq, the step before blocking and threads: {s_old:.1f} s wall, {c_old:.1f} s CPU")
    t0, c0 = time.perf_counter(), time.process_time()
    for m in range(n_loop):
        active_run(sub[m], fac, budget, method="faq", params=params, seed=seed, variance="source")
    loop_s = (time.perf_counter() - t0) / n_loop * n
    loop_c = (time.process_time() - c0) / n_loop * n
    same = bool(np.array_equal(new2.estimate[:, 0], b_est) and np.array_equal(new2.se[:, 0], b_se)
                and np.array_equal(new1.estimate, new2.estimate) and np.array_equal(new1.se, new2.se))
    return {
        "n_models": n, "budget": budget, "threads": threads,
        "faq_seconds": s_new2, "faq_cpu_seconds": c_new2,
        "faq_1_thread_seconds": s_new1, "faq_1_thread_cpu_seconds": c_new1,
        "faq_baseline_seconds": s_old, "faq_baseline_cpu_seconds": c_old,
        "loop_seconds_estimate": loop_s, "loop_cpu_seconds_estimate": loop_c, "loop_models_timed": n_loop,
        "speedup_vs_baseline": s_old / s_new2, "cpu_speedup_vs_baseline": c_old / c_new2,
        "speedup_2_threads_vs_1": s_new1 / s_new2,
        "speedup_vs_loop": loop_s / s_new2, "cpu_speedup_vs_loop": loop_c / c_new2,
        "bit_identical_to_baseline_and_across_threads": same,
        "load_average_after": list(os.getloadavg()),
    }


def part_speed(seed: int, test_models: int, rank: int, max_iter: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Only the timing of FAQ's 5% run on the test models (default hyper-parameters, no tuning)."""
    t0 = time.perf_counter()
    data = active_semisynthetic("mmlu_pro", n_hist=1000, n_val=50, n_test=1111, seed=seed)
    t_data = time.perf_counter() - t0
    _log(f"data drawn in {t_data:.0f} s; refit next")
    t0 = time.perf_counter()
    fac = active_factor_fit(data.H, rank=rank if rank > 0 else 32, max_iter=max_iter)
    t_fit = time.perf_counter() - t0
    _log(f"refit (rank {fac.rank}) in {t_fit:.0f} s")
    sub = data.Z_test[: min(test_models, len(data.Z_test))]
    N = sub.shape[1]
    sp = faq_speed(sub, fac, int(round(0.05 * N)), ActiveParams(), seed)
    table = pd.DataFrame([{"budget": 0.05, "method": "faq", "n_models": len(sub), "seconds": sp["faq_seconds"]}])
    return table, {"n_items": N, "rank": fac.rank, "seconds_data": t_data, "seconds_refit": t_fit, **sp}


def part_interleave(seed: int, n_rounds: int = 3, n_models: int = 64) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Today's step (1 thread) and the old step in alternation, CPU seconds of each round.

    A synthetic rank-32 factor model at MMLU-Pro's size (12,032 items; the cost of a step does not
    depend on the factors' values), FAQ at 5% on ``n_models`` rows. Alternating the two in one
    process exposes both to the same load, round after round; the median ratio is the figure.
    """
    from evalkit.active import ActiveFactors

    rng = np.random.default_rng(seed)
    N, k = 12032, 32
    V = rng.normal(0, 0.3, (N, k))
    U = rng.normal(0, 1, (200, k))
    fac = ActiveFactors(V=V, b=rng.normal(0, 1, N), U=U, prior_mean=U.mean(0),
                        prior_cov=np.cov(U.T) + 1e-6 * np.eye(k), rank=k, weight_decay=1.0, objective=0.0,
                        converged=True)
    Z = (rng.random((n_models, N)) < 0.6).astype(float)
    budget = int(round(0.05 * N))
    rows = []
    threads, _active._THREADS = _active._THREADS, 1
    try:
        for r in range(n_rounds):
            c0 = time.process_time()
            new = active_run(Z, fac, budget, method="faq", params=ActiveParams(), seed=seed, variance="source")
            c_new = time.process_time() - c0
            c0 = time.process_time()
            old = faq_run_baseline(Z, fac, budget, ActiveParams(), seed)
            c_old = time.process_time() - c0
            same = bool(np.array_equal(new.estimate[:, 0], old[0]) and np.array_equal(new.se[:, 0], old[1]))
            rows.append({"round": r, "cpu_seconds_today_1_thread": c_new, "cpu_seconds_baseline": c_old,
                         "ratio_baseline_over_today": c_old / c_new, "bit_identical": same,
                         "load_1min": os.getloadavg()[0]})
            _log(f"round {r}: today {c_new:.1f} s CPU, baseline {c_old:.1f} s CPU")
    finally:
        _active._THREADS = threads
    table = pd.DataFrame(rows)
    return table, {"n_models": n_models, "n_items": N, "budget": budget,
                   "median_ratio_baseline_over_today": float(table["ratio_baseline_over_today"].median())}


def part_ablation(quick: bool, seed: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    n_items = 2000 if quick else None
    n_test = 100 if quick else 200
    rows = []
    fits = {}
    for sp in SPARSITY:
        data = active_semisynthetic("bbh_gpqa_ifeval_math_musr", n_hist=400 if quick else 1000, n_val=60,
                                    n_test=n_test, n_items=n_items, sparsity=sp, seed=seed)
        _log(f"sparsity {sp}")
        methods = ("uniform", "ppi", "faq", "active_inference", "faq_norep") if sp == "full" else ("uniform", "faq")
        st = active_study(data, budgets=[0.075], methods=methods, ranks=(8, 32), grid=TUNE_GRID, seed=seed,
                          cv_items=2000, max_iter=200)
        rows.append(st.table.assign(sparsity=sp, observed=data.observed))
        fits[sp] = {"rank": st.factors.rank, "observed": data.observed, "params": st.params.__dict__}
    table = pd.concat(rows, ignore_index=True)
    table.insert(1, "n_b", table["budget"])
    table["budget"] = table.pop("fraction")
    return table, {"fits": fits, "n_test": n_test}


LOO_DATASETS = ("mmlu_pro_official", "livecodebench_gen", "chembench")
LOO_METHODS = ("uniform", "ppi", "faq", "faq@faithful")
"""Leave-one-model-out: the baselines, FAQ under evalkit's default (empirical PAI variance,
Korn-Graubard interval) and FAQ under the source's variance and Wald interval (``@faithful``),
with the same hyper-parameters and draws: the two FAQ rows differ only in their intervals."""


def part_loo(seed: int, datasets: tuple[str, ...] = LOO_DATASETS) -> tuple[pd.DataFrame, dict[str, Any]]:
    from evalkit import dataset_matrix
    from evalkit.active_evaluation import active_loo

    out = []
    for name in datasets:
        t0 = time.perf_counter()
        _log(name)
        tab = active_loo(dataset_matrix(name).Y, budget=0.1, ranks=(2,), methods=LOO_METHODS, n_trials=10,
                         seed=seed)
        out.append(tab.assign(dataset=name, seconds=time.perf_counter() - t0))
        _log(tab.to_string())
    return pd.concat(out, ignore_index=True), {"datasets": list(datasets), "budget": 0.1, "n_trials": 10,
                                               "rank": 2, "methods": list(LOO_METHODS)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="reduced sizes (a few minutes)")
    ap.add_argument("--part", choices=("mmlu", "speed", "interleave", "ablation", "loo"), default="mmlu")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--large-models", type=int, default=100, help="test models at 12.5%% and 25%% (0: skip)")
    ap.add_argument("--test-models", type=int, default=1111, help="test models at 5%% (all: 1111)")
    ap.add_argument("--rank", type=int, default=0, help="fixed rank of the refit (0: choose 32 or 64 by CV)")
    ap.add_argument("--max-iter", type=int, default=150, help="refit iterations (--part speed)")
    ap.add_argument("--datasets", default=",".join(LOO_DATASETS), help="--part loo: comma-separated datasets")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.part == "mmlu":
        table, extra = part_mmlu(args.quick, args.seed, args.large_models, args.test_models, args.rank)
    elif args.part == "speed":
        table, extra = part_speed(args.seed, args.test_models, args.rank, args.max_iter)
    elif args.part == "interleave":
        table, extra = part_interleave(args.seed)
    elif args.part == "ablation":
        table, extra = part_ablation(args.quick, args.seed)
    else:
        table, extra = part_loo(args.seed, tuple(args.datasets.split(",")))
    cols = [c for c in COLUMNS + ["sparsity", "observed", "dataset"] if c in table.columns]
    if args.part == "loo":
        cols = list(table.columns)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[cols].round(3).to_string(index=False))
    for k, v in extra.items():
        if not isinstance(v, (dict, list)):
            print(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}")
    record = {
        "benchmark": "bench_active", "part": args.part, "quick": args.quick, "seed": args.seed,
        "python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(), "peak_rss_mb": _peak_mb(),
        "seconds_total": time.perf_counter() - t0, **extra,
        "records": json.loads(table[cols].to_json(orient="records")),
    }
    print(json.dumps(record, default=str))
    name = "active" if args.part == "mmlu" else f"active-{args.part}"
    if args.part == "loo" and args.datasets != ",".join(LOO_DATASETS):
        name += "-" + args.datasets.replace(",", "-")
    if args.part == "mmlu" and (args.test_models, args.large_models) != (1111, 100):
        name += f"-{args.test_models}models"
    if args.part == "speed" and args.test_models != 1111:
        name += f"-{args.test_models}models"
    if args.quick:
        name += "-quick"
    write_results(name, json.loads(json.dumps(record, default=str)), sys.argv)


if __name__ == "__main__":
    main()
