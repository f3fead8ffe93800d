"""Reading a checkpoint folder's files without trusting them: the errors a reader raises, the
bounded read of one file, and the types of ``config.json``'s fields.

A file is read only when it is a regular file (not a symlink, FIFO, device or folder; opened
non-blocking, so a FIFO is refused at once) of at most its size cap (``CAPS``): no folder content
can make a reader hang or exhaust memory.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toymech

CONFIG, WEIGHTS, SNAPSHOTS, TRAIN_STATE = ("config.json", "model.safetensors",
                                           "snapshots.safetensors", "train_state.pt")
FORMAT = 1  # what this toymech writes and reads; an absent ``format`` is 1
MIB = 2**20
CAPS = {CONFIG: 64 * MIB, WEIGHTS: 32 * 1024 * MIB, SNAPSHOTS: 128 * 1024 * MIB,
        TRAIN_STATE: 96 * 1024 * MIB}


class DamagedCheckpoint(ValueError):
    """A checkpoint folder whose content is not what was written: ``folder`` and ``how``."""

    def __init__(self, folder: Path | str, how: str):
        self.folder, self.how = Path(folder), " ".join(str(how).split())  # always one line
        super().__init__(f"checkpoint={str(folder)!r} is damaged: {self.how}")


class Unverified(DamagedCheckpoint):
    """A folder without an integrity record: it cannot be told from an edited one."""

    def __init__(self, folder: Path | str, how: str = ""):
        how = how or (f"{CONFIG} has no integrity record (saved by an older toymech, or the "
                      "record was removed): it is not served; 'toymech zoo verify --adopt' checks "
                      "its tensors and adopts it")
        super().__init__(folder, how)
        self.args = (f"checkpoint={str(folder)!r} is unverified: {self.how}",)


class NewerFormat(ValueError):
    """A folder written by a newer toymech (``format`` above ``FORMAT``): not ours to judge."""

    def __init__(self, folder: Path | str, fmt: int, what: str | None = None):
        # ``what``: the newer thing, when it is not the folder's format (e.g. its task's version)
        self.folder, self.format = Path(folder), fmt
        what = what or f"format {fmt}; toymech {toymech.__version__} reads format {FORMAT}"
        self.how = f"newer than this toymech ({what}): upgrade toymech, or use another zoo folder"
        super().__init__(f"checkpoint={str(folder)!r} is {self.how}")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(folder: Path, name: str, dir_fd: int | None = None) -> bytes | None:
    """``folder/name``'s bytes (None: absent), read only when it is a regular file (never
    through a symlink) of at most ``CAPS[name]`` bytes (64 MiB for other names); opened
    non-blocking, so a FIFO in its place is refused at once. DamagedCheckpoint otherwise."""
    cap = CAPS.get(name, 64 * MIB)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = (os.open(name, flags, dir_fd=dir_fd) if dir_fd is not None
              else os.open(Path(folder) / name, flags))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise DamagedCheckpoint(folder, f"{name} is a symbolic link (toymech reads only "
                                    "regular files)") from None
        raise DamagedCheckpoint(folder, f"{name} cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DamagedCheckpoint(folder, f"{name} is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > cap:
            raise DamagedCheckpoint(folder, f"{name} has {st.st_size:,} bytes, more than the "
                                    f"{cap:,} toymech reads")
        chunks, total = [], 0
        while total <= cap:
            chunk = os.read(fd, min(8 * MIB, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > cap:
            raise DamagedCheckpoint(folder, f"{name} grew past the {cap:,} bytes toymech reads")
        return b"".join(chunks)
    except OSError as exc:
        raise DamagedCheckpoint(folder, f"{name} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_files(folder: Path, names: tuple[str, ...]) -> dict[str, bytes | None]:
    """The files' bytes (None: absent), read through ONE handle on the folder where the OS has
    them, so that a concurrent replacement cannot mix an old config with new weights."""
    if os.open not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return {n: read_bounded(folder, n) for n in names}
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NONBLOCK", 0))
    except NotADirectoryError:
        raise DamagedCheckpoint(folder, "it is not a folder") from None
    try:
        return {n: read_bounded(folder, n, dfd) for n in names}
    finally:
        os.close(dfd)


def parse_meta(folder: Path, raw: bytes) -> dict[str, Any]:
    """``config.json``'s bytes as a dict, its fields' types checked (DamagedCheckpoint)."""
    try:
        meta = json.loads(raw)
    except RecursionError:
        raise DamagedCheckpoint(folder, f"{CONFIG} is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise DamagedCheckpoint(folder, f"{CONFIG} is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DamagedCheckpoint(folder, f"{CONFIG} holds a JSON {type(meta).__name__}, not an object")
    problem = meta_problem(meta)
    if problem:
        raise DamagedCheckpoint(folder, f"{CONFIG} {problem}")
    return meta


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "model": (lambda v: isinstance(v, dict), "a JSON object"),
    "task": (lambda v: isinstance(v, dict), "a JSON object"),
    "train": (lambda v: isinstance(v, dict), "a JSON object"),
    "format": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1, "an integer >= 1"),
    "history": (lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v),
                "a list of metric rows (JSON objects)"),
    "seconds": (lambda v: _is_number(v) and v >= 0, "a number of seconds >= 0"),
    "snapshot_steps": (lambda v: isinstance(v, list) and all(isinstance(s, int) and s >= 0 for s in v),
                       "a list of steps"),
    "integrity": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                  "an object of sha256 strings"),
    **{k: (lambda v: isinstance(v, str), "a string")
       for k in ("name", "device", "tag", "key", "created", "toymech_version")},
}


def meta_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with the types of ``meta``'s fields (one phrase), or None."""
    if not isinstance(meta.get("model"), dict):
        return "has no model config (key 'model')"
    for key, (ok, what) in _FIELD_TYPES.items():
        if key in meta and not ok(meta[key]):
            return f"has {key}={_short(meta[key])}, not {what}"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
