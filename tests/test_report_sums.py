"""The report's per-task item sums give the same numbers as the per-model passes they replace."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import evalkit as ek
from evalkit import report as report_mod


def _random_table(seed: int, n_models: int = 5, n_items: int = 150, n_clusters: int = 9) -> pd.DataFrame:
    """Unequal clusters, cluster effects, model-dependent parse failures (some items answered by one model only)."""
    rng = np.random.default_rng(seed)
    cl = np.sort(rng.choice(n_clusters, n_items, p=rng.dirichlet(np.full(n_clusters, 2.0))))
    u = rng.normal(0, 0.8, n_clusters)[cl] + rng.normal(0, 1.0, n_items)
    ability = rng.normal(0.5, 1.0, n_models)
    y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(ability[:, None] - u[None, :])))).astype(float)
    miss = rng.random((n_models, n_items)) < rng.beta(0.8, 4.0, n_models)[:, None]
    miss[1:, :3] = True                                   # items 0-2: graded for model 0 only
    miss[0, :3] = False
    y[miss] = np.nan
    models = [f"m{i}" for i in range(n_models)]
    return pd.DataFrame({"model": np.repeat(models, n_items), "item": np.tile([f"i{j:04d}" for j in range(n_items)],
                                                                              n_models),
                         "cluster": np.tile([f"c{c}" for c in cl], n_models), "correct": y.ravel(),
                         "status": np.where(miss, "parse_failure", "ok").ravel()})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_item_sums_give_missing_features_bit_for_bit(seed: int) -> None:
    df = _random_table(seed)
    diff = report_mod._Difficulty(df)
    for model, g in df.groupby("model"):
        got = diff.acc_others(g)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ek.EvalkitWarning)
            ref = ek.missing_features(df, model=str(model)).reindex(g["item"].to_numpy())["acc_others"].to_numpy()
        if model == "m0":   # items graded by no other model: missing_features decides (overall mean, warning)
            assert got is None
        else:
            assert got is not None and np.array_equal(got, ref)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_report_equals_the_per_model_path(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every table of the report equals the one computed with a pass over the task's table per model."""
    df = _random_table(seed)
    df = df[~((df["model"] == "m0") & df["item"].isin(["i0000", "i0001", "i0002"]))]  # every item has others
    df.loc[df["item"].isin(["i0000", "i0001", "i0002"]) & (df["model"] == "m1"), ["correct", "status"]] = [1.0, "ok"]
    for se in ("CR2", "CR1"):
        fast = ek.report_build(df, se=se)
        with monkeypatch.context() as mp:
            mp.setattr(report_mod._Difficulty, "acc_others", lambda self, g: None)
            ref = ek.report_build(df, se=se)
        assert any(r.startswith("DR") for r in fast.missing_estimates["estimator"])
        for name in ("accuracy", "missing_estimates", "comparisons", "missing_by_reason", "missing_by_cluster"):
            pd.testing.assert_frame_equal(getattr(fast, name), getattr(ref, name), check_exact=False, rtol=0,
                                          atol=1e-12, obj=f"{se} {name}")
        assert fast.notes == ref.notes
