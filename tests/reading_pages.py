"""Open a rendered page in headless Chromium and read it with ``toymech.report.page_rules``.

Used by tests/test_browser_reading.py and, to count what each report breaks, from the shell:

    python tests/reading_pages.py REPORTS_DIR/*.html     # one line per page: counts per rule
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # waiting.py, when run as a script

from waiting import wait_for

from toymech.report import page_rules

CHROMIUM = Path("/usr/bin/chromium")


def chromium_options(home: Path, window=(1280, 900)):
    """Selenium options of a headless Chromium whose profile lives under ``home``."""
    from selenium.webdriver.chrome.options import Options

    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 f"--window-size={window[0]},{window[1]}", f"--user-data-dir={home / 'profile'}"):
        options.add_argument(flag)
    return options


def page_state(driver, page: Path) -> dict:
    """``page_rules.DOM_SCRIPT``'s result on ``page`` in a 1,280 x 1,600 window, once its figures drew."""
    driver.set_window_size(*page_rules.WINDOW)
    driver.get("about:blank")
    driver.get(page.resolve().as_uri())

    def drawn():  # plotly still loading or drawing: None, polled again
        state = driver.execute_script(page_rules.DOM_SCRIPT)
        done = not state["pending"] and all(f["svg"] is not None for f in state["figures"])
        return state if done else None

    # a page whose figures never draw fails here, never reads as a page with nothing to check
    return wait_for(drawn, 30, f"{page.name}: every figure drawn")


def page_violations(driver, page: Path) -> list[page_rules.Violation]:
    return page_rules.violations(page_state(driver, page))


def main(pages: list[str]) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory() as home:
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=chromium_options(Path(home), page_rules.WINDOW))
        try:
            for page in pages:
                found = page_violations(driver, Path(page))
                per_rule = ", ".join(f"{k} {v}" for k, v in page_rules.counts(found).items())
                print(f"{Path(page).name}: {len(found)} ({per_rule})")
                for v in found:
                    print(f"    {v}")
        finally:
            driver.quit()


if __name__ == "__main__":
    main(sys.argv[1:])
