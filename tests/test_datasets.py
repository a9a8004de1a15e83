"""Tests of the data registry and the dataset loaders (evalkit.datasets).

The real data are in the repository's ``data/``: every test here runs with ``EVALKIT_DATA`` unset
and an empty user cache (the autouse fixture below), as on a fresh clone with nothing beside it.
The tests that compare ``data/`` with the upstream copies (``shared/data`` in the evalkit
workspace) need those copies and are skipped, with the reason shown, without them.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

import evalkit.datasets as ds
from evalkit._checks import EvalkitWarning
from evalkit.data import STATUSES, long_to_matrix, long_validate
from evalkit.datasets import (
    DATASETS,
    DatasetChecksumError,
    DatasetError,
    DatasetNotFoundError,
    alpaca_pairs,
    dataset_info,
    dataset_items,
    dataset_list,
    dataset_load,
    dataset_matrix,
    dataset_path,
    dataset_search_path,
    dataset_texts,
    oll_factors_load,
    oll_matrix_draw,
)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "data" / "README.md"
UPSTREAM_SIX = {
    "mmlu_pro_official",
    "chembench",
    "livecodebench_gen",
    "alpaca_eval",
    "uncertainty_emotion",
    "oll_v2_factor_model",
}


EVALKIT_DATA_AT_START = os.environ.get("EVALKIT_DATA", "")
"""EVALKIT_DATA as the test run started (the tests themselves run with it unset)."""


@pytest.fixture(autouse=True)
def _fresh_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a fresh clone: EVALKIT_DATA unset and an empty user cache; only data/ is there."""
    monkeypatch.delenv("EVALKIT_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


@pytest.fixture
def data() -> None:
    """Skip unless the repository's data/ holds every registered file (it does in a clone)."""
    missing = [
        f"{s.folder}/{f}" for s in DATASETS.values() for f in s.files if not (ds.REPO_DATA / s.folder / f).is_file()
    ]
    if missing:
        pytest.skip(f"the repository's data/ ({ds.REPO_DATA}) lacks {missing[:3]}...: not a full clone")


@pytest.fixture
def no_repo_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Hide the repository's data/ (point it at an empty folder) and return that folder; the
    package's own copy (absent in a clone, but hidden all the same) is pointed at nothing."""
    empty = tmp_path / "no_repo_data"
    empty.mkdir()
    monkeypatch.setattr(ds, "REPO_DATA", empty)
    monkeypatch.setattr(ds, "PACKAGE_DATA", tmp_path / "no_package_data")
    return empty


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As after `pip install evalkit`: no repository, the data in the package (an empty folder here)."""
    package = tmp_path / "site-packages" / "evalkit" / "_data"
    package.mkdir(parents=True)
    monkeypatch.setattr(ds, "REPO_DATA", None)
    monkeypatch.setattr(ds, "PACKAGE_DATA", package)
    return package


@pytest.fixture
def empty_search_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_repo_data: Path) -> Path:
    """A search path with nothing on it: EVALKIT_DATA, data/ and the user cache are empty."""
    root = tmp_path / "empty_root"
    root.mkdir()
    monkeypatch.setenv("EVALKIT_DATA", str(root))
    return root


def _build_data() -> ModuleType:
    """scripts/build_data.py as a module (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location("build_data", ROOT / "scripts" / "build_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_data", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build_data() -> ModuleType:
    return _build_data()


@pytest.fixture
def upstream(build_data: ModuleType) -> Path:
    """The upstream copies (with the item texts); skip when they are not on this machine."""
    root = build_data.default_source(EVALKIT_DATA_AT_START)
    if root is None:
        pytest.skip(
            "the upstream data with item texts are not here (looked in $EVALKIT_DATA and ../shared/data "
            "beside the clone); the repository's data/ holds only numbers"
        )
    return Path(root)


# ----------------------------------------------------------------------------------------------
# Registry, search path, errors
# ----------------------------------------------------------------------------------------------


def test_registry_covers_the_six_upstream_folders() -> None:
    assert UPSTREAM_SIX <= set(DATASETS)
    for spec in DATASETS.values():
        assert spec.files and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in spec.files.values()), spec.name
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in spec.upstream.values()), spec.name
        assert not spec.texts or spec.texts in spec.upstream
        assert not set(spec.files) & set(spec.upstream), "a committed file must not shadow an upstream name"
    for name in UPSTREAM_SIX:
        spec = DATASETS[name]
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
    with pytest.raises(ValueError, match="has no file"):
        dataset_path("chembench", "items.csv.gz")  # the upstream file with texts is not a data file
    with pytest.raises(TypeError, match="unknown options"):
        dataset_load("livecodebench_gen", clusters="platform")
    with pytest.raises(ValueError, match="has no item texts"):
        dataset_texts("livecodebench_gen")


def test_search_path_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALKIT_DATA", os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    repo = (ds.REPO_DATA, "repository data/")
    cache = (tmp_path / "xdg" / "evalkit", "user cache")
    assert dataset_search_path() == [(tmp_path / "a", "EVALKIT_DATA"), (tmp_path / "b", "EVALKIT_DATA"), repo, cache]
    monkeypatch.delenv("EVALKIT_DATA")
    assert dataset_search_path() == [repo, cache]
    assert ds.REPO_DATA == ROOT / "data"


def test_search_path_of_an_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: Path) -> None:
    """Installed (no repository): EVALKIT_DATA, then the package's data, then the cache; in a clone
    whose package also holds a copy, that copy comes after the repository's data/."""
    cache = (tmp_path / "xdg" / "evalkit", "user cache")
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "a"))
    assert dataset_search_path() == [(tmp_path / "a", "EVALKIT_DATA"), (installed, "installed package"), cache]
    monkeypatch.delenv("EVALKIT_DATA")
    assert dataset_search_path() == [(installed, "installed package"), cache]
    installed.rmdir()  # listed even when absent: the error then says where the package's copy should be
    assert dataset_search_path() == [(installed, "installed package"), cache]
    monkeypatch.setattr(ds, "REPO_DATA", ROOT / "data")
    assert dataset_search_path() == [(ROOT / "data", "repository data/"), cache]
    installed.mkdir()
    assert dataset_search_path() == [(ROOT / "data", "repository data/"), (installed, "installed package"), cache]


