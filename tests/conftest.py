"""Shared pytest fixtures for evalkit's tests.

Every test that draws random numbers takes the ``rng`` fixture (or builds its own generator from
a fixed seed), so a failure can be re-run exactly.
"""

from __future__ import annotations

import functools
import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable

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

R_TIMEOUT_S = 300
"""How long one R script of a conformance test may run."""


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


@functools.cache
def _r_missing(packages: tuple[str, ...]) -> str | None:
    """Why R conformance cannot run here (``Rscript`` or one of ``packages`` missing), or None."""
    debian = " ".join(f"r-cran-{p.lower()}" for p in packages)
    if shutil.which("Rscript") is None:
        return f"Rscript not found (install r-base-core {debian} to run R conformance)"
    if packages:
        load = "; ".join(f"library({p})" for p in packages)
        res = subprocess.run(["Rscript", "-e", f"suppressMessages({{{load}}})"], capture_output=True, text=True)
        if res.returncode != 0:
            return f"the R packages {', '.join(packages)} are not all installed (apt-get install {debian})"
    return None


@pytest.fixture
def rscript(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Callable[[str], dict[str, float]]:
    """Run an R script and read back the ``key=value`` lines it prints, as floats.

    The packages the test needs are named by its ``r_packages`` marker (usually the module's
    ``pytestmark``). The test is skipped, with the reason, when ``Rscript`` or one of them is
    missing, under CI too (``.ci/run`` installs them where it can; the R tests are best effort).
    A script that fails fails the test with R's stderr.
    """
    marker = request.node.get_closest_marker("r_packages")
    reason = _r_missing(tuple(marker.args) if marker else ())
    if reason is not None:
        pytest.skip(reason)

    def run(code: str) -> dict[str, float]:
        script = tmp_path / "run.R"
        script.write_text(code)
        res = subprocess.run(["Rscript", str(script)], capture_output=True, text=True, timeout=R_TIMEOUT_S)
        assert res.returncode == 0, res.stderr
        out = {}
        for line in res.stdout.splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                out[k.strip()] = float(v)
        return out

    return run
