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
                 "studies/induction", "studies/birth", "studies/random-transformers", "cli",
                 "own-task", "api/models", "api/core", "api/sweep", "api/report", "api/plugins"]:
        assert name in pages, name


@ON_ONE_WORKER
def test_the_command_line_reference_has_every_subcommand_and_option(site):
    """``docs/cli.md`` is generated from the parser: each subcommand has its section (anchor
    ``toymech-<command>``) with its description, and every option and positional argument is
    listed with its help text."""
    import argparse
    import html as html_module

    from toymech.cli.parser import build_parser

    page = (site / "cli.html").read_text(encoding="utf-8")
    text = html_module.unescape(re.sub(r"<[^>]+>", "", page))
    text = re.sub(r"['\u2018\u2019\u201c\u201d\"]", "", " ".join(text.split()))

    def walk(parser, prog):
        assert f'id="{prog.replace(" ", "-")}"' in page, prog
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{prog} {name}")
            elif not isinstance(action, argparse._HelpAction):
                shown = action.option_strings[-1] if action.option_strings else action.dest
                assert shown in text, (prog, shown)
                words = re.sub(r"['\"]", "", " ".join((action.help or "").split()))
                assert words.split("(")[0].strip()[:25] in text, (prog, words)

    walk(build_parser(), "toymech")


def test_every_api_pages_example_runs(tmp_path):
    """Each API page opens with an example; run at ``smoke`` (its size line, where it has one),
    every page's blocks in one script, in a folder of its own."""
    scripts = []
    for page in sorted((DOCS / "api").glob("*.md")):
        blocks = python_blocks(page.read_text(encoding="utf-8"))
        if page.name != "index.md":
            assert blocks, f"{page.name} has no example"
        scripts += ["\n".join(blocks).replace(SIZE_LINE, 'size = "smoke"')]
    script = "\n".join(f"def page_{i}():\n" + "\n".join("    " + line for line in s.splitlines())
                       + f"\n\npage_{i}()\n" for i, s in enumerate(scripts) if s.strip())
    done = _run_script(script, tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "my-reports" / "mine.html").is_file()
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


def test_parameters_are_described_in_the_parameter_list():
    """``param_fields``: a docstring's labelled clauses (``name``: text) move into ``:param:``
    fields, a parameter only mentioned gets the sentence that mentions it, a literal block is
    kept as it is."""
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import toymech_docs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    doc = ["Train ``model`` on the task. ``steps``: how many steps (at least 1); ``log``: a",
           "print-like function (None: quiet). Returns the history.", "", "Example::", "",
           "    train(model, steps=3)"]
    assert toymech_docs.param_fields(doc, ["model", "steps", "log"]) == [
        "Train ``model`` on the task. Returns the history.", "", "Example::", "",
        "    train(model, steps=3)", "",
        ":param model: Train ``model`` on the task",
        ":param steps: how many steps (at least 1)",
        ":param log: a print-like function (None: quiet)"]
    ready = ["Add.", "", ":param a: one number"]
    assert toymech_docs.param_fields(ready, ["a"]) == ready  # fields given: kept as they are


def test_getting_started_runs(tmp_path):
    blocks = python_blocks((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 4  # the first model, the explorer, a variant, a map
    done = _run_script(at_smoke(blocks), tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "zoo" / "maps" / "first-map.csv").is_file()


def test_your_own_task_guide_runs(tmp_path):
    """``docs/own-task.md``: its module block is saved as the file it names, its command lines
    run (at ``smoke``) in that folder, then its other Python blocks run as one script there."""
    text = (DOCS / "own-task.md").read_text(encoding="utf-8")
    blocks = python_blocks(text)
    files = [b for b in blocks if re.match(r"# [\w.]+\.py\n", b)]
    assert [b.split("\n", 1)[0] for b in files] == ["# my_tasks.py"]
    (tmp_path / "my_tasks.py").write_text(files[0].split("\n", 1)[1])
    commands = [line.split("#")[0].strip() for b in re.findall(r"^```bash\n(.*?)^```", text,
                                                                re.M | re.S)
                for line in b.splitlines() if line.startswith("PYTHONPATH=. toymech ")]
    assert len(commands) >= 2 and any(" train " in c for c in commands)
    env = {**os.environ, "TOYMECH_CACHE": str(tmp_path / "zoo"), "TOYMECH_THREADS": "1",
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for command in commands:
        command = command.replace("PYTHONPATH=. ", f"PYTHONPATH=.{os.pathsep}$PYTHONPATH ")
        done = subprocess.run(command.replace("--size default", "--size smoke"), shell=True,
                              cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr[-2000:])
        assert "reverse_letters" in done.stdout, (command, done.stdout[-2000:])
    done = _run_script(at_smoke([b for b in blocks if b not in files]), tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "zoo" / "sweeps" / "reverse-depth-width.csv").is_file()


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


def test_the_readme_example_trains_on_the_thread_policys_threads(tmp_path):
    """The README's example, run as plain Python (no command line, no notebook, no thread
    setting in the environment), trains on the threads the package's policy chooses, as
    ``toymech train`` would: here one core more than torch starts with, on a machine made quiet
    (the policy's load readings replaced), so torch's own count cannot pass for it."""
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    prelude = "\n".join([
        "import torch",
        "from toymech import devices",
        "from toymech.training import loop",
        "START = torch.get_num_threads()",
        "devices.usable_cores = lambda: START + 1",
        "devices.busy_elsewhere = lambda own_threads=0.0: (0.0, 'quiet (test)')",
        "devices.claimed_by_others = lambda: 0",
        "SEEN, _update = [], loop._update",
        "loop._update = lambda lp, step: (SEEN.append(torch.get_num_threads()), _update(lp, step))[1]",
    ])
    check = "\nassert SEEN and set(SEEN) == {START + 1}, (START, sorted(set(SEEN)))\n"
    path = tmp_path / "example.py"
    path.write_text(prelude + "\n" + at_smoke(blocks) + check)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TOYMECH_THREADS", "TOYMECH_THREADS_AUTO", "OMP_NUM_THREADS",
                        "MKL_NUM_THREADS")}
    env.update(TOYMECH_CACHE=str(tmp_path / "zoo"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "[toymech] torch CPU threads:" in done.stdout  # the choice is said, as the CLI says it


# Pages whose code lines another change owns (the generated results and the study pages).
WIDE_CODE_ALLOWED = ("index.md", "results.md", "studies/")
CODE_WIDTH = 88  # what a rendered code block shows without scrolling


def test_no_code_line_is_cut_off_in_the_rendered_site():
    """A fenced code block's line wider than the page's code box is cut off on screen (a
    comment that ends mid-word): every code line of the hand-written pages fits."""
    wide = []
    for page in sorted(DOCS.rglob("*.md")):
        name = page.relative_to(DOCS).as_posix()
        if name.startswith(WIDE_CODE_ALLOWED) or name in WIDE_CODE_ALLOWED:
            continue
        fence = None
        for line in page.read_text(encoding="utf-8").splitlines():
            opened = re.match(r"^(`{3,})(\S*)", line)
            if fence is None and opened:
                fence, directive = opened.group(1), opened.group(2).startswith("{")
            elif fence is not None and line.rstrip() == fence:
                fence = None
            elif fence is not None and not directive and len(line) > CODE_WIDTH:
                wide.append(f"{name}: {line}")
    assert wide == []


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