def test_package_data_is_found_with_importlib_resources() -> None:
    import importlib.resources

    import evalkit

    assert ds.PACKAGE_DATA == Path(str(importlib.resources.files("evalkit"))) / "_data"
    assert ds.PACKAGE_DATA == Path(evalkit.__file__).resolve().parent / "_data"
    # in a clone the repository's folders come first, and the package's own copies second
    assert ds.REPO_DATA == ROOT / "data"
    assert ds.RESULTS_DIRS == (ROOT / "benchmarks" / "results", Path(evalkit.__file__).resolve().parent / "_results")


def test_installed_package_data_is_read_and_verified(
    data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: Path
) -> None:
    """The package's copy is read, its sha256 checked on every read; a bad copy goes on to the cache."""
    copy = _copy_to(installed, "livecodebench_gen", "items.csv")
    assert dataset_path("livecodebench_gen", "items.csv") == copy.resolve()
    assert len(dataset_items("livecodebench_gen")) == 400
    _flip_one_byte(copy)
    with pytest.raises(DatasetChecksumError) as exc:
        dataset_items("livecodebench_gen")
    msg = str(exc.value)
    assert f"{copy}  (installed package): corrupted or another version (sha256 " in msg
    assert "(repository data/)" not in msg and "pip install --force-reinstall evalkit" in msg
    cached = _copy_to(tmp_path / "xdg" / "evalkit", "livecodebench_gen", "items.csv")
    with pytest.warns(EvalkitWarning, match=re.escape(str(copy))):
        assert dataset_path("livecodebench_gen", "items.csv") == cached.resolve()


