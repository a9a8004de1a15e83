"""Tests of the data registry and the dataset loaders (evalkit.datasets).

Tests marked by the ``data`` fixture need the real files: they are found through ``EVALKIT_DATA``
(the Makefile and ``.ci/run`` point it at ``../shared/data``). Without them they are skipped, with
the reason printed. The registry, search-path and error-message tests use temporary folders and
run everywhere.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from evalkit.data import STATUSES, long_to_matrix, long_validate
from evalkit.datasets import (
    DATASETS,
    DatasetChecksumError,
    DatasetNotFoundError,
    alpaca_pairs,
    dataset_info,
    dataset_items,
    dataset_list,
    dataset_load,
    dataset_matrix,
    dataset_path,
    dataset_search_path,
    oll_factors_load,
    oll_matrix_draw,
)

README = Path(__file__).resolve().parents[1] / "data" / "README.md"


def _all_found() -> bool:
    try:
        return bool(dataset_list()["found"].all())
    except Exception:  # pragma: no cover - defensive
        return False


@pytest.fixture(scope="module")
def data() -> None:
    """Skip unless the real data are on the search path (EVALKIT_DATA or the user cache)."""
    if not _all_found():
        pytest.skip(
            "real data not found: set EVALKIT_DATA to the folder holding mmlu_pro_official/, "
            f"chembench/, ... (e.g. ../shared/data); EVALKIT_DATA={os.environ.get('EVALKIT_DATA')!r}"
        )


@pytest.fixture
def empty_search_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A search path with nothing on it: EVALKIT_DATA and the user cache are empty temp folders."""
    root = tmp_path / "empty_root"
    root.mkdir()
    monkeypatch.setenv("EVALKIT_DATA", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return root


# ----------------------------------------------------------------------------------------------
# Registry, search path, errors (no data needed)
# ----------------------------------------------------------------------------------------------


def test_registry_covers_the_six_folders() -> None:
    assert set(DATASETS) == {
        "mmlu_pro_official",
        "chembench",
        "livecodebench_gen",
        "alpaca_eval",
        "uncertainty_emotion",
        "oll_v2_factor_model",
    }
    for spec in DATASETS.values():
        assert spec.files and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in spec.files.values())
        assert spec.licence and re.fullmatch(r"[\w.-]+/[\w.-]+", spec.source)
        assert re.match(r"[0-9a-f]{40}", spec.commit)


def test_readme_lists_every_dataset() -> None:
    text = README.read_text(encoding="utf-8")
    for name in DATASETS:
        assert f"`{name}`" in text, f"data/README.md does not document {name}"


def test_dataset_list_columns() -> None:
    df = dataset_list()
    assert list(df["name"]) == list(DATASETS)
    assert {"name", "description", "licence", "source", "found"} <= set(df.columns)
    assert df["found"].dtype == bool


def test_unknown_dataset_name() -> None:
    with pytest.raises(ValueError, match=r"unknown dataset 'mmlu_pro'.*Did you mean 'mmlu_pro_official'"):
        dataset_load("mmlu_pro")
    with pytest.raises(ValueError, match="unknown dataset"):
        dataset_info("nope")


def test_unknown_file_and_option() -> None:
    with pytest.raises(ValueError, match="has no file"):
        dataset_path("chembench", "nope.csv")
    with pytest.raises(TypeError, match="unknown options"):
        dataset_load("livecodebench_gen", clusters="platform")


def test_search_path_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_DATA", os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dataset_search_path() == [
        (tmp_path / "a", "EVALKIT_DATA"),
        (tmp_path / "b", "EVALKIT_DATA"),
        (tmp_path / "xdg" / "evalkit", "user cache"),
    ]
    monkeypatch.delenv("EVALKIT_DATA")
    assert dataset_search_path() == [(tmp_path / "xdg" / "evalkit", "user cache")]


def test_not_found_message(empty_search_path: Path) -> None:
    spec = dataset_info("mmlu_pro_official")
    with pytest.raises(DatasetNotFoundError) as exc:
        dataset_load("mmlu_pro_official")
    msg = str(exc.value)
    assert isinstance(exc.value, FileNotFoundError)
    assert "'mmlu_pro_official'" in msg
    assert str(empty_search_path / "mmlu_pro_official" / "responses_long.csv.gz") in msg
    assert str(Path(os.environ["XDG_CACHE_HOME"]) / "evalkit") in msg
    assert "EVALKIT_DATA is set to" in msg
    assert spec.files["responses_long.csv.gz"] in msg
    assert "TIGER-AI-Lab/MMLU-Pro" in msg and "f418b116" in msg
    assert "set EVALKIT_DATA to the folder that holds mmlu_pro_official/" in msg


