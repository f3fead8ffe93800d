"""Live progress of ``toymech report``, and the cost table its estimates come from.

* ``ENGINE``: a papermill engine (nbclient's, unchanged) that also calls ``on_cell(cell_index,
  cells)`` as each cell starts, with the cells being executed (papermill's injected-parameters
  cell included, so the index and the cells agree), so the caller knows where every kernel is.
* ``CostTable``: ``costs.json`` beside the reports, the per-cell seconds of the last successful
  run of each notebook at each size (and seed count). The next run estimates from it; before
  any run of its own, from the cost table shipped in the package (``toymech/data/
  report_costs.json``: the `default` run measured on a 2-core CPU with an empty zoo, the
  figures of ``benchmarks/README.md``). Each row carries the reference step's seconds of the
  machine that measured it (``toymech.models.reference``); ``get`` scales a row to this
  machine's reference step, so the estimate follows a slower or busier machine.
* ``LiveProgress``: one line per notebook (the cell it is at out of how many, its section, the
  time elapsed, the estimate left and, while the notebook trains, which model and at which step:
  ``toymech.training.live``, read from the folder its kernel was given by ``kernel_manager``). On
  a terminal the lines are redrawn in place every second; elsewhere (CI logs, pipes) a line is
  printed when a notebook starts, enters a new section, starts training another model and ends.
* ``kernel_manager`` / ``quiet_kernels_on_interrupt``: each kernel's stderr passed on to ours,
  until the user interrupts the report (Ctrl-C), after which a kernel shut down mid-reply
  prints no traceback: the command ends on one line.
* Estimates scale by the machine's speed (the reference step) and by how crowded its cores are:
  a row records the notebooks that ran at once and the free cores, and an estimate made with
  three notebooks on two cores doubles when the same three share one core.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence, TextIO

from papermill.engines import NBClientEngine, papermill_engines

from ..display import duration_text
from ..files import replace_file
from ..models.reference import SHIPPED_STEPS_PER_S
from ..training import live as live_status
from .reader import SETUP_SECTION, heading

ENGINE = "toymech-progress"
SHIPPED_COSTS = "report_costs.json"  # in toymech.data
LOG_EVERY_S = 20.0  # in a log, a training notebook's line at least this often (its step moves): with
# the 1 s tick and a busy machine the longest silence stays well under 30 s


class _ProgressEngine(NBClientEngine):
    """nbclient's engine; with ``toymech_on_cell``, that callback hears each cell start."""

    @classmethod
    def execute_managed_notebook(cls, nb_man, kernel_name, toymech_on_cell=None, **kwargs):
        if toymech_on_cell is not None:
            started = nb_man.cell_start

            def cell_start(cell, cell_index=None, **kw):
                started(cell, cell_index, **kw)
                try:
                    toymech_on_cell(cell_index, nb_man.nb.cells)
                except Exception:  # noqa: BLE001  (a display problem must not stop the notebook)
                    pass

            nb_man.cell_start = cell_start
        return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)


papermill_engines.register(ENGINE, _ProgressEngine)


# Set once the user interrupts a report (Ctrl-C): the kernels' stderr is no longer passed on,
# so the interrupted run ends on one line, not on the traceback of a kernel shut down mid-reply.
KERNELS_QUIET = threading.Event()


def _pass_on(stream) -> None:
    """Copy a kernel's stderr to this process's (file descriptor 2, where it went before) until
    it closes; dropped once ``KERNELS_QUIET`` is set."""
    with stream:
        for line in iter(stream.readline, b""):
            if not KERNELS_QUIET.is_set():
                try:
                    os.write(2, line)
                except OSError:
                    pass


