"""Benchmark of evalkit.harmony [HARMONY]: predictive-similarity affinity + spectral partition at scale.

Usage::

    python benchmarks/bench_harmony.py            # 10,000 and 12,032 items, dense and kNN affinity
    python benchmarks/bench_harmony.py --quick    # 2,000 and 3,000 items (a random subset), a minute

For each item set and affinity, ``partition_spectral`` builds the affinity, takes the leading
eigenvectors of the normalised affinity and runs k-means++ for every ``k`` in 2..20, keeping the
``k`` with the best silhouette. Measured: wall-clock and CPU seconds (on a loaded machine the CPU
time of a single-threaded run is the better guide to the wall time on a quiet one), peak traced memory (tracemalloc:
numpy's allocations, which dominate), the ``k`` chosen, and, in the same process, scikit-learn's
``SpectralClustering(affinity="precomputed")`` on the same affinity with that ``k``: its time
beside evalkit's time for the same fixed ``k`` (the ratio is the comparison that survives a
loaded machine), and the adjusted Rand index between the two partitions.

Data (real, see each SOURCE.md):

- 10,000 items: the emotion benchmark's option probabilities (10 models, prompt ``task``, ``icl1``):
  the shared partition, divergences averaged over the models.
- 12,032 items: MMLU-Pro official, 31 models, 0/1 outcomes: Bernoulli predictions of a 2PL fitted
  by ``irt_fit`` (``similarity_irt``; the fit is timed separately).

Goal (docs/methods/harmony.md): at most 30 s and 2 GB for 12,032 items on 2 cores.
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
from typing import Any

import numpy as np
import pandas as pd

import evalkit as ek


def emotion_probs() -> np.ndarray:
    df = ek.dataset_load("uncertainty_emotion").sort_values(["model", "item"])
    n_models = df["model"].nunique()
    return df[[f"p_{k}" for k in "ABCDEF"]].to_numpy().reshape(n_models, -1, 6)


def mmlu_probs() -> tuple[np.ndarray, float]:
    m = ek.dataset_matrix("mmlu_pro_official")
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        p = ek.similarity_irt(m.Y)
    return ek.similarity_bernoulli(p), time.perf_counter() - t


def one(P: np.ndarray, affinity: str, label: str, k_max: int, seed: int) -> dict[str, Any]:
    from sklearn.cluster import SpectralClustering

    n = P.shape[1]
    tracemalloc.start()
    t, cpu = time.perf_counter(), time.process_time()
    part = ek.partition_spectral(P, tau="median", k_range=range(2, k_max + 1), affinity=affinity,  # type: ignore[arg-type]
                                 smooth=1e-6, seed=seed)
    seconds, cpu_seconds = time.perf_counter() - t, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    t = time.perf_counter()
    fixed = ek.partition_spectral(P, tau=part.tau, k=part.k, affinity=affinity, smooth=1e-6, seed=seed)  # type: ignore[arg-type]
    seconds_fixed = time.perf_counter() - t
    # scikit-learn on the same affinity (built outside its timer, as for evalkit's fixed-k run it is inside)
    t = time.perf_counter()
    S = ek.similarity_matrix(P, part.tau, smooth=1e-6) if affinity == "dense" else ek.similarity_knn(
        P, part.tau, smooth=1e-6)
    seconds_affinity = time.perf_counter() - t
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = SpectralClustering(part.k, affinity="precomputed", random_state=seed, n_init=10).fit_predict(S)
    seconds_sklearn = time.perf_counter() - t + seconds_affinity
    del S
    return {
        "data": label,
        "n_items": n,
        "affinity": affinity,
        "seconds": round(seconds, 2),
        "cpu_seconds": round(cpu_seconds, 2),
        "peak_mb": round(peak / 2**20, 1),
        "k_chosen": part.k,
        "silhouette": round(float(part.silhouette.max()), 3),
        "seconds_fixed_k": round(seconds_fixed, 2),
        "seconds_sklearn_fixed_k": round(seconds_sklearn, 2),
        "ratio_sklearn_over_evalkit": round(seconds_sklearn / seconds_fixed, 2),
        "ari_vs_sklearn": round(ek.partition_ari(fixed, ref), 3),
        "ari_search_vs_fixed": round(ek.partition_ari(part, fixed), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 and 3,000 items instead of 10,000 and 12,032")
    parser.add_argument("--k-max", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--affinity", choices=["both", "knn", "dense"], default="both")
    args = parser.parse_args()
    load_before = os.getloadavg()
    emo = emotion_probs()
    mmlu, fit_seconds = mmlu_probs()
    if args.quick:
        rng = np.random.default_rng(args.seed)
        emo = emo[:, np.sort(rng.choice(emo.shape[1], 2000, replace=False))]
        mmlu = mmlu[:, np.sort(rng.choice(mmlu.shape[1], 3000, replace=False))]
    kinds = ["knn", "dense"] if args.affinity == "both" else [args.affinity]
    rows = []
    for P, label in ((emo, "emotion option probabilities (10 models)"), (mmlu, "MMLU-Pro 2PL Bernoulli (31 models)")):
        for kind in kinds:
            row = one(P, kind, label, args.k_max, args.seed)
            rows.append(row)
            print(json.dumps(row), flush=True)
    load_after = os.getloadavg()
    table = pd.DataFrame(rows)
    print()
    print(table.drop(columns=["data"]).to_string(index=False))
    print(f"\n2PL fit of MMLU-Pro (31 x 12,032) for the Bernoulli predictions: {fit_seconds:.1f} s (not in 'seconds')")
    print(f"load average before/after: {load_before[0]:.1f} / {load_after[0]:.1f} on {os.cpu_count()} cores "
          "(other jobs were running: absolute times are inflated; compare the ratios)")
    goal = [r for r in rows if r["n_items"] == 12032]
    result = {
        "benchmark": "bench_harmony",
        "quick": args.quick,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": [round(load_before[0], 1), round(load_after[0], 1)],
                    "omp_num_threads": os.environ.get("OMP_NUM_THREADS")},
        "goal": {"n_items": 12032, "seconds": 30, "peak_mb": 2048,
                 "met": {r["affinity"]: bool(r["seconds"] <= 30 and r["peak_mb"] <= 2048) for r in goal}},
        "irt_fit_seconds": round(fit_seconds, 1),
        "runs": [{k: r[k] for k in ("n_items", "affinity", "seconds", "cpu_seconds", "peak_mb", "ari_vs_sklearn",
                                    "k_chosen", "seconds_fixed_k", "seconds_sklearn_fixed_k",
                                    "ratio_sklearn_over_evalkit")}
                 for r in rows],
    }
    print(json.dumps(result))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _results import write_results

    write_results("harmony" + ("-quick" if args.quick else ""), {**result, "rows": rows}, sys.argv)


if __name__ == "__main__":
    main()