def test_not_found_message_when_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALKIT_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(DatasetNotFoundError, match="EVALKIT_DATA is not set"):
        oll_factors_load("mmlu_pro")


def test_found_flag_false_on_empty_path(empty_search_path: Path) -> None:
    assert not dataset_list()["found"].any()


# ----------------------------------------------------------------------------------------------
# Checksums (need one real file to copy)
# ----------------------------------------------------------------------------------------------


def test_checksum_failure_on_corrupted_copy(data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    original = dataset_path("livecodebench_gen", "items.csv")
    copy = tmp_path / "root" / "livecodebench_gen" / "items.csv"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(original, copy)
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "root"))
    assert dataset_path("livecodebench_gen", "items.csv") == copy.resolve()  # intact copy is accepted
    raw = bytearray(copy.read_bytes())
    raw[100] ^= 0x01
    copy.write_bytes(bytes(raw))
    os.utime(copy, ns=(1, 1))  # new stamp, so the per-process verification cache cannot hide it
    with pytest.raises(DatasetChecksumError) as exc:
        dataset_path("livecodebench_gen", "items.csv")
    msg = str(exc.value)
    assert isinstance(exc.value, ValueError)
    assert "'livecodebench_gen'" in msg and str(copy.resolve()) in msg
    assert dataset_info("livecodebench_gen").files["items.csv"] in msg
    assert "Actual sha256" in msg and "LiveCodeBench/livecodebench.github.io" in msg


# ----------------------------------------------------------------------------------------------
# Real data: shapes, counts, clusters, round trips
# ----------------------------------------------------------------------------------------------


def test_mmlu_pro(data: None) -> None:
    df = dataset_load("mmlu_pro_official")
    long_validate(df)
    assert len(df) == 31 * 12_032
    counts = df["status"].value_counts()
    assert counts["parse_failure"] == 35_641 and counts["not_run"] == 1_881 and counts["ok"] == 335_470
    assert df.loc[df["status"] != "ok", "correct"].isna().all()
    assert df["cluster"].nunique() == 14 and df["src"].nunique() == 91
    assert {"category", "src", "pred", "answer"} <= set(df.columns)
    by_src = dataset_load("mmlu_pro_official", cluster="src")
    assert by_src["cluster"].nunique() == 91
    m = dataset_matrix("mmlu_pro_official")
    assert m.Y.shape == (31, 12_032)
    assert int(np.isnan(m.Y).sum()) == 35_641 + 1_881
    assert list(m.item_info.columns) == ["category", "src"]
    assert m.status_counts()["not_run"].sum() == 1_881


def test_mmlu_pro_models_option(data: None) -> None:
    models = ["Llama-2-13b-hf_5shots", "DeepSeek-Coder-V2_5shots"]
    df = dataset_load("mmlu_pro_official", models=models)
    assert set(df["model"]) == set(models) and len(df) == 2 * 12_032
    with pytest.raises(ValueError, match="unknown MMLU-Pro models"):
        dataset_load("mmlu_pro_official", models=["gpt-5"])
    with pytest.raises(ValueError, match="cluster must be one of"):
        dataset_load("mmlu_pro_official", cluster="subject")


def test_chembench(data: None) -> None:
    df = dataset_load("chembench")
    assert len(df) == 35 * 2_788
    counts = df["status"].value_counts()
    assert counts["refusal"] == 964 and counts["parse_failure"] == 800
    assert int(df["triggered_refusal"].sum()) == 1_035
    assert df["cluster"].nunique() == 9
    assert dataset_load("chembench", cluster="source_dir")["cluster"].nunique() == 67
    assert df.loc[df["status"] != "ok", "correct"].isna().all()
    assert df["correct_reported"].notna().all()
    # SOURCE.md: ChemBench scores parse failures as 0; 543 flagged refusals still scored correct
    assert (df.loc[df["status"] == "parse_failure", "correct_reported"] == 0).all()
    assert int(df.loc[df["triggered_refusal"], "correct_reported"].sum()) == 543
    per_item = df.drop_duplicates("item")["difficulty"]
    assert (per_item == "basic").sum() == 833 and (per_item == "advanced").sum() == 20
    assert per_item.isna().sum() == 1_935
    m = dataset_matrix("chembench")
    assert m.Y.shape == (35, 2_788)
    assert {"topic", "source_dir", "difficulty", "qtype"} <= set(m.item_info.columns)


