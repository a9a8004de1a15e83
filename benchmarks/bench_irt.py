"""Benchmark of 2PL fitters at leaderboard scale ([CBMM]): cBMM vs L-BFGS-B vs PyPI peers.

Usage::

    python benchmarks/bench_irt.py            # full: up to 2,000 x 20,000 and 2,212 x 12,032
    python benchmarks/bench_irt.py --quick    # small sizes, a minute or so

Matrices: synthetic 2PL (10% MCAR missing), a semi-synthetic Open LLM Leaderboard v2 MMLU-Pro
matrix (draws from a fitted factor model of the real leaderboard, not its responses) and the
real MMLU-Pro official matrix (31 models). Fitters: evalkit cBMM (``irt_fit``), evalkit
L-BFGS-B (``irt_fit_lbfgs``, same objective, start and float32 kernel) and, when installed,
``mirt`` (marginal ML by EM, 2PL, NaN allowed) and ``girth`` (joint ML).

Fairness: L-BFGS-B (ftol 1e-10) is stopped as soon as it reaches accelerated cBMM's final
objective; the common target of a matrix is the worse of the evalkit fitters' final objectives
(all reached it), and ``lbfgs_time_to_common_over_this`` is L-BFGS-B's time to that target
divided by the row's fitter's time to it (> 1: the row's fitter is faster), both read from the
fitters' own timed histories in the same run. On the real 31-model matrix the evalkit fitters
also run with a small ridge (``--ridge``), where plain ML is quasi-separated.
The peers optimise a different objective (marginal likelihood); their
``objective`` column is evalkit's joint objective evaluated at their estimates (EAP abilities).
``score_se`` is the convergence statistic (largest Newton step of any parameter in its own
standard errors; the default fits stop below 0.01); ``cbmm_gate_only`` is cBMM with the old
stopping rule (relative objective change only, ``gtol=None``), so ``time_vs_cbmm`` of that row
is the price of honest convergence, measured in the same run. ``cbmm_before`` is ``irt_fit`` of
evalkit at commit ``50e267b`` (loaded from the git history, same strict rule): the Newton polish
only after the objective flattened at 1e-7, a float32 log per entry in the loss pass;
``time_vs_cbmm`` of that row is today's speed-up in the same run. ``--only TEXT`` runs the
matrices whose label contains TEXT and writes ``irt-<TEXT>.json``.
Times are of untraced runs; peak memory is the extra Python-visible allocation during a second,
traced run of the same fit (tracemalloc), relative to the size of the data as a float32 matrix;
memory allocated inside compiled extensions (mirt's Rust core, L-BFGS-B's Fortran work arrays)
is not seen. Ratios are against cBMM in the same run.
Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from evalkit import EvalkitWarning
from evalkit.irt import irt_fit, irt_fit_lbfgs, irt_objective
from evalkit.simulate import simulate_2pl

warnings.filterwarnings("ignore", category=RuntimeWarning, module="girth")

PEER_MAX_CELLS = {"mirt": 4.1e7, "girth_jml": 1.0e5}
"""Largest matrices (models x items) the peers are run on; beyond, the row says "skipped"
(measured on 2 shared cores: mirt between 1.5 s and 21 s at 500 x 2,000 across runs, girth JML 47 s at
200 x 1,000)."""

REPEAT = [3]
"""Untraced runs per evalkit fitter (``--repeat``); the row reports the median run."""

PEER_MEMORY_MAX_CELLS = 1.0e7
"""Largest matrices on which a peer is run a second time, traced, for its peak memory (beyond,
``peak_mem_x`` is NaN: the second run would double the peer's minutes for a figure that misses
the memory allocated inside its compiled core anyway)."""

RIDGE_REAL = 0.1
"""Ridge of the extra cBMM / L-BFGS-B rows on the real MMLU-Pro official matrix (31 models, where
plain ML is quasi-separated on hundreds of items)."""


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


BEFORE_COMMIT = "50e267b"
"""evalkit before the early Newton polish, the products-of-u loss pass and the chunked checks."""

_BEFORE: list[Any] = []


def _before() -> Any:
    """``evalkit/irt.py`` at :data:`BEFORE_COMMIT`, imported as ``evalkit._irt_before`` (None without git)."""
    if not _BEFORE:
        import importlib.util
        import subprocess

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        try:
            src = subprocess.run(["git", "show", f"{BEFORE_COMMIT}:evalkit/irt.py"], cwd=root, capture_output=True,
                                 text=True, check=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            _BEFORE.append(None)
            return None
        spec = importlib.util.spec_from_loader("evalkit._irt_before", loader=None)
        assert spec is not None
        mod = importlib.util.module_from_spec(spec)
        mod.__package__ = "evalkit"
        sys.modules["evalkit._irt_before"] = mod
        exec(compile(src, f"{BEFORE_COMMIT}:evalkit/irt.py", "exec"), mod.__dict__)  # noqa: S102 - own history
        _BEFORE.append(mod)
    return _BEFORE[0]


def _measure(f: Callable[[], Any], memory: bool = True, repeat: int | None = None) -> tuple[Any, float, float]:
    """Run ``f`` and return its result, wall time and peak traced allocation in bytes.

    The timed run is not traced: tracing every allocation slows numpy-heavy code (measured on
    cBMM at 2,000 x 20,000: 7.2 s traced against 5.0-5.1 s untraced in the same process) and
    not code that allocates inside a compiled extension, so timing under tracemalloc would
    handicap the evalkit fitters against the peers. The peak is measured by a second, traced
    run (``memory=False``: not measured, NaN). The result and the fit's own timed history come
    from the untraced run: with ``--repeat k`` (default 3, evalkit fitters; peers run once) the median of
    k untraced runs, so that a burst of other work on a shared machine moves one run, not the row.
    """
    runs = []
    for _ in range(max(1, REPEAT[0] if repeat is None else repeat)):
        t0 = time.perf_counter()
        res = f()
        runs.append((time.perf_counter() - t0, res))
    runs.sort(key=lambda r: r[0])
    wall, out = runs[(len(runs) - 1) // 2]  # the median run (the lower middle one of an even count)
    if not memory:
        return out, wall, float("nan")
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        f()
    finally:
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
        (theta, a, b, n_iter, conv), wall, peak = _measure(lambda: runner(Y), repeat=1,
                                                           memory=Y.size <= PEER_MEMORY_MAX_CELLS)
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


def _evalkit_rows(label: str, Y: np.ndarray, truth: dict | None, ridge: float) -> list[dict[str, Any]]:
    """cBMM (accelerated and plain) and L-BFGS-B on the same objective, timed to a common target.

    L-BFGS-B runs with ``target`` = accelerated cBMM's final objective and a tight ``ftol``
    (1e-10) so that it does not stop on its own first; the common target is the worse of the
    final objectives (every fitter reached it), and each fitter's time to it comes from its own
    timed history.
    """
    data32 = Y.shape[0] * Y.shape[1] * 4.0
    tag = "" if ridge == 0 else f" ridge={ridge:g}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        fits = {}
        fits["cbmm"] = _measure(lambda: irt_fit(Y, ridge=ridge))
        fits["cbmm_plain"] = _measure(lambda: irt_fit(Y, ridge=ridge, accelerate=False))
        # the stopping rule before evalkit 0.2 (relative objective change only): the cost of
        # converging on the score criterion is time_s of "cbmm" over this row's
        fits["cbmm_gate_only"] = _measure(lambda: irt_fit(Y, ridge=ridge, gtol=None))
        before = _before()
        if before is not None:
            # cBMM as it was before the early Newton polish and the cheaper loss pass, same rule
            fits["cbmm_before"] = _measure(lambda: before.irt_fit(Y, ridge=ridge))
        target = fits["cbmm"][0].objective
        # 3,000 iterations: on quasi-separated ML (the real 31-model rows) L-BFGS-B may never reach
        # cBMM's objective, and the row then says so ("max_iter") instead of running for many minutes
        fits["lbfgs"] = _measure(lambda: irt_fit_lbfgs(Y, ridge=ridge, target=target, tol=1e-10, max_iter=3_000))
    common = max(f.objective for f, _, _ in fits.values())
    t_common = {k: f.time_to_objective(common) for k, (f, _, _) in fits.items()}
    rows = []
    for key, (f, wall, peak) in fits.items():
        if key == "lbfgs":
            stop = "reached cBMM objective" if f.extra["stopped_at_target"] else (
                "own convergence (worse objective)" if f.converged else "max_iter")
            passes = f.extra["n_fev"]
        else:
            stop = "converged" if f.converged else ("stalled (no finite optimum)" if f.extra["stalled"] else "max_iter")
            passes = f.extra["n_passes"]
        rows.append({
            "matrix": label, "n_models": Y.shape[0], "n_items": Y.shape[1], "fitter": key + tag,
            "time_s": wall, "n_iter": f.n_iter, "n_passes": passes, "objective": f.objective,
            "peak_mem_x": peak / data32, "stop": stop, "score_se": f.extra["score_se"], "common_objective": common,
            "time_to_common_s": t_common[key],
            "lbfgs_time_to_common_over_this": t_common["lbfgs"] / t_common[key] if key != "lbfgs" else np.nan,
            **_recovery(truth, f.theta, f.a, f.b),
        })
    return rows


def bench(quick: bool, seed: int, peers: bool, ridge: float = RIDGE_REAL, only: str | None = None) -> pd.DataFrame:
    rows = []
    for label, load in _matrices(quick, seed):
        if only is not None and only not in label:
            continue
        Y, truth = load()
        data32 = Y.shape[0] * Y.shape[1] * 4.0
        print(f"# {label}: {Y.shape}, missing {np.isnan(Y).mean():.3f}", flush=True)
        rows += _evalkit_rows(label, Y, truth, 0.0)
        if truth is None and Y.shape[0] < 100 and ridge > 0:  # the few-model real matrix
            rows += _evalkit_rows(label, Y, truth, ridge)
        base = {"matrix": label, "n_models": Y.shape[0], "n_items": Y.shape[1]}
        if peers:
            for name, runner in (("mirt", _run_mirt), ("girth_jml", _run_girth)):
                r = _peer_row(name, runner, Y, truth)
                if "peak_mem_x" in r:
                    r["peak_mem_x"] /= data32
                rows.append({**base, **r})
        for r in rows:
            if r["matrix"] == label:
                print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                       for k, v in r.items() if k not in ("matrix", "n_models", "n_items")),
                      flush=True)
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
    ap.add_argument("--repeat", type=int, default=3, help="untraced runs per evalkit fitter (median reported)")
    ap.add_argument("--ridge", type=float, default=RIDGE_REAL,
                    help="ridge for the extra rows on the real few-model matrix (0: none)")
    ap.add_argument("--only", default=None,
                    help="run only the matrices whose label contains this text (e.g. '2,000x20,000')")
    args = ap.parse_args(argv)
    REPEAT[0] = args.repeat
    df = bench(args.quick, args.seed, not args.no_peers, args.ridge, args.only)
    cols = ["matrix", "fitter", "time_s", "time_vs_cbmm", "n_iter", "n_passes", "objective", "peak_mem_x",
            "score_se", "r_theta", "r_a", "r_b", "lbfgs_time_to_common_over_this", "stop"]
    with pd.option_context("display.width", 250, "display.max_columns", 20, "display.max_colwidth", 40):
        print(df[[c for c in cols if c in df.columns]].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    record = {
        "benchmark": "bench_irt", "quick": args.quick, "seed": args.seed,
        "python": platform.python_version(), "machine": platform.machine(),
        "rows": json.loads(df.to_json(orient="records")),
    }
    print(json.dumps(record))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _results import write_results

    name = "irt" + ("-quick" if args.quick else "")
    if args.only is not None:
        name += "-" + "".join(ch for ch in args.only if ch.isalnum())
    write_results(name, record,
                  sys.argv if argv is None else ["bench_irt.py", *argv])
    return 0


if __name__ == "__main__":
    sys.exit(main())