def test_results_load_reads_the_first_folder_that_has_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from evalkit.errors import EvalkitInputError

    repo, package = tmp_path / "repo_results", tmp_path / "package_results"
    package.mkdir()
    (package / "demo.json").write_text(json.dumps({"benchmark": "demo", "results": {"ratio": 2.5}}))
    monkeypatch.setattr(ds, "RESULTS_DIRS", (repo, package))  # as installed: no repository folder
    assert ds.results_load("demo")["results"] == {"ratio": 2.5}
    repo.mkdir()
    (repo / "demo.json").write_text(json.dumps({"benchmark": "demo", "results": {"ratio": 3.0}}))
    assert ds.results_load("demo")["results"] == {"ratio": 3.0}
    with pytest.raises(EvalkitInputError, match=r"known: \['demo'\]"):
        ds.results_load("missing")


def test_example_path_finds_the_example_material_first_in_the_clone_then_in_the_package(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalkit.errors import EvalkitInputError, EvalkitInputNotFoundError

    rel = "tests/fixtures/eval_logs/inspect_ai/logs/eval"
    root = Path(__file__).resolve().parents[1]
    assert ds.example_path(rel) == (root / rel).resolve()   # from this clone
    assert ds.example_path("scripts/make_mmlu_inspect_log.py").is_file()
    repo, package = tmp_path / "repo", tmp_path / "package"
    (package / "scripts").mkdir(parents=True)
    (package / "scripts" / "make_mmlu_inspect_log.py").write_text("# the package's copy\n")
    monkeypatch.setattr(ds, "EXAMPLES_DIRS", (repo, package))   # a clone that lacks the file: the package's copy
    assert ds.example_path("scripts/make_mmlu_inspect_log.py") == (package / "scripts" / "make_mmlu_inspect_log.py")
    with pytest.raises(EvalkitInputNotFoundError, match="reinstall evalkit"):
        ds.example_path(rel)
    for outside in ("pyproject.toml", "tests/fixtures/eval_logs/../../../pyproject.toml", "/tests/fixtures/eval_logs",
                    ""):
        with pytest.raises(EvalkitInputError, match="inside one of"):
            ds.example_path(outside)


def test_example_path_material_is_what_the_wheel_ships() -> None:
    """setup.py copies each of EXAMPLES to evalkit/_examples/<the same path>, where example_path looks."""
    setup = (Path(__file__).resolve().parents[1] / "setup.py").read_text(encoding="utf-8")
    for rel in ds.EXAMPLES:
        folder, _, name = rel.rpartition("/") if rel.endswith(".py") else (rel, "", "")
        assert f'("{folder}", ' in setup and f'"evalkit/_examples/{folder}")' in setup, rel
        assert not name or f'("{name}",)' in setup, rel


def test_lessons_locate_the_example_material_with_example_path() -> None:
    """The lessons and solutions that read lesson 09's example material call ek.example_path, with no copy of
    a path-finding helper of their own."""
    import json

    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    users = []
    for path in sorted(notebooks.glob("*.ipynb")) + sorted(notebooks.glob("solutions/*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                         if c["cell_type"] == "code")
        assert "def example_path" not in code, path.name
        if any(rel in code for rel in ds.EXAMPLES):
            users.append(path.name)
            assert "ek.example_path(" in code, path.name
    assert len(users) >= 6, users


def test_not_found_message(empty_search_path: Path, no_repo_data: Path) -> None:
    spec = dataset_info("mmlu_pro_official")
    with pytest.raises(DatasetNotFoundError) as exc:
        dataset_load("mmlu_pro_official")
    msg = str(exc.value)
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, DatasetError)
    assert "'mmlu_pro_official'" in msg and "was not found" in msg
    for root in (empty_search_path, no_repo_data, Path(os.environ["XDG_CACHE_HOME"]) / "evalkit"):
        assert f"{root / 'mmlu_pro_official' / 'responses_long.csv.xz'}" in msg
    assert "(EVALKIT_DATA): absent" in msg and "(repository data/): absent" in msg and "(user cache): absent" in msg
    assert "EVALKIT_DATA is set to" in msg
    assert spec.files["responses_long.csv.xz"] in msg
    assert "TIGER-AI-Lab/MMLU-Pro" in msg and "f418b116" in msg
    assert "git checkout -- data/mmlu_pro_official" in msg and "never downloads" in msg


def test_not_found_message_when_unset(no_repo_data: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match="EVALKIT_DATA is not set"):
        oll_factors_load("mmlu_pro")


def test_found_flag_false_on_empty_path(empty_search_path: Path) -> None:
    assert not dataset_list()["found"].any()


# ----------------------------------------------------------------------------------------------
# A fresh clone: everything from data/; bad copies are skipped, changed files are caught
# ----------------------------------------------------------------------------------------------


def test_every_file_is_found_in_repository_data(data: None) -> None:
    assert "EVALKIT_DATA" not in os.environ
    assert dataset_list()["found"].all()
    for name, spec in DATASETS.items():
        for filename in spec.files:
            assert dataset_path(name, filename) == (ds.REPO_DATA / spec.folder / filename).resolve()


@pytest.mark.parametrize("name", sorted(UPSTREAM_SIX - {"oll_v2_factor_model"}))
def test_every_dataset_loads_from_repository_data(data: None, name: str) -> None:
    long_validate(dataset_load(name))
    assert len(dataset_items(name)) > 0


def _copy_to(root: Path, name: str, filename: str) -> Path:
    spec = DATASETS[name]
    target = root / spec.folder / filename
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "data" / spec.folder / filename, target)
    return target


def _flip_one_byte(path: Path, at: int = 100) -> None:
    """Change one byte, keeping the size and the modification time (as a fast rewrite can)."""
    st = path.stat()
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_corrupted_copy_is_skipped_for_the_next_root(
    data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = _copy_to(tmp_path / "root", "livecodebench_gen", "items.csv")
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "root"))
    assert dataset_path("livecodebench_gen", "items.csv") == copy.resolve()  # an intact copy comes first
    _flip_one_byte(copy)
    with pytest.warns(EvalkitWarning, match=re.escape(str(copy))):
        found = dataset_path("livecodebench_gen", "items.csv")
    assert found == (ds.REPO_DATA / "livecodebench_gen" / "items.csv").resolve()


