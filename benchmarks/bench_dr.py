"""Doubly robust (AIPW) accuracy: the simulation study with known truth, and the fit time on MMLU-Pro.

Study. Clustered items (``simulate_clustered``: random-intercept logistic outcome in ``x`` and the
cluster effect ``u``) with answers missing at random given ``x`` and ``u``: response depends on
``x`` and on the *same* cluster effect as the outcome (``simulate_missing(latent=...)``, latent
dependence). ``u`` is a cluster-level feature, so both logistic nuisance models on ``(x, u)``
are right, and a model on ``x`` alone is wrong (it misses the shared effect). Four scenarios:
both right, only the propensity wrong, only the outcome model wrong, both wrong. Estimators: DR
cross-fitted by cluster (CR1, CR2 and the i.i.d. variance), DR without cross-fitting, IPW
(Hájek, logistic propensity, CR1), outcome regression (logistic, CR1 with the delta method) and
complete case (CR1). Each through ``evalkit.mc_run``: bias with its MCSE, coverage with its
MCSE, width.

Timing. ``dr_estimate`` on one MMLU-Pro model (12,032 items in 91 source clusters, features:
accuracy of the other models and log question length), 5 folds of whole clusters, logistic and
random-intercept nuisances; the ratio to one ``ipw_estimate`` (logistic) in the same process.

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_dr.py            # full (1,000 reps)
    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_dr.py --reps 100 # quick, writes dr-quick.json

Finite-sample part (``--part finite-sample``). Why the cross-fitted DR is biased in the scenario
"outcome wrong" (outcome on ``x`` only, propensity on ``x`` and ``u``): only the DR estimators,
on new seeds, against each data set's full-data accuracy, for 40, 80 and 160 clusters (5 folds)
and 2 and 10 folds (40 clusters). Besides cross-fitted and in-sample DR it computes the normalised
(Hajek-type) DR, the cross-fitted DR with the *true* response probabilities (exactly unbiased: the
paired difference isolates the cost of estimating the propensity out of fold) and the mean inverse
weight ``mean(R / pi_hat)``. Every estimator of a data set reads one cross-fitted and one in-sample
nuisance fit.

    OPENBLAS_NUM_THREADS=1 nice .venv/bin/python benchmarks/bench_dr.py --part finite-sample --workers 2

Writes ``benchmarks/results/dr.json`` (``dr-quick.json`` for a non-default run) and, for the
finite-sample part, ``dr-finite-sample.json`` (``dr-finite-sample-quick.json`` with ``--scale``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_results  # noqa: E402

import evalkit as ek  # noqa: E402
from evalkit.missing_dr import _or_estimate, _pseudo_normalised, _result  # noqa: E402

DESIGN = {"n_clusters": 40, "cluster_size": 25, "mean": 0.6, "icc": 0.2, "beta_x": 1.0,
          "mechanism": "mar", "response_rate": 0.7, "strength": 1.5, "latent": 1.0, "folds": 5}
RIGHT, WRONG = ["x", "u"], ["x"]
SCENARIOS = {
    "both right": (RIGHT, RIGHT),          # (outcome features, propensity features)
    "propensity wrong": (RIGHT, WRONG),
    "outcome wrong": (WRONG, RIGHT),
    "both wrong": (WRONG, WRONG),
}
SEED = 20251023


def simulate(rng: np.random.Generator) -> pd.DataFrame:
    d = ek.simulate_clustered(n_clusters=DESIGN["n_clusters"], cluster_size=DESIGN["cluster_size"],
                              mean=DESIGN["mean"], icc=DESIGN["icc"], rng=rng, beta_x=DESIGN["beta_x"])
    return ek.simulate_missing(d, mechanism=DESIGN["mechanism"], response_rate=DESIGN["response_rate"],
                               strength=DESIGN["strength"], rng=rng, latent=DESIGN["latent"])


_LAST: dict = {}


def _dr(d: pd.DataFrame, of: list[str], pf: list[str], cross_fit: bool, se: str,
        normalise: bool = False) -> ek.Estimate:
    # one nuisance fit per data set and models: its CR1, CR2 and iid intervals, and the normalised
    # variant (the same m_hat and pi_hat, weights rescaled to mean one per fold), all come from it
    key = (d["x"].to_numpy().tobytes(), d["correct"].to_numpy().tobytes(), tuple(of), tuple(pf), cross_fit)
    if key not in _LAST:
        _LAST.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ek.EvalkitWarning)
            _LAST[key] = ek.dr_estimate(d["correct"], d["cluster"], outcome_features=d[of],
                                        propensity_features=d[pf], cross_fit=cross_fit, folds=DESIGN["folds"], seed=0)
    e = _LAST[key]
    if normalise:
        y = d["correct"].to_numpy(dtype=float)
        phi = _pseudo_normalised(y, ~np.isnan(y), e.outcome, e.propensity, e.folds)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ek.EvalkitWarning)
            e = _result(phi, pd.factorize(d["cluster"])[0], se, 0.05, e.method.rsplit(", ", 1)[0], e.outcome,
                        e.propensity, e.folds, None)
    return e.as_estimate(se)


def _ipw(d: pd.DataFrame, pf: list[str]) -> ek.Estimate:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        return ek.ipw_estimate(d["correct"], d["cluster"], features=d[pf], kind="logistic")


def _or(d: pd.DataFrame, of: list[str]) -> ek.Estimate:
    return _or_estimate(d["correct"], d["cluster"], d[of])


def _cc(d: pd.DataFrame) -> ek.Estimate:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        return ek.missing_complete_case(d["correct"], d["cluster"])


def estimators(of: list[str], pf: list[str]) -> dict[str, Any]:
    p = functools.partial
    return {
        "DR cross-fit, CR1": p(_dr, of=of, pf=pf, cross_fit=True, se="CR1"),
        "DR cross-fit, CR2": p(_dr, of=of, pf=pf, cross_fit=True, se="CR2"),
        "DR cross-fit, iid": p(_dr, of=of, pf=pf, cross_fit=True, se="iid"),
        "DR cross-fit normalised, CR1": p(_dr, of=of, pf=pf, cross_fit=True, se="CR1", normalise=True),
        "DR no cross-fit, CR1": p(_dr, of=of, pf=pf, cross_fit=False, se="CR1"),
        "DR no cross-fit normalised, CR1": p(_dr, of=of, pf=pf, cross_fit=False, se="CR1", normalise=True),
        "IPW logistic, CR1": p(_ipw, pf=pf),
        "outcome regression, CR1": p(_or, of=of),
        "complete case, CR1": _cc,
    }


def study(n_reps: int, workers: int) -> pd.DataFrame:
    out = []
    for name, (of, pf) in SCENARIOS.items():
        ex = ProcessPoolExecutor(workers) if workers > 1 else None
        try:
            runs = ek.mc_run(simulate, estimators(of, pf), truth=DESIGN["mean"], n_reps=n_reps, seed=SEED,
                             progress=False, executor=ex)
        finally:
            if ex is not None:
                ex.shutdown()
        s = ek.mc_summarise(runs).reset_index()
        s.insert(0, "scenario", name)
        out.append(s)
        print(name, "done", flush=True)
    return pd.concat(out, ignore_index=True)


# --------------------------------------------------------------------------------------------
# finite-sample part: why the cross-fitted DR is biased when only the propensity is right
# --------------------------------------------------------------------------------------------

FS_SCENARIO = "outcome wrong"
FS_CELLS = [  # (n_clusters, folds, reps, seed): the study's cell, more clusters, other fold counts
    (40, 5, 2000, SEED + 1), (80, 5, 600, SEED + 2), (160, 5, 300, SEED + 3),
    (40, 2, 400, SEED + 4), (40, 10, 400, SEED + 5),
]
_FS: dict = {}


def simulate_fs(rng: np.random.Generator, n_clusters: int) -> pd.DataFrame:
    d = ek.simulate_clustered(n_clusters=n_clusters, cluster_size=DESIGN["cluster_size"], mean=DESIGN["mean"],
                              icc=DESIGN["icc"], rng=rng, beta_x=DESIGN["beta_x"])
    return ek.simulate_missing(d, mechanism=DESIGN["mechanism"], response_rate=DESIGN["response_rate"],
                               strength=DESIGN["strength"], rng=rng, latent=DESIGN["latent"])


def full_accuracy(d: pd.DataFrame) -> float:
    return float(d["correct_full"].mean())


def _fs_fits(d: pd.DataFrame, folds: int) -> dict[str, Any]:
    """One cross-fitted and one in-sample nuisance fit per data set; every estimator below reads them."""
    key = (d["x"].to_numpy().tobytes(), d["correct"].to_numpy().tobytes(), folds)
    if key not in _FS:
        _FS.clear()
        of, pf = SCENARIOS[FS_SCENARIO]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ek.EvalkitWarning)
            cf = ek.dr_estimate(d["correct"], d["cluster"], outcome_features=d[of], propensity_features=d[pf],
                                folds=folds, seed=0)
            nc = ek.dr_estimate(d["correct"], d["cluster"], outcome_features=d[of], propensity_features=d[pf],
                                cross_fit=False)
        _FS[key] = {"cf": cf, "nocf": nc, "y": d["correct"].to_numpy(dtype=float),
                    "pi": d["p_respond"].to_numpy(dtype=float)}
    return _FS[key]


def fs_estimate(d: pd.DataFrame, folds: int, which: str) -> float:
    f = _fs_fits(d, folds)
    y = f["y"]
    obs = ~np.isnan(y)
    e = f["cf"] if which.startswith("cf") else f["nocf"]
    if which in ("cf", "nocf"):
        return float(e.estimate)
    if which in ("cf normalised", "nocf normalised"):
        return float(_pseudo_normalised(y, obs, e.outcome, e.propensity, e.folds).mean())
    if which == "cf true propensity":      # cross-fitted outcome model, the true response probabilities
        return float(np.mean(e.outcome + np.where(obs, np.nan_to_num(y) - e.outcome, 0.0) / f["pi"]))
    if which in ("cf mean weight", "nocf mean weight"):   # mean of R / pi_hat over all items (1 at the truth)
        return float(np.mean(np.where(obs, 1.0 / e.propensity, 0.0)))
    raise ValueError(which)


FS_ESTIMATORS = ["cf", "cf normalised", "cf true propensity", "nocf", "nocf normalised"]


def finite_sample(workers: int, scale: float = 1.0) -> dict[str, Any]:
    cells = []
    for n_clusters, folds, reps, seed in FS_CELLS:
        reps = max(int(reps * scale), 2)
        ests = {w: functools.partial(fs_estimate, folds=folds, which=w) for w in FS_ESTIMATORS}
        ests.update({w: functools.partial(fs_estimate, folds=folds, which=w)
                     for w in ("cf mean weight", "nocf mean weight")})
        ex = ProcessPoolExecutor(workers) if workers > 1 else None
        t0 = time.perf_counter()
        try:
            runs = ek.mc_run(functools.partial(simulate_fs, n_clusters=n_clusters), ests, truth=full_accuracy,
                             n_reps=reps, seed=seed, progress=False, executor=ex)
        finally:
            if ex is not None:
                ex.shutdown()
        est = runs.pivot(index="rep", columns="estimator", values="estimate")
        err = est[FS_ESTIMATORS].sub(runs.groupby("rep")["truth"].first(), axis=0)

        def mean_mcse(v: pd.Series) -> dict[str, float]:
            return {"mean": float(v.mean()), "mcse": float(v.std(ddof=1) / np.sqrt(v.size))}

        cell = {"n_clusters": n_clusters, "folds": folds, "n_items": n_clusters * DESIGN["cluster_size"],
                "n_train_clusters": n_clusters * (folds - 1) / folds, "n_reps": reps, "seed": seed,
                "n_failed": int((runs["error"] != "").sum()), "seconds": time.perf_counter() - t0,
                # bias against each data set's full-data accuracy (its expectation is the design's mean)
                "bias": {w: mean_mcse(err[w]) for w in FS_ESTIMATORS},
                # bias against the design's mean (the study's truth), for the cell the study reports
                "bias_vs_mean": {w: mean_mcse(est[w] - DESIGN["mean"]) for w in FS_ESTIMATORS},
                # paired: the part of the cross-fitted bias due to estimating the propensity
                "cf_minus_true_propensity": mean_mcse(est["cf"] - est["cf true propensity"]),
                "cf_minus_nocf": mean_mcse(est["cf"] - est["nocf"]),
                "cf_normalised_minus_true_propensity": mean_mcse(est["cf normalised"] - est["cf true propensity"]),
                "mean_weight_minus_1": {w: mean_mcse(est[f"{w} mean weight"] - 1.0) for w in ("cf", "nocf")}}
        cells.append(cell)
        print(n_clusters, folds, reps, {k: round(v["mean"] * 100, 3) for k, v in cell["bias"].items()},
              "cf-true", round(cell["cf_minus_true_propensity"]["mean"] * 100, 3),
              round(cell["cf_minus_true_propensity"]["mcse"] * 100, 3), flush=True)
    return {"design": DESIGN, "scenario": FS_SCENARIO, "features": {"outcome": SCENARIOS[FS_SCENARIO][0],
                                                                    "propensity": SCENARIOS[FS_SCENARIO][1]},
            "cells": cells}


def timing(repeats: int = 5) -> dict[str, Any]:
    mmlu = ek.dataset_load("mmlu_pro_official", cluster="src")
    lengths = ek.dataset_items("mmlu_pro_official").set_index("item")["question_chars"]
    miss = mmlu.assign(miss=mmlu["correct"].isna()).groupby("model")["miss"].mean()
    model = str(miss.idxmax())
    d = mmlu[mmlu["model"] == model].merge(ek.missing_features(mmlu, model=model, lengths=lengths),
                                           left_on="item", right_index=True)
    X = d[["acc_others", "log_length"]]
    y, cl = d["correct"].to_numpy(dtype=float), d["cluster"].to_numpy()

    def best(f: Any) -> float:
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return float(min(ts))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ek.EvalkitWarning)
        t_ipw = best(lambda: ek.ipw_estimate(y, cl, features=X, kind="logistic"))
        t_dr = best(lambda: ek.dr_estimate(y, cl, features=X, folds=5, seed=0))
        t_ri = best(lambda: ek.dr_estimate(y, cl, features=X, folds=5, seed=0, outcome_model="random_intercept",
                                           propensity_model="random_intercept"))
        e = ek.dr_estimate(y, cl, features=X, folds=5, seed=0)
    return {"model": model, "n_items": int(y.size), "n_clusters": int(np.unique(cl).size),
            "missing_share": float(np.isnan(y).mean()), "folds": 5, "repeats": repeats,
            "seconds_dr_logistic": t_dr, "seconds_dr_random_intercept": t_ri, "seconds_ipw_logistic": t_ipw,
            "ratio_dr_to_ipw": t_dr / t_ipw, "goal_seconds": 2.0, "estimate": e.estimate, "se_cr1": e.se}


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--part", choices=["study", "finite-sample"], default="study",
                    help="finite-sample: the mechanism behind the cross-fitted bias (writes dr-finite-sample.json)")
    ap.add_argument("--scale", type=float, default=1.0, help="finite-sample: fraction of each cell's replications")
    args = ap.parse_args(argv[1:])
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if args.part == "finite-sample":
        fs = finite_sample(args.workers, args.scale)
        print(write_results("dr-finite-sample" if args.scale == 1.0 else "dr-finite-sample-quick", fs, argv))
        return
    t0 = time.perf_counter()
    tab = study(args.reps, args.workers)
    study_s = time.perf_counter() - t0
    print(tab[["scenario", "estimator", "n_reps", "n_failed", "bias", "bias_mcse", "coverage", "coverage_mcse",
               "width"]].round(4).to_string(index=False))
    tim = None if args.skip_timing else timing()
    if tim:
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in tim.items()})
    payload = {"design": DESIGN, "scenarios": {k: {"outcome_features": v[0], "propensity_features": v[1]}
                                               for k, v in SCENARIOS.items()},
               "n_reps": args.reps, "seed": SEED, "study_seconds": study_s,
               "study": tab.to_dict(orient="records"), "timing": tim}
    default = args.reps == 1000 and not args.skip_timing
    print(write_results("dr" if default else "dr-quick", payload, argv))


if __name__ == "__main__":
    main(sys.argv)
