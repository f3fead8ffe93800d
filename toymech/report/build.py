"""``build_reports``: execute notebooks with papermill, render each as a reader's page."""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core import check_bool, check_int, source_commit
from ..devices import choose_threads, free_cores, resolve_device
from ..display import duration_text
from ..models.reference import machine_record, reference_step_seconds
from ..studies import protocol
from ..training import live as live_status
from .checks import (
    SEEDS_PARAMETERS,
    canonical_variant,
    check_arguments,
    check_out_dir,
    check_study_parameters,
    folder_lock,
    parameters_cell,
    quiet_papermill,
    report_name,
    study_n_seeds,
    study_of,
    with_seeds,
)
from .costs import CostTable, crowding
from .engine import ENGINE, kernel_manager, quiet_kernels_on_interrupt
from .glossary import glossary
from .index import TEMPLATES_DIR, ReportEntry, versions, write_index
from .progress import section_at
from .reader_page import (
    bare_figures,
    cell_durations,
    facts_of,
    finding_lines,
    prepare,
    time_table,
    title_of,
)
from .scorecards import find_scorecard, scorecard_counts, scorecard_heading, scorecard_table_html
from .staging import begin, say_unfinished, swap_in

TEMPLATE_NAME = "toymech_report"
# papermill waits 60 s for a kernel by default; a slow, busy machine can take longer to start one
KERNEL_START_S = 600
LIVE_FOLDER = ".live"  # <out>/.live/<notebook>/: what its training processes are doing now
_NOT_IN_HEADER = ("size", "device", "seed", *SEEDS_PARAMETERS, "cache_dir")  # cache_dir: a local path


def _failure_from_exception(exc: BaseException) -> dict:
    # PapermillExecutionError carries the failing cell; other errors (dead kernel, timeout) do not.
    return {
        "execution_count": getattr(exc, "exec_count", None),
        "source": getattr(exc, "source", None),
        "ename": getattr(exc, "ename", type(exc).__name__),
        "evalue": getattr(exc, "evalue", str(exc)),
        "traceback": list(getattr(exc, "traceback", None) or []),
    }


def _seeds_text(facts: dict, given: Any) -> str:
    seeds = facts.get("seeds")
    if isinstance(seeds, list) and seeds:
        return f"{len(seeds)} ({', '.join(str(s) for s in seeds)})"
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        return str(seeds)
    return "" if given in (None, "", "None") else str(given)


def _zoo_text(facts: dict) -> str:

    zoo = facts.get("zoo")
    if not isinstance(zoo, dict):
        return "not recorded"
    parts = [f"{zoo[k]} {k}" for k in ("trained", "loaded") if k in zoo]
    if isinstance(zoo.get("train_seconds"), (int, float)):
        parts.append(f"{duration_text(zoo['train_seconds'])} of training")
    return ", ".join(parts) or "not recorded"


def render_html(nb, run: dict, code: bool = False) -> str:
    """The page of one executed notebook (``run``: the facts the template shows)."""
    from nbconvert import HTMLExporter


    card = run.get("scorecard")
    page_nb, info = prepare(nb, code=code, scorecard=card)
    wall = run.get("wall_s") or 0.0
    rows = [{**r, "text": duration_text(r["seconds"]), "share": (100 * r["seconds"] / wall) if wall else None}
            for r in run.get("time_table", [])]
    notes = list(run.get("notes", []))
    if info["hidden"]:
        notes.append(f"{info['hidden']} output(s) left out for readers (logs, warnings, progress bars, "
                     "bare values); toymech report --code shows them")
    run = {**run, "notes": notes, "time_rows": rows, "wall_text": duration_text(wall),
           "scorecard_heading": scorecard_heading(run.get("size", "")),
           "scorecard_html": scorecard_table_html(card) if card else "",
           "scorecard_counts": scorecard_counts(card) if card else ""}
    exporter = HTMLExporter(template_name=TEMPLATE_NAME, extra_template_basedirs=[str(TEMPLATES_DIR)],
                            exclude_input_prompt=not code, exclude_output_prompt=not code)
    body, _ = exporter.from_notebook_node(page_nb, resources={"toymech": run})
    return body


