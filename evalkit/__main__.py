"""``python -m evalkit`` and the ``evalkit`` console script.

Subcommands:

``evalkit report LOG_OR_TABLE... [--cluster COL] [--out DIR] [--baseline M | --top-k K]``
    Read eval logs (Inspect ``.eval``/``.json``, lm-evaluation-harness ``samples_*.jsonl``, or a
    long table in CSV/JSON lines; files or folders) and write ``report.md`` and ``report.html``
    (see :func:`evalkit.report_build`).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalkit", description="evalkit command line")
    sub = parser.add_subparsers(dest="command", required=True)
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


if __name__ == "__main__":
    sys.exit(main())
