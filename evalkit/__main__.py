"""``python -m evalkit`` and the ``evalkit`` console script.

Subcommands:

``evalkit report LOG_OR_TABLE... [--cluster COL] [--out DIR] [--baseline M | --top-k K]``
    Read eval logs (Inspect ``.eval``/``.json``, lm-evaluation-harness ``samples_*.jsonl``, or a
    long table in CSV/JSON lines; files or folders) and write ``report.md`` and ``report.html``
    (see :func:`evalkit.report_build`).

``evalkit course DIR [--force]``
    Copy the lessons (``NN-title.ipynb``) and their solutions (``solutions/``) into a new folder
    ``DIR``: nothing else, and never into a folder that is not empty unless ``--force`` (which
    overwrites the lessons of the same name and leaves other files alone).

``evalkit lab [DIR] [--no-browser]``
    Open JupyterLab on ``DIR`` (default: the current folder), with ``--allow-root`` when run as
    root. Needs JupyterLab (``pip install "evalkit[lab]"``).

``evalkit --version``, ``evalkit --help``
    The installed version; the commands.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalkit", description="evalkit command line")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_course_commands(parser, sub)
    rep = sub.add_parser("report", help="accuracy, clustered intervals, missing answers and comparisons of eval logs")
    rep.add_argument("paths", nargs="+", metavar="LOG_OR_TABLE", help="log files or folders")
    rep.add_argument("--cluster", default=None,
                     help="sample metadata field (Inspect) or document field (lm-eval) to cluster on, several "
                          "comma-separated (the first present is used); default: the only field, else the task")
    rep.add_argument("--out", default="evalkit-report", help="output folder (default: ./evalkit-report)")
    rep.add_argument("--scorer", default=None, help="Inspect: which scorer, when a task has several (a log "
                                                    "without it uses its only scorer, with a note)")
    rep.add_argument("--metric", default=None, help="lm-eval: which per-sample metric (default: the first listed)")
    rep.add_argument("--filter", default=None, help="lm-eval: which filter, when a task has several (default: "
                                                    "the first listed, with a note)")
    rep.add_argument("--model", default=None, help="lm-eval: the model name of samples files without a "
                                                   "results_*.json beside them")
    rep.add_argument("--baseline", default=None, help="compare each model with this one only")
    rep.add_argument("--top-k", type=int, default=None, dest="top_k",
                     help="compare every pair among the K most accurate models (default: all pairs up to 10 "
                          "models, else the best 10)")
    rep.add_argument("--se", default="CR2", choices=["CR1", "CR2"], help="cluster-robust kind (default CR2)")
    rep.add_argument("--alpha", type=float, default=0.05, help="1 - confidence level (default 0.05)")
    rep.add_argument("--title", default="evalkit report")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 bad input)."""
    args = _parser().parse_args(argv)
    if args.command in _COURSE_COMMANDS:
        return _COURSE_COMMANDS[args.command](args)
    from .logs import LogFormatError, log_read
    from .report import report_build, report_write

    if args.command == "report":
        try:
            df = log_read(args.paths, cluster=args.cluster, scorer=args.scorer, metric=args.metric,
                          filter=args.filter, model=args.model, on_error="note", progress=True)
            # tables keep their columns: --cluster names one of them; logs put the field in 'cluster'
            col = "cluster"
            if args.cluster:
                names = [c.strip() for c in args.cluster.split(",")]
                from_logs = bool(df.attrs.get("evalkit_runs"))
                col = next((c for c in names if c in df.columns and c != "cluster"),
                           "cluster" if from_logs or "cluster" in names else names[0])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rep = report_build(df, cluster=col, se=args.se, alpha=args.alpha, baseline=args.baseline,
                                   top_k=args.top_k, progress=True)
            paths = report_write(rep, args.out, title=args.title)
        except (LogFormatError, ValueError, OSError) as exc:
            print(f"evalkit report: {exc}", file=sys.stderr)
            return 2
        print(f"evalkit report: {len(df)} rows, {df['model'].nunique()} models; wrote {paths['markdown']} "
              f"and {paths['html']}")
        for note in rep.notes:
            print(f"  note: {note}")
    return 0


# --------------------------------------------------------------------------------------------
# evalkit course, evalkit lab, evalkit --version
# --------------------------------------------------------------------------------------------


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evalkit")
    except PackageNotFoundError:  # run from a source tree that was never installed
        from . import __version__

        return __version__


