"""ECC's draw-to-draw spread under the authors' Dirichlet start, on bench_ecc's MMLU-Pro inputs.

Usage::

    python benchmarks/bench_ecc_starts.py            # 5 further Dirichlet draws (seeds 1-5)
    python benchmarks/bench_ecc_starts.py --draws 8

The inputs are those of ``bench_ecc.py --datasets mmlu_pro_official`` (all 12,032 questions, its
80/20 split and its comparisons, seed 0). ECC (K = 30, lambda = 3, T = 0.1, ridge = 1) is refitted
from ``init="dirichlet"`` with fit seeds 1, 2, ... (seed 0 is bench_ecc's own Dirichlet row), and
every fit is scored with bench_ecc's test protocol (``ecc_evaluate(seed=0)``: the same probes and
held-out comparisons). The spread of these gains is the draw-to-draw variation that one run of the
authors' code (one Dirichlet draw of its own) carries. Prints a table and writes
``benchmarks/results/ecc-dirichlet-starts.json``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd
from _results import write_results
from bench_ecc import PER_QUERY, SETTINGS, _data, _split

import evalkit as ek


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ECC gains over several Dirichlet starts")
    ap.add_argument("--draws", type=int, default=5)
    args = ap.parse_args(argv)
    seed = 0
    pairs, emb = _data("mmlu_pro_official", None, seed)
    models, train, test = _split(pairs, seed)
    fits: dict[str, ek.ECCFit] = {"global BT": ek.ecc_fit(train, emb, models=models, seed=seed,
                                                          **{**SETTINGS, "K": 1, "scaling": "sum"})}
    for s in range(seed, seed + args.draws + 1):
        fits[f"ECC (Dirichlet start, seed {s})"] = ek.ecc_fit(train, emb, models=models, seed=s, init="dirichlet",
                                                              **SETTINGS)
    ev = ek.ecc_evaluate(fits, test, emb, seed=seed)
    gains = ev.table.set_index(["method", "mode"])["gain"]
    rows: list[dict[str, Any]] = []
    for label, fit in fits.items():
        if label == "global BT":
            continue
        rows.append({"fitter": label, "fit_seed": int(label.rsplit(" ", 1)[1].rstrip(")")),
                     "n_iter": fit.n_iter, "converged": fit.converged,
                     "gain_emb": float(gains[(label, "emb")]), "gain_probe": float(gains[(label, "probe")]),
                     "gain_emb_probe": float(gains[(label, "emb+probe")])})
    df = pd.DataFrame(rows)
    print(df.round(3).to_string(index=False))
    print(df[["gain_emb", "gain_probe", "gain_emb_probe"]].agg(["mean", "std"]).round(3).to_string())
    write_results("ecc-dirichlet-starts", {"benchmark": "bench_ecc_starts", "seed": seed, "settings": SETTINGS,
                                           "per_query": PER_QUERY, "records": df.to_dict(orient="records")},
                  ["benchmarks/bench_ecc_starts.py", *(sys.argv[1:] if argv is None else argv)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
