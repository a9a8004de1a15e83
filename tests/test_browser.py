"""The notebooks' widgets, driven in a real browser.

nbval executes every notebook, but it cannot move a slider: a widget whose JavaScript side fails,
or whose callback raises only on a change, passes nbval. This test does what a learner does. It
starts JupyterLab headless on a free localhost port, opens each notebook that has widgets in
headless Chromium (Debian's ``chromium`` package, driven by the ``playwright`` package through its
``executable_path``; no browser is ever downloaded), runs all cells, moves one slider (or, where a
notebook has none, changes one drop-down) and checks that the figure under it is redrawn.
Screenshots before and after go to ``build/browser/``.

Outside CI the test skips when Chromium or playwright is missing; under CI (``CI`` set) a missing
browser is a set-up error and fails the test. ``.ci/run`` installs Chromium.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SHOTS = ROOT / "build" / "browser"
CHROMIUM = os.environ.get("EVALKIT_CHROMIUM", "/usr/bin/chromium")
TOKEN = "evalkit-browser-test"
RUN_ALL_TIMEOUT_S = 900.0
REDRAW_TIMEOUT_S = 120.0

pytestmark = pytest.mark.browser


def _widget_notebooks() -> list[pathlib.Path]:
    """The lessons (not the solutions) that display a widget (a widget view among their outputs)."""
    found = []
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        if any("application/vnd.jupyter.widget-view+json" in out.get("data", {})
               for c in cells if c["cell_type"] == "code" for out in c.get("outputs", [])):
            found.append(path)
    return found


def _missing(message: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{message} (under CI the browser test must run: .ci/run installs chromium)")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab_url() -> Iterator[str]:
    """A JupyterLab server on 127.0.0.1 with a private home; stopped by PID afterwards."""
    if not pathlib.Path(CHROMIUM).exists():
        _missing(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("the playwright package is not installed (pip install -e '.[test]')")
    if shutil.which("jupyter-lab", path=str(pathlib.Path(sys.executable).parent)) is None:
        _missing("jupyterlab is not installed in this environment (pip install -e '.[dev]')")

    home = pathlib.Path(tempfile.mkdtemp(prefix="evalkit-lab-"))
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # with Agg the inline backend would show no figure
    env.update({
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_PATH": str(pathlib.Path(sys.prefix) / "share" / "jupyter"),
        "IPYTHONDIR": str(home / "ipython"),
    })
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={NOTEBOOKS}", "--LabApp.news_url=", "--allow-root"]
    log = open(home / "lab.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=NOTEBOOKS)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError("JupyterLab did not start:\n" + (home / "lab.log").read_text()[-3000:]) from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(lab_url: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        try:
            yield b
        finally:
            b.close()


def _shutdown_kernels(url: str) -> None:
    """Stop every kernel the test started, so the next notebook starts alone."""
    with urllib.request.urlopen(f"{url}/api/kernels?token={TOKEN}", timeout=10) as r:
        kernels = json.load(r)
    for k in kernels:
        req = urllib.request.Request(f"{url}/api/kernels/{k['id']}?token={TOKEN}", method="DELETE")
        with urllib.request.urlopen(req, timeout=30):
            pass


def _kernels_idle(url: str) -> bool:
    with urllib.request.urlopen(f"{url}/api/kernels?token={TOKEN}", timeout=10) as r:
        kernels = json.load(r)
    return bool(kernels) and all(k.get("execution_state") == "idle" for k in kernels)


def _run_all(page: Any, url: str) -> None:
    page.locator("#jp-MainMenu").get_by_text("Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    time.sleep(2.0)
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
    while time.monotonic() < deadline:
        busy = page.evaluate(
            "() => [...document.querySelectorAll('.jp-InputArea-prompt')].some(e => e.textContent.includes('[*]'))")
        if not busy and _kernels_idle(url):
            return
        time.sleep(2.0)
    raise AssertionError(f"the notebook did not finish running within {RUN_ALL_TIMEOUT_S:.0f} s")


def _errors(page: Any) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]"
        ", .jp-RenderedText[data-mime-type=\"application/vnd.jupyter.error\"]')]"
        ".map(e => e.textContent).filter(t => /Error|Traceback/.test(t)).slice(0, 3)")


def _images(cell: Any) -> list[str]:
    return cell.evaluate("c => [...c.querySelectorAll('.jupyter-widgets img, .widget-output img')].map(i => i.src)")


@pytest.mark.parametrize("notebook", _widget_notebooks(), ids=lambda p: p.stem)
def test_widget_redraws_in_browser(notebook: pathlib.Path, lab_url: str, browser: Any) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    try:
        # A workspace of its own, reset: JupyterLab would otherwise reopen the notebooks of earlier tests.
        page.goto(f"{lab_url}/lab/workspaces/evalkit-{notebook.stem}/tree/{notebook.name}?reset&token={TOKEN}",
                  wait_until="domcontentloaded")
        page.locator(".jp-Notebook:visible").first.wait_for(timeout=120_000)
        page.wait_for_function("() => document.querySelector('.jp-Notebook-ExecutionIndicator, .jp-KernelStatus')"
                               " !== null", timeout=60_000)
        time.sleep(3.0)
        _run_all(page, lab_url)
        errors = _errors(page)
        assert not errors, f"{notebook.name}: a cell failed in the browser: {errors}"

        sliders = page.locator(".jp-CodeCell .widget-slider .noUi-handle")
        dropdowns = page.locator(".jp-CodeCell .widget-dropdown select")
        if sliders.count() > 0:
            control = sliders.first
            cell = page.locator(".jp-CodeCell", has=page.locator(".widget-slider")).first
        elif dropdowns.count() > 0:
            control = dropdowns.first
            cell = page.locator(".jp-CodeCell", has=page.locator(".widget-dropdown")).first
        else:
            raise AssertionError(f"{notebook.name} builds a widget, but no slider or drop-down rendered")
        cell.scroll_into_view_if_needed()
        time.sleep(1.0)
        before = _images(cell)
        assert before, f"{notebook.name}: the widget shows no figure before the change"
        cell.screenshot(path=str(SHOTS / f"{notebook.stem}-before.png"))

        if sliders.count() > 0:
            now = float(control.get_attribute("aria-valuenow") or "nan")
            top = float(control.get_attribute("aria-valuemax") or "nan")
            control.focus()
            control.press("ArrowLeft" if now >= top else "ArrowRight")
        else:
            options = control.evaluate("s => [...s.options].map(o => o.value)")
            current = control.input_value()
            control.select_option(next(o for o in options if o != current))

        deadline = time.monotonic() + REDRAW_TIMEOUT_S
        after = before
        while time.monotonic() < deadline:
            after = _images(cell)
            if after and after != before:
                break
            time.sleep(0.5)
        cell.screenshot(path=str(SHOTS / f"{notebook.stem}-after.png"))
        assert after and after != before, f"{notebook.name}: the figure did not change after moving the control"
        errors = _errors(page)
        assert not errors, f"{notebook.name}: the widget callback failed: {errors}"
    finally:
        page.screenshot(path=str(SHOTS / f"{notebook.stem}-page.png"))
        context.close()
        _shutdown_kernels(lab_url)
    widget_errors = [e for e in console_errors if "widget" in e.lower()]
    assert not widget_errors, f"{notebook.name}: JavaScript errors from the widgets: {widget_errors[:3]}"