def test_livecodebench(data: None) -> None:
    df = dataset_load("livecodebench_gen")
    assert len(df) == 45 * 400 and (df["status"] == "ok").all()
    assert sorted(df["cluster"].unique()) == ["easy", "hard", "medium"]
    assert df["pass_at_1"].between(0, 1).all()
    assert ((df["pass_at_1"] >= 0.5) == (df["correct"] == 1)).all()
    assert dataset_load("livecodebench_gen", cluster="platform")["cluster"].nunique() == 3
    assert dataset_matrix("livecodebench_gen").Y.shape == (45, 400)


def test_alpaca_eval(data: None) -> None:
    df = dataset_load("alpaca_eval")
    assert df["model"].nunique() == 58 and df["item"].nunique() == 805
    assert df["cluster"].nunique() == 5
    assert (df["reference_model"] == "gpt4_1106_preview").all()
    v1 = dataset_load("alpaca_eval", annotator="alpaca_eval_gpt4")
    assert (v1["status"] == "error").sum() == 61 and v1["model"].nunique() == 53
    m = dataset_matrix("alpaca_eval")
    assert m.Y.shape == (58, 805)
    assert m.status_counts()["not_run"].sum() == 58 * 805 - len(df)  # absent rows -> not_run
    with pytest.raises(ValueError, match="unknown AlpacaEval annotator"):
        dataset_load("alpaca_eval", annotator="gpt5")


def test_alpaca_pairs(data: None) -> None:
    pairs = alpaca_pairs(annotator="alpaca_eval_gpt4")
    assert list(pairs.columns) == ["item", "cluster", "winner", "loser"]
    assert (pairs["winner"] != pairs["loser"]).all()
    # check the rule on one item against the raw preferences
    raw = dataset_load("alpaca_eval", annotator="alpaca_eval_gpt4")
    item = raw["item"].iloc[0]
    pref = raw[(raw["item"] == item) & (raw["status"] == "ok")].set_index("model")["preference"].replace(0.0, 1.5)
    sub = pairs[pairs["item"] == item]
    assert (pref.loc[sub["winner"]].to_numpy() > pref.loc[sub["loser"]].to_numpy()).all()
    values = pref.to_numpy()
    n_untied = int((values[:, None] > values[None, :]).sum())
    assert len(sub) == n_untied
    shuffled = alpaca_pairs(annotator="alpaca_eval_gpt4", seed=3)
    assert len(shuffled) == len(pairs)
    assert shuffled.equals(alpaca_pairs(annotator="alpaca_eval_gpt4", seed=3))


def test_uncertainty_emotion(data: None) -> None:
    df = dataset_load("uncertainty_emotion")
    assert df["model"].nunique() == 10 and len(df) == 10 * 10_000
    assert sorted(df["cluster"].unique()) == ["Anger", "Fear", "Joy", "Sadness"]
    probs = df[[f"p_{k}" for k in "ABCDEF"]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-4)
    every = dataset_load("uncertainty_emotion", prompt=None, icl=None)
    assert every["model"].nunique() == 35 and len(every) == 350_000


@pytest.mark.parametrize(
    "name", ["mmlu_pro_official", "chembench", "livecodebench_gen", "alpaca_eval", "uncertainty_emotion"]
)
def test_long_matrix_round_trip(data: None, name: str) -> None:
    df = dataset_load(name)
    m = dataset_matrix(name)
    back = m.to_long()
    back = back[back["item"].isin(df["item"])]
    key = ["model", "item"]
    merged = df[key + ["cluster", "correct", "status"]].merge(
        back[key + ["cluster", "correct", "status"]], on=key, suffixes=("", "_m")
    )
    assert len(merged) == len(df)
    assert (merged["cluster"] == merged["cluster_m"]).all()
    assert (merged["status"] == merged["status_m"]).all()
    np.testing.assert_array_equal(merged["correct"].to_numpy(), merged["correct_m"].to_numpy())
    m2 = long_to_matrix(back)
    np.testing.assert_array_equal(m2.Y, m.Y)
    assert set(np.unique(m.status)) <= set(range(len(STATUSES)))


