"""Simulators with known truth: clustered outcomes, missing-response mechanisms, 2PL matrices.

Every simulator returns the evalkit long table (``model, item, cluster, correct, status`` plus the
latent quantities that make up the truth), so simulated and real data travel the same path.

Outcome model (one model, clustered items)::

    logit P(Y_ij = 1) = mu + u_i + beta_x * x_ij,   u_i ~ N(0, sigma_u^2),  x_ij ~ N(0, 1)

``mu`` and ``sigma_u`` are calibrated (:func:`simulate_calibrate`) so that the expected accuracy
and the intra-class correlation *on the observed 0/1 scale* are the ones requested.

:func:`simulate_2pl` draws a whole models-by-items matrix from the two-parameter item response
model of [CBMM], with missing entries (MCAR, MAR or MNAR); it returns the matrix directly
because at leaderboard scale a long table would be wasteful.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import optimize, special

from ._checks import _real, check_range
from .data import MISSING_REASONS
from .errors import EvalkitInputError
from .irt import _check_sigma, _row_step, _sigmoid
from .types import as_rng

__all__ = [
    "Mechanism",
    "MECHANISMS",
    "simulate_calibrate",
    "simulate_icc_observed",
    "SIZE_DESIGNS",
    "simulate_cluster_sizes",
    "simulate_clustered",
    "simulate_missing",
    "simulate_2pl",
    "simulate_paired",
    "simulate_redundant",
]

Mechanism = Literal["mcar", "mar", "mar_cluster", "mnar_item"]
MECHANISMS: tuple[str, ...] = ("mcar", "mar", "mar_cluster", "mnar_item")
_DEPRECATED_MECHANISMS = {"mnar_cluster": "mar_cluster"}  # old name -> new name (DeprecationWarning)

_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(60)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()  # expectations over a standard normal


def _cluster_probs(mu: float, sigma_u: float, beta_x: float) -> np.ndarray:
    """``E[P(Y=1) | u]`` at the quadrature nodes of ``u`` (x integrated out)."""
    u = sigma_u * _GH_NODES[:, None]
    x = beta_x * _GH_NODES[None, :]
    return special.expit(mu + u + x) @ _GH_WEIGHTS


def simulate_icc_observed(mu: float, sigma_u: float, beta_x: float = 0.0) -> tuple[float, float]:
    """Expected accuracy and observed-scale ICC of the logit-normal outcome model.

    The observed-scale ICC of 0/1 outcomes is ``Var(p_i) / (pbar (1 - pbar))`` where
    ``p_i = E[P(Y_ij=1) | u_i]`` is cluster ``i``'s expected accuracy.

    Returns
    -------
    mean, icc : float
    """
    for name, v in (("mu", mu), ("sigma_u", sigma_u), ("beta_x", beta_x)):
        if not math.isfinite(_real(v, name)):
            raise EvalkitInputError(name, f"{name} must be a finite number, got {v!r}")
    if sigma_u < 0:
        raise EvalkitInputError("sigma_u", f"sigma_u is a standard deviation and must be >= 0, got {sigma_u}")
    p = _cluster_probs(mu, sigma_u, beta_x)
    mean = float(p @ _GH_WEIGHTS)
    var = float(((p - mean) ** 2) @ _GH_WEIGHTS)
    return mean, var / (mean * (1 - mean))


@lru_cache(maxsize=256)
def simulate_calibrate(mean: float, icc: float, beta_x: float = 0.0) -> tuple[float, float]:
    """Find ``(mu, sigma_u)`` giving expected accuracy ``mean`` and observed-scale ICC ``icc``.

    Parameters
    ----------
    mean : float in (0, 1)
    icc : float in [0, 0.9]
    beta_x : float
        Effect of the item covariate (it adds within-cluster variation).

    Raises
    ------
    ValueError
        A mean outside (0, 1) or an ICC outside [0, 0.9].
    """
    if not 0.0 < mean < 1.0:
        raise EvalkitInputError("mean", f"mean accuracy must be in (0, 1), got {mean}")
    if not 0.0 <= icc <= 0.9:
        raise EvalkitInputError("icc", f"icc must be in [0, 0.9], got {icc}")

    def mu_for(sigma_u: float) -> float:
        return optimize.brentq(lambda m: simulate_icc_observed(m, sigma_u, beta_x)[0] - mean, -30, 30, xtol=1e-12)

    if icc == 0.0:
        return mu_for(0.0), 0.0
    f = lambda s: simulate_icc_observed(mu_for(s), s, beta_x)[1] - icc  # noqa: E731
    hi = 1.0
    while f(hi) < 0:
        hi *= 2
        if hi > 64:
            raise EvalkitInputError("icc", f"icc={icc} is not reachable at mean={mean} with beta_x={beta_x}")
    sigma_u = optimize.brentq(f, 1e-8, hi, xtol=1e-10)
    return mu_for(sigma_u), float(sigma_u)


SizeDesign = Literal["balanced", "skewed", "dominant"]
SIZE_DESIGNS: tuple[str, ...] = ("balanced", "skewed", "dominant")
DOMINANT_SHARE = 0.8
"""Default share of the items held by the large cluster of the ``"dominant"`` design."""


def simulate_cluster_sizes(n_clusters: int, cluster_size: int, *, sizes: SizeDesign = "balanced",
                           rng: np.random.Generator | int | None = None,
                           dominant_share: float = DOMINANT_SHARE) -> np.ndarray:
    """Cluster sizes summing to ``n_clusters * cluster_size``.

    * ``"balanced"``: all equal;
    * ``"skewed"``: log-normal shares (SD 1 on the log scale), each cluster at least 2 items, like
      real benchmarks where a few sub-tasks dominate (needs ``rng``);
    * ``"dominant"``: one cluster holds ``dominant_share`` of the items and the others share the
      rest as evenly as possible (at least one item each), like a leaderboard where one source
      dataset supplies most questions.

    Parameters
    ----------
    n_clusters, cluster_size : int
        Number of clusters and their average size.
    sizes : {"balanced", "skewed", "dominant"}
    rng : Generator or int
        Needed for ``"skewed"`` only.
    dominant_share : float in (0, 1)
        Share of the items in the dominant cluster.

    Returns
    -------
    (n_clusters,) int array

    Raises
    ------
    ValueError
        Non-positive sizes, an unknown design, a skewed design without ``rng`` or with
        ``cluster_size < 2``, or a dominant share that leaves another cluster empty.

    Examples
    --------
    >>> simulate_cluster_sizes(5, 10, sizes="dominant").tolist()
    [40, 3, 3, 2, 2]
    """
    if n_clusters < 1 or cluster_size < 1:
        raise EvalkitInputError("n_clusters", "n_clusters and cluster_size must be positive")
    total = n_clusters * cluster_size
    if sizes == "balanced":
        return np.full(n_clusters, cluster_size, dtype=int)
    if sizes == "dominant":
        if not 0.0 < dominant_share < 1.0:
            raise EvalkitInputError("dominant_share", f"dominant_share must be in (0, 1), got {dominant_share}")
        if n_clusters < 2:
            raise EvalkitInputError("n_clusters", "the dominant design needs at least two clusters")
        big = int(round(dominant_share * total))
        rest = total - big
        if rest < n_clusters - 1:
            raise EvalkitInputError(
                "dominant_share", f"dominant_share={dominant_share} leaves {rest} items for {n_clusters - 1} "
                             "other clusters; lower it or use larger clusters")
        small = np.full(n_clusters - 1, rest // (n_clusters - 1), dtype=int)
        small[: rest - small.sum()] += 1
        return np.r_[big, small].astype(int)
    if sizes != "skewed":
        raise EvalkitInputError("sizes", f"sizes must be one of {SIZE_DESIGNS} or explicit sizes, got {sizes!r}")
    if cluster_size < 2:
        raise EvalkitInputError("sizes", "skewed sizes need cluster_size >= 2")
    if rng is None:
        raise EvalkitInputError("sizes", "skewed sizes are random: pass rng")
    gen = as_rng(rng)
    share = gen.lognormal(0.0, 1.0, n_clusters)
    extra = total - 2 * n_clusters
    n = 2 + np.floor(share / share.sum() * extra).astype(int)
    n[np.argmax(share)] += total - n.sum()
    return n


def _sizes_resolve(sizes: str | np.ndarray | Sequence[int], n_clusters: int | None, cluster_size: int | None,
                   rng: np.random.Generator, dominant_share: float) -> np.ndarray:
    """Cluster sizes from a design name (with ``n_clusters`` and ``cluster_size``) or explicit sizes."""
    if isinstance(sizes, str):
        if n_clusters is None or cluster_size is None:
            raise EvalkitInputError("sizes", f"sizes={sizes!r} needs n_clusters and cluster_size")
        return simulate_cluster_sizes(n_clusters, cluster_size, sizes=sizes, rng=rng,  # type: ignore[arg-type]
                                      dominant_share=dominant_share)
    n_g = np.asarray(sizes)
    if n_g.ndim != 1 or n_g.size < 1 or n_g.dtype.kind not in "iu" or (n_g < 1).any():
        raise EvalkitInputError("sizes", "explicit sizes must be a 1-D array of positive integers (one per cluster)")
    if n_clusters is not None and n_clusters != n_g.size:
        raise EvalkitInputError("n_clusters", f"n_clusters={n_clusters} but {n_g.size} explicit sizes were given")
    if cluster_size is not None and n_g.sum() != n_g.size * cluster_size:
        raise EvalkitInputError(
            "cluster_size", f"cluster_size={cluster_size} disagrees with the explicit sizes (mean {n_g.mean():.3g}); "
                         "omit cluster_size")
    return n_g.astype(int)


def _outcomes_draw(rng: np.random.Generator, n_g: np.ndarray, mu: float, sigma_u: float,
                   beta_x: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One draw of the outcome model on clusters of sizes ``n_g``: ``(g, u_item, x, p, y)``.

    The single place that consumes the random stream of a clustered draw, so that
    :func:`simulate_clustered` and the vectorised :func:`evalkit.coverage_study` see the same data
    for the same generator.
    """
    g = np.repeat(np.arange(n_g.size), n_g)
    u = rng.normal(0.0, sigma_u, n_g.size)[g]
    x = rng.normal(0.0, 1.0, g.size)
    p = special.expit(mu + u + beta_x * x)
    y = (rng.random(g.size) < p).astype(float)
    return g, u, x, p, y


