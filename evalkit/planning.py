"""Planning an evaluation: how many questions, clusters and answers per question you need.

The first question of anyone who runs evals: *can this benchmark tell my two models apart?* The
answer is a variance calculation (Miller, "Adding Error Bars to Evals", arXiv:2411.00640, 2024).
For the mean score over ``n`` questions, each answered ``K`` times,

.. math::

    \\operatorname{Var}(\\bar s) = \\frac{\\mathrm{deff}}{n}
        \\Big(\\sigma^2_{\\text{between}} + \\frac{\\sigma^2_{\\text{within}}}{K}\\Big),
    \\qquad \\mathrm{deff} = 1 + (m_w - 1)\\,\\rho,\\quad m_w = \\frac{\\sum_g n_g^2}{n},

where :math:`\\sigma^2_{\\text{between}}` is the variance across questions of the *true* per-question
score (its probability of being right), :math:`\\sigma^2_{\\text{within}}` the average variance of
one answer around it (sampling noise, which resampling averages away), and ``deff`` the design
effect of clusters of sizes :math:`n_g` with intra-class correlation :math:`\\rho`. For a paired
comparison of two models the same formula holds for the per-question *difference*; its between
part is :math:`\\sigma^2_A + \\sigma^2_B - 2\\,\\mathrm{Cov}_{AB}`, which is why pairing helps when two
models find the same questions hard, and an unpaired comparison drops the covariance term.

With the standard error :math:`SE`, a two-sided level-``alpha`` test of a true difference
``delta`` has power :math:`P(|T| > t_{1-\\alpha/2})` with :math:`T` non-central ``t`` (normal when
the degrees of freedom are infinite), the minimum detectable difference is
:math:`(t_{1-\\alpha/2} + t_{\\text{power}})\\,SE`, and the sample size solves the same equation for
``n``. :func:`plan_variance` estimates the components from a long table (several answers per
item, e.g. ``log_read(..., epochs="all")``, are needed to separate within from between);
:class:`PlanVariance` can also be set by hand. Notebooks ``01.1-detectable-differences-and-sample-sizes`` and
``01.2-resampling-and-option-probabilities`` teach it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import optimize, stats

from ._checks import _real, check_alpha, check_positive, check_range
from .clustered import icc_anova, interval_wilson
from .errors import EvalkitInputError

__all__ = [
    "PlanVariance",
    "plan_variance",
    "plan_se",
    "plan_power",
    "plan_mdd",
    "plan_sample_size",
    "plan_resample_gain",
    "plan_zero_failures",
    "plan_power_plot",
]


@dataclass(frozen=True)
class PlanVariance:
    """Variance components of one model's per-question score, or of two models' difference.

    Attributes
    ----------
    var_between : float
        Variance across questions of the true per-question score (or score difference).
    var_within : float
        Mean variance of a single answer around its question's true score (for a difference: the
        two models' within variances added). NaN when the data had one answer per question, so
        that only ``var_between + var_within`` (``var_total``) is known.
    icc : float
        Intra-class correlation, within clusters, of the score (or difference) of a question
        answered once. The cluster-level variance ``icc * var_total_k1`` does not shrink with more
        answers per question, so the ICC of a ``k``-answer average is larger:
        :meth:`icc_at` gives it. The shared cluster effect is part of the variance of the true
        per-question scores, so ``icc * var_total_k1`` can be at most ``var_between``.
    var_total_k1 : float
        ``var_between + var_within``: the variance of one question answered once. Known even
        when the two parts are not.
    n_items : int or None
        Number of questions the estimate came from (None when set by hand).
    kind : str
        ``"single"``, ``"paired"`` or ``"unpaired"``.
    """

    var_between: float
    var_within: float
    icc: float = 0.0
    var_total_k1: float = float("nan")
    n_items: int | None = None
    kind: str = "single"

    def __post_init__(self) -> None:
        if not (self.var_between >= 0):
            raise EvalkitInputError("var_between", f"var_between must be >= 0, got {self.var_between}")
        if not (np.isnan(self.var_within) or self.var_within >= 0):
            raise EvalkitInputError(
                "var_within", f"var_within must be >= 0 (or NaN when unknown), got {self.var_within}")
        if not -1 < self.icc < 1:
            raise EvalkitInputError("icc", f"icc must lie in (-1, 1), got {self.icc}")
        if np.isnan(self.var_total_k1):
            object.__setattr__(self, "var_total_k1", self.var_between + self.var_within)
        cluster_part = self.icc * self.var_total_k1
        if not np.isnan(self.var_within) and cluster_part > self.var_between * (1 + 1e-9) + 1e-15:
            raise EvalkitInputError(
                "icc", f"icc {self.icc:g} puts a cluster part icc * var_total_k1 = {cluster_part:.4g} above "
                f"var_between = {self.var_between:.4g}: the clusters' shared effect is part of the variance of the "
                f"true per-question scores, so icc can be at most var_between / var_total_k1 = "
                f"{self.var_between / self.var_total_k1:.3f}")

    def icc_at(self, k: float = 1) -> float:
        """ICC of a question's score averaged over ``k`` answers."""
        return float(self.icc * self.var_total_k1 / self.per_question(k)) if self.icc else 0.0

    def per_question(self, k: float = 1) -> float:
        """Variance of one question's score averaged over ``k`` answers (``math.inf``: no sampling noise)."""
        if not (k == math.inf or (k >= 1 and int(k) == k)):
            raise EvalkitInputError("k", f"k (answers per question) must be a positive integer or math.inf, got {k}")
        if k == 1 and not np.isnan(self.var_total_k1):
            return float(self.var_total_k1)
        if np.isnan(self.var_within):
            raise EvalkitInputError("k", "var_within is unknown (one answer per question in the data): the effect of "
                             "k > 1 answers cannot be computed; estimate it from repeated answers")
        return float(self.var_between + self.var_within / k)


