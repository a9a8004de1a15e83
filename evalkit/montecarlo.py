"""The Monte Carlo harness: run estimators over seeded replications and score them against truth.

Every simulation study in evalkit goes through :func:`mc_run` (the replications) and
:func:`mc_summarise` (bias, RMSE, coverage with its Monte Carlo standard error, interval width).
Replication ``r`` draws from its own generator, spawned from one ``SeedSequence(seed)``, so any
single replication can be re-run on its own, results do not depend on the order of estimators,
and a run spread over processes or a cluster (``executor=``) gives exactly the serial result.

A replication *fails* for an estimator when the simulator or the estimator raises, or when the
estimate or the interval is NaN. Failures are kept as rows (``error`` holds the exception's type
and message, or what was NaN), counted by :func:`mc_summarise` in ``n_failed``, reported with an
:class:`~evalkit.EvalkitWarning`, and left out of bias, RMSE and coverage (Morris, White and
Crowther 2019, "Using simulation studies to evaluate statistical methods", Sec. 5.3).
"""

from __future__ import annotations

import concurrent.futures
import copy
import dataclasses
import functools
import math
import numbers
import pickle
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from ._checks import as_float_vector, check_int, check_positive, check_range, warn
from .clustered import Estimate
from .errors import EvalkitInputError, EvalkitInputTypeError, RangeWarning

__all__ = ["mc_run", "mc_summarise", "mc_tolerance", "mc_share_above", "mc_coverage_clustered", "ShareAbove"]

RUN_COLUMNS = ("rep", "estimator", "truth", "estimate", "se", "ci_low", "ci_high", "error")
"""The columns of :func:`mc_run` output, in order."""

# Replications per task sent to an executor: about 100 tasks per run, at least one replication each.
_TASKS_PER_RUN = 100


def _check_seed(seed: object) -> int:
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if int(seed) < 0:
            raise EvalkitInputError("seed", f"seed must be a non-negative int, got {seed}")
        return int(seed)
    raise EvalkitInputTypeError(
        "seed", "seed must be an int (evalkit never draws unseeded numbers, and each replication's generator is "
        f"spawned from SeedSequence(seed)); got {type(seed).__name__} {seed!r}"
    )


def _check_truth_value(value: object, where: str) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        raise EvalkitInputTypeError(
            "truth", f"truth{where} must be a real number, got {type(value).__name__} {value!r}")
    t = float(value)
    if math.isnan(t):
        raise EvalkitInputError("truth", f"truth{where} is NaN: the estimand must be a number in every replication")
    if math.isinf(t):
        raise EvalkitInputError("truth", f"truth{where} is infinite: the estimand must be a finite number")
    return t


def _read_only(data: Any) -> Any:
    """A read-only view of an array (estimators that write into it fail loudly); other data as is."""
    if isinstance(data, np.ndarray) and data.flags.writeable:
        view = data.view()
        view.flags.writeable = False
        return view
    return data


