"""HARMONY: is one aggregate score representative of a benchmark's sub-domains? [HARMONY]

A benchmark's accuracy is a size-weighted average over its sub-domains. When a model is strong on
a few large sub-domains and weak elsewhere, the average describes none of them ("the flaw of
averages"). HARMONY ([HARMONY], docs/methods/harmony.md) measures how evenly a model's performance
is spread over the sub-domains:

1. **Partition** the items into sub-domains ``A_1 .. A_k``: given labels (categories, subtasks,
   sources) through :func:`partition_labels`, or *predictive similarity* through
   :func:`partition_spectral`. Items ``i, j`` are similar when the models' predictive
   distributions on them are alike::

       S(x_i, x_j) = exp(-(tau / 2) [KL(p_i || p_j) + KL(p_j || p_i)])

   with ``p_i`` the option probabilities of one model (a *per-model* partition), or the
   divergence averaged over a reference set of models (a *shared* partition). With only 0/1
   outcomes, ``p_i`` is the Bernoulli prediction of a fitted 2PL model (:func:`similarity_irt`).
   Spectral clustering of ``S`` (normalised affinity, leading eigenvectors, k-means with
   k-means++ seeding), with ``k`` chosen by the silhouette score.
2. **The metric** of one model: sub-domain accuracies ``Psi_i``, size weights ``w_i``, weighted
   mean ``mu``, masses ``p_i ∝ w_i exp(-((Psi_i - mu) / b)^2)`` and
   ``HARMONY = -(1 / log k) sum_i p_i log(p_i + eps)`` (:func:`harmony_score`), with a stratified
   bootstrap over items within sub-domains for its sampling uncertainty
   (:func:`harmony_bootstrap`, :func:`harmony_compare`).
   The partition step lives in :mod:`evalkit.partition`.
3. **Benchmark level**: mean and variance of HARMONY over models (:func:`harmony_benchmark`), the
   mean-variance plane (:func:`harmony_plot_plane`), and rebalancing (:func:`harmony_rebalance`):
   prune over-represented sub-domains and measure, with a cluster-robust interval from the core
   sandwich, whether the aggregate score moves.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from ._checks import _refuse_codings, as_labels, check_alpha, check_range, warn
from .clustered import Estimate, cluster_scores_variance, interval_t
from .errors import EvalkitInputError
from .partition import Partition, partition_labels, partition_spectral
from .types import as_rng

__all__ = [
    "HarmonySummary",
    "Rebalancing",
    "harmony_profile",
    "harmony_score",
    "harmony_bootstrap",
    "harmony_compare",
    "harmony_benchmark",
    "harmony_rebalance",
    "harmony_plot_profile",
    "harmony_plot_plane",
    "harmony_explore",
    "harmony_validate",
    "harmony_correlate",
]

DEFAULT_B = 0.1
"""Default bandwidth ``b`` of the Gaussian kernel, in accuracy units (evalkit's choice: the source
gives no value). A sub-domain ``b`` away from the mean keeps ``e^-1`` of its mass."""

DEFAULT_EPS = 1e-12
"""The ``eps`` inside ``log(p_i + eps)``."""


# --------------------------------------------------------------------------------------------
# The metric
# --------------------------------------------------------------------------------------------


def _outcomes(y: npt.ArrayLike, n_items: int, name: str) -> tuple[np.ndarray, bool]:
    """Outcomes ``name`` as a (n_models, n_items) float array of scores in [0, 1] (NaN = missing)."""
    try:
        arr = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as exc:
        raise EvalkitInputError(name, f"{name} must hold numbers (scores in [0, 1]); converting failed ({exc})"
                                ) from exc
    one = arr.ndim == 1
    if one:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise EvalkitInputError(
            name, f"{name} must be (n_items,) or (n_models, n_items), got shape {np.shape(y)}")
    if arr.shape[1] != n_items:
        raise EvalkitInputError(
            name, f"{name} has {arr.shape[1]} items but the partition has {n_items}; they must align")
    if np.isinf(arr).any():
        raise EvalkitInputError(name, f"{name} contains infinite values")
    obs = arr[~np.isnan(arr)]
    _refuse_codings(obs, name)
    if ((obs < 0) | (obs > 1)).any():
        raise EvalkitInputError(name, f"{name} must hold scores in [0, 1] (0/1 correctness or expected accuracy); "
                                      f"found values in [{obs.min():g}, {obs.max():g}]")
    return arr, one


def _check_b(b: float) -> float:
    if isinstance(b, bool) or not isinstance(b, (int, float, np.floating)) or not math.isfinite(b) or b <= 0:
        raise EvalkitInputError("b", f"b must be a positive bandwidth (in accuracy units), got {b!r}")
    return float(b)


def _psi(Y: np.ndarray, labels: np.ndarray, k: int, names: np.ndarray | None = None, arg: str = "Y") -> np.ndarray:
    """Per-model, per-sub-domain mean of the observed outcomes, shape ``(n_models, k)``."""
    obs = ~np.isnan(Y)
    onehot = np.zeros((Y.shape[1], k))
    onehot[np.arange(Y.shape[1]), labels] = 1.0
    n_obs = obs.astype(float) @ onehot
    if (n_obs == 0).any():
        f, g = np.argwhere(n_obs == 0)[0]
        where = f"sub-domain {g}"
        if names is not None and len(names) == k:
            where = f"sub-domain {str(names[g])!r} (number {g})"
        who = "the model" if Y.shape[0] == 1 else f"the model in row {f} of {arg}"
        raise EvalkitInputError(
            arg, f"{who} has no observed outcome in {where}: its accuracy there is undefined "
                 f"({int(n_obs[f].sum())} outcomes observed elsewhere); merge that sub-domain or drop the model")
    return (np.where(obs, Y, 0.0) @ onehot) / n_obs


def _harmony_from_psi(psi: np.ndarray, w: np.ndarray, b: float, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """HARMONY and the masses from sub-domain scores ``psi (..., k)`` and weights ``w (..., k)``."""
    k = psi.shape[-1]
    mu = (w * psi).sum(axis=-1, keepdims=True)
    z2 = ((psi - mu) / b) ** 2
    # shift by the smallest exponent before exp: the same masses after normalising, never 0/0
    mass = w * np.exp(-(z2 - np.where(w > 0, z2, np.inf).min(axis=-1, keepdims=True)))
    mass = mass / mass.sum(axis=-1, keepdims=True)
    if k == 1:
        return np.ones(psi.shape[:-1]), mass
    H = -(mass * np.log(mass + eps)).sum(axis=-1) / math.log(k)
    return H, mass


def harmony_profile(y: npt.ArrayLike, partition: Partition, *, b: float = DEFAULT_B,
                    eps: float = DEFAULT_EPS) -> pd.DataFrame:
    """One model's sub-domain table: size, weight ``w_i``, accuracy ``Psi_i`` and mass ``p_i`` [HARMONY].

    Parameters
    ----------
    y : (n_items,) array
        One model's outcomes (0/1, or scores in [0, 1]); NaN = unobserved (left out of ``Psi``).
    partition : Partition
    b, eps : float
        See :func:`harmony_score`.

    Returns
    -------
    DataFrame
        Indexed by sub-domain name: ``size, weight, accuracy, deviation`` (``Psi_i - mu``) and
        ``mass``. ``attrs`` holds ``mu`` and ``harmony``.

    Examples
    --------
    >>> part = partition_labels(["a", "a", "b", "b", "c", "c"])
    >>> prof = harmony_profile([1, 1, 1, 1, 0, 0], part, b=0.5)
    >>> prof["accuracy"].tolist(), prof["mass"].round(3).tolist()
    ([1.0, 1.0, 0.0], [0.442, 0.442, 0.116])
    """
    Y, one = _outcomes(y, partition.n_items, "y")
    if not one:
        raise EvalkitInputError("outcomes", "harmony_profile takes one model's outcomes, shape (n_items,)")
    b = _check_b(b)
    w = partition.sizes / partition.n_items
    psi = _psi(Y, partition.labels, partition.k, partition.names, "y")[0]
    H, mass = _harmony_from_psi(psi, w, b, eps)
    mu = float((w * psi).sum())
    out = pd.DataFrame({"size": partition.sizes, "weight": w, "accuracy": psi, "deviation": psi - mu,
                        "mass": mass}, index=pd.Index(partition.names, name="sub-domain"))
    out.attrs.update(mu=mu, harmony=float(H))
    return out


def harmony_score(Y: npt.ArrayLike, partition: Partition, *, b: float = DEFAULT_B,
                  eps: float = DEFAULT_EPS) -> Any:
    """HARMONY of one model, or of each model, on a partitioned benchmark [HARMONY].

    ``Psi_i`` is the model's accuracy on sub-domain ``A_i``, ``w_i = |A_i| / n`` its share of the
    items, ``mu = sum_i w_i Psi_i`` the aggregate accuracy,
    ``p_i ∝ w_i exp(-((Psi_i - mu) / b)^2)`` and

    ``HARMONY = -(1 / log k) sum_i p_i log(p_i + eps)``.

    Edge cases (defined here; the source is silent): ``k = 1`` gives 1 (the aggregate *is* the
    only sub-domain's score); a sub-domain with one item is used as it is (its ``Psi`` is 0 or 1
    and its weight ``1/n``); when all ``Psi_i`` are equal the masses are the size weights and
    HARMONY is the normalised entropy of the sizes, which is 1 only for equal-sized sub-domains:
    as specified, the metric also penalises unequal sub-domain sizes. Note also that the masses
    depend on ``|Psi_i - mu|`` only: two equal-sized sub-domains always sit symmetrically about
    their mean, so with ``k = 2`` and equal sizes HARMONY is 1 whatever the accuracies.

    Parameters
    ----------
    Y : (n_items,) or (n_models, n_items) array
        Outcomes (0/1, or scores in [0, 1] such as expected accuracies); NaN = unobserved, left
        out of the sub-domain accuracies (complete case).
    partition : Partition
        From :func:`partition_labels` or :func:`partition_spectral`.
    b : float
        Bandwidth of the Gaussian kernel, in accuracy units (default :data:`DEFAULT_B` = 0.1).
    eps : float
        The ``eps`` inside the logarithm.

    Returns
    -------
    float or (n_models,) array
        In [0, 1] (up to ``eps``).

    Raises
    ------
    ValueError
        Misaligned shapes, values outside [0, 1], ``b <= 0``, or a model with no observed
        outcome in some sub-domain.

    Examples
    --------
    >>> part = partition_labels(["a", "a", "b", "b", "c", "c"])
    >>> round(harmony_score([1, 0, 1, 0, 1, 0], part), 3)   # equal accuracies, equal sizes
    1.0
    >>> round(harmony_score([1, 1, 1, 1, 0, 0], part, b=0.5), 3)   # one sub-domain far below
    0.885
    """
    Yf, one = _outcomes(Y, partition.n_items, "Y")
    b = _check_b(b)
    if eps < 0:
        raise EvalkitInputError("eps", f"eps must be non-negative, got {eps}")
    check_range(eps, "eps", 0.0, 1e-3)
    w = partition.sizes / partition.n_items
    H, _ = _harmony_from_psi(_psi(Yf, partition.labels, partition.k, partition.names, "Y"), w[None, :], b, eps)
    return float(H[0]) if one else H


# --------------------------------------------------------------------------------------------
# Sampling uncertainty: stratified bootstrap over items within sub-domains
# --------------------------------------------------------------------------------------------


def _strata_draws(partition: Partition, n_boot: int, rng: np.random.Generator,
                  clusters: npt.ArrayLike | None) -> Iterator[np.ndarray]:
    """Bootstrap counts per item: within each sub-domain, items (or item clusters) drawn with replacement.

    Yields ``(n_items,)`` float arrays: how many times each item is in the resample.
    """
    labels = partition.labels
    n = labels.size
    if clusters is None:
        unit = np.arange(n)
    else:
        c_codes, _ = as_labels(clusters, n, "clusters")
        # a unit is a (sub-domain, cluster) pair: a cluster split across sub-domains is resampled in each
        _, unit = np.unique(np.column_stack([labels, c_codes]), axis=0, return_inverse=True)
        unit = unit.ravel()
    n_units = int(unit.max()) + 1
    unit_group = np.zeros(n_units, dtype=np.intp)
    unit_group[unit] = labels
    members = [np.flatnonzero(unit_group == g) for g in range(partition.k)]
    single = sum(mem.size == 1 for mem in members)
    if clusters is not None and single == partition.k and n > partition.k:
        raise EvalkitInputError(
            "clusters", "every sub-domain holds a single cluster, so resampling clusters within sub-domains "
                         "changes nothing; pass clusters=None (items) or finer clusters")
    if clusters is not None and single:
        warn(f"{single} of {partition.k} sub-domains hold a single cluster: they add no bootstrap variability "
             "(their items are always resampled together)")
    for _ in range(n_boot):
        counts = np.zeros(n_units)
        for mem in members:
            counts[mem] = rng.multinomial(mem.size, np.full(mem.size, 1.0 / mem.size))
        yield counts[unit]


def _boot_estimate(full: float, reps: np.ndarray, alpha: float, n: int, M: int, what: str) -> Estimate:
    ok = reps[~np.isnan(reps)]
    n_fail = reps.size - ok.size
    if ok.size < 0.9 * reps.size:
        raise ValueError(f"{n_fail} of {reps.size} bootstrap resamples left a model with no observed outcome in "
                         "some sub-domain; merge small sub-domains or handle the missing outcomes first")
    if n_fail:
        what += f" ({n_fail} resamples with an empty sub-domain dropped)"
    reps = ok
    lo, hi = np.quantile(reps, [alpha / 2, 1 - alpha / 2])
    return Estimate(float(full), float(reps.std(ddof=1)), float(lo), float(hi), math.inf, what, n, M)


def _check_boot(n_boot: int, alpha: float) -> None:
    check_alpha(alpha)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 50:
        raise EvalkitInputError(
            "n_boot", f"n_boot={n_boot!r} is too small for a bootstrap interval; use at least 50 (999 is typical)")


@dataclass(frozen=True)
class _BootData:
    """Outcomes prepared once for many weighted resamples."""

    Yz: np.ndarray  # outcomes with NaN -> 0
    obs: np.ndarray  # 1 where observed
    onehot: np.ndarray  # (n_items, k)

    @classmethod
    def of(cls, Y: np.ndarray, partition: Partition) -> _BootData:
        obs = ~np.isnan(Y)
        onehot = np.zeros((partition.n_items, partition.k))
        onehot[np.arange(partition.n_items), partition.labels] = 1.0
        return cls(np.where(obs, Y, 0.0), obs.astype(float), onehot)


def _boot_harmony(data: _BootData, counts: np.ndarray, b: float, eps: float) -> np.ndarray:
    """HARMONY of every model on a resample given by item ``counts`` (NaN for a model left with an empty sub-domain)."""
    W = data.onehot * counts[:, None]
    num = data.Yz @ W
    den = data.obs @ W
    empty = (den == 0).any(axis=1)
    psi = num / np.where(den > 0, den, 1.0)
    size = W.sum(axis=0)
    H, _ = _harmony_from_psi(psi, (size / size.sum())[None, :], b, eps)
    H[empty] = np.nan
    return H


def harmony_bootstrap(y: npt.ArrayLike, partition: Partition, *, b: float = DEFAULT_B, eps: float = DEFAULT_EPS,
                      clusters: npt.ArrayLike | None = None, n_boot: int = 999, alpha: float = 0.05,
                      seed: int | np.random.Generator) -> Estimate:
    """HARMONY of one model with a bootstrap standard error and percentile interval [HARMONY].

    The source gives HARMONY no uncertainty. Here the sub-domains are held fixed (they are the
    benchmark's design) and the items are resampled with replacement **within each sub-domain**
    (a stratified bootstrap; with ``clusters``, whole item clusters such as sources are
    resampled within each sub-domain). The partition is treated as given: the variability of
    an induced partition itself is not included (vary ``tau`` and ``k`` to see it).
    :func:`evalkit.bootstrap_cluster` is not used because it resamples clusters across the whole
    benchmark, which would change the sub-domain sizes ``w_i`` the metric depends on.

    Parameters
    ----------
    y : (n_items,) array
        One model's outcomes.
    partition : Partition
    b, eps : float
        See :func:`harmony_score`.
    clusters : (n_items,) labels, optional
        Item clusters nested in the sub-domains (resampled whole); default: items.
    n_boot : int
    alpha : float
    seed : int or Generator

    Returns
    -------
    Estimate
        ``estimate`` = HARMONY on the data, ``se`` = bootstrap SD, percentile interval.

    Raises
    ------
    ValueError
        As :func:`harmony_score`; ``n_boot < 50``; more than one model.

    Examples
    --------
    >>> part = partition_labels(np.repeat(["a", "b", "c"], [40, 20, 20]))
    >>> y = np.r_[np.ones(30), np.zeros(10), np.ones(10), np.zeros(10), np.ones(5), np.zeros(15)]
    >>> est = harmony_bootstrap(y, part, n_boot=199, seed=0)
    >>> round(est.estimate, 3), bool(est.ci_low <= est.estimate <= est.ci_high)
    (0.256, True)
    """
    Y, one = _outcomes(y, partition.n_items, "y")
    if not one:
        raise EvalkitInputError(
            "outcomes", "harmony_bootstrap takes one model's outcomes; use harmony_benchmark for several")
    b = _check_b(b)
    _check_boot(n_boot, alpha)
    rng = as_rng(seed)
    full = harmony_score(Y[0], partition, b=b, eps=eps)
    data = _BootData.of(Y, partition)
    reps = np.array([_boot_harmony(data, counts, b, eps)[0]
                     for counts in _strata_draws(partition, n_boot, rng, clusters)])
    return _boot_estimate(full, reps, alpha, partition.n_items, partition.k, "HARMONY, stratified bootstrap")


def harmony_compare(y_a: npt.ArrayLike, y_b: npt.ArrayLike, partition: Partition, *, b: float = DEFAULT_B,
                    eps: float = DEFAULT_EPS, clusters: npt.ArrayLike | None = None, n_boot: int = 999,
                    alpha: float = 0.05, seed: int | np.random.Generator) -> Estimate:
    """Difference ``HARMONY(a) - HARMONY(b)`` of two models on the same items, with a paired bootstrap.

    Both models are evaluated on the same resampled items (stratified by sub-domain, as in
    :func:`harmony_bootstrap`), so the shared item effects cancel.

    Parameters
    ----------
    y_a, y_b : (n_items,) arrays
        Outcomes of the two models on the partition's items.
    partition : Partition
    b, eps, clusters, n_boot, alpha, seed
        As :func:`harmony_bootstrap`.

    Returns
    -------
    Estimate
        An interval that excludes 0 says the two HARMONY values differ at level ``alpha``.
    """
    Ya, one_a = _outcomes(y_a, partition.n_items, "y_a")
    Yb, one_b = _outcomes(y_b, partition.n_items, "y_b")
    if not (one_a and one_b):
        raise EvalkitInputError("outcomes", "harmony_compare takes two vectors of outcomes, shape (n_items,) each")
    b = _check_b(b)
    _check_boot(n_boot, alpha)
    Y = np.vstack([Ya, Yb])
    rng = as_rng(seed)
    H = harmony_score(Y, partition, b=b, eps=eps)
    data = _BootData.of(Y, partition)
    reps = []
    for counts in _strata_draws(partition, n_boot, rng, clusters):
        h = _boot_harmony(data, counts, b, eps)
        reps.append(h[0] - h[1])
    return _boot_estimate(H[0] - H[1], np.array(reps), alpha, partition.n_items, partition.k,
                          "HARMONY difference, paired stratified bootstrap")


# --------------------------------------------------------------------------------------------
# Benchmark level
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HarmonySummary:
    """HARMONY of every model on one benchmark, and its mean and variance over models [HARMONY].

    Attributes
    ----------
    name : str
    harmony : (n_models,) array
        Each model's HARMONY.
    accuracy : (n_models,) array
        Each model's aggregate accuracy ``mu``.
    mean, variance : Estimate
        Mean and variance (``ddof=1``) of HARMONY over the models, with stratified-bootstrap
        standard errors and percentile intervals (items resampled within sub-domains).
    k : int
    n_items : int
    b : float
    models : (n_models,) array of str
    """

    name: str
    harmony: np.ndarray
    accuracy: np.ndarray
    mean: Estimate
    variance: Estimate
    k: int
    n_items: int
    b: float
    models: np.ndarray

    def to_row(self) -> dict[str, Any]:
        """One row for :func:`harmony_plot_plane`: name, k, n_items, n_models, mean, variance and their SEs."""
        return {"benchmark": self.name, "k": self.k, "n_items": self.n_items, "n_models": self.harmony.size,
                "mean": self.mean.estimate, "mean_se": self.mean.se, "variance": self.variance.estimate,
                "variance_se": self.variance.se, "accuracy": float(np.mean(self.accuracy))}


def harmony_benchmark(Y: npt.ArrayLike, partition: Partition, *, name: str = "benchmark", b: float = DEFAULT_B,
                      eps: float = DEFAULT_EPS, clusters: npt.ArrayLike | None = None,
                      models: Sequence[str] | None = None, n_boot: int = 199, alpha: float = 0.05,
                      seed: int | np.random.Generator) -> HarmonySummary:
    """Mean and variance of HARMONY over models: a benchmark's point on the mean-variance plane [HARMONY].

    High mean and low variance (top-left of the plane, with the variance on the horizontal axis)
    is a benchmark whose aggregate score represents its sub-domains for most models.

    Parameters
    ----------
    Y : (n_models, n_items) array
        Outcomes of at least two models.
    partition : Partition
    name : str
    b, eps, clusters, n_boot, alpha, seed
        As :func:`harmony_bootstrap` (the bootstrap resamples items for all models at once).
    models : sequence of str, optional
        Model names (default ``m0, m1, ...``).

    Returns
    -------
    HarmonySummary
    """
    Yf, one = _outcomes(Y, partition.n_items, "Y")
    if one or Yf.shape[0] < 2:
        raise EvalkitInputError(
            "models", "harmony_benchmark needs the outcomes of at least two models, shape (n_models, n_items)")
    b = _check_b(b)
    _check_boot(n_boot, alpha)
    names = np.array(list(models) if models is not None else [f"m{i}" for i in range(Yf.shape[0])], dtype=str)
    if names.size != Yf.shape[0]:
        raise EvalkitInputError("models", f"{names.size} model names for {Yf.shape[0]} models")
    rng = as_rng(seed)
    H = harmony_score(Yf, partition, b=b, eps=eps)
    w = partition.sizes / partition.n_items
    acc = (_psi(Yf, partition.labels, partition.k, partition.names, "Y") * w).sum(axis=1)
    data = _BootData.of(Yf, partition)
    reps = np.array([_boot_harmony(data, counts, b, eps)
                     for counts in _strata_draws(partition, n_boot, rng, clusters)])
    reps[np.isnan(reps).any(axis=1)] = np.nan  # a resample counts only when every model has every sub-domain
    mean = _boot_estimate(float(H.mean()), reps.mean(axis=1), alpha, partition.n_items, partition.k,
                          "mean HARMONY over models, stratified bootstrap")
    var = _boot_estimate(float(H.var(ddof=1)), reps.var(axis=1, ddof=1), alpha, partition.n_items, partition.k,
                         "variance of HARMONY over models, stratified bootstrap")
    return HarmonySummary(name, H, acc, mean, var, partition.k, partition.n_items, b, names)


@dataclass(frozen=True)
class Rebalancing:
    """The result of pruning over-represented sub-domains (:func:`harmony_rebalance`).

    Attributes
    ----------
    keep : (n_items,) bool array
        Items kept.
    sizes_before, sizes_after : (k,) int arrays
    harmony_before, harmony_after : float or (n_models,) array
    shift : list of Estimate
        Per model: aggregate accuracy after pruning minus before, with a cluster-robust interval.
    accuracy_before, accuracy_after : (n_models,) arrays
    fraction : float
        Share of the items removed.
    """

    keep: np.ndarray
    sizes_before: np.ndarray
    sizes_after: np.ndarray
    harmony_before: np.ndarray
    harmony_after: np.ndarray
    shift: list[Estimate]
    accuracy_before: np.ndarray
    accuracy_after: np.ndarray
    fraction: float

    def to_frame(self, models: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per model: accuracies, HARMONY before and after, shift and its interval."""
        names = list(models) if models is not None else [f"m{i}" for i in range(len(self.shift))]
        return pd.DataFrame({
            "model": names,
            "accuracy_before": self.accuracy_before,
            "accuracy_after": self.accuracy_after,
            "shift": [s.estimate for s in self.shift],
            "shift_low": [s.ci_low for s in self.shift],
            "shift_high": [s.ci_high for s in self.shift],
            "significant": [not s.covers(0.0) for s in self.shift],
            "harmony_before": self.harmony_before,
            "harmony_after": self.harmony_after,
        })


def _prune_sizes(sizes: np.ndarray, n_remove: int) -> np.ndarray:
    """Water-filling: lower the largest sub-domains to a common cap until ``n_remove`` items are gone."""
    new = sizes.astype(np.int64).copy()
    for _ in range(int(n_remove)):
        new[int(np.argmax(new))] -= 1
    return new


def harmony_rebalance(Y: npt.ArrayLike, partition: Partition, *, fraction: float, clusters: npt.ArrayLike | None = None,
                      b: float = DEFAULT_B, eps: float = DEFAULT_EPS, se: Literal["CR1", "CR0"] = "CR1",
                      alpha: float = 0.05, seed: int | np.random.Generator) -> Rebalancing:
    """Prune over-represented sub-domains and measure how far the aggregate score moves [HARMONY].

    ``fraction`` of the items are removed from the largest sub-domains (water-filling: the largest
    sub-domain loses an item, then the largest again, ...), chosen at random within each
    sub-domain. The shift of model ``f``'s aggregate accuracy, ``theta_after - theta_before``, is
    a difference of two means over nested item sets; its variance is the cluster-robust sandwich
    of the stacked estimating equations, with influence
    ``1{kept_j} (y_j - theta_after) / n_after - (y_j - theta_before) / n_before`` per item, summed
    within clusters (evalkit's one sandwich, :func:`evalkit.clustered.cluster_scores_variance`),
    and a ``t`` interval with ``M - 1`` degrees of freedom. A benchmark whose score is driven by
    its large sub-domains moves; an even one does not.

    Parameters
    ----------
    Y : (n_items,) or (n_models, n_items) array
        0/1 outcomes (NaN not allowed here).
    partition : Partition
    fraction : float
        Share of the items to remove, in [0, 1).
    clusters : (n_items,) labels, optional
        Item clusters for the interval: the benchmark's natural clusters (sources, templates, a
        reference item and its paraphrases). Default: every item its own cluster (the
        heteroskedasticity-robust interval), right only when items are independent.
    b, eps : float
        For HARMONY before and after.
    se : {"CR1", "CR0"}
    alpha : float
    seed : int or Generator
        Chooses the items removed.

    Returns
    -------
    Rebalancing

    Raises
    ------
    ValueError
        ``fraction`` outside [0, 1) or so large that some sub-domain would lose its last item,
        NaN outcomes, or fewer than 2 clusters.

    Examples
    --------
    >>> part = partition_labels(np.repeat(["a", "b", "c"], [40, 20, 20]))
    >>> y = np.r_[np.ones(30), np.zeros(10), np.ones(10), np.zeros(10), np.ones(5), np.zeros(15)]
    >>> reb = harmony_rebalance(y, part, fraction=0.25, seed=0)
    >>> reb.sizes_after.tolist(), round(reb.shift[0].estimate, 3)
    ([20, 20, 20], -0.046)
    """
    Yf, _ = _outcomes(Y, partition.n_items, "Y")
    if np.isnan(Yf).any():
        raise EvalkitInputError(
            "outcomes", "harmony_rebalance needs complete outcomes (no NaN); drop or impute missing cells first")
    if not 0.0 <= float(fraction) < 1.0:
        raise EvalkitInputError("fraction", f"fraction must be in [0, 1), got {fraction}")
    if se not in ("CR1", "CR0"):
        raise EvalkitInputError("se", f"se must be 'CR1' or 'CR0', got {se!r}")
    check_alpha(alpha)
    rng = as_rng(seed)
    n = partition.n_items
    n_remove = int(round(float(fraction) * n))
    if n_remove > n - partition.k:
        raise EvalkitInputError(
            "fraction", f"fraction={fraction} would remove {n_remove} of {n} items; at most {n - partition.k} "
                         "can go while every sub-domain keeps an item")
    sizes = partition.sizes
    target = _prune_sizes(sizes, n_remove)
    keep = np.zeros(n, dtype=bool)
    for g in range(partition.k):
        idx = np.flatnonzero(partition.labels == g)
        keep[rng.choice(idx, size=int(target[g]), replace=False)] = True
    codes, uniques = as_labels(np.arange(n) if clusters is None else clusters, n, "clusters")
    M = uniques.size
    if M < 2:
        raise EvalkitInputError("clusters", "the shift's cluster-robust interval needs at least two clusters")
    if M < 5:
        warn(f"only {M} clusters for the rebalancing interval: cluster-robust intervals are unreliable with so few")
    n_after = int(keep.sum())
    before = Yf.mean(axis=1)
    after = Yf[:, keep].mean(axis=1)
    shifts = []
    for f in range(Yf.shape[0]):
        infl = np.where(keep, (Yf[f] - after[f]) / n_after, 0.0) - (Yf[f] - before[f]) / n
        var = cluster_scores_variance(infl, codes, M, 1.0, se)
        s = math.sqrt(var)
        lo, hi = interval_t(float(after[f] - before[f]), s, M - 1, alpha)
        shifts.append(Estimate(float(after[f] - before[f]), s, lo, hi, float(M - 1),
                               f"rebalancing shift, {se}", n, int(M)))
    H_before = harmony_score(Yf, partition, b=b, eps=eps)
    H_after = harmony_score(Yf[:, keep], partition.subset(keep), b=b, eps=eps)
    return Rebalancing(keep, sizes, target, H_before, H_after, shifts, before, after, n_remove / n)


# --------------------------------------------------------------------------------------------
# Figures and the widget function
# --------------------------------------------------------------------------------------------


def harmony_plot_profile(profiles: dict[str, pd.DataFrame], *, ax: Any = None, title: str | None = None) -> Any:
    """Sub-domain accuracies of several models side by side, with each model's aggregate as a line.

    Parameters
    ----------
    profiles : dict name -> DataFrame
        :func:`harmony_profile` outputs on the same partition.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    from .plots import PALETTE

    if not profiles:
        raise EvalkitInputError("profiles", "give at least one profile")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 4.0))
    first = next(iter(profiles.values()))
    x = np.arange(len(first))
    width = 0.8 / len(profiles)
    colours = [PALETTE["cluster"], PALETTE["iid"], PALETTE["CR2"], PALETTE["accent"], PALETTE["neutral"]]
    for i, (name, prof) in enumerate(profiles.items()):
        c = colours[i % len(colours)]
        label = f"{name}: mean {prof.attrs['mu']:.2f}, HARMONY {prof.attrs['harmony']:.2f}"
        ax.bar(x + (i - (len(profiles) - 1) / 2) * width, prof["accuracy"], width, color=c, alpha=0.85, label=label)
        ax.axhline(prof.attrs["mu"], color=c, lw=1.5, ls="--")
    many = len(x) > 6
    ax.set_xticks(x, [str(v) for v in first.index], rotation=30 if many else 0, ha="right" if many else "center")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("sub-domain")
    ax.set_ylabel("accuracy in the sub-domain")
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title)
    return ax


def harmony_plot_plane(table: pd.DataFrame, *, ax: Any = None, title: str | None = None) -> Any:
    """The mean-variance plane: one point per benchmark (variance across, mean HARMONY up) [HARMONY].

    Bars are ±2 bootstrap standard errors. The top-left corner (high mean, low variance) holds
    benchmarks whose aggregate score represents their sub-domains for most models.

    Parameters
    ----------
    table : DataFrame
        Rows from :meth:`HarmonySummary.to_row`: ``benchmark, mean, mean_se, variance, variance_se``.
    ax : matplotlib Axes, optional
    title : str, optional

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt

    from .plots import PALETTE

    need = {"benchmark", "mean", "mean_se", "variance", "variance_se"}
    if not need <= set(table.columns):
        raise EvalkitInputError("table", f"table needs columns {sorted(need)} (use HarmonySummary.to_row)")
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 4.5))
    ax.errorbar(table["variance"], table["mean"], xerr=2 * table["variance_se"], yerr=2 * table["mean_se"],
                fmt="o", color=PALETTE["cluster"], ms=6, lw=1, capsize=0)
    for _, row in table.iterrows():
        ax.annotate(str(row["benchmark"]), (row["variance"], row["mean"]), xytext=(5, 4),
                    textcoords="offset points", fontsize=8)
    ax.set_xlabel("variance of HARMONY over models")
    ax.set_ylabel("mean HARMONY over models")
    ax.set_ylim(min(0.0, float(table["mean"].min()) - 0.05), 1.02)
    ax.set_xlim(left=min(0.0, float(table["variance"].min())))
    ax.annotate("robust, representative", xy=(0.02, 0.97), xycoords="axes fraction", va="top",
                color=PALETTE["neutral"], fontsize=8)
    if title:
        ax.set_title(title)
    return ax