def _design_effect(n: float, icc: float, cluster_sizes: npt.ArrayLike | None, cluster_size: float | None) -> float:
    if cluster_sizes is not None:
        sizes = np.asarray(cluster_sizes, dtype=float)
        if sizes.ndim != 1 or sizes.size < 2 or not np.isfinite(sizes).all() or (sizes < 1).any():
            raise EvalkitInputError("cluster_sizes", "cluster_sizes must list at least two cluster sizes, each >= 1")
        if abs(float(sizes.sum()) - float(n)) > 1e-9 * max(1.0, float(n)):
            raise EvalkitInputError(
                "cluster_sizes", f"cluster_sizes sum to {sizes.sum():g} but n is {n:g}; they are the sizes of the "
                "clusters of the n questions")
        m_w = float((sizes**2).sum() / sizes.sum())
    elif cluster_size is not None:
        if cluster_size < 1:
            raise EvalkitInputError("cluster_size", f"cluster_size must be >= 1, got {cluster_size}")
        m_w = float(cluster_size)
    else:
        m_w = 1.0
    return 1.0 + (m_w - 1.0) * icc


def plan_se(var: PlanVariance, n: float, *, k: int = 1, cluster_size: float | None = None,
            cluster_sizes: npt.ArrayLike | None = None) -> float:
    """Standard error of a mean score (or difference) over ``n`` questions.

    ``sqrt(deff * (var_between + var_within / k) / n)`` with ``deff = 1 + (m_w - 1) icc`` and
    ``m_w`` the size-weighted mean cluster size (``cluster_size`` for equal clusters, or computed
    from ``cluster_sizes``; no clustering when neither is given). With ``cluster_sizes`` their sum
    should be ``n``.

    Examples
    --------
    >>> v = PlanVariance(var_between=0.16, var_within=0.09)
    >>> round(plan_se(v, 400), 4), round(plan_se(v, 400, k=4), 4)
    (0.025, 0.0214)
    """
    n = check_positive(n, "n")
    if n <= 1:
        raise EvalkitInputError("n", f"n (questions) must be > 1, got {n}")
    deff = _design_effect(n, var.icc_at(k), cluster_sizes, cluster_size)
    return math.sqrt(deff * var.per_question(k) / n)


