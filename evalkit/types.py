"""Named array shapes used in evalkit's signatures.

The aliases are documentation as much as typing: a parameter annotated ``Matrix`` is a
``(n_models, n_items)`` float array with ``NaN`` for unobserved entries; ``ItemVector`` has one
entry per item; ``Labels`` holds one cluster label per item.
"""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.floating]
"""Any float array."""

IntArray: TypeAlias = npt.NDArray[np.integer]
"""Any integer array (indices, codes)."""

Matrix: TypeAlias = npt.NDArray[np.floating]
"""``(n_models, n_items)`` outcomes; 0/1 where observed, ``NaN`` where not."""

ItemVector: TypeAlias = npt.NDArray[np.floating]
"""``(n_items,)`` one value per item (an outcome, a weight, a feature)."""

Labels: TypeAlias = npt.ArrayLike
"""``(n_items,)`` one cluster label per item (strings or integers)."""

SeedLike: TypeAlias = "int | np.random.Generator | None"
"""A seed or a generator; resolved with :func:`evalkit.types.as_rng`."""


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """Return a ``numpy.random.Generator`` for ``seed``.

    Parameters
    ----------
    seed : int, Generator or None
        A generator is returned unchanged; an int seeds a new PCG64 generator. ``None`` is
        refused: evalkit never draws unseeded random numbers.

    Raises
    ------
    TypeError
        If ``seed`` is None or of another type.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    from .errors import EvalkitInputTypeError

    raise EvalkitInputTypeError(
        "seed", "seed: pass an int seed or a numpy.random.Generator (evalkit never draws unseeded numbers); "
        f"got {type(seed).__name__}"
    )
