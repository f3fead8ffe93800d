"""Open rendered reports in headless Chromium (system browser + chromedriver, via Selenium).

Reports: two fixture notebooks (one fails on purpose) and every notebooks/*.ipynb at size `smoke`
(the latter executed once per session by conftest's ``smoke_reports``, shared with test_notebooks).
Asserts, per report: no console errors, no request leaves file://, every plotly figure drew an
SVG/canvas, every circuitsvis view rendered content. Saves a screenshot of each report's first
screen to artifacts/screenshots/. (test_browser_reader.py reads the reports as a reader would.)
Then JupyterLab itself: figures and views render when the fixture notebook runs, and an executed
notebook signed by build_reports renders without re-running.
Skipped where /usr/bin/chromium or chromedriver is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from waiting import limit, wait_for

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = shutil.which("chromedriver")
FIXTURES = Path(__file__).parent / "fixtures"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
PROJECT_NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))

if not CHROMIUM.exists() or CHROMEDRIVER is None:
    _why = "needs /usr/bin/chromium and chromedriver (Debian: chromium chromium-driver)"
    if os.environ.get("TOYMECH_REQUIRE_BROWSER") == "1":  # CI: the browser check must run
        pytest.fail(_why, pytrace=False)
    pytest.skip(_why, allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")


@pytest.fixture(scope="module")
def reports(tmp_path_factory, monkeypatch_module, smoke_reports):
    """The fixture notebooks and every notebook of the project, rendered at size smoke.

    The project's reports are the session's ``smoke_reports`` (not executed again), copied here;
    the two tiny fixture notebooks are built into the copy, whose index then lists all of them.
    """
    from toymech.report import build_reports

    out = tmp_path_factory.mktemp("reports") / "reports"
    shutil.copytree(smoke_reports.out, out)
    # Module scope runs before conftest's per-test cache isolation: isolate the zoo here too.
    monkeypatch_module.setenv("TOYMECH_CACHE", str(tmp_path_factory.mktemp("zoo")))
    fixtures = [FIXTURES / "report_ok.ipynb", FIXTURES / "report_fail.ipynb"]
    entries = build_reports(fixtures, out_dir=out, size="smoke", device="cpu", trust=False)
    return out, entries + list(smoke_reports.entries)


@pytest.fixture(scope="module")
def browser(tmp_path_factory, monkeypatch_module):
    from reading_pages import chromium_options
    from selenium.webdriver.chrome.service import Service

    home = tmp_path_factory.mktemp("chromium-home")
    # Chromium writes under ~/.config and ~/.cache: keep that inside the test's temp dir.
    for var, sub in (("HOME", ""), ("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache")):
        monkeypatch_module.setenv(var, str(home / sub))
    options = chromium_options(home)  # the CI runs as root: --no-sandbox among them
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _outside_requests(driver) -> list[str]:
    """Requests from the page that leave file:// (or data:), and any network request at all.

    The browser's own chrome:// pages (the start-up new-tab page) also show in the log; they are
    not the report's, but an http(s)/ws(s) request is a failure whoever made it.
    """
    outside = []
    for record in driver.get_log("performance"):
        message = json.loads(record["message"])["message"]
        if message["method"] != "Network.requestWillBeSent":
            continue
        url = message["params"]["request"]["url"]
        from_page = message["params"].get("documentURL", "").startswith("file://")
        network = url.split(":", 1)[0].lower() in ("http", "https", "ws", "wss", "ftp")
        if network or (from_page and not url.startswith(("file://", "data:"))):
            outside.append(url)
    return outside


# Plotly draws an <svg class="main-svg"> (or a WebGL canvas); circuitsvis replaces our placeholder
# text with its React component.
_PAGE_STATE = """
var figs = Array.from(document.querySelectorAll('.plotly-graph-div'));
// Folded views (inside a closed <details>) are drawn when unfolded; they are checked apart.
var views = Array.from(document.querySelectorAll('.toymech-circuitsvis')).filter(function (v) {
  var fold = v.closest('details'); return !fold || fold.open; });
