"""Repository-wide pytest set-up: what the doctests of ``evalkit/`` need (``--doctest-modules``).

pytest imports every module of the package to collect its docstring examples, so:

* figures are drawn with the Agg backend in this process (never put into ``os.environ``: nbval's
  notebook kernels inherit the environment and would lose their inline figures);
* a module whose import would *run* something (``evalkit/__main__.py``, a future ``python -m
  evalkit`` entry point) is never imported for doctests;
* OpenBLAS's kernel is pinned as in the Makefile (below), so that notebooks run by nbval print
  the saved outputs on any x86-64 machine with AVX2;
* a notebook kernel that dies before its first reply is started again (below): a failed start is
  not a result of the notebook;
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


def _retry_nbval_kernel_start(attempts: int = 3) -> None:
    """Start nbval's notebook kernel again, up to ``attempts`` times, if it dies before its first reply.

    jupyter_client chooses free TCP ports for a kernel's channels and the kernel binds them a moment
    later, so where several kernels start at once (two pytest workers, a notebook run beside them) a
    start can fail for reasons outside the notebook. Such a failure says nothing about the notebook,
    so the start is tried again; a kernel that dies at every try still fails its test. The wrapped
    start is the wrapper's ``inner`` attribute (``tests/test_project.py`` replaces it to check this).
    """
    try:
        import nbval.kernel as nbval_kernel
    except ImportError:
        return
    if getattr(nbval_kernel.start_new_kernel, "inner", None) is not None:
        return

    def start_with_retry(*args, **kwargs):  # type: ignore[no-untyped-def]
        for attempt in range(attempts):
            try:
                return start_with_retry.inner(*args, **kwargs)  # type: ignore[attr-defined]
            except RuntimeError:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    start_with_retry.inner = nbval_kernel.start_new_kernel  # type: ignore[attr-defined]
    start_with_retry.attempts = attempts  # type: ignore[attr-defined]
    nbval_kernel.start_new_kernel = start_with_retry


_retry_nbval_kernel_start()

import matplotlib  # noqa: E402

matplotlib.use("Agg")

collect_ignore_glob = ["evalkit/__main__.py", "evalkit/**/__main__.py"]
