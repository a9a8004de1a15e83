"""The notebooks' widgets, driven in a real browser.

nbval executes every notebook, but it cannot move a slider: a widget whose JavaScript side fails,
or whose callback raises only on a change, passes nbval. This test does what a learner does. It
starts JupyterLab headless on a free localhost port, opens each notebook that has widgets in
headless Chromium (Debian's ``chromium`` package, driven by the ``playwright`` package through its
``executable_path``; no browser is ever downloaded), runs all cells, then moves every control of
every widget (sliders to both ends and the middle of the track, drop-downs to their last, first
and middle option) and checks that the figure under it is redrawn, within a few seconds, without
an error. Screenshots before and after, and every redraw time, go to ``build/browser/``.

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
import urllib.error
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
        "JUPYTERLAB_SETTINGS_DIR": str(home / "lab-settings"),
    })
    # No "news" pop-up over the widgets in the screenshots.
    news = home / "lab-settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    # Never save: Run All would otherwise autosave the executed notebook over the committed one.
    docs = home / "lab-settings" / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
    docs.parent.mkdir(parents=True)
    docs.write_text(json.dumps({"autosave": False}))
    port = _free_port()
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={NOTEBOOKS}", "--LabApp.news_url=", "--allow-root"]
    log = open(home / "lab.log", "w")  # noqa: SIM115 (closed below)
    LAB_LOG.append(home / "lab.log")
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
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(home / "lab.log", SHOTS / "lab.log")  # the server's side of any failure
        LAB_LOG.clear()
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


# The server's log, kept for the failure message of a request the server keeps refusing.
LAB_LOG: list[pathlib.Path] = []
# How long a transient server error (a 5xx, a refused or timed-out connection) is ridden out.
SERVER_RETRY_S = 60.0


def _list_kernels(url: str) -> list[dict[str, Any]]:
    """The server's running kernels.

    Jupyter Server can answer a 5xx for a moment while a kernel is being started or stopped (its
    model is read half-built). Such an answer is asked again for up to SERVER_RETRY_S; an error that
    lasts longer fails with the tail of the server's log, so a broken server is still reported.
    """
    deadline = time.monotonic() + SERVER_RETRY_S
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/kernels?token={TOKEN}", timeout=10) as r:
                return list(json.load(r))
        except urllib.error.HTTPError as e:
            if e.code < 500 or time.monotonic() > deadline:
                raise AssertionError(f"GET /api/kernels answered {e.code} for {SERVER_RETRY_S:.0f} s;"
                                     f" server log:\n{_lab_log_tail()}") from e
        except OSError as e:  # refused, reset or timed out
            if time.monotonic() > deadline:
                raise AssertionError(f"GET /api/kernels failed for {SERVER_RETRY_S:.0f} s ({e});"
                                     f" server log:\n{_lab_log_tail()}") from e
        time.sleep(1.0)


def _lab_log_tail() -> str:
    return LAB_LOG[-1].read_text(errors="replace")[-3000:] if LAB_LOG and LAB_LOG[-1].exists() else "(none)"


def _shutdown_kernels(url: str) -> None:
    """Stop every kernel the test started, so the next notebook starts alone."""
    kernels = _list_kernels(url)
    for k in kernels:
        req = urllib.request.Request(f"{url}/api/kernels/{k['id']}?token={TOKEN}", method="DELETE")
        with urllib.request.urlopen(req, timeout=30):
            pass


def _kernels_idle(url: str) -> bool:
    kernels = _list_kernels(url)
    return bool(kernels) and all(k.get("execution_state") == "idle" for k in kernels)


def _run_all(page: Any, url: str) -> None:
    """Run All Cells from the menu once the kernel is up; return when every code cell has run.

    On a loaded machine the kernel can take many seconds to start, and a Run All sent before it is
    ready, or a check made before the first cell is queued, would see an idle notebook that never
    ran: so wait for an idle kernel first, and afterwards for every code cell to show its number.
    """
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
    while not _kernels_idle(url):
        assert time.monotonic() < deadline, "the kernel did not start"
        time.sleep(1.0)
    page.locator("#jp-MainMenu").get_by_text("Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    pending = ("() => [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]"
               ".filter(e => !/\\[\\d+\\]/.test(e.textContent)).length")
    while time.monotonic() < deadline:
        time.sleep(2.0)
        if page.evaluate(pending) == 0 and _kernels_idle(url):
            return
        if _errors(page):
            return  # the caller reports the failed cell
    raise AssertionError(f"the notebook did not finish running within {RUN_ALL_TIMEOUT_S:.0f} s")


def _errors(page: Any) -> list[str]:
    return page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type=\"application/vnd.jupyter.stderr\"]"
        ", .jp-RenderedText[data-mime-type=\"application/vnd.jupyter.error\"]')]"
        ".map(e => e.textContent).filter(t => /Error|Traceback/.test(t)).slice(0, 3)")


def _images(cell: Any) -> list[str]:
    # Every figure of the cell's output area: the live widget's, and the default figure that
    # widget_live(static_first=True) draws above the controls until the first move replaces it.
    return cell.evaluate("c => [...c.querySelectorAll('.jp-OutputArea-output img')].map(i => i.src)")


# A redraw slower than this fails the test: a learner moving a control waits for the figure.
REDRAW_LIMIT_S = 5.0
# Figures are compared by their image data; give a slow redraw this long before calling it missing.
REDRAW_WAIT_S = 60.0


def _settle(page: Any, url: str) -> None:
    """Wait until no kernel is busy (a control's callback has finished)."""
    deadline = time.monotonic() + REDRAW_WAIT_S
    while time.monotonic() < deadline and not _kernels_idle(url):
        time.sleep(0.2)


def _slider_moves(page: Any, handle: Any) -> list[tuple[str, Any]]:
    """Both ends (End, Home) and a middle value (a click on the middle of the track)."""
    return [("maximum", lambda: (handle.focus(), handle.press("End"))),
            ("minimum", lambda: (handle.focus(), handle.press("Home"))),
            ("middle", lambda: _click_track_middle(page, handle))]


def _click_track_middle(page: Any, handle: Any) -> None:
    track = handle.locator("xpath=ancestor::*[contains(@class, 'noUi-base')][1]")
    box = track.bounding_box()
    assert box is not None and box["width"] > 20, "the slider has no visible track to click"
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def _dropdown_moves(select: Any) -> list[tuple[str, Any]]:
    options = select.evaluate("s => [...s.options].map(o => o.value)")
    picks = [("last option", options[-1]), ("first option", options[0]), ("middle option", options[len(options) // 2])]
    return [(name, (lambda v=value: select.select_option(v))) for name, value in picks]


def _checkbox_moves(box: Any) -> list[tuple[str, Any]]:
    """A yes/no control: switched to the other value, then back."""
    return [("other value", box.click), ("first value again", box.click)]


def _value(control: Any, kind: str) -> str:
    if kind == "checkbox":
        return str(control.is_checked())
    return str(control.get_attribute("aria-valuenow") if kind == "slider" else control.input_value())


def _label(control: Any) -> str:
    text = control.evaluate(
        "e => { const w = e.closest('.widget-slider, .widget-dropdown, .widget-checkbox');"
        " const l = w && (w.querySelector('.widget-label-basic') || w.querySelector('.widget-label'));"
        " return l ? l.textContent : ''; }")  # a checkbox's own label, not its hidden indent label
    return str(text).strip() or "(unlabelled)"


@pytest.mark.parametrize("notebook", _widget_notebooks(), ids=lambda p: p.stem)
def test_every_widget_control_redraws_in_browser(notebook: pathlib.Path, lab_url: str, browser: Any) -> None:
    """Every control of every widget, moved to both ends and a middle value, redraws its figure
    within REDRAW_LIMIT_S and raises nothing; the redraw times go to build/browser/<nb>-redraws.json."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    timings: list[dict[str, Any]] = []
    problems: list[str] = []
    committed = notebook.read_bytes()
    try:
        # A workspace of its own, reset: JupyterLab would otherwise reopen the notebooks of earlier tests.
        workspace = "evalkit-" + notebook.stem.replace(".", "-")  # no dots in a workspace name
        page.goto(f"{lab_url}/lab/workspaces/{workspace}/tree/{notebook.name}?reset&token={TOKEN}",
                  wait_until="domcontentloaded")
        page.locator(".jp-Notebook:visible").first.wait_for(timeout=120_000)
        page.wait_for_function("() => document.querySelector('.jp-Notebook-ExecutionIndicator, .jp-KernelStatus')"
                               " !== null", timeout=60_000)
        time.sleep(3.0)
        _run_all(page, lab_url)
        errors = _errors(page)
        assert not errors, f"{notebook.name}: a cell failed in the browser: {errors}"

        cells = page.locator(".jp-CodeCell", has=page.locator(".widget-slider, .widget-dropdown"))
        assert cells.count() > 0, f"{notebook.name} builds a widget, but no slider or drop-down rendered"
        for c in range(cells.count()):
            cell = cells.nth(c)
            cell.scroll_into_view_if_needed()
            time.sleep(0.5)
            assert _images(cell), f"{notebook.name}: widget {c + 1} shows no figure before any change"
            cell.screenshot(path=str(SHOTS / f"{notebook.stem}-w{c + 1}-before.png"))
            controls = [("slider", h) for h in cell.locator(".widget-slider .noUi-handle").all()]
            controls += [("dropdown", s) for s in cell.locator(".widget-dropdown select").all()]
            controls += [("checkbox", b) for b in cell.locator(".widget-checkbox input[type=checkbox]").all()]
            for kind, control in controls:
                label = _label(control)
                if kind == "slider":
                    moves = _slider_moves(page, control)
                else:
                    moves = _dropdown_moves(control) if kind == "dropdown" else _checkbox_moves(control)
                for where, move in moves:
                    _settle(page, lab_url)
                    before_value, before = _value(control, kind), _images(cell)
                    t0 = time.monotonic()
                    move()
                    time.sleep(0.2)
                    if _value(control, kind) == before_value:
                        continue  # already there: nothing to redraw
                    after = before
                    while time.monotonic() - t0 < REDRAW_WAIT_S:
                        after = _images(cell)
                        if after and after != before and _kernels_idle(lab_url):
                            break
                        time.sleep(0.1)
                    seconds = time.monotonic() - t0
                    timings.append({"widget": c + 1, "control": label, "move": where,
                                    "value": _value(control, kind), "seconds": round(seconds, 2)})
                    what = f"widget {c + 1}, {label!r} to its {where} ({_value(control, kind)})"
                    if not after or after == before:
                        problems.append(f"{what}: the figure did not change")
                    elif seconds > REDRAW_LIMIT_S:
                        problems.append(f"{what}: the redraw took {seconds:.1f} s (limit {REDRAW_LIMIT_S:.0f} s)")
                    errors = _errors(page)
                    if errors:
                        problems.append(f"{what}: the callback failed: {errors}")
                        break
            cell.screenshot(path=str(SHOTS / f"{notebook.stem}-w{c + 1}-after.png"))
    finally:
        (SHOTS / f"{notebook.stem}-redraws.json").write_text(json.dumps(timings, indent=1) + "\n")
        page.screenshot(path=str(SHOTS / f"{notebook.stem}-page.png"))
        context.close()
        _shutdown_kernels(lab_url)
    assert notebook.read_bytes() == committed, f"{notebook.name} was modified on disk by the browser session"
    assert timings, f"{notebook.name}: no control could be moved"
    assert not problems, f"{notebook.name}:\n" + "\n".join(problems)
    widget_errors = [e for e in console_errors if "widget" in e.lower()]
    assert not widget_errors, f"{notebook.name}: JavaScript errors from the widgets: {widget_errors[:3]}"
