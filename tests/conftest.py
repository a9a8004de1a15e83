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
    """The real data folder (``$EVALKIT_DATA``).

    Skips the test when the variable is unset, except under CI (``CI`` set), where a missing data
    folder is a set-up error and fails the test instead of hiding it.
    """
    value = os.environ.get("EVALKIT_DATA", "")
    path = pathlib.Path(value) if value else None
    if path is None or not path.is_dir():
        message = f"EVALKIT_DATA={value!r} is not a folder; `make test` points it at ../shared/data when that exists"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(autouse=True)
def _no_report_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests from writing reproduction rows into a real report folder."""
    monkeypatch.delenv("EVALKIT_REPORT_DIR", raising=False)