def test_corrupted_everywhere_is_a_checksum_error(
    data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_repo_data: Path
) -> None:
    copy = _copy_to(tmp_path / "root", "livecodebench_gen", "items.csv")
    _flip_one_byte(copy)
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "root"))
    with pytest.raises(DatasetChecksumError) as exc:
        dataset_items("livecodebench_gen")
    msg = str(exc.value)
    assert isinstance(exc.value, ValueError) and isinstance(exc.value, DatasetError)
    assert "'livecodebench_gen'" in msg and "has no intact copy" in msg
    assert f"{copy}  (EVALKIT_DATA): corrupted or another version (sha256 " in msg
    assert f"{no_repo_data / 'livecodebench_gen' / 'items.csv'}  (repository data/): absent" in msg
    assert dataset_info("livecodebench_gen").files["items.csv"] in msg
    assert "LiveCodeBench/livecodebench.github.io" in msg


def test_unreadable_file_or_folder_goes_on_to_the_next_root(
    data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "livecodebench_gen" / "items.csv").mkdir(parents=True)  # a folder where the file should be
    b.mkdir()
    (b / "livecodebench_gen").write_text("a file where the dataset folder should be")
    monkeypatch.setenv("EVALKIT_DATA", os.pathsep.join([str(a), str(b)]))
    with pytest.warns(EvalkitWarning, match="cannot be read") as record:
        items = dataset_items("livecodebench_gen")
    assert len(items) == 400
    text = str(record[0].message)
    assert str(a / "livecodebench_gen" / "items.csv") in text and str(b / "livecodebench_gen" / "items.csv") in text