@contextlib.contextmanager
def quiet_kernels_on_interrupt():
    """Ctrl-C stops the report with one line (``cli``): from the interrupt on, the kernels'
    stderr (a kernel shut down mid-reply prints a traceback) is not passed on."""
    KERNELS_QUIET.clear()
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield  # (SIGINT ignored, as in a background job: left so)
        return

    def interrupted(signum, frame):
        KERNELS_QUIET.set()
        if callable(previous):
            previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def kernel_manager(env: dict[str, str]):
    """A kernel manager class (nbclient's default, ``AsyncKernelManager``) whose kernel starts
    with ``env`` added to this process's environment: how one notebook's kernel, among several
    started by this process at once, gets a value of its own (its ``$TOYMECH_LIVE`` folder).
    Its stderr is passed on through ``_pass_on`` (silenced after an interrupt)."""
    import subprocess

    from jupyter_client import AsyncKernelManager

    extra = {str(k): str(v) for k, v in env.items()}

    class _KernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            kw["env"] = {**os.environ, **(kw.get("env") or {}), **extra}
            kw["stderr"] = subprocess.PIPE
            started = await super().start_kernel(**kw)
            process = getattr(self.provisioner, "process", None)
            if getattr(process, "stderr", None) is not None:
                threading.Thread(target=_pass_on, args=(process.stderr,), daemon=True,
                                 name="toymech-kernel-stderr").start()
            return started

    return _KernelManager


def section_at(cells: Sequence, index: int) -> str:
    """The heading (level 2 or deeper) above cell ``index``: the section it belongs to."""
    for cell in reversed(cells[: index + 1]):
        found = heading(cell)
        if found and found[0] >= 2:
            return found[1]
    return SETUP_SECTION


class CostTable:
    """``<out>/costs.json``: {notebook stem: {run key: {"cells": [s, ...], "total_s": s}}}."""

    def __init__(self, out: Path):
        self.path = Path(out) / "costs.json"
        self._lock = threading.Lock()

    @staticmethod
    def key(size: str, n_seeds: int | None, variant: dict | None = None) -> str:
        # "seeds=" in the stored key: cost tables already written keep their rows; a variant's
        # knobs are part of its key (its runs cost what they cost, not the size's)
        knobs = "".join(f",{k}={json.dumps(v, sort_keys=True)}" for k, v in
                        sorted((variant or {}).items()))
        return f"size={size}" + (f",seeds={n_seeds}" if n_seeds is not None else "") + knobs

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def get(self, stem: str, key: str, reference_step_s: float | None = None,
            crowding: float | None = None, seeds_from: tuple[str, float] | None = None
            ) -> dict | None:
        """This folder's last run of ``stem`` at ``key``; else the shipped measurement (its row
        carries ``"shipped": True``); else None. With ``reference_step_s`` (this machine's, now),
        the row's times are scaled from its own machine's reference step to this one
        (``"scale"``: the factor; a shipped row's machine ran ``SHIPPED_STEPS_PER_S``); with
        ``crowding`` (``crowding(jobs, cores)`` now), also by how much more crowded the cores
        are than when the row was measured. ``seeds_from`` = (the size's own key, seeds asked /
        the size's own seeds): with no row at ``key`` (another seed count), the size's own row
        with its times multiplied by that ratio (``"seeds_ratio"``), since training dominates
        and grows with the seeds."""
        row = self._row(stem, key)
        if row is None and seeds_from is not None:
            base_key, ratio = seeds_from
            row = self._row(stem, base_key)
            if row is not None:
                row = {**row, "cells": [None if c is None else c * ratio for c in row["cells"]],
                       "total_s": row["total_s"] * ratio, "seeds_ratio": ratio}
        if row is None or (reference_step_s is None and crowding is None):
            return row
        theirs = row.get("reference_step_s") or (1.0 / SHIPPED_STEPS_PER_S
                                                 if row.get("shipped") else None)
        return scaled({**row, "reference_step_s": theirs}, reference_step_s, crowding)

    def _row(self, stem: str, key: str) -> dict | None:
        """This folder's row, else the shipped one (marked ``"shipped"``), else None."""
        row = self._read().get(stem, {}).get(key)
        if _valid(row):
            return row
        row = shipped_costs().get(stem, {}).get(key)
        return {**row, "shipped": True} if _valid(row) else None

    def record(self, stem: str, key: str, cells: Sequence[float | None], total_s: float,
               reference_step_s: float | None = None, jobs: int | None = None,
               cores: int | None = None) -> None:
        with self._lock:  # notebooks finish in parallel threads
            data = self._read()
            data.setdefault(stem, {})[key] = {"cells": [None if c is None else round(c, 3) for c in cells],
                                              "total_s": round(total_s, 2)}
            if reference_step_s:
                data[stem][key]["reference_step_s"] = round(reference_step_s, 6)
            if jobs and cores:
                data[stem][key].update(jobs=int(jobs), cores=int(cores))
            replace_file(self.path, json.dumps(data, indent=1))