_TRUST_LOCK = threading.Lock()


def _options_of(path: Path, nb) -> tuple[str, ...]:
    """The optional comparisons of the study the notebook shows (none for other notebooks)."""
    name = study_of(path, nb)
    return tuple(protocol.study(name).optional_run_names) if name else ()


def _trust(nb) -> None:
    # The executed notebook is our own output: sign it so JupyterLab runs its circuitsvis scripts
    # (executed notebooks are untrusted otherwise and the views stay blank).
    from nbformat.sign import NotebookNotary

    try:
        NotebookNotary().sign(nb)
    except (OSError, sqlite3.Error):
        pass  # a read-only Jupyter data dir only costs the trust mark, not the report


@dataclass(frozen=True)
class _Request:
    """One ``build_reports`` call, checked: what every notebook of it shares."""

    out: Path
    paths: list[Path]
    names: dict[Path, str]  # each notebook's report name (``report_name``: a variant's its own)
    parameters: dict[Path, dict]  # what each notebook gets injected
    defaults: dict[Path, dict[str, str]]  # each notebook's own parameters cell (source text)
    size: str
    device: str
    seed: int
    n_seeds: int | None
    extra_parameters: dict
    code: bool
    kernel_name: str
    trust: bool
    jobs: int
    command: str
    on_start: Callable[[int, Path], None] | None
    on_done: Callable[[int, ReportEntry], None] | None
    progress: Any


@dataclass(frozen=True)
class _Machine:
    """This machine now (read under the folder's lock): versions, speed, cores, cost table."""

    versions: dict
    resolved: str  # the device as resolved here
    costs: CostTable
    cost_key: str
    here: float  # this machine's speed now, in reference steps (models.reference)
    record: dict  # machine_record, for the results record
    commit: str
    at_once: int  # notebooks that run side by side
    cores: int
    crowded: Any

    @classmethod
    def now(cls, req: _Request) -> _Machine:
        # earlier runs' cell times (shipped ones too) are scaled by this machine's speed, so an
        # estimate made on a faster machine still holds here
        here = reference_step_seconds()
        at_once, cores = min(req.jobs, len(req.paths)), free_cores()
        return cls(versions(), str(resolve_device(req.device)), CostTable(req.out),
                   CostTable.key(req.size, req.n_seeds, req.extra_parameters.get("variant")), here, machine_record(here),
                   source_commit(), at_once, cores, crowding(at_once, cores))