return {
  figures: figs.map(function (g) { return g.querySelectorAll('svg.main-svg, canvas').length; }),
  views: views.map(function (v) {
    return {drawn: v.querySelectorAll('canvas, svg').length, text: v.textContent.slice(0, 200)};
  }),
};
"""


def _open(driver, path: Path, expect_figures: bool) -> dict:
    driver.get_log("performance")  # drop records of earlier pages
    driver.get_log("browser")
    driver.get(path.resolve().as_uri())
    deadline = time.monotonic() + limit(30)
    state = driver.execute_script(_PAGE_STATE)
    while time.monotonic() < deadline:
        drawn = all(state["figures"]) and all(v["drawn"] > 0 for v in state["views"])
        if drawn and (state["figures"] or not expect_figures):
            break
        time.sleep(0.5)
        state = driver.execute_script(_PAGE_STATE)
    time.sleep(0.5)  # let late console messages arrive
    state["console"] = driver.get_log("browser")
    state["outside"] = _outside_requests(driver)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{path.stem}.png"))
    return state


def test_reports_render_offline_in_chromium(reports, browser):
    out, entries = reports
    assert len(entries) == 2 + len(PROJECT_NOTEBOOKS)
    for entry in entries:
        # Only the failing fixture may fail; a project notebook failing at smoke is a bug.
        assert entry.ok == (entry.html != "report_fail.html"), f"{entry.html}: {entry.error}"
        page = out / entry.html
        state = _open(browser, page, expect_figures=entry.ok)
        errors = [m for m in state["console"] if m["level"] == "SEVERE"]
        assert errors == [], f"{entry.html}: console errors {errors}"
        assert state["outside"] == [], f"{entry.html}: requests outside file:// {state['outside']}"
        assert all(n > 0 for n in state["figures"]), f"{entry.html}: undrawn plotly figures {state['figures']}"
        for view in state["views"]:
            assert view["drawn"] > 0 and "circuitsvis" not in view["text"], f"{entry.html}: view {view}"
        if entry.html == "report_ok.html":
            assert len(state["figures"]) == 2 and len(state["views"]) == 1, state
        assert (SCREENSHOTS / f"{page.stem}.png").stat().st_size > 0


def test_index_opens_offline(reports, browser):
    out, _ = reports
    state = _open(browser, out / "index.html", expect_figures=False)
    assert [m for m in state["console"] if m["level"] == "SEVERE"] == []
    assert state["outside"] == []
    rows = browser.find_elements("css selector", "#reports tbody tr")
    assert len(rows) == 2 + len(PROJECT_NOTEBOOKS)


# --------------------------------------------------------------------------------------------
# JupyterLab: live outputs render, and an executed (signed) notebook renders without re-running
# --------------------------------------------------------------------------------------------

def kernel_state(base: str, token: str, relative: str) -> str | None:
    """The execution state (``starting``, ``idle``, ``busy``…) of the kernel behind the notebook
    at ``relative``, as the Jupyter server's REST API reports it (``GET /api/sessions``); None
    while the notebook has no session. A documented server API, not a front end's internals."""
    import urllib.request

    request = urllib.request.Request(f"{base}/api/sessions", headers={"Authorization": f"token {token}"})
    try:  # a busy server answering late is polled again, never a failure by itself
        with urllib.request.urlopen(request, timeout=limit(10)) as response:
            sessions = json.load(response)
    except OSError:
        return None
    for session in sessions:
        if session.get("path") == relative and session.get("kernel"):
            return session["kernel"].get("execution_state")
    return None


# What a user reads in the status bar: "Python 3 (ipykernel) | Idle".
_SHOWN_IDLE = """
return Array.from(document.querySelectorAll('.jp-StatusBar-Item'))
  .some(function (e) { return /\\|\\s*Idle\\s*$/.test(e.innerText.trim()); });
"""
_NOTEBOOK_SHOWN = "return !!document.querySelector('.jp-Notebook .jp-Cell')"


