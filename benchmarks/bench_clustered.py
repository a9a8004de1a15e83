"""Benchmark of evalkit.clustered: cluster labels, the CR2 sandwich with Satterthwaite df, the coverage study.

Usage::

    python benchmarks/bench_clustered.py            # 10^7 rows; coverage study 200 and 2,000 reps
    python benchmarks/bench_clustered.py --quick    # 10^6 rows; a few seconds

(a) Cluster labels: encoding ``n`` labels into codes (``evalkit._checks.as_labels``) for integer
labels and for object-string labels (``"c0000"``...), against the previous implementation
(``numpy.unique`` on the labels, kept below as the baseline) in the same process. Then
``mean_estimate(y, clusters, se="CR1")`` and ``se="CR2"`` (with Satterthwaite df) on the same
rows. The string/int ratio was about 10 with the earlier encoding (sorting every label).

(b) ``coverage_study`` (CR1 with t(M-1) against CR2 with Satterthwaite df, and i.i.d.) on the
three cluster-size designs, 20 clusters of 20 items on average: one widget redraw is one design at
200 replications (goal: at most ~2 s on 2 cores); the notebook study is the three designs at
2,000 replications.

Times are the best of ``--repeat`` runs; the machine may be shared, so compare ratios, not seconds.
Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import warnings
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import best_time, write_results  # noqa: E402

from evalkit import EvalkitWarning  # noqa: E402
from evalkit._checks import as_labels  # noqa: E402
from evalkit.clustered import coverage_study, mean_estimate  # noqa: E402


def _labels_before(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The earlier encoding, kept as the baseline: numpy.unique sorts all n labels (slow for Python strings)."""
    uniques, codes = np.unique(labels, return_inverse=True)
    return codes, uniques


def bench_labels(n: int, n_clusters: int, repeat: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(0)
    codes = rng.integers(0, n_clusters, n)
    y = (rng.random(n) < 0.6).astype(float)
    as_int = codes.astype(np.int64)
    names = np.array([f"c{k:04d}" for k in range(n_clusters)], dtype=object)
    as_str = names[codes]
    rows = []
    for what, labels in (("int", as_int), ("object str", as_str)):
        t_before, (c0, u0) = best_time(lambda lab=labels: _labels_before(lab), repeat)
        t_after, (c1, u1) = best_time(lambda lab=labels: as_labels(lab, n), repeat)
        assert np.array_equal(c0, c1) and list(u0) == list(u1)
        t_cr1, _ = best_time(lambda lab=labels: mean_estimate(y, lab, se="CR1"), repeat)
        t_cr2, _ = best_time(lambda lab=labels: mean_estimate(y, lab, se="CR2"), repeat)
        rows.append({"task": f"labels {what}", "n": n, "before_s": t_before, "after_s": t_after,
                     "mean_estimate_CR1_s": t_cr1, "mean_estimate_CR2_s": t_cr2})
    return rows


def bench_coverage(repeat: int, quick: bool) -> list[dict[str, Any]]:
    rows = []
    for design in ("balanced", "skewed", "dominant"):
        t, _ = best_time(lambda d=design: coverage_study(designs=d, n_reps=200, seed=1), repeat)
        rows.append({"task": f"coverage_study {design}, 200 reps (one widget redraw)", "seconds": t})
    n_reps = 500 if quick else 2000
    t, res = best_time(lambda: coverage_study(n_reps=n_reps, seed=2026), 1)
    rows.append({"task": f"coverage_study 3 designs x {n_reps} reps (the study)", "seconds": t})
    print(res[["design", "estimator", "coverage", "coverage_mcse", "df_mean", "n_clusters_effective"]]
          .round(4).to_string(index=False))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10^6 rows and 500 replications")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = 10**6 if args.quick else 10**7
    warnings.simplefilter("ignore", EvalkitWarning)
    lab = bench_labels(n, 200, args.repeat)
    print(f"{'labels':<12} {'n':>10} {'before s':>9} {'after s':>9} {'CR1 s':>8} {'CR2 s':>8}")
    for r in lab:
        print(f"{r['task'][7:]:<12} {r['n']:>10} {r['before_s']:>9.3f} {r['after_s']:>9.3f} "
              f"{r['mean_estimate_CR1_s']:>8.3f} {r['mean_estimate_CR2_s']:>8.3f}")
    ratio_before = lab[1]["before_s"] / lab[0]["before_s"]
    ratio_after = lab[1]["after_s"] / lab[0]["after_s"]
    print(f"string/int encoding time: before {ratio_before:.1f}x, after {ratio_after:.1f}x; "
          f"strings after/before {lab[1]['after_s'] / lab[1]['before_s']:.2f}")
    cov = bench_coverage(args.repeat, args.quick)
    for r in cov:
        print(f"{r['task']:<58} {r['seconds']:.3f} s")
    record = {
        "benchmark": "clustered", "quick": args.quick, "cores": os.cpu_count(), "python": platform.python_version(),
        "labels": lab, "labels_str_over_int_before": ratio_before, "labels_str_over_int_after": ratio_after,
        "coverage": cov,
    }
    print(json.dumps(record))

    write_results("clustered" + ("-quick" if args.quick else ""), record, sys.argv)


if __name__ == "__main__":
    main()
