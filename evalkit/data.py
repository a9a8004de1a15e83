"""The data model: a tidy long table of outcomes and its matrix view.

Every dataset loader and every simulator in evalkit produces the **long table**; methods that
work on a models-by-items grid take the **matrix view** (:class:`EvalMatrix`). Missing outcomes
are never dropped or zeroed silently: each unobserved cell keeps the reason it is missing.

Long table columns
------------------
``model, item, cluster, correct, status`` and any extra columns.

* ``correct`` is 0/1 where ``status == "ok"`` and ``NaN`` everywhere else (an upstream score for
  a non-ok row, if any, lives in the extra column ``correct_reported``);
* ``status`` is one of :data:`STATUSES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from ._checks import check_unique
from .errors import EvalkitInputError, EvalkitInputTypeError
from .types import Matrix

__all__ = [
    "STATUSES",
    "MISSING_REASONS",
    "LONG_COLUMNS",
    "EvalMatrix",
    "long_validate",
    "long_to_matrix",
    "matrix_to_long",
]

STATUSES: tuple[str, ...] = ("ok", "refusal", "filtered", "error", "parse_failure", "not_run",
                             "grading_failure")
"""Allowed values of ``status``. Code ``i`` in :attr:`EvalMatrix.status` means ``STATUSES[i]``.

``grading_failure`` is a failure of the grader (a scorer or judge that could not grade the
answer), not of the model."""

MISSING_REASONS: tuple[str, ...] = STATUSES[1:]
"""The statuses that mean "no gradable answer": every status except ``ok``."""

LONG_COLUMNS: tuple[str, ...] = ("model", "item", "cluster", "correct", "status")
"""The columns every long table has."""


def long_validate(df: pd.DataFrame, *, extra_statuses: Sequence[str] = ()) -> pd.DataFrame:
    """Check a long table and return it with normalised dtypes.

    Parameters
    ----------
    df : DataFrame
        Columns ``model, item, cluster, correct, status`` (others are kept).
    extra_statuses : sequence of str
        Further missing reasons to accept besides :data:`STATUSES` (for long tables only; the
        matrix view stores the standard ones).

    Returns
    -------
    DataFrame
        A copy with ``model``, ``item``, ``cluster`` and ``status`` as strings and ``correct`` as float.

    Raises
    ------
    ValueError
        Missing columns, unknown status, duplicate ``(model, item)`` rows, an item with two
        cluster labels, outcomes other than 0/1 on ``ok`` rows, or an outcome on a non-ok row.
    """
    return _long_validate(df, extra_statuses=extra_statuses, name="df")


def _long_validate(df: pd.DataFrame, *, extra_statuses: Sequence[str] = (), name: str = "df") -> pd.DataFrame:
    """:func:`long_validate` with the argument's name in its errors (``long_df`` for the functions taking one)."""
    if not isinstance(df, pd.DataFrame):
        raise EvalkitInputTypeError(name, f"{name} must be a pandas DataFrame (a long table), got {type(df).__name__}")
    missing_cols = [c for c in LONG_COLUMNS if c not in df.columns]
    if missing_cols:
        raise EvalkitInputError(name,
            f"long table lacks columns {missing_cols}; it needs {list(LONG_COLUMNS)} "
            "(correct = 0/1 or NaN, status = one of evalkit.STATUSES)"
        )
    out = df.copy()
    for col in ("model", "item", "cluster", "status"):
        if out[col].isna().any():
            raise EvalkitInputError(name, f"column {col!r} has {int(out[col].isna().sum())} missing values")
        _check_one_label_type(out[col], col, name)
        out[col] = out[col].astype(str)
    out["correct"] = _as_numeric(out["correct"], "correct", name)

    allowed = set(STATUSES) | set(extra_statuses)
    unknown = sorted(set(out["status"].unique()) - allowed)
    if unknown:
        raise EvalkitInputError(name, f"unknown status values {unknown}; allowed: {sorted(allowed)}")

    dup = out.duplicated(["model", "item"])
    if dup.any():
        first = out.loc[dup, ["model", "item"]].iloc[0].tolist()
        raise EvalkitInputError(name, f"{int(dup.sum())} duplicate (model, item) rows, e.g. {first}")

    n_labels = out.groupby("item", sort=False)["cluster"].nunique()
    if (n_labels > 1).any():
        item = n_labels.index[n_labels > 1][0]
        raise EvalkitInputError(name, f"item {item!r} carries more than one cluster label; clusters belong to items")

    ok = out["status"] == "ok"
    y_ok = out.loc[ok, "correct"]
    if y_ok.isna().any():
        raise EvalkitInputError(
            name, f"{int(y_ok.isna().sum())} rows have status 'ok' but no outcome; give them a missing reason")
    bad = ~y_ok.isin([0.0, 1.0])
    if bad.any():
        raise EvalkitInputError(
            name, f"outcomes must be 0/1; found {int(bad.sum())} other values such as {y_ok[bad].iloc[0]!r}")
    graded_missing = out.loc[~ok, "correct"].notna()
    if graded_missing.any():
        raise EvalkitInputError(name,
            f"{int(graded_missing.sum())} rows have a missing reason but an outcome; set correct to NaN "
            "and keep any upstream score in a column such as 'correct_reported'"
        )
    return out


