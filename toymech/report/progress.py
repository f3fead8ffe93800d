"""The live line of ``toymech report``: one line per notebook (the cell it is at out of how many,
its section, the time elapsed, the estimate left from the cost table (``report.costs``) and,
while the notebook trains, which model and at which step: ``toymech.training.live``, read from
the folder its kernel was given by ``report.engine.kernel_manager``). On a terminal the lines
are redrawn in place every second; elsewhere (CI logs, pipes) a line is printed when a notebook
starts, enters a new section, starts training another model and ends.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from ..display import duration_text
from ..training import live as live_status
from .costs import estimate_left, scale_text
from .reader_page import SETUP_SECTION, heading

LOG_EVERY_S = 20.0  # in a log, a training notebook's line at least this often (its step moves): with
# the 1 s tick and a busy machine the longest silence stays well under 30 s


def section_at(cells: Sequence, index: int) -> str:
    """The heading (level 2 or deeper) above cell ``index``: the section it belongs to."""
    for cell in reversed(cells[: index + 1]):
        found = heading(cell)
        if found and found[0] >= 2:
            return found[1]
    return SETUP_SECTION


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

    ``paths``: the notebooks, in the run's order. ``stream`` defaults to stderr; ``live``
    (default: whether the stream is a terminal) redraws the lines in place, otherwise a line is
    printed at start, at each new section and at the end; ``clock``: seconds for elapsed times
    (``time.monotonic``); ``header`` is printed once, when the first notebook starts (after
    every argument is checked).
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
                    f"{duration_text(previous['total_s'])}" + scale_text(previous))
                self._print(f"[{index + 1}/{len(self.rows)}] {row.name}: started{est}")
            self._redraw()
        if (self.live or live_dir is not None) and self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def cell(self, index: int, cell_index: int, n_cells: int, section: str) -> None:
        """Notebook ``index`` started its cell ``cell_index`` of ``n_cells``, in ``section``
        (the heading above it)."""
        with self._lock:
            row = self.rows[index]
            new_section = section != row.section
            row.cell, row.n_cells, row.section, row.cell_start = cell_index, n_cells, section, self.clock()
            if not self.live and new_section:
                self._print(self.line(index))
            self._redraw()

    def done(self, index: int, text: str) -> None:
        """Notebook ``index`` finished; ``text``: its last line (``build.done_line``)."""
        with self._lock:
            row = self.rows[index]
            row.state, row.final = "done", text
            if not self.live:
                self._print(text)
            self._redraw()

    def close(self) -> None:
        """Stop the ticker and draw the lines a last time."""
        self._stop.set()
        with self._lock:
            self._redraw()

    # --- text -------------------------------------------------------------------------------
    def line(self, index: int) -> str:
        """Notebook ``index``'s line now: waiting, the cell and section it is at, the model it
        trains and an estimate of what is left, or its last line once done."""
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
