"""Benchmark of ECC [ECC] and of evalkit's Bradley-Terry solver against choix.

Usage::

    python benchmarks/bench_ecc.py            # full: MMLU-Pro official (12,032 x 31) and AlpacaEval
    python benchmarks/bench_ecc.py --quick    # 3,000 MMLU-Pro queries, 400 AlpacaEval queries

Needs the real data (``EVALKIT_DATA``) and the embeddings in ``data/embeddings`` (on the search
path). For each dataset: 7 comparisons per training query (right beats wrong on MMLU-Pro; the
stronger preference against the common reference under the AlpacaEval 2 judge), an 80/20 split
of queries, K = 30, lambda = 3, T = 0.1, ridge = 1 (evalkit's defaults, the paper's settings).

Rows:

- ``ECC``, ``Emb-only``, ``Comp-only`` and ``global BT`` fitted on the training split: seconds,
  iterations (``converged`` says whether the stopping rule was met), and the
  held-out ranking gains (%) vs global BT per inference mode (one random probe per test query,
  at most 50 held-out comparisons per test query);
- ``ECC (all queries)``: the goal setting, ECC on every query of the dataset (12,032 for
  MMLU-Pro), with its peak Python-visible memory (tracemalloc, a separate run);
- BT against choix on the same training comparisons: evalkit's Newton (``bt_fit``) vs choix's
  ``ilsr_pairwise`` and ``mm_pairwise`` (maximum likelihood) and ``opt_pairwise`` (Newton-CG with
  ``alpha = ridge / 2``, the same penalty as ``bt_fit(ridge=...)``), each with the largest
  absolute difference from evalkit's abilities.

Timings on a shared machine are inflated by other processes: ``seconds`` is wall-clock time,
``cpu_seconds`` this process's CPU time (closer to what a quiet machine would show, as evalkit runs
single-threaded here); the ratios (against global BT, and choix over evalkit) come from the same
process and are the numbers to compare. Prints a table
and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import pandas as pd
from _results import write_results  # benchmarks/_results.py (the script's folder is on sys.path)

import evalkit as ek

SETTINGS = {"K": 30, "lam": 3.0, "T": 0.1, "ridge": 1.0}
PER_QUERY = 7
TEST_PER_QUERY = 50
RIDGE_BT = 0.02
"""Ridge of the penalised BT comparison (choix opt_pairwise alpha = 0.01)."""


CPU: dict[str, float] = {}
"""CPU seconds (this process) of the last call timed under each label."""


def _timed(f: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """Wall-clock seconds of one call; its process CPU seconds go to ``CPU["last"]``."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = f(*args, **kwargs)
    CPU["last"] = time.process_time() - c0
    return out, time.perf_counter() - t0


