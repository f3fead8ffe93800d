"""Replacing a file atomically: the one way toymech rewrites a file in place.

``replace_file(path, content)`` writes into a hidden temporary file beside ``path`` and renames
it over ``path`` only once complete, so a reader (or a writer killed half-way) sees the old file
or the new one, never a mixture. The temporary name carries the process id, the thread id and a
random token (``.<name>.tmp-<pid>-<thread>-<token>``): two processes or two threads replacing the
same file never write into one temporary file. A failed write removes its temporary file; the
target keeps its mode (a new file gets the default one).

A folder written as a whole (a checkpoint) has its own writer, ``training.atomic``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import threading
from collections.abc import Callable
from pathlib import Path

Content = str | bytes | Callable[[Path], None]
TEMP_MARK = ".tmp-"  # every temporary name holds it: ``.<name>.tmp-<pid>-<thread>-<token>``


def temp_name(path: Path) -> Path:
    """A fresh hidden temporary path beside ``path``, unique per process, thread and call."""
    path = Path(path)
    return path.with_name(f".{path.name}{TEMP_MARK}{os.getpid()}-{threading.get_ident()}-"
                          f"{secrets.token_hex(4)}")


def replace_file(path: str | Path, content: Content, *, encoding: str = "utf-8",
                 durable: bool = False) -> Path:
    """Replace (or create) the file ``path`` by ``content`` atomically (module docstring).
    ``content``: text (written as ``encoding``), bytes, or a function that writes the file at
    the path it is given (``table.to_csv``). ``durable``: fsync the file before the rename (for
    a record that must survive a power cut, not only a killed process). Returns ``path``.
    OSError as the write or the rename raises it (the temporary file removed)."""
    path = Path(path)
    tmp = temp_name(path)
    try:
        if callable(content):
            content(tmp)
        else:
            data = content.encode(encoding) if isinstance(content, str) else bytes(content)
            with open(tmp, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
        if durable and callable(content):
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # keep the target's mode
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return path
