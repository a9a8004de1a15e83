"""Benchmark of 2PL fitters at leaderboard scale (papers/002): cBMM vs L-BFGS-B vs PyPI peers.

Usage::

    python benchmarks/bench_irt.py            # full: up to 2,000 x 20,000 and 2,212 x 12,032
    python benchmarks/bench_irt.py --quick    # small sizes, a minute or so

Matrices: synthetic 2PL (10% MCAR missing), a semi-synthetic Open LLM Leaderboard v2 MMLU-Pro
matrix (draws from a fitted factor model of the real leaderboard, not its responses) and the
real MMLU-Pro official matrix (31 models). Fitters: evalkit cBMM (``irt_fit``), evalkit
L-BFGS-B (``irt_fit_lbfgs``, same objective, start and float32 kernel) and, when installed,
``mirt`` (marginal ML by EM, 2PL, NaN allowed) and ``girth`` (joint ML).

Fairness: L-BFGS-B is stopped as soon as it reaches cBMM's final objective, and its time is the
time to get there; if it converges first at a worse objective, its time is that of its own
convergence and the row says so (``stop`` column), and cBMM's time to L-BFGS-B's objective is
reported too. The peers optimise a different objective (marginal likelihood); their
``objective`` column is evalkit's joint objective evaluated at their estimates (EAP abilities).
Peak memory is the extra Python-visible allocation during the fit (tracemalloc), relative to
the size of the data as a float32 matrix; memory allocated inside compiled extensions (mirt's
Rust core, L-BFGS-B's Fortran work arrays) is not seen. Ratios are against cBMM in the same run.
Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore", category=RuntimeWarning, module="girth")

from evalkit import EvalkitWarning
from evalkit.irt import irt_fit, irt_fit_lbfgs, irt_objective
from evalkit.simulate import simulate_2pl

PEER_MAX_CELLS = {"mirt": 1.0e7, "girth_jml": 1.0e5}
"""Largest matrices (models x items) the peers are run on; beyond, the row says "skipped"
(measured on 2 shared cores: mirt 21 s at 500 x 2,000, girth JML 47 s at 200 x 1,000)."""


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    return float(np.corrcoef(x[ok], y[ok])[0, 1])


def _matrices(quick: bool, seed: int) -> list[tuple[str, Callable[[], tuple[np.ndarray, dict | None]]]]:
    def synth(n: int, m: int) -> Callable[[], tuple[np.ndarray, dict]]:
        return lambda: simulate_2pl(n, m, rng=seed, missing=0.1, dtype=np.float32)

    def oll(n: int | None, m: int | None) -> Callable[[], tuple[np.ndarray, None]]:
        def load() -> tuple[np.ndarray, None]:
            from evalkit.datasets import oll_matrix_draw

            return oll_matrix_draw("mmlu_pro", n_models=n, n_items=m, seed=seed).Y, None

        return load

    def official(m: int | None) -> Callable[[], tuple[np.ndarray, None]]:
        def load() -> tuple[np.ndarray, None]:
            from evalkit.datasets import dataset_matrix

            Y = dataset_matrix("mmlu_pro_official").Y
            return (Y if m is None else Y[:, :m]), None

        return load

    if quick:
        return [
            ("synthetic 200x1,000", synth(200, 1000)),
            ("synthetic 500x2,000", synth(500, 2000)),
            ("OLL MMLU-Pro draw 300x2,000", oll(300, 2000)),
            ("MMLU-Pro official 31x2,000", official(2000)),
        ]
    return [
        ("synthetic 500x2,000", synth(500, 2000)),
        ("synthetic 1,000x10,000", synth(1000, 10000)),
        ("synthetic 2,000x20,000", synth(2000, 20000)),
        ("OLL MMLU-Pro draw 2,212x12,032", oll(None, None)),
        ("MMLU-Pro official 31x12,032", official(None)),
    ]


def _measure(f: Callable[[], Any]) -> tuple[Any, float, float]:
    """Run ``f`` and return its result, wall time and peak traced allocation in bytes."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    try:
        out = f()
    finally:
        wall = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out, wall, float(peak)


