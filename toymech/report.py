"""Execute notebooks with papermill and render them as self-contained, offline HTML reports.

    build_reports(["notebooks/01_induction_repeated_blocks.ipynb"], out_dir="reports", size="smoke")

writes, under ``out_dir``:

* ``executed/<name>.ipynb``: the executed notebook (papermill writes it even when a cell fails);
* ``<name>.html``: the report, rendered with the ``toymech_report`` nbconvert template shipped in
  ``toymech/templates`` (JupyterLab's look with the CDN script tags removed; the bundles come
  inline from the outputs, see ``toymech.display``);
* ``index.html`` (and ``index.json``, its data): every report with size (smoke/default/paper),
  device, seed, wall time, status, file size, date and the versions of torch / transformer-lens /
  toymech. Entries of earlier runs whose reports still exist are kept, so re-rendering one
  notebook keeps the others listed.

Each notebook ends by displaying its study's scorecard (``study.scorecard(...)``, a DataFrame: one
row per claim with the source's number, ours, seeds agreeing and the verdict). The report copies
that table to its top, under the title, and the index shows every report's scorecard with a count
of its verdicts ("2 reproduced, 1 mixed"); a run that failed before it shows "no scorecard". The
executed ``.ipynb`` is left exactly as papermill wrote it.

A failed notebook still gets a report, with the failing cell and its error at the top; its entry
has ``status == "failed"`` and the caller decides the exit code.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import html
import json
import logging
import math
import os
import re
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Sequence

from .report_scorecards import (SCORECARD_HEADING, find_scorecard, scorecard_counts,
                                scorecard_table_html)

__all__ = ["ReportEntry", "build_reports", "write_index", "external_loads", "TEMPLATE_NAME"]

TEMPLATE_NAME = "toymech_report"
_TEMPLATES_DIR = Path(__file__).parent / "templates"
_DEVICE_PATTERN = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_SIZE_PATTERN = re.compile(r"^[A-Za-z0-9_.-]+$")
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class ReportEntry:
    """One executed and rendered notebook (paths relative to the index's directory)."""

    notebook: str
    html: str
    executed: str
    status: str  # "ok" or "failed"
    size: str  # the notebooks' size parameter: smoke, default or paper
    device: str
    seed: int
    wall_s: float
    date: str
    versions: dict
    size_bytes: int = 0
    error: str | None = None  # "ValueError: ..." for a failed run
    parameters: dict = field(default_factory=dict)
    title: str = ""  # the notebook's first heading
    scorecard: dict | None = None  # {"columns": [...], "rows": [[...], ...]}, see find_scorecard

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _versions() -> dict:
    # importlib.metadata, not imports: the CLI process should not pay for importing torch.
    versions = {}
    for dist in ("torch", "transformer-lens", "toymech"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def _check_arguments(notebooks, size, device, seed, extra_parameters) -> list[Path]:
    if isinstance(size, bool) or not isinstance(size, str) or not _SIZE_PATTERN.match(size):
        raise ValueError(f"size={size!r} is not allowed; expected a name like 'smoke' or 'default'")
    if not isinstance(device, str) or not _DEVICE_PATTERN.match(device):
        raise ValueError(f"device={device!r} is not allowed; expected auto, cpu, mps, cuda or cuda:N")
    from .core import check_path_writable_dir, check_seed

    check_seed(seed)
    for name in extra_parameters:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"extra parameter name {name!r} is not a Python identifier")
        if name in ("size", "device", "seed"):
            raise ValueError(f"extra parameter {name!r} is set by its own argument; pass {name}=... instead")
        value = extra_parameters[name]
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name}={value!r} is not allowed: a finite number")
        if name == "cache_dir" and value is not None:  # the notebooks' model zoo
            check_path_writable_dir("cache_dir", value)
    if isinstance(notebooks, (str, Path)):
        notebooks = [notebooks]
    paths = [Path(nb) for nb in notebooks]
    if not paths:
        raise ValueError("notebooks is empty; expected at least one .ipynb path")
    stems: dict[str, Path] = {}
    for path in paths:
        if path.suffix != ".ipynb":
            raise ValueError(f"notebook {str(path)!r} is not allowed; expected a .ipynb file")
        if not path.is_file():
            raise ValueError(f"notebook {str(path)!r} does not exist")
        if path.stem in stems:
            raise ValueError(f"notebooks {str(stems[path.stem])!r} and {str(path)!r} would write the same report name")
        stems[path.stem] = path
    return paths