def _data(name: str, n_queries: int | None, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    if name == "alpaca_eval":
        pairs = ek.alpaca_pairs()
    else:
        pairs = ek.bt_pairs_from_matrix(ek.dataset_matrix(name))
    emb = ek.ecc_embeddings_load(name)
    if n_queries is not None:
        items = np.unique(pairs["item"])
        keep = np.random.default_rng(seed).choice(items, size=min(n_queries, items.size), replace=False)
        pairs = pairs[pairs["item"].isin(keep)]
    return pairs, emb


def _split(pairs: pd.DataFrame, seed: int) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame]:
    """The models, and the training and test comparisons: a fifth of the queries held out, seeded."""
    models = np.unique(np.r_[pairs["winner"].to_numpy(), pairs["loser"].to_numpy()])
    items = np.unique(pairs["item"])
    rng = np.random.default_rng(seed)
    test_items = rng.choice(items, size=items.size // 5, replace=False)
    is_test = pairs["item"].isin(test_items)
    train = ek.bt_pairs_sample(pairs[~is_test], PER_QUERY, seed=seed)
    test = ek.bt_pairs_sample(pairs[is_test], TEST_PER_QUERY, seed=seed + 1)
    return models, train, test


def bench_dataset(name: str, n_queries: int | None, seed: int, full_run: bool = True
                  ) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    pairs, emb = _data(name, n_queries, seed)
    models, train, test = _split(pairs, seed)

    rows: list[dict[str, Any]] = []
    fits: dict[str, ek.ECCFit] = {}
    secs: dict[str, float] = {}
    cpu: dict[str, float] = {}
    # global BT on unit weights (the authors' global ranker); ECC and its baselines on the authors'
    # objective (evalkit's default); "ECC (sum scaling)" is evalkit's earlier objective
    for label, kw in (("global BT", {"K": 1, "scaling": "sum"}), ("ECC", {}), ("Emb-only", {"signals": "emb"}),
                      ("Comp-only", {"signals": "comp"}), ("ECC (sum scaling)", {"scaling": "sum"}),
                      ("ECC (Dirichlet start)", {"init": "dirichlet"})):
        settings = {**SETTINGS, **kw}
        fits[label], secs[label] = _timed(ek.ecc_fit, train, emb, models=models, seed=seed, **settings)
        cpu[label] = CPU["last"]
    ev = ek.ecc_evaluate(fits, test, emb, seed=seed)
    gains = ev.table.set_index(["method", "mode"])["gain"]
    for label, fit in fits.items():
        rows.append({
            "dataset": name, "fitter": label, "n_queries": int(fit.items.size), "n_comparisons": len(train),
            "seconds": secs[label], "cpu_seconds": cpu[label],
            "seconds_over_global": secs[label] / secs["global BT"],
            "n_iter": fit.n_iter, "converged": fit.converged,
            "gain_emb": float(gains.get((label, "emb"), 0.0)),
            "gain_probe": float(gains.get((label, "probe"), 0.0)),
            "gain_emb_probe": float(gains.get((label, "emb+probe"), 0.0)),
            "peak_mb": float("nan"),
        })

    if not full_run:
        return rows, train
    # the goal setting: ECC on every query (7 comparisons each), timed; then peak memory
    full = ek.bt_pairs_sample(pairs, PER_QUERY, seed=seed)
    fit_all, sec_all = _timed(ek.ecc_fit, full, emb, models=models, seed=seed, **SETTINGS)
    cpu_all = CPU["last"]
    tracemalloc.start()
    tracemalloc.reset_peak()
    ek.ecc_fit(full, emb, models=models, seed=seed, **SETTINGS)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    rows.append({
        "dataset": name, "fitter": "ECC (all queries)", "n_queries": int(fit_all.items.size),
        "n_comparisons": len(full), "seconds": sec_all, "cpu_seconds": cpu_all,
        "seconds_over_global": sec_all / secs["global BT"],
        "n_iter": fit_all.n_iter, "converged": fit_all.converged, "gain_emb": float("nan"),
        "gain_probe": float("nan"), "gain_emb_probe": float("nan"), "peak_mb": peak,
    })
    return rows, train


def bench_bt(name: str, train: pd.DataFrame) -> list[dict[str, Any]]:
    import choix

    iw, il, models = ek.bt_encode(train["winner"], train["loser"])
    data = list(zip(iw.tolist(), il.tolist(), strict=True))
    M = models.size
    rows: list[dict[str, Any]] = []
    ml, t_ml = _timed(ek.bt_fit, train["winner"], train["loser"], models=models)
    pen, t_pen = _timed(ek.bt_fit, train["winner"], train["loser"], models=models, ridge=RIDGE_BT)
    rows.append({"dataset": name, "solver": "evalkit bt_fit (ML)", "seconds": t_ml, "max_abs_diff": 0.0,
                 "seconds_over_evalkit": 1.0})
    rows.append({"dataset": name, "solver": f"evalkit bt_fit (ridge {RIDGE_BT})", "seconds": t_pen,
                 "max_abs_diff": 0.0, "seconds_over_evalkit": 1.0})
    for solver, ref, f in (
        ("choix ilsr_pairwise (ML)", ml.theta,
         lambda: choix.ilsr_pairwise(M, data, alpha=0.0, tol=1e-10, max_iter=1000)),
        ("choix mm_pairwise (ML)", ml.theta, lambda: choix.mm_pairwise(M, data, tol=1e-10, max_iter=100_000)),
        (f"choix opt_pairwise (alpha {RIDGE_BT / 2})", pen.theta,
         lambda: choix.opt_pairwise(M, data, alpha=RIDGE_BT / 2, tol=1e-10)),
    ):
        base = t_ml if "ML" in solver else t_pen
        try:
            theta, t = _timed(f)
        except RuntimeError as exc:  # choix raises when it does not converge
            rows.append({"dataset": name, "solver": solver, "seconds": float("nan"), "max_abs_diff": float("nan"),
                         "seconds_over_evalkit": float("nan"), "note": str(exc)})
            continue
        theta = theta - theta.mean()
        rows.append({"dataset": name, "solver": solver, "seconds": t,
                     "max_abs_diff": float(np.max(np.abs(theta - ref))), "seconds_over_evalkit": t / base})
    return rows


def bench_planted(seed: int = 0) -> dict[str, Any]:
    """evalkit's default ECC against an independent reference of the authors' algorithm.

    The reference (``tests/ecc_reference.py``, written from the authors' ``clustering_ecc.py``) and
    ``ecc_fit`` run on the planted example of the tests (``ecc_simulate``: 2,400 queries, 8 models,
    4 capability clusters over 2 semantic topics; the first 2,000 queries) from the same Dirichlet
    start: the largest absolute differences of the profiles, responsibilities and centres, and both
    iteration counts.
    """
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "tests" / "ecc_reference.py"
    spec = importlib.util.spec_from_file_location("ecc_reference", path)
    assert spec is not None and spec.loader is not None
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    sim = ek.ecc_simulate(n_queries=2400, n_models=8, K=4, n_topics=2, per_query=7, seed=7)
    items = np.unique(sim.pairs["item"])
    train = sim.pairs[sim.pairs["item"].isin(items[:2000])]
    start = np.random.default_rng(seed).dirichlet(np.ones(4), size=np.unique(train["item"].astype(str)).size)
    t0 = time.perf_counter()
    fit = ek.ecc_fit(train, sim.embeddings, K=4, init=start)
    t_ek = time.perf_counter() - t0
    votes, emb = ref.inputs(train, fit.models, sim.embeddings)
    n_models = len(fit.models)
    t0 = time.perf_counter()
    out = ref.fit(votes, emb, {q: start[i] for i, q in enumerate(fit.items)}, n_models, lam=3.0, T=0.1)
    t_ref = time.perf_counter() - t0
    return {"n_queries": int(len(fit.items)), "n_models": n_models, "K": 4,
            "same_items": list(out["items"]) == list(fit.items),
            "n_iter_evalkit": int(fit.n_iter), "n_iter_reference": int(out["n_iter"]),
            "max_abs_diff_profiles": float(np.max(np.abs(out["theta"] - fit.theta))),
            "max_abs_diff_responsibilities": float(np.max(np.abs(out["resp"] - fit.resp))),
            "max_abs_diff_centres": float(np.max(np.abs(out["centroids"] - fit.centres))),
            "seconds_evalkit": t_ek, "seconds_reference": t_ref}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ECC and Bradley-Terry benchmark")
    ap.add_argument("--quick", action="store_true", help="subsets: 3,000 MMLU-Pro and 400 AlpacaEval queries")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--datasets", default="mmlu_pro_official,alpaca_eval")
    ap.add_argument("--no-full", action="store_true", help="skip the all-queries timing and memory run")
    ap.add_argument("--part", choices=("data", "planted"), default="data",
                    help="planted: evalkit's default against the reference of the authors' algorithm")
    args = ap.parse_args(argv)
    if args.part == "planted":
        res = bench_planted(args.seed)
        for k, v in res.items():
            print(f"{k}: {v}")
        write_results("ecc-planted", {"benchmark": "bench_ecc", "part": "planted", "seed": args.seed, **res},
                      ["benchmarks/bench_ecc.py", *(sys.argv[1:] if argv is None else argv)])
        return 0
    sizes = {n: (3000 if n == "mmlu_pro_official" else 400) if args.quick else None
             for n in args.datasets.split(",")}
    rows: list[dict[str, Any]] = []
    bt_rows: list[dict[str, Any]] = []
    for name, n in sizes.items():
        r, train = bench_dataset(name, n, args.seed, full_run=not args.no_full)
        rows += r
        bt_rows += bench_bt(name, train)
    df = pd.DataFrame(rows)
    bt = pd.DataFrame(bt_rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print("ECC and baselines (gains in % vs global BT; seconds under the machine's current load)")
        print(df.round(3).to_string(index=False))
        print("\nBradley-Terry: evalkit vs choix on the same training comparisons")
        print(bt.round(6).to_string(index=False))
    record = {
        "benchmark": "bench_ecc", "quick": args.quick, "seed": args.seed, "python": sys.version.split()[0],
        "machine": platform.machine(), "settings": SETTINGS, "per_query": PER_QUERY,
        "records": json.loads(df.to_json(orient="records")),
        "bt_vs_choix": json.loads(bt.to_json(orient="records")),
    }
    print(json.dumps(record))
    out = "ecc" + ("-quick" if args.quick else "") + ("" if args.datasets == "mmlu_pro_official,alpaca_eval"
                                                      else "-" + args.datasets.replace(",", "-"))
    write_results(out, record, ["benchmarks/bench_ecc.py", *(sys.argv[1:] if argv is None else argv)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
