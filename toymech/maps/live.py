"""A map's live line: cells and runs done, the run in progress and its step, an estimate left.

``run_map(progress=True)`` (``toymech map`` without ``--no-progress``) holds a ``MapProgress``
while it works. Training processes report their step through ``training.live`` (a folder named
by ``$TOYMECH_LIVE``, which the map sets for its workers when no watcher set it already); the
map itself reports each finished run and each measured row. On a terminal the line is redrawn
in place once a second; elsewhere (a CI log, a file) a line is printed when a run finishes, when
measuring starts and at the end, so a log stays short.

The estimate is the time the runs still to train will take at the pace of those trained so far
in this call, in units of ``models.reference.run_cost`` (steps x batch x positions x layers x
width, the width counted again for the matrix products), the
steps the running ones have done counting for their share and a run a stop rule ended early
counting for the steps it ran: runs that differ in size weigh what they cost, and several
workers in parallel show in the pace. Runs still to train count at their whole budget, so with
stop rules the estimate errs long.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..models.reference import run_cost
from ..training import live as live_status


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 02 min``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class MapProgress:
    """The live line of one map (see the module docstring). Use as a context manager around the
    map's work; ``plan`` the runs first, then report ``trained`` runs and ``measured`` rows."""

    def __init__(self, name: str, stream: TextIO | None = None, live: bool | None = None,
                 clock: Callable[[], float] = time.monotonic, every_s: float = 1.0):
        self.name = name
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) if live is None else live
        self.clock = clock
        self.every_s = every_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._folder: Path | None = None
        self._own_folder = False
        self._env_before: str | None = None
        self.cost: dict[Hashable, float] = {}    # run -> run_cost
        self.cell_of: dict[Hashable, Hashable] = {}
        self.done: set[Hashable] = set()         # trained (before or during this call)
        self.trained_now: set[Hashable] = set()  # trained during this call
        self.ran: dict[Hashable, float] = {}     # the share of its budget each of those ran
        self.failures: set[Hashable] = set()     # not stored when training ended
        self.start: float | None = None
        self.measure: tuple[int, int] | None = None
        self._width = 0

    # --- setup ----------------------------------------------------------------------------
    def __enter__(self) -> MapProgress:
        before = live_status.folder()
        if before is None:  # this map is the watcher: its workers inherit the folder
            self._folder = Path(tempfile.mkdtemp(prefix="toymech-map-live-"))
            self._own_folder = True
            self._env_before = os.environ.get(live_status.ENV)
            os.environ[live_status.ENV] = str(self._folder)
        else:  # a report (or another watcher) already reads this process's runs
            self._folder = before
        if self.live:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            self._emit(self.line(final=True), end=True)
        if self._own_folder:
            if self._env_before is None:
                os.environ.pop(live_status.ENV, None)
            else:
                os.environ[live_status.ENV] = self._env_before
            shutil.rmtree(self._folder, ignore_errors=True)

    def plan(self, runs: Sequence[tuple[Hashable, Hashable, Any]], have: set[Hashable]) -> None:
        """``runs``: (run id, cell, Experiment) of every run of the map; ``have``: the ids
        already in the zoo."""
        with self._lock:
            for run, cell, exp in runs:
                self.cost[run] = run_cost(exp)
                self.cell_of[run] = cell
            self.done |= set(have) & set(self.cost)
            if self.start is None:  # a refining part adds runs to the same clock
                self.start = self.clock()
            if not self.live:
                todo = len(self.cost) - len(self.done)
                cells = len(set(self.cell_of.values()))
                self._emit(f"map {self.name}: {len(self.cost)} runs in {cells} cells, "
                           f"{len(self.done)} in the zoo, {todo} to train")

    # --- events ---------------------------------------------------------------------------
    def trained(self, run: Hashable, fraction: float = 1.0) -> None:
        """``run`` finished after ``fraction`` of its step budget (a stop rule can end it
        early: its share of the pace is what it ran)."""
        with self._lock:
            if run not in self.cost or run in self.done:
                return
            self.done.add(run)
            self.trained_now.add(run)
            self.ran[run] = min(1.0, max(0.0, float(fraction)))
            if not self.live:
                self._emit(self.line())

    def failed(self, runs: set[Hashable]) -> None:
        """Training is over and ``runs`` were not stored (diverged or failed): said in the
        line, and no longer counted as work left."""
        with self._lock:
            self.failures = set(runs) & (set(self.cost) - self.done)

    def measured(self, done: int, total: int) -> None:
        with self._lock:
            first = self.measure is None
            self.measure = (done, total)
            if not self.live and first:
                self._emit(self.line())

    # --- text -----------------------------------------------------------------------------
    def cells_done(self) -> tuple[int, int]:
        cells: dict[Hashable, bool] = {}
        for run, cell in self.cell_of.items():
            cells[cell] = cells.get(cell, True) and run in self.done
        return sum(cells.values()), len(cells)

    def left_s(self, running: Sequence[dict[str, Any]]) -> float | None:
        """Seconds left to train, at this call's pace (None before any progress)."""
        if self.start is None:
            return None
        todo = [r for r in self.cost if r not in self.done and r not in self.failures]
        if not todo:
            return 0.0
        mean_todo = sum(self.cost[r] for r in todo) / len(todo)
        partial = sum(min(1.0, int(s.get("step", 0)) / max(1, int(s.get("steps", 1))))
                      for s in running) * mean_todo
        done_cost = sum(self.cost[r] * self.ran.get(r, 1.0) for r in self.trained_now) + partial
        elapsed = self.clock() - self.start
        if done_cost <= 0 or elapsed <= 0:
            return None
        left_cost = max(0.0, sum(self.cost[r] for r in todo) - partial)
        return left_cost / (done_cost / elapsed)

    def line(self, final: bool = False) -> str:
        cells, n_cells = self.cells_done()
        failed = f" ({len(self.failures)} failed)" if self.failures else ""
        head = (f"map {self.name}: {len(self.done)} of {len(self.cost)} runs trained{failed}, "
                f"{cells} of {n_cells} cells")
        if self.start is not None:
            head += f", {duration(self.clock() - self.start)} elapsed"
        if self.measure is not None:
            done, total = self.measure
            return head + (f"; measured {total} rows" if final or done >= total else
                           f"; measuring row {done + 1} of {total}")
        if final:
            return head
        status = live_status.read(self._folder)
        running = status["runs"]
        parts = [head]
        what = live_status.describe({"runs": running})
        if what:
            parts.append(what)
        if len(self.done) + len(self.failures) < len(self.cost):
            left = self.left_s(running)
            # work remains: an estimate that rounds to nothing says so, never "about 0 s left"
            parts.append("estimate after the first steps" if left is None else
                         "finishing" if left < 1.0 else f"about {duration(left)} left")
        return " | ".join(parts)

    def _emit(self, text: str, end: bool = False) -> None:
        if self.live:
            pad = max(0, self._width - len(text))
            self.stream.write("\r" + text + " " * pad + ("\n" if end else ""))
            self._width = 0 if end else len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            with self._lock:
                self._emit(self.line())


__all__ = ["MapProgress", "duration"]