def crowding(jobs: int | None, cores: int | None) -> float | None:
    """How many notebooks share each core (at least 1: a notebook alone on several cores is
    not faster than the cost it recorded there); None when either is unknown."""
    if not jobs or not cores:
        return None
    return max(1.0, jobs / cores)


def scaled(row: dict, reference_step_s: float | None, crowding_now: float | None = None) -> dict:
    """``row`` with its cell times and total multiplied by this machine's reference step over
    the row's and by ``crowding_now`` over the row's crowding (each factor 1 when either side of
    it is unknown); ``"scale"`` is the product used."""
    theirs = row.get("reference_step_s")
    k = 1.0
    if reference_step_s and isinstance(theirs, (int, float)) and theirs > 0:
        k = reference_step_s / theirs
    then = crowding(row.get("jobs"), row.get("cores"))
    if crowding_now and then:
        k *= crowding_now / then
    if k == 1.0:
        return {**row, "scale": 1.0}
    return {**row, "cells": [None if c is None else c * k for c in row["cells"]],
            "total_s": row["total_s"] * k, "scale": k}


def _valid(row) -> bool:
    return (isinstance(row, dict) and isinstance(row.get("cells"), list)
            and isinstance(row.get("total_s"), (int, float)))


def shipped_costs() -> dict:
    """The cost table shipped with the package ({} when it is missing or unreadable)."""
    try:
        text = (importlib.resources.files("toymech.data") / SHIPPED_COSTS).read_text(encoding="utf-8")
        data = json.loads(text)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def estimate_left(previous: dict | None, cell_index: int, n_cells: int, in_cell_s: float,
                  elapsed_s: float | None = None, cell_left_s: float | None = None
                  ) -> float | None:
    """Seconds left by the last run's cell times: the cells after this one, plus what is left of
    this one (``cell_left_s`` where the cell's own progress says it, e.g. the runs a training
    cell has finished: the estimate is corrected as models finish). With another cell count
    (the notebook changed since), the last run's total less ``elapsed_s`` when given. None
    without a previous run."""
    if not previous:
        return None
    if len(previous["cells"]) != n_cells:
        return None if elapsed_s is None else max(0.0, previous["total_s"] - elapsed_s)
    cells = [c or 0.0 for c in previous["cells"]]
    here = max(0.0, cells[cell_index] - in_cell_s) if cell_left_s is None else cell_left_s
    return sum(cells[cell_index + 1:]) + here


def _scale_text(previous: dict) -> str:
    k, ratio = previous.get("scale", 1.0), previous.get("seeds_ratio")
    parts = ([f"x{k:.1f} for this machine's reference step and free cores"]
             if abs(k - 1.0) >= 0.1 else []) + (
        [f"x{ratio:.2f} for the seeds asked over the size's own"] if ratio else [])
    return f" (scaled {'; '.join(parts)})" if parts else ""


class _Row:
    def __init__(self, name: str):
        self.name, self.state = name, "waiting"
        self.start = self.cell_start = 0.0
        self.cell, self.n_cells, self.section, self.previous = 0, 0, "", None
        self.final = ""
        self.live_dir: Path | None = None
        self.training = ""  # the labels training when last printed (non-live streams)
        self.logged = -float("inf")  # when the last training line was printed (non-live)


