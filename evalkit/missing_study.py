"""The simulation study of [MISSING] (docs/methods/missing-responses.md) and the teaching widget built on it.

Paper: [MISSING]. Taught in ``notebooks/03.1-missing-responses-claims-bias.ipynb`` (the study) and
``notebooks/03.5-missing-responses-claims-anecdote.ipynb`` (its widget).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._checks import check_int, check_range, check_seed
from .clustered import Estimate
from .errors import EvalkitInputError
from .missing import Truncation, ipw_bootstrap, ipw_estimate, missing_complete_case, weights_compute
from .missing_propensity import propensity_fit
from .plots import PALETTE, _tight
from .simulate import _DEPRECATED_MECHANISMS

__all__ = ["STUDY_COLORS", "missing_study", "missing_explore"]


# --------------------------------------------------------------------------------------------
# the simulation study of docs/methods/missing-responses.md
# --------------------------------------------------------------------------------------------

def _study_estimators(data: pd.DataFrame, n_boot: int, seed: int,
                      truncate: Truncation = None) -> dict[str, Estimate | Exception]:
    """Every study estimator on one data set; an estimator that fails is stored as its exception.

    The estimators share the propensity fits, so they are computed together once per data set;
    a failure is kept per estimator, so that one failing estimator (say the bootstrap) fails its
    own row of the replication and no other.
    """
    y = data["correct"].to_numpy(dtype=float)
    cl = data["cluster"].to_numpy()
    x = data["x"].to_numpy(dtype=float)[:, None]
    obs = ~np.isnan(y)
    out: dict[str, Estimate | Exception] = {}

    def put(name: str, f: Callable[[], Estimate]) -> None:
        try:
            out[name] = f()
        except Exception as exc:  # recorded per estimator; mc_run reports it with the replication
            out[name] = exc

    put("CC iid", lambda: missing_complete_case(y, cl, se="iid"))
    put("CC CR1", lambda: missing_complete_case(y, cl, se="CR1"))
    if obs.all():
        none = ValueError("no missing outcomes in this replication: the IPW estimators are not defined")
        for name in ("IPW logistic iid", "IPW RI CR1", "IPW RI CR2", "IPW RI bootstrap"):
            out[name] = none
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit_l = propensity_fit(obs.astype(float), x, cl, kind="logistic")
            put("IPW logistic iid", lambda: ipw_estimate(y, cl, p=fit_l.p, se="iid", truncate=truncate))
        except Exception as exc:
            out["IPW logistic iid"] = exc
        try:
            fit_r = propensity_fit(obs.astype(float), x, cl, kind="random")
            put("IPW RI CR1", lambda: ipw_estimate(y, cl, p=fit_r.p, se="CR1", truncate=truncate))
            put("IPW RI CR2", lambda: ipw_estimate(y, cl, p=fit_r.p, se="CR2", truncate=truncate))
        except Exception as exc:
            out["IPW RI CR1"] = out["IPW RI CR2"] = exc
        if n_boot:
            put("IPW RI bootstrap", lambda: ipw_bootstrap(y, cl, features=x, n_boot=n_boot, seed=seed,
                                                          truncate=truncate))
    return out


_STUDY_ESTIMATORS = ("CC iid", "CC CR1", "IPW logistic iid", "IPW RI CR1", "IPW RI CR2")


def _study_one(args: tuple) -> pd.DataFrame:
    from .montecarlo import mc_run
    from .simulate import simulate_clustered, simulate_missing

    scen, n_reps, seed, n_boot, truncate = args

    def sim(rng: np.random.Generator) -> pd.DataFrame:
        d = simulate_clustered(n_clusters=scen["n_clusters"], cluster_size=scen["cluster_size"],
                               mean=scen["mean"], icc=scen["icc"], rng=rng, beta_x=scen["beta_x"])
        data = simulate_missing(d, mechanism=scen["mechanism"], response_rate=scen["response_rate"],
                                strength=scen["strength"], rng=rng)
        # the bootstrap's own seed, drawn from this replication's stream after the data: each
        # replication resamples clusters independently, so the bootstrap's Monte Carlo error
        # averages out over the replications instead of being shared by all of them
        data.attrs["boot_seed"] = int(rng.integers(2**31))
        return data

    names = list(_STUDY_ESTIMATORS) + (["IPW RI bootstrap"] if n_boot else [])
    cache: dict[str, Any] = {"data": None, "est": {}}

    def make(name: str) -> Callable[[pd.DataFrame], Estimate]:
        def f(data: pd.DataFrame) -> Estimate:
            if cache["data"] is not data:  # a new replication: compute every estimator once
                cache["data"], cache["est"] = data, {}
                cache["est"] = _study_estimators(data, n_boot, data.attrs["boot_seed"], truncate)
            res = cache["est"][name]
            if isinstance(res, Exception):
                raise res
            return res
        return f

    runs = mc_run(sim, {nm: make(nm) for nm in names}, truth=float(scen["mean"]), n_reps=n_reps, seed=seed,
                  progress=False)
    for k, v in scen.items():
        if k in ("mechanism", "icc", "n_clusters"):
            runs[k] = v
    return runs


def _renamed(mechanism: str) -> str:
    if mechanism in _DEPRECATED_MECHANISMS:
        new = _DEPRECATED_MECHANISMS[mechanism]
        warnings.warn(f"mechanism {mechanism!r} is deprecated (missingness driven by the observed cluster is MAR "
                      f"given the cluster); use {new!r}", DeprecationWarning, stacklevel=3)
        return new
    return mechanism


def missing_study(*, n_reps: int = 1000, seed: int = 2025, mechanisms: Sequence[str] = ("mcar", "mar",
                  "mar_cluster", "mnar_item"), iccs: Sequence[float] = (0.02, 0.2),
                  n_clusters: Sequence[int] = (20, 100), n_items: int = 1000, mean: float = 0.5,
                  response_rate: float = 0.8, strength: float = 1.5, beta_x: float = 1.0, n_boot: int = 0,
                  truncate: Truncation = None, n_jobs: int = 1) -> pd.DataFrame:
    """Run the simulation study of [MISSING] (docs/methods/missing-responses.md) and return the raw replications.

    Scenarios are the grid mechanisms x ICC x number of clusters (``n_items`` items split evenly
    into the clusters). In every replication one model's outcomes are drawn with
    :func:`evalkit.simulate.simulate_clustered` (item covariate effect ``beta_x``), answers are
    hidden with :func:`evalkit.simulate.simulate_missing`, and the estimators ``CC iid``, ``CC
    CR1``, ``IPW logistic iid`` (propensity on ``x`` only, i.i.d. interval), ``IPW RI CR1`` and
    ``IPW RI CR2`` (random-intercept propensity on ``x``) are scored against the expected accuracy
    ``mean`` (the accuracy on the population of items the benchmark samples), plus ``IPW RI
    bootstrap`` when ``n_boot > 0`` (slow). Summarise with
    :func:`evalkit.montecarlo.mc_summarise`.

    The mechanisms are those of :func:`evalkit.simulate.simulate_missing`: ``"mcar"``, ``"mar"``
    (given ``x``), ``"mar_cluster"`` (given the cluster; formerly ``"mnar_cluster"``, still
    accepted with a ``DeprecationWarning``) and ``"mnar_item"``.

    Paper: [MISSING].

    Parameters
    ----------
    n_reps : int
        Replications per scenario (1,000 for the full study).
    seed : int
    mechanisms, iccs, n_clusters : sequences
        The grid.
    n_items, mean, response_rate, strength, beta_x : numbers
        Fixed design values.
    n_boot : int
        Bootstrap resamples per replication for the bootstrap estimator (0 = skip).
    truncate : see :func:`weights_compute`
        Weight truncation of the IPW estimators.
    n_jobs : int
        Worker processes (scenarios are distributed over them).

    Returns
    -------
    DataFrame
        :func:`evalkit.montecarlo.mc_run` output with columns ``mechanism, icc, n_clusters``.
    """
    mechanisms = [_renamed(m) for m in mechanisms]
    scens = []
    for k, (mech, icc, M) in enumerate((a, b, c) for a in mechanisms for b in iccs for c in n_clusters):
        if n_items % M:
            raise EvalkitInputError("n_items", f"n_items={n_items} must be a multiple of every n_clusters (got {M})")
        scens.append(({"mechanism": mech, "icc": float(icc), "n_clusters": int(M), "cluster_size": n_items // M,
                       "mean": mean, "response_rate": response_rate, "strength": strength, "beta_x": beta_x},
                      n_reps, seed + 1000 * k, n_boot, truncate))
    if n_jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(n_jobs) as ex:
            parts = list(ex.map(_study_one, scens))
    else:
        parts = [_study_one(s) for s in scens]
    return pd.concat(parts, ignore_index=True)


STUDY_COLORS: dict[str, str] = {
    "CC iid": PALETTE["iid"],
    "CC CR1": PALETTE["cc"],
    "IPW logistic iid": PALETTE["ipw"],
    "IPW RI CR1": PALETTE["ipw_ri"],
    "IPW RI CR2": PALETTE["CR2"],
    "IPW RI bootstrap": PALETTE["accent"],
}
"""One colour per estimator of :func:`missing_study`, used by every missing-responses figure."""


def missing_explore(icc: float = 0.2, n_clusters: int = 20, mechanism: str = "mar_cluster",
                    strength: float = 1.5, response_rate: float = 0.8, trunc_q: float = 1.0, *,
                    n_reps: int = 40, n_items: int = 1000, seed: int = 20251201) -> Any:
    """Draw one setting of the missing-responses study: bias and coverage per estimator, and one replication's weights.

    The function behind the widget of ``notebooks/03.5-missing-responses-claims-anecdote.ipynb``: it runs
    :func:`missing_study` for one scenario (``n_reps`` replications, expected accuracy 0.5) and
    draws three panels: the bias of each estimator with a 2-Monte-Carlo-SE bar, its coverage
    with a 2-Monte-Carlo-SE bar (binomial) against the 95% line, and the raw inverse-propensity
    weights of one replication with the truncation cap and the share of weight mass it cuts.

    Paper: [MISSING].

    Parameters
    ----------
    icc : float
        ICC of the outcomes (0 to 0.5).
    n_clusters : int
        Number of clusters; must divide ``n_items``.
    mechanism : {"mcar", "mar", "mar_cluster", "mnar_item"}
    strength : float
        Log-odds effect of the mechanism on response.
    response_rate : float
        Expected share of answered items, in (0, 1).
    trunc_q : float
        Truncation quantile of the weights; 1 means none.
    n_reps, n_items, seed : int
        Replications, items per replication, seed.

    Returns
    -------
    matplotlib Figure

    Raises
    ------
    ValueError
        A response rate outside (0, 1), a truncation quantile outside (0, 1], and the errors of
        :func:`missing_study`.
    """
    import matplotlib.pyplot as plt

    check_int(n_reps, "n_reps", minimum=2)
    check_int(n_items, "n_items", minimum=2)
    check_int(n_clusters, "n_clusters", minimum=2, maximum=int(n_items))
    check_seed(seed)
    check_range(response_rate, "response_rate", 0.0, 1.0, closed="neither")
    check_range(trunc_q, "trunc_q", 0.0, 1.0, closed="right")
    from .montecarlo import mc_summarise
    from .simulate import simulate_clustered, simulate_missing

    rule: Truncation = None if trunc_q >= 1.0 else ("quantile", float(trunc_q))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few clusters / singular fits in some replications: part of the picture
        runs = missing_study(n_reps=n_reps, seed=seed, mechanisms=(mechanism,), iccs=(icc,), n_clusters=(n_clusters,),
                             n_items=n_items, strength=strength, response_rate=response_rate, truncate=rule)
        s = mc_summarise(runs, scale=100).reset_index()
        d = simulate_missing(simulate_clustered(n_clusters=n_clusters, cluster_size=n_items // n_clusters, mean=0.5,
                                                icc=icc, rng=seed + 1, beta_x=1.0),
                             mechanism=mechanism, response_rate=response_rate,  # type: ignore[arg-type]
                             strength=strength, rng=seed + 2)
        obs = d["correct"].notna().to_numpy()
        W = weights_compute(propensity_fit(obs.astype(float), d[["x"]], d["cluster"]).p[obs], rule)
    colors = [STUDY_COLORS.get(str(e), PALETTE["neutral"]) for e in s["estimator"]]
    # 11 inches wide: shown at a notebook's width, the text stays at the size of the style's fonts
    fig, ax = plt.subplots(1, 3, figsize=(11, 4.4), gridspec_kw={"width_ratios": [1.25, 1, 1]})
    yy = np.arange(len(s))
    ax[0].barh(yy, s["bias"], xerr=2 * s["bias_mcse"], color=colors)
    ax[0].set_yticks(yy, s["estimator"])
    ax[0].axvline(0, color=PALETTE["truth"], lw=0.8)
    ax[0].set_xlabel("bias (accuracy points)")
    ax[1].errorbar(s["coverage"], yy, xerr=2 * s["coverage_mcse"], fmt="none", ecolor=PALETTE["neutral"], capsize=3)
    ax[1].scatter(s["coverage"], yy, c=colors, s=45, zorder=3, clip_on=False)
    ax[1].axvline(0.95, color=PALETTE["truth"], ls="--", lw=0.8)
    ax[1].set_xlim(0, 1.06)  # a coverage of 1.0 sits inside the frame, not on it
    ax[1].set_xticks([0, 0.25, 0.5, 0.75, 0.95])
    ax[1].set_yticks(yy, [""] * len(s))
    ax[1].set_xlabel("coverage of the 95% interval")
    ax[2].hist(W.w_raw, bins=40, color=PALETTE["neutral"])
    if np.isfinite(W.cap):
        ax[2].axvline(W.cap, color=PALETTE["accent"], label=f"cap: {W.mass_cut:.1%} of weight mass cut")
        ax[2].legend()
    ax[2].set_xlabel("weight 1/p, one replication")
    ax[2].set_ylabel("answered items")
    from .widgets import CHOICE_LABELS

    fig.suptitle(f"{CHOICE_LABELS.get(mechanism, mechanism)}, ICC {icc:g}, {n_clusters} clusters\n"
                 f"{response_rate:.0%} answered, strength {strength:g}, {n_reps} replications "
                 "(bars: 2 Monte Carlo SE)")
    _tight(fig)
    return fig