def _unchanged(a: Any, b: Any) -> bool:
    """Whether ``a`` still equals its deep copy ``b`` (arrays, pandas objects, containers, dataclasses)."""
    if isinstance(a, pd.DataFrame):
        return (isinstance(b, pd.DataFrame) and list(a.columns) == list(b.columns)
                and list(a.dtypes) == list(b.dtypes) and a.equals(b))
    if isinstance(a, pd.Series):
        return isinstance(b, pd.Series) and a.dtype == b.dtype and a.index.equals(b.index) and bool(a.equals(b))
    if isinstance(a, pd.Index):
        return isinstance(b, pd.Index) and a.dtype == b.dtype and bool(a.equals(b))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, Mapping):
        return isinstance(b, Mapping) and list(a) == list(b) and all(_unchanged(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_unchanged(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(_unchanged(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:  # objects without a usable ==: compare what they would pickle to
        try:
            return pickle.dumps(a) == pickle.dumps(b)
        except Exception:
            return True  # nothing to compare with; the estimators see the object as it is


def _as_row_values(res: object, name: str, rep: int) -> dict[str, float]:
    """The numbers of one estimator's return value, refusing anything that is not one estimate."""
    if isinstance(res, Estimate):
        return {"estimate": float(res.estimate), "se": float(res.se), "ci_low": float(res.ci_low),
                "ci_high": float(res.ci_high)}
    if isinstance(res, np.ndarray) and res.ndim == 0:
        res = res.item()
    if isinstance(res, numbers.Real) and not isinstance(res, (bool, np.bool_)):
        return {"estimate": float(res), "se": np.nan, "ci_low": np.nan, "ci_high": np.nan}
    shape = f" of shape {res.shape}" if isinstance(res, np.ndarray | pd.Series | pd.DataFrame) else ""
    raise TypeError(
        f"estimator {name!r} returned {type(res).__name__}{shape} in replication {rep}; "
        "an estimator must return one evalkit Estimate or one real number"
    )


def _nan_failure(values: Mapping[str, float], has_interval: bool) -> str:
    if math.isnan(values["estimate"]):
        return "NaN estimate"
    if not math.isfinite(values["estimate"]):
        return "infinite estimate"
    if has_interval and (math.isnan(values["ci_low"]) or math.isnan(values["ci_high"])):
        return "NaN interval"
    return ""


def _reason(error: str) -> str:
    """The kind of a failure, for counting: the exception type (with its origin) or the NaN text."""
    parts = error.split(": ")
    if parts[0] in ("simulate", "executor") and len(parts) > 1:
        return f"{parts[0]}: {parts[1]}"
    return parts[0]


def _copy_on_write() -> bool:
    """Whether pandas copies a frame's buffers before writing into shared ones (always from pandas 3)."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    try:
        return pd.get_option("mode.copy_on_write") is True
    except (KeyError, pd.errors.OptionError):  # pragma: no cover - very old pandas
        return False


def _fingerprint(data: Any) -> tuple[int, ...] | None:
    """Identities of a frame's index, columns and column buffers; None when not a frame (or unknown)."""
    if not isinstance(data, pd.DataFrame) or not _copy_on_write():
        return None
    try:
        arrays = data._mgr.arrays
    except AttributeError:  # pragma: no cover - pandas internals moved
        return None
    return (id(data.index), id(data.columns), *(id(a) for a in arrays))


class _Guard:
    """The data every estimator of one replication sees, and the means to keep it as simulated.

    Arrays are handed over read-only. Anything else is compared with a deep copy after each
    estimator and restored from it when changed. A pandas frame is first checked cheaply: a
    shallow copy shares its buffers, so under copy-on-write any write through the frame's own
    methods gives it new buffers, and unchanged buffer identities mean unchanged data (writing
    into ``frame[col].array`` by hand bypasses this and is not detected).
    """

    def __init__(self, data: Any) -> None:
        self.data = _read_only(data)
        self.pristine = copy.deepcopy(self.data)
        self._sharer = self.data.copy(deep=False) if isinstance(self.data, pd.DataFrame) else None
        self._print = _fingerprint(self.data)

    def changed(self) -> bool:
        """Whether the data differ from the simulated data (and if so, restore them)."""
        if self._print is not None and _fingerprint(self.data) == self._print:
            return False
        if _unchanged(self.data, self.pristine):
            self._print = _fingerprint(self.data)
            return False
        self.__init__(self.pristine)  # type: ignore[misc]
        return True


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _run_reps(simulate: Callable[[np.random.Generator], Any],
              estimators: Mapping[str, Callable[[Any], Estimate | float]],
              truth: float | Callable[[Any], float],
              reps: Sequence[int], seeds: Sequence[np.random.SeedSequence]) -> list[dict[str, Any]]:
    """Run the replications ``reps`` (with their seeds) and return their rows, in order."""
    rows: list[dict[str, Any]] = []
    for r, ss in zip(reps, seeds, strict=True):
        base = {"rep": r, "truth": np.nan, "estimate": np.nan, "se": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                "error": ""}
        try:
            guard = _Guard(simulate(np.random.default_rng(ss)))
            t = truth(guard.data) if callable(truth) else truth
        except Exception as exc:
            rows += [{**base, "estimator": name, "error": "simulate: " + _error_text(exc)} for name in estimators]
            continue
        base["truth"] = _check_truth_value(t, f" in replication {r}")
        guard.changed()  # if the truth function changed the data, start from the copy
        for name, est in estimators.items():
            row = {**base, "estimator": name}
            try:
                res = est(guard.data)
            except Exception as exc:
                row["error"] = _error_text(exc)
            else:
                values = _as_row_values(res, name, r)
                row.update(values)
                row["error"] = _nan_failure(values, isinstance(res, Estimate))
            if guard.changed():  # the next estimator gets the data as simulated
                row["error"] = row["error"] or "estimator changed its input data"
            rows.append(row)
    return rows


def _blocks(n_reps: int) -> Iterator[range]:
    size = max(1, math.ceil(n_reps / _TASKS_PER_RUN))
    for start in range(0, n_reps, size):
        yield range(start, min(start + size, n_reps))


def mc_run(simulate: Callable[[np.random.Generator], Any],
           estimators: Mapping[str, Callable[[Any], Estimate | float]], *,
           truth: float | Callable[[Any], float], n_reps: int, seed: int,
           progress: bool | None = None,
           executor: concurrent.futures.Executor | None = None) -> pd.DataFrame:
    """Run every estimator on ``n_reps`` simulated data sets.

    Replication ``r`` simulates with ``default_rng(SeedSequence(seed).spawn(n_reps)[r])``, so the
    output does not depend on which estimators run, on their order, or on the executor.

    Parameters
    ----------
    simulate : callable ``rng -> data``
        Draws one data set.
    estimators : mapping name -> callable ``data -> Estimate | float``
        Each returns an :class:`~evalkit.clustered.Estimate` (or one real number when it has no
        interval). Every estimator sees the data as simulated: an array is passed read-only, and
        other data changed by an estimator is restored (that estimator's row fails) before the
        next one runs.
    truth : float or callable ``data -> float``
        The estimand, fixed or per data set (for example the full-data accuracy of a finite
        population of items). It may not be NaN.
    n_reps : int
        Number of replications.
    seed : int
        Seed of the ``SeedSequence`` the replications' generators are spawned from (``None`` is
        refused: evalkit never draws unseeded numbers).
    progress : bool or None
        Show a progress bar; None shows one when ``n_reps >= 200``.
    executor : concurrent.futures.Executor, optional
        Run blocks of replications on it, e.g. a ``ProcessPoolExecutor`` or a ``dask.distributed``
        cluster's ``Client.get_executor()``; the result is identical to the serial run. With a
        process pool, ``simulate``, ``estimators`` and ``truth`` must be picklable (module-level
        functions or ``functools.partial`` of them, not lambdas).

    Returns
    -------
    DataFrame
        One row per replication and estimator, ordered by replication then estimator: ``rep,
        estimator, truth, estimate, se, ci_low, ci_high, error``. ``error`` is ``""`` for a
        successful replication; otherwise it holds the exception as ``"Type: message"``
        (prefixed ``"simulate: "`` when the simulator raised) or says what was NaN.

    Raises
    ------
    TypeError
        If ``seed`` is not an int, the truth is not a number, an estimator returns something
        other than one Estimate or number (the message names the estimator and the replication),
        or, with a process pool, the functions cannot be pickled.
    ValueError
        If ``n_reps < 1``, there are no estimators, or the truth is NaN (the message names the
        replication).

    Warns
    -----
    EvalkitWarning
        When replications failed: how many, per estimator, and the most frequent reasons.

    Examples
    --------
    >>> import numpy as np
    >>> runs = mc_run(lambda rng: rng.normal(0.0, 1.0, 20), {"mean": np.mean}, truth=0.0, n_reps=50, seed=1)
    >>> runs.shape, int((runs["error"] != "").sum())
    ((50, 8), 0)
    """
    seed = _check_seed(seed)
    if not isinstance(n_reps, (int, np.integer)) or isinstance(n_reps, bool) or n_reps < 1:
        raise EvalkitInputError("n_reps", f"n_reps must be a positive int, got {n_reps!r}")
    n_reps = int(n_reps)
    if not estimators:
        raise EvalkitInputError("estimators", "give at least one estimator")
    if not isinstance(estimators, Mapping):
        raise EvalkitInputTypeError(
            "estimators", f"estimators must be a mapping name -> callable, e.g. {{'mean': f}}; got "
            f"{type(estimators).__name__}")
    if not callable(simulate):
        raise EvalkitInputTypeError("simulate", f"simulate must be a callable rng -> data, got {simulate!r}")
    check_int(n_reps, "n_reps", minimum=1)
    if not callable(truth):
        truth = _check_truth_value(truth, "")
    if isinstance(executor, concurrent.futures.ProcessPoolExecutor):
        try:
            pickle.dumps((simulate, dict(estimators), truth))
        except Exception as exc:
            raise TypeError(
                "with a process pool, simulate, the estimators and truth must be picklable (module-level "
                f"functions or functools.partial of them, not lambdas or local functions): {_error_text(exc)}"
            ) from exc
    children = np.random.SeedSequence(seed).spawn(n_reps)
    show = n_reps >= 200 if progress is None else progress
    bar: Any = None
    if show:
        from tqdm.auto import tqdm
        bar = tqdm(total=n_reps, desc="Monte Carlo", leave=False)

    parts: dict[int, list[dict[str, Any]]] = {}
    try:
        if executor is None:
            for r in range(n_reps):
                parts[r] = _run_reps(simulate, estimators, truth, [r], [children[r]])
                if bar is not None:
                    bar.update(1)
        else:
            est = dict(estimators)
            futures = {executor.submit(_run_reps, simulate, est, truth, list(block), [children[r] for r in block]):
                       block for block in _blocks(n_reps)}
            for future in concurrent.futures.as_completed(futures):
                block = futures[future]
                try:
                    parts[block[0]] = future.result()
                except (TypeError, ValueError):
                    raise  # a broken contract (wrong return, NaN truth) named in the message
                except Exception as exc:  # a lost worker: these replications failed, the others stand
                    parts[block[0]] = [
                        {"rep": r, "estimator": name, "truth": np.nan, "estimate": np.nan, "se": np.nan,
                         "ci_low": np.nan, "ci_high": np.nan, "error": "executor: " + _error_text(exc)}
                        for r in block for name in est]
                if bar is not None:
                    bar.update(len(block))
    finally:
        if bar is not None:
            bar.close()

    rows = [row for start in sorted(parts) for row in parts[start]]
    runs = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    runs["rep"] = runs["rep"].astype(int)
    _warn_failures(runs)
    return runs


def _warn_failures(runs: pd.DataFrame) -> None:
    failed = runs[runs["error"] != ""]
    if failed.empty:
        return
    n_reps = runs["rep"].nunique()
    per_est = failed.groupby("estimator", sort=False).size()
    reasons = Counter(_reason(e) for e in failed["error"])
    warn(
        "failed replications (excluded from bias, RMSE and coverage; counted in mc_summarise's n_failed): "
        + ", ".join(f"{name} {k} of {n_reps}" for name, k in per_est.items())
        + "; reasons: " + ", ".join(f"{reason} ({k})" for reason, k in reasons.most_common(5))
        + "; see the 'error' column"
    )


_STANDARD = frozenset(RUN_COLUMNS) - {"estimator"}


def mc_summarise(runs: pd.DataFrame, *, scale: float = 1.0) -> pd.DataFrame:
    """Bias, RMSE, coverage and interval width per estimator, with Monte Carlo standard errors.

    A replication counts as failed, and is left out of every statistic but ``n_failed``, when
    its ``error`` is not empty, its estimate is not finite, or its interval is NaN.

    Parameters
    ----------
    runs : DataFrame
        Output of :func:`mc_run` (several runs may be concatenated with extra grouping columns;
        every column other than the standard ones is used as a grouping key).
    scale : float
        Multiply bias, RMSE, SE and width by this (100 reports them in accuracy points).

    Returns
    -------
    DataFrame
        Indexed by the grouping keys and ``estimator``: ``n_reps`` (successful replications),
        ``n_failed``, ``bias, bias_mcse, rmse, coverage, coverage_mcse, width, se_mean,
        sd_estimate``. ``coverage_mcse`` is the binomial standard error ``sqrt(c (1 - c) / n)``.
        Coverage is NaN for an estimator without intervals.

    Raises
    ------
    ValueError
        If ``runs`` lacks a column of :func:`mc_run` output, or a truth is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> runs = mc_run(lambda rng: rng.normal(0.0, 1.0, 20), {"mean": np.mean}, truth=0.0, n_reps=50, seed=1)
    >>> summary = mc_summarise(runs)
    >>> int(summary.loc["mean", "n_reps"]), int(summary.loc["mean", "n_failed"])
    (50, 0)
    >>> bool(abs(summary.loc["mean", "bias"]) < 3 * summary.loc["mean", "bias_mcse"])
    True
    """
    if not isinstance(runs, pd.DataFrame):
        raise EvalkitInputTypeError("runs", f"runs must be the DataFrame of mc_run, got {type(runs).__name__}")
    missing = [c for c in RUN_COLUMNS if c not in runs.columns]
    if missing:
        raise EvalkitInputError("runs", f"runs must come from mc_run: the columns {missing} are missing")
    if runs.empty:
        raise EvalkitInputError("runs", "runs is empty: there is nothing to summarise")
    scale = check_positive(scale, "scale")
    # a CSV round trip turns the empty error strings of successful replications into NaN
    runs = runs.assign(error=runs["error"].astype(object).fillna("").astype(str))
    reversed_ = runs["ci_low"] > runs["ci_high"]
    if reversed_.any():
        warn(f"{int(reversed_.sum())} replications have a reversed interval (ci_low > ci_high); they are counted "
             "as failed", category=RangeWarning)
        runs = runs.assign(error=runs["error"].where(~reversed_, "reversed interval"))
    if runs["truth"].isna().any() and (runs.loc[runs["truth"].isna(), "error"] == "").any():
        bad = runs.loc[runs["truth"].isna() & (runs["error"] == ""), "rep"].iloc[0]
        raise EvalkitInputError(
            "runs", f"truth is NaN in replication {bad}: every successful replication needs a number")
    keys = [c for c in runs.columns if c not in _STANDARD and c != "estimator"] + ["estimator"]

    def one(g: pd.DataFrame) -> pd.Series:
        lo_nan, hi_nan = g["ci_low"].isna(), g["ci_high"].isna()
        interval = ~(lo_nan & hi_nan) | g["se"].notna()  # the estimator returned an Estimate
        bad_interval = interval & (lo_nan | hi_nan)
        ok = g[(g["error"] == "") & np.isfinite(g["estimate"].to_numpy(dtype=float)) & ~bad_interval]
        n = len(ok)
        err = ok["estimate"] - ok["truth"]
        has_ci = n > 0 and bool(ok["ci_low"].notna().all())
        cover = float(((ok["ci_low"] <= ok["truth"]) & (ok["truth"] <= ok["ci_high"])).mean()) if has_ci else np.nan
        return pd.Series({
            "n_reps": n,
            "n_failed": len(g) - n,
            "bias": err.mean() * scale if n else np.nan,
            "bias_mcse": err.std(ddof=1) / math.sqrt(n) * scale if n > 1 else np.nan,
            "rmse": math.sqrt((err**2).mean()) * scale if n else np.nan,
            "coverage": cover,
            "coverage_mcse": math.sqrt(cover * (1 - cover) / n) if has_ci else np.nan,
            "width": (ok["ci_high"] - ok["ci_low"]).mean() * scale if has_ci else np.nan,
            "se_mean": ok["se"].mean() * scale if n else np.nan,
            "sd_estimate": ok["estimate"].std(ddof=1) * scale if n > 1 else np.nan,
        })

    # `one` returns a Series, so apply gives a DataFrame (pandas-stubs say Series | DataFrame)
    out = cast(pd.DataFrame, runs.groupby(keys, sort=False, dropna=False)[list(_STANDARD)].apply(one))
    out["n_reps"] = out["n_reps"].astype(int)
    out["n_failed"] = out["n_failed"].astype(int)
    return out


def mc_tolerance(p: float, n_reps: int, z: float = 4.0) -> float:
    """Half-width allowed when checking a Monte Carlo proportion (e.g. coverage) against ``p``.

    ``z * sqrt(p (1 - p) / n_reps)``: with ``z = 4`` a correct method fails the check about once in
    16,000 runs, so a failing test points at the code, not at bad luck.
    """
    p = check_range(p, "p", 0.0, 1.0)
    n_reps = check_int(n_reps, "n_reps", minimum=1)
    z = check_positive(z, "z")
    return z * math.sqrt(p * (1 - p) / n_reps)


@dataclasses.dataclass(frozen=True)
class ShareAbove:
    """The share of simulated settings above a threshold, with its Monte Carlo SE.

    Attributes
    ----------
    share : float
        Share of the settings whose value lies above the threshold.
    mcse : float
        Monte Carlo standard error of ``share`` (see :func:`mc_share_above`).
    n_settings : int
        Number of settings.
    n_undecided : int
        Settings within 2 Monte Carlo SEs of the threshold (a longer run could put them on either side).
    """

    share: float
    mcse: float
    n_settings: int
    n_undecided: int


def mc_share_above(values: npt.ArrayLike, mcses: npt.ArrayLike, threshold: float = 0.90) -> ShareAbove:
    """Share of simulated settings whose value (e.g. coverage) is above ``threshold``, with its Monte Carlo SE.

    A claim such as "coverage above 90% in most settings" is checked as ``share > 0.5``. Each
    setting's value carries Monte Carlo error, so the share does too: setting ``g`` lands above the
    threshold with probability about ``p_g = Phi((v_g - threshold) / mcse_g)``, and the count above
    has variance ``sum_g p_g (1 - p_g)``. The settings' Monte Carlo errors are treated as
    independent (separate seeds per setting); settings that share replications make the SE an
    approximation.

    Parameters
    ----------
    values : array-like of float
        One value per distinct setting (each setting once: equal settings counted twice inflate the count).
    mcses : array-like of float
        The Monte Carlo SE of each value, non-negative, same length.
    threshold : float, default 0.90

    Returns
    -------
    ShareAbove

    Examples
    --------
    >>> r = mc_share_above([0.95, 0.93, 0.89], [0.005, 0.005, 0.005])
    >>> round(r.share, 3), round(r.mcse, 3), r.n_undecided
    (0.667, 0.05, 0)
    """
    v = as_float_vector(values, "values")
    se = as_float_vector(mcses, "mcses")
    if se.size != v.size:
        raise EvalkitInputError("mcses", f"mcses must have one entry per value: got {se.size} for {v.size} values")
    if np.any(se < 0):
        raise EvalkitInputError("mcses", "mcses must be non-negative")
    thr = check_range(threshold, "threshold", -math.inf, math.inf, closed="neither")
    from scipy import stats

    safe = np.maximum(se, 1e-12)
    p = stats.norm.cdf((v - thr) / safe)
    return ShareAbove(share=float(np.mean(v > thr)), mcse=float(np.sqrt(np.sum(p * (1 - p))) / v.size),
                      n_settings=int(v.size), n_undecided=int(np.sum(np.abs(v - thr) <= 2 * se)))


def _draw_clustered(rng: np.random.Generator, *, n_clusters: int, cluster_size: int, mean: float, icc: float,
                    sizes: str) -> pd.DataFrame:
    from .simulate import simulate_clustered

    return simulate_clustered(n_clusters=n_clusters, cluster_size=cluster_size, mean=mean, icc=icc, rng=rng,
                              sizes=sizes)  # type: ignore[arg-type]


def _mean_by_kind(data: pd.DataFrame, kind: str) -> Estimate:
    from .clustered import mean_estimate

    return mean_estimate(data["correct"], None if kind == "iid" else data["cluster"], se=kind)  # type: ignore[arg-type]


def mc_coverage_clustered(*, icc: float, n_clusters: int, cluster_size: int, mean: float = 0.6,
                          sizes: str = "balanced", se_kinds: tuple[str, ...] = ("iid", "CR1", "CR2"),
                          n_reps: int = 500, seed: int = 0, progress: bool | None = None,
                          executor: concurrent.futures.Executor | None = None) -> pd.DataFrame:
    """Coverage, width and bias of i.i.d. and cluster-robust intervals for one simulated setting.

    The study behind notebook 00.2 (and 00.3 for unequal sizes): draw a clustered benchmark with a
    known expected accuracy ``mean`` and ICC (:func:`evalkit.simulate_clustered`), compute each interval kind with
    :func:`evalkit.mean_estimate`, and summarise with :func:`mc_summarise`. ``executor`` is
    passed to :func:`mc_run` (the functions are picklable).

    Paper: [MISSING].

    Returns
    -------
    DataFrame
        :func:`mc_summarise` output indexed by ``estimator`` (one per ``se_kinds`` entry).
    """
    draw = functools.partial(_draw_clustered, n_clusters=n_clusters, cluster_size=cluster_size, mean=mean, icc=icc,
                             sizes=sizes)
    estimators = {kind: functools.partial(_mean_by_kind, kind=kind) for kind in se_kinds}
    runs = mc_run(draw, estimators, truth=mean, n_reps=n_reps, seed=seed, progress=progress, executor=executor)
    return mc_summarise(runs)