def wait_kernel_idle(driver, base: str, token: str, relative: str) -> None:
    """Until the server reports the notebook's kernel idle AND the page's status bar says so (the
    kernel session starts after the notebook panel, later still on a busy machine, and a run
    asked for before the page is connected can be dropped)."""
    wait_for(lambda: kernel_state(base, token, relative) == "idle" and driver.execute_script(_SHOWN_IDLE),
             240, "the notebook's kernel to start (server and status bar idle)", interval=1)


def run_all_cells(driver) -> None:
    """What a user does: the menu bar's Run menu, then its "Run All Cells" item."""
    menu = wait_for(lambda: _visible(driver, "//*[@role='menubar']//*[@role='menuitem'][normalize-space()='Run']"),
                    30, "the Run menu in the menu bar")
    menu.click()
    item = wait_for(lambda: _visible(driver, "//*[@role='menu']//*[@role='menuitem']"
                                             "[.//*[normalize-space(text())='Run All Cells']]"),
                    30, "the Run menu's 'Run All Cells' item")
    item.click()


def _visible(driver, xpath: str):
    for element in driver.find_elements("xpath", xpath):
        if element.is_displayed():
            return element
    return None


_LAB_STATE = """
return {
  plots: document.querySelectorAll('.jp-OutputArea-output svg.main-svg').length,
  views: Array.from(document.querySelectorAll('.toymech-circuitsvis'))
           .map(function (v) { return v.querySelectorAll('canvas, svg').length; }),
  // In an output, not in the cell's source (which holds the same words).
  done: Array.from(document.querySelectorAll('.jp-OutputArea-output'))
          .some(function (o) { return o.innerText.indexOf('done: size=') >= 0; }),
};
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory, monkeypatch_module):
    import os
    import socket
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("lab")
    data_dir = root / "jupyter-data"
    # The lab server and build_reports must share the Jupyter data dir: the trust database is there.
    monkeypatch_module.setenv("JUPYTER_DATA_DIR", str(data_dir))
    port, token = _free_port(), "toymech-test"
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               "--LabApp.news_url=", "--allow-root"]
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / "config"), "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    log = open(root / "lab.log", "w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + limit(240)  # a loaded CI machine renders late
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail(f"JupyterLab did not start: {(root / 'lab.log').read_text()[-2000:]}")
            time.sleep(1)
    yield root, f"http://127.0.0.1:{port}", token
    server.terminate()
    server.wait(30)
    log.close()


def _lab_open(driver, base: str, token: str, relative: str, run_all: bool) -> dict:
    driver.get(f"{base}/lab/tree/{relative}?token={token}")
    wait_for(lambda: driver.execute_script(_NOTEBOOK_SHOWN), 90, "JupyterLab to open the notebook", interval=1)
    if run_all:
        wait_kernel_idle(driver, base, token, relative)
        run_all_cells(driver)
    deadline = time.monotonic() + limit(240)  # a loaded CI machine renders late
    state = driver.execute_script(_LAB_STATE)
    while time.monotonic() < deadline:
        # A notebook that is only opened has nothing to wait for but its saved outputs; its last
        # cell may be outside the rendered window, so "done" is awaited only after a run.
        if state["plots"] >= 2 and state["views"] and all(state["views"]) and (state["done"] or not run_all):
            break
        time.sleep(1)
        state = driver.execute_script(_LAB_STATE)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"jupyterlab-{Path(relative).stem}.png"))
    return state


def test_jupyterlab_renders_figures_and_views_live(jupyterlab, browser):
    root, base, token = jupyterlab
    shutil.copy(FIXTURES / "report_ok.ipynb", root / "live.ipynb")
    state = _lab_open(browser, base, token, "live.ipynb", run_all=True)
    assert state["done"], state
    assert state["plots"] >= 2, f"plotly figures not drawn by the JupyterLab extension: {state}"
    assert len(state["views"]) == 1 and state["views"][0] > 0, f"circuitsvis view not drawn: {state}"


def test_jupyterlab_shows_executed_notebook_without_rerunning(jupyterlab, browser):
    from toymech.report import build_reports

    root, base, token = jupyterlab
    # trust=True signs the executed notebook in JUPYTER_DATA_DIR, which the server reads.
    build_reports([FIXTURES / "report_ok.ipynb"], out_dir=root / "reports", size="smoke", trust=True)
    state = _lab_open(browser, base, token, "reports/executed/report_ok.ipynb", run_all=False)
    assert state["plots"] >= 2, state
    assert len(state["views"]) == 1 and state["views"][0] > 0, f"trusted view not drawn: {state}"


# --------------------------------------------------------------------------------------------
# The training scrubber: its slider works in a static offline page (no kernel behind it)
# --------------------------------------------------------------------------------------------

_SCRUBBER_STATE = """
var gd = document.querySelectorAll('.js-plotly-plot')[0];
if (!gd || !gd.data || !gd.querySelector('.slider-rail-touch-rect')) { return null; }
return {z: gd.data[arguments[0]].z, marker: gd.layout.shapes[0].x0,
        active: gd.layout.sliders[0].active};
