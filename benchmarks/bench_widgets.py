"""Benchmark of one widget redraw (notebooks 00.3, 03 and 05): is each at most about 2 s on 2 cores?

Usage::

    python benchmarks/bench_widgets.py            # full: includes the old 100 x 200 coverage redraw (~20 s)
    python benchmarks/bench_widgets.py --quick    # the old path at 20 x 25 only, a few seconds

Rows:

* ``coverage, old path``: what notebook 00.3's widget did before: :func:`evalkit.mc_coverage_clustered`
  (``mc_run`` over ``simulate_clustered`` and ``mean_estimate``, one replication at a time), 200
  replications of one balanced design, at 100 clusters x 200 items (20 x 25 with ``--quick``). It is
  the baseline: every other row prints its time as a ratio to this one, measured in the same process.
* ``coverage_study, same setting``: :func:`evalkit.coverage_study` (all replications at once) on the
  same setting, 200 replications, one design.
* ``widget_coverage_redraw``: one redraw of notebook 00.3's widget (three designs, 400 replications
  each, plus the figure) at its defaults and at the largest setting it offers (50 x 50).
* ``missing_explore (nb 03)``: one redraw of notebook 03's widget (``missing_explore(n_reps=30)``, the
  call the notebook makes) at its defaults and at 100 clusters.
* ``widget_irt_redraw``: one redraw of notebook 05.2's widget at its defaults and at the largest and
  slowest setting it offers (the most models and items, MNAR, 40% missing, the lowest temperature).

Last, the redraw times that ``tests/test_browser.py`` recorded in JupyterLab (``build/browser/``,
``--browser``): every control of every widget moved to both ends and a middle value, per notebook
the number of redraws, their median and the slowest.

Widget rows include rendering the figure (``canvas.draw()``, the cost of ``plt.show()``). Each row
is the median of ``--repeat`` runs (the first, warm-up, run is discarded). Timings on a
shared machine are inflated by other jobs: read the ratios, and the absolute seconds as upper bounds.
Prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402

import evalkit as ek  # noqa: E402

BUDGET_S = 2.0


def _render(f: Callable[[], Any]) -> None:
    """Call ``f`` and render every figure it made (what ``plt.show()`` costs in a notebook)."""
    f()
    for num in plt.get_fignums():
        plt.figure(num).canvas.draw()


def _time(f: Callable[[], Any], repeat: int) -> float:
    _render(f)  # warm-up: imports, caches, first-call costs
    plt.close("all")
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        _render(f)
        times.append(time.perf_counter() - t0)
        plt.close("all")
    return statistics.median(times)


def _browser_rows(folder: str) -> list[dict[str, Any]]:
    """Per notebook, the redraw times the browser test recorded (every control at both ends and a middle value)."""
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "*-redraws.json"))):
        with open(path) as fh:
            rec = json.load(fh)
        if not rec:
            continue
        secs = [float(r["seconds"]) for r in rec]
        worst = max(rec, key=lambda r: float(r["seconds"]))
        rows.append({"notebook": os.path.basename(path).removesuffix("-redraws.json"), "n_redraws": len(rec),
                     "median_s": statistics.median(secs), "max_s": max(secs),
                     "slowest": f"w{worst['widget']} {worst['control']} ({worst['move']})",
                     "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(path)))})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="the old path at 20 x 25 instead of 100 x 200")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per row (median reported)")
    ap.add_argument("--browser", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                       "browser"),
                    help="folder of the browser test's redraw records (<notebook>-redraws.json)")
    args = ap.parse_args(argv)

    M, m = (20, 25) if args.quick else (100, 200)
    lim = ek.COVERAGE_WIDGET_LIMITS
    big_M, big_m = int(lim["n_clusters"][1]), int(lim["cluster_size"][1])
    irt = ek.IRT_WIDGET_LIMITS
    rows: list[dict[str, Any]] = []

    def add(name: str, setting: str, f: Callable[[], Any], repeat: int) -> None:
        rows.append({"row": name, "setting": setting, "seconds": _time(f, repeat)})

    # the baseline is slow at full size: time it once after the warm-up
    add("coverage, old path (baseline)", f"{M} x {m}, 200 reps, 1 design",
        lambda: ek.mc_coverage_clustered(icc=0.1, n_clusters=M, cluster_size=m, n_reps=200, seed=1, progress=False),
        1 if not args.quick else args.repeat)
    add("coverage_study, same setting", f"{M} x {m}, 200 reps, 1 design",
        lambda: ek.coverage_study(designs="balanced", n_clusters=M, cluster_size=m, icc=0.1, n_reps=200, seed=1,
                                  estimators=("iid", "CR1", "CR2")), args.repeat)
    add("widget_coverage_redraw, defaults", "10 x 20, 400 reps, 3 designs + figure",
        lambda: ek.widget_coverage_redraw(show=False), args.repeat)
    add("widget_coverage_redraw, largest offered", f"{big_M} x {big_m}, 400 reps, 3 designs + figure",
        lambda: ek.widget_coverage_redraw(n_clusters=big_M, cluster_size=big_m, show=False), args.repeat)
    add("widget_irt_redraw, defaults", "200 x 800, MCAR 10%",
        lambda: ek.widget_irt_redraw(show=False), args.repeat)
    add("widget_irt_redraw, largest offered",
        f"{int(irt['n_models'][1])} x {int(irt['n_items'][1])}, MNAR 40%, sigma 0.5",
        lambda: ek.widget_irt_redraw(sigma=irt["sigma"][0], missing=irt["missing"][1], n_models=int(irt["n_models"][1]),
                                     n_items=int(irt["n_items"][1]), mechanism="mnar", show=False), args.repeat)
    # notebook 03: the widget calls missing_explore(n_reps=30, **controls), then plt.show()
    add("missing_explore (nb 03), defaults", "20 clusters, MAR|cluster, 30 reps + figure",
        lambda: ek.missing_explore(n_reps=30), args.repeat)
    add("missing_explore (nb 03), 100 clusters", "100 clusters, MAR|cluster, 30 reps + figure",
        lambda: ek.missing_explore(n_reps=30, n_clusters=100), args.repeat)

    base = rows[0]["seconds"]
    for r in rows:
        r["ratio_to_baseline"] = r["seconds"] / base
        r["within_budget"] = r["seconds"] <= BUDGET_S if r["row"].startswith(("widget", "missing_explore")) else None

    print(f"{'row':42s} {'setting':44s} {'seconds':>8s} {'x baseline':>10s}  within {BUDGET_S:g} s")
    for r in rows:
        flag = "" if r["within_budget"] is None else ("yes" if r["within_budget"] else "NO")
        print(f"{r['row']:42s} {r['setting']:44s} {r['seconds']:8.2f} {r['ratio_to_baseline']:10.3f}  {flag}")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: timings under load are upper bounds)")
    browser = _browser_rows(args.browser)
    if browser:
        print(f"\nRedraws in JupyterLab (headless Chromium), recorded by tests/test_browser.py in {args.browser}:")
        print(f"{'notebook':52s} {'redraws':>7s} {'median s':>8s} {'max s':>6s}  "
              f"slowest control  within {BUDGET_S:g} s")
        for r in browser:
            print(f"{r['notebook']:52s} {r['n_redraws']:7d} {r['median_s']:8.2f} {r['max_s']:6.2f}  "
                  f"{r['slowest']:30s} {'yes' if r['max_s'] <= BUDGET_S else 'NO'}")
        print("(a browser redraw is timed from the control's move to the new figure, polled every 0.1 s after a "
              "0.2 s settle: about 0.3 s above the kernel's own time)")
    else:
        print(f"\nNo browser redraw records in {args.browser}: run `pytest -m browser tests/test_browser.py` first.")
    record = {"benchmark": "widgets", "quick": args.quick, "browser_redraws": browser, "python": sys.version.split()[0],
              "machine": platform.machine(), "cpu_count": os.cpu_count(), "load_average": os.getloadavg()[0],
              "budget_s": BUDGET_S, "rows": rows}
    print(json.dumps(record))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _results import write_results

    write_results("widgets" + ("-quick" if args.quick else ""), record,
                  sys.argv if argv is None else ["bench_widgets.py", *argv])
    return 0


if __name__ == "__main__":
    sys.exit(main())
