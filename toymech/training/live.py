"""What a training process is doing now, for a watcher in another process.

``toymech report`` starts each notebook's kernel with ``$TOYMECH_LIVE`` naming a folder of its
own; every process that trains for that notebook (the kernel, the sweep's local processes or Ray
workers, which inherit the variable) writes ``<folder>/run-<pid>.json`` at most once a second:
the run's label (experiment and seed), its step and its step budget. A sweep writes
``<folder>/sweep-<pid>.json`` with how many of its trials are finished. The report's progress line
reads them (``read``, ``describe``), so it can say which model is training and how far it is.

Without ``$TOYMECH_LIVE`` nothing is written and the loop's cost is one ``None`` test a step.
A status is a small file replaced atomically; a reader skips files that are half-gone, unreadable
or older than ``max_age`` (a killed process leaves its last file behind: it goes stale).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..files import replace_file

ENV = "TOYMECH_LIVE"
EVERY_S = 1.0  # at most one write a second per process
SWEEP_MAX_AGE_S = 3600.0  # a sweep's count stays fresh this long (it is written per finished run)

_state: dict[str, Any] = {"label": None}


def folder() -> Path | None:
    """The folder named by ``$TOYMECH_LIVE`` (None when unset or empty)."""
    raw = os.environ.get(ENV, "")
    return Path(raw) if raw else None


def _write(name: str, data: dict[str, Any]) -> None:
    where = folder()
    if where is None:
        return
    try:
        where.mkdir(parents=True, exist_ok=True)
        replace_file(where / name, json.dumps({**data, "pid": os.getpid(), "time": time.time()}))
    except OSError:
        pass  # a status line must never stop a run


def _remove(name: str) -> None:
    where = folder()
    if where is not None:
        with contextlib.suppress(OSError):
            (where / name).unlink()


@contextlib.contextmanager
def training(label: str) -> Iterator[None]:
    """Marks this process as training ``label`` (e.g. ``induction-2l seed 3``) while the block
    runs; the loop's ``ticker`` reports its steps under that label."""
    before = _state["label"]
    _state["label"] = label
    try:
        yield
    finally:
        _state["label"] = before
        if before is None:
            _remove(f"run-{os.getpid()}.json")


def ticker(steps: int, clock: Callable[[], float] = time.monotonic
           ) -> Callable[[int], None] | None:
    """A function the loop calls with each finished step (None without ``$TOYMECH_LIVE``): it
    writes this process's status at most every ``EVERY_S`` seconds, and at the last step."""
    if folder() is None:
        return None
    label = _state["label"] or "a model"
    name = f"run-{os.getpid()}.json"
    last = [-float("inf")]

    def tick(step: int) -> None:
        now = clock()
        if now - last[0] >= EVERY_S or step >= steps:
            last[0] = now
            _write(name, {"label": label, "step": int(step), "steps": int(steps)})

    return tick


def sweep_progress(done: int, total: int) -> None:
    """A sweep's count of finished trials (written by the process that drives the sweep)."""
    _write(f"sweep-{os.getpid()}.json", {"done": int(done), "total": int(total)})


def sweep_done() -> None:
    _remove(f"sweep-{os.getpid()}.json")


def read(where: str | Path | None, max_age: float = 120.0, now: float | None = None
         ) -> dict[str, list[dict[str, Any]]]:
    """{"runs": [...], "sweeps": [...]}: the fresh statuses in ``where`` (none: empty lists)."""
    out: dict[str, list[dict[str, Any]]] = {"runs": [], "sweeps": []}
    if where is None or not Path(where).is_dir():
        return out
    now = time.time() if now is None else now
    for path in sorted(Path(where).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        kind = "runs" if path.name.startswith("run-") else "sweeps"
        # a sweep writes only when a run finishes, and one run can take longer than max_age
        age = max_age if kind == "runs" else max(max_age, SWEEP_MAX_AGE_S)
        if not isinstance(data, dict) or now - float(data.get("time", 0)) > age:
            continue
        out[kind].append(data)
    return out


def describe(status: dict[str, list[dict[str, Any]]]) -> str:
    """One phrase for the progress line: ``training induction-2l seed 6: step 4,250/10,000
    (+1 more; 7 of 30 runs done)``; "" when nothing is training."""
    runs = sorted(status.get("runs", []), key=lambda r: (str(r.get("label")), r.get("pid", 0)))
    sweeps = status.get("sweeps", [])
    done = sum(int(s.get("done", 0)) for s in sweeps)
    total = sum(int(s.get("total", 0)) for s in sweeps)
    extra = []
    if len(runs) > 1:
        extra.append(f"+{len(runs) - 1} more")
    if total:
        extra.append(f"{done} of {total} runs done")
    tail = f" ({'; '.join(extra)})" if extra else ""
    if not runs:
        return f"training{tail}" if total and done < total else ""
    r = runs[0]
    return f"training {r.get('label', 'a model')}: step {int(r.get('step', 0)):,}/{int(r.get('steps', 0)):,}{tail}"