"""


def test_scrubber_slider_moves_the_patterns_offline(browser, tmp_path):
    """The figure embedded as reports embed it (the notebook renderer's offline text/html), then
    a click on the slider's rail near its left end: the heatmaps show step 0's patterns."""
    import numpy as np
    import pandas as pd
    from selenium.webdriver.common.action_chains import ActionChains

    from toymech import display
    from toymech.plots import scrubber
    from toymech.report import external_loads

    rng = np.random.default_rng(0)
    steps = [0, 2, 10, 50]
    patterns = [rng.random((2, 4, 4)) for _ in steps]
    curves = pd.DataFrame({"step": steps, "score": [0.0, 0.1, 0.8, 1.0]})
    fig = scrubber(steps, patterns, ["L0H0", "L0H1"], curves=curves,
                   token_labels=list("abcd"))
    display.reset_bundles()
    html = display._renderer_class()().to_mimebundle(fig.to_dict())["text/html"]
    page = tmp_path / "scrubber.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{html}</body></html>")
    assert external_loads(page.read_text()) == []

    browser.get("about:blank")  # leaving the previous page may log (JupyterLab's beforeunload)
    browser.get_log("browser")
    browser.get(page.resolve().as_uri())
    deadline = time.monotonic() + limit(30)
    while (before := browser.execute_script(_SCRUBBER_STATE, 1)) is None:
        assert time.monotonic() < deadline, "the scrubber figure was not drawn"
        time.sleep(0.3)
    assert np.allclose(before["z"], patterns[-1][1], atol=1e-3) and before["marker"] == 51

    rail = browser.find_element("css selector", ".slider-rail-touch-rect")
    width = rail.rect["width"]
    ActionChains(browser).move_to_element_with_offset(rail, -width / 2 + 3, 0).click().perform()
    deadline = time.monotonic() + limit(10)
    after = browser.execute_script(_SCRUBBER_STATE, 1)
    # the slider's position and the drawn frame are two updates: wait for both (a busy machine
    # may show one before the other), never past the deadline
    while (after["active"] != 0 or np.allclose(after["z"], before["z"], atol=1e-3)) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
        after = browser.execute_script(_SCRUBBER_STATE, 1)
    assert after["active"] == 0, after["active"]
    assert np.allclose(after["z"], patterns[0][1], atol=1e-3), "the heatmap still shows the last step"
    assert not np.allclose(after["z"], before["z"], atol=1e-3) and after["marker"] == 1
    assert [m for m in browser.get_log("browser") if m["level"] == "SEVERE"] == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "scrubber.png"))


_REPORT_SCRUBBER = """
var plots = Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(gd => gd.layout && gd.layout.sliders && gd.layout.sliders.length
                  && gd.querySelector('.slider-rail-touch-rect'));
if (plots.length === 0) { return null; }
var gd = plots[0];
gd.scrollIntoView();
var heat = gd.data.findIndex(t => t.type === 'heatmap');
return {n: plots.length, z: JSON.stringify(gd.data[heat].z), active: gd.layout.sliders[0].active,
        steps: gd.layout.sliders[0].steps.length};
"""


@pytest.mark.parametrize("notebook", [p.stem for p in PROJECT_NOTEBOOKS])
def test_each_report_has_a_working_step_slider(reports, browser, notebook):
    """Every study's report holds a training-dynamics scrubber; a user's click at the left end of
    its slider (the first snapshot) changes the attention pattern drawn, offline."""
    from selenium.webdriver.common.action_chains import ActionChains

    out, _ = reports
    browser.get("about:blank")  # leaving the previous page may log (JupyterLab's beforeunload)
    browser.get_log("browser")
    browser.get((out / f"{notebook}.html").resolve().as_uri())
    deadline = time.monotonic() + limit(60)
    while (before := browser.execute_script(_REPORT_SCRUBBER)) is None:
        assert time.monotonic() < deadline, f"{notebook}: no plotly figure with a step slider drawn"
        time.sleep(0.5)
    assert before["steps"] >= 2 and before["active"] == before["steps"] - 1, before
    rail = [r for r in browser.find_elements("css selector", ".slider-rail-touch-rect")][0]
    ActionChains(browser).move_to_element_with_offset(rail, -rail.rect["width"] / 2 + 3, 0) \
        .click().perform()
    deadline = time.monotonic() + limit(10)
    after = browser.execute_script(_REPORT_SCRUBBER)
    while (after["active"] != 0 or after["z"] == before["z"]) and time.monotonic() < deadline:
        time.sleep(0.2)  # the slider's position and the drawn frame: both, as above
        after = browser.execute_script(_REPORT_SCRUBBER)
    assert after["active"] == 0, f"{notebook}: the slider did not move ({after['active']})"
    assert after["z"] != before["z"], f"{notebook}: the drawn pattern did not change"
    assert [m for m in browser.get_log("browser") if m["level"] == "SEVERE"] == []


_ZOOMED = """
return Array.from(document.querySelectorAll('.toymech-attention')).map(function (box) {
  var cap = box.querySelector('.toymech-attention-caption');
  var zoom = Array.from(box.querySelectorAll('.toymech-circuitsvis h3')).find(function (h) {
    return / Zoomed$/.test(h.textContent); });
  var fold = box.closest('details') || (box.tagName === 'DETAILS' ? box : null);
  return {caption: cap ? cap.textContent : '', zoomed: zoom ? zoom.textContent : null,
          folded: !!(fold && !fold.open)};
});
"""


def _opens_on(caption: str) -> str | None:
    import re

    found = re.search(r"The view opens on ([^,.]+)", caption)
    return found.group(1).strip() if found else None


def test_attention_view_opens_on_its_focus_head(browser, tmp_path):
    """circuitsvis opens on the first head; a view with ``focus`` zooms the named head instead."""
    import numpy as np

    from toymech import display

    display.reset_bundles()
    view = display.attention_view(list("abcd"), np.random.default_rng(0).random((3, 4, 4)),
                                  head_names=["L0H0", "L0H1", "L0H2"], focus="L0H2",
                                  caption="The view opens on L0H2.")
    page = tmp_path / "focus.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
                    f"{view._repr_html_()}</body></html>")
    browser.get("about:blank")
    browser.get(page.resolve().as_uri())
    deadline = time.monotonic() + limit(30)
    while (state := browser.execute_script(_ZOOMED))[0]["zoomed"] != "L0H2 Zoomed":
        assert time.monotonic() < deadline, f"the view did not open on L0H2: {state}"
        time.sleep(0.3)


@pytest.mark.parametrize("notebook", [p.stem for p in PROJECT_NOTEBOOKS])
def test_each_open_attention_view_shows_the_head_its_caption_names(reports, browser, notebook):
    out, entries = reports
    page = out / f"{notebook}.html"
    browser.get("about:blank")
    browser.get(page.resolve().as_uri())
    deadline = time.monotonic() + limit(30)
    while True:
        views = [v for v in browser.execute_script(_ZOOMED) if not v["folded"]]
        named = [(v, _opens_on(v["caption"])) for v in views]
        if all(v["zoomed"] == f"{head} Zoomed" for v, head in named if head):
            break
        assert time.monotonic() < deadline, f"{page.name}: {named}"
        time.sleep(0.5)
    assert all(head for _, head in named), f"{page.name}: an open view names no head: {named}"
