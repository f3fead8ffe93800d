"""A static picture (PNG) of a plotly figure, for the places that cannot run a script: the README
on a code host. Drawn by headless Chromium from the installed plotly.js, offline; where no
Chromium is installed, ``png_of`` says so and draws nothing (the caller keeps the last picture).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..files import replace_file

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
WIDTH, HEIGHT = 900, 520
_PAGE = """<html><head><meta charset="utf-8"><script src="{plotly}"></script></head>
<body style="margin:0"><div id="f" style="width:{w}px;height:{h}px"></div><script>
var fig = {figure}; fig.layout = Object.assign(fig.layout || {{}}, {{width: {w}, height: {h}}});
Plotly.newPlot("f", fig.data, fig.layout, {{staticPlot: true}});</script></body></html>"""


def browser() -> str | None:
    """The headless browser to draw with (``TOYMECH_CHROMIUM`` or the first of ``BROWSERS`` on
    the PATH), None where there is none."""
    return os.environ.get("TOYMECH_CHROMIUM") or next(
        (found for name in BROWSERS if (found := shutil.which(name))), None)


def png_of(figure_json: str, path: str | Path, width: int = WIDTH, height: int = HEIGHT) -> bool:
    """Draw the plotly figure ``figure_json`` (its JSON text) into the PNG file ``path``
    (written atomically), ``width`` x ``height`` pixels; False where no browser is installed or
    it drew nothing."""
    found = browser()
    if found is None:
        return False
    import plotly

    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    with tempfile.TemporaryDirectory(prefix="toymech-png-") as tmp:
        page, shot = Path(tmp) / "figure.html", Path(tmp) / "figure.png"
        page.write_text(_PAGE.format(plotly=plotly_js.as_uri(), w=width, h=height,
                                     figure=figure_json.replace("</", "<\\/")), encoding="utf-8")
        done = subprocess.run(
            [found, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-background-networking", f"--user-data-dir={tmp}/profile",
             "--allow-file-access-from-files", f"--window-size={width},{height}",
             "--virtual-time-budget=5000", f"--screenshot={shot}", page.as_uri()],
            capture_output=True, timeout=120, env={**os.environ, "HOME": tmp})
        if done.returncode != 0 or not shot.is_file() or shot.stat().st_size == 0:
            return False
        replace_file(path, shot.read_bytes())
    return True
