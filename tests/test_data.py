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
    assert list(m.status_counts().loc["b"]) == [1, 0, 0, 0, 1, 1, 0]  # ... grading_failure


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


def _matrix_parts():
    Y = np.array([[1.0, np.nan, 0.0], [0.0, 1.0, np.nan]])
    status = np.array([[0, 1, 0], [0, 0, 5]], np.int8)
    return Y, status, np.array(["m1", "m2"]), np.array(["a", "b", "c"]), np.array(["x", "x", "y"])


@pytest.mark.parametrize("code", [len(STATUSES), -1, 100])
def test_matrix_rejects_unknown_status_codes(code):
    Y, status, models, items, clusters = _matrix_parts()
    status[1, 2] = code
    with pytest.raises(ValueError, match=rf"codes outside 0\.\.{len(STATUSES) - 1}"):
        EvalMatrix(Y, status, models, items, clusters)


def test_matrix_rejects_duplicate_models_and_missing_clusters():
    Y, status, _, items, clusters = _matrix_parts()
    with pytest.raises(ValueError, match=r"duplicate model ids \['m'\]"):
        EvalMatrix(Y, status, np.array(["m", "m"]), items, clusters)
    for bad in (np.array([1.0, np.nan, 2.0]), np.array(["x", None, "y"], dtype=object),
                np.array(["x", np.nan, "y"], dtype=object)):
        with pytest.raises(ValueError, match="missing .NaN or None. labels"):
            EvalMatrix(Y, status, np.array(["m1", "m2"]), items, bad)
    with pytest.raises(ValueError, match="integer codes"):
        EvalMatrix(Y, status.astype(float), np.array(["m1", "m2"]), items, clusters)


def test_matrix_arrays_are_read_only_after_validation():
    Y, status, models, items, clusters = _matrix_parts()
    m = EvalMatrix(Y, status, models, items, clusters)
    for name in ("Y", "status", "models", "items", "clusters"):
        arr = getattr(m, name)
        assert not arr.flags.writeable, name
    with pytest.raises(ValueError, match="read-only"):
        m.Y[0, 1] = 1.0            # would leave status 'refusal' on an observed cell
    with pytest.raises(ValueError, match="read-only"):
        m.status[0, 0] = 9
    assert Y.flags.writeable       # the caller's own array is not frozen (a view, no copy)
    sub = m.select(models=["m2"])
    assert not sub.Y.flags.writeable
    assert long_to_matrix(small_long()).Y.flags.writeable is False


def test_item_columns_accept_a_string_and_must_be_constant_per_item():
    m = long_to_matrix(small_long(), item_columns="length")
    assert list(m.item_info.columns) == ["length"] and list(m.item_info["length"]) == [10, 20, 30]
    d = small_long().assign(length=[10, 20, 30, 11, 30])
    with pytest.raises(ValueError, match=r"item column 'length' is not constant per item: 1 items .* item 'q1'"):
        long_to_matrix(d, item_columns=["length"])
    with pytest.raises(ValueError, match="not in the table"):
        long_to_matrix(small_long(), item_columns="nope")


def test_mixed_label_types_and_non_numeric_outcomes_name_the_column():
    d = small_long().assign(cluster=pd.Series([1, 1, "1", 1, "1"], dtype=object))
    with pytest.raises(ValueError, match=r"column 'cluster' mixes numbers and strings"):
        long_validate(d)
    d = small_long().assign(model=pd.Series([7, 7, 7, "b", "b"], dtype=object))
    with pytest.raises(ValueError, match=r"column 'model' mixes"):
        long_validate(d)
    d = small_long().assign(correct=["1", np.nan, "yes", "0", np.nan])
    with pytest.raises(ValueError, match=r"column 'correct' must be numeric .* such as 'yes'"):
        long_validate(d)
    # numeric strings are fine, and one label type (all int) is fine
    ok = long_validate(small_long().assign(correct=["1", None, "0", "0", None], cluster=[1, 1, 2, 1, 2]))
    assert ok["correct"].tolist()[0] == 1.0 and set(ok["cluster"]) == {"1", "2"}


def test_cluster_labels_factorise_once_and_refuse_mixed_types():
    from evalkit._checks import as_labels
    labels = np.array(["b", "a", "c", "a", "b"], dtype=object)
    codes, uniques = as_labels(labels, 5)
    assert uniques.tolist() == ["a", "b", "c"] and codes.tolist() == [1, 0, 2, 0, 1]
    codes_i, uniques_i = as_labels(np.array([30, 10, 20, 10]), 4)
    assert uniques_i.tolist() == [10, 20, 30] and codes_i.tolist() == [2, 0, 1, 0]
    with pytest.raises(ValueError, match=r"clusters mixes label types \['number', 'str'\]"):
        as_labels(np.array([1, "1", 2], dtype=object), 3)
    with pytest.raises(ValueError, match="missing labels"):
        as_labels(np.array(["a", None], dtype=object), 2)
