"""Execute notebooks headless and write each as HTML: what ``make all`` runs.

Usage::

    python scripts/execute_notebook.py --output-dir build/html --timeout 600 notebooks/00-*.ipynb ...
    python scripts/execute_notebook.py --inplace notebooks/06.1-active-evaluation-from-scratch.ipynb   # refresh outputs

``--inplace`` writes the executed notebook back (how the committed outputs are refreshed) and
prints each cell's wall time.

This is ``jupyter nbconvert --to html --execute`` with one change. nbclient waits for a cell's
reply on the kernel's shell channel (and for its outputs on the iopub channel) with a single
``get_msg(timeout=...)`` call. Under ``make all`` that call was seen to wait out the whole cell
timeout on cells that display a widget, with the kernel idle and its reply already sent
(intermittent, with ipykernel 6.31 and 7.4; nbclient issue 312, nbconvert issue 2003): the
asynchronous zmq socket missed the wake-up. Here every wait is a loop of polls of at most one
second; a fresh poll looks at the socket's pending events first, so a missed wake-up costs at
most a second. Timeouts keep their meaning: the loop gives up when the caller's deadline passes.

Each notebook runs with its own folder as the working directory, as under nbconvert and nbval,
and the widget state is stored in the HTML. Exit status: 0 when every notebook ran, 1 otherwise
(the first failing notebook stops the run).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from blas_kernel import pin_blas_kernel  # noqa: E402 (a sibling script, standard library only)

POLL_SECONDS = 1.0


def _polling(get_msg: Callable[..., Awaitable[dict[str, Any]]]) -> Callable[..., Awaitable[dict[str, Any]]]:
    """Wrap a channel's ``get_msg`` so that one long wait becomes a loop of short polls."""

    async def get_msg_polling(timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SECONDS if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await get_msg(timeout=min(POLL_SECONDS, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    return get_msg_polling


class PollingClient(NotebookClient):
    """nbclient's ``NotebookClient`` whose shell and iopub waits are loops of short polls."""

    async def async_start_new_kernel_client(self) -> Any:
        kc = await super().async_start_new_kernel_client()
        for channel in (kc.shell_channel, kc.iopub_channel):
            channel.get_msg = _polling(channel.get_msg)  # type: ignore[method-assign]
        return kc


def execute(path: Path, timeout: int) -> nbformat.NotebookNode:
    """Execute the notebook at ``path`` in its own folder and return it with its outputs."""
    nb = nbformat.read(path, as_version=4)
    client = PollingClient(nb, timeout=timeout, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent.resolve())}})
    client.execute()
    return nb


def execute_to_html(path: Path, output_dir: Path, timeout: int) -> Path:
    """Execute ``path`` in its own folder and write ``output_dir/<name>.html``; return that path."""
    body, _ = HTMLExporter().from_notebook_node(execute(path, timeout))
    out = output_dir / f"{path.stem}.html"
    out.write_text(body, encoding="utf-8")
    return out


def _cell_seconds(nb: nbformat.NotebookNode) -> list[tuple[int, float]]:
    times = []
    for i, cell in enumerate(nb.cells):
        ex = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in ex and "shell.execute_reply" in ex:
            start = datetime.fromisoformat(ex["iopub.execute_input"].replace("Z", "+00:00"))
            end = datetime.fromisoformat(ex["shell.execute_reply"].replace("Z", "+00:00"))
            times.append((i, (end - start).total_seconds()))
    return times


def main(argv: list[str] | None = None) -> int:
    pin_blas_kernel()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("notebooks", nargs="+", type=Path)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--output-dir", type=Path, help="write <name>.html here")
    where.add_argument("--inplace", action="store_true", help="write the executed notebook back")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = ap.parse_args(argv)
    if args.output_dir is not None:
        args.output_dir.mkdir(parents=True, exist_ok=True)
    for nb in args.notebooks:
        t0 = time.perf_counter()
        print(f"== executing {nb}", flush=True)
        try:
            if args.inplace:
                done = execute(nb, args.timeout)
                for i, sec in _cell_seconds(done):
                    done.cells[i].metadata.pop("execution", None)  # timings vary: not committed
                    print(f"   cell {i:3d}: {sec:7.1f} s", flush=True)
                nbformat.write(done, nb)
                out = nb
            else:
                out = execute_to_html(nb, args.output_dir, args.timeout)
        except Exception as exc:  # report which notebook failed and how, then stop
            print(f"execute_notebook: {nb} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            return 1
        print(f"   wrote {out} in {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