def harmony_explore(P: npt.ArrayLike, Y: npt.ArrayLike, *, b: float = DEFAULT_B, tau: float = 1.0,
                    k: int = 4, fraction: float = 0.0, seed: int = 0, show: bool = True) -> dict[str, Any]:
    """The function behind notebook 07.3's widget: partition, HARMONY and rebalancing for one setting.

    Partitions the items by predictive similarity (shared over the models in ``P``) with ``k``
    sub-domains at temperature ``tau``, prunes ``fraction`` of the items from the largest
    sub-domains, and draws each model's HARMONY before and after with the aggregate shift.

    Parameters
    ----------
    P : (n_models, n_items, n_options) array
        Predictive distributions.
    Y : (n_models, n_items) array
        0/1 outcomes of the same models.
    b, tau : float
    k : int
        Number of sub-domains (1 to n_items - 1).
    fraction : float
        Pruning fraction.
    seed : int
    show : bool
        Draw the figure (False: only compute, for tests).

    Returns
    -------
    dict
        ``partition``, ``harmony`` (before pruning), ``rebalancing``.
    """
    part = partition_spectral(P, tau=tau, k=int(k), seed=seed, n_init=3)
    with np.errstate(all="ignore"):
        import warnings

        from ._checks import EvalkitWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            reb = harmony_rebalance(Y, part, fraction=fraction, b=b, seed=seed)
    H = harmony_score(Y, part, b=b)
    if show:
        import matplotlib.pyplot as plt

        from .plots import PALETTE, _tight

        fig, axes = plt.subplots(1, 2, figsize=(10.0, 3.8))
        m = np.arange(H.size)
        axes[0].plot(m, H, "o", color=PALETTE["cluster"], label="before pruning")
        axes[0].plot(m, reb.harmony_after, "s", color=PALETTE["iid"], label="after pruning")
        axes[0].set_ylim(-0.02, 1.02)
        axes[0].set_xlabel("model")
        axes[0].set_ylabel("HARMONY")
        if part.k == 1:  # one sub-domain: nothing to balance, so b (the kernel over sub-domains) and tau do nothing
            axes[0].set_title(f"k = 1: one sub-domain of {int(part.sizes[0])} items, so HARMONY = 1\nby "
                              "definition; b and τ act between sub-domains and change nothing", fontsize=11)
        else:
            axes[0].set_title(f"k = {part.k}, sizes {part.sizes.tolist()}")
        axes[0].legend(fontsize=8)
        est = np.array([s.estimate for s in reb.shift]) * 100
        lo = np.array([s.ci_low for s in reb.shift]) * 100
        hi = np.array([s.ci_high for s in reb.shift]) * 100
        axes[1].errorbar(m, est, yerr=[est - lo, hi - est], fmt="o", color=PALETTE["accent"], capsize=0)
        axes[1].axhline(0, color=PALETTE["truth"], lw=1, ls="--")
        axes[1].set_xlabel("model")
        axes[1].set_ylabel("accuracy shift (points)")
        axes[1].set_title(f"pruning {reb.fraction:.0%} of the items")
        _tight(fig)
        plt.show()
    return {"partition": part, "harmony": H, "rebalancing": reb}


