"""One OpenBLAS kernel for every notebook run (standard library only: it runs before numpy loads).

FAQ's adaptive draws turn the last-bit differences between OpenBLAS's per-CPU float32 kernels into
other items drawn, so the saved outputs are reproduced only with the kernel they were made with.
The Makefile exports the same choice for ``make all``, ``make test`` and ``make lab``; ``conftest.py``
(plain ``pytest``) and ``scripts/execute_notebook.py`` (a refresh) call :func:`pin_blas_kernel`.
"""

from __future__ import annotations

import os
from pathlib import Path


def pin_blas_kernel() -> None:
    """Set ``OPENBLAS_CORETYPE=Haswell`` on an x86-64 CPU with AVX2 and FMA, before numpy is imported.

    Child processes (nbval's and nbclient's notebook kernels) inherit it. A caller's
    ``OPENBLAS_CORETYPE`` (even empty) is kept; on other CPUs nothing is set.
    """
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return
    if "avx2" in flags and "fma" in flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"
