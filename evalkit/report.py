"""The one-page report on an eval you ran: ``evalkit report LOG...``.

:func:`report_build` takes a long table (from :func:`evalkit.log_read` or a dataset) and computes,
per task and model, what the kit teaches: accuracy with an i.i.d. and a cluster-robust interval,
the design effect and the effective number of items, the missing answers by reason and by
cluster with the bounds and an IPW estimate, and paired cluster-robust comparisons between the
models with the minimum difference each comparison could detect. :func:`report_write` writes it
as Markdown (with PNG figures beside it) and as one self-contained HTML page.

Every number is computed by the same evalkit functions the notebooks teach
(:func:`evalkit.mean_estimate`, :func:`evalkit.missing_bounds`, :func:`evalkit.ipw_estimate`...);
the report only assembles them. The lesson that reads one report line by line is notebook
``09-your-own-eval-log``.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import os
import pathlib
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from ._checks import EvalkitWarning
from .clustered import Estimate, deff_empirical, icc_anova, mean_estimate
from .missing import ipw_estimate, missing_bounds

__all__ = ["Report", "report_build", "report_write"]

_POWER = 0.8


@dataclass
class Report:
    """What :func:`report_build` computed; every table is a DataFrame.

    Attributes
    ----------
    accuracy : one row per (task, model): counts, accuracy, i.i.d. and cluster-robust intervals,
        ICC, design effect, effective n.
    missing_by_reason : counts and shares of each status per (task, model).
    missing_by_cluster : the missing rate per (task, model, cluster).
    missing_estimates : bounds, complete case, IPW and doubly robust (DR) per (task, model) with missing answers.
    comparisons : one row per pair of models within a task: paired difference, intervals, p-value,
        minimum detectable difference (80% power) and the number of comparisons made.
    notes : plain-language caveats collected while building (what was skipped and why).
    """

    accuracy: pd.DataFrame
    missing_by_reason: pd.DataFrame
    missing_by_cluster: pd.DataFrame
    missing_estimates: pd.DataFrame
    comparisons: pd.DataFrame
    cluster: str
    alpha: float
    se: str
    notes: list[str] = field(default_factory=list)


def _est_cols(prefix: str, est: Any) -> dict[str, float]:
    return {f"{prefix}_low": est.ci_low, f"{prefix}_high": est.ci_high, f"{prefix}_se": est.se}


def _nan_estimate(est: Estimate) -> Estimate:
    return Estimate(est.estimate, np.nan, np.nan, np.nan, np.nan, "not available", est.n, None)


def _dr_rows(long_df: pd.DataFrame, task: str, model: Any, g: pd.DataFrame, ymiss: np.ndarray, clus: np.ndarray,
             se: str, alpha: float, notes: list[str]) -> list[tuple[str, Estimate]]:
    """The doubly robust row of one model: feature = the item's accuracy among the task's other models.

    :func:`evalkit.missing_features`' ``acc_others`` (item difficulty from the other models, never
    this model's own answers) is the one feature the report has for every eval log; logistic outcome
    and propensity models on it, cross-fitted on five folds of whole clusters
    (:func:`evalkit.missing_dr.dr_estimate`). Skipped, with a note, for a task with one model.
    """
    from .missing import missing_features
    from .missing_dr import dr_estimate

    tg = dict(_groups(long_df))[task]
    if tg["model"].nunique() < 2:
        notes.append(f"{task} / {model}: one model only, so no item difficulty from other models; DR not computed")
        return []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EvalkitWarning)
            X = missing_features(tg, model=model).reindex(g["item"].to_numpy())[["acc_others"]]
            est = dr_estimate(ymiss, clus, features=X.to_numpy(), folds=min(5, len(np.unique(clus))), seed=0,
                              se=se, alpha=alpha)  # type: ignore[arg-type]
        notes.extend(f"{task} / {model} (DR): {w.message}" for w in caught)
        return [("DR, difficulty from the other models", est)]
    except (ValueError, np.linalg.LinAlgError) as exc:
        notes.append(f"{task} / {model}: DR not computed: {exc}")
        return []


def _mdd(se: float, df: float, alpha: float, power: float = _POWER) -> float:
    """Smallest true difference a two-sided level-``alpha`` test detects with probability ``power``."""
    if not np.isfinite(df):
        return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)
    return float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se)


def _groups(df: pd.DataFrame) -> Iterable[tuple[str, pd.DataFrame]]:
    if "task" in df.columns and df["task"].nunique() > 1:
        yield from ((str(t), g) for t, g in df.groupby("task", sort=True))
    else:
        task = str(df["task"].iloc[0]) if "task" in df.columns else "all items"
        yield task, df


def report_build(long_df: pd.DataFrame, *, cluster: str = "cluster", se: str = "CR2", alpha: float = 0.05,
                 progress: bool = False) -> Report:
    """Compute every table of the report from a long table.

    Parameters
    ----------
    long_df : DataFrame
        ``model, item, correct, status`` and the cluster column; ``correct`` may be a fraction
        (the mean over several epochs) where ``status == "ok"``. Tasks (column ``task``) are
        reported separately.
    cluster : str
        The column to cluster on.
    se : {"CR1", "CR2"}
        The cluster-robust kind.
    alpha : float
        1 - confidence level.
    progress : bool
        Show a progress bar over models.

    Returns
    -------
    Report

    Raises
    ------
    ValueError
        Missing columns, an unknown ``se`` or ``alpha`` out of range. What cannot be estimated
        (a model with no graded answer, a task whose items fall in one cluster, a cluster with no
        answered item for IPW) is left out and said in :attr:`Report.notes`, not raised, so that
        one bad task does not hide the others.
    """
    need = [c for c in ("model", "item", "correct", "status", cluster) if c not in long_df.columns]
    if need:
        raise ValueError(f"the table lacks columns {need}; cluster={cluster!r} must name one of "
                         f"{list(long_df.columns)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if se not in ("CR1", "CR2"):
        raise ValueError(f"se must be 'CR1' or 'CR2', got {se!r}")
    notes: list[str] = []
    acc_rows, est_rows, cmp_rows = [], [], []
    reason_rows, cluster_rows = [], []
    work = [(task, m, g) for task, tg in _groups(long_df) for m, g in tg.groupby("model", sort=True)]
    iterator: Iterable[tuple[str, Any, pd.DataFrame]] = work
    if progress and len(work) > 1:
        from tqdm.auto import tqdm
        iterator = tqdm(work, desc="report", unit="model")
    for task, model, g in iterator:
        y = g["correct"].to_numpy(dtype=float)
        ok = (g["status"] == "ok").to_numpy()
        clus = g[cluster].astype(str).to_numpy()
        for status, n in g["status"].value_counts().sort_index().items():
            reason_rows.append({"task": task, "model": model, "status": status, "n": int(n), "share": n / len(g)})
        if ok.sum() == 0:
            notes.append(f"{task} / {model}: no answer was graded ({len(g)} items missing); only the trivial "
                         "bounds [0, 1] are known")
            continue
        n_clusters = len(np.unique(clus[ok]))
        binary = bool(np.isin(y[ok], (0.0, 1.0)).all())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EvalkitWarning)
            # Wilson intervals on the effective sample size for 0/1 outcomes: they stay inside [0, 1]
            # and do not collapse at 0% or 100% (the t interval does both with few clusters).
            kind: Literal["t", "wilson"] = "wilson" if binary else "t"
            iid = mean_estimate(y[ok], se="iid", alpha=alpha, binary=binary, interval=kind)
            if n_clusters >= 2:
                cr = mean_estimate(y[ok], clus[ok], se=se, alpha=alpha, binary=binary,  # type: ignore[arg-type]
                                   interval=kind)
                deff = deff_empirical(y[ok], clus[ok])
                icc = icc_anova(y[ok], clus[ok]) if binary else np.nan
            else:
                notes.append(f"{task} / {model}: the graded items fall in one cluster of {cluster!r}, so there is "
                             "no cluster-robust interval (choose a finer --cluster); the i.i.d. one is shown")
                cr, deff, icc = _nan_estimate(iid), np.nan, np.nan
        for w in caught:
            notes.append(f"{task} / {model}: {w.message}")
        acc_rows.append({"task": task, "model": model, "n_items": len(g), "n_graded": int(ok.sum()),
                         "n_clusters": n_clusters, "accuracy": cr.estimate, **_est_cols("iid", iid),
                         **_est_cols("cr", cr), "cr_df": cr.df, "icc": icc, "deff": deff,
                         "n_effective": ok.sum() / deff if deff > 0 else np.nan})
        if n_clusters < 2:
            continue
        if not ok.all():
            by = g.assign(missing=~ok).groupby(cluster)["missing"].agg(["size", "sum"])
            for c, r in by.iterrows():
                cluster_rows.append({"task": task, "model": model, "cluster": c, "n": int(r["size"]),
                                     "n_missing": int(r["sum"]), "missing_rate": r["sum"] / r["size"]})
            ymiss = np.where(ok, y, np.nan)
            rows = []
            if binary:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", EvalkitWarning)  # said once above for this model
                    lo, hi = missing_bounds(ymiss, clus, se=se, alpha=alpha)  # type: ignore[arg-type]
                rows += [("missing as wrong", lo), ("missing as right", hi)]
                rows.append(("complete case", cr))
                answered = pd.Series(ok).groupby(clus).any()
                if answered.all():
                    try:
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always", EvalkitWarning)
                            ipw = ipw_estimate(ymiss, clus, kind="random", se=se, alpha=alpha)  # type: ignore[arg-type]
                        rows.append(("IPW, random-intercept propensity", ipw))
                        notes.extend(f"{task} / {model} (IPW): {w.message}" for w in caught)
                    except (ValueError, np.linalg.LinAlgError) as exc:
                        notes.append(f"{task} / {model}: IPW not computed: {exc}")
                else:
                    empty = sorted(answered.index[~answered].astype(str))
                    notes.append(f"{task} / {model}: clusters {empty} have no graded answer, so no weighting can "
                                 "speak for them; IPW is not reported, only the bounds")
                rows += _dr_rows(long_df, task, model, g, ymiss, clus, se, alpha, notes)
            else:
                notes.append(f"{task} / {model}: outcomes are epoch means (fractions), so the missing-data "
                             "bounds and IPW, which need 0/1 outcomes, are not computed")
            for name, est in rows:
                est_rows.append({"task": task, "model": model, "estimator": name, "estimate": est.estimate,
                                 "ci_low": est.ci_low, "ci_high": est.ci_high, "se": est.se})
    for task, tg in _groups(long_df):
        models = sorted(tg["model"].unique())
        pairs = list(itertools.combinations(models, 2))
        wide = tg[tg["status"] == "ok"].pivot_table(index="item", columns="model", values="correct", aggfunc="first")
        item_cluster = tg.drop_duplicates("item").set_index("item")[cluster].astype(str)
        for a, b in pairs:
            if a not in wide.columns or b not in wide.columns:
                notes.append(f"{task}: {a} vs {b}: one of them has no graded answer; not compared")
                continue
            both = wide[[a, b]].dropna()
            if len(both) < 2:
                notes.append(f"{task}: {a} vs {b} share fewer than two graded items; not compared")
                continue
            cl = item_cluster.reindex(both.index).to_numpy()
            d = (both[a] - both[b]).to_numpy()
            if len(np.unique(cl)) < 2:
                notes.append(f"{task}: {a} vs {b}: the shared items fall in one cluster; not compared")
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", EvalkitWarning)
                iid = mean_estimate(d, se="iid", alpha=alpha, binary=False)
                cr = mean_estimate(d, cl, se=se, alpha=alpha, binary=False)  # type: ignore[arg-type]
            t = cr.estimate / cr.se if cr.se > 0 else np.inf * np.sign(cr.estimate)
            p = float(2 * stats.t.sf(abs(t), cr.df)) if np.isfinite(cr.df) else float(2 * stats.norm.sf(abs(t)))
            cmp_rows.append({"task": task, "model_a": a, "model_b": b, "n_shared": len(both), "difference": cr.estimate,
                             **_est_cols("iid", iid), **_est_cols("cr", cr), "cr_df": cr.df, "p_value": p,
                             "mdd_80": _mdd(cr.se, cr.df, alpha), "n_comparisons": len(pairs)})
    comparisons = pd.DataFrame(cmp_rows)
    if len(comparisons):
        m = comparisons.groupby("task")["n_comparisons"].transform("first")
        comparisons["p_bonferroni"] = np.minimum(1.0, comparisons["p_value"] * m)
    notes = list(dict.fromkeys(notes))
    return Report(pd.DataFrame(acc_rows), pd.DataFrame(reason_rows), pd.DataFrame(cluster_rows),
                  pd.DataFrame(est_rows), comparisons, cluster, alpha, se, notes)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------

def _fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, float | np.floating):
        return "" if np.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_none_\n"
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    body = "".join("| " + " | ".join(_fmt(v).replace("|", "/") for v in row) + " |\n"
                   for row in df.itertuples(index=False))
    return head + body


def _figures(rep: Report) -> dict[str, bytes]:
    # Figure objects, not pyplot: no global backend state, so this works in a notebook and a shell alike.
    from matplotlib.figure import Figure

    from .plots import PALETTE, plot_intervals

    figs: dict[str, bytes] = {}
    cr_label = f"cluster-robust ({rep.se})"
    for task, g in rep.accuracy.groupby("task", sort=True):
        table = pd.concat([
            pd.DataFrame({"model": g["model"], "method": "i.i.d.", "estimate": g["accuracy"],
                          "ci_low": g["iid_low"], "ci_high": g["iid_high"]}),
            pd.DataFrame({"model": g["model"], "method": cr_label, "estimate": g["accuracy"],
                          "ci_low": g["cr_low"], "ci_high": g["cr_high"]}),
        ])
        fig = Figure(figsize=(7, 0.5 * len(g) + 1.6))
        plot_intervals(table, label="model", ax=fig.subplots(), xlabel="accuracy (share of graded items correct)",
                       colors={"i.i.d.": PALETTE["iid"], cr_label: PALETTE["cluster"]},
                       title=f"{task}: accuracy with {100 * (1 - rep.alpha):.0f}% intervals")
        figs[f"accuracy_{_slug(str(task))}.png"] = _png(fig)
    if not rep.missing_by_cluster.empty:
        for task, g in rep.missing_by_cluster.groupby("task", sort=True):
            wide = g.pivot_table(index="cluster", columns="model", values="missing_rate")
            fig = Figure(figsize=(7, 0.35 * len(wide) + 1.8))
            ax = fig.subplots()
            wide.plot.barh(ax=ax, width=0.8)
            ax.set_xlabel("share of items with no graded answer")
            ax.set_ylabel(rep.cluster)
            ax.set_title(f"{task}: missing answers by cluster")
            figs[f"missing_{_slug(str(task))}.png"] = _png(fig)
    return figs


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)[:60]


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _sections(rep: Report) -> list[tuple[str, str, pd.DataFrame]]:
    level = f"{100 * (1 - rep.alpha):.0f}%"
    acc = rep.accuracy[["task", "model", "n_items", "n_graded", "n_clusters", "accuracy", "iid_low", "iid_high",
                        "cr_low", "cr_high", "cr_df", "icc", "deff", "n_effective"]]
    cmp_cols = ["task", "model_a", "model_b", "n_shared", "difference", "cr_low", "cr_high", "p_value",
                "p_bonferroni", "mdd_80", "n_comparisons"]
    cmp = rep.comparisons[cmp_cols] if not rep.comparisons.empty else rep.comparisons
    return [
        ("Accuracy", f"Accuracy over graded items, with the {level} i.i.d. interval and the {level} cluster-robust "
         f"interval ({rep.se}, clusters = `{rep.cluster}`, `cr_df` degrees of freedom). For 0/1 outcomes both are "
         "Wilson intervals on the effective sample size, which stay inside [0, 1]; for epoch means (fractions), "
         "t intervals. `deff` is the "
         "empirical design effect (cluster-robust over i.i.d. variance) and `n_effective` the number of independent "
         "items the graded ones are worth. Trust the cluster-robust interval, not the i.i.d. one, whenever "
         "`deff` is clearly above 1; with fewer than about 10 clusters neither is reliable.", acc),
        ("Missing answers by reason", "Every item without a graded answer keeps its reason (evalkit statuses).",
         rep.missing_by_reason),
        ("Missing answers by cluster", "Where missing answers concentrate in some clusters, the complete-case "
         "accuracy describes the other clusters more than these.", rep.missing_by_cluster),
        ("What the missing answers could change", "`missing as wrong` and `missing as right` bound the full-data "
         "accuracy without any assumption; `complete case` is what drops them; IPW reweights the answered items "
         "with a random-intercept propensity by cluster (valid when, within a cluster, answering does not "
         "depend on correctness).", rep.missing_estimates),
        ("Paired comparisons", f"Difference A - B on the items both models answered, with its {level} "
         f"cluster-robust paired interval. `p_bonferroni` multiplies by the number of comparisons made "
         f"(`n_comparisons`). `mdd_80` is the smallest true difference this comparison would detect with 80% "
         f"power at level {rep.alpha}: a non-significant difference says little when it is below `mdd_80`.", cmp),
    ]


def report_write(rep: Report, out_dir: str | os.PathLike[str], *,
                 title: str = "evalkit report") -> dict[str, pathlib.Path]:
    """Write the report as ``report.md`` (+ PNG figures) and a self-contained ``report.html``.

    Returns
    -------
    dict
        ``{"markdown": path, "html": path}``.

    Raises
    ------
    NotADirectoryError
        When ``out_dir`` exists and is not a folder.
    """
    out = pathlib.Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a folder; give a folder for the report")
    out.mkdir(parents=True, exist_ok=True)
    figs = _figures(rep)
    for name, data in figs.items():
        (out / name).write_bytes(data)
    md = [f"# {title}\n"]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
         "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;font-size:0.9em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
         "th{background:#f3f3f3}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    for heading, text, table in _sections(rep):
        md += [f"## {heading}\n", text + "\n", _md_table(table)]
        h += [f"<h2>{html.escape(heading)}</h2>", f"<p>{html.escape(text)}</p>",
              table.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="") if not table.empty
              else "<p><em>none</em></p>"]
        if heading == "Accuracy":
            names = [n for n in figs if n.startswith("accuracy_")]
        elif heading == "Missing answers by cluster":
            names = [n for n in figs if n.startswith("missing_")]
        else:
            names = []
        for n in names:
            md.append(f"![{n}]({n})\n")
            h.append(f"<img alt='{n}' src='data:image/png;base64,{base64.b64encode(figs[n]).decode()}'>")
    if rep.notes:
        md.append("## Notes\n")
        md += [f"- {n}\n" for n in rep.notes]
        h.append("<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in rep.notes) + "</ul>")
    h.append("</body></html>")
    paths = {"markdown": out / "report.md", "html": out / "report.html"}
    paths["markdown"].write_text("\n".join(md), encoding="utf-8")
    paths["html"].write_text("\n".join(h), encoding="utf-8")
    return paths