# --------------------------------------------------------------------------------------------
# Validation on the RedundantQA-like generator
# --------------------------------------------------------------------------------------------


def harmony_validate(*, n_reps: int = 100, seed: int = 0, b: float = DEFAULT_B, tau: float = 1.0,
                     spread_range: tuple[float, float] = (0.0, 1.5), n_models: int = 8, n_reference: int = 10,
                     signature: float = 3.0, k_range: Sequence[int] = range(2, 7),
                     progress: bool | None = None) -> pd.DataFrame:
    """Estimated against ground-truth HARMONY on RedundantQA-like draws, through :func:`evalkit.mc_run` [HARMONY].

    Each replication draws a benchmark (:func:`evalkit.simulate_redundant`) whose ability spread
    across domains is uniform on ``spread_range`` (so the true HARMONY varies from draw to draw)
    and estimates model 0's HARMONY from its 0/1 outcomes with four partitions: the shared
    predictive partition (divergences averaged over all models), model 0's own predictive
    partition, the surface labels (what the items look like) and the true domains. The truth is
    model 0's HARMONY computed from its answer probabilities and the true domains.

    Parameters
    ----------
    n_reps : int
    seed : int
    b, tau : float
    spread_range : (float, float)
    n_models, n_reference : int
        Passed to :func:`evalkit.simulate_redundant` (``n_reference`` per domain).
    signature : float
        How distinct the domains' behaviour is (see :func:`evalkit.simulate_redundant`).
    k_range : sequence of int
        Silhouette search range of the induced partitions.
    progress : bool or None

    Returns
    -------
    DataFrame
        :func:`evalkit.mc_run` output; estimators ``shared``, ``per-model``, ``surface``, ``true``.
    """
    from .montecarlo import mc_run
    from .simulate import simulate_redundant

    lo, hi = spread_range
    if not 0 <= lo <= hi:
        raise EvalkitInputError(
            "spread_range", f"spread_range must be (low, high) with 0 <= low <= high, got {spread_range}")
    b = _check_b(b)

    def draw(rng: np.random.Generator) -> dict[str, Any]:
        P, Y, items, truth = simulate_redundant(n_models=n_models, n_reference=n_reference, signature=signature,
                                                spread=float(rng.uniform(lo, hi)), rng=rng)
        return {"P": P, "Y": Y, "items": items, "truth": truth, "seed": int(rng.integers(2**31))}

    def induced(data: dict[str, Any], P: np.ndarray) -> float:
        part = partition_spectral(P, tau=tau, k_range=k_range, seed=data["seed"], n_init=3)
        return harmony_score(data["Y"][0], part, b=b)

    estimators = {
        "shared": lambda d: induced(d, d["P"]),
        "per-model": lambda d: induced(d, d["P"][0]),
        "surface": lambda d: harmony_score(d["Y"][0], partition_labels(d["items"]["surface_domain"]), b=b),
        "true": lambda d: harmony_score(d["Y"][0], partition_labels(d["items"]["domain"]), b=b),
    }

    def truth(d: dict[str, Any]) -> float:
        return harmony_score(d["truth"]["p_correct"][0], partition_labels(d["items"]["domain"]), b=b)

    return mc_run(draw, estimators, truth=truth, n_reps=n_reps, seed=seed, progress=progress)


