"""The input contract of every public function, checked with generated inputs (hypothesis).

The contract: a public function either raises :class:`evalkit.errors.EvalkitInputError` naming the
offending argument, or returns a finite result in its range, with the documented warning where one
is due (a NaN only with a warning); it never lets a raw numpy/pandas/scipy exception escape and never
mutates its inputs.

Two tiers, one entry per public function (``test_every_public_function_has_a_contract_entry``
fails when a function of ``evalkit.__all__`` has none, so a new function must be added here):

* ``PROPERTY``: numeric functions fed generated valid and invalid inputs (outcome vectors with
  0/1, fractions, percentages, -1/+1 coding, NaN, inf, strings; labels of mixed types; weights with
  zeros, negatives, tiny and huge scales; probabilities at 0 and 1; bad ints, seeds, tolerances).
* ``DOOR``: functions with heavier inputs (fits, studies, files, plots, widgets), each called with
  bad values of its arguments; the error must name the argument.
"""

from __future__ import annotations

import copy
import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalkit as ek
from evalkit.errors import EvalkitInputError

matplotlib.use("Agg")

SETTINGS = settings(max_examples=25, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --------------------------------------------------------------------------------------------
# generated input classes
# --------------------------------------------------------------------------------------------

BAD_SCALARS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, "0.05", None, True]


def _rng(draw: Any) -> np.random.Generator:
    """A numpy generator whose seed hypothesis draws (so examples replay and shrink)."""
    return np.random.default_rng(draw(st.integers(0, 2**16)))


def _size_and_rng(data: Any, lo: int, hi: int) -> tuple[int, np.random.Generator]:
    """A generated size in ``[lo, hi]`` and a generator for the values of that size."""
    return data.draw(st.integers(lo, hi)), _rng(data.draw)


@st.composite
def outcomes(draw: Any, n: int | None = None, kind: str = "any") -> np.ndarray:
    """Outcome vectors: 0/1 (possibly constant), fractions, or one of the codings to refuse."""
    n = draw(st.integers(4, 40)) if n is None else n
    k = draw(st.sampled_from(["binary", "constant1", "constant0", "fraction", "percent", "signed", "nan", "inf"])
             if kind == "any" else st.just(kind))
    rng = _rng(draw)
    y = (rng.random(n) < draw(st.floats(0.05, 0.95))).astype(float)
    if k == "constant1":
        y[:] = 1.0
    elif k == "constant0":
        y[:] = 0.0
    elif k == "fraction":
        y = np.round(rng.random(n), 2)
    elif k == "percent":
        y = 100.0 * y
        y[0] = 100.0
    elif k == "signed":
        y = 2.0 * y - 1.0
        y[0] = -1.0
    elif k == "nan":
        y[draw(st.integers(0, n - 1))] = np.nan
    elif k == "inf":
        y[draw(st.integers(0, n - 1))] = np.inf
    return y


