"""Per-entry locks of the zoo: ``<zoo>/.<name>.lock``, created with O_CREAT|O_EXCL and holding
the writer's pid, host and process start time, so a lock whose holder died can be broken.

Stale rules. A lock is stale (broken by the next writer, under ``.<name>.lock.break`` so that two
waiters never break a fresh lock) when its holder is on this host and its pid is gone, or runs a
different process than the one that took it (its recorded start time differs); when it records
no start time (written elsewhere, or by hand), also once it is older than the lock timeout; when
it comes from another host (whose pids cannot be probed), after ``FOREIGN_LOCK_S``; when it is
still unreadable (its writer died mid-write) after ``LOCK_UNREADABLE_S``.

Waits end. ``with lock:`` waits at most ``timeout`` seconds (``lock_timeout()``: the
``TOYMECH_LOCK_TIMEOUT`` environment variable, else ``LOCK_TIMEOUT_S``), saying once which
process holds the lock (through ``log``, else on stderr: never silently), then raises
``LockTimeout`` naming the holder. Lock files are read without blocking and only when they are
regular files; a folder or FIFO in a lock's place is refused in one line.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import stat
import sys
import time
from pathlib import Path

from ..core import check
from ..devices import HOST, process_alive, process_start
from ..training.atomic import fault

LOCK_TIMEOUT_S = 6 * 3600.0  # a waiter gives up after 6 hours (a paper-size run on a CPU)
LOCK_UNREADABLE_S = 10.0  # a lock file still without content after this: its writer died
FOREIGN_LOCK_S = 24 * 3600.0  # a lock from another host (whose pid cannot be probed) expires


class LockTimeout(RuntimeError):
    """Waited ``timeout`` seconds for a zoo entry's lock; the message names its holder."""


def lock_timeout(value: float | None = None) -> float:
    """The lock wait in seconds: ``value``, else ``$TOYMECH_LOCK_TIMEOUT``, else 6 hours."""
    if value is None:
        raw = os.environ.get("TOYMECH_LOCK_TIMEOUT", "")
        if raw == "":
            return LOCK_TIMEOUT_S
        check(re.fullmatch(r"[0-9]{1,9}(\.[0-9]+)?", raw) is not None, "TOYMECH_LOCK_TIMEOUT",
              raw, "a number of seconds (ASCII digits), e.g. 600")
        value = float(raw)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1e9
    check(ok, "lock_timeout", value, "a number of seconds in 0..1e9")
    return float(value)


class EntryLock:
    """The claim on one zoo entry, ``<zoo>/.<name>.lock`` (see the module docstring).

    ``root``: the zoo's folder; ``name``: the entry's folder name; ``log``: a print-like
    function told once that the lock is waited for (None: standard error); ``poll_s``: seconds
    between tries; ``timeout``: seconds ``acquire`` waits at most (None: ``$TOYMECH_LOCK_TIMEOUT``,
    else 6 hours); ``what``: what the lock guards, in words (default "zoo entry NAME");
    ``where``: what to call ``root`` in a refusal (default "zoo"). Use it as
    a context manager: ``with EntryLock(root, name): ...``.
    """

    def __init__(self, root: Path, name: str, log=None, poll_s: float = 0.2,
                 timeout: float | None = None, what: str | None = None, where: str = "zoo"):
        self.path, self.name, self.log, self.poll_s = root / f".{name}.lock", name, log, poll_s
        self.what = what or f"zoo entry {name}"
        self.where = where
        self.timeout = lock_timeout(timeout)
        self.nonce: str | None = None

    def try_acquire(self) -> bool:
        """Take the lock now if it is free (breaking a stale one first); False if another
        process holds it. Raises ``ValueError`` when the zoo's folder cannot be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"{self.where}={str(self.path.parent)!r} is not allowed: a folder "
                             f"toymech can create and write, for the lock of {self.what} "
                             f"({exc.strerror or exc})") from None
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY
                             | getattr(os, "O_NOFOLLOW", 0), 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and self._stale(*holder):
                    self._break(holder[0])
                continue
            except OSError as exc:
                raise ValueError(f"{self.where}={str(self.path.parent)!r} is not allowed: a "
                                 f"folder toymech can write, for the lock of {self.what} "
                                 f"(creating {self.path.name}: {exc.strerror})") from None
            nonce = secrets.token_hex(8)
            info = {"pid": os.getpid(), "host": HOST, "hostname": socket.gethostname(),
                    "start": process_start(os.getpid()), "time": time.time(), "nonce": nonce}
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(info))
                f.flush()
                os.fsync(f.fileno())
            self.nonce = nonce
            fault("holding-lock")
            return True
        return False

    def acquire(self) -> EntryLock:
        """Wait for the lock (at most ``timeout`` seconds) and take it; returns the lock. Raises
        ``LockTimeout`` naming the holder when the wait runs out."""
        told, deadline = False, time.monotonic() + self.timeout
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                raise LockTimeout(f"{self.what} is locked by {self.holder_text()}: "
                                  f"waited {self.timeout:g} s (lock timeout: --lock-timeout or "
                                  "TOYMECH_LOCK_TIMEOUT waits longer)")
            if not told:
                line = (f"[toymech] waiting for the writer of {self.what} "
                        f"({self.holder_text()}; at most {self.timeout:g} s)")
                (self.log or (lambda text: print(text, file=sys.stderr, flush=True)))(line)
                told = True
            time.sleep(min(self.poll_s, max(0.0, deadline - time.monotonic())))
        return self

    def release(self) -> None:
        """Give the lock back (only this lock's own file is ever removed)."""
        if self.nonce is not None:
            holder = self._holder()
            if holder is not None and self.nonce in holder[0]:  # never remove another's lock
                self.path.unlink(missing_ok=True)
            self.nonce = None

    __enter__ = acquire

    def __exit__(self, *exc) -> None:
        self.release()

    def holder_text(self) -> str:
        """Who holds the lock, in words: pid, host, age ('gone' when there is no lock)."""
        holder = self._holder()
        if holder is None:
            return "nobody (it was just released)"
        text, age = holder
        try:
            info = json.loads(text)
            who = f"pid {int(info['pid'])} on {info.get('hostname') or info.get('host') or '?'}"
        except (ValueError, KeyError, TypeError):
            who = "an unreadable lock file"
        return f"{who}, held for {age:.0f} s ({self.path})"

    def _holder(self) -> tuple[str, float] | None:
        """(content, age in seconds) of the lock file; None when there is none."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise ValueError(f"lock={str(self.path)!r} is not allowed: a lock file toymech writes "
                             f"({kind} is in its place: remove it)")
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
        return data.decode("utf-8", "replace"), time.time() - st.st_mtime

    def _stale(self, text: str, age: float) -> bool:
        try:
            holder = json.loads(text)
            pid = int(holder["pid"])
        except (ValueError, KeyError, TypeError):
            return age > LOCK_UNREADABLE_S  # being written now, or its writer died mid-write
        alive = process_alive(pid, holder.get("host"))
        if alive is None:
            return age > FOREIGN_LOCK_S
        if not alive:
            return True
        start = holder.get("start")
        if start is None:  # cannot tell a reused pid: trust it for one lock timeout
            return age > self.timeout
        return process_start(pid) != start

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