@contextlib.contextmanager
def _quiet_papermill():
    """Papermill's parser logs "Unable to parse line" for assignments with unusual comments (the
    values are still injected); its other warnings concern parameters, checked here already."""
    logger = logging.getLogger("papermill")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_parameters_cell(path: Path, names: Sequence[str]) -> None:
    """Every parameter must be assigned in the notebook's cell tagged ``parameters``.

    Papermill only warns about unknown parameters, and without a tagged cell it injects at the
    top where the notebook's own assignment silently overwrites the value.
    """
    import papermill

    with _quiet_papermill():
        defined = papermill.inspect_notebook(str(path))
    if any(name not in defined for name in names):
        # Fall back to the tagged cell's plain assignments (papermill skips some lines, see above).
        import nbformat

        cells = nbformat.read(str(path), as_version=4).cells
        source = "\n".join(c.source for c in cells if "parameters" in c.metadata.get("tags", []))
        defined = {**{n: None for n in re.findall(r"^(\w+)\s*(?::[^=]*)?=", source, re.M)}, **defined}
    missing = [name for name in names if name not in defined]
    if missing:
        where = ", ".join(defined) if defined else "no cell tagged 'parameters'"
        raise ValueError(
            f"notebook {str(path)!r} does not define parameter(s) {', '.join(missing)} in its cell "
            f"tagged 'parameters' (it defines: {where})"
        )


def _failure_from_exception(exc: BaseException) -> dict:
    # PapermillExecutionError carries the failing cell; other errors (dead kernel, timeout) do not.
    return {
        "execution_count": getattr(exc, "exec_count", None),
        "source": getattr(exc, "source", None),
        "ename": getattr(exc, "ename", type(exc).__name__),
        "evalue": getattr(exc, "evalue", str(exc)),
        "traceback": list(getattr(exc, "traceback", None) or []),
    }


