"""Repository-wide pytest set-up: what the doctests of ``evalkit/`` need (``--doctest-modules``).

pytest imports every module of the package to collect its docstring examples, so:

* figures are drawn with the Agg backend in this process (never put into ``os.environ``: nbval's
  notebook kernels inherit the environment and would lose their inline figures);
* a module whose import would *run* something (``evalkit/__main__.py``, a future ``python -m
  evalkit`` entry point) is never imported for doctests;
* OpenBLAS's kernel is pinned as in the Makefile (below), so that notebooks run by nbval print
  the saved outputs on any x86-64 machine with AVX2;
* ``tests/test_project.py`` checks that importing every evalkit module has no side effect
  (no output, no warning, no file written), so collection cannot break on one.
"""

from __future__ import annotations

import os
from pathlib import Path


def _pin_blas_kernel() -> None:
    """OpenBLAS's Haswell kernel on an x86-64 CPU with AVX2 and FMA, as the Makefile sets it.

    Set before numpy loads OpenBLAS in this process, and inherited by nbval's notebook kernels, so
    that a plain ``pytest`` compares the saved outputs with the same arithmetic as ``make test``
    (FAQ's adaptive draws turn the per-CPU kernels' last-bit differences into other runs). A
    caller's ``OPENBLAS_CORETYPE`` (even empty) is kept.
    """
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return
    if "avx2" in flags and "fma" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


_pin_blas_kernel()

import matplotlib  # noqa: E402

matplotlib.use("Agg")

collect_ignore_glob = ["evalkit/__main__.py", "evalkit/**/__main__.py"]
