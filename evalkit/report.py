"""The one-page report on an eval you ran: ``evalkit report LOG...``.

:func:`report_build` takes a long table (from :func:`evalkit.log_read` or a dataset) and computes,
per task and model, what the kit teaches: accuracy with an i.i.d. and a cluster-robust interval,
the share of items answered and the accuracy that counts the missing answers as wrong, the
design effect and the effective number of items, the missing answers by reason and by cluster
with the bounds and an IPW estimate, and paired cluster-robust comparisons between the models with
the minimum difference each comparison could detect. Where the input came from an evaluation
tool's logs, it also states the tool's own headline numbers and why they differ from evalkit's.
:func:`report_write` writes it as Markdown (with PNG figures beside it) and as one self-contained
HTML page.

Every number is computed by the same evalkit functions the notebooks teach
(:func:`evalkit.mean_estimate`, :func:`evalkit.missing_bounds`, :func:`evalkit.ipw_estimate`...);
the report only assembles them. The paired comparisons use the closed form of the unweighted
CR2 sandwich and its Satterthwaite degrees of freedom, which need only each cluster's count and
sum of differences; a test checks them against :func:`evalkit.mean_estimate` on every pair. The
lesson that reads one report line by line is notebook ``09.1-your-own-eval-log-reading-a-report``
(and the two parts after it).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import os
import pathlib
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from ._checks import EvalkitWarning, check_alpha
from .clustered import Estimate, deff_empirical, icc_anova, mean_estimate
from .data import _long_validate
from .errors import EvalkitInputError, EvalkitInputTypeError
from .missing import ipw_estimate

__all__ = ["Report", "report_build", "report_write"]

_POWER = 0.8
_AUTO_TOP_K = 10
"""With more models than this and no ``top_k``/``baseline``, the comparisons are among the best ten."""

SEVERITY = {1: "left out", 2: "read with care", 3: "data", 4: "design", 5: "how it was read"}
"""Note severities, most severe first."""

_ACC_COLUMNS = ["task", "model", "n_items", "n_graded", "share_answered", "accuracy", "accuracy_missing_wrong",
                "accuracy_tool", "rank", "rank_missing_wrong", "rank_flag", "iid_low", "iid_high", "iid_se",
                "cr_low", "cr_high", "cr_se", "cr_df", "n_clusters", "g_star", "icc", "deff", "n_effective",
                "n_epoch_answers", "n_epoch_unparsable"]
_CMP_COLUMNS = ["task", "model_a", "model_b", "n_shared", "difference", "iid_low", "iid_high", "iid_se", "cr_low",
                "cr_high", "cr_se", "cr_df", "p_value", "mdd_80", "n_comparisons", "p_bonferroni"]


@dataclass
class Report:
    """What :func:`report_build` computed; every table is a DataFrame.

    Attributes
    ----------
    accuracy : one row per (task, model): counts, the share answered, the complete-case accuracy
        and the accuracy with missing answers counted as wrong, the tool's own scoring where known
        (``accuracy_tool``), both ranks and a flag where they disagree, i.i.d. and cluster-robust
        intervals, G*, ICC, design effect, effective n, and the epoch answers and unparsable ones.
    missing_by_reason : counts and shares of each missing reason per (task, model).
    missing_by_cluster : the missing rate per (task, model, cluster).
    missing_estimates : bounds, complete case, IPW and doubly robust (DR) per (task, model) with missing
        answers.
    comparisons : one row per pair of models compared within a task: paired difference, intervals,
        p-value, minimum detectable difference (80% power) and the number of comparisons made.
    tool_numbers : the evaluation tools' own headline numbers, evalkit's recomputation of each
        with the tool's rules, evalkit's complete-case accuracy, and why they differ.
    runs : one row per log file read: tool, status, samples logged and planned, scorer, cluster field.
    notes : plain-language caveats, one per task and kind, most severe first.
    notes_table : the same notes with their severity and task.
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
    tool_numbers: pd.DataFrame = field(default_factory=pd.DataFrame)
    runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    cluster_label: str = "cluster"


class _Notes:
    def __init__(self) -> None:
        self.rows: list[tuple[int, str, str]] = []

    def add(self, severity: int, task: str, text: str) -> None:
        self.rows.append((severity, task, text))

    def table(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows, columns=["severity", "task", "note"]).drop_duplicates(["task", "note"])
        df = df.sort_values(["severity", "task"], kind="stable").reset_index(drop=True)
        df.insert(1, "kind", df["severity"].map(SEVERITY))
        return df


def _nan_estimate(est: Estimate) -> Estimate:
    return Estimate(est.estimate, np.nan, np.nan, np.nan, np.nan, "not available", est.n, None)


def _mdd(se: float, df: float, alpha: float, power: float = _POWER) -> float:
    """Smallest true difference a two-sided level-``alpha`` test detects with probability ``power``."""
    if not np.isfinite(df):
        return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)
    return float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se)


def _validate(long_df: pd.DataFrame, cluster: str) -> pd.DataFrame:
    """The long table checked by :func:`evalkit.long_validate`, with ``cluster`` as the cluster column.

    Outcomes that are epoch means (fractions in [0, 1] on rows with ``n_epochs > 1``) are accepted;
    every other outcome must be 0/1.
    """
    if not isinstance(long_df, pd.DataFrame):
        raise EvalkitInputError("long_df", f"long_df must be a pandas DataFrame, got {type(long_df).__name__}")
    need = [c for c in ("model", "item", "correct", "status") if c not in long_df.columns]
    if need:
        raise EvalkitInputError("long_df", f"the table lacks columns {need}; it has {list(long_df.columns)}")
    if not isinstance(cluster, str) or cluster not in long_df.columns:
        meta = [c for c in long_df.columns if c not in ("model", "item", "correct", "status")]
        raise EvalkitInputError("cluster", f"cluster={cluster!r} is not a column of the table; the table has "
                                           f"{list(long_df.columns)} (candidate cluster columns: {meta})")
    work = long_df.copy()
    work["cluster"] = long_df[cluster]
    if "task" in work.columns:
        if work["task"].isna().any():
            raise EvalkitInputError("long_df", f"column 'task' has {int(work['task'].isna().sum())} missing values; "
                                               "name the task of every row")
        work["task"] = work["task"].astype(str)
    else:
        work["task"] = "all items"
    y = pd.to_numeric(work["correct"], errors="coerce") if work["correct"].dtype != bool else work["correct"]
    frac = pd.Series(False, index=work.index)
    if "n_epochs" in work.columns and work["correct"].dtype != bool:
        yf = y.astype(float)
        frac = (work["n_epochs"].fillna(1).astype(float) > 1) & yf.between(0, 1) & ~yf.isin([0.0, 1.0])
    check = work.copy()
    check.loc[frac, "correct"] = 0.0
    try:
        out = _long_validate(check, name="long_df")
    except EvalkitInputError:
        raise
    except (ValueError, TypeError) as exc:
        raise EvalkitInputError("long_df", f"the long table is not valid: {exc}") from None
    out.loc[frac, "correct"] = y[frac].astype(float)
    return out


