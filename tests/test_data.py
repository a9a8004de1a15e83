"""The long table and its matrix view: validation and round trips."""

import numpy as np
import pandas as pd
import pytest

from evalkit import STATUSES, EvalMatrix, long_to_matrix, long_validate, matrix_to_long


def small_long() -> pd.DataFrame:
    return pd.DataFrame({
        "model": ["a", "a", "a", "b", "b"],
        "item": ["q1", "q2", "q3", "q1", "q3"],
        "cluster": ["x", "x", "y", "x", "y"],
        "correct": [1.0, np.nan, 0.0, 0.0, np.nan],
        "status": ["ok", "refusal", "ok", "ok", "parse_failure"],
        "length": [10, 20, 30, 10, 30],
    })


def test_round_trip_keeps_outcomes_and_reasons():
    m = long_to_matrix(small_long(), item_columns=["length"])
    assert m.Y.shape == (2, 3)
    assert list(m.models) == ["a", "b"] and list(m.items) == ["q1", "q2", "q3"]
    # the absent (b, q2) cell is not_run; b's q3 keeps its parse failure
    assert STATUSES[m.status[1, 1]] == "not_run"
    assert STATUSES[m.status[1, 2]] == "parse_failure"
    assert np.isnan(m.Y[0, 1]) and m.Y[0, 2] == 0.0
    back = matrix_to_long(m)
    assert len(back) == 6
    merged = back.merge(small_long(), on=["model", "item"], suffixes=("", "_orig"))
    assert (merged["status"] == merged["status_orig"]).all()
    assert np.allclose(merged["correct"], merged["correct_orig"], equal_nan=True)
    assert list(m.status_counts().loc["b"]) == [1, 0, 0, 0, 1, 1]


def test_select_reorders_and_subsets():
    m = long_to_matrix(small_long())
    s = m.select(models=["b"], items=["q3", "q1"])
    assert s.Y.shape == (1, 2) and list(s.items) == ["q3", "q1"] and list(s.clusters) == ["y", "x"]
    with pytest.raises(KeyError, match="unknown model"):
        m.select(models=["zzz"])


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.drop(columns="status"), "lacks columns"),
        (lambda d: d.assign(status=["ok", "timeout", "ok", "ok", "ok"]), "unknown status"),
        (lambda d: pd.concat([d, d.iloc[[0]]]), "duplicate"),
        (lambda d: d.assign(cluster=["x", "x", "y", "z", "y"]), "more than one cluster"),
        (lambda d: d.assign(correct=[1.0, np.nan, 0.5, 0.0, np.nan]), "0/1"),
        (lambda d: d.assign(correct=[1.0, 1.0, 0.0, 0.0, np.nan]), "missing reason but an outcome"),
        (lambda d: d.assign(correct=[np.nan, np.nan, 0.0, 0.0, np.nan]), "no outcome"),
    ],
)
def test_validation_errors_are_explicit(change, message):
    with pytest.raises(ValueError, match=message):
        long_validate(change(small_long()))


def test_matrix_checks_status_against_outcomes():
    Y = np.array([[1.0, np.nan]])
    with pytest.raises(ValueError, match="status must be 0"):
        EvalMatrix(Y, np.zeros((1, 2), np.int8), np.array(["m"]), np.array(["a", "b"]), np.array(["c", "c"]))
    with pytest.raises(ValueError, match="shape"):
        EvalMatrix(Y, np.array([[0, 1]], np.int8), np.array(["m"]), np.array(["a"]), np.array(["c", "c"]))
