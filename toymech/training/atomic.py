"""Atomic folder writes: a folder appears complete under its name, or not at all.

Everything is written into a hidden folder ``.<name>.tmp-<pid>-<host>-<random>`` beside the
target and renamed into place only once complete. An existing target is first renamed to
``.<name>.old-<pid>-<host>-<random>``, then the new folder takes its place, then the old one goes:
a kill at any instant leaves the old or the new folder under the target's name, or (between the
two renames) the old one under its hidden name, which the next writer or reader renames back
(``clean_leftovers``). Leftovers count as stale once their owning process is dead (same host) or
they are older than ``STALE_S``; a live writer's folders are left alone.

Nothing of the user's is deleted: a replaced (or leftover old) folder that holds anything but the
files toymech writes (``OWNED``) is moved into ``<parent>/.quarantine/`` with a note, not removed.

Fault injection for tests: ``TOYMECH_FAULT=after-tmp-write`` (the temporary folder is complete,
nothing renamed yet), ``between-renames`` (the old folder is hidden, the new one not yet in place)
or ``holding-lock`` (see ``toymech.zoo.locks``) makes the process SIGKILL itself at that point.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..devices import HOST, owner_tag, process_alive

STALE_S = 600.0  # leftovers of a writer on another host count as abandoned after 10 minutes
LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<owner>.+)$")
_OWNER = re.compile(r"^(?P<pid>\d+)(?:-(?P<host>[0-9a-f]{8}))?(?:-|$)")
# What toymech itself writes into a checkpoint folder; anything else there is the user's.
OWNED = frozenset({"config.json", "model.safetensors", "snapshots.safetensors", "train_state.pt",
                   "QUARANTINED.txt"})
KEEP_DIR = ".quarantine"


def fault(point: str) -> None:
    """Kill this process at ``point`` when ``$TOYMECH_FAULT`` names it (crash tests only)."""
    if os.environ.get("TOYMECH_FAULT") == point:
        if hasattr(signal, "SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(137)


def foreign_files(folder: Path, owned: frozenset[str] = OWNED) -> list[str]:
    """Names in ``folder`` that toymech did not write (sorted; [] when it cannot be read)."""
    try:
        return sorted(e.name for e in os.scandir(folder) if e.name not in owned or not
                      e.is_file(follow_symlinks=False))
    except OSError:
        return []


def move_aside(folder: Path, keep_dir: Path, reason: str = "", name: str | None = None) -> Path:
    """Move ``folder`` to ``keep_dir/<name>-<time>`` (kept, never deleted; the reason goes into
    QUARANTINED.txt). Returns where it went. ValueError (one line) when ``keep_dir`` cannot be
    made (a file in its place, a read-only folder)."""
    try:
        keep_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"quarantine={str(keep_dir)!r} is not allowed: a folder toymech can "
                         f"create and write ({exc.strerror or exc})") from None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = name or Path(folder).name
    dest, n = keep_dir / f"{base}-{stamp}", 1
    while os.path.lexists(dest):
        dest, n = keep_dir / f"{base}-{stamp}-{n}", n + 1
    os.rename(folder, dest)
    if reason and dest.is_dir():
        try:
            (dest / "QUARANTINED.txt").write_text(reason + "\n")
        except OSError:
            pass
    return dest


def _dispose(old: Path, keep_dir: Path, name: str, why: str) -> str:
    """Remove a replaced folder of ours, or move it aside when it holds the user's files."""
    foreign = foreign_files(old)
    if not foreign:
        shutil.rmtree(old, ignore_errors=True)
        return f"removed {old.name}"
    dest = move_aside(old, keep_dir, f"{why}; kept because it held files toymech did not write: "
                      f"{', '.join(foreign[:5])}", name)
    return f"moved {old.name} to {dest} (it held {', '.join(foreign[:5])})"


