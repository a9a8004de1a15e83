"""Why `make test` and `make all` pin one BLAS thread: the same fit with 1 and 2 OpenBLAS threads.

Usage::

    python benchmarks/bench_blas_threads.py            # notebook 06's factor-model CV (2,000 items)
    python benchmarks/bench_blas_threads.py --quick    # a smaller fit

`make test` runs two pytest workers on a 2-core machine, and each worker's notebook kernel is one
more process. With OpenBLAS's default (one thread per core) every process asks for both cores, and
OpenBLAS's threads busy-wait for each other. This script times the factor-model cross-validation
of notebook 06 in a fresh process with ``OPENBLAS_NUM_THREADS`` = 1 and 2, each time with a second
process doing the same fit alongside (as the other pytest worker would), and prints the times, their
ratio (measured in the same run) and the fits' objectives, which must agree to the printed digits.
Last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

FIT = """
import time, warnings
import evalkit as ek
warnings.filterwarnings("ignore")
data = ek.active_semisynthetic("mmlu_pro", n_hist={n_hist}, n_val=10, n_test=10, n_items={n_items}, seed=2026)
t0 = time.perf_counter()
fac = ek.active_factor_cv(data.H, ranks=(4, 8), seed=2026)
print(time.perf_counter() - t0, fac.rank, fac.objective)
"""


def _timed_pair(threads: int, code: str) -> tuple[float, int, float]:
    """Run the fit twice at once with ``threads`` BLAS threads each; return the first one's result."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), MPLBACKEND="Agg")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"the fit failed: {outs}")
    sec, rank, obj = outs[0].split()
    return float(sec), int(rank), float(obj)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smaller fit (300 items)")
    args = ap.parse_args()
    code = FIT.format(n_hist=150 if args.quick else 300, n_items=300 if args.quick else 2000)
    t0 = time.perf_counter()
    res = {t: _timed_pair(t, code) for t in (1, 2)}
    for t, (sec, rank, obj) in res.items():
        print(f"OPENBLAS_NUM_THREADS={t}: factor CV {sec:6.1f} s (rank {rank}, objective {obj:.6f}), "
              "with a second fit running")
    ratio = res[2][0] / res[1][0]
    print(f"2 threads / 1 thread: {ratio:.2f}x the time; cpus: {os.cpu_count()}")
    record = {"benchmark": "bench_blas_threads", "quick": args.quick, "cpus": os.cpu_count(),
              "seconds_1_thread": res[1][0], "seconds_2_threads": res[2][0], "ratio": ratio,
              "objective_1_thread": res[1][2], "objective_2_threads": res[2][2],
              "seconds_total": time.perf_counter() - t0}
    print(json.dumps(record))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _results import write_results

    write_results("blas_threads" + ("-quick" if args.quick else ""), record, sys.argv)


if __name__ == "__main__":
    main()
