"""Shared pytest fixtures for evalkit's tests.

Every test that draws random numbers takes the ``rng`` fixture (or builds its own generator from
a fixed seed), so a failure can be re-run exactly.
"""

from __future__ import annotations

import os
import pathlib

import matplotlib
import numpy as np
import pytest

# Headless plotting for this process only. It is not put into os.environ on purpose: nbval's
# notebook kernels inherit the environment, and MPLBACKEND=Agg there would drop every inline
# figure from the executed notebooks.
matplotlib.use("Agg")

ROOT = pathlib.Path(__file__).resolve().parents[1]
"""The repository root."""

SEED = 20250101
"""The seed behind the ``rng`` fixture."""


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh ``numpy.random.Generator`` with a fixed seed, one per test."""
    return np.random.default_rng(SEED)


@pytest.fixture
def repo_root() -> pathlib.Path:
    """The repository root, for tests that read project files."""
    return ROOT


@pytest.fixture
def shared_data() -> pathlib.Path:
    """The upstream copies of the data, with the item texts (the workspace's ``shared/data``).

    evalkit itself reads the repository's ``data/``; only tests that regenerate numbers from the
    texts need the upstream copies. They are looked for in ``$EVALKIT_DATA``'s folders, then at
    ``../shared/data`` beside the clone; the test is skipped, with the reason, when they are not
    there (a fresh clone has none).
    """
    candidates = [pathlib.Path(p) for p in os.environ.get("EVALKIT_DATA", "").split(os.pathsep) if p.strip()]
    candidates.append(ROOT.parent / "shared" / "data")
    for path in candidates:
        if (path / "mmlu_pro_official" / "items.csv.gz").is_file():
            return path
    pytest.skip(
        "the upstream data with item texts are not here (looked in $EVALKIT_DATA and "
        f"{ROOT.parent / 'shared' / 'data'}); the repository's data/ holds only numbers"
    )


@pytest.fixture(autouse=True)
def _no_report_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests from writing reproduction rows into a real report folder."""
    monkeypatch.delenv("EVALKIT_REPORT_DIR", raising=False)