def _add_course_commands(parser: argparse.ArgumentParser, sub: argparse._SubParsersAction) -> None:
    parser.add_argument("--version", action="version", version=f"evalkit {_version()}")
    parser.epilog = (
        "commands: `evalkit course DIR` copies the lessons and solutions into a new folder DIR; "
        "`evalkit lab DIR` opens JupyterLab there; `evalkit report LOGS` reports on eval logs. "
        "`evalkit COMMAND --help` gives a command's options."
    )
    course = sub.add_parser("course", help="copy the lessons and their solutions into a new folder",
                            description="Copy the lessons (NN-title.ipynb) and their solutions (solutions/) into "
                                        "DIR, and nothing else. DIR must be new or empty unless --force.")
    course.add_argument("dir", metavar="DIR", help="folder to create (e.g. evalkit-course)")
    course.add_argument("--force", action="store_true",
                        help="write into an existing, non-empty DIR (overwrites lessons of the same name)")
    lab = sub.add_parser("lab", help="open JupyterLab on a folder (needs evalkit[lab])",
                         description="Open JupyterLab on DIR; --allow-root is added when run as root.")
    lab.add_argument("dir", metavar="DIR", nargs="?", default=".", help="folder to open (default: the current one)")
    lab.add_argument("--no-browser", action="store_true", help="start the server without opening a browser")


def course_source() -> Path:
    """The folder that holds the lessons: the repository's ``notebooks/`` in a clone, else the
    copy installed with the package (``evalkit/_course``)."""
    from importlib.resources import files

    here = Path(__file__).resolve().parent
    repo = here.parent / "notebooks"
    if (here.parent / "pyproject.toml").is_file() and repo.is_dir():
        return repo
    return Path(str(files("evalkit").joinpath("_course")))


def course_files(source: Path | None = None) -> list[Path]:
    """The lessons and their solutions, relative to :func:`course_source`: ``*.ipynb`` and
    ``solutions/*.ipynb``, sorted, lessons first."""
    source = course_source() if source is None else source
    found = [p for pattern in ("*.ipynb", "solutions/*.ipynb") for p in sorted(source.glob(pattern)) if p.is_file()]
    return [p.relative_to(source) for p in found if not p.name.startswith(".")]


def _course(args: argparse.Namespace) -> int:
    target = Path(args.dir).expanduser()
    source = course_source()
    files = course_files(source)
    if not files:
        print(f"evalkit course: no lessons found in {source}; reinstall evalkit", file=sys.stderr)
        return 2
    if target.exists() and not target.is_dir():
        print(f"evalkit course: {target} exists and is not a folder", file=sys.stderr)
        return 2
    if target.is_dir() and any(target.iterdir()) and not args.force:
        print(f"evalkit course: {target} exists and is not empty; choose a new folder, or add --force to "
              "overwrite the lessons in it", file=sys.stderr)
        return 2
    try:
        for rel in files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, target / rel)
    except OSError as exc:
        print(f"evalkit course: {exc}", file=sys.stderr)
        return 2
    lessons = [rel for rel in files if len(rel.parts) == 1]
    print(f"evalkit course: copied {len(lessons)} lessons and {len(files) - len(lessons)} solutions into {target}")
    if lessons:
        print(f"  next: `evalkit lab {args.dir}` and open {lessons[0]}")
    return 0


def lab_command(folder: Path, *, no_browser: bool = False) -> list[str]:
    """The JupyterLab command ``evalkit lab`` runs (``--allow-root`` when the user is root)."""
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder.resolve()}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    if no_browser:
        cmd.append("--no-browser")
    return cmd


def _lab(args: argparse.Namespace) -> int:
    import importlib.util

    folder = Path(args.dir).expanduser()
    if not folder.is_dir():
        print(f"evalkit lab: {folder} is not a folder (make one with `evalkit course {args.dir}`)", file=sys.stderr)
        return 2
    if importlib.util.find_spec("jupyterlab") is None:
        print('evalkit lab: JupyterLab is not installed; install it with `pip install "evalkit[lab]"`',
              file=sys.stderr)
        return 2
    try:
        return subprocess.call(lab_command(folder, no_browser=args.no_browser))
    except KeyboardInterrupt:
        return 0


_COURSE_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {"course": _course, "lab": _lab}


if __name__ == "__main__":
    sys.exit(main())
