"""Sphinx configuration of toymech's documentation site: ``./run.sh docs`` builds it into
``build/docs`` (``python -m sphinx -W --keep-going -b html docs build/docs``), offline."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the toymech of this checkout, whatever is installed
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "toymech"
author = "the toymech authors"
copyright = "toymech authors, MIT licence"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "toymech_docs", "toymech_site"]

source_suffix = {".md": "markdown"}
root_doc = "index"
# Data and logs beside the pages, not pages.
exclude_patterns = ["_build", "maps/*.log", "maps/*.csv", "_ext",
                    "results/_*"]  # the generated finding boxes: included, not pages

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = []

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": False}

html_theme = "furo"
html_title = "toymech"
html_static_path = []
html_show_sourcelink = False
html_copy_source = False
# No web fonts, no CDN: furo uses the system's fonts and ships its scripts in _static.
html_theme_options = {"navigation_with_keys": True}