def build_reports(
    notebooks: Sequence[str | Path] | str | Path,
    out_dir: str | Path = "reports",
    size: str = "default",
    device: str = "auto",
    seed: int = 0,
    extra_parameters: dict | None = None,
    *,
    n_seeds: int | None = None,
    code: bool = False,
    kernel_name: str = "python3",
    trust: bool = True,
    on_start: Callable[[int, Path], None] | None = None,
    on_done: Callable[[int, ReportEntry], None] | None = None,
    progress=None,
    jobs: int = 1,
    command: str = "",
) -> list[ReportEntry]:
    """Execute each notebook with papermill and render it to ``out_dir/<name>.html``
    (``<name>``: the notebook's stem; a variant's report adds its knobs, ``report_name``, so it
    never replaces the plain report of the same notebook).

    The run's parameters are injected into each notebook's cell tagged ``parameters``; all
    notebooks and arguments are checked before any runs (``ValueError`` naming the problem).
    Returns one entry per notebook, in order; a failed notebook has
    ``entry.status == "failed"``.

    ``notebooks``: a notebook path or a list of them. ``out_dir``: the reports' folder (its
    ``index.html`` lists them). ``size``: smoke, default or paper. ``device``: where models
    train (``"auto"``: CUDA, else MPS, else CPU). ``seed``: the first seed. ``extra_parameters``:
    any other notebook parameter, e.g. ``{"variant": {"block_len": "4-8"}}``. ``n_seeds``: how
    many seeds the claims run over, an integer >= 1, injected as the notebook's ``n_seeds``
    parameter (None: the notebook's own default). ``code``: keep the code in the pages (for
    authors); by default they are written for readers (``toymech.report.reader_page``).
    ``kernel_name``: the Jupyter kernel (``"python3"``: this Python environment). ``trust``:
    sign the executed notebooks so JupyterLab runs their views' scripts. ``on_start``: called
    as ``on_start(i, path)`` when notebook i starts. ``on_done``: called as
    ``on_done(i, entry)`` when it is done. ``progress``: a ``LiveProgress``, or any object with
    its ``start(i, previous, live_dir=...)``, ``cell``, ``done`` and ``close``, that hears every
    cell as it starts. ``jobs``: notebooks executed at once, each kernel limited to its share
    of the free cores (see ``_kernel_threads``) so they share the cores instead of fighting over
    them. ``command``: the command line that asked for the run, shown on each page.

    Example: ``build_reports(["notebooks/01_induction_repeated_blocks.ipynb"], "reports",
    size="smoke")``.
    """
    jobs = check_int("jobs", jobs, 1, 256)
    code = check_bool("code", code)
    extra_parameters = dict(extra_parameters or {})
    # Absolute paths: papermill changes the process's working directory while a kernel starts,
    # which would move relative paths under other notebooks running at the same time.
    paths = [p.resolve() for p in check_arguments(notebooks, size, device, seed, n_seeds, extra_parameters)]
    out = check_out_dir("out_dir", out_dir, paths).resolve()  # before any notebook runs

    def parameters() -> tuple[dict, dict]:
        common = {"size": size, "device": device, "seed": seed, **extra_parameters}
        defaults = {path: parameters_cell(path, list(common)) for path in paths}
        return defaults, {path: with_seeds(path, common, defaults[path], n_seeds)
                          for path in paths}

    defaults, per_notebook = parameters()
    for path in paths:
        check_study_parameters(path, per_notebook[path])
    if "variant" in extra_parameters:  # converted once: the report's name, cost key and record
        variant = canonical_variant(paths, size, extra_parameters.pop("variant"))
        extra_parameters.update({"variant": variant} if variant else {})  # none: the plain run
        defaults, per_notebook = parameters()
    # a variant's report has a name of its own: it never replaces the plain one
    names = {path: report_name(path, size, extra_parameters.get("variant")) for path in paths}
    check_out_dir("out_dir", out_dir, paths, [names[p] for p in paths])
    req = _Request(out, paths, names, per_notebook, defaults, size, device, seed, n_seeds,
                   extra_parameters, code, kernel_name, trust, jobs, command, on_start, on_done,
                   progress)

    with folder_lock(out):  # one run at a time writes into out (a second one waits)
        (out / "executed").mkdir(parents=True, exist_ok=True)
        say_unfinished(out, list(names.values()))
        machine = _Machine.now(req)
        entries = _run_all(req, machine)
        write_index(out, entries)
        return entries


def _run_all(req: _Request, machine: _Machine) -> list[ReportEntry]:
    """Every notebook, one after another or ``req.jobs`` at once; the entries in order."""
    def run_one(index: int, path: Path) -> ReportEntry:
        return _run_one(req, machine, index, path)

    try:
        with quiet_papermill(), _kernel_threads(machine.at_once), quiet_kernels_on_interrupt():
            if req.jobs == 1:
                return [run_one(i, p) for i, p in enumerate(req.paths)]
            from concurrent.futures import ThreadPoolExecutor

            # Each worker thread only waits on its own kernel process.
            with ThreadPoolExecutor(max_workers=req.jobs) as pool:
                return list(pool.map(run_one, range(len(req.paths)), req.paths))
    finally:
        if req.progress is not None:
            req.progress.close()
        with contextlib.suppress(OSError):
            (req.out / LIVE_FOLDER).rmdir()  # only if empty (no other run writing into it)


