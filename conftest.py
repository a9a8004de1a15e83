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

from pathlib import Path


def _pin_blas_kernel() -> None:
    """OpenBLAS's kernel pinned by ``scripts/blas_kernel.py`` (loaded by path: it is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("blas_kernel", Path(__file__).parent / "scripts" / "blas_kernel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.pin_blas_kernel()


_pin_blas_kernel()

import matplotlib  # noqa: E402

matplotlib.use("Agg")

collect_ignore_glob = ["evalkit/__main__.py", "evalkit/**/__main__.py"]