@st.composite
def labels(draw: Any, n: int) -> np.ndarray:
    """Cluster labels: ints, strings, a single cluster, or mixed int/str (refused)."""
    m = draw(st.integers(1, max(1, n // 2)))
    codes = np.arange(n) % m
    kind = draw(st.sampled_from(["int", "str", "mixed"]))
    if kind == "int":
        return codes
    if kind == "str":
        return np.array([f"c{c}" for c in codes])
    out = codes.astype(object)
    out[0] = str(out[0])
    return out


@st.composite
def weights(draw: Any, n: int) -> np.ndarray:
    rng = _rng(draw)
    w = rng.uniform(0.5, 2.0, n) * draw(st.sampled_from([1e-300, 1e-5, 1.0, 1e5, 1e300]))
    bad = draw(st.sampled_from(["none", "none", "zero", "negative", "nan", "allzero"]))
    if bad == "zero":
        w[0] = 0.0
    elif bad == "negative":
        w[0] = -1.0
    elif bad == "nan":
        w[0] = np.nan
    elif bad == "allzero":
        w[:] = 0.0
    return w


def scalars(good: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(good, good, st.sampled_from(BAD_SCALARS))


# --------------------------------------------------------------------------------------------
# the contract check
# --------------------------------------------------------------------------------------------


def _snapshot(obj: Any) -> Any:
    if isinstance(obj, (np.ndarray, pd.DataFrame, pd.Series, list, dict)):
        return copy.deepcopy(obj)
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    if isinstance(a, (pd.DataFrame, pd.Series)):
        return a.equals(b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - lists of arrays
        return True


def _numbers(result: Any) -> list[float]:
    if isinstance(result, (bool, np.bool_, str)) or result is None:
        return []
    if isinstance(result, (int, float, np.number)):
        return [float(result)]
    if isinstance(result, (tuple, list)):
        return [x for r in result for x in _numbers(r)]
    if isinstance(result, dict):
        return [x for r in result.values() for x in _numbers(r)]
    if isinstance(result, np.ndarray) and result.dtype.kind in "fiu":
        return result.astype(float).ravel().tolist()
    if isinstance(result, ek.Estimate):
        return [result.estimate, result.se, result.ci_low, result.ci_high]
    return []


def check_contract(func: Callable[..., Any], args: tuple, kwargs: dict, *, names: set[str]) -> Any:
    """Call ``func`` and assert the contract; ``names`` are the arguments an input error may name."""
    before = {k: _snapshot(v) for k, v in {**dict(enumerate(args)), **kwargs}.items()}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            result = func(*args, **kwargs)
        except EvalkitInputError as exc:
            assert exc.argument in names, f"{func.__name__}: names {exc.argument!r}, not one of {names}: {exc}"
            result = exc
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{func.__name__} raised a raw {type(exc).__name__}: {exc}")
    for k, v in {**dict(enumerate(args)), **kwargs}.items():
        if before[k] is not None:
            assert _same(before[k], v), f"{func.__name__} mutated its argument {k!r}"
    if not isinstance(result, EvalkitInputError):
        nums = _numbers(result)
        if any(not math.isfinite(x) for x in nums if not (isinstance(x, float) and math.isinf(x))):
            assert any(issubclass(w.category, Warning) for w in rec), f"{func.__name__}: NaN without a warning"
    return result


def _estimate_in_range(e: Any, lo: float = 0.0, hi: float = 1.0) -> None:
    if isinstance(e, ek.Estimate):
        assert lo - 1e-12 <= e.estimate <= hi + 1e-12
        assert e.se >= 0 and e.ci_low <= e.ci_high


# --------------------------------------------------------------------------------------------
# PROPERTY tier
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_mean_estimate(data: Any) -> None:
    y = data.draw(outcomes())
    g = data.draw(labels(y.size))
    w = data.draw(st.one_of(st.none(), weights(y.size)))
    se = data.draw(st.sampled_from(["iid", "CR1", "CR2"]))
    binary = data.draw(st.booleans())
    r = check_contract(ek.mean_estimate, (y, g), {"weights": w, "se": se, "binary": binary},
                       names={"y", "clusters", "weights"})
    if binary:
        _estimate_in_range(r)


@SETTINGS
@given(st.data())
def test_paired_estimate(data: Any) -> None:
    a = data.draw(outcomes())
    b = data.draw(st.one_of(st.just(a.copy()), outcomes(n=a.size), outcomes()))
    g = data.draw(labels(a.size))
    r = check_contract(ek.paired_estimate, (a, b, g), {}, names={"y_a", "y_b", "clusters"})
    _estimate_in_range(r, -1.0, 1.0)


@SETTINGS
@given(st.data())
def test_icc_deff_and_clusters(data: Any) -> None:
    y = data.draw(outcomes())
    g = data.draw(labels(y.size))
    check_contract(ek.icc_anova, (y, g), {}, names={"y", "clusters"})
    check_contract(ek.deff_empirical, (y, g), {}, names={"y", "clusters", "weights"})
    w = data.draw(weights(y.size))
    check_contract(ek.clusters_effective, (g,), {"weights": w}, names={"clusters", "weights", "rho"})
    r = check_contract(ek.missing_complete_case, (y, g), {}, names={"correct", "clusters", "y"})
    _estimate_in_range(r)
    check_contract(ek.missing_bounds, (y, g), {}, names={"correct", "clusters", "y"})


@SETTINGS
@given(st.data())
def test_intervals_and_sizes(data: Any) -> None:
    p = data.draw(scalars(st.floats(0.0, 1.0)))
    n = data.draw(scalars(st.floats(0.5, 1e4)))
    df = data.draw(scalars(st.floats(1.0, 1e3)))
    r = check_contract(ek.interval_wilson, (p, n), {"df": df}, names={"p", "n_eff", "df", "alpha"})
    if isinstance(r, tuple):
        assert 0.0 <= r[0] <= r[1] <= 1.0
    est = data.draw(scalars(st.floats(-5, 5)))
    se = data.draw(scalars(st.floats(0.0, 5.0)))
    r = check_contract(ek.interval_t, (est, se, df), {}, names={"estimate", "se", "df", "alpha"})
    if isinstance(r, tuple):
        assert r[0] <= r[1]
    deff = data.draw(scalars(st.floats(0.01, 50)))
    r = check_contract(ek.n_effective, (n, deff), {}, names={"n", "deff"})
    if isinstance(r, float):
        assert 0 < r <= n
    m = data.draw(scalars(st.floats(1.0, 100.0)))
    rho = data.draw(scalars(st.floats(-1.0, 1.0)))
    r = check_contract(ek.deff_from_icc, (m, rho), {}, names={"m_bar", "rho"})
    if isinstance(r, float):
        assert r >= 0
    check_contract(ek.icc_latent, (data.draw(scalars(st.floats(0, 10))),), {}, names={"sigma_u"})
    check_contract(ek.mc_tolerance, (data.draw(scalars(st.floats(0, 1))), data.draw(st.integers(-2, 100))),
                   {"z": data.draw(scalars(st.floats(0.1, 6)))}, names={"p", "n_reps", "z"})
    check_contract(ek.simulate_icc_observed, (data.draw(scalars(st.floats(-3, 3))),
                                              data.draw(scalars(st.floats(0, 3)))), {},
                   names={"mu", "sigma_u", "beta_x"})


@SETTINGS
@given(st.data())
def test_planning(data: Any) -> None:
    se = data.draw(scalars(st.floats(1e-4, 1.0)))
    power = data.draw(scalars(st.floats(0.05, 0.99)))
    df = data.draw(scalars(st.floats(2.0, 500.0)))
    r = check_contract(ek.plan_mdd, (se,), {"df": df, "power": power}, names={"se", "df", "power", "alpha"})
    if isinstance(r, float):
        assert r > 0
    delta = data.draw(scalars(st.floats(-0.5, 0.5)))
    r = check_contract(ek.plan_power, (delta, se), {"df": df}, names={"delta", "se", "df", "alpha"})
    if isinstance(r, float):
        assert 0 <= r <= 1
    var = ek.PlanVariance(var_between=0.15, var_within=0.05, icc=0.05)
    n = data.draw(scalars(st.floats(2, 1e4)))
    check_contract(ek.plan_se, (var, n), {"cluster_size": data.draw(st.one_of(st.none(), st.floats(-1, 50)))},
                   names={"n", "cluster_size", "cluster_sizes", "k"})
    check_contract(ek.plan_sample_size, (data.draw(scalars(st.floats(0.005, 0.3))), var), {"power": power},
                   names={"delta", "power", "var", "k", "alpha"})
    check_contract(ek.plan_resample_gain, (var, data.draw(st.sampled_from([1, 2, 4, 0, -1, 1.5, math.inf]))),
                   {"cluster_size": data.draw(st.sampled_from([20, 0.5, -1]))}, names={"k", "cluster_size"})
    check_contract(ek.plan_zero_failures, (n,), {"deff": deff if (deff := data.draw(scalars(st.floats(0.5, 5))))
                                                 is not None else 1.0}, names={"n", "deff", "alpha"})


@SETTINGS
@given(st.data())
def test_weights_and_ipw_with_given_propensities(data: Any) -> None:
    n, rng = _size_and_rng(data, 6, 40)
    p = rng.uniform(0.2, 1.0, n)
    kind = data.draw(st.sampled_from(["ok", "zero", "one", "tiny", "nan", "above"]))
    if kind == "zero":
        p[0] = 0.0
    elif kind == "one":
        p[:] = 1.0
    elif kind == "tiny":
        p[0] = 1e-310
    elif kind == "nan":
        p[0] = np.nan
    elif kind == "above":
        p[0] = 1.5
    r = check_contract(ek.weights_compute, (p,), {}, names={"p", "propensities", "truncate"})
    if isinstance(r, ek.Weights):
        assert np.isfinite(r.w).all() and (r.w > 0).all()
    y = data.draw(outcomes(n=n))
    y[rng.random(n) < 0.3] = np.nan
    y[0] = 1.0
    g = np.arange(n) % max(2, n // 4)
    r = check_contract(ek.ipw_estimate, (y, g), {"p": p}, names={"correct", "clusters", "p", "propensities", "y"})
    _estimate_in_range(r)


@SETTINGS
@given(st.data())
def test_harmony_partition_and_agreement(data: Any) -> None:
    n = data.draw(st.integers(6, 30))
    lab = np.arange(n) % data.draw(st.integers(1, 4))
    part = ek.partition_labels(lab)
    y = data.draw(outcomes(n=n))
    b = data.draw(scalars(st.floats(0.005, 1.0)))
    r = check_contract(ek.harmony_score, (y, part), {"b": b}, names={"Y", "outcomes", "b", "eps"})
    if isinstance(r, float):
        assert -1e-9 <= r <= 1 + 1e-9
    check_contract(ek.harmony_profile, (y, part), {"b": b}, names={"y", "outcomes", "b", "eps"})
    other = data.draw(labels(n))
    check_contract(ek.partition_ari, (lab, other), {}, names={"a", "b", "labels", "labels_a", "labels_b"})
    check_contract(ek.ecc_cluster_agreement, (lab, other), {}, names={"labels_true", "labels_pred", "labels"})
    check_contract(ek.partition_labels, (other,), {}, names={"labels"})
    X = np.random.default_rng(0).random((n, 2))
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    if data.draw(st.booleans()):
        D[0, 1] = data.draw(st.sampled_from([np.nan, -1.0, 5.0]))
    check_contract(ek.partition_silhouette, (D, lab), {}, names={"D", "labels"})


@SETTINGS
@given(st.data())
def test_bradley_terry(data: Any) -> None:
    n, rng = _size_and_rng(data, 10, 60)
    w = rng.integers(0, 4, n)
    loser = (w + rng.integers(1, 4, n)) % 4
    if data.draw(st.booleans()):
        w = w.astype(object)
        w[0] = str(w[0])
    ridge = data.draw(scalars(st.floats(0.01, 2.0)))
    r = check_contract(ek.bt_fit, (w, loser), {"ridge": ridge}, names={"winner", "loser", "ridge", "pairs"})
    if isinstance(r, ek.BTFit):
        assert np.isfinite(r.theta).all()
    check_contract(ek.bt_encode, (w, loser), {}, names={"winner", "loser", "models"})
    theta = data.draw(st.sampled_from([np.zeros(3), np.array([0.0, 1.0, np.nan]), np.array([0.0, 1.0, 2.0])]))
    check_contract(ek.bt_simulate, (theta, data.draw(st.integers(-1, 30))), {"seed": data.draw(st.sampled_from(
        [0, None, -1]))}, names={"theta", "n_comparisons", "seed", "models"})


@SETTINGS
@given(st.data())
def test_similarity(data: Any) -> None:
    n = data.draw(st.integers(3, 12))
    P = np.random.default_rng(data.draw(st.integers(0, 99))).dirichlet([1, 1, 1], n)
    if data.draw(st.booleans()):
        P[0, 0] = data.draw(st.sampled_from([np.nan, -0.2, 2.0]))
    tau = data.draw(scalars(st.floats(0.1, 5.0)))
    r = check_contract(ek.similarity_matrix, (P,), {"tau": tau}, names={"P", "tau", "smooth"})
    if isinstance(r, np.ndarray):
        assert ((r >= -1e-12) & (r <= 1 + 1e-12)).all()
    check_contract(ek.similarity_bernoulli, (P[:, 0],), {}, names={"prob", "P"})


BUDGETS = [5, 20, np.int64(8), 0.25, 0.5, 1.0, 50.0, 0, 1, -3, 41, True, float("nan"), "10", None]


@SETTINGS
@given(st.data())
def test_budgets_and_active_estimators(data: Any) -> None:
    """One unit per function: a count where a count is meant, a fraction where a fraction is; never the other read
    silently as it (``budget=0.5`` is not 0 items, ``budgets=[50]`` is not 50%)."""
    n, rng = _size_and_rng(data, 4, 40)
    z = data.draw(outcomes(n=n))
    q = rng.uniform(0.01, 1.0, n)
    if data.draw(st.booleans()):
        q[0] = data.draw(st.sampled_from([0.0, 1.5, np.nan, -0.1]))
    p = rng.uniform(0.05, 0.95, n)
    n_items = data.draw(st.sampled_from([40, 100, 0, -1, 2.5, True]))
    r = check_contract(ek.active_pai, (z, q, p, p), {"n_items": n_items}, names={"z", "q", "p", "p_mean", "n_items"})
    if isinstance(r, ek.Estimate):
        assert math.isfinite(r.estimate) and r.se >= 0 and r.ci_low <= r.ci_high
    Z = (rng.random((2, 40)) < 0.5).astype(float)
    P = rng.uniform(0.05, 0.95, Z.shape)
    bad_p = data.draw(st.booleans())
    if bad_p:
        P[0, 0] = data.draw(st.sampled_from([0.0, 1.0, np.nan]))
    budget = data.draw(st.sampled_from(BUDGETS))
    r = check_contract(ek.active_ceiling, (P, Z, budget), {}, names={"P", "Z", "budget"})
    if not isinstance(r, EvalkitInputError):
        assert isinstance(budget, (int, np.integer)) and 2 <= budget <= 40 and not isinstance(budget, bool)
        assert np.isfinite(r.to_numpy()).all()
    elif not bad_p and isinstance(budget, (float, np.floating)) and 0 < budget < 1:
        assert r.argument == "budget" and "fraction" in str(r)
    fraction = data.draw(st.sampled_from(BUDGETS))
    r = check_contract(ek.active_study, (_active_data(),), {"budgets": [fraction], "factors": _factors(),
                       "params": ek.ActiveParams(), "methods": ("no_such_method",)},
                       names={"budgets", "methods"})
    assert isinstance(r, EvalkitInputError)  # either the budget or, past it, the unknown method
    if r.argument == "methods":
        assert isinstance(fraction, float) and 0 < fraction < 1
    elif isinstance(fraction, (int, np.integer)) and not isinstance(fraction, bool) and fraction >= 1:
        assert "count" in str(r)


@SETTINGS
@given(st.data())
def test_harmony_compare_and_sensitivity_tables(data: Any) -> None:
    n = data.draw(st.integers(6, 24))
    part = ek.partition_labels(np.arange(n) % 2)
    y_a = data.draw(outcomes(n=n))
    y_b = data.draw(st.one_of(st.just(y_a.copy()), outcomes(n=n), outcomes()))
    r = check_contract(ek.harmony_compare, (y_a, y_b, part), {"n_boot": 20, "seed": 0},
                       names={"y_a", "y_b", "b", "eps", "n_boot"})
    _estimate_in_range(r, -1.0, 1.0)
    deltas = np.sort(data.draw(st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=6, unique=True)))
    lo = data.draw(st.floats(0.0, 0.5))
    table = pd.DataFrame({"delta": deltas, "estimate": lo + 0.1, "ci_low": lo, "ci_high": lo + 0.2})
    if data.draw(st.booleans()):
        table = table.drop(columns=data.draw(st.sampled_from(list(table.columns))))
    r = check_contract(ek.sensitivity_tipping_point, (table,), {"reference": 0.3}, names={"table", "reference"})
    if isinstance(r, dict):
        assert r["conclusion_at_0"] in ("above", "below", "undecided")


# --------------------------------------------------------------------------------------------
# DOOR tier: bad values of named arguments must raise an EvalkitInputError naming them
# --------------------------------------------------------------------------------------------


def _sim() -> pd.DataFrame:
    return ek.simulate_clustered(n_clusters=8, cluster_size=6, mean=0.6, icc=0.1, rng=1, beta_x=1.0)


@functools.cache
def _fit_irt() -> ek.IRTFit:
    return ek.irt_fit((np.random.default_rng(0).random((12, 10)) < 0.5).astype(float), ridge=0.1)


@functools.cache
def _factors() -> ek.ActiveFactors:
    return ek.active_factor_fit((np.random.default_rng(0).random((12, 20)) < 0.5).astype(float), rank=2)


@functools.cache
def _ecc() -> tuple[Any, Any]:
    sim = ek.ecc_simulate(n_queries=40, n_models=4, K=2, dim=4, seed=0)
    return sim, ek.ecc_fit(sim.pairs, sim.embeddings, K=2, seed=0)


def _long() -> pd.DataFrame:
    return ek.simulate_paired(n_clusters=6, cluster_size=5, k=1, rng=1)


def _mc_runs() -> pd.DataFrame:
    return ek.mc_run(lambda rng: rng.normal(size=5), {"m": np.mean}, truth=0.0, n_reps=3, seed=0)


def _active_data() -> ek.ActiveData:
    rng = np.random.default_rng(0)
    Z = (rng.random((3, 40)) < 0.5).astype(float)
    return ek.ActiveData(H=Z, Z_val=Z, Z_test=Z, P_test=np.full(Z.shape, 0.5), suite="mmlu_pro", sparsity="full",
                         observed=1.0)


NOT_A_FRAME = "not a table"

# name -> list of (argument the error must name, call)
_Y_DR = np.r_[np.ones(20), np.zeros(20), np.full(10, np.nan)]
_G_DR = np.repeat(np.arange(10), 5)
_X_DR = np.arange(50.0)[:, None]


DOOR: dict[str, list[tuple[str, Callable[[], Any]]]] = {
    "as_rng": [("seed", lambda: ek.as_rng(None))],
    "long_validate": [("df", lambda: ek.long_validate(pd.DataFrame({"model": ["a"]})))],
    "long_to_matrix": [("df", lambda: ek.long_to_matrix(pd.DataFrame({"model": ["a"]})))],
    "matrix_to_long": [("m", lambda: ek.matrix_to_long(NOT_A_FRAME))],
    "dataset_search_path": [],   # no argument: nothing to refuse
    "dataset_list": [],          # no argument
    "versions": [],              # no argument
    "show_versions": [],         # no argument
    "dataset_info": [("name", lambda: ek.dataset_info("no_such_dataset"))],
    "dataset_path": [("name", lambda: ek.dataset_path("no_such_dataset", "x.csv"))],
    "dataset_load": [("name", lambda: ek.dataset_load("no_such_dataset")),
                     ("models", lambda: ek.dataset_load("mmlu_pro_official", models=[]))],
    "dataset_matrix": [("name", lambda: ek.dataset_matrix("no_such_dataset"))],
    "dataset_items": [("name", lambda: ek.dataset_items("no_such_dataset"))],
    "dataset_texts": [("name", lambda: ek.dataset_texts("no_such_dataset"))],
    "alpaca_pairs": [("annotator", lambda: ek.alpaca_pairs("no_such_annotator"))],
    "oll_factors_load": [("suite", lambda: ek.oll_factors_load("no_such_suite"))],
    "oll_matrix_draw": [("suite", lambda: ek.oll_matrix_draw("no_such_suite", seed=0))],
    "results_load": [("name", lambda: ek.results_load("../no_such_benchmark"))],
    "example_path": [("rel", lambda: ek.example_path("../outside")), ("rel", lambda: ek.example_path(3))],
    "bootstrap_cluster": [("n_boot", lambda: ek.bootstrap_cluster(lambda r, i: 0.0, np.repeat([0, 1], 3),
                                                                  n_boot=60.5, seed=0)),
                          ("seed", lambda: ek.bootstrap_cluster(lambda r, i: 0.0, np.repeat([0, 1], 3), seed=None))],
    "coverage_study": [("seed", lambda: ek.coverage_study(n_reps=10, seed=-1)),
                       ("n_reps", lambda: ek.coverage_study(n_reps=1, seed=0))],
    "simulate_cluster_sizes": [("n_clusters", lambda: ek.simulate_cluster_sizes(0, 5))],
    "simulate_clustered": [("beta_x", lambda: ek.simulate_clustered(n_clusters=4, cluster_size=4, mean=0.6, icc=0.1,
                                                                    rng=0, beta_x=float("nan"))),
                           ("mean", lambda: ek.simulate_clustered(n_clusters=4, cluster_size=4, mean=1.5, icc=0.1,
                                                                  rng=0))],
    "simulate_missing": [("response_rate", lambda: ek.simulate_missing(_sim(), mechanism="mcar", response_rate=1.5,
                                                                       rng=0))],
    "simulate_2pl": [("n_models", lambda: ek.simulate_2pl(0, 10, rng=0))],
    "simulate_redundant": [("n_models", lambda: ek.simulate_redundant(n_models=0, rng=0))],
    "simulate_calibrate": [("mean", lambda: ek.simulate_calibrate(1.5, 0.1))],
    "simulate_paired": [("n_clusters", lambda: ek.simulate_paired(n_clusters=1, cluster_size=5, rng=0))],
    "mc_run": [("estimators", lambda: ek.mc_run(lambda r: 0.0, [np.mean], truth=0.0, n_reps=2, seed=0)),
               ("truth", lambda: ek.mc_run(lambda r: 0.0, {"m": np.mean}, truth=np.inf, n_reps=2, seed=0)),
               ("seed", lambda: ek.mc_run(lambda r: 0.0, {"m": np.mean}, truth=0.0, n_reps=2, seed=None))],
    "mc_share_above": [("values", lambda: ek.mc_share_above(["a"], [0.01])),
                       ("mcses", lambda: ek.mc_share_above([0.9, 0.8], [0.01])),
                       ("mcses", lambda: ek.mc_share_above([0.9], [-0.01])),
                       ("threshold", lambda: ek.mc_share_above([0.9], [0.01], threshold="x"))],
    "mc_summarise": [("runs", lambda: ek.mc_summarise(_mc_runs().iloc[:0])),
                     ("scale", lambda: ek.mc_summarise(_mc_runs(), scale=-1))],
    "mc_coverage_clustered": [("n_reps", lambda: ek.mc_coverage_clustered(icc=0.1, n_clusters=4, cluster_size=4,
                                                                          n_reps=0))],
    "propensity_fit": [("n_quad", lambda: ek.propensity_fit(np.r_[np.ones(10), np.zeros(2)], None,
                                                            np.arange(12) % 3, n_quad=1.5)),
                       ("R", lambda: ek.propensity_fit(np.ones(12), None, np.arange(12) % 3))],
    "ipw_compare": [("y_b", lambda: ek.ipw_compare(np.ones(6), np.ones(5), np.arange(6) % 2))],
    "ipw_bootstrap": [("seed", lambda: ek.ipw_bootstrap(_sim()["correct"], _sim()["cluster"], seed=None))],
    "missing_breakdown": [("long_df", lambda: ek.missing_breakdown(NOT_A_FRAME)),
                          ("long_df", lambda: ek.missing_breakdown(_long().assign(correct=lambda d: 100 * d.correct))),
                          ("cluster", lambda: ek.missing_breakdown(_long(), cluster="no_such_column"))],
    "missing_features": [("long_df", lambda: ek.missing_features(NOT_A_FRAME, model="A")),
                         ("model", lambda: ek.missing_features(_long(), model="no_such_model"))],
    "missing_report": [("long_df", lambda: ek.missing_report(NOT_A_FRAME)),
                       ("long_df", lambda: ek.missing_report(_long().assign(status="OK")))],
    "missing_study": [("n_reps", lambda: ek.missing_study(n_reps=0))],
    "missing_explore": [("n_reps", lambda: ek.missing_explore(n_reps=0)),
                        ("response_rate", lambda: ek.missing_explore(response_rate=80.0))],
    "sensitivity_delta": [("deltas", lambda: ek.sensitivity_delta(np.r_[np.ones(5), np.nan], deltas=[np.nan]))],
    "sensitivity_tipping_point": [("table", lambda: ek.sensitivity_tipping_point(pd.DataFrame())),
                                  ("table", lambda: ek.sensitivity_tipping_point(pd.DataFrame(
                                      {"delta": [0.1, 0.2], "estimate": 0.5, "ci_low": 0.4, "ci_high": 0.6})))],
    "sensitivity_plot": [("table", lambda: ek.sensitivity_plot(pd.DataFrame()))],
    "irt_fit": [("dtype", lambda: ek.irt_fit(np.eye(4), dtype=np.float16)),
                ("max_iter", lambda: ek.irt_fit(np.eye(4), max_iter=0)),
                ("Y", lambda: ek.irt_fit(100 * np.eye(4)))],
    "irt_fit_lbfgs": [("max_iter", lambda: ek.irt_fit_lbfgs(np.eye(4), max_iter=1.5))],
    "irt_objective": [("theta", lambda: ek.irt_objective(np.eye(3), np.zeros(2), np.ones(3), np.zeros(3)))],
    "irt_se": [("Y", lambda: ek.irt_se(_fit_irt(), np.eye(3)))],
    "irt_item_fit": [("Y", lambda: ek.irt_item_fit(_fit_irt(), np.eye(3)))],
    "irt_dimensionality": [("n_sim", lambda: ek.irt_dimensionality(
        _fit_irt(), (np.random.default_rng(0).random((12, 10)) < 0.5).astype(float), n_sim=0))],
    "dr_estimate": [("folds", lambda: ek.dr_estimate(_Y_DR, _G_DR, features=_X_DR, folds=1))],
    "dr_compare": [("correct_b", lambda: ek.dr_compare(_Y_DR, _Y_DR[:10], _G_DR, features=_X_DR))],
    "dr_folds": [("folds", lambda: ek.dr_folds(_G_DR, folds=0))],
    "dr_diagnostics_plot": [("est", lambda: ek.dr_diagnostics_plot("not an estimate"))],
    "propensity_diagnostics": [("p", lambda: ek.propensity_diagnostics(np.r_[np.ones(5), np.zeros(5)],
                                                                        np.full(10, 1.5)))],
    "irt_information": [("theta", lambda: ek.irt_information(_fit_irt(), np.array([np.nan])))],
    "irt_flag_uninformative": [("threshold", lambda: ek.irt_flag_uninformative(_fit_irt(), threshold=-1.0))],
    "irt_rank_compare": [("Y", lambda: ek.irt_rank_compare(_fit_irt(), np.eye(3)))],
    "irt_group_easiness": [("clusters", lambda: ek.irt_group_easiness(_fit_irt(), np.r_[np.nan, np.ones(9)]))],
    "bt_pairs_from_matrix": [("models", lambda: ek.bt_pairs_from_matrix(np.eye(3), models=["m", "m", "n"]))],
    "bt_pairs_sample": [("per_item", lambda: ek.bt_pairs_sample(pd.DataFrame({"item": ["a"]}), 0, seed=0))],
    "ecc_embed_texts": [("dim", lambda: ek.ecc_embed_texts(["a b", "b c", "c a"], dim=0))],
    "ecc_embeddings_build": [("name", lambda: ek.ecc_embeddings_build("no_such_dataset"))],
    "ecc_embeddings_load": [("name", lambda: ek.ecc_embeddings_load("no_such_dataset"))],
    "ecc_fit": [("max_iter", lambda: ek.ecc_fit(_ecc()[0].pairs, _ecc()[0].embeddings, K=2, max_iter=0))],
    "ecc_infer": [("T", lambda: ek.ecc_infer(_ecc()[1], _ecc()[0].embeddings, mode="emb", T=-1.0))],
    "ecc_predict": [("resp", lambda: ek.ecc_predict(_ecc()[1], np.array([[-4.2, 5.2]]), ["m0"], ["m1"]))],
    "ecc_scores": [("resp", lambda: ek.ecc_scores(_ecc()[1], np.full((2, 2), np.nan)))],
    "ecc_evaluate": [("fits", lambda: ek.ecc_evaluate({}, _ecc()[0].pairs, _ecc()[0].embeddings, seed=0))],
    "ecc_simulate": [("spread", lambda: ek.ecc_simulate(spread=-1.0, seed=0)),
                     ("n_models", lambda: ek.ecc_simulate(n_models=1, seed=0))],
    "ecc_profile_recovery": [("clusters", lambda: ek.ecc_profile_recovery(_ecc()[1], np.zeros(3), np.zeros((2, 4))))],
    "ecc_plot_gains": [("table", lambda: ek.ecc_plot_gains(pd.DataFrame()))],
    "ecc_explore": [("K", lambda: ek.ecc_explore(_ecc()[0].pairs, _ecc()[0].pairs, _ecc()[0].embeddings, K=0))],
    "ecc_study": [("test_fraction", lambda: ek.ecc_study(_ecc()[0].pairs, _ecc()[0].embeddings, test_fraction=2.0))],
    "active_factor_fit": [("max_iter", lambda: ek.active_factor_fit(np.eye(4), rank=1, max_iter=0)),
                          ("rank", lambda: ek.active_factor_fit(np.eye(4), rank=0))],
    "active_factor_cv": [("seed", lambda: ek.active_factor_cv(np.eye(4), ranks=(1,), seed=None))],
    "active_factor_calibration": [("seed", lambda: ek.active_factor_calibration(
        np.eye(4), ek.active_factor_fit(np.eye(4), rank=1), seed=None))],
    "active_run": [("seed", lambda: ek.active_run(np.ones((1, 20)), _factors(), 5, seed=None)),
                   ("budget", lambda: ek.active_run(np.ones((1, 20)), _factors(), 0.5)),
                   ("Z", lambda: ek.active_run(100 * np.ones((1, 20)), _factors(), 5))],
    "active_pai": [("n_items", lambda: ek.active_pai([1.0, 0.0], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5], 0)),
                   ("z", lambda: ek.active_pai([1.0], [0.5], [0.5], [0.5], 10)),
                   ("q", lambda: ek.active_pai([1.0, 0.0], [0.5, 0.0], [0.5, 0.5], [0.5, 0.5], 10))],
    "active_tune": [("budget", lambda: ek.active_tune(np.ones((2, 20)), _factors(), 0)),
                    ("budget", lambda: ek.active_tune(np.ones((2, 20)), _factors(), 0.1)),
                    ("by", lambda: ek.active_tune(np.ones((2, 20)), _factors(), 5, by="rmse"))],
    "active_evaluate": [("results", lambda: ek.active_evaluate([]))],
    "active_ess_bootstrap": [("results", lambda: ek.active_ess_bootstrap([], 5, ["faq"])),
                             ("methods", lambda: ek.active_ess_bootstrap(
                                 [ek.active_run(np.ones((1, 20)), _factors(), 5, seed=0)], 5, ["no_such"]))],
    "active_ceiling": [("budget", lambda: ek.active_ceiling(np.full((1, 20), 0.5), np.ones((1, 20)), 0)),
                       ("budget", lambda: ek.active_ceiling(np.full((1, 20), 0.5), np.ones((1, 20)), 0.5)),
                       ("P", lambda: ek.active_ceiling(np.full((1, 20), 1.0), np.ones((1, 20)), 5)),
                       ("Z", lambda: ek.active_ceiling(np.full((1, 20), 0.5), np.full((1, 20), 100.0), 5))],
    "active_sampling_trace": [("z", lambda: ek.active_sampling_trace(np.ones((2, 20)), _factors(), 5)),
                              ("budget", lambda: ek.active_sampling_trace(np.ones(20), _factors(), 0.25))],
    "active_semisynthetic": [("suite", lambda: ek.active_semisynthetic("no_such_suite", n_hist=3, n_val=2, n_test=2,
                                                                       seed=0)),
                             ("n_hist", lambda: ek.active_semisynthetic(n_hist=2, n_val=2, n_test=2, seed=0)),
                             ("seed", lambda: ek.active_semisynthetic(n_hist=3, n_val=2, n_test=2, seed=None))],
    "active_study": [("data", lambda: ek.active_study(NOT_A_FRAME, budgets=[0.1])),
                     ("budgets", lambda: ek.active_study(_active_data(), budgets=[50])),
                     ("budgets", lambda: ek.active_study(_active_data(), budgets=[0.0])),
                     ("tune_budget", lambda: ek.active_study(_active_data(), budgets=[0.1], tune_budget=5)),
                     ("methods", lambda: ek.active_study(_active_data(), budgets=[0.1], methods=("no_such",)))],
    "active_loo": [("budget", lambda: ek.active_loo(np.eye(4), budget=5)),
                   ("budget", lambda: ek.active_loo(np.eye(4), budget=1.0))],
    "active_plot_run": [("budget", lambda: ek.active_plot_run(np.ones((1, 20)), _factors(), 0)),
                        ("budget", lambda: ek.active_plot_run(np.ones((1, 20)), _factors(), 0.1))],
    "similarity_irt": [("ridge", lambda: ek.similarity_irt(np.eye(4), ridge=-1.0))],
    "similarity_tau": [("P", lambda: ek.similarity_tau(np.full((3, 2), np.nan)))],
    "similarity_knn": [("n_neighbors", lambda: ek.similarity_knn(np.full((4, 2), 0.5), n_neighbors=0))],
    "partition_spectral": [("k", lambda: ek.partition_spectral(np.full((6, 3), 1 / 3), k=2.5, seed=0))],
    "partition_kmeans": [("k", lambda: ek.partition_kmeans(np.eye(3), 0, seed=0))],
    "harmony_bootstrap": [("seed", lambda: ek.harmony_bootstrap(np.ones(4), ek.partition_labels([0, 0, 1, 1]),
                                                                seed=None))],
    "harmony_compare": [("y_b", lambda: ek.harmony_compare(np.ones(4), np.ones(3), ek.partition_labels([0, 0, 1, 1]),
                                                           seed=0))],
    "harmony_benchmark": [("Y", lambda: ek.harmony_benchmark(np.full((2, 4), 7.0), ek.partition_labels([0, 0, 1, 1]),
                                                             seed=0))],
    "harmony_rebalance": [("fraction", lambda: ek.harmony_rebalance(np.ones((2, 4)), ek.partition_labels([0, 0, 1, 1]),
                                                                    fraction=2.0, seed=0))],
    "harmony_plot_profile": [("profiles", lambda: ek.harmony_plot_profile({}))],
    "harmony_plot_plane": [("table", lambda: ek.harmony_plot_plane(pd.DataFrame()))],
    "harmony_explore": [("k", lambda: ek.harmony_explore(np.full((4, 2), 0.5), np.ones((2, 4)), k=0, show=False))],
    "harmony_validate": [("n_reps", lambda: ek.harmony_validate(n_reps=0))],
    "harmony_correlate": [("runs", lambda: ek.harmony_correlate(pd.DataFrame()))],
    "repro_report_write": [("rows_dir", lambda: ek.repro_report_write("/nonexistent/rows", "/tmp/evalkit-out"))],
    "plot_color": [("name", lambda: ek.plot_color(None)),
                   ("name", lambda: ek.plot_color(float("nan")))],
    "plot_style": [],            # no argument
    "plot_intervals": [("table", lambda: ek.plot_intervals(pd.DataFrame(), label="x"))],
    "plot_coverage": [("summary", lambda: ek.plot_coverage(pd.DataFrame(), x="n"))],
    "plot_coverage_designs": [("summary", lambda: ek.plot_coverage_designs(pd.DataFrame()))],
    "plot_irt_recovery": [("truth", lambda: ek.plot_irt_recovery({}, np.zeros(3), np.zeros(3))),
                          ("theta", lambda: ek.plot_irt_recovery({"theta": np.zeros(3), "b": np.zeros(3)}, np.zeros(2),
                                                                 np.zeros(3)))],
    "plot_mc_errors": [("runs", lambda: ek.plot_mc_errors(pd.DataFrame())),
                       ("scale", lambda: ek.plot_mc_errors(_mc_runs(), scale=-1.0))],
    "widget_live": [("controls", lambda: ek.widget_live(lambda: None))],
    "widget_slider": [("value", lambda: ek.widget_slider(5.0, 0.0, 1.0, 0.1, "x"))],
    "widget_choice": [("value", lambda: ek.widget_choice(["a", "b"], "c", "x"))],
    "widget_coverage_redraw": [("icc", lambda: ek.widget_coverage_redraw(icc=5.0, show=False))],
    "widget_coverage": [("icc", lambda: ek.widget_coverage(icc=5.0))],
    "widget_irt_redraw": [("missing", lambda: ek.widget_irt_redraw(missing=5.0, show=False))],
    "widget_irt": [("missing", lambda: ek.widget_irt(missing=5.0))],
    "log_read": [("paths", lambda: ek.log_read([]))],
    "log_read_inspect": [("path", lambda: ek.log_read_inspect("/nonexistent/log.eval"))],
    "log_read_lm_eval": [("path", lambda: ek.log_read_lm_eval("/nonexistent/lm_eval"))],
    "log_read_table": [("path", lambda: ek.log_read_table("/nonexistent/table.csv"))],
    "report_build": [("long_df", lambda: ek.report_build(pd.DataFrame({"model": ["a"]}))),
                     ("long_df", lambda: ek.report_build(_long().assign(correct=lambda d: 100 * d["correct"]))),
                     ("cluster", lambda: ek.report_build(_long(), cluster="no_such_column"))],
    "report_write": [("rep", lambda: ek.report_write(NOT_A_FRAME, "/tmp/evalkit-out"))],
    "plan_variance": [("models", lambda: ek.plan_variance(_long(), 1)),
                      ("long_df", lambda: ek.plan_variance(_long().assign(correct=7.0), ["A", "B"]))],
    "plan_power_plot": [("power", lambda: ek.plan_power_plot(power=1.5))],
}

PROPERTY = {
    "mean_estimate", "paired_estimate", "icc_anova", "deff_empirical", "clusters_effective",
    "missing_complete_case", "missing_bounds", "interval_wilson", "interval_t", "n_effective",
    "deff_from_icc", "icc_latent", "mc_tolerance", "simulate_icc_observed", "plan_mdd", "plan_power",
    "plan_se", "plan_sample_size", "plan_resample_gain", "plan_zero_failures", "weights_compute",
    "ipw_estimate", "harmony_score", "harmony_profile", "partition_ari", "ecc_cluster_agreement",
    "partition_labels", "partition_silhouette", "bt_fit", "bt_encode", "bt_simulate", "similarity_matrix",
    "similarity_bernoulli", "active_pai", "active_ceiling", "active_study", "harmony_compare",
    "sensitivity_tipping_point",
}

def _public_functions() -> list[str]:
    import inspect

    return [n for n in ek.__all__ if inspect.isfunction(getattr(ek, n)) or
            (callable(getattr(ek, n)) and not inspect.isclass(getattr(ek, n)) and n[0].islower()
             and not n.isupper() and n != "errors")]


def test_every_public_function_has_a_contract_entry() -> None:
    missing = [n for n in _public_functions() if n not in PROPERTY and n not in DOOR]
    assert not missing, f"public functions without a contract entry in tests/test_contract.py: {missing}"
    stale = sorted((set(DOOR) | PROPERTY) - set(ek.__all__))
    assert not stale, f"contract entries for names that are not public: {stale}"


DOOR_CASES = [pytest.param(name, i, arg, call, id=f"{name}-{arg}")
              for name, calls in DOOR.items() for i, (arg, call) in enumerate(calls)]


@pytest.mark.parametrize(("name", "i", "argument", "call"), DOOR_CASES)
def test_door(name: str, i: int, argument: str, call: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except EvalkitInputError as exc:
            assert exc.argument == argument, f"{name}: the error names {exc.argument!r}, expected {argument!r}: {exc}"
            return
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}: raised a raw {type(exc).__name__} instead of an EvalkitInputError naming "
                        f"{argument!r}: {exc}")
    pytest.fail(f"{name}: accepted a bad {argument!r}")