def simulate_clustered(*, n_clusters: int | None = None, cluster_size: int | None = None, mean: float,
                       icc: float, rng: np.random.Generator | int,
                       sizes: SizeDesign | np.ndarray | Sequence[int] = "balanced", beta_x: float = 0.0,
                       model: str = "sim", dominant_share: float = DOMINANT_SHARE) -> pd.DataFrame:
    """Draw one model's 0/1 outcomes on clustered items with a given mean accuracy and ICC.

    Paper: [MISSING] (simulation design).

    Parameters
    ----------
    n_clusters, cluster_size : int
        Number of clusters and their average size (``n = n_clusters * cluster_size`` items).
        Optional when ``sizes`` gives the sizes explicitly.
    mean : float
        Expected accuracy.
    icc : float
        Intra-class correlation on the observed 0/1 scale.
    rng : Generator or int
    sizes : {"balanced", "skewed", "dominant"} or (n_clusters,) int array
        A design of :func:`simulate_cluster_sizes` or the size of every cluster.
    beta_x : float
        Log-odds effect of the item covariate ``x ~ N(0, 1)`` on correctness.
    model : str
        Model id written into the table.
    dominant_share : float
        Share of the items in the large cluster of the ``"dominant"`` design.

    Returns
    -------
    DataFrame
        The long table with extra columns ``x`` (covariate), ``u`` (cluster effect), ``p`` (true
        probability) and ``correct_full`` (the outcome, kept when missingness is added later).
        ``df.attrs`` holds ``mu``, ``sigma_u``, ``icc``, ``mean`` and the cluster ``sizes``.

    Examples
    --------
    >>> d = simulate_clustered(mean=0.7, icc=0.1, sizes=np.array([30, 5, 5]), rng=1)
    >>> d.groupby("cluster").size().tolist()
    [30, 5, 5]
    """
    gen = as_rng(rng)
    check_range(mean, "mean", 0.0, 1.0, closed="neither")
    check_range(icc, "icc", 0.0, 1.0, closed="left")
    if not math.isfinite(_real(beta_x, "beta_x")):
        raise EvalkitInputError("beta_x", f"beta_x must be a finite number, got {beta_x!r}")
    mu, sigma_u = simulate_calibrate(float(mean), float(icc), float(beta_x))
    n_g = _sizes_resolve(sizes, n_clusters, cluster_size, gen, dominant_share)
    M = n_g.size
    g, u, x, p, y = _outcomes_draw(gen, n_g, mu, sigma_u, float(beta_x))
    width = len(str(M - 1))
    df = pd.DataFrame({
        "model": model,
        "item": [f"i{k:05d}" for k in range(g.size)],
        "cluster": [f"c{k:0{width}d}" for k in g],
        "correct": y,
        "status": "ok",
        "x": x,
        "u": u,
        "p": p,
        "correct_full": y,
    })
    df.attrs.update(mu=mu, sigma_u=sigma_u, icc=icc, mean=mean, beta_x=beta_x, sizes=n_g.tolist())
    return df