class LiveProgress:
    """One live line per notebook; pass it as ``build_reports(progress=...)``.

    ``stream`` defaults to stderr; ``live`` (default: whether the stream is a terminal) redraws the
    lines in place, otherwise a line is printed at start, at each new section and at the end;
    ``header`` is printed once, when the first notebook starts (after every argument is checked).
    """

    def __init__(self, paths: Sequence[Path], stream: TextIO | None = None, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, header: str | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.clock = clock
        self.rows = [_Row(Path(p).stem) for p in paths]
        self._lock = threading.Lock()
        self._drawn = 0
        self._stop = threading.Event()
        self._ticker = None
        self._header = header  # printed before the first line (when the first notebook starts)

    # --- events (from build_reports' worker threads) ----------------------------------------
    def start(self, index: int, previous: dict | None, live_dir: str | Path | None = None) -> None:
        """Notebook ``index`` started; ``previous``: the cost row it is estimated from;
        ``live_dir``: the folder its training processes report into (``training.live``)."""
        with self._lock:
            if self._header:
                self._print(self._header)
                self._header = None
            row = self.rows[index]
            row.state, row.start, row.previous = "running", self.clock(), previous
            row.live_dir = Path(live_dir) if live_dir is not None else None
            row.cell_start = row.start
            if not self.live:
                est = "" if not previous else (
                    f", {'measured on a 2-core CPU' if previous.get('shipped') else 'last run at this size'} "
                    f"{duration_text(previous['total_s'])}" + _scale_text(previous))
                self._print(f"[{index + 1}/{len(self.rows)}] {row.name}: started{est}")
            self._redraw()
        if (self.live or live_dir is not None) and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def cell(self, index: int, cell_index: int, n_cells: int, section: str) -> None:
        with self._lock:
            row = self.rows[index]
            new_section = section != row.section
            row.cell, row.n_cells, row.section, row.cell_start = cell_index, n_cells, section, self.clock()
            if not self.live and new_section:
                self._print(self.line(index))
            self._redraw()

    def done(self, index: int, text: str) -> None:
        with self._lock:
            row = self.rows[index]
            row.state, row.final = "done", text
            if not self.live:
                self._print(text)
            self._redraw()

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._redraw()

    # --- text -------------------------------------------------------------------------------
    def line(self, index: int) -> str:
        row, now = self.rows[index], self.clock()
        head = f"[{index + 1}/{len(self.rows)}] {row.name}"
        if row.state == "waiting":
            return f"{head}: waiting"
        if row.state == "done":
            return row.final
        left = estimate_left(row.previous, row.cell, row.n_cells, now - row.cell_start, now - row.start,
                             cell_left_s=self._cell_left(index, now - row.cell_start))
        est = ("no estimate (no earlier run at this size)" if left is None else
               # past the last run's time while work remains: never "about 0.0 s left"
               "finishing (longer than the last run took)" if left < 1.0 else
               f"about {duration_text(left)} left")
        at = f"cell {row.cell + 1}/{row.n_cells}" if row.n_cells else "starting the kernel"
        training = self.training_text(index)
        return f"{head}: {at}, {duration_text(now - row.start)} elapsed, {est}" + (
            f" | {row.section}" if row.section else "") + (f" | {training}" if training else "")

    def _cell_left(self, index: int, in_cell_s: float) -> float | None:
        """What is left of the training cell by its own pace: the runs its sweeps still have to
        train at the time each finished run took so far (None before the first run finished)."""
        row = self.rows[index]
        if row.state != "running" or row.live_dir is None:
            return None
        sweeps = live_status.read(row.live_dir)["sweeps"]
        done = sum(int(s.get("done", 0)) for s in sweeps)
        total = sum(int(s.get("total", 0)) for s in sweeps)
        if done <= 0 or total <= done:
            return None
        return in_cell_s * (total - done) / done

    def training_text(self, index: int) -> str:
        """Which model notebook ``index`` is training and its step ("" when none)."""
        row = self.rows[index]
        if row.state != "running" or row.live_dir is None:
            return ""
        return live_status.describe(live_status.read(row.live_dir))

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def _redraw(self) -> None:
        if not self.live:
            return
        up = f"\x1b[{self._drawn}F" if self._drawn else ""
        lines = "".join(f"\x1b[2K{self.line(i)[:200]}\n" for i in range(len(self.rows)))
        self.stream.write(up + lines)
        self.stream.flush()
        self._drawn = len(self.rows)

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            with self._lock:
                if self.live:
                    self._redraw()
                else:
                    self._log_tick()

    def _log_tick(self) -> None:
        """A log (no terminal): a line each time a notebook starts training another model, and
        while one trains, a line at least every ``LOG_EVERY_S`` seconds (its step moves)."""
        now = self.clock()
        for i, row in enumerate(self.rows):
            runs = live_status.read(row.live_dir)["runs"] if row.state == "running" else []
            labels = ", ".join(sorted(str(r.get("label")) for r in runs))
            if labels and (labels != row.training or now - row.logged >= LOG_EVERY_S):
                self._print(self.line(i))
                row.logged = now
            row.training = labels
