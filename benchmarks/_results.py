"""Where every benchmark writes its final results: ``benchmarks/results/<bench>.json``.

The files are committed, so that a lesson (or the reproduction report) that quotes a run too long
for the test suite reads the figure from the file and prints it in a cell. Each file records how it
was made: the command, the date, the evalkit commit, the core count and the load average.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

RESULTS_DIR = Path(__file__).resolve().parent / "results"

T = TypeVar("T")


def best_time(f: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """Run ``f`` ``repeat`` times (at least once); return the best wall time in seconds and the last result.

    The best of a few runs is the least disturbed by other work on a shared machine.
    """
    t = time.perf_counter()
    out = f()
    best = time.perf_counter() - t
    for _ in range(int(repeat) - 1):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS_DIR.parent, capture_output=True,
            text=True, check=True, timeout=10,
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "evalkit"],
            cwd=RESULTS_DIR.parent, capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _blas() -> dict[str, Any] | None:
    """The BLAS numpy uses: library, version and the kernel it chose for this CPU (``None`` if unknown).

    OpenBLAS picks a kernel by CPU at load time (``OPENBLAS_CORETYPE`` overrides it); timings and the
    last bits of some results depend on it, so it is part of a result's provenance.
    """
    from evalkit.datasets import _blas_info

    return _blas_info()


def write_results(name: str, payload: dict[str, Any], argv: list[str] | None = None) -> Path:
    """Write ``payload`` with its provenance to ``benchmarks/results/<name>.json``; return the path.

    ``name`` is the benchmark's name without ``bench_`` (``"active"`` for ``bench_active.py``). A
    run with non-default options (a ``--quick`` run, a subset) should pass a distinct ``name``
    (``"active-quick"``) so that it does not overwrite the full run that lessons quote.
    """
    argv = list(sys.argv if argv is None else argv)
    record = {
        "benchmark": name,
        "command": "python " + " ".join(argv),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "evalkit_commit": _commit(),
        "machine": {
            "cores": os.cpu_count(),
            "load_average_1_5_15": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "blas": _blas(),
        },
        "results": payload,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=False, default=float) + "\n")
    return path


def read_results(name: str) -> dict[str, Any]:
    """Read ``benchmarks/results/<name>.json`` (the whole record, provenance included)."""
    path = RESULTS_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run benchmarks/bench_{name.split('-')[0]}.py first")
    return json.loads(path.read_text())