def _recovery(truth: dict | None, theta: np.ndarray, a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    if truth is None:
        return {"r_theta": np.nan, "r_a": np.nan, "r_b": np.nan}
    return {"r_theta": _corr(theta, truth["theta"]), "r_a": _corr(a, truth["a"]), "r_b": _corr(b, truth["b"])}


def _run_mirt(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    import mirt

    res = mirt.fit_mirt(np.asarray(Y, float), model="2PL", compute_standard_errors=False)
    a = np.asarray(res.model.discrimination, float).ravel()
    d = np.asarray(res.model.difficulty, float).ravel()
    theta = np.asarray(mirt.fscores(res, np.asarray(Y, float)).theta, float).ravel()
    return theta, a, -a * d, int(res.n_iterations), bool(res.converged)


def _run_girth(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, bool]:
    import girth

    D = np.where(np.isnan(Y), girth.INVALID_RESPONSE, Y).astype(int).T
    res = girth.twopl_jml(girth.tag_missing_data(D, [0, 1]))
    a = np.asarray(res["Discrimination"], float)
    d = np.asarray(res["Difficulty"], float)
    # girth's JML does not return abilities: score them by one Newton-free ML pass
    theta = np.asarray(girth.ability_mle(girth.tag_missing_data(D, [0, 1]), d, a), float)
    return theta, a, -a * d, -1, True


def _peer_row(name: str, runner: Callable, Y: np.ndarray, truth: dict | None) -> dict[str, Any]:
    row: dict[str, Any] = {"fitter": name}
    if Y.size > PEER_MAX_CELLS[name]:
        row["stop"] = f"skipped (> {PEER_MAX_CELLS[name]:.0e} cells)"
        return row
    try:
        (theta, a, b, n_iter, conv), wall, peak = _measure(lambda: runner(Y))
    except ImportError:
        row["stop"] = "not installed (pip install mirt girth)"
        return row
    except Exception as exc:  # a peer crashing is a result, not a benchmark failure
        row["stop"] = f"failed: {type(exc).__name__}: {str(exc)[:60]}"
        return row
    ok = np.isfinite(theta).all() and np.isfinite(a).all() and np.isfinite(b).all()
    obj = irt_objective(Y, np.where(np.isfinite(theta), theta, np.nan), a, b) if ok else np.nan
    row.update(time_s=wall, n_iter=n_iter, objective=obj, peak_mem_x=peak,
               stop="converged" if conv else "not converged", **_recovery(truth, theta, a, b))
    if not ok:
        row["stop"] += "; non-finite estimates"
    return row


def bench(quick: bool, seed: int, peers: bool) -> pd.DataFrame:
    rows = []
    for label, load in _matrices(quick, seed):
        Y, truth = load()
        data32 = Y.shape[0] * Y.shape[1] * 4.0
        print(f"# {label}: {Y.shape}, missing {np.isnan(Y).mean():.3f}", flush=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            mm, t_mm, pk_mm = _measure(lambda: irt_fit(Y))
            lb, t_lb, pk_lb = _measure(lambda: irt_fit_lbfgs(Y, target=mm.objective))
        reached = lb.extra["stopped_at_target"]
        base = {"matrix": label, "n_models": Y.shape[0], "n_items": Y.shape[1]}
        rows.append({**base, "fitter": "cbmm", "time_s": t_mm, "n_iter": mm.n_iter,
                     "objective": mm.objective, "peak_mem_x": pk_mm / data32,
                     "stop": "converged" if mm.converged else "max_iter",
                     "cbmm_time_to_lbfgs_obj_s": np.nan if reached else mm.time_to_objective(lb.objective),
                     **_recovery(truth, mm.theta, mm.a, mm.b)})
        rows.append({**base, "fitter": "lbfgs", "time_s": t_lb, "n_iter": lb.n_iter,
                     "objective": lb.objective, "peak_mem_x": pk_lb / data32,
                     "stop": "reached cBMM objective" if reached else
                     ("own convergence (worse objective)" if lb.converged else "max_iter"),
                     **_recovery(truth, lb.theta, lb.a, lb.b)})
        if peers:
            for name, runner in (("mirt", _run_mirt), ("girth_jml", _run_girth)):
                r = _peer_row(name, runner, Y, truth)
                if "peak_mem_x" in r:
                    r["peak_mem_x"] /= data32
                rows.append({**base, **r})
        del Y
    df = pd.DataFrame(rows)
    t_cbmm = df[df.fitter == "cbmm"].set_index("matrix")["time_s"]
    df["time_vs_cbmm"] = df["time_s"] / df["matrix"].map(t_cbmm)
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (about a minute)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--no-peers", action="store_true", help="skip mirt and girth")
    args = ap.parse_args(argv)
    df = bench(args.quick, args.seed, not args.no_peers)
    cols = ["matrix", "fitter", "time_s", "time_vs_cbmm", "n_iter", "objective", "peak_mem_x",
            "r_theta", "r_a", "r_b", "stop", "cbmm_time_to_lbfgs_obj_s"]
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 40):
        print(df[[c for c in cols if c in df.columns]].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    record = {
        "benchmark": "bench_irt", "quick": args.quick, "seed": args.seed,
        "python": platform.python_version(), "machine": platform.machine(),
        "rows": json.loads(df.to_json(orient="records")),
    }
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
