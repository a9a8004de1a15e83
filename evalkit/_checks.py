"""Input checks shared by every evalkit module (private).

Each check raises :class:`evalkit.errors.EvalkitInputError` (a ``ValueError``) with a message
that names the argument, what was wrong and what to do, so that bad input never turns into a
silent wrong answer.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import pandas as pd

from .errors import EvalkitInputError, EvalkitWarning

__all__ = ["EvalkitInputError", "EvalkitWarning", "warn"]


def warn(message: str, stacklevel: int = 3, category: type[EvalkitWarning] = EvalkitWarning) -> None:
    """Emit an evalkit warning (``category``) pointing at the caller's caller (``stacklevel`` up)."""
    warnings.warn(message, category, stacklevel=stacklevel)


def as_float_vector(x: npt.ArrayLike, name: str, *, allow_nan: bool = False) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array, refusing other shapes, infinities and (by default) NaN."""
    arr = np.asarray(x, dtype=float)
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
        raise EvalkitInputError(name, f"{name} has {arr.shape[0]} labels but the data have {n} rows; they must align")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise EvalkitInputError(name, f"{name} contains NaN labels; give every item a cluster")
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
    """Check a significance level is strictly between 0 and 1."""
    if not 0.0 < float(alpha) < 1.0:
        raise EvalkitInputError("alpha", f"alpha must be in (0, 1), got {alpha}")
    return float(alpha)