def _prepare_for_html(nb, scorecard: bool = False) -> Any:
    """A copy of the executed notebook fit for static HTML; with ``scorecard``, a placeholder
    cell under the title where the template puts the scorecard (see ``_render_html``)."""
    import nbformat
    from papermill.execute import ERROR_MARKER_TAG

    nb = copy.deepcopy(nb)
    # The report's own banner replaces papermill's red "An Exception was encountered" first cell;
    # its anchor cell next to the failing cell stays, the banner links to it.
    nb.cells = [
        cell
        for cell in nb.cells
        if not (ERROR_MARKER_TAG in cell.metadata.get("tags", []) and "An Exception was encountered" in cell.source)
    ]
    # Widgets (tqdm progress bars) need a widget manager from a CDN; show their final state as
    # text instead. The output's own text/plain was captured at display time (a 0% bar), the
    # final values live in the notebook's saved widget state.
    widgets = nb.metadata.pop("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    states = widgets.get("state", {})
    for cell in nb.cells:
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None and _WIDGET_VIEW in data:
                text = _widget_text(data.pop(_WIDGET_VIEW).get("model_id", ""), states)
                if text:
                    data["text/plain"] = text
                if not data:
                    continue
            outputs.append(output)
        if "outputs" in cell:
            cell.outputs = outputs
    if scorecard:
        # An empty raw cell renders as nothing; the template's rawcell block puts the scorecard
        # there (HTML in the cell itself would go through nbconvert's sanitiser).
        at = 1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0
        nb.cells.insert(at, nbformat.v4.new_raw_cell("", metadata={"toymech": "scorecard"}))
    return nb


def _widget_text(model_id: str, states: dict, depth: int = 0) -> str:
    """Plain text of a saved widget: boxes join their children, a progress bar is drawn."""
    model = states.get(model_id)
    if model is None or depth > 10:
        return ""
    name, state = model.get("model_name", ""), model.get("state", {})
    if name in ("HBoxModel", "VBoxModel", "BoxModel"):
        children = [_widget_text(c.removeprefix("IPY_MODEL_"), states, depth + 1) for c in state.get("children", [])]
        return ("" if name == "HBoxModel" else "\n").join(c for c in children if c)
    if name in ("HTMLModel", "LabelModel", "TextModel"):
        return html.unescape(re.sub(r"<[^>]*>", "", str(state.get("value", ""))))
    if name in ("FloatProgressModel", "IntProgressModel"):
        low, high, value = state.get("min", 0), state.get("max", 100), state.get("value", 0)
        filled = min(10, max(0, round(10 * (value - low) / (high - low)))) if high > low else 10
        return "|" + "█" * filled + " " * (10 - filled) + "|"
    return ""


def _render_notes(nb) -> list[str]:
    """Problems a reader should know about that are not errors (shown under the run line)."""
    bare = sum(
        1
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if "application/vnd.plotly.v1+json" in output.get("data", {}) and "text/html" not in output.get("data", {})
    )
    if bare:
        return [f"{bare} plotly figure(s) carry no HTML and are missing from this page: "
                "call toymech.display.setup_notebook() before the first figure"]
    return []


def _render_html(nb, run: dict) -> str:
    from nbconvert import HTMLExporter

    card = run.get("scorecard")
    if card:
        run = {**run, "scorecard_heading": SCORECARD_HEADING, "scorecard_html": scorecard_table_html(card),
               "scorecard_counts": scorecard_counts(card)}
    exporter = HTMLExporter(template_name=TEMPLATE_NAME, extra_template_basedirs=[str(_TEMPLATES_DIR)])
    body, _ = exporter.from_notebook_node(_prepare_for_html(nb, bool(card)), resources={"toymech": run})
    return body


# The reproduction scorecard. Read back from the notebook's own HTML output rather than recomputed:
# the report shows exactly what this run displayed, and the notebooks stay as they are.

def _title(nb, fallback: str) -> str:
    """The first heading of the notebook's first markdown cell (papermill's error banner skipped)."""
    from papermill.execute import ERROR_MARKER_TAG

    for cell in nb.cells:
        if cell.cell_type != "markdown" or ERROR_MARKER_TAG in cell.metadata.get("tags", []):
            continue
        for line in cell.source.splitlines():
            match = re.match(r"\s{0,3}#{1,6}\s+(.*?)[\s#]*$", line)
            if match and match.group(1):
                return match.group(1)
        break
    return fallback


_TRUST_LOCK = threading.Lock()


def _trust(nb) -> None:
    # The executed notebook is our own output: sign it so JupyterLab runs its circuitsvis scripts
    # (executed notebooks are untrusted otherwise and the views stay blank).
    from nbformat.sign import NotebookNotary

    try:
        NotebookNotary().sign(nb)
    except (OSError, sqlite3.Error):
        pass  # a read-only Jupyter data dir only costs the trust mark, not the report


def build_reports(
    notebooks: Sequence[str | Path] | str | Path,
    out_dir: str | Path = "reports",
    size: str = "default",
    device: str = "auto",
    seed: int = 0,
    extra_parameters: dict | None = None,
    *,
    kernel_name: str = "python3",
    progress_bar: bool = False,
    trust: bool = True,
    on_start: Callable[[int, Path], None] | None = None,
    on_done: Callable[[int, ReportEntry], None] | None = None,
    jobs: int = 1,
) -> list[ReportEntry]:
    """Execute each notebook with papermill and render it to ``out_dir/<name>.html``.

    ``size`` (smoke, default or paper), ``device``, ``seed`` and ``extra_parameters`` are
    injected into each notebook's cell tagged ``parameters``; all notebooks and arguments are
    checked before any runs
    (``ValueError`` naming the problem). ``kernel_name="python3"`` runs the notebooks in this
    Python environment. ``on_start(i, path)`` / ``on_done(i, entry)`` report progress.
    Returns one entry per notebook, in order; a failed notebook has ``entry.status == "failed"``.

    ``jobs > 1`` executes that many notebooks at once, each kernel limited to
    ``cpu_count // jobs`` threads (OMP_NUM_THREADS, unless already set) so they share the cores
    instead of fighting over them.
    """
    import nbformat
    import papermill

    from .core import check_int, check_path_writable_dir

    jobs = check_int("jobs", jobs, 1, 256)
    check_path_writable_dir("out_dir", out_dir)  # before any notebook runs

    extra_parameters = dict(extra_parameters or {})
    # Absolute paths: papermill changes the process's working directory while a kernel starts,
    # which would move relative paths under other notebooks running at the same time.
    paths = [p.resolve() for p in _check_arguments(notebooks, size, device, seed, extra_parameters)]
    parameters = {"size": size, "device": device, "seed": seed, **extra_parameters}
    for path in paths:
        _check_parameters_cell(path, list(parameters))

    out = Path(out_dir).resolve()
    (out / "executed").mkdir(parents=True, exist_ok=True)
    versions = _versions()

    def run_one(index: int, path: Path) -> ReportEntry:
        if on_start:
            on_start(index, path)
        executed = out / "executed" / path.name
        report = out / f"{path.stem}.html"
        date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        failure = None
        executed.unlink(missing_ok=True)  # never report a previous run's output as this one's
        start = time.perf_counter()
        try:
            papermill.execute_notebook(
                str(path),
                str(executed),
                parameters=parameters,
                kernel_name=kernel_name,
                # In parallel the kernels start in this process's folder instead: papermill's
                # chdir is process-wide, so concurrent ones would race.
                cwd=str(path.parent) if jobs == 1 else None,
                progress_bar=progress_bar,
                log_output=False,
                # ipykernel warns on every start that TCP is unencrypted (it is local);
                # its errors still show.
                extra_arguments=["--IPKernelApp.log_level=ERROR"] if kernel_name.startswith("python") else [],
            )
        # Broad on purpose: whatever stopped the notebook (a cell's exception, a dead kernel, a
        # timeout) must end up in its report and the index, not abort the other notebooks.
        except Exception as exc:  # noqa: BLE001
            failure = _failure_from_exception(exc)
        wall_s = time.perf_counter() - start

        # Papermill writes the output notebook even on failure; if the kernel never started
        # there may be none, and the report then shows the input notebook under the error.
        nb = nbformat.read(executed if executed.is_file() else path, as_version=4)
        if trust and executed.is_file():
            with _TRUST_LOCK:  # one writer at a time on Jupyter's signature database
                _trust(nb)
        run = {
            "notebook": path.name,
            "status": "failed" if failure else "ok",
            "size": size,
            "device": device,
            "seed": seed,
            "wall_s": wall_s,
            "date": date,
            "versions": versions,
            "failure": failure,
            "notes": _render_notes(nb),
            # Only from this run's output: an input notebook stored with outputs must not pass
            # off old numbers as this run's.
            "scorecard": find_scorecard(nb) if executed.is_file() else None,
        }
        report.write_text(_render_html(nb, run), encoding="utf-8")
        entry = ReportEntry(
            notebook=str(path),
            html=report.name,
            executed=f"executed/{executed.name}",
            status=run["status"],
            size=size,
            device=device,
            seed=seed,
            wall_s=round(wall_s, 2),
            date=date,
            versions=versions,
            size_bytes=report.stat().st_size,
            error=f"{failure['ename']}: {failure['evalue']}" if failure else None,
            parameters=extra_parameters,
            title=_title(nb, path.stem),
            scorecard=run["scorecard"],
        )
        if on_done:
            on_done(index, entry)
        return entry

    with _quiet_papermill(), _kernel_threads(jobs):
        if jobs == 1:
            entries = [run_one(i, p) for i, p in enumerate(paths)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            # Each worker thread only waits on its own kernel process.
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                entries = list(pool.map(run_one, range(len(paths)), paths))
    write_index(out, entries)
    return entries


@contextlib.contextmanager
def _kernel_threads(jobs: int):
    """Give each kernel its share of the free cores (kernels inherit the environment:
    ``TOYMECH_THREADS`` for toymech's thread policy, ``OMP_NUM_THREADS`` for torch itself):
    oversubscribed torch threads slow everyone down many times over. The share stays automatic
    (``TOYMECH_THREADS_AUTO``): a kernel whose siblings have finished takes the cores they
    left (``devices.rebalance``). A user's own setting of either variable wins."""
    from toymech.devices import choose_threads

    if "OMP_NUM_THREADS" in os.environ or "TOYMECH_THREADS" in os.environ:
        yield
        return
    n = str(choose_threads(None, jobs))
    os.environ["OMP_NUM_THREADS"] = os.environ["TOYMECH_THREADS"] = n
    os.environ["TOYMECH_THREADS_AUTO"] = "1"  # a share, not a user's number: it may follow the load
    try:
        yield
    finally:
        for name in ("OMP_NUM_THREADS", "TOYMECH_THREADS", "TOYMECH_THREADS_AUTO"):
            os.environ.pop(name, None)


def _load_previous(out: Path) -> list[ReportEntry]:
    try:
        rows = json.loads((out / "index.json").read_text(encoding="utf-8"))
        return [ReportEntry(**row) for row in rows]
    except (OSError, ValueError, TypeError):
        return []  # no index yet, or one written by an incompatible version: start afresh


def write_index(out_dir: str | Path, entries: Sequence[ReportEntry]) -> Path:
    """Write ``index.html`` + ``index.json``: ``entries`` plus earlier ones whose HTML still exists."""
    out = Path(out_dir)
    fresh = {entry.html for entry in entries}
    kept = [e for e in _load_previous(out) if e.html not in fresh and (out / e.html).is_file()]
    rows = sorted(kept + list(entries), key=lambda e: e.html)
    (out / "index.json").write_text(json.dumps([asdict(e) for e in rows], indent=1), encoding="utf-8")

    import jinja2
    import markupsafe

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES_DIR), autoescape=True)
    view = [
        {**asdict(e), "name": Path(e.notebook).stem,
         "extra": ", ".join(f"{k}={v!r}" for k, v in e.parameters.items()),
         # Built (and escaped) by scorecard_table_html, so the template must not escape it again.
         "scorecard_html": markupsafe.Markup(scorecard_table_html(e.scorecard)) if e.scorecard else None,
         "scorecard_counts": scorecard_counts(e.scorecard) if e.scorecard else ""}
        for e in rows
    ]
    page = env.get_template("reports_index.html.j2").render(rows=view, n_failed=sum(not e.ok for e in rows))
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


