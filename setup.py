"""Build hook: the wheel (and so every non-editable install) carries the course and its data.

The repository keeps them where contributors work on them: ``data/`` (the datasets' numeric
tables), ``notebooks/*.ipynb`` with ``notebooks/solutions/*.ipynb`` (the lessons and their
solutions) and ``benchmarks/results/*.json`` (committed benchmark runs). ``build_py`` copies them
into the package as ``evalkit/_data``, ``evalkit/_course`` and ``evalkit/_results`` (and lesson 09's example logs into
``evalkit/_examples``), where
``evalkit.datasets`` and ``evalkit course`` find them with ``importlib.resources``. The sdist
carries the same folders (MANIFEST.in), so a wheel built from the sdist is the same wheel.

An editable install (``pip install -e .``, ``make setup``) copies nothing: evalkit then reads the
repository's folders directly. Everything else is configured in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

# (folder of the repository, glob patterns under it, destination inside the built package).
# Globs, so that lessons added or split later (00.1-..., 04.1-...) ship without a change here.
SHIPPED = (
    ("data", ("**/*",), "evalkit/_data"),
    ("notebooks", ("*.ipynb", "solutions/*.ipynb"), "evalkit/_course"),
    ("benchmarks/results", ("*.json",), "evalkit/_results"),
    # the example logs lesson 09 reads, and the script that writes its MMLU-Pro log, under the
    # same relative paths as in the repository (the lesson looks for them there too)
    ("tests/fixtures/eval_logs", ("**/*",), "evalkit/_examples/tests/fixtures/eval_logs"),
    ("scripts", ("make_mmlu_inspect_log.py",), "evalkit/_examples/scripts"),
)
# Never shipped: editor, Jupyter and Python caches.
SKIP_PARTS = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}


def shipped_files(root: Path = ROOT) -> list[tuple[Path, str]]:
    """Every (source file, destination relative to the build folder) the wheel carries."""
    out: list[tuple[Path, str]] = []
    for folder, patterns, dest in SHIPPED:
        base = root / folder
        for pattern in patterns:
            for src in sorted(base.glob(pattern)):
                rel = src.relative_to(base)
                if src.is_file() and not SKIP_PARTS.intersection(rel.parts) and not rel.name.startswith("."):
                    out.append((src, f"{dest}/{rel.as_posix()}"))
    return out


class build_py_with_course(build_py):
    """``build_py`` that also copies the data, the lessons and the benchmark results."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        files = shipped_files()
        for needed in ("data", "notebooks"):
            if not any(src.is_relative_to(ROOT / needed) for src, _ in files):
                raise SystemExit(f"evalkit build: {ROOT / needed} holds nothing to ship; build from a full checkout")
        for src, rel in files:
            target = Path(self.build_lib) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs += [str(Path(self.build_lib) / rel) for _, rel in shipped_files()]
        return outputs


setup(cmdclass={"build_py": build_py_with_course})