def _check_one_label_type(col: pd.Series, name: str, argument: str = "df") -> None:
    """Refuse an object column that mixes numbers and strings (``1`` and ``"1"`` would merge on ``astype(str)``)."""
    if col.dtype != object:
        return
    kinds = col.map(type).unique()
    has_str = any(issubclass(k, str) for k in kinds)
    has_num = any(issubclass(k, (int, float, np.number)) and not issubclass(k, bool) for k in kinds)
    if has_str and has_num:
        num = col[col.map(lambda v: not isinstance(v, str))].iloc[0]
        txt = col[col.map(lambda v: isinstance(v, str))].iloc[0]
        raise EvalkitInputError(argument,
            f"column {name!r} mixes numbers and strings (for example {num!r} and {txt!r}); labels that "
            f"print alike would be merged. Convert the column to one type first, e.g. df[{name!r}].astype(str)"
        )


def _as_numeric(col: pd.Series, name: str, argument: str = "df") -> pd.Series:
    """``col`` as float, or a ValueError that names the column and a bad value."""
    try:
        return pd.to_numeric(col, errors="raise").astype(float)
    except (ValueError, TypeError):
        bad = pd.to_numeric(col, errors="coerce").isna() & col.notna()
        example = col[bad].iloc[0] if bad.any() else None
        raise EvalkitInputError(argument,
            f"column {name!r} must be numeric (0/1, NaN where missing); found {int(bad.sum())} non-numeric "
            f"values such as {example!r}"
        ) from None


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only copy of ``a`` (the caller's own array stays writable, and editing it cannot change ours)."""
    v = np.array(a, copy=True)
    v.flags.writeable = False
    return v


@dataclass(frozen=True)
class EvalMatrix:
    """The matrix view of an evaluation.

    Attributes
    ----------
    Y : (n_models, n_items) float array
        1/0 where observed, NaN where not.
    status : (n_models, n_items) int8 array
        Codes into :data:`STATUSES` (0 = ``ok``).
    models : (n_models,) array of str
    items : (n_items,) array of str
    clusters : (n_items,) array of str
        The cluster (sub-task, category, source) of each item.
    item_info : DataFrame or None
        Optional per-item metadata indexed by item id, in the order of ``items``.

    The arrays are validated once, when the matrix is built, and then stored as read-only views, so
    a validated matrix cannot be changed into an invalid one (copy an array to modify it).

    Raises
    ------
    ValueError
        Wrong shapes, outcomes other than 0/1, status codes outside ``0 .. len(STATUSES) - 1`` or
        not ``ok`` exactly where an outcome is observed, duplicate model ids, or missing (NaN or
        None) cluster labels.
    """

    Y: Matrix
    status: np.ndarray
    models: np.ndarray
    items: np.ndarray
    clusters: np.ndarray
    item_info: pd.DataFrame | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        Y = np.asarray(self.Y)
        if Y.ndim != 2:
            raise EvalkitInputError("Y", f"Y must be (n_models, n_items), got shape {Y.shape}")
        n_models, n_items = Y.shape
        if np.asarray(self.status).shape != Y.shape:
            raise EvalkitInputError("status", f"status has shape {np.asarray(self.status).shape}, Y has {Y.shape}")
        for name, arr, n in (("models", self.models, n_models), ("items", self.items, n_items),
                             ("clusters", self.clusters, n_items)):
            if np.asarray(arr).shape != (n,):
                raise EvalkitInputError(name, f"{name} must have shape ({n},), got {np.asarray(arr).shape}")
        obs = ~np.isnan(Y)
        if not np.isin(Y[obs], (0.0, 1.0)).all():
            raise EvalkitInputError("Y", "Y must hold 0/1 where observed")
        st = np.asarray(self.status)
        if st.dtype.kind not in "iu":
            raise EvalkitInputError("status", f"status must hold integer codes into STATUSES, got dtype {st.dtype}")
        bad = (st < 0) | (st >= len(STATUSES))
        if bad.any():
            raise EvalkitInputError("status",
                f"status holds {int(bad.sum())} codes outside 0..{len(STATUSES) - 1} (e.g. {int(st[bad][0])}); "
                f"code i means STATUSES[i] = {STATUSES}"
            )
        if (st[obs] != 0).any() or (st[~obs] == 0).any():
            raise EvalkitInputError("status", "status must be 0 ('ok') exactly where Y is observed")
        models = np.asarray(self.models)
        uniq, counts = np.unique(models, return_counts=True)
        if (counts > 1).any():
            raise EvalkitInputError(
                "models", f"duplicate model ids {uniq[counts > 1][:3].tolist()}; every row needs its own model id")
        check_unique(models, "models")
        check_unique(self.items, "items")
        if self.item_info is not None:
            if not isinstance(self.item_info, pd.DataFrame) or len(self.item_info) != n_items:
                raise EvalkitInputError(
                    "item_info", f"item_info must be a DataFrame with one row per item ({n_items}), got "
                    f"{type(self.item_info).__name__} of length {len(self.item_info)}")
        clusters = np.asarray(self.clusters)
        if clusters.dtype.kind == "f":
            n_nan = int(np.isnan(clusters).sum())
        elif clusters.dtype == object:
            n_nan = int(pd.isna(clusters).sum())
        else:
            n_nan = 0
        if n_nan:
            raise EvalkitInputError(
                "clusters", f"clusters has {n_nan} missing (NaN or None) labels; give every item a cluster")
        for name, arr in (("Y", Y), ("status", st), ("models", models), ("items", np.asarray(self.items)),
                          ("clusters", clusters)):
            object.__setattr__(self, name, _readonly(arr))

    @property
    def n_models(self) -> int:
        """Number of models (rows)."""
        return int(self.Y.shape[0])

    @property
    def n_items(self) -> int:
        """Number of items (columns)."""
        return int(self.Y.shape[1])

    @property
    def observed(self) -> np.ndarray:
        """``(n_models, n_items)`` boolean mask of observed outcomes."""
        return ~np.isnan(self.Y)

    def status_counts(self) -> pd.DataFrame:
        """Count of each status per model (rows: models, columns: statuses)."""
        counts = np.stack([(self.status == k).sum(axis=1) for k in range(len(STATUSES))], axis=1)
        return pd.DataFrame(counts, index=pd.Index(self.models, name="model"), columns=list(STATUSES))

    def select(self, models: Sequence[str] | None = None, items: Sequence[str] | None = None) -> EvalMatrix:
        """Return the sub-matrix for the given model and item ids (in the order given)."""
        r = np.arange(self.n_models) if models is None else _positions(self.models, models, "model")
        c = np.arange(self.n_items) if items is None else _positions(self.items, items, "item")
        info = None if self.item_info is None else self.item_info.iloc[c]
        return EvalMatrix(self.Y[np.ix_(r, c)], self.status[np.ix_(r, c)], self.models[r],
                          self.items[c], self.clusters[c], info)

    def to_long(self) -> pd.DataFrame:
        """The long table (see :func:`matrix_to_long`)."""
        return matrix_to_long(self)


def _positions(ids: np.ndarray, wanted: Sequence[str], what: str) -> np.ndarray:
    index = pd.Index(ids)
    pos = index.get_indexer(list(wanted))
    if (pos < 0).any():
        missing = [w for w, p in zip(wanted, pos, strict=True) if p < 0][:3]
        raise KeyError(f"unknown {what} ids {missing}")
    return pos


def long_to_matrix(df: pd.DataFrame, *, fill_status: str = "not_run",
                   item_columns: str | Sequence[str] = ()) -> EvalMatrix:
    """Pivot a long table into an :class:`EvalMatrix`.

    Parameters
    ----------
    df : DataFrame
        A long table (validated with :func:`long_validate`).
    fill_status : str
        Status given to ``(model, item)`` cells absent from the table (default ``not_run``).
    item_columns : str or sequence of str
        Extra per-item columns to carry into ``item_info``; each must be constant per item.

    Returns
    -------
    EvalMatrix
        Models and items in order of first appearance.

    Raises
    ------
    ValueError
        The errors of :func:`long_validate`, an unknown ``fill_status``, or an item column that is
        absent or takes more than one value for the same item.
    """
    if fill_status not in MISSING_REASONS:
        raise EvalkitInputError("fill_status", f"fill_status must be one of {MISSING_REASONS}, got {fill_status!r}")
    df = long_validate(df)
    models = pd.unique(df["model"])
    items = pd.unique(df["item"])
    # pd.Index(series) is what get_indexer does with a Series target (pandas-stubs want an Index)
    r = pd.Index(models).get_indexer(pd.Index(df["model"]))
    c = pd.Index(items).get_indexer(pd.Index(df["item"]))
    Y = np.full((len(models), len(items)), np.nan)
    Y[r, c] = df["correct"].to_numpy()
    codes = {s: i for i, s in enumerate(STATUSES)}
    status = np.full(Y.shape, codes[fill_status], dtype=np.int8)
    status[r, c] = df["status"].map(codes).to_numpy().astype(np.int8)
    # items may be an ExtensionArray (string dtype), which .loc takes; pandas-stubs omit it
    first = df.drop_duplicates("item").set_index("item").loc[cast(Any, items)]
    clusters = first["cluster"].to_numpy(dtype=str)
    info = None
    cols = [item_columns] if isinstance(item_columns, str) else list(item_columns)
    if cols:
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise EvalkitInputError("item_columns", f"item_columns {missing} are not in the table")
        n_values = df.groupby("item", sort=False)[cols].nunique(dropna=False)
        for c in cols:
            varying = n_values.index[n_values[c] > 1]
            if len(varying):
                raise EvalkitInputError("df",
                    f"item column {c!r} is not constant per item: {len(varying)} items carry several "
                    f"values, e.g. item {varying[0]!r}; keep per-answer columns in the long table"
                )
        info = first[cols].copy()
    return EvalMatrix(Y, status, np.asarray(models, dtype=str), np.asarray(items, dtype=str), clusters, info)


def matrix_to_long(m: EvalMatrix) -> pd.DataFrame:
    """Unpivot an :class:`EvalMatrix` into the long table (one row per model and item).

    ``item_info`` columns are joined onto the rows.
    """
    if not isinstance(m, EvalMatrix):
        raise EvalkitInputTypeError("m", f"m must be an EvalMatrix (from long_to_matrix or dataset_matrix), got "
                                         f"{type(m).__name__}")
    n_models, n_items = m.Y.shape
    out = pd.DataFrame({
        "model": np.repeat(m.models, n_items),
        "item": np.tile(m.items, n_models),
        "cluster": np.tile(m.clusters, n_models),
        "correct": m.Y.ravel().astype(float),
        "status": np.asarray(STATUSES, dtype=object)[m.status.ravel()],
    })
    if m.item_info is not None:
        info = m.item_info.reset_index(drop=True)
        for col in info.columns:
            if col not in out.columns:
                out[col] = np.tile(info[col].to_numpy(), n_models)
    return out