def _age(path: str | Path) -> float:
    st = os.stat(path, follow_symlinks=False)
    return time.time() - max(st.st_mtime, st.st_ctime)  # a rename updates ctime


def _stale(path: str, owner: str, stale_s: float) -> bool:
    m = _OWNER.match(owner)
    if m and process_alive(int(m["pid"]), m["host"] or HOST) is False:
        return True
    try:
        return _age(path) > stale_s
    except FileNotFoundError:
        return False


def clean_leftovers(parent: Path, name: str | None = None, *, stale_s: float = STALE_S) -> list[str]:
    """Deal with the stale hidden folders of interrupted writes in ``parent`` (those of ``name``
    only, or all): an old folder whose target is missing is renamed back (the new one never
    arrived); other leftovers are removed (an old one holding the user's files is moved into
    ``.quarantine`` instead). Returns one line per action."""
    try:
        items = sorted(os.scandir(parent), key=lambda e: e.name)
    except OSError:
        return []
    done = []
    for item in items:
        m = LEFTOVER.match(item.name)
        if (not m or (name is not None and m["name"] != name) or not item.is_dir(follow_symlinks=False)
                or not _stale(item.path, m["owner"], stale_s)):
            continue
        target = Path(parent) / m["name"]
        if m["kind"] == "old" and not os.path.lexists(target):
            try:
                os.rename(item.path, target)
                done.append(f"restored {target.name} from {item.name}")
                continue
            except OSError:
                pass  # someone else restored or wrote it meanwhile
        if m["kind"] == "old":
            done.append(_dispose(Path(item.path), Path(parent) / KEEP_DIR, m["name"],
                                 "replaced by a newer write"))
        else:
            shutil.rmtree(item.path, ignore_errors=True)
            done.append(f"removed {item.name}")
    return done


def _fsync(path: Path) -> None:
    # kill -9 cannot lose page-cached data; this is for power loss, and best effort.
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def write_folder_atomically(target: Path, writers: dict[str, Callable[[Path], None]],
                            log: Callable[[str], None] | None = None) -> Path:
    """Write each ``name -> writer(path)`` (in order) into a temporary folder, then rename it to
    ``target``. An existing ``target`` is replaced only after the new folder is complete, and a
    kill at any instant leaves the old or the new folder (see the module docstring). A replaced
    folder holding files toymech did not write is moved into ``.quarantine`` (said on ``log``)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(target.parent, target.name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{owner_tag()}-", dir=target.parent))
    try:
        for name, writer in writers.items():
            writer(tmp / name)
            _fsync(tmp / name)
        fault("after-tmp-write")
        old = _rename_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        line = _dispose(old, target.parent / KEEP_DIR, target.name, f"replaced by a new {target.name}")
        if log and not line.startswith("removed"):
            log(f"[toymech] {line}")
    _fsync(target.parent)
    return target


def _rename_into_place(tmp: Path, target: Path) -> Path | None:
    """Rename ``tmp`` to ``target``; returns the hidden old folder it replaced (or None)."""
    for _ in range(5):  # only unlocked writers racing on one target ever loop
        if not os.path.lexists(target):
            try:
                os.rename(tmp, target)
                return None
            except OSError:
                if not os.path.lexists(target):
                    raise
                continue  # another writer's folder arrived first: replace it
        if not target.is_dir() or target.is_symlink():
            raise ValueError(f"checkpoint={str(target)!r} is not allowed: a folder toymech wrote "
                             "(a file or link has its name; move it away)")
        old = target.with_name(f".{target.name}.old-{owner_tag()}-{secrets.token_hex(3)}")
        try:
            os.rename(target, old)
        except FileNotFoundError:
            continue
        fault("between-renames")
        try:
            os.rename(tmp, target)
        except OSError:
            try:
                os.rename(old, target)  # put the old one back rather than leave nothing
            except OSError:
                pass
            raise
        return old
    raise OSError(f"could not rename {tmp} to {target}: other writers keep replacing it")
