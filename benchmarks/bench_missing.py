"""Benchmark of evalkit.missing ([MISSING]): random-intercept propensity fit and the simulation study.

Usage::

    python benchmarks/bench_missing.py            # full: MMLU-Pro fit + 16 scenarios x 1,000 reps
    python benchmarks/bench_missing.py --quick    # 50 replications per scenario, a few seconds

(a) Random-intercept logistic propensity ``P(answer parsed)`` for one MMLU-Pro official model
(12,032 items, 91 source clusters; features: the item's accuracy among the other models and the
log question length). evalkit's Laplace fit (and AGHQ) against statsmodels' closest estimators
run in the same process: ``BinomialBayesMixedGLM.fit_vb`` (variational Bayes, the only
random-intercept logistic model in statsmodels; not maximum likelihood) and a ``Logit`` with 91
cluster dummies (fixed effects, the ML alternative). Times are the best of ``--repeat`` runs;
ratios are statsmodels time / evalkit Laplace time.

(b) The full simulation study of docs/methods/missing-responses.md (``missing_study``: 4 mechanisms x 2 ICCs x
2 cluster counts, 1,000 replications each, 1,000 items), run over 2 worker processes; goal <= 10
minutes on 2 cores.

(c) The cluster bootstrap that refits the random-intercept propensity in every resample (the
reference interval that includes the weights' estimation error): MAR and MNAR-through-cluster, ICC
0.2, 20 clusters, 60 replications x 199 resamples (20 x 50 with ``--quick``).

(d) One redraw of the widget of notebook 03 (``missing_explore`` with 30 replications), as a ratio
to one Laplace fit of (a) in the same process (the machine may be shared); goal about 2 s on 2 cores.

Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _results import best_time, write_results  # noqa: E402

from evalkit import EvalkitWarning, missing_features, missing_study, propensity_fit  # noqa: E402
from evalkit.montecarlo import mc_summarise  # noqa: E402

MODEL = "Qwen1.5-7B-Chat_5shots"
"""The MMLU-Pro model with the most parse failures (23%)."""


def bench_fit(repeat: int) -> list[dict[str, Any]]:
    from evalkit.datasets import dataset_items, dataset_load

    df = dataset_load("mmlu_pro_official", cluster="src")
    lengths = dataset_items("mmlu_pro_official").set_index("item")["question_chars"]
    feats = missing_features(df, model=MODEL, lengths=lengths)
    d = df[df["model"] == MODEL].set_index("item").join(feats)
    R = (d["status"] == "ok").to_numpy(dtype=float)
    X = d[["acc_others", "log_length"]]
    cl = d["cluster"].to_numpy()
    rows: list[dict[str, Any]] = []

    t_lap, fit = best_time(lambda: propensity_fit(R, X, cl, kind="random"), repeat)
    rows.append({"fitter": "evalkit Laplace (ML)", "seconds": t_lap, "b_acc_others": fit.coef[0],
                 "b_log_length": fit.coef[1], "sigma_u": fit.sigma_u, "converged": fit.converged})
    t_q, fq = best_time(lambda: propensity_fit(R, X, cl, kind="random", method="aghq", n_quad=7), repeat)
    rows.append({"fitter": "evalkit AGHQ(7) (ML)", "seconds": t_q, "b_acc_others": fq.coef[0],
                 "b_log_length": fq.coef[1], "sigma_u": fq.sigma_u, "converged": fq.converged})

    import statsmodels.api as sm
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    exog = sm.add_constant(X.to_numpy())
    vc = pd.get_dummies(pd.Series(cl)).to_numpy(dtype=float)

    def vb() -> Any:
        return BinomialBayesMixedGLM(R, exog, vc, np.zeros(vc.shape[1], dtype=int)).fit_vb()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_vb, r_vb = best_time(vb, repeat)
    rows.append({"fitter": "statsmodels BinomialBayesMixedGLM.fit_vb (VB)", "seconds": t_vb,
                 "b_acc_others": r_vb.fe_mean[1], "b_log_length": r_vb.fe_mean[2],
                 "sigma_u": float(np.exp(r_vb.vcp_mean[0])), "converged": True})

    def fe() -> Any:
        return sm.Logit(R, np.column_stack([vc, X.to_numpy()])).fit(disp=0, method="newton", maxiter=100)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_fe, r_fe = best_time(fe, repeat)
    rows.append({"fitter": "statsmodels Logit + 91 cluster dummies (ML, fixed)", "seconds": t_fe,
                 "b_acc_others": r_fe.params[-2], "b_log_length": r_fe.params[-1], "sigma_u": np.nan,
                 "converged": bool(r_fe.mle_retvals.get("converged", False))})
    for r in rows:
        r["ratio_vs_evalkit_laplace"] = r["seconds"] / t_lap
    return rows


def bench_study(n_reps: int, n_jobs: int) -> tuple[float, pd.DataFrame]:
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        runs = missing_study(n_reps=n_reps, n_jobs=n_jobs)
    secs = time.perf_counter() - t
    return secs, mc_summarise(runs, scale=100)


def bench_bootstrap(n_reps: int, n_boot: int, n_jobs: int) -> tuple[float, pd.DataFrame]:
    """(c) The cluster bootstrap (refitting the propensity) in two scenarios, against CR1."""
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        runs = missing_study(n_reps=n_reps, mechanisms=("mar", "mar_cluster"), iccs=(0.2,), n_clusters=(20,),
                             n_boot=n_boot, n_jobs=n_jobs, seed=77)
    secs = time.perf_counter() - t
    return secs, mc_summarise(runs, scale=100)


def bench_widget(repeat: int) -> float:
    """(d) One redraw of the widget of notebook 03 (``missing_explore`` with 30 replications)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from evalkit import missing_explore

    def once() -> None:
        plt.close(missing_explore(n_reps=30))

    return best_time(once, repeat)[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="50 replications per scenario")
    ap.add_argument("--repeat", type=int, default=3, help="timing repeats of each fit (best is kept)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the study")
    args = ap.parse_args()
    n_reps = 50 if args.quick else 1000

    fit_rows = bench_fit(1 if args.quick else args.repeat)
    fits = pd.DataFrame(fit_rows)
    pd.set_option("display.width", 160)
    print(f"(a) random-intercept propensity, MMLU-Pro official {MODEL}: 12,032 items, 91 src clusters")
    print(fits.to_string(index=False, float_format=lambda v: f"{v:.4g}"))

    secs, summ = bench_study(n_reps, args.jobs)
    n_scen = len(summ) // summ.index.get_level_values("estimator").nunique()
    print(f"\n(b) simulation study: {n_scen} scenarios x {n_reps} replications, {args.jobs} processes: {secs:.1f} s")
    cols = ["bias", "bias_mcse", "rmse", "coverage", "width", "n_failed"]
    print(summ[cols].round(3).to_string())

    n_rb, n_b = (20, 50) if args.quick else (60, 199)
    secs_b, summ_b = bench_bootstrap(n_rb, n_b, args.jobs)
    keep = summ_b.index.get_level_values("estimator").isin(["CC CR1", "IPW RI CR1", "IPW RI bootstrap"])
    print(f"\n(c) cluster bootstrap refitting the propensity ({n_b} resamples), 2 scenarios x {n_rb} "
          f"replications: {secs_b:.1f} s")
    print(summ_b.loc[keep, ["bias", "coverage", "width", "se_mean", "sd_estimate"]].round(3).to_string())

    t_widget = bench_widget(1 if args.quick else args.repeat)
    print(f"\n(d) one widget redraw (missing_explore, 30 replications): {t_widget:.2f} s "
          f"= {t_widget / fit_rows[0]['seconds']:.1f} x one MMLU-Pro Laplace fit in this process (goal <= 2 s)")

    result = {
        "benchmark": "bench_missing",
        "quick": args.quick,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "fit_model": MODEL,
        "fit_seconds_evalkit_laplace": round(fit_rows[0]["seconds"], 4),
        "fit_seconds_evalkit_aghq7": round(fit_rows[1]["seconds"], 4),
        "fit_seconds_statsmodels_vb": round(fit_rows[2]["seconds"], 4),
        "fit_seconds_statsmodels_fixed_logit": round(fit_rows[3]["seconds"], 4),
        "ratio_statsmodels_vb_over_evalkit": round(fit_rows[2]["ratio_vs_evalkit_laplace"], 2),
        "ratio_statsmodels_fixed_over_evalkit": round(fit_rows[3]["ratio_vs_evalkit_laplace"], 2),
        "fit_goal_seconds": 1.0,
        "study_scenarios": n_scen,
        "study_reps_per_scenario": n_reps,
        "study_seconds": round(secs, 1),
        "study_goal_seconds": 600,
        "bootstrap_reps": n_rb,
        "bootstrap_resamples": n_b,
        "bootstrap_seconds": round(secs_b, 1),
        "widget_redraw_seconds": round(t_widget, 2),
        "widget_redraw_over_laplace_fit": round(t_widget / fit_rows[0]["seconds"], 2),
        "widget_goal_seconds": 2.0,
    }
    print(json.dumps(result))

    write_results("missing" + ("-quick" if args.quick else ""), result, sys.argv)


if __name__ == "__main__":
    main()
