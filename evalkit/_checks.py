"""Input checks shared by every evalkit module (private).

Each check raises ``ValueError``/``TypeError`` with a message that names the argument, what was
wrong and what to do, so that bad input never turns into a silent wrong answer.
"""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt


class EvalkitWarning(UserWarning):
    """A statistical caveat evalkit wants the reader to see (degenerate cluster, capped weight...)."""


def warn(message: str) -> None:
    """Emit an :class:`EvalkitWarning` pointing at the caller's caller."""
    warnings.warn(message, EvalkitWarning, stacklevel=3)


def as_float_vector(x: npt.ArrayLike, name: str, *, allow_nan: bool = False) -> np.ndarray:
    """Return ``x`` as a 1-D float64 array, refusing other shapes, infinities and (by default) NaN."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isinf(arr).any():
        raise ValueError(f"{name} contains infinite values")
    if not allow_nan and np.isnan(arr).any():
        raise ValueError(
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
        raise ValueError(
            f"{name} must hold 0/1 outcomes; found {int(bad.sum())} other values such as {obs[bad][0]!r}"
        )
    return arr


def as_labels(labels: npt.ArrayLike, n: int, name: str = "clusters") -> tuple[np.ndarray, np.ndarray]:
    """Encode cluster labels of length ``n`` as integer codes.

    Returns
    -------
    codes : (n,) int array with values ``0 .. M-1``
    uniques : (M,) array of the distinct labels, in sorted order
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} labels but the data have {n} rows; they must align")
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN labels; give every item a cluster")
    if arr.dtype == object and any(v is None or (isinstance(v, float) and np.isnan(v)) for v in arr):
        raise ValueError(f"{name} contains missing labels; give every item a cluster")
    uniques, codes = np.unique(arr, return_inverse=True)
    return codes.astype(np.intp), uniques


def check_alpha(alpha: float) -> float:
    """Check a significance level is strictly between 0 and 1."""
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return float(alpha)