def harmony_correlate(runs: pd.DataFrame, *, n_boot: int = 999, seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """Pearson correlation of estimate and truth per estimator, with a bootstrap interval over replications.

    Parameters
    ----------
    runs : DataFrame
        :func:`evalkit.mc_run` output (e.g. from :func:`harmony_validate`).
    n_boot : int
    seed : int
    alpha : float

    Returns
    -------
    DataFrame
        Indexed by estimator: ``correlation, se, ci_low, ci_high, rmse, n_reps``. The interval
        resamples whole replications (:func:`evalkit.bootstrap_cluster` with one cluster per
        replication: the replications are independent).
    """
    from .clustered import bootstrap_cluster

    need = {"rep", "estimator", "estimate", "truth"}
    if not need <= set(runs.columns):
        raise EvalkitInputError("runs", f"runs must come from mc_run (columns {sorted(need)})")
    out = {}
    for name, g in runs.groupby("estimator", sort=False):
        g = g.dropna(subset=["estimate"])
        if len(g) < 3:
            raise ValueError(f"estimator {name!r} has fewer than 3 successful replications")
        est, tru = g["estimate"].to_numpy(), g["truth"].to_numpy()

        def corr(rows: np.ndarray, _ids: np.ndarray, est: np.ndarray = est, tru: np.ndarray = tru) -> float:
            e, t = est[rows], tru[rows]
            if e.std() == 0 or t.std() == 0:
                raise ValueError("constant resample")
            return float(np.corrcoef(e, t)[0, 1])

        r = bootstrap_cluster(corr, np.arange(len(g)), n_boot=n_boot, seed=seed, alpha=alpha)
        out[str(name)] = {"correlation": r.estimate, "se": r.se, "ci_low": r.ci_low, "ci_high": r.ci_high,
                          "rmse": float(np.sqrt(np.mean((est - tru) ** 2))), "n_reps": len(g)}
    return pd.DataFrame(out).T.rename_axis("estimator")