# Loads the browser would make by itself: tag attributes (links <a href> are navigation, not
# loads), CSS url()/@import, and ES module imports. Vendored bundles are cut out first because
# they contain URL string literals that are never fetched; the browser test covers them.
_LOAD_PATTERNS = [
    re.compile(r"<(?!a\b)[a-zA-Z][^>]*?\s(?:src|href|data)\s*=\s*[\"']?([^\"'\s>]*)", re.I),
    re.compile(r"url\(\s*[\"']?([^\"')]*)", re.I),
    re.compile(r"@import\s+[\"']([^\"']*)", re.I),
    re.compile(r"(?<![@\w.])import\s*\(\s*[\"'`]([^\"'`]*)"),
    re.compile(r"(?<![@\w.])import\s+(?:[\w{}\s,*]+\s+from\s+)?[\"']([^\"']+)[\"']"),
]


def _bundle_sources() -> list[str]:
    from plotly.offline import get_plotlyjs

    from toymech.display import _circuitsvis_bundle_script

    bundle = _circuitsvis_bundle_script()
    return [get_plotlyjs(), bundle[bundle.index(">") + 1 : bundle.rindex("</script>")]]


def external_loads(page: str) -> list[str]:
    """URLs that ``page`` (an HTML document) would load from outside itself.

    ``data:`` URIs and ``#fragment`` references are self-contained; anything else (http(s),
    protocol-relative, relative file paths, empty ``src=""``) is returned.
    """
    for source in _bundle_sources():
        page = page.replace(source, "")
    found = []
    for pattern in _LOAD_PATTERNS:
        for match in pattern.finditer(page):
            url = match.group(1).strip()
            if url.startswith(("data:", "#")) or url == "about:blank":
                continue
            found.append(url)
    return found