def _pairs_wanted(models: list[str], acc: pd.Series, baseline: str | None, top_k: int | None) -> tuple[
        list[tuple[str, str]], str]:
    """Which pairs to compare, and a sentence saying so."""
    if baseline is not None:
        if baseline not in models:
            return [], f"the baseline {baseline!r} is not among this task's models {models[:8]}"
        return [(baseline, m) for m in models if m != baseline], f"each model against the baseline {baseline!r}"
    order = [m for m in acc.sort_values(ascending=False, kind="stable").index if m in models]
    order += [m for m in models if m not in order]
    k = top_k if top_k is not None else (len(models) if len(models) <= _AUTO_TOP_K else _AUTO_TOP_K)
    if k >= len(models):
        return list(itertools.combinations(sorted(models), 2)), "every pair of models"
    chosen = sorted(order[:max(k, 2)])
    return list(itertools.combinations(chosen, 2)), (
        f"every pair among the {len(chosen)} models with the highest complete-case accuracy (of {len(models)}; "
        "choose with --top-k or --baseline)")


def _paired_from_sums(Y: np.ndarray, codes: np.ndarray, n_clusters: int, ia: np.ndarray, ib: np.ndarray,
                      se: str, alpha: float) -> dict[str, np.ndarray]:
    """Paired differences of many model pairs at once, from cluster counts and sums.

    For the unweighted mean of ``d = y_a - y_b`` on the items both answered, CR2's adjustment is
    ``(1 - n_g/n)^{-1/2}`` on cluster ``g`` (the hat matrix of an intercept is ``1 1'/n``), so
    ``V = sum_g R_g^2 / (1 - n_g/n) / n^2`` with ``R_g`` the sum of the residuals in ``g``; the
    Bell-McCaffrey Satterthwaite df ``tr(P)^2 / ||P||_F^2`` has ``P_gh = s_g' s_h`` with
    ``s_g = a_g 1_g - n_g a_g 1 / n``, a function of the counts alone. CR1 is
    ``M/(M-1) sum_g R_g^2 / n^2`` with ``t_{M-1}``; i.i.d. is ``s^2/n`` with ``t_{n-1}``.
    """
    C = np.zeros((codes.size, n_clusters))
    C[np.arange(codes.size), codes] = 1.0
    D = Y[:, ia] - Y[:, ib]
    mask = ~np.isnan(D)
    D0 = np.where(mask, D, 0.0)
    n = mask.sum(axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        dbar = D0.sum(axis=0) / n
        E = np.where(mask, D - dbar, 0.0)
        ss = (E**2).sum(axis=0)
        ng = C.T @ mask.astype(float)                        # (M, P)
        R = C.T @ E
        present = (ng > 0).sum(axis=0)
        iid_var = ss / (n - 1) / n
        h = ng / n
        if se == "CR2":
            lam = 1.0 - h
            a2 = np.where(lam > 1e-12, 1.0 / np.where(lam > 1e-12, lam, 1.0), 0.0)
            var = (a2 * R**2).sum(axis=0) / n**2
            a = np.sqrt(a2)
            k = ng * a
            resid = a * (1.0 - h)
            diag = ng * resid**2 + (k / n) ** 2 * (n - ng)
            r = ng * resid
            off = (-(k[:, None, :] * r[None, :, :] + r[:, None, :] * k[None, :, :]) / n
                   + k[:, None, :] * k[None, :, :] * (n - ng[:, None, :] - ng[None, :, :]) / n**2)
            idx = np.arange(n_clusters)
            off[idx, idx, :] = 0.0
            df = diag.sum(axis=0) ** 2 / ((diag**2).sum(axis=0) + (off**2).sum(axis=(0, 1)))
        else:
            var = present / (present - 1) * (R**2).sum(axis=0) / n**2
            df = (present - 1).astype(float)
    return {"n": n, "diff": dbar, "iid_var": iid_var, "cr_var": var, "cr_df": df, "present": present}


def _pair_rows_reference(task: str, wide: pd.DataFrame, item_cluster: pd.Series, pairs: Sequence[tuple[str, str]],
                         se: str, alpha: float) -> list[dict[str, Any]]:
    """The paired comparisons one pair at a time through :func:`evalkit.mean_estimate` (tests, benchmark)."""
    rows = []
    for a, b in pairs:
        both = wide[[a, b]].dropna()
        cl = item_cluster.reindex(both.index).to_numpy()
        if len(both) < 2 or len(np.unique(cl)) < 2:
            continue
        d = (both[a] - both[b]).to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            iid = mean_estimate(d, se="iid", alpha=alpha, binary=False)
            cr = mean_estimate(d, cl, se=se, alpha=alpha, binary=False)  # type: ignore[arg-type]
        rows.append({"task": task, "model_a": a, "model_b": b, "n_shared": len(both), "difference": cr.estimate,
                     "iid_se": iid.se, "cr_se": cr.se, "cr_df": cr.df, "cr_low": cr.ci_low, "cr_high": cr.ci_high})
    return rows


def _interval_t(est: np.ndarray, se: np.ndarray, df: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    q = np.where(np.isfinite(df), stats.t.ppf(1 - alpha / 2, np.where(np.isfinite(df), df, 1.0)),
                 stats.norm.ppf(1 - alpha / 2))
    return est - q * se, est + q * se


_ADVICE = re.compile(r"\s*Prefer CR2 with Satterthwaite df, and report G\* next to M\.?")


def _clean(message: str, se: str) -> str:
    text = str(message)
    if se == "CR2":
        text = _ADVICE.sub("", text)
    else:
        text = _ADVICE.sub(" Prefer --se CR2 (Satterthwaite df).", text)
    # advice the command line cannot act on
    text = re.sub(r";?\s*(use )?interval='wilson'[^.;]*", "", text)
    return text.strip()


def _design(message: str) -> bool:
    return "effective number of clusters" in message or "clusters: cluster-robust intervals are unreliable" in message


def report_build(long_df: pd.DataFrame, *, cluster: str = "cluster", se: str = "CR2", alpha: float = 0.05,
                 baseline: str | None = None, top_k: int | None = None, progress: bool = False) -> Report:
    """Compute every table of the report from a long table.

    Parameters
    ----------
    long_df : DataFrame
        ``model, item, correct, status`` and the cluster column, checked by
        :func:`evalkit.long_validate` (0/1 outcomes, known statuses, one row per (model, item));
        ``correct`` may be a fraction (the mean over several epochs, with ``n_epochs > 1``) where
        ``status == "ok"``. Tasks (column ``task``) are reported separately. The notes, tool
        summaries and runs that :func:`evalkit.log_read` leaves in ``long_df.attrs`` are used.
    cluster : str
        The column to cluster on (any column: ``"category"``, a metadata field...).
    se : {"CR1", "CR2"}
        The cluster-robust kind.
    alpha : float
        1 - confidence level.
    baseline : str, optional
        Compare each model with this one only.
    top_k : int, optional
        Compare every pair among the ``top_k`` models with the highest complete-case accuracy.
        Default: every pair when a task has at most 10 models, else the best 10 (said in a note).
    progress : bool
        Show a progress bar over models.

    Returns
    -------
    Report

    Raises
    ------
    EvalkitInputError
        A table that :func:`evalkit.long_validate` refuses (outcomes other than 0/1 such as 0/100
        or -1/1, unknown statuses, duplicate rows, an outcome on a missing row), a ``cluster`` that
        is not a column (the message lists the columns), an unknown ``se``, ``alpha`` out of range.
        What cannot be estimated (a model with no graded answer, a task whose items fall in one
        cluster, a cluster with no answered item for IPW, any failure inside one task or model)
        is left out and said in :attr:`Report.notes`, not raised, so that one bad task does not
        hide the others.
    """
    check_alpha(alpha)
    if se not in ("CR1", "CR2"):
        raise EvalkitInputError("se", f"se must be 'CR1' or 'CR2', got {se!r}")
    if baseline is not None and not isinstance(baseline, str):
        raise EvalkitInputError("baseline", f"baseline must be a model name, got {baseline!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 2):
        raise EvalkitInputError("top_k", f"top_k must be an integer of at least 2, got {top_k!r}")
    df = _validate(long_df, cluster)
    attrs = long_df.attrs or {}
    notes = _Notes()
    for text in attrs.get("evalkit_notes", []):
        sev = 1 if text.startswith("file left out") else 3 if "status is" in text else 5
        notes.add(sev, "", text)
    runs = pd.DataFrame(attrs.get("evalkit_runs", []))
    label = cluster
    if cluster == "cluster" and not runs.empty and "cluster_field" in runs:
        fields = sorted(set(runs["cluster_field"].astype(str)))
        label = fields[0] if len(fields) == 1 else " / ".join(fields)
    if not df["model"].empty and "model" in long_df.columns and baseline is not None \
            and baseline not in set(df["model"]):
        raise EvalkitInputError("baseline", f"no model {baseline!r}; the models are {sorted(set(df['model']))[:20]}")

    acc_rows: list[dict[str, Any]] = []
    est_rows: list[dict[str, Any]] = []
    cmp_rows: list[dict[str, Any]] = []
    reason_rows: list[dict[str, Any]] = []
    cluster_rows: list[dict[str, Any]] = []
    tasks = sorted(df["task"].unique())
    work = [(t, m) for t in tasks for m in sorted(df.loc[df["task"] == t, "model"].unique())]
    by_task = {t: g for t, g in df.groupby("task", sort=True)}
    iterator: Iterable[tuple[str, str]] = work
    if progress and len(work) > 1:
        from tqdm.auto import tqdm
        iterator = tqdm(work, desc="report", unit="model")
    groups = {k: g for k, g in df.groupby(["task", "model"], sort=False)}
    difficulty = {t: _Difficulty(g) for t, g in by_task.items()}
    design_msgs: dict[str, list[tuple[str, str]]] = {}
    other_msgs: dict[tuple[str, str], list[str]] = {}
    for task, model in iterator:
        g = groups[(task, model)]
        try:
            _one_model(task, model, g, se, alpha, acc_rows, est_rows, reason_rows, cluster_rows, notes,
                       design_msgs, other_msgs, by_task[task], difficulty.get(task))
        except Exception as exc:  # one bad model never hides the others
            notes.add(1, task, f"{task} / {model}: left out of the report: {type(exc).__name__}: {exc}")
    for task, msgs in design_msgs.items():
        models = sorted({m for m, _ in msgs})
        g_rows = [r for r in acc_rows if r["task"] == task and np.isfinite(r["g_star"])]
        gs = [r["g_star"] for r in g_rows]
        ms = [r["n_clusters"] for r in g_rows]
        rng = f"{min(gs):.3g}" if gs and min(gs) == max(gs) else f"{min(gs):.3g} to {max(gs):.3g}" if gs else "?"
        mrng = f"{min(ms)}" if ms and min(ms) == max(ms) else f"{min(ms)} to {max(ms)}" if ms else "?"
        notes.add(4, task, f"{task}: a property of the design, for {len(models)} of "
                           f"{len(by_task[task]['model'].unique())} models: the effective number of clusters G* is "
                           f"{rng} (M = {mrng} clusters of {label!r}; column g_star). The sandwich variance rests "
                           "on the few clusters that carry the weight, so the cluster-robust intervals are to be "
                           "read as approximate" + ("" if se == "CR2" else "; --se CR2 is the safer choice"))
    for (task, text), models in other_msgs.items():
        who = models[0] if len(models) == 1 else f"{len(models)} models ({', '.join(models[:3])}" + (
            ", ...)" if len(models) > 3 else ")")
        notes.add(3, task, f"{task} / {who}: {text}")

    accuracy = pd.DataFrame(acc_rows, columns=_ACC_COLUMNS)
    _ranks(accuracy, notes)

    for task in tasks:
        try:
            _comparisons(task, by_task[task], accuracy, se, alpha, baseline, top_k, cmp_rows, notes)
        except Exception as exc:  # pragma: no cover - defensive: one task never hides the others
            notes.add(1, task, f"{task}: comparisons left out: {type(exc).__name__}: {exc}")
    comparisons = pd.DataFrame(cmp_rows, columns=_CMP_COLUMNS)
    if len(comparisons):
        comparisons["p_bonferroni"] = np.minimum(1.0, comparisons["p_value"] * comparisons["n_comparisons"])
    if accuracy.empty:
        notes.add(1, "", "no answer was graded in any task: there is no accuracy to report, only the counts of "
                         "missing answers by reason")
    tool_numbers = _tool_numbers(df, attrs.get("evalkit_tool_summaries", []), accuracy)
    nt = notes.table()
    return Report(accuracy, pd.DataFrame(reason_rows, columns=["task", "model", "status", "n", "share"]),
                  pd.DataFrame(cluster_rows, columns=["task", "model", "cluster", "n", "n_missing", "missing_rate"]),
                  pd.DataFrame(est_rows, columns=["task", "model", "estimator", "estimate", "ci_low", "ci_high",
                                                  "se", "interval"]),
                  comparisons, cluster, alpha, se, nt["note"].tolist(), tool_numbers, runs, nt, label)


def _one_model(task: str, model: str, g: pd.DataFrame, se: str, alpha: float, acc_rows: list[dict[str, Any]],
               est_rows: list[dict[str, Any]], reason_rows: list[dict[str, Any]], cluster_rows: list[dict[str, Any]],
               notes: _Notes, design_msgs: dict[str, list[tuple[str, str]]],
               other_msgs: dict[tuple[str, str], list[str]], task_df: pd.DataFrame | None = None,
               difficulty: _Difficulty | None = None) -> None:
    y = g["correct"].to_numpy(dtype=float)
    ok = (g["status"] == "ok").to_numpy()
    clus = g["cluster"].to_numpy(dtype=str)
    n_items = len(g)
    for status, n in g.loc[~ok, "status"].value_counts().sort_index().items():
        reason_rows.append({"task": task, "model": model, "status": status, "n": int(n), "share": n / n_items})
    if ok.sum() == 0:
        notes.add(2, task, f"{task} / {model}: no answer was graded ({n_items} items missing); only the trivial "
                           "bounds [0, 1] are known")
        return
    n_graded = int(ok.sum())
    n_clusters = len(np.unique(clus[ok]))
    binary = bool(np.isin(y[ok], (0.0, 1.0)).all())
    kind: Literal["t", "wilson"] = "wilson" if binary else "t"
    caught: list[warnings.WarningMessage] = []
    if n_graded < 2:
        notes.add(2, task, f"{task} / {model}: only one graded answer; no interval can be computed")
        iid = Estimate(float(y[ok][0]), np.nan, np.nan, np.nan, np.nan, "one answer", 1)
        cr, deff, icc = iid, np.nan, np.nan
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EvalkitWarning)
            # Wilson intervals on the effective sample size for 0/1 outcomes: they stay inside [0, 1]
            # and do not collapse at 0% or 100% (the t interval does both with few clusters).
            iid = mean_estimate(y[ok], se="iid", alpha=alpha, binary=binary, interval=kind)
            if n_clusters >= 2:
                cr = mean_estimate(y[ok], clus[ok], se=se, alpha=alpha, binary=binary,  # type: ignore[arg-type]
                                   interval=kind)
                all_same = bool(np.all(y[ok] == y[ok][0]))
                deff = np.nan if all_same else deff_empirical(y[ok], clus[ok])
                icc = np.nan
                if binary and not all_same and n_graded > n_clusters:
                    icc = icc_anova(y[ok], clus[ok])
            else:
                notes.add(3, task, f"{task} / {model}: the graded items fall in one cluster, so there is no "
                                   "cluster-robust interval (choose a finer --cluster); the i.i.d. one is shown")
                cr, deff, icc = _nan_estimate(iid), np.nan, np.nan
    for w in caught:
        text = _clean(str(w.message), se)
        if _design(text):
            design_msgs.setdefault(task, []).append((model, text))
        elif text:
            other_msgs.setdefault((task, text), []).append(model)
    if binary and n_graded >= 2 and np.all(y[ok] == y[ok][0]):
        other_msgs.setdefault((task, f"every graded answer is {'correct' if y[ok][0] == 1 else 'wrong'}: the "
                               "interval is the Wilson one, which does not collapse"), []).append(model)
    if not binary and np.isfinite(cr.se) and cr.se == 0:
        notes.add(2, task, f"{task} / {model}: the outcomes (epoch means) do not vary between clusters, so the "
                           "cluster-robust interval has zero width; it says nothing about sampling variability")
    p = cr.estimate
    if binary and np.isfinite(cr.se) and cr.se > 0:
        n_eff = min(float(n_graded), p * (1 - p) / cr.se**2) if 0 < p < 1 else float("nan")
    else:
        n_eff = min(float(n_graded), n_graded / deff) if np.isfinite(deff) and deff > 0 else np.nan
    if np.isfinite(deff) and deff < 1 and np.isfinite(n_eff) and n_eff >= n_graded:
        notes.add(5, task, f"{task} / {model}: the design effect is below 1 (clusters more alike than chance "
                           "would make them, or few clusters); the effective n is capped at the graded items")
    if not binary:
        lo_c, hi_c = max(0.0, cr.ci_low), min(1.0, cr.ci_high)
        lo_i, hi_i = max(0.0, iid.ci_low), min(1.0, iid.ci_high)
        if (lo_c, hi_c, lo_i, hi_i) != (cr.ci_low, cr.ci_high, iid.ci_low, iid.ci_high):
            notes.add(3, task, f"{task} / {model}: a t interval of the epoch means leaves [0, 1]; it is shown "
                               "clipped to [0, 1]")
            cr = Estimate(cr.estimate, cr.se, lo_c, hi_c, cr.df, cr.method, cr.n, cr.n_clusters,
                          cr.n_clusters_effective)
            iid = Estimate(iid.estimate, iid.se, lo_i, hi_i, iid.df, iid.method, iid.n)
    tool = g["correct_tool"].to_numpy(dtype=float) if "correct_tool" in g.columns else np.full(n_items, np.nan)
    has_tool = ~np.isnan(tool)
    n_ep = g["n_epochs"].to_numpy(dtype=float) if "n_epochs" in g.columns else np.ones(n_items)
    n_unp = g["n_parse_failure"].to_numpy(dtype=float) if "n_parse_failure" in g.columns else np.zeros(n_items)
    ep_total, ep_unp = int(np.nansum(n_ep)), int(np.nansum(n_unp))
    if np.nanmax(n_ep) > 1 and ep_unp > 0:
        partly = int(((n_unp > 0) & ok).sum())
        notes.add(3, task, f"{task} / {model}: {ep_unp} of {ep_total} epoch answers were unparsable ({partly} items "
                           "are graded on their other epochs); evalkit averages the graded epochs, Inspect's "
                           "mean reducer counts an unparsable epoch 0 (column accuracy_tool)")
    acc_rows.append({"task": task, "model": model, "n_items": n_items, "n_graded": n_graded,
                     "share_answered": n_graded / n_items, "accuracy": cr.estimate,
                     "accuracy_missing_wrong": float(np.sum(y[ok]) / n_items),
                     "accuracy_tool": float(tool[has_tool].mean()) if has_tool.any() else np.nan,
                     "iid_low": iid.ci_low, "iid_high": iid.ci_high, "iid_se": iid.se,
                     "cr_low": cr.ci_low, "cr_high": cr.ci_high, "cr_se": cr.se, "cr_df": cr.df,
                     "n_clusters": n_clusters,
                     "g_star": cr.n_clusters_effective if cr.n_clusters_effective is not None else np.nan,
                     "icc": icc, "deff": deff, "n_effective": n_eff,
                     "n_epoch_answers": ep_total, "n_epoch_unparsable": ep_unp})
    if ok.all():
        return
    # missing answers: by cluster, bounds (no clusters needed), IPW
    miss = ~ok
    codes, uniq = pd.factorize(clus, sort=True)
    size = np.bincount(codes, minlength=len(uniq))
    nmiss = np.bincount(codes, weights=miss, minlength=len(uniq)).astype(int)
    for c, s_, m_ in zip(uniq, size, nmiss, strict=True):
        cluster_rows.append({"task": task, "model": model, "cluster": c, "n": int(s_), "n_missing": int(m_),
                             "missing_rate": m_ / s_})
    if not binary:
        notes.add(3, task, f"{task} / {model}: outcomes are epoch means (fractions), so the missing-data bounds and "
                           "IPW, which need 0/1 outcomes, are not computed")
        return
    n_all_clusters = len(uniq)
    rows: list[tuple[str, Estimate, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # the design notes are said once per task above
        for name, fill in (("missing as wrong", 0.0), ("missing as right", 1.0)):
            yb = np.where(ok, y, fill)
            if n_all_clusters >= 2:
                est = mean_estimate(yb, clus, se=se, alpha=alpha, interval="wilson")  # type: ignore[arg-type]
            else:
                est = mean_estimate(yb, se="iid", alpha=alpha, interval="wilson")
            rows.append((name, est, "Wilson"))
    rows.append(("complete case", cr if n_clusters >= 2 else iid, "Wilson"))
    if n_clusters >= 2:
        answered = pd.Series(ok).groupby(clus).any()
        if answered.all():
            try:
                with warnings.catch_warnings(record=True) as caught_ipw:
                    warnings.simplefilter("always", EvalkitWarning)
                    ipw = ipw_estimate(np.where(ok, y, np.nan), clus, kind="random", se=se,  # type: ignore[arg-type]
                                       alpha=alpha)
                rows.append(("IPW, random-intercept propensity", ipw, "t"))
                for w in caught_ipw:
                    text = _clean(str(w.message), se)
                    if text and not _design(text):
                        other_msgs.setdefault((task, f"(IPW) {text}"), []).append(model)
            except (ValueError, np.linalg.LinAlgError) as exc:
                notes.add(3, task, f"{task} / {model}: IPW not computed: {exc}")
        else:
            empty = sorted(answered.index[~answered].astype(str))
            notes.add(2, task, f"{task} / {model}: clusters {empty} have no graded answer, so no weighting can "
                               "speak for them; IPW is not reported, only the bounds")
        if answered.all() and task_df is not None:
            rows += _dr_rows(task_df, task, model, g, np.where(ok, y, np.nan), clus, se, alpha, notes, difficulty)
    for name, est, ikind in rows:
        est_rows.append({"task": task, "model": model, "estimator": name, "estimate": est.estimate,
                         "ci_low": est.ci_low, "ci_high": est.ci_high, "se": est.se, "interval": ikind})


class _Difficulty:
    """Each item's sum and count of graded outcomes over all of a task's models, computed once per task.

    A model's ``acc_others`` is then ``(s - own) / (c - own_graded)``: the numbers of
    :func:`evalkit.missing_features` (the same grouped sums, the same subtraction and division, so
    the same bits) without a pass over the whole task table for every model.
    """

    def __init__(self, task_df: pd.DataFrame) -> None:
        y = task_df["correct"].to_numpy(dtype=float)
        ok = ~np.isnan(y)
        tot = pd.DataFrame({"item": task_df["item"].to_numpy(), "s": np.where(ok, y, 0.0), "c": ok.astype(float)})
        sums = tot.groupby("item", sort=False)[["s", "c"]].sum()
        self.s, self.c = sums["s"], sums["c"]
        self.n_models = int(task_df["model"].nunique())

    def acc_others(self, g: pd.DataFrame) -> np.ndarray | None:
        """``acc_others`` on the items of ``g`` (one model's rows, in order); None where :func:`missing_features`
        must decide (an item no other model answered, or an item twice in ``g``)."""
        items = g["item"].to_numpy()
        if pd.Index(items).has_duplicates:
            return None
        y = g["correct"].to_numpy(dtype=float)
        ok = ~np.isnan(y)
        s = self.s.reindex(items).to_numpy() - np.where(ok, y, 0.0)
        c = self.c.reindex(items).to_numpy() - ok.astype(float)
        if not (c > 0).all():
            return None
        return s / c


def _dr_rows(task_df: pd.DataFrame, task: str, model: Any, g: pd.DataFrame, ymiss: np.ndarray, clus: np.ndarray,
             se: str, alpha: float, notes: _Notes,
             difficulty: _Difficulty | None = None) -> list[tuple[str, Estimate, str]]:
    """The doubly robust row of one model: feature = the item's accuracy among the task's other models.

    :func:`evalkit.missing_features`' ``acc_others`` (item difficulty from the other models, never
    this model's own answers) is the one feature the report has for every eval log; logistic outcome
    and propensity models on it, cross-fitted on five folds of whole clusters
    (:func:`evalkit.missing_dr.dr_estimate`). Skipped, with a note, for a task with one model.
    ``difficulty`` (the task's item sums) gives the same feature without a pass over ``task_df``.
    """
    from .missing import missing_features
    from .missing_dr import dr_estimate

    n_models = difficulty.n_models if difficulty is not None else task_df["model"].nunique()
    if n_models < 2:
        notes.add(4, task, f"{task} / {model}: one model only, so no item difficulty from other models; "
                           "DR not computed")
        return []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EvalkitWarning)
            x = difficulty.acc_others(g) if difficulty is not None else None
            if x is None:
                x = missing_features(task_df, model=model).reindex(g["item"].to_numpy())["acc_others"].to_numpy()
            est = dr_estimate(ymiss, clus, features=x[:, None], folds=min(5, len(np.unique(clus))), seed=0,
                              se=se, alpha=alpha)  # type: ignore[arg-type]
        for w in caught:
            text = _clean(str(w.message), se)
            if text and not _design(text):
                notes.add(3, task, f"{task} / {model} (DR): {text}")
        return [("DR, difficulty from the other models", est, "t")]
    except (ValueError, np.linalg.LinAlgError) as exc:
        notes.add(3, task, f"{task} / {model}: DR not computed: {exc}")
        return []


def _ranks(accuracy: pd.DataFrame, notes: _Notes) -> None:
    """Ranks by complete-case accuracy and by missing-as-wrong; flag the models whose rank moves."""
    if accuracy.empty:
        return
    accuracy["rank"] = np.nan
    accuracy["rank_missing_wrong"] = np.nan
    accuracy["rank_flag"] = False
    for task, idx in accuracy.groupby("task").groups.items():
        sub = accuracy.loc[idx]
        r_cc = sub["accuracy"].rank(ascending=False, method="min")
        r_mw = sub["accuracy_missing_wrong"].rank(ascending=False, method="min")
        accuracy.loc[idx, "rank"] = r_cc.astype(int)
        accuracy.loc[idx, "rank_missing_wrong"] = r_mw.astype(int)
        flag = r_cc != r_mw
        accuracy.loc[idx, "rank_flag"] = flag.to_numpy()
        if flag.any() and len(sub) > 1:
            move = (r_mw - r_cc).abs()[flag].sort_values(ascending=False, kind="stable")
            worst = [f"{sub.loc[i, 'model']} #{int(r_cc[i])} -> #{int(r_mw[i])} "
                     f"({100 * sub.loc[i, 'share_answered']:.0f}% answered)" for i in move.index[:4]]
            notes.add(2, str(task), f"{task}: the ranking depends on how missing answers are counted: "
                                    f"{int(flag.sum())} of {len(sub)} models change rank between complete-case "
                                    f"accuracy and missing-as-wrong (column rank_flag), e.g. {'; '.join(worst)}")
    accuracy["rank"] = accuracy["rank"].astype("Int64")
    accuracy["rank_missing_wrong"] = accuracy["rank_missing_wrong"].astype("Int64")
    accuracy["rank_flag"] = accuracy["rank_flag"].astype(bool)


def _comparisons(task: str, tg: pd.DataFrame, accuracy: pd.DataFrame, se: str, alpha: float, baseline: str | None,
                 top_k: int | None, cmp_rows: list[dict[str, Any]], notes: _Notes) -> None:
    models = sorted(tg["model"].unique())
    if len(models) < 2:
        return
    acc = accuracy[accuracy["task"] == task].set_index("model")["accuracy"]
    pairs, how = _pairs_wanted(models, acc, baseline, top_k)
    if len(models) > 2:
        notes.add(5, task, f"{task}: the comparisons are {how}")
    sizes = tg.groupby("model").size()
    if sizes.nunique() > 1:
        notes.add(3, task, f"{task}: the models were run on different item sets ({int(sizes.min())} to "
                           f"{int(sizes.max())} items); each comparison uses the items both answered")
    graded = set(acc.index)
    keep = []
    for a, b in pairs:
        if a not in graded or b not in graded:
            notes.add(3, task, f"{task}: {a} vs {b}: one of them has no graded answer; not compared")
        else:
            keep.append((a, b))
    if not keep:
        return
    item_codes, items = pd.factorize(tg["item"], sort=True)
    model_pos = {m: i for i, m in enumerate(models)}
    Y = np.full((len(items), len(models)), np.nan)
    okr = (tg["status"] == "ok").to_numpy()
    mcodes = tg["model"].map(model_pos).to_numpy()
    Y[item_codes[okr], mcodes[okr]] = tg["correct"].to_numpy(dtype=float)[okr]
    first = pd.Series(tg["cluster"].to_numpy(dtype=str)).groupby(item_codes).first()
    ccodes, cuniq = pd.factorize(first.reindex(range(len(items))).to_numpy(), sort=True)
    ia = np.array([model_pos[a] for a, _ in keep])
    ib = np.array([model_pos[b] for _, b in keep])
    res = _paired_from_sums(Y, ccodes, len(cuniq), ia, ib, se, alpha)
    made = []
    for j, (a, b) in enumerate(keep):
        n = res["n"][j]
        if n < 2:
            notes.add(3, task, f"{task}: {a} vs {b} share fewer than two graded items; not compared")
            continue
        if res["present"][j] < 2:
            notes.add(3, task, f"{task}: {a} vs {b}: the shared items fall in one cluster; not compared")
            continue
        made.append(j)
    m = len(made)
    if not m:
        return
    sel = np.array(made)
    d = res["diff"][sel]
    iid_se, cr_se, cr_df = np.sqrt(res["iid_var"][sel]), np.sqrt(res["cr_var"][sel]), res["cr_df"][sel]
    nn = res["n"][sel]
    iid_lo, iid_hi = _interval_t(d, iid_se, nn - 1, alpha)
    cr_lo, cr_hi = _interval_t(d, cr_se, cr_df, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(cr_se > 0, d / np.where(cr_se > 0, cr_se, 1.0), np.where(d == 0, 0.0, np.inf))
    p = np.where(np.isfinite(cr_df), 2 * stats.t.sf(np.abs(t), np.where(np.isfinite(cr_df), cr_df, 1.0)),
                 2 * stats.norm.sf(np.abs(t)))
    clipped = (cr_lo < -1) | (cr_hi > 1) | (iid_lo < -1) | (iid_hi > 1)
    fin = np.isfinite(cr_df)
    dfv = np.where(fin, cr_df, 1.0)
    z = np.where(fin, stats.t.ppf(1 - alpha / 2, dfv) + stats.t.ppf(_POWER, dfv),
                 stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(_POWER))
    mdd = z * cr_se
    n_graded = accuracy[accuracy["task"] == task].set_index("model")["n_graded"]
    for k, j in enumerate(made):
        a, b = keep[j]
        if cr_se[k] == 0:
            same = "give the same answer on every item both answered" if d[k] == 0 and iid_se[k] == 0 else \
                f"differ by the same amount ({d[k]:.3g}) in every cluster"
            notes.add(3, task, f"{task}: {a} and {b} {same}: the paired interval has zero width and says nothing "
                               "about sampling variability")
        smaller = min(n_graded.get(a, nn[k]), n_graded.get(b, nn[k]))
        if nn[k] < 0.8 * smaller:
            notes.add(3, task, f"{task}: {a} vs {b} share only {int(nn[k])} graded items of {int(smaller)}: the "
                               "comparison describes that subset")
        cmp_rows.append({"task": task, "model_a": a, "model_b": b, "n_shared": int(nn[k]), "difference": d[k],
                         "iid_low": max(-1.0, iid_lo[k]), "iid_high": min(1.0, iid_hi[k]), "iid_se": iid_se[k],
                         "cr_low": max(-1.0, cr_lo[k]), "cr_high": min(1.0, cr_hi[k]), "cr_se": cr_se[k],
                         "cr_df": cr_df[k], "p_value": float(min(1.0, p[k])),
                         "mdd_80": float(mdd[k]), "n_comparisons": m})
    if clipped.any():
        notes.add(3, task, f"{task}: {int(clipped.sum())} paired intervals reach past [-1, 1] (few effective "
                           "clusters); they are shown clipped to that range")


def _tool_numbers(df: pd.DataFrame, summaries: list[dict[str, Any]], accuracy: pd.DataFrame) -> pd.DataFrame:
    """The tools' own headline numbers beside evalkit's recomputation of each and its complete-case accuracy."""
    cols = ["tool", "source", "task", "model", "scorer", "metric", "tool_value", "recomputed", "accuracy",
            "n_rows", "n_graded", "n_unparsable", "n_refused", "n_grading_failure", "n_error", "why"]
    rows = []
    for s in summaries:
        g = df[(df["source"] == s["source"]) & (df["model"] == s["model"])] if "source" in df.columns else df.iloc[:0]
        if g.empty:
            continue
        tool_col = g["correct_tool"] if "correct_tool" in g.columns else pd.Series(np.nan, index=g.index)
        recomputed = float(tool_col.mean()) if tool_col.notna().any() else np.nan
        ok = g["status"] == "ok"
        counts = g["status"].value_counts()
        unp, ref, gf, err = (int(counts.get(k, 0)) for k in ("parse_failure", "refusal", "grading_failure", "error"))
        cc = float(g.loc[ok, "correct"].mean()) if ok.any() else np.nan
        why = []
        if unp + ref + gf:
            what = ", ".join(f"{n} {w}" for n, w in ((unp, "unparsable"), (ref, "refused"),
                                                       (gf, "not graded by the grader")) if n)
            why.append(f"{what}: counted as wrong by the tool, missing here (complete case; the bounds and "
                       "IPW show what they could change)")
        if err:
            why.append(f"{err} errored: left out by both")
        if "n_epochs" in g.columns and (g["n_epochs"] > 1).any():
            why.append("epochs: the tool averages every scored epoch (unparsable = 0), evalkit the graded ones")
        if not why:
            why.append("every item graded: the numbers agree")
        rows.append({"tool": s["tool"], "source": s["source"], "task": s["task"], "model": s["model"],
                     "scorer": s.get("scorer"), "metric": s.get("metric"), "tool_value": s["value"],
                     "recomputed": recomputed, "accuracy": cc, "n_rows": len(g), "n_graded": int(ok.sum()),
                     "n_unparsable": unp, "n_refused": ref, "n_grading_failure": gf, "n_error": err,
                     "why": "; ".join(why)})
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------

def _fmt(x: Any, digits: int = 3) -> str:
    if isinstance(x, bool | np.bool_):
        return "yes" if x else ""
    if isinstance(x, float | np.floating):
        return "" if np.isnan(x) else f"{x:.{digits}f}"
    if x is pd.NA or x is None:
        return ""
    return str(x)


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_none_\n"
    head = "| " + " | ".join(df.columns) + " |\n|" + "---|" * len(df.columns) + "\n"
    body = "".join("| " + " | ".join(_fmt(v).replace("|", "/") for v in row) + " |\n"
                   for row in df.itertuples(index=False))
    return head + body


def _html_text(text: str) -> str:
    """Escape, then render the only Markdown the report's prose uses: `code`."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p><em>none</em></p>"
    head = "<tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return f"<table>{head}{body}</table>"


def _model_colours(models: Sequence[str]) -> dict[str, Any]:
    """One colour per model, the same in every figure."""
    from matplotlib import colormaps

    names = sorted(set(models))
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20" if len(names) <= 20 else "turbo"]
    n = len(names)
    return {m: cmap(i if n <= 20 else i / max(n - 1, 1)) for i, m in enumerate(names)}


def _figures(rep: Report) -> dict[str, bytes]:
    # Figure objects, not pyplot: no global backend state, so this works in a notebook and a shell alike.
    from matplotlib.figure import Figure

    figs: dict[str, bytes] = {}
    if rep.accuracy.empty:
        return figs
    colours = _model_colours(rep.accuracy["model"].tolist())
    slugs: dict[str, str] = {}
    for task in sorted(rep.accuracy["task"].unique()):
        base = _slug(str(task))
        slug = base
        i = 2
        while slug in slugs.values():
            slug, i = f"{base}_{i}", i + 1
        slugs[str(task)] = slug
    level = f"{100 * (1 - rep.alpha):.0f}%"
    for task, g in rep.accuracy.groupby("task", sort=True):
        g = g.sort_values("accuracy", kind="stable")
        fig = Figure(figsize=(7.5, 0.32 * len(g) + 1.8))
        ax = fig.subplots()
        ypos = np.arange(len(g))
        for yv, (_, r) in zip(ypos, g.iterrows(), strict=True):
            c = colours[r["model"]]
            ax.plot([r["iid_low"], r["iid_high"]], [yv + 0.18] * 2, color="0.6", lw=1.5)
            ax.plot([r["cr_low"], r["cr_high"]], [yv - 0.05] * 2, color=c, lw=3.5, solid_capstyle="butt")
            ax.plot([r["accuracy"]], [yv], "o", color=c, ms=5)
            ax.plot([r["accuracy_missing_wrong"]], [yv], "x", color="k", ms=5)
        ax.set_yticks(ypos, g["model"].tolist(), fontsize=8 if len(g) <= 30 else 6)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel("accuracy (share of graded items correct)")
        ax.set_title(f"{task!s}: accuracy, {level} intervals (clusters: {rep.cluster_label})", fontsize=10)
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color="0.4", lw=3.5, label=f"cluster-robust ({rep.se}), model's colour"),
                   Line2D([], [], color="0.6", lw=1.5, label="i.i.d."),
                   Line2D([], [], color="k", marker="x", ls="", label="missing counted as wrong")]
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        figs[f"accuracy_{slugs[str(task)]}.png"] = _png(fig)
    if not rep.missing_by_cluster.empty:
        for task, g in rep.missing_by_cluster.groupby("task", sort=True):
            wide = g.pivot_table(index="cluster", columns="model", values="missing_rate")
            if wide.shape[1] <= 8:
                fig = Figure(figsize=(7.5, 0.3 * wide.size / max(wide.shape[1], 1) * wide.shape[1] ** 0.5 + 1.8))
                ax = fig.subplots()
                wide.plot.barh(ax=ax, width=0.8, color=[colours[m] for m in wide.columns])
                ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False, title="model")
                ax.set_xlabel("share of items with no graded answer")
            else:
                fig = Figure(figsize=(min(3 + 0.18 * wide.shape[1], 20), 0.3 * len(wide) + 2.5))
                ax = fig.subplots()
                im = ax.imshow(wide.to_numpy(), aspect="auto", cmap="Greys", vmin=0, vmax=1)
                ax.set_xticks(range(wide.shape[1]), wide.columns, rotation=90, fontsize=6)
                ax.set_yticks(range(len(wide)), wide.index, fontsize=7)
                fig.colorbar(im, ax=ax, label="share of items with no graded answer")
                ax.set_xlabel("model")
            ax.set_ylabel(rep.cluster_label)
            ax.set_title(f"{task!s}: missing answers by {rep.cluster_label}", fontsize=10)
            figs[f"missing_{slugs.get(str(task), _slug(str(task)))}.png"] = _png(fig)
    return figs


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)[:60]


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _sections(rep: Report) -> list[tuple[str, str, pd.DataFrame]]:
    level = f"{100 * (1 - rep.alpha):.0f}%"
    acc_cols = ["task", "model", "n_items", "n_graded", "share_answered", "accuracy", "accuracy_missing_wrong",
                "rank", "rank_missing_wrong", "rank_flag", "cr_low", "cr_high", "cr_se", "cr_df", "n_clusters",
                "g_star", "iid_low", "iid_high", "deff", "n_effective"]
    if rep.accuracy["accuracy_tool"].notna().any():
        acc_cols.insert(7, "accuracy_tool")
    if (rep.accuracy["n_epoch_answers"] > rep.accuracy["n_items"]).any():
        acc_cols += ["n_epoch_answers", "n_epoch_unparsable"]
    acc = rep.accuracy[acc_cols]
    cmp_cols = ["task", "model_a", "model_b", "n_shared", "difference", "cr_low", "cr_high", "cr_se", "p_value",
                "p_bonferroni", "mdd_80", "n_comparisons"]
    out = []
    if rep.accuracy.empty:
        out.append(("Accuracy", "No answer was graded in any task, so there is no accuracy to report. The missing "
                    "answers by reason below say why.", acc))
    else:
        out.append(("Accuracy", f"`accuracy` is over the graded items (complete case), with its {level} "
                    f"cluster-robust interval ({rep.se}, clusters = `{rep.cluster_label}`, `cr_df` degrees of "
                    f"freedom, `g_star` the effective number of clusters G*) and the {level} i.i.d. interval. "
                    "`share_answered` is the share of items with a graded answer and `accuracy_missing_wrong` the "
                    "accuracy when every missing answer counts as wrong; `rank` and `rank_missing_wrong` rank the "
                    "models by each, and `rank_flag` marks a model whose rank differs. "
                    "`accuracy_tool` is the evaluation tool's own scoring (unparsable as wrong, errored left out, "
                    "Inspect's mean over epochs). For 0/1 outcomes the intervals are Wilson intervals on the "
                    "effective sample size `n_effective` (at most the graded items), which stay inside [0, 1]; "
                    "for epoch means (fractions), t intervals. `deff` is the empirical design effect. Trust the "
                    "cluster-robust interval, not the i.i.d. one, whenever `deff` is clearly above 1; with few "
                    "effective clusters neither is reliable.", acc))
    if not rep.tool_numbers.empty:
        out.append(("The tools' own numbers", "The headline number each evaluation tool wrote in its log "
                    "(`tool_value`), evalkit's recomputation of it from the samples with the tool's rules "
                    "(`recomputed`), and evalkit's complete-case `accuracy`; `why` says where they differ.",
                    rep.tool_numbers))
    if not rep.runs.empty:
        keep = [c for c in ("tool", "source", "task", "model", "status", "samples_logged", "samples_planned",
                            "epochs", "scorer", "cluster_field") if c in rep.runs.columns]
        out.append(("What was read", "One row per log file: the run's status, the samples logged and planned, the "
                    "scorer (or metric and filter) and the field the clusters come from.", rep.runs[keep]))
    out += [
        ("Missing answers by reason", "Every item without a graded answer keeps its reason (evalkit statuses; "
         "`grading_failure` is the grader's failure, not the model's).", rep.missing_by_reason),
        ("Missing answers by cluster", "Where missing answers concentrate in some clusters, the complete-case "
         "accuracy describes the other clusters more than these.", rep.missing_by_cluster),
        ("What the missing answers could change", "`missing as wrong` and `missing as right` bound the full-data "
         "accuracy without any assumption (Wilson intervals, as for `complete case`, whose effective n is capped at "
         "the number of items, so that a cluster-robust variance below the i.i.d. one gives the i.i.d. width); "
         "IPW reweights the answered items with a random-intercept propensity by cluster (valid when, within a "
         "cluster, answering does not depend on correctness; a t interval with its cluster-robust SE as it is).",
         rep.missing_estimates),
        ("Paired comparisons", f"Difference A - B on the items both models answered, with its {level} "
         f"cluster-robust paired interval (clipped to [-1, 1]). `p_bonferroni` multiplies by the number of "
         f"comparisons made in the task (`n_comparisons`). `mdd_80` is the smallest true difference this "
         f"comparison's design would detect with 80% power at level {rep.alpha}, computed from its standard error "
         f"alone: compare it with the smallest difference that matters, decided before looking at the results "
         f"(a non-significant comparison cannot rule out true differences below `mdd_80`).",
         rep.comparisons[cmp_cols] if not rep.comparisons.empty else rep.comparisons),
    ]
    return out


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
    if not isinstance(rep, Report):
        raise EvalkitInputTypeError("rep", f"rep must be a Report (from report_build), got {type(rep).__name__}")
    if not isinstance(title, str):
        raise EvalkitInputTypeError("title", f"title must be a str, got {type(title).__name__}")
    out = pathlib.Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a folder; give a folder for the report")
    figs = _figures(rep)           # everything is rendered before the folder is made
    sections = _sections(rep)
    md = [f"# {title}\n"]
    h = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
         "<style>body{font-family:sans-serif;max-width:1300px;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ccc;padding:2px 6px;"
         "text-align:right}th{background:#f3f3f3}code{background:#f3f3f3}</style></head><body>",
         f"<h1>{html.escape(title)}</h1>"]
    important = [n for n, s in zip(rep.notes, rep.notes_table.get("severity", []), strict=False) if s <= 2]
    if important:
        md += ["## Read first\n"] + [f"- {n}\n" for n in important]
        h.append("<h2>Read first</h2><ul>" + "".join(f"<li>{_html_text(n)}</li>" for n in important) + "</ul>")
    for heading, text, table in sections:
        md += [f"## {heading}\n", text + "\n", _md_table(table)]
        h += [f"<h2>{html.escape(heading)}</h2>", f"<p>{_html_text(text)}</p>", _html_table(table)]
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
        h.append("<h2>Notes</h2>")
        nt = rep.notes_table if not rep.notes_table.empty else pd.DataFrame(
            {"severity": 3, "kind": "data", "note": rep.notes})
        for sev, g in nt.groupby("severity", sort=True):
            kind = SEVERITY.get(int(str(sev)), str(sev))
            md.append(f"### {kind}\n")
            md += [f"- {n}\n" for n in g["note"]]
            h.append(f"<h3>{html.escape(kind)}</h3><ul>" + "".join(f"<li>{_html_text(n)}</li>" for n in g["note"])
                     + "</ul>")
    h.append("</body></html>")
    out.mkdir(parents=True, exist_ok=True)
    for name, data in figs.items():
        (out / name).write_bytes(data)
    paths = {"markdown": out / "report.md", "html": out / "report.html"}
    paths["markdown"].write_text("\n".join(md), encoding="utf-8")
    paths["html"].write_text("\n".join(h), encoding="utf-8")
    return paths


