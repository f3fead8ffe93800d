"""The explorer live in JupyterLab (headless Chromium): a notebook runs ``toymech.explore`` on a
smoke model, a user types a sequence into its text box and toggles an ablation, and the
predictions strip changes each time. Uses test_browser's JupyterLab server and browser (the same
skips: no Chromium or chromedriver, unless TOYMECH_REQUIRE_BROWSER=1). Saves a screenshot of the
widget to artifacts/screenshots/jupyterlab-explore.png."""

from __future__ import annotations

import nbformat
import pytest
from test_browser import (  # noqa: F401
    _NOTEBOOK_SHOWN,
    SCREENSHOTS,
    browser,
    jupyterlab,
    monkeypatch_module,
    run_all_cells,
    wait_kernel_idle,
)
from waiting import wait_for

pytestmark = pytest.mark.browser

_STRIP = """
var strip = document.querySelector('.jp-OutputArea-output .toymech-explore-strip');
var caption = document.querySelector('.jp-OutputArea-output .toymech-explore-caption');
if (!strip || !caption) { return null; }
var cells = Array.from(strip.querySelectorAll('.toymech-explore-token'));
return {tokens: cells.map(c => c.dataset.token).join(''), probs: cells.map(c => c.dataset.prob),
        caption: caption.innerText};
"""
TYPED = "QWERTYQWERTYQWERTYQWERTY"


def test_explorer_widget_reacts_to_typing_and_ablation(jupyterlab, browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    from toymech import experiments
    from toymech.zoo import Zoo

    root, base, token = jupyterlab
    zoo = root / "explore-zoo"  # trained here, so the kernel only loads it
    Zoo(zoo).get_or_train(experiments.get("induction-2l", "smoke", 0), device="cpu",
                          progress=False, log=None)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import toymech.explore\n"
        f"toymech.explore('induction-2l', size='smoke', cache_dir={str(zoo)!r})")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})  # else JupyterLab asks which kernel
    nbformat.write(nb, root / "explore.ipynb")

    browser.get(f"{base}/lab/tree/explore.ipynb?token={token}")
    wait_for(lambda: browser.execute_script(_NOTEBOOK_SHOWN), 90, "JupyterLab to open the notebook",
             interval=1)
    wait_kernel_idle(browser, base, token, "explore.ipynb")
    run_all_cells(browser)
    first = wait_for(lambda: browser.execute_script(_STRIP), 240, "the explorer widget to render",
                     interval=1)

    box = browser.find_element("css selector", ".jp-OutputArea-output .widget-text input")
    box.clear()
    box.send_keys(TYPED + Keys.ENTER)
    typed = wait_for(lambda: (s := browser.execute_script(_STRIP)) and s["tokens"] == TYPED and s,
                     60, "the strip to show the typed sequence")
    assert typed["tokens"] != first["tokens"] and "ablated heads: none" in typed["caption"]

    toggle = browser.find_element("xpath", "//button[normalize-space()='L1H0']")
    wait_for(lambda: _click(browser, toggle), 30, "the L1H0 toggle to take a click")
    ablated = wait_for(lambda: (s := browser.execute_script(_STRIP)) and "L1H0 (zero)" in
                       s["caption"] and s, 60, "the caption to name the ablated head")
    assert ablated["tokens"] == TYPED
    # the strip may lag the caption by a message on a busy machine: wait for it, never forever
    ablated = wait_for(lambda: (s := browser.execute_script(_STRIP)) and s["probs"] != typed["probs"]
                       and s, 30, "the predictions to change with the ablation")
    assert "L1H0 (zero)" in ablated["caption"] and ablated["tokens"] == TYPED
    # the widget from its top, without the file browser beside it (docs/explore.png)
    ActionChains(browser).key_down(Keys.CONTROL).send_keys("b").key_up(Keys.CONTROL).perform()  # Ctrl+B
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", box)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "jupyterlab-explore.png"))


def _click(browser, element) -> bool:
    """A user's click, once the element is in the middle of the view and nothing (a JupyterLab
    notification) lies over it; False while something does."""
    from selenium.common.exceptions import ElementClickInterceptedException

    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    try:
        element.click()
    except ElementClickInterceptedException:
        return False
    return True