def test_unreadable_everywhere_names_every_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_repo_data: Path
) -> None:
    a = tmp_path / "a"
    (a / "chembench" / "items.csv.xz").mkdir(parents=True)
    monkeypatch.setenv("EVALKIT_DATA", str(a))
    with pytest.raises(DatasetNotFoundError) as exc:
        dataset_items("chembench")
    msg = str(exc.value)
    assert "'chembench'" in msg and "could not be read" in msg
    assert f"{a / 'chembench' / 'items.csv.xz'}  (EVALKIT_DATA): cannot be read (IsADirectoryError" in msg
    assert f"{no_repo_data / 'chembench' / 'items.csv.xz'}  (repository data/): absent" in msg


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads files without permission")
def test_file_without_read_permission_is_skipped(data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = _copy_to(tmp_path / "root", "livecodebench_gen", "items.csv")
    copy.chmod(0)
    monkeypatch.setenv("EVALKIT_DATA", str(tmp_path / "root"))
    try:
        with pytest.warns(EvalkitWarning, match="PermissionError"):
            assert len(dataset_items("livecodebench_gen")) == 400
    finally:
        copy.chmod(0o644)


@pytest.mark.parametrize(
    "read",
    [
        lambda: dataset_items("livecodebench_gen"),
        lambda: dataset_load("livecodebench_gen"),
        lambda: dataset_matrix("livecodebench_gen"),
        lambda: dataset_path("livecodebench_gen", "responses_long.csv.gz"),
    ],
    ids=["items", "load", "matrix", "path"],
)
def test_changed_file_is_caught_within_one_process(
    data: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_repo_data: Path, read: object
) -> None:
    assert callable(read)
    root = tmp_path / "root"
    for f in ("items.csv", "responses_long.csv.gz"):
        _copy_to(root, "livecodebench_gen", f)
    monkeypatch.setenv("EVALKIT_DATA", str(root))
    read()  # verified and cached
    read()
    _flip_one_byte(root / "livecodebench_gen" / "items.csv", at=200)
    _flip_one_byte(root / "livecodebench_gen" / "responses_long.csv.gz", at=200)
    with pytest.raises(DatasetChecksumError, match="livecodebench_gen"):
        read()


def test_dataset_path_returns_a_verified_copy(data: None) -> None:
    path = dataset_path("uncertainty_emotion", "option_labels.json")
    assert path.read_bytes().startswith(b"{") and path.is_absolute()


# ----------------------------------------------------------------------------------------------
# data/ against the upstream copies (needs them: skipped otherwise)
# ----------------------------------------------------------------------------------------------


def test_recipes_cover_exactly_the_registered_files(build_data: ModuleType) -> None:
    assert set(build_data.RECIPES) == UPSTREAM_SIX
    for name, recipes in build_data.RECIPES.items():
        assert set(recipes) == set(DATASETS[name].files), name


def test_recompressed_tables_hold_the_upstream_csv_text(data: None, build_data: ModuleType, upstream: Path) -> None:
    assert build_data.SAME_CONTENT, "no recompressed table found"
    for name, out, up in build_data.SAME_CONTENT:
        committed = build_data.decompressed(out, dataset_path(name, out).read_bytes())
        assert committed == build_data.decompressed(up, build_data.upstream(upstream, name, up)), (name, out)


def test_numbers_from_texts_regenerate(data: None, build_data: ModuleType, upstream: Path) -> None:
    for name, filename in build_data.FROM_TEXTS:
        fresh = build_data.items_table(name, upstream)
        committed = pd.read_csv(dataset_path(name, filename), compression="xz", low_memory=False)
        pd.testing.assert_frame_equal(committed, fresh, check_dtype=True, obj=f"{name}/{filename}")
        assert not set(build_data.TEXT_COLUMNS[name]) & set(committed.columns)


def test_option_probs_without_option_texts(data: None, build_data: ModuleType, upstream: Path) -> None:
    raw = pd.read_csv(
        io.BytesIO(build_data.upstream(upstream, "chembench", "mcq_option_probs.csv.gz")), compression="gzip"
    )
    committed = pd.read_csv(dataset_path("chembench", "mcq_option_probs.csv.xz"), compression="xz")
    pd.testing.assert_frame_equal(committed, raw.drop(columns=["option_text"]))


@pytest.mark.parametrize("name", ["mmlu_pro_official", "chembench", "alpaca_eval", "uncertainty_emotion"])
def test_items_keep_every_upstream_label_and_drop_the_texts(
    data: None, build_data: ModuleType, upstream: Path, name: str
) -> None:
    texts = dataset_texts(name, root=upstream)
    items = dataset_items(name)
    labels = [c for c in texts.columns if c not in build_data.TEXT_COLUMNS[name]]
    pd.testing.assert_frame_equal(items[labels], texts[labels])
    for col in build_data.LENGTHS[name]:
        assert (items[f"{col}_chars"] == texts[col].str.len()).all()
    # no text of this dataset is in any committed file (the stop hook's check, on the item tables)
    snippets = {t[:60] for col in build_data.TEXT_COLUMNS[name] for t in texts[col].astype(str) if len(t) >= 60}
    spec = DATASETS[name]
    for filename in spec.files:
        if filename.endswith((".csv", ".xz", ".json")) and "long" not in filename:
            body = build_data.decompressed(filename, dataset_path(name, filename).read_bytes()).decode("utf-8")
            assert not any(s in body for s in snippets), f"item text in data/{spec.folder}/{filename}"


def test_missing_features_from_lengths_equal_from_texts() -> None:
    from evalkit.missing import missing_features

    long = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b"],
            "item": ["1", "2"] * 2,
            "cluster": "k",
            "correct": [1, np.nan, 0, 1],
            "status": ["ok", "refusal", "ok", "ok"],
        }
    )
    texts = pd.Series({"1": "abc", "2": "abcdefg"})
    by_text = missing_features(long, model="a", texts=texts)
    by_length = missing_features(long, model="a", lengths=texts.str.len())
    pd.testing.assert_frame_equal(by_text, by_length)
    np.testing.assert_allclose(by_length["log_length"], np.log1p([3, 7]))
    with pytest.raises(ValueError, match="texts or lengths, not both"):
        missing_features(long, model="a", texts=texts, lengths=texts.str.len())
    with pytest.raises(ValueError, match="1 items have no length"):
        missing_features(long, model="a", lengths=pd.Series({"1": 3}))