def _run_one(req: _Request, machine: _Machine, index: int, path: Path) -> ReportEntry:
    """Execute one notebook, render its page and return its entry."""
    import nbformat

    # what this notebook's training processes are doing (toymech.training.live)
    live_dir = req.out / LIVE_FOLDER / req.names[path]
    shutil.rmtree(live_dir, ignore_errors=True)
    _announce(req, machine, index, path, live_dir)
    # Written beside the last run's files and swapped in once finished (``_swap_in``): a run
    # killed midway leaves the last finished one served, never a half-run notebook under its row.
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    staging = begin(req.out, req.names[path], date)  # never a previous run's output as this one's
    executed = staging / f"{req.names[path]}.ipynb"
    wall_s, failure = _execute(req, index, path, executed, live_dir)

    # Papermill writes the output notebook even on failure; if the kernel never started
    # there may be none, and the report then shows the input notebook under the error.
    ran = executed.is_file()
    nb = nbformat.read(executed if ran else path, as_version=4)
    if req.trust and ran:
        with _TRUST_LOCK:  # one writer at a time on Jupyter's signature database
            _trust(nb)
    if failure is None:
        machine.costs.record(path.stem, machine.cost_key, cell_durations(nb), wall_s, machine.here,
                             machine.at_once, machine.cores)
    facts = facts_of(nb) if ran else {}
    given = {**req.defaults[path], **{k: _shown(k, v) for k, v in req.parameters[path].items()}}
    entry = _entry(req, machine, path, nb, ran, facts, given, wall_s, failure, date)
    page = staging / entry.html
    page.write_text(render_html(nb, _page_facts(entry, nb, facts, given, wall_s, failure), req.code),
                    encoding="utf-8")
    entry = replace(entry, size_bytes=page.stat().st_size)
    swap_in(req.out, staging, executed if ran else None, page, entry)
    shutil.rmtree(live_dir, ignore_errors=True)
    if req.progress is not None:
        req.progress.done(index, done_line(index, len(req.paths), entry, req.out))
    if req.on_done:
        req.on_done(index, entry)
    return entry


def _announce(req: _Request, machine: _Machine, index: int, path: Path, live_dir: Path) -> None:
    """Tell ``on_start`` and ``progress`` that a notebook starts (with its estimated cost)."""
    if req.on_start:
        req.on_start(index, path)
    if req.progress is not None:
        own = study_n_seeds(path, req.size) if req.n_seeds is not None else None
        from_size = (CostTable.key(req.size, None), req.n_seeds / own) if own else None
        if from_size is None and req.extra_parameters.get("variant"):  # the size's own run
            from_size = (CostTable.key(req.size, req.n_seeds), 1.0)
        req.progress.start(index, machine.costs.get(path.stem, machine.cost_key, machine.here,
                                                    machine.crowded, from_size),
                           live_dir=live_dir)


def _execute(req: _Request, index: int, path: Path, executed: Path, live_dir: Path
             ) -> tuple[float, dict | None]:
    """Run the notebook with papermill into ``executed``: (wall seconds, failure or None)."""
    import papermill

    def on_cell(cell_index: int, cells) -> None:
        # ``cells``: the executed notebook's (with papermill's injected-parameters cell), the
        # ones ``cell_index`` counts
        if req.progress is not None:
            req.progress.cell(index, cell_index, len(cells), section_at(cells, cell_index))

    failure = None
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(path), str(executed), parameters=req.parameters[path], kernel_name=req.kernel_name,
            # In parallel the kernels start in this process's folder instead: papermill's
            # chdir is process-wide, so concurrent ones would race.
            cwd=str(path.parent) if req.jobs == 1 else None,
            progress_bar=False, log_output=False, engine_name=ENGINE, toymech_on_cell=on_cell,
            start_timeout=KERNEL_START_S,
            kernel_manager_class=kernel_manager({live_status.ENV: str(live_dir)}),
            # ipykernel warns on every start that TCP is unencrypted (it is local);
            # its errors still show.
            extra_arguments=(["--IPKernelApp.log_level=ERROR"]
                             if req.kernel_name.startswith("python") else []),
        )
    # Broad on purpose: whatever stopped the notebook (a cell's exception, a dead kernel, a
    # timeout) must end up in its report and the index, not abort the other notebooks.
    except Exception as exc:
        failure = _failure_from_exception(exc)
    return time.perf_counter() - start, failure