def simulate_missing(df: pd.DataFrame, *, mechanism: Mechanism | Literal["mnar_cluster"], response_rate: float,
                     strength: float = 1.0, rng: np.random.Generator | int, reason: str = "refusal",
                     latent: float = 0.0) -> pd.DataFrame:
    """Hide some outcomes of a simulated long table according to a missingness mechanism.

    The response indicator ``R`` follows ``logit P(R=1) = a0 + strength * z`` where ``z`` is

    * ``"mcar"``: nothing (``z = 0``): missing completely at random;
    * ``"mar"``: the observed covariate ``x`` (standardised): at random given ``x``;
    * ``"mar_cluster"``: the cluster effect ``u / sd(u)``. Response depends on the cluster, and
      the cluster label is observed, so the answers are missing **at random given the cluster**:
      a cluster-aware propensity (fixed or random intercept) models it and IPW removes the bias.
      Given ``x`` alone it is not at random, which is why a plain logistic propensity fails.
      (Called ``"mnar_cluster"`` before evalkit 0.3; that name still works with a
      ``DeprecationWarning``.)
    * ``"mnar_item"``: ``2 y - 1``, the unobserved outcome itself: missing not at random. No
      propensity on observed data can model it; only bounds and sensitivity analysis help.

    ``latent`` adds a cluster effect shared with the outcome ("latent dependence"):
    ``logit P(R=1) = a0 + strength * z + latent * u / sigma_u``, the same ``u`` that moves the
    outcome. Answers are then missing at random given ``x`` *and* the cluster effect ``u`` (the
    table's column ``u``, a cluster-level feature), not given ``x`` alone; response and outcome
    are correlated within clusters. With ``latent=0`` (the default) nothing changes.

    ``a0`` is solved so that the expected response rate over the items equals ``response_rate``.
    Positive ``strength`` means easier items (or correct answers) are answered more often, so the
    complete-case accuracy is biased upward, as with refusals of hard questions.

    Paper: [MISSING].

    Parameters
    ----------
    df : DataFrame
        Output of :func:`simulate_clustered` (needs ``x``, ``u`` and ``correct_full``).
    mechanism : {"mcar", "mar", "mar_cluster", "mnar_item"}
    response_rate : float in (0, 1]
    strength : float
    rng : Generator or int
    reason : str
        The missing reason written into ``status`` (default ``refusal``).
    latent : float
        Log-odds effect on response of the standardised cluster effect ``u / sigma_u`` of the
        outcome model (0 = none).

    Returns
    -------
    DataFrame
        A copy with ``correct`` NaN and ``status = reason`` where not observed, and the true
        response probability in ``p_respond``.
    """
    if mechanism in _DEPRECATED_MECHANISMS:
        new = _DEPRECATED_MECHANISMS[mechanism]
        warnings.warn(f"mechanism {mechanism!r} is deprecated: missingness driven by the cluster is missing at "
                      f"random given the (observed) cluster, not MNAR; use {new!r}", DeprecationWarning, stacklevel=2)
        mechanism = new  # type: ignore[assignment]
    if mechanism not in MECHANISMS:
        raise EvalkitInputError("mechanism", f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if not 0.0 < response_rate <= 1.0:
        raise EvalkitInputError("response_rate", f"response_rate must be in (0, 1], got {response_rate}")
    if reason not in MISSING_REASONS:
        raise EvalkitInputError("reason", f"reason must be one of {MISSING_REASONS}, got {reason!r}")
    for col in ("x", "u", "correct_full"):
        if col not in df.columns:
            raise EvalkitInputError("df", f"simulate_missing needs column {col!r}: start from simulate_clustered()")
    rng = as_rng(rng)
    y = df["correct_full"].to_numpy(dtype=float)
    if mechanism == "mcar":
        z = np.zeros(len(df))
    elif mechanism == "mar":
        x = df["x"].to_numpy(dtype=float)
        z = (x - x.mean()) / (x.std() or 1.0)
    elif mechanism == "mar_cluster":
        u = df["u"].to_numpy(dtype=float)
        sd = df.attrs.get("sigma_u") or u.std()
        z = u / sd if sd > 0 else np.zeros(len(df))
    else:
        z = 2.0 * y - 1.0
    if latent:
        u = df["u"].to_numpy(dtype=float)
        sd = df.attrs.get("sigma_u") or u.std()
        z_lat = float(latent) * (u / sd if sd > 0 else np.zeros(len(df)))
        z, k = strength * z + z_lat, 1.0
    else:
        k = strength
    out = df.copy()
    if response_rate == 1.0:
        p_r = np.ones(len(df))
    else:
        a0 = optimize.brentq(lambda a: special.expit(a + k * z).mean() - response_rate, -50, 50)
        p_r = special.expit(a0 + k * z)
    r = rng.random(len(df)) < p_r
    out["p_respond"] = p_r
    out.loc[~r, "correct"] = np.nan
    out.loc[~r, "status"] = reason
    out.attrs.update({**df.attrs, "mechanism": mechanism, "response_rate": response_rate, "strength": strength})
    if latent:
        out.attrs["latent"] = float(latent)
    return out


def simulate_2pl(
    n_models: int,
    n_items: int,
    *,
    rng: np.random.Generator | int,
    sigma: float = 1.0,
    missing: float = 0.0,
    mechanism: Literal["mcar", "mar", "mnar"] = "mcar",
    a_spread: float = 0.5,
    a_mean: float = 0.0,
    b_sd: float = 1.0,
    dtype: type = np.float64,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Draw a 2PL response matrix with known parameters and missing entries ([CBMM]).

    ``theta ~ N(0, 1)`` standardised exactly to mean 0 and variance 1 (the fit's scale), ``a =
    exp(N(a_mean, a_spread^2))``, ``b ~ N(0, b_sd^2)``, ``Y_ij ~ Bernoulli(sigmoid((theta_i a_j +
    b_j) / sigma))``; then a fraction ``missing`` of entries is set to ``NaN`` by

    * ``"mcar"``: completely at random;
    * ``"mar"``: with log-odds ``c - x_ij / sigma`` (weak models on hard items go missing more
      often), depending on the parameters but not on the drawn outcome, so the likelihood of the
      observed entries is still right;
    * ``"mnar"``: only wrong answers go missing (like unparsable failed answers), at the rate that
      gives the requested overall fraction (capped at all wrong answers): the observed entries
      then overstate every model and item.

    Parameters
    ----------
    n_models, n_items : int
    rng : Generator or int
    sigma : float
        Temperature.
    missing : float
        Expected fraction of entries set to NaN, in ``[0, 1)``.
    mechanism : {"mcar", "mar", "mnar"}
    a_spread, a_mean : float
        Log-normal spread and location of the discriminations (``a_spread = 0``: all equal).
    b_sd : float
        Standard deviation of the easiness.
    dtype : numpy float type
        dtype of the returned matrix (float32 halves memory at leaderboard scale).

    Returns
    -------
    Y : (n_models, n_items) array
        0/1 with NaN for missing entries.
    truth : dict
        ``theta``, ``a``, ``b``, ``sigma``, ``mechanism``, ``missing`` (realised fraction).

    Raises
    ------
    ValueError
        Sizes below (2, 1), ``missing`` outside ``[0, 1)``, unknown mechanism, ``sigma <= 0``.
    """
    rng = as_rng(rng)
    sigma = _check_sigma(sigma)
    if int(n_models) < 2 or int(n_items) < 1:
        raise EvalkitInputError("n_models", f"need n_models >= 2 and n_items >= 1, got {n_models}, {n_items}")
    if not 0.0 <= missing < 1.0:
        raise EvalkitInputError("missing", f"missing must be a fraction in [0, 1), got {missing}")
    if mechanism not in ("mcar", "mar", "mnar"):
        raise EvalkitInputError("mechanism", f"mechanism must be 'mcar', 'mar' or 'mnar', got {mechanism!r}")
    if a_spread < 0 or b_sd < 0:
        raise EvalkitInputError("a_spread", "a_spread and b_sd must be non-negative")
    n, m = int(n_models), int(n_items)
    theta = rng.standard_normal(n)
    theta = (theta - theta.mean()) / theta.std()
    a = np.exp(a_mean + a_spread * rng.standard_normal(m))
    b = b_sd * rng.standard_normal(m)
    Y: np.ndarray = np.empty((n, m), dtype=dtype)
    step = _row_step(m)
    c_mar = 0.0
    if mechanism == "mar" and missing > 0:
        # solve mean(sigmoid(c - x/sigma)) = missing for c on a sub-sample of rows
        sub = np.multiply.outer(theta[:: max(1, n // 200)], a) + b
        c_mar = optimize.brentq(lambda c: float(np.mean(_sigmoid(c - sub / sigma))) - missing, -50, 50)
    wrong_rate = 0.0
    n_missing = 0
    p_wrong_total = 0.0
    for s in range(0, n, step):
        x = np.multiply.outer(theta[s : s + step], a) + b
        p = _sigmoid(x / sigma)
        p_wrong_total += float((1.0 - p).sum())
    if mechanism == "mnar" and missing > 0:
        wrong_rate = min(1.0, missing * n * m / p_wrong_total)
    for s in range(0, n, step):
        x = np.multiply.outer(theta[s : s + step], a) + b
        p = _sigmoid(x / sigma)
        y: np.ndarray = (rng.random(p.shape) < p).astype(dtype)
        if missing > 0:
            u = rng.random(p.shape)
            if mechanism == "mcar":
                drop = u < missing
            elif mechanism == "mar":
                drop = u < _sigmoid(c_mar - x / sigma)
            else:
                drop = (y == 0) & (u < wrong_rate)
            y[drop] = np.nan
            n_missing += int(drop.sum())
        Y[s : s + step] = y
    truth = {"theta": theta, "a": a, "b": b, "sigma": sigma, "mechanism": mechanism,
             "missing": n_missing / (n * m)}
    return Y, truth


def simulate_paired(*, n_clusters: int | None = None, cluster_size: int | None = None, k: int = 1,
                    sizes: SizeDesign | np.ndarray | Sequence[int] = "balanced",
                    mu_a: float = 0.4, mu_b: float = 0.2, sd_cluster: float = 1.0, sd_item: float = 1.5,
                    sd_cluster_diff: float = 0.3, sd_item_diff: float = 0.6,
                    rng: np.random.Generator | int) -> pd.DataFrame:
    """Two models answering the same clustered questions ``k`` times each (a paired, resampled eval).

    On the logit scale question ``i`` of cluster ``g`` has a shared difficulty ``u_g + e_i`` and a
    model-specific part ``+-(v_g + f_i)/2``:
    ``logit p_A = mu_a + u_g + e_i + (v_g + f_i)/2``, ``logit p_B = mu_b + u_g + e_i - (v_g + f_i)/2``
    with ``u_g ~ N(0, sd_cluster^2)``, ``e_i ~ N(0, sd_item^2)``, ``v_g ~ N(0, sd_cluster_diff^2)``,
    ``f_i ~ N(0, sd_item_diff^2)``; each answer is Bernoulli(``p``). The shared part makes the two
    models' outcomes correlated (what pairing exploits), the cluster parts make them clustered, and
    ``k > 1`` adds repeated answers (what resampling averages). ``sizes`` is a design name (with
    ``n_clusters`` and ``cluster_size``) or explicit cluster sizes. Used by the planning lesson and to
    check :mod:`evalkit.planning`'s power formulas by simulation.

    Returns
    -------
    DataFrame
        One row per (model, item, answer): ``model`` (``"A"``/``"B"``), ``item``, ``cluster``,
        ``epoch`` (1..k), ``correct``, ``status`` (``ok``) and ``p_true``. Several rows per
        (model, item), as ``log_read(..., epochs="all")`` returns.
    """
    if k < 1:
        raise EvalkitInputError("k", f"k (answers per question) must be >= 1, got {k}")
    g = as_rng(rng)
    n_g = _sizes_resolve(sizes, n_clusters, cluster_size, g, DOMINANT_SHARE)
    if n_g.size < 2:
        raise EvalkitInputError("n_clusters", "simulate_paired needs at least two clusters")
    cl = np.repeat(np.arange(len(n_g)), n_g)
    n = cl.size
    shared = g.normal(0, sd_cluster, len(n_g))[cl] + g.normal(0, sd_item, n)
    diff = g.normal(0, sd_cluster_diff, len(n_g))[cl] + g.normal(0, sd_item_diff, n)
    p = {"A": special.expit(mu_a + shared + diff / 2), "B": special.expit(mu_b + shared - diff / 2)}
    frames = []
    for model, pm in p.items():
        y = (g.random((k, n)) < pm).astype(float)
        frames.append(pd.DataFrame({
            "model": model, "item": np.tile([f"q{i:05d}" for i in range(n)], k),
            "cluster": np.tile([f"c{c:03d}" for c in cl], k), "epoch": np.repeat(np.arange(1, k + 1), n),
            "correct": y.ravel(), "status": "ok", "p_true": np.tile(pm, k)}))
    return pd.concat(frames, ignore_index=True)


def simulate_redundant(
    *,
    n_models: int = 8,
    n_reference: int | list[int] = 20,
    n_options: int = 4,
    n_paraphrases: int = 2,
    n_lookalikes: int = 2,
    spread: float = 0.8,
    signature: float = 3.0,
    rng: np.random.Generator | int,
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, dict[str, Any]]:
    """A RedundantQA-like benchmark with known sub-domains and option probabilities ([HARMONY]).

    Modelled on the source's RedundantQA: several domains (four by default), each *reference*
    item with near-duplicates that behave like it (``n_paraphrases``, the "true paraphrases") and
    *look-alikes* that carry its surface label but behave like another domain
    (``n_lookalikes``, the "false look-alikes"). The true sub-domain of an item is the domain it
    behaves like; its surface label is the domain it looks like.

    Model ``f``'s option probabilities on item ``j`` of true domain ``d`` are
    ``softmax(gamma_d + eta_j + (alpha_fd - beta_j) e_{c_j})``: ``gamma_d`` a domain signature
    over the options (domain ``d`` leans by ``signature`` towards option ``d mod n_options``, as
    the answers to an emotion question lean towards its emotion), ``eta_j`` an item's own tilt (shared, slightly
    perturbed, by its paraphrases), ``c_j`` the correct option, ``beta_j`` the difficulty and
    ``alpha_fd = a_f + delta_fd`` the model's ability in the domain, with
    ``delta_fd ~ N(0, spread^2)``: ``spread = 0`` makes every model even across domains (high
    HARMONY), a large ``spread`` uneven (low HARMONY). Each model answers by drawing an option
    from its distribution; ``Y`` records whether it was the correct one.

    The ground truth: ``truth["p_correct"]`` (each model's probability of answering each item
    correctly) and ``items["domain"]``; the ground-truth HARMONY is
    ``harmony_score(truth["p_correct"], partition_labels(items["domain"]), b=b)``.

    Parameters
    ----------
    n_models : int
        At least 2.
    n_reference : int or list of int
        Reference items per domain: one int for four equal domains, or one count per domain
        (unequal counts make over-represented sub-domains).
    n_options : int
        Answer options (at least 2).
    n_paraphrases, n_lookalikes : int
        Near-duplicates and look-alikes per reference item.
    spread : float
        SD of the domain-specific part of the abilities.
    signature : float
        Strength of each domain's lean towards its own option (larger: domains easier to tell
        apart by behaviour).
    rng : Generator or int

    Returns
    -------
    P : (n_models, n_items, n_options) array
        Option probabilities.
    Y : (n_models, n_items) float array
        0/1 outcomes.
    items : DataFrame
        One row per item: ``item, reference, kind`` (reference, paraphrase, lookalike),
        ``surface_domain, domain, answer``.
    truth : dict
        ``p_correct`` (n_models, n_items), ``ability`` (n_models, n_domains), ``spread``.

    Raises
    ------
    ValueError
        Counts or scales out of range.
    """
    rng = as_rng(rng)
    counts = [int(n_reference)] * 4 if isinstance(n_reference, (int, np.integer)) else [int(c) for c in n_reference]
    n_dom = len(counts)
    if n_dom < 2 or min(counts) < 1:
        raise EvalkitInputError(
            "n_reference", f"n_reference must give at least one reference item to each of >= 2 domains, got {counts}")
    if n_models < 2 or n_options < 2 or n_paraphrases < 0 or n_lookalikes < 0:
        raise EvalkitInputError(
            "n_models", "need n_models >= 2, n_options >= 2, and non-negative n_paraphrases and n_lookalikes")
    if spread < 0 or signature < 0:
        raise EvalkitInputError("spread", "spread and signature must be non-negative")
    gamma = 0.5 * rng.standard_normal((n_dom, n_options))
    gamma[np.arange(n_dom), np.arange(n_dom) % n_options] += signature  # each domain leans to its own option
    ability = 1.0 + 0.5 * rng.standard_normal(n_models)[:, None] + spread * rng.standard_normal((n_models, n_dom))
    rows: list[dict[str, Any]] = []
    dom, tilt, diff, ans = [], [], [], []
    for d, c in enumerate(counts):
        for r in range(c):
            ref = f"d{d}r{r:03d}"
            eta = 0.5 * rng.standard_normal(n_options)
            beta = 0.5 * rng.standard_normal()
            answer = int(rng.integers(n_options))
            kinds = [("reference", d)] + [("paraphrase", d)] * n_paraphrases
            others = [o for o in range(n_dom) if o != d]
            kinds += [("lookalike", int(rng.choice(others))) for _ in range(n_lookalikes)]
            for j, (kind, true_d) in enumerate(kinds):
                if kind == "reference":
                    e, bj, aj = eta, beta, answer
                elif kind == "paraphrase":
                    e, bj, aj = eta + 0.1 * rng.standard_normal(n_options), beta + 0.1 * rng.standard_normal(), answer
                else:
                    e, bj, aj = 0.5 * rng.standard_normal(n_options), 0.5 * rng.standard_normal(), int(
                        rng.integers(n_options))
                rows.append({"item": f"{ref}_{j}", "reference": ref, "kind": kind, "surface_domain": f"domain{d}",
                             "domain": f"domain{true_d}", "answer": aj})
                dom.append(true_d)
                tilt.append(e)
                diff.append(bj)
                ans.append(aj)
    dom_a, ans_a = np.array(dom), np.array(ans)
    base = gamma[dom_a] + np.array(tilt)  # (n_items, n_options)
    n_items = base.shape[0]
    logits = np.repeat(base[None], n_models, axis=0)
    boost = ability[:, dom_a] - np.array(diff)[None, :]
    logits[:, np.arange(n_items), ans_a] += boost
    logits -= logits.max(axis=2, keepdims=True)
    P = np.exp(logits)
    P /= P.sum(axis=2, keepdims=True)
    p_correct = P[:, np.arange(n_items), ans_a]
    cum = np.cumsum(P, axis=2)
    u = rng.random((n_models, n_items, 1))
    chosen = np.minimum((u > cum).sum(axis=2), n_options - 1)
    Y = (chosen == ans_a[None, :]).astype(float)
    items = pd.DataFrame(rows)
    return P, Y, items, {"p_correct": p_correct, "ability": ability, "spread": float(spread)}