def test_loads_return_copies(data: None) -> None:
    a = dataset_load("livecodebench_gen")
    a.loc[:, "correct"] = np.nan
    assert dataset_load("livecodebench_gen")["correct"].notna().all()


@pytest.mark.parametrize(
    "name,n",
    [
        ("mmlu_pro_official", 12_032),
        ("chembench", 2_788),
        ("livecodebench_gen", 400),
        ("alpaca_eval", 805),
        ("uncertainty_emotion", 10_000),
    ],
)
def test_dataset_items(data: None, name: str, n: int) -> None:
    items = dataset_items(name)
    assert len(items) == n and items["item"].is_unique
    assert set(dataset_load(name)["item"]) <= set(items["item"])


# ----------------------------------------------------------------------------------------------
# Open LLM Leaderboard v2 factor models
# ----------------------------------------------------------------------------------------------


def test_oll_factors_shapes(data: None) -> None:
    U, V, items = oll_factors_load("mmlu_pro")
    assert U.shape == (2_212, 64) and V.shape == (12_032, 64) and len(items) == 12_032
    U2, V2, items2 = oll_factors_load("bbh_gpqa_ifeval_math_musr")
    assert U2.shape == (2_211, 64) and V2.shape == (9_574, 64)
    assert items2["subtask"].nunique() == 38
    with pytest.raises(ValueError, match="suite must be one of"):
        oll_factors_load("bbh")
    with pytest.raises(ValueError, match="not responses"):
        dataset_load("oll_v2_factor_model")


def test_oll_draw_deterministic_and_calibrated(data: None) -> None:
    kw = dict(n_models=300, n_items=2_000, seed=11)
    a = oll_matrix_draw("bbh_gpqa_ifeval_math_musr", **kw)
    b = oll_matrix_draw("bbh_gpqa_ifeval_math_musr", **kw)
    np.testing.assert_array_equal(a.Y, b.Y)
    np.testing.assert_array_equal(a.items, b.items)
    assert a.Y.shape == (300, 2_000) and a.Y.dtype == np.float32
    assert not np.array_equal(a.Y, oll_matrix_draw("bbh_gpqa_ifeval_math_musr", n_models=300, n_items=2_000, seed=12).Y)
    assert set(a.clusters) <= set(a.item_info["subtask"])
    # mean(Y) vs mean(sigmoid(U V')) on the drawn rows/columns, tolerance from binomial MC error
    U, V, _ = oll_factors_load("bbh_gpqa_ifeval_math_musr")
    rows = np.array([int(s.removeprefix("oll_")) for s in a.models])
    cols = a.item_info["item_index"].to_numpy()
    P = 1.0 / (1.0 + np.exp(-(U[rows].astype(float) @ V[cols].astype(float).T)))
    mcse = np.sqrt((P * (1 - P)).sum()) / P.size
    assert abs(a.Y.mean(dtype=float) - P.mean()) < 4 * mcse
    row_mcse = np.sqrt((P * (1 - P)).sum(axis=1)) / P.shape[1]
    assert np.mean(np.abs(a.Y.mean(axis=1, dtype=float) - P.mean(axis=1)) < 4 * row_mcse) > 0.99


def test_oll_draw_full_mmlu_pro(data: None) -> None:
    m = oll_matrix_draw("mmlu_pro", seed=0)
    assert m.Y.shape == (2_212, 12_032) and m.Y.dtype == np.float32
    assert set(np.unique(m.clusters)) == {"mmlu_pro"}
    assert 0.10 < float(m.Y.mean(dtype=float)) < 0.73
    with pytest.raises(ValueError, match="n_models must be an int"):
        oll_matrix_draw("mmlu_pro", n_models=0, seed=0)


def test_every_registered_checksum_matches(data: None) -> None:
    for name, spec in DATASETS.items():
        for filename in spec.files:
            assert dataset_path(name, filename).is_file()