def _shown(name: str, value) -> str:
    """A parameter as the page's header shows it: a variant's knobs as ``block_len=4-8, ...``,
    an absolute path as ``<path>/<its file name>`` (a page shows nothing of the machine that
    wrote it), anything else as Python writes it."""
    if name == "variant" and isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, (str, Path)) and str(value) and (
            Path(value).is_absolute() or str(value).startswith("~")):
        return repr(f"<path>/{Path(value).name}")
    return repr(value)


def _entry(req: _Request, machine: _Machine, path: Path, nb, ran: bool, facts: dict, given: dict,
           wall_s: float, failure: dict | None, date: str) -> ReportEntry:
    """The notebook's index entry (``size_bytes`` is set once its page is written)."""
    seeds_given = next((given[n] for n in SEEDS_PARAMETERS if n in given), None)
    return ReportEntry(
        notebook=str(path), html=f"{req.names[path]}.html",
        executed=f"executed/{req.names[path]}.ipynb",
        status="failed" if failure else "ok", size=req.size, device=req.device, seed=req.seed,
        wall_s=round(wall_s, 2), date=date, versions=machine.versions,
        error=f"{failure['ename']}: {failure['evalue']}" if failure else None,
        parameters=req.extra_parameters, title=title_of(nb, path.stem),
        # Only from this run's output: an input notebook stored with outputs must not pass
        # off old numbers as this run's.
        scorecard=find_scorecard(nb) if ran else None,
        seeds=_seeds_text(facts, seeds_given), device_used=str(facts.get("device") or machine.resolved),
        code=req.code, commit=machine.commit, machine=machine.record, command=req.command,
        finding=finding_lines(nb, most=3) if ran else [],  # the scaled lead and two findings
    )


def _page_facts(entry: ReportEntry, nb, facts: dict, given: dict, wall_s: float,
                failure: dict | None) -> dict:
    """What the page's header and notes show (``render_html``'s ``run``): the entry's facts
    under the template's names, and what only the page shows."""
    header = [(k, v) for k, v in given.items() if k not in _NOT_IN_HEADER]
    path = Path(entry.notebook)
    return {
        "notebook": path.name, "title": entry.title, "status": entry.status, "size": entry.size,
        "seed": entry.seed, "seeds": entry.seeds, "device": entry.device_used,
        "device_requested": entry.device, "wall_s": wall_s, "date": entry.date,
        "versions": entry.versions, "failure": failure, "parameters": header,
        "notes": ([f"{n} plotly figure(s) carry no HTML and are missing from this page: call "
                   "toymech.display.setup_notebook() before the first figure"]
                  if (n := bare_figures(nb)) else []),
        "time_table": time_table(nb, wall_s), "zoo": _zoo_text(facts), "scorecard": entry.scorecard,
        "glossary": glossary(entry.size, entry.seed, entry.seeds, header, _options_of(path, nb)),
    }


def done_line(index: int, total: int, entry: ReportEntry, out: Path) -> str:
    """The line that says a notebook is done: status, time, page, size and the error's first line."""
    tail = ": " + " ".join(entry.error.split())[:300] if entry.error else ""  # one line
    return (f"[{index + 1}/{total}] {Path(entry.notebook).stem}: {entry.status} in {entry.wall_s:.1f} s "
            f"-> {out / entry.html} ({entry.size_bytes / 1e6:.1f} MB){tail}")


@contextlib.contextmanager
def _kernel_threads(jobs: int):
    """Give each kernel its share of the free cores (kernels inherit the environment:
    ``TOYMECH_THREADS`` for toymech's thread policy, ``OMP_NUM_THREADS`` for torch itself):
    oversubscribed torch threads slow everyone down many times over. The share stays automatic
    (``TOYMECH_THREADS_AUTO``): a kernel whose siblings have finished takes the cores they
    left (``devices.rebalance``). A user's own setting of either variable wins."""

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
