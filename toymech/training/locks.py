"""Per-entry locks of the zoo: ``<zoo>/.<name>.lock``, created with O_CREAT|O_EXCL and holding
the writer's pid, host and process start time, so a lock whose holder died can be broken."""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from pathlib import Path

from . import checkpoints

LOCK_UNREADABLE_S = 10.0  # a lock file still without content after this: its writer died
FOREIGN_LOCK_S = 24 * 3600.0  # a lock from another host (whose pid cannot be probed) expires


class EntryLock:
    """The claim on one zoo entry, ``<zoo>/.<name>.lock`` (see the module docstring).

    ``with lock:`` waits for the holder (one notice through ``log``); a lock whose holder is
    dead (same host: its pid is gone or reused) or unreadable for ``LOCK_UNREADABLE_S`` is
    broken, under ``.<name>.lock.break`` so that two waiters never break a fresh lock.
    """

    def __init__(self, root: Path, name: str, log=None, poll_s: float = 0.2):
        self.path, self.name, self.log, self.poll_s = root / f".{name}.lock", name, log, poll_s
        self.nonce: str | None = None

    def try_acquire(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and self._stale(*holder):
                    self._break(holder[0])
                continue
            nonce = secrets.token_hex(8)
            info = {"pid": os.getpid(), "host": checkpoints.HOST, "hostname": socket.gethostname(),
                    "start": checkpoints.process_start(os.getpid()), "time": time.time(),
                    "nonce": nonce}
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(info))
                f.flush()
                os.fsync(f.fileno())
            self.nonce = nonce
            checkpoints.fault("holding-lock")
            return True
        return False

    def acquire(self) -> "EntryLock":
        told = False
        while not self.try_acquire():
            if not told and self.log:
                holder = self._holder()
                self.log(f"[toymech] waiting for the writer of zoo entry {self.name} "
                         f"({holder[0] if holder else 'gone'})")
                told = True
            time.sleep(self.poll_s)
        return self

    def release(self) -> None:
        if self.nonce is not None:
            holder = self._holder()
            if holder is not None and self.nonce in holder[0]:  # never remove another's lock
                self.path.unlink(missing_ok=True)
            self.nonce = None

    __enter__ = acquire

    def __exit__(self, *exc) -> None:
        self.release()

    def _holder(self) -> tuple[str, float] | None:
        """(content, age in seconds) of the lock file; None when there is none."""
        try:
            return self.path.read_text(), time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return None

    @staticmethod
    def _stale(text: str, age: float) -> bool:
        try:
            holder = json.loads(text)
            pid = int(holder["pid"])
        except (ValueError, KeyError, TypeError):
            return age > LOCK_UNREADABLE_S  # being written now, or its writer died mid-write
        alive = checkpoints.process_alive(pid, holder.get("host"))
        if alive is None:
            return age > FOREIGN_LOCK_S
        start = holder.get("start")
        return not alive or (start is not None and checkpoints.process_start(pid) != start)

    def _break(self, seen: str) -> None:
        breaker = self.path.with_name(self.path.name + ".break")
        try:
            os.close(os.open(breaker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:  # another waiter is breaking it (or died doing so)
            try:
                if time.time() - breaker.stat().st_mtime > LOCK_UNREADABLE_S:
                    breaker.unlink(missing_ok=True)
            except FileNotFoundError:
                pass
            return
        try:
            holder = self._holder()
            if holder is not None and holder[0] == seen:  # still the stale one
                self.path.unlink(missing_ok=True)
        finally:
            breaker.unlink(missing_ok=True)
