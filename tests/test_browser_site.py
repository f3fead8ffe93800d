"""The documentation site in headless Chromium: its figures (results pages, study pages, the
landing page) and the reports it carries (``toymech site-reports``: the smoke reports and a map
page, each without its own plotly.js and circuitsvis bundle) draw offline from the site's one
copy of each script, with no request leaving file:// and no console error.

The site is built from a copy of docs/ whose reports are this session's smoke reports (the
default ones ship in docs/reports/ once the lead builds them; the mechanism is the same).
Skipped where /usr/bin/chromium or chromedriver is missing, as tests/test_browser.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = shutil.which("chromedriver")
if not CHROMIUM.exists() or CHROMEDRIVER is None:
    _why = "needs /usr/bin/chromium and chromedriver (Debian: chromium chromium-driver)"
    if os.environ.get("TOYMECH_REQUIRE_BROWSER") == "1":
        pytest.fail(_why, pytrace=False)
    pytest.skip(_why, allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")

STATE = """
var figs = Array.from(document.querySelectorAll('.plotly-graph-div, .toymech-figure'));
var views = Array.from(document.querySelectorAll('.toymech-circuitsvis')).filter(function (v) {
  var fold = v.closest('details'); return !fold || fold.open; });
return {figures: figs.map(function (g) {
          return g.querySelectorAll('svg.main-svg, canvas').length; }),
        views: views.map(function (v) { return v.querySelectorAll('canvas, svg').length; })};
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory, smoke_reports, smoke_map_page) -> Path:
    """The site built from a copy of the repository's docs whose reports are the smoke reports
    and the smoke map page, copied in by ``toymech site-reports``."""
    root = tmp_path_factory.mktemp("repo")
    shutil.copytree(ROOT / "docs", root / "docs")
    (root / "benchmarks").mkdir()
    shutil.copy(ROOT / "benchmarks" / "README.md", root / "benchmarks" / "README.md")
    shutil.copy(ROOT / "CONTRIBUTING.md", root / "CONTRIBUTING.md")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "toymech", "site-reports", str(smoke_reports.out),
                           str(smoke_map_page.parent), "--into", str(root / "docs" / "reports")],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = root / "site"
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(root / "docs"), str(out)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from reading_pages import chromium_options
    from selenium.webdriver.chrome.service import Service

    options = chromium_options(tmp_path_factory.mktemp("chromium-home"))
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _open(driver, page: Path) -> dict:
    """The page's figures and views once drawn (waiting on that, within a generous bound), the
    console's errors and any request that left file://."""
    driver.get_log("performance")
    driver.get_log("browser")
    driver.get(page.as_uri())
    for _ in range(120):  # the figures draw after the page's scripts run
        state = driver.execute_script(STATE)
        if all(state["figures"]) and all(state["views"]):
            break
        time.sleep(0.5)
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    outside = []
    for record in driver.get_log("performance"):
        message = json.loads(record["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            if message["params"].get("documentURL", "").startswith("file://") and \
                    not url.startswith(("file://", "data:")):
                outside.append(url)
    return {**state, "errors": errors, "outside": outside}


def test_the_sites_figures_draw_offline(site, browser):
    for page in ("index.html", "studies/induction.html", "results/induction.html",
                 "results/birth.html", "results/random-transformers.html"):
        state = _open(browser, site / page)
        assert state["figures"] and all(state["figures"]), (page, state)
        assert not state["errors"] and not state["outside"], (page, state)


def test_the_sites_reports_draw_from_the_shared_scripts(site, browser, smoke_reports):
    reports = sorted((site / "reports").glob("*.html"))
    names = {p.name for p in reports}
    assert {Path(e.html).name for e in smoke_reports.entries} <= names
    assert any(n.startswith("map-") for n in names), names
    for page in reports:
        if page.name == "index.html":
            continue
        text = page.read_text(encoding="utf-8")
        assert "data-toymech-bundle" not in text and "../_static/toymech/plotly.min.js" in text
        state = _open(browser, page)
        assert state["figures"] and all(state["figures"]), (page.name, state)
        assert all(state["views"]), (page.name, state)
        assert not state["errors"] and not state["outside"], (page.name, state)
    listing = (site / "reports" / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{p.name}"' in listing for p in reports if p.name != "index.html")