def test_dataset_texts_reads_only_an_intact_upstream_copy(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"item texts are not part of evalkit") as exc:
        dataset_texts("alpaca_eval", root=tmp_path)
    assert str(tmp_path / "alpaca_eval" / "items.csv.gz") in str(exc.value)
    (tmp_path / "alpaca_eval").mkdir()
    (tmp_path / "alpaca_eval" / "items.csv.gz").write_bytes(b"not the upstream file")
    with pytest.raises(DatasetChecksumError, match="upstream text file 'items.csv.gz' has no intact copy"):
        dataset_texts("alpaca_eval", root=tmp_path)


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


def test_spec_for_files_evalkit_computes() -> None:
    spec = ds.DatasetSpec(
        name="x",
        folder="x",
        files={},
        licence="MIT",
        source="evalkit: scripts/build_x.py",
        commit="this repository",
        description="x",
    )
    assert spec.source_url == "evalkit: scripts/build_x.py"
    assert spec.upstream == {} and spec.texts == ""
    assert DATASETS["chembench"].source_url == "https://github.com/lamalab-org/chembench-paper"


def test_versions_name_the_running_libraries(capsys):
    import numpy
    import pandas
    import scipy

    import evalkit as ek

    v = ek.versions()
    assert v["numpy"] == numpy.__version__ and v["scipy"] == scipy.__version__
    assert v["pandas"] == pandas.__version__ and v["evalkit"] == ek.__version__
    assert v["blas"] == "unknown" or v["blas"].split()[0] in {"openblas", "mkl", "blis", "flexiblas"}
    ek.show_versions()
    line = capsys.readouterr().out.strip()
    assert line.count("\n") == 0 and f"numpy {numpy.__version__}" in line and line.startswith("Python ")