def plan_power(delta: float, se: float, *, df: float = math.inf, alpha: float = 0.05) -> float:
    """Power of a two-sided level-``alpha`` test of a true difference ``delta`` with standard error ``se``.

    ``P(|T| > t_{1-alpha/2, df})`` with ``T`` non-central ``t`` (``df`` degrees of freedom,
    non-centrality ``delta/se``); normal when ``df`` is infinite. With clusters use
    ``df = M - 1`` (``M`` clusters), as the cluster-robust test does.

    Examples
    --------
    >>> round(plan_power(0.05, 0.0179), 3)
    0.798
    """
    check_alpha(alpha)
    delta = _real(delta, "delta")
    se = _real(se, "se")
    if not (se > 0 and math.isfinite(se)):
        raise EvalkitInputError("se", f"se must be positive and finite, got {se}")
    df = check_positive(df, "df", allow_inf=True)
    if not math.isfinite(delta):
        raise EvalkitInputError("delta", f"delta must be a finite difference, got {delta}")
    if not se > 0:
        raise EvalkitInputError("se", f"se must be positive, got {se}")
    if not df > 0:
        raise EvalkitInputError("df", f"df must be positive, got {df}")
    nc = delta / se
    if math.isinf(df):
        z = stats.norm.ppf(1 - alpha / 2)
        return float(stats.norm.sf(z - nc) + stats.norm.cdf(-z - nc))
    t = stats.t.ppf(1 - alpha / 2, df)
    power = float(stats.nct.sf(t, df, nc) + stats.nct.cdf(-t, df, nc))
    if not math.isfinite(power):  # scipy's nct fails far in the tail, where the power is 0 or 1 anyway
        power = float(stats.norm.sf(t - abs(nc)))
    return min(max(power, 0.0), 1.0)


