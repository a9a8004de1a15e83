"""Repository-wide pytest set-up: what the doctests of ``evalkit/`` need (``--doctest-modules``).

pytest imports every module of the package to collect its docstring examples, so:

* figures are drawn with the Agg backend in this process (never put into ``os.environ``: nbval's
  notebook kernels inherit the environment and would lose their inline figures);
* a module whose import would *run* something (``evalkit/__main__.py``, a future ``python -m
  evalkit`` entry point) is never imported for doctests;
* ``tests/test_project.py`` checks that importing every evalkit module has no side effect
  (no output, no warning, no file written), so collection cannot break on one.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

collect_ignore_glob = ["evalkit/__main__.py", "evalkit/**/__main__.py"]
