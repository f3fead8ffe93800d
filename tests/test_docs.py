"""The documentation site (docs/, built by ``./run.sh docs``) and the README's first screen.

The site is built strictly (``sphinx -W``: a broken link or anchor, a page in no toctree, a public
function without its reference entry or with a parameter its docstring does not name fails),
it loads nothing from the network, every Python block of *Getting started* and of the README
runs (at ``smoke``, in a zoo of its own), and the README's commands are the ones CI runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# The one line a reader edits to change the examples' speed; the test runs them at smoke.
SIZE_LINE = 'size = "default"'
# Under pytest-xdist (--dist loadgroup) the tests that read the built site share one worker, so
# the site is built once per run.
ON_ONE_WORKER = pytest.mark.xdist_group("docs_site")


def python_blocks(text: str) -> list[str]:
    """The ```python fenced blocks of a Markdown text, in order."""
    return [m.group(1) for m in re.finditer(r"^```python\n(.*?)^```\s*$", text, re.M | re.S)]


def at_smoke(blocks: list[str]) -> str:
    """The blocks as one script, with the size line set to ``smoke`` (it must be there once)."""
    script = "\n".join(blocks)
    assert script.count(SIZE_LINE) == 1, f"the examples should set {SIZE_LINE!r} exactly once"
    return script.replace(SIZE_LINE, 'size = "smoke"')


def _run_script(script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "example.py"
    path.write_text(script)
    env = {**os.environ, "TOYMECH_CACHE": str(tmp_path / "zoo"), "TOYMECH_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built once, as ``./run.sh docs`` builds it (warnings are errors)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", str(DOCS), str(out), "-d", str(out / ".doctrees")],
                          capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return out


@ON_ONE_WORKER
def test_the_site_builds_strictly_with_every_page(site):
    pages = {p.relative_to(site).with_suffix("").as_posix() for p in site.rglob("*.html")}
    for name in ["index", "getting-started", "variants", "maps", "zoo", "sweeps",
                 "through-training", "explorer", "claims", "threads", "offline", "notebooks",
                 "results/index", "results/induction", "results/birth",
                 "results/random-transformers", "reports/index", "changelog", "benchmarks",
                 "sources", "calibration", "api/index", "api/analysis",
                 "studies/induction", "studies/birth", "studies/random-transformers"]:
        assert name in pages, name


@ON_ONE_WORKER
def test_every_study_page_shows_its_finding_a_figure_and_its_rerun_costs(site):
    """Each study's page includes its generated finding box (with the map's figure, drawn by the
    site's one plotly.js) and its rerun table; only pages with a figure load plotly.js."""
    from toymech.studies import protocol

    for name in protocol.STUDIES:
        page = (site / "studies" / f"{name.replace('_', '-')}.html").read_text(encoding="utf-8")
        assert "What our runs found" in page and "toymech-figure-data" in page, name
        assert "what it cost when it ran" in page and "_static/toymech/plotly.min.js" in page
    assert "plotly.min.js" not in (site / "zoo.html").read_text(encoding="utf-8")
    assert (site / "_static" / "toymech" / "plotly.min.js").is_file()
    assert len(list(site.rglob("plotly*.js"))) == 1  # one copy for the whole site


def test_every_registered_study_has_its_page():
    from toymech.studies import protocol

    titles = {p.read_text(encoding="utf-8").splitlines()[0] for p in (DOCS / "studies").glob("*.md")}
    for name in protocol.STUDIES:
        title = protocol.study(name).title.split(":")[0]
        assert any(t.startswith(f"# {title}") for t in titles), (name, sorted(titles))


@ON_ONE_WORKER
def test_the_site_loads_nothing_from_outside_itself(site):
    from toymech.report import external_loads

    pages = sorted(site.rglob("*.html"))
    assert pages
    for page in pages:
        for url in external_loads(page.read_text(encoding="utf-8")):
            assert "://" not in url and not url.startswith("//"), (page.name, url)
            target = (page.parent / url.split("#")[0].split("?")[0]).resolve()
            assert target.is_file(), (page.name, url)  # a file the folder ships
    for sheet in site.rglob("*.css"):
        text = sheet.read_text(encoding="utf-8")
        assert not re.search(r"(@import|url\()\s*[\"']?(https?:)?//", text), sheet.name


@ON_ONE_WORKER
def test_the_api_reference_lists_every_public_function_with_its_parameters(site):
    """The extension's own check ran inside the strict build; here: the pages really hold the
    surface it walks (each name as an anchor of an API page)."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import toymech_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    anchors = "\n".join(p.read_text(encoding="utf-8") for p in (site / "api").rglob("*.html"))
    aliases: dict[int, set[str]] = {}
    for name, obj in toymech_docs.surface():  # a name re-exported twice is indexed once
        aliases.setdefault(id(obj), {f"{obj.__module__}.{obj.__qualname__}"}).add(name)
    assert len(aliases) > 50
    for name, obj in toymech_docs.surface():
        assert any(f'id="{alias}"' in anchors for alias in aliases[id(obj)]), name
    assert toymech_docs.all_problems() == []  # what the strict build refused


def test_the_surface_check_can_fail():
    """A function without a docstring, or whose docstring leaves out a parameter, is a gap."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import toymech_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))

    def bare(a, b=1):
        return a

    def told(a, b=1):
        """Add ``a`` to ``b``."""
        return a + b

    def half(a, b=1):
        """Return ``a``."""
        return a

    assert toymech_docs.problems("bare", bare) == ["bare: no docstring", *[
        f"bare: the docstring does not name the parameter {p!r}" for p in ("a", "b")]]
    assert toymech_docs.problems("told", told) == []
    assert toymech_docs.problems("half", half) == ["half: the docstring does not name the parameter 'b'"]


def test_getting_started_runs(tmp_path):
    blocks = python_blocks((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 4  # the first model, the explorer, a variant, a map
    done = _run_script(at_smoke(blocks), tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "zoo" / "maps" / "first-map.csv").is_file()


def test_the_readme_example_runs_and_ends_with_a_figure(tmp_path):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) == 1
    script = at_smoke(blocks).rstrip().splitlines()
    *body, last = script
    # the block ends with the figure expression JupyterLab draws; check that it is one
    probe = "\n".join([*body, f"fig = {last}", "import plotly.graph_objects as go",
                       "assert isinstance(fig, go.Figure), type(fig)",
                       "assert fig.data and fig.data[0].z.shape == (2, 4), fig.data"])
    done = _run_script(probe, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]


def test_the_readme_is_a_first_screen():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    assert "![" in text and (ROOT / "docs" / "explore.png").is_file()  # a trained model's picture
    # no measured timing table: no row of a table with a duration in it
    for line in text.splitlines():
        if line.startswith("|"):
            assert not re.search(r"\d\s*(min|s|ms|core-s|h)\b|reference steps", line), line
    for target in re.findall(r"\]\(([^)#]+)", text):  # every local link resolves
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_the_readme_commands_are_the_ones_ci_and_the_tests_run():
    text, ci, run = README.read_text(), (ROOT / ".ci" / "run").read_text(), (ROOT / "run.sh").read_text()
    commands = re.findall(r"^(\./run\.sh \w+)", text, re.M)
    assert "./run.sh test" in commands and "./run.sh report" in commands
    assert re.search(r"^\s*exec unshare .*\./run\.sh test'?$", ci, re.M)  # CI runs exactly it
    for command in re.findall(r"\./run\.sh (\w+)", text):
        assert re.search(rf"^\s*{command}\)", run, re.M), f"run.sh has no {command!r} case"
    # the docs case builds what this file's fixture builds: sphinx, strict, from docs/
    assert re.search(r"-m sphinx -W --keep-going -b html docs ", run)