def plan_mdd(se: float, *, df: float = math.inf, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable difference: the ``delta`` with :func:`plan_power` equal to ``power``.

    Solved exactly (non-central ``t``); for infinite ``df`` it is ``(z_{1-alpha/2} + z_power) se``,
    the familiar ``2.8 se`` at ``alpha = 0.05`` and 80% power.

    Examples
    --------
    >>> round(plan_mdd(0.01), 4)
    0.028
    """
    check_alpha(alpha)
    power = check_range(power, "power", 0.0, 1.0, closed="neither")
    se = _real(se, "se")
    if not (se > 0 and math.isfinite(se)):
        raise EvalkitInputError("se", f"se must be positive and finite, got {se}")
    df = check_positive(df, "df", allow_inf=True)
    if power <= alpha:
        raise EvalkitInputError("power", f"power={power} must exceed alpha={alpha} (the power at a difference of 0)")
    if math.isinf(df):
        return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * se)
    hi = (stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(power, df)) * se
    while plan_power(hi, se, df=df, alpha=alpha) < power:
        hi *= 2
    return float(optimize.brentq(lambda d: plan_power(d, se, df=df, alpha=alpha) - power, 0.0, hi, xtol=1e-12 * se))


def plan_sample_size(delta: float, var: PlanVariance, *, k: int = 1, cluster_size: float | None = None,
                     alpha: float = 0.05, power: float = 0.8) -> dict[str, float]:
    """Questions (and clusters) needed to detect a true difference ``delta`` with the given power.

    Without clusters the test is a ``z`` test; with clusters of ``cluster_size`` questions the
    number of clusters ``M`` is the unknown and the test uses ``t_{M-1}``.

    Returns
    -------
    dict
        ``n_questions`` and, with clusters, ``n_clusters`` (both rounded up), the achieved
        ``power``, and ``deff``.

    Examples
    --------
    >>> v = PlanVariance(var_between=0.2, var_within=0.0)
    >>> plan_sample_size(0.05, v)["n_questions"]
    628.0
    """
    check_alpha(alpha)
    delta = check_positive(delta, "delta")
    power = check_range(power, "power", 0.0, 1.0, closed="neither")
    v1 = var.per_question(k)
    if not v1 > 0:
        raise EvalkitInputError("var", "the per-question variance is 0: any number of questions detects any "
                                       "difference, so there is no sample size to plan")
    if cluster_size is None:
        z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
        n = math.ceil(z**2 * v1 / delta**2)
        return {"n_questions": float(n), "power": plan_power(delta, math.sqrt(v1 / n), alpha=alpha), "deff": 1.0}
    deff = _design_effect(0, var.icc_at(k), None, cluster_size)
    def achieved(m: int) -> float:
        return plan_power(delta, math.sqrt(deff * v1 / (m * cluster_size)), df=m - 1, alpha=alpha)

    hi = 2
    while achieved(hi) < power:  # power grows with the number of clusters: double, then bisect
        if hi > 10**7:
            raise ValueError("more than ten million clusters needed: the difference is too small for this design")
        hi *= 2
    lo = max(hi // 2, 1)  # achieved(lo) < power, or lo == 1 (no test with one cluster)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if achieved(mid) >= power else (mid, hi)
    m = hi
    return {"n_questions": float(m * cluster_size), "n_clusters": float(m), "power": achieved(m), "deff": deff}


def plan_resample_gain(var: PlanVariance, k: float, *, cluster_size: float | None = None,
                       cluster_sizes: npt.ArrayLike | None = None) -> float:
    """How many questions one question answered ``k`` times is worth, the cluster part included.

    The ratio of the variances of the mean score with one and with ``k`` answers per question,
    ``deff_1 * per_question(1) / (deff_k * per_question(k))``: answering ``n`` questions ``k`` times
    each is as precise as ``n * gain`` questions answered once in the same design. Per question the
    variance is ``per_question(k) + (m_w - 1) * icc * var_total_k1``; resampling shrinks only the
    within part of ``per_question``, never the cluster part ``icc * var_total_k1`` (the clusters'
    shared difficulty), so with clusters the gain is smaller and bounded by
    ``(V_1 + c) / (var_between + c)`` with ``c = (m_w - 1) icc var_total_k1``. Without clusters
    (``var.icc == 0``) it is ``1 + var_within / var_between`` at ``k = math.inf``, what scoring
    with the probability of the right answer (instead of one sampled 0/1 answer) buys.

    Paper: [MILLER] (section 3.1, resampling), with the design effect of clustered questions.

    Parameters
    ----------
    var : PlanVariance
    k : int or math.inf
        Answers per question.
    cluster_size, cluster_sizes
        The design's cluster size (equal clusters) or the list of sizes, as in :func:`plan_se`.
        Required when ``var.icc`` is not 0: the gain then depends on the cluster size.

    Raises
    ------
    ValueError
        ``var.icc != 0`` and no cluster size given; an invalid ``k``.

    Examples
    --------
    >>> round(plan_resample_gain(PlanVariance(var_between=0.15, var_within=0.09), 4), 3)
    1.391
    >>> v = PlanVariance(var_between=0.15, var_within=0.09, icc=0.05)
    >>> round(plan_resample_gain(v, 4, cluster_size=25), 3)
    1.147
    """
    if var.icc != 0 and cluster_size is None and cluster_sizes is None:
        raise EvalkitInputError("cluster_size", "var has a cluster ICC: pass cluster_size= (or cluster_sizes=), "
                                "because resampling does not shrink the cluster part and the gain depends on "
                                "the cluster size")
    n_q = float(np.sum(cluster_sizes)) if cluster_sizes is not None else 0.0
    v1 = _design_effect(n_q, var.icc_at(1), cluster_sizes, cluster_size) * var.per_question(1)
    vk = _design_effect(n_q, var.icc_at(k), cluster_sizes, cluster_size) * var.per_question(k)
    return v1 / vk


def plan_zero_failures(n: float, *, deff: float = 1.0, alpha: float = 0.05) -> dict[str, float]:
    """What ``n`` questions all answered correctly (or all wrong) say about the error rate.

    With no failure observed the point estimate is 0 and the Wald interval collapses. Returned:
    the "rule of three" one-sided ``1 - alpha`` upper bound ``-log(alpha) / n_eff`` (3/n at 95%),
    the exact (Clopper–Pearson) one-sided bound ``1 - alpha^(1/n_eff)``, and the two-sided Wilson
    upper limit of :func:`evalkit.interval_wilson`, all on the effective sample size
    ``n_eff = n / deff`` so that clustered questions count for what they are worth. For "all
    wrong", the same numbers bound the accuracy.

    Examples
    --------
    >>> r = plan_zero_failures(300)
    >>> round(r["rule_of_three"], 4), round(r["exact_upper"], 4)
    (0.01, 0.0099)
    """
    check_alpha(alpha)
    n = check_positive(n, "n")
    deff = check_positive(deff, "deff")
    if not n > 0 or not deff >= 1e-12:
        raise EvalkitInputError("n", f"n and deff must be positive, got n={n}, deff={deff}")
    n = check_positive(n, "n")
    deff = check_positive(deff, "deff")
    if n < 1:
        raise EvalkitInputError("n", f"n is a number of questions and must be >= 1, got {n}")
    n_eff = n / deff
    return {"n_eff": n_eff, "rule_of_three": -math.log(alpha) / n_eff,
            "exact_upper": 1 - alpha ** (1 / n_eff), "wilson_upper": interval_wilson(0.0, n_eff, alpha=alpha)[1]}


def _item_stats(long_df: pd.DataFrame, model: str) -> pd.DataFrame:
    rows = long_df[(long_df["model"] == model) & (long_df["status"] == "ok")]
    if rows.empty:
        raise EvalkitInputError("model", f"model {model!r} has no graded answer in the table")
    g = rows.groupby("item", sort=True)["correct"]
    return pd.DataFrame({"mean": g.mean(), "var": g.var(ddof=1), "k": g.size()})


def plan_variance(long_df: pd.DataFrame, models: str | Sequence[str] | None = None, *,
                  cluster: str = "cluster", paired: bool = True) -> PlanVariance:
    """Estimate the variance components from a long table.

    Parameters
    ----------
    long_df : DataFrame
        ``model, item, correct, status`` and ``cluster``; several rows per (model, item) are
        several answers to one question (as ``log_read(..., epochs="all")`` gives).
    models : str or two str, optional
        One model (its score) or two (their difference); default: the only model.
    cluster : str
        Column of cluster labels (for the ICC).
    paired : bool
        For two models: the paired difference (on questions both answered) or, with False, the
        unpaired comparison (variances added, covariance ignored).

    Returns
    -------
    PlanVariance
        ``var_within`` is the mean per-question sample variance of the answers (``ddof = 1``),
        ``var_between`` the variance of the per-question means minus the part of it that is
        sampling noise (``mean(var / k)``), floored at 0. With one answer per question only
        ``var_total_k1`` is estimated.

    Raises
    ------
    ValueError
        Unknown model, missing columns, fewer than two questions or clusters.

    Examples
    --------
    >>> import evalkit as ek
    >>> sim = ek.simulate_paired(n_clusters=40, cluster_size=25, k=4, rng=1)
    >>> v = ek.plan_variance(sim, ["A", "B"])
    >>> v.kind, v.n_items
    ('paired', 1000)
    """
    if not isinstance(long_df, pd.DataFrame):
        raise EvalkitInputError("long_df", f"long_df must be a long table (DataFrame), got {type(long_df).__name__}")
    if models is not None and not isinstance(models, str) and (
            not isinstance(models, Sequence) or not all(isinstance(m, str) for m in models)):
        raise EvalkitInputError("models", f"models must be a model name or a list of one or two names, got {models!r}")
    need = [c for c in ("model", "item", "correct", "status", cluster) if c not in long_df.columns]
    if need:
        raise EvalkitInputError("df", f"the long table lacks columns {need}")
    scores = pd.to_numeric(long_df["correct"], errors="coerce")
    if ((scores < 0) | (scores > 1)).any():
        raise EvalkitInputError(
            "long_df", f"long_df['correct'] must hold scores in [0, 1]; found values in [{scores.min():g}, "
            f"{scores.max():g}] (divide percentages by 100)")
    present = sorted(long_df["model"].astype(str).unique())
    if models is None:
        if len(present) != 1:
            raise EvalkitInputError("models", f"the table has {len(present)} models {present[:5]}; name one or two")
        models = [present[0]]
    elif isinstance(models, str):
        models = [models]
    models = [str(m) for m in models]
    unknown = [m for m in models if m not in present]
    if unknown or len(models) not in (1, 2):
        raise EvalkitInputError("models", f"give one or two models among {present[:10]}; unknown: {unknown}")
    clusters = long_df.drop_duplicates("item").set_index("item")[cluster].astype(str)
    stats_ = [_item_stats(long_df, m) for m in models]
    if len(models) == 1:
        s = stats_[0]
        score, noise, within = s["mean"], s["var"] / s["k"], s["var"]
        kind = "single"
    elif paired:
        a, b = stats_[0].align(stats_[1], join="inner", axis=0)
        if len(a) < 2:
            raise EvalkitInputError("models", "the two models share fewer than two graded questions")
        score = a["mean"] - b["mean"]
        noise = a["var"] / a["k"] + b["var"] / b["k"]
        within = a["var"] + b["var"]
        kind = "paired"
    else:
        parts = [plan_variance(long_df, m, cluster=cluster) for m in models]
        vb = sum(p.var_between for p in parts)
        vw = sum(p.var_within for p in parts)
        tot = sum(p.var_total_k1 for p in parts)
        icc = float(sum(p.icc * p.var_total_k1 for p in parts) / tot) if tot > 0 else 0.0
        return PlanVariance(vb, vw, icc, tot, min(p.n_items or 0 for p in parts), "unpaired")
    if len(score) < 2:
        raise EvalkitInputError("df", "fewer than two graded questions")
    cl = clusters.reindex(score.index).to_numpy()
    if len(np.unique(cl)) < 2:
        raise EvalkitInputError(
            "cluster", f"the questions fall in one cluster of {cluster!r}; the ICC needs at least two")
    total = float(score.var(ddof=1))
    repeated = bool(within.notna().any())
    # The cluster-level variance (ANOVA ICC of the observed per-question scores times their
    # variance) does not shrink with more answers; the ICC is stated for one answer per question.
    var_cluster = float(np.clip(icc_anova(score.to_numpy(), cl), 0.0, 0.99)) * total
    if not repeated:
        # One answer per question: between and within cannot be told apart.
        return PlanVariance(total, float("nan"), var_cluster / total if total > 0 else 0.0, total, len(score), kind)
    mean_noise = float(noise.mean(skipna=True))
    var_within = float(within.mean(skipna=True))
    var_between = max(total - mean_noise, var_cluster)
    total_k1 = var_between + var_within
    return PlanVariance(var_between, var_within, var_cluster / total_k1 if total_k1 > 0 else 0.0, total_k1,
                        len(score), kind)


def plan_power_plot(*, delta: float = 0.03, var_between: float = 0.15, var_within: float = 0.08, icc: float = 0.05,
                    cluster_size: int = 20, k: int = 1, power: float = 0.8, alpha: float = 0.05,
                    n_max: int | None = None, ax: Any = None) -> Any:
    """Power against the number of questions, with and without clustering, one vs ``k`` answers.

    The pure function behind notebook 01.2's widget: four curves (unclustered/clustered x 1/``k``
    answers per question) for a paired comparison with the given variance components, the
    target ``power`` as a line, and the number of questions each design needs in the legend.
    Closed forms only, so one redraw takes milliseconds. ``icc`` is the ICC of a question answered
    once (the ICC of a ``k``-answer average is larger: :meth:`PlanVariance.icc_at`). The x-axis runs to
    ``n_max`` questions, by default twice the largest number any of the four designs needs, so that
    every curve reaches the target.

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        ``icc * (var_between + var_within) > var_between``: the cluster part is part of the
        between-question variance, so no design has such components (:class:`PlanVariance`).
    """
    from matplotlib.figure import Figure

    from .plots import PALETTE

    if ax is None:
        ax = Figure(figsize=(8, 4.5)).subplots()
    var = PlanVariance(var_between=var_between, var_within=var_within, icc=icc)
    needs = {(kk, m): plan_sample_size(delta, var, k=kk, cluster_size=m, alpha=alpha, power=power)["n_questions"]
             for kk in (1, k) for m in (None, cluster_size)}
    n_hi = float(n_max) if n_max is not None else 2.0 * max(needs.values())
    ns = np.unique(np.geomspace(max(2 * cluster_size, 20), max(n_hi, 4.0 * cluster_size), 160).astype(int))
    designs = [("1 answer, no clusters", 1, None, PALETTE["iid"], "--"),
               ("1 answer, clusters", 1, cluster_size, PALETTE["iid"], "-"),
               (f"{k} answers, no clusters", k, None, PALETTE["cluster"], "--"),
               (f"{k} answers, clusters", k, cluster_size, PALETTE["cluster"], "-")]
    for label, kk, m, colour, style in designs:
        if kk == k and k == 1 and label.startswith(f"{k} answers"):
            continue  # identical to the 1-answer curves
        pw = [plan_power(delta, plan_se(var, n, k=kk, cluster_size=m),
                         df=(n / m - 1) if m else math.inf, alpha=alpha) for n in ns]
        need = needs[(kk, m)]
        ax.plot(ns, pw, ls=style, color=colour, lw=2, label=f"{label}: n = {need:,.0f}")
    ax.axhline(power, color=PALETTE["truth"], lw=1, ls=":")
    ax.set_xscale("log")
    ax.set_ylim(0, 1)
    ax.set_xlabel("number of questions (log scale)")
    ax.set_ylabel(f"power to detect {100 * delta:.1f} points")
    ax.set_title(f"Paired comparison, ICC of one answer {icc:.2f}, clusters of {cluster_size}")
    ax.legend(loc="upper left", fontsize=9, frameon=True, framealpha=0.95)
    return ax
