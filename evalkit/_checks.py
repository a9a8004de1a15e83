"""Input checks shared by every evalkit module (private).

Each check raises :class:`evalkit.errors.EvalkitInputError` (a ``ValueError``) with a message
that names the argument, what was wrong and what to do, so that bad input never turns into a
silent wrong answer.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from threadpoolctl import threadpool_limits

from .errors import EvalkitInputError, EvalkitInputTypeError, EvalkitWarning

__all__ = ["EvalkitInputError", "EvalkitWarning", "warn"]

F = TypeVar("F", bound=Callable[..., Any])


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def warn(message: str, stacklevel: int = 3, category: type[EvalkitWarning] = EvalkitWarning) -> None:
    """Emit an evalkit warning (``category``) pointing at the caller's caller (``stacklevel`` up).

    Like :func:`warnings.warn` with the same ``stacklevel`` (the same filters, registry and
    once-per-location rule), except that the location is shown without the machine's folders:
    ``evalkit/clustered.py:123`` inside evalkit, the bare file name elsewhere. A warning printed in
    a notebook then reads the same on every machine.
    """
    try:
        frame = sys._getframe(stacklevel)
    except ValueError:  # fewer frames than asked for: the outermost caller
        frame = sys._getframe(1)
        while frame.f_back is not None:
            frame = frame.f_back
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_PACKAGE_DIR + os.sep):
        shown = "evalkit/" + os.path.relpath(path, _PACKAGE_DIR).replace(os.sep, "/")
    else:
        shown = os.path.basename(path)
    module = str(frame.f_globals.get("__name__", "<string>"))
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, shown, frame.f_lineno, module=module, registry=registry)


def as_float_vector(x: npt.ArrayLike, name: str, *, allow_nan: bool = False) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array, refusing other shapes, infinities and (by default) NaN."""
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise EvalkitInputError(name, f"{name} must hold numbers; converting it to float failed ({exc})") from exc
    if arr.ndim != 1:
        raise EvalkitInputError(name, f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise EvalkitInputError(name, f"{name} is empty")
    if np.isinf(arr).any():
        raise EvalkitInputError(name, f"{name} contains infinite values")
    if not allow_nan and np.isnan(arr).any():
        raise EvalkitInputError(
            name,
            f"{name} contains {int(np.isnan(arr).sum())} NaN values; drop or model the missing "
            "entries first (see evalkit.missing for principled ways to do so)"
        )
    return arr


def as_binary_vector(x: npt.ArrayLike, name: str, *, allow_nan: bool = False) -> np.ndarray:
    """Return ``x`` as a float vector whose non-NaN entries are all 0 or 1."""
    arr = as_float_vector(x, name, allow_nan=allow_nan)
    obs = arr[~np.isnan(arr)]
    _refuse_codings(obs, name)
    bad = (obs != 0) & (obs != 1)
    if bad.any():
        raise EvalkitInputError(
            name,
            f"{name} must hold 0/1 outcomes; found {int(bad.sum())} other values such as {obs[bad][0]!r}"
        )
    return arr


def as_labels(labels: npt.ArrayLike, n: int, name: str = "clusters") -> tuple[np.ndarray, np.ndarray]:
    """Encode cluster labels of length ``n`` as integer codes.

    Labels are factorised once by hashing (:func:`pandas.factorize`), then the few distinct labels
    are sorted, so string labels cost about as much as integer labels.

    Returns
    -------
    codes : (n,) int array with values ``0 .. M-1``
    uniques : (M,) array of the distinct labels, in sorted order

    Raises
    ------
    ValueError
        Wrong length or shape, missing labels (NaN or None), or labels that mix numbers and
        strings (``1`` and ``"1"`` would silently be two clusters).
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise EvalkitInputError(name, f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise EvalkitInputError(name, f"{name} has {arr.shape[0]} labels but the outcomes have {n} entries; they "
                                      "must align")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise EvalkitInputError(name, f"{name} contains NaN labels; give every item a cluster")
    if arr.dtype.kind in "mM" and np.isnat(arr).any():
        raise EvalkitInputError(name, f"{name} contains {int(np.isnat(arr).sum())} missing (NaT) labels; give every "
                                      "item a cluster")
    if arr.dtype.kind in "iubfcmM":
        codes_f, uniq_f = pd.factorize(arr, sort=True)
        return codes_f.astype(np.intp), np.asarray(uniq_f)
    # strings and objects: hash once, then sort only the distinct labels
    codes_o, uniq_o = pd.factorize(arr, sort=False, use_na_sentinel=True)
    if (codes_o < 0).any():
        raise EvalkitInputError(
            name, f"{name} contains {int((codes_o < 0).sum())} missing labels; give every item a cluster"
        )
    uniq = np.asarray(uniq_o, dtype=object) if arr.dtype == object else np.asarray(uniq_o)
    kinds = {"str" if isinstance(v, str) else "number" if isinstance(v, (int, float, np.number)) else
             type(v).__name__ for v in uniq}
    if len(kinds) > 1:
        raise EvalkitInputError(
            name,
            f"{name} mixes label types {sorted(kinds)} (for example {uniq[0]!r}); "
            f"convert the column to one type, e.g. {name}.astype(str)"
        )
    try:
        order = np.argsort(uniq, kind="stable")
    except TypeError as exc:
        raise EvalkitInputError(
            name, f"{name} holds labels that cannot be ordered ({exc}); convert them to str"
        ) from exc
    rank = np.empty(order.size, dtype=np.intp)
    rank[order] = np.arange(order.size)
    return rank[codes_o], uniq[order]


def as_weights(weights: npt.ArrayLike, n: int, name: str = "weights") -> np.ndarray:
    """Check positive finite weights of length ``n`` and rescale them so that the largest is 1.

    Every evalkit estimator that takes weights is invariant to their scale (a Hájek mean, its
    sandwich variance); rescaling first keeps sums finite for weights as small as ``1e-320`` or
    as large as ``1e308``.

    Raises
    ------
    ValueError
        Wrong length or shape, NaN or infinite values, or a weight that is not strictly positive.
    """
    w = as_float_vector(weights, name)
    if w.size != n:
        raise EvalkitInputError(name, f"{name} has {w.size} entries but the data have {n}; they must align")
    if (w <= 0).any():
        raise EvalkitInputError(
            name,
            f"{name} must be strictly positive; {int((w <= 0).sum())} are not "
            "(drop non-respondents instead of giving them weight 0)"
        )
    return w / w.max()


def check_alpha(alpha: float) -> float:
    """Check a significance level is strictly between 0 and 1 (a number: the string "0.05" is refused)."""
    if isinstance(alpha, (str, bytes, bool, np.bool_)) or not isinstance(alpha, (int, float, np.number)):
        raise EvalkitInputError("alpha", f"alpha must be a number in (0, 1), got {type(alpha).__name__} {alpha!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise EvalkitInputError("alpha", f"alpha must be in (0, 1), got {alpha}")
    return float(alpha)


# --- the contract's shared checks ---------------------------------------------------------------
#
# Seeds. Every function whose result is a reported number (an estimate, an interval, a study, a
# fitted model) takes ``seed`` as an int >= 0 or a numpy Generator and refuses ``None``
# (:func:`check_seed`): two identical calls give identical results. Only ``alpaca_pairs`` keeps
# ``seed=None`` (no subsampling: the full table, nothing random).
#
# Budgets. One unit per kind of function (docs/methods/faq-active-evaluation.md says the same): a
# function that runs one evaluation on one bank takes the number of items queried, an int with
# ``2 <= budget <= n_items`` (``active_run``, ``active_tune``, ``active_ceiling``,
# ``active_sampling_trace``, ``active_plot_run``; results always report that count). Study drivers
# that sweep banks of different sizes (``active_study``'s ``budgets`` and ``tune_budget``,
# ``active_loo``'s ``budget``) take a fraction of the bank in (0, 1) and convert it to the count
# ``max(2, round(fraction * n_items))``. :func:`check_budget` refuses a count where a fraction is
# meant and a fraction where a count is meant, saying so (``budgets=[50]`` is not read as 50%).


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _real(x: object, name: str) -> float:
    """``x`` as a float, refusing bools, strings and other non-numbers with an input error."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise EvalkitInputError(name, f"{name} must be a real number, got {type(x).__name__} {x!r}")
    return float(x)


def check_int(x: object, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Check an iteration count, a number of draws or a size: an int (not a bool, not 60.5) in range."""
    if not _is_int(x):
        if isinstance(x, (float, np.floating)) and math.isfinite(float(x)) and float(x).is_integer():
            x = int(x)
        else:
            raise EvalkitInputError(name, f"{name} must be an int >= {minimum}, got {type(x).__name__} {x!r}")
    v = int(x)  # type: ignore[call-overload]
    if v < minimum or (maximum is not None and v > maximum):
        allowed = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise EvalkitInputError(name, f"{name} must be an int {allowed}, got {v}")
    return v


def check_positive(x: object, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Check a tolerance, a scale or a standard error: a real number > 0 (>= 0 with ``allow_zero``)."""
    v = _real(x, name)
    if math.isnan(v) or (math.isinf(v) and not allow_inf) or v < 0 or (v == 0 and not allow_zero):
        rule = ">= 0" if allow_zero else "> 0"
        raise EvalkitInputError(name, f"{name} must be a finite number {rule}, got {x!r}")
    return v


def check_range(x: object, name: str, lo: float, hi: float, *, closed: str = "both") -> float:
    """Check a real number lies in ``[lo, hi]`` (``closed`` = "both", "left", "right" or "neither")."""
    v = _real(x, name)
    ok_lo = v >= lo if closed in ("both", "left") else v > lo
    ok_hi = v <= hi if closed in ("both", "right") else v < hi
    if math.isnan(v) or not (ok_lo and ok_hi):
        left = "[" if closed in ("both", "left") else "("
        right = "]" if closed in ("both", "right") else ")"
        raise EvalkitInputError(name, f"{name} must be in {left}{lo:g}, {hi:g}{right}, got {x!r}")
    return v


def check_seed(seed: object, name: str = "seed") -> int | np.random.Generator:
    """Check a seed: an int >= 0 or a ``numpy.random.Generator``; ``None`` is refused (reproducibility)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        raise EvalkitInputError(
            name, f"{name}=None would give a different result on every call; pass an int (e.g. {name}=0) "
            "or a numpy.random.Generator"
        )
    if not _is_int(seed) or int(seed) < 0:  # type: ignore[call-overload]
        raise EvalkitInputError(name, f"{name} must be an int >= 0 or a numpy.random.Generator, got {seed!r}")
    return int(seed)  # type: ignore[call-overload]


def check_budget(budget: object, n_items: int, name: str = "budget", *, fraction: bool = False) -> int:
    """Check a budget and return it as a count of items (see the module notes on the one unit).

    ``fraction=False``: an int count with ``2 <= budget <= n_items``. ``fraction=True``: a fraction
    of the items in (0, 1), returned as ``max(2, round(budget * n_items))``.
    """
    if fraction:
        if _is_int(budget) and int(budget) >= 1:  # type: ignore[call-overload]
            count = int(budget)  # type: ignore[call-overload]
            hint = (f"for {count} of the {n_items} items pass {count / n_items:.4g}" if count < n_items else
                    f"and it is not below the {n_items} items; a percentage must be divided by 100")
            raise EvalkitInputError(
                name, f"{name} is a fraction of the items in (0, 1) here; {budget!r} looks like a count of items "
                f"({hint})"
            )
        f = check_range(budget, name, 0.0, 1.0, closed="neither")
        return max(2, int(round(f * n_items)))
    if isinstance(budget, (float, np.floating)) and 0 < float(budget) < 1:
        raise EvalkitInputError(
            name, f"{name} is a number of items (an int between 2 and {n_items}); {budget!r} looks like a "
            f"fraction (pass round({budget} * {n_items}))"
        )
    return check_int(budget, name, minimum=2, maximum=n_items)


def as_outcomes(x: npt.ArrayLike, name: str, *, kind: str = "binary", allow_nan: bool = False) -> np.ndarray:
    """Outcomes as a float vector: ``kind="binary"`` 0/1, ``kind="fraction"`` scores in [0, 1].

    Refuses the two codings that look like outcomes but are not: percentages (0/100, values up to
    100) and signed coding (-1/+1), with a message that says how to convert them.
    """
    arr = as_float_vector(x, name, allow_nan=allow_nan)
    obs = arr[~np.isnan(arr)]
    _refuse_codings(obs, name)
    if kind == "binary":
        bad = (obs != 0) & (obs != 1)
        if bad.any():
            raise EvalkitInputError(
                name, f"{name} must hold 0/1 outcomes; found {int(bad.sum())} other values such as {obs[bad][0]!r}"
                " (for fractional scores such as epoch means use the functions that accept scores in [0, 1])"
            )
    elif (obs < 0).any() or (obs > 1).any():
        raise EvalkitInputError(name, f"{name} must hold scores in [0, 1]; found values in "
                                      f"[{obs.min():g}, {obs.max():g}]")
    return arr


def _refuse_codings(obs: np.ndarray, name: str) -> None:
    if obs.size == 0:
        return
    if obs.max() > 1 and obs.min() >= 0 and obs.max() <= 100:
        raise EvalkitInputError(
            name, f"{name} holds values up to {obs.max():g}, but outcomes are 0/1 (or scores in [0, 1]); "
            "percentages (0/100) must be divided by 100"
        )
    if obs.min() == -1 and set(np.unique(obs)) <= {-1.0, 0.0, 1.0}:
        raise EvalkitInputError(
            name, f"{name} holds -1: signed (-1/+1) coding is not 0/1; map -1 to 0 first, e.g. ({name} + 1) / 2"
        )


def as_probabilities(x: npt.ArrayLike, name: str, *, open_interval: bool = True) -> np.ndarray:
    """Probabilities as a float array, strictly inside (0, 1) where a log or a division needs it."""
    arr = np.asarray(x, dtype=float)
    if arr.size == 0:
        raise EvalkitInputError(name, f"{name} is empty")
    if not np.isfinite(arr).all():
        raise EvalkitInputError(name, f"{name} contains {int((~np.isfinite(arr)).sum())} NaN or infinite values")
    if open_interval:
        bad = (arr <= 0) | (arr >= 1)
        if bad.any():
            raise EvalkitInputError(
                name, f"{name} must be probabilities strictly inside (0, 1) (a log or 1/p is taken); "
                f"{int(bad.sum())} are not, such as {arr[bad].ravel()[0]!r}"
            )
    elif (arr < 0).any() or (arr > 1).any():
        raise EvalkitInputError(name, f"{name} must be probabilities in [0, 1]")
    return arr


def check_unique(values: npt.ArrayLike, name: str) -> np.ndarray:
    """Refuse duplicate ids (compared by value after converting to str, so 1 and "1" are duplicates)."""
    arr = np.asarray(values, dtype=object).ravel()
    as_str = pd.Series([str(v) for v in arr])
    dup = as_str.duplicated(keep=False)
    if dup.any():
        raise EvalkitInputError(
            name, f"{name} holds duplicates {sorted(set(as_str[dup]))[:3]} (ids are compared by value: 1 and "
            "'1' are the same id); every entry needs its own id"
        )
    return np.asarray(values)


def label_kind(uniques: npt.ArrayLike) -> str:
    """'str' or 'number': the kind of a factorised label set (see :func:`as_labels`)."""
    arr = np.asarray(uniques)
    if arr.dtype.kind in "iubf":
        return "number"
    return "str" if all(isinstance(v, str) for v in arr.ravel()) else "number" \
        if all(isinstance(v, (int, float, np.number)) for v in arr.ravel()) else "other"


def check_same_label_kind(expected: str, labels: npt.ArrayLike, name: str) -> None:
    """Refuse labels of another kind than those seen at fit time (``1`` vs ``"1"`` would never match)."""
    got = label_kind(pd.unique(np.asarray(labels).ravel()))
    if got != expected:
        raise EvalkitInputError(
            name, f"{name} holds {got} labels but the fit saw {expected} labels; labels are compared by value "
            f"and type, so convert them to the same type (e.g. .astype(str) at fit and here)"
        )


def align_series(ref: object, other: object, name: str) -> object:
    """Align a pandas ``other`` to the index of pandas ``ref`` (by label, not position).

    Non-pandas inputs are returned unchanged. Two pandas objects whose indexes hold different labels
    are refused (positions would pair unrelated rows).
    """
    if not isinstance(ref, (pd.Series, pd.DataFrame)) or not isinstance(other, (pd.Series, pd.DataFrame)):
        return other
    if ref.index.equals(other.index):
        return other
    if ref.index.has_duplicates or other.index.has_duplicates:
        raise EvalkitInputError(name, f"{name} and the outcomes are pandas objects with duplicate index labels; "
                                      "they cannot be aligned by index (reset both indexes or pass arrays)")
    if set(ref.index) != set(other.index):
        raise EvalkitInputError(
            name, f"{name} is a pandas object whose index does not hold the same labels as the outcomes'; "
            "evalkit aligns pandas inputs by index, not position (pass arrays to pair by position)"
        )
    return other.reindex(ref.index)


def check_table(table: object, name: str, columns: Sequence[str], *, source: str = "",
                min_rows: int = 1) -> pd.DataFrame:
    """Check a results table: a DataFrame with ``columns`` and at least ``min_rows`` rows.

    ``source`` names the function whose output the table should be (said in the message).
    """
    made_by = f" (the output of {source})" if source else ""
    if not isinstance(table, pd.DataFrame):
        raise EvalkitInputTypeError(name, f"{name} must be a pandas DataFrame{made_by}, got {type(table).__name__}")
    lacking = [c for c in columns if c not in table.columns]
    if lacking:
        raise EvalkitInputError(name, f"{name} lacks columns {lacking}; it needs {list(columns)}{made_by}; "
                                      f"it has {list(table.columns)[:12]}")
    if len(table) < min_rows:
        raise EvalkitInputError(name, f"{name} has {len(table)} rows; it needs at least {min_rows}{made_by}")
    return table


def as_nonneg_weights(weights: npt.ArrayLike, n: int, name: str = "weights") -> np.ndarray:
    """Weights that may be 0 (finite, >= 0, not all zero), rescaled so the largest is 1 (scale-free)."""
    w = as_float_vector(weights, name)
    if w.size != n:
        raise EvalkitInputError(name, f"{name} has {w.size} entries but the data have {n}; they must align")
    if (w < 0).any():
        raise EvalkitInputError(name, f"{name} must be >= 0; {int((w < 0).sum())} are negative")
    if not (w > 0).any():
        raise EvalkitInputError(name, f"{name} are all zero; at least one must be positive")
    return w / w.max()


# --- result checks --------------------------------------------------------------------------------


def check_interval(estimate: float, lo: float, hi: float, what: str, *, lower: float = 0.0, upper: float = 1.0,
                   stacklevel: int = 4) -> None:
    """Warn (:class:`RangeWarning`) when an estimate or interval leaves ``[lower, upper]``, has zero
    width or is reversed, or is NaN."""
    from .errors import RangeWarning

    vals = (estimate, lo, hi)
    if any(not math.isfinite(v) for v in vals):
        warn(f"{what}: the estimate or interval is not finite ({estimate}, [{lo}, {hi}])", stacklevel, RangeWarning)
        return
    if lo > hi:
        warn(f"{what}: the interval [{lo:.4g}, {hi:.4g}] is reversed", stacklevel, RangeWarning)
    elif lo == hi:
        warn(f"{what}: the interval [{lo:.4g}, {hi:.4g}] has zero width; it does not express the "
             "uncertainty of a finite sample", stacklevel, RangeWarning)
    if estimate < lower or estimate > upper or lo < lower - 1e-12 or hi > upper + 1e-12:
        warn(f"{what}: the estimate {estimate:.4g} or its interval [{lo:.4g}, {hi:.4g}] leaves its range "
             f"[{lower:g}, {upper:g}]", stacklevel, RangeWarning)


def cap_n_effective(n_eff: float, n: float, stacklevel: int = 4) -> float:
    """An effective sample size never exceeds ``n``: cap it with a :class:`RangeWarning`."""
    from .errors import RangeWarning

    if n_eff > n:
        warn(f"the effective sample size {n_eff:.4g} exceeds the {n:g} observations (design effect below 1, "
             f"an artefact of a noisy variance estimate); capped at {n:g}", stacklevel, RangeWarning)
        return float(n)
    return float(n_eff)


def boundary_interval(theta: float, n_eff: float, alpha: float, what: str, *, df: float = math.inf,
                      stacklevel: int = 4) -> tuple[float, float]:
    """Degenerate data: warn (:class:`DegenerateDataWarning`) and return the Wilson interval on ``n_eff``.

    Used where every observed outcome is 0 or 1 and a t interval would collapse to a point with
    se 0; at the boundary the Wilson bound equals the exact ``(alpha/2)^(1/n)`` rule to first order.
    """
    from .clustered import interval_wilson
    from .errors import DegenerateDataWarning

    p = min(1.0, max(0.0, float(theta)))
    warn(f"{what}: every observed outcome is {p:g}, so the standard error is 0 and a t interval would "
         f"collapse to a point; the Wilson interval on n_eff = {n_eff:.3g} is reported instead",
         stacklevel, DegenerateDataWarning)
    return interval_wilson(p, max(float(n_eff), 1.0), df=df, alpha=alpha)


def one_blas_thread(func: F) -> F:
    """Run ``func`` with BLAS/LAPACK limited to one thread, so its result does not depend on the thread count.

    Multithreaded BLAS splits matrix products (and LAPACK's blocked SVD) differently for different
    thread counts, so sums are added in a different order and an iterative fit started from an SVD
    drifts apart (by about 1e-3 after 60 L-BFGS steps). One thread fixes the reduction order: the
    result is the same on every machine setting (and equals a run with ``OPENBLAS_NUM_THREADS=1``).
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)
    return cast(F, wrapper)
