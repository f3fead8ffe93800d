"""The zoo's folders: which are entries, what state each is in, and the repairs (quarantine,
adoption of old entries, leftovers of killed writers). ``Zoo`` delegates here.

A toymech entry is a folder named ``<task>-<16 hex digits>`` in the zoo (anything else, e.g. a
user's ``my-analysis/``, is never listed, checked, moved or deleted). Its status is one of

* ``ok``: it is served;
* ``unverified``: no integrity record (older toymech): not served until adopted
  (``adopt``: its tensors are checked against its config, its configs against its folder's key,
  then it is saved again with a record; its metrics are taken as they are, and it is marked
  ``adopted``);
* ``newer``: written by a newer toymech: left alone, neither served nor called damaged;
* ``damaged``: anything else, with the problem in one line.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from ..tasks.base import version_of
from ..training import checkpoints
from ..training.atomic import KEEP_DIR, LEFTOVER, STALE_S, clean_leftovers, move_aside
from ..training.checkpoints import DamagedCheckpoint, NewerFormat
from ..training.experiment import Experiment
from .locks import EntryLock

ENTRY = re.compile(r"^(?P<task>.+)-(?P<key>[0-9a-f]{16})$")  # an entry's folder name


def check_root(root: Path) -> None:
    """A zoo folder that can be read: a folder, or nothing yet (one-line ValueError otherwise)."""
    if os.path.lexists(root) and not root.is_dir():
        what = ("a broken symlink or a symlink loop" if root.is_symlink() and not root.exists()
                else "a file")
        raise ValueError(f"zoo={str(root)!r} is not allowed: a folder (it is {what})")


def check_entry(path: Path, build: bool):
    """``checkpoints.inspect_folder`` plus the entry's key against its folder name; a folder
    replaced while it was read is read again rather than called damaged."""
    for attempt in range(3):
        try:
            before = os.stat(path).st_ino
            meta, state, verified, model = checkpoints.inspect_folder(path, build=build)
            key = path.name.rsplit("-", 1)[-1]
            if verified and meta.get("key") != key:
                raise DamagedCheckpoint(path, f"it records the key {meta.get('key')!r}, not the "
                                        f"{key!r} of its folder name (copied or moved from "
                                        "another entry)")
            _check_task_version(path, meta)
            return meta, state, verified, model
        except NewerFormat:
            raise
        except (FileNotFoundError, DamagedCheckpoint, ValueError) as exc:
            try:
                replaced = os.stat(path).st_ino != before
            except (FileNotFoundError, UnboundLocalError):
                replaced = True
            if replaced and attempt < 2:
                continue
            if not os.path.lexists(path):
                raise ValueError(f"zoo entry {str(path)!r} disappeared while being read") from None
            if isinstance(exc, DamagedCheckpoint):
                raise
            how = ("it is not a folder" if not path.is_dir() else
                   "neither config.json nor model.safetensors is in it"
                   if isinstance(exc, ValueError) else f"unreadable ({exc})")
            raise DamagedCheckpoint(path, how) from None
        except OSError as exc:
            raise DamagedCheckpoint(path, f"unreadable ({exc.strerror or exc})") from None
    raise AssertionError("not reached")


def _check_task_version(path: Path, meta: dict[str, Any]) -> None:
    """An entry trained on another version of its task is not this toymech's (its data or its
    logged evaluation differ): one of a newer version is a newer toymech's (left alone), one of
    an older version is not served (it would pass for the current task's)."""
    task = meta.get("task") if isinstance(meta.get("task"), dict) else {}
    current = version_of(task.get("name"))
    recorded = task.get("version", 1)  # absent: saved before the task's first change
    if current is None or recorded == current:
        return
    what = f"task {task.get('name')!r} version {recorded!r}, this toymech's is {current}"
    if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > current:
        raise NewerFormat(path, int(meta.get("format", 1)), what)
    raise DamagedCheckpoint(path, f"it was trained on {what} (other data or another logged "
                            "evaluation): not served as the current task's")


def folders(root: Path) -> list[Path]:
    """Every entry folder (by name; hidden names are leftovers, locks or the quarantine)."""
    try:
        return sorted(Path(e.path) for e in os.scandir(root) if ENTRY.match(e.name))
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []


def foreign(root: Path) -> list[Path]:
    """Visible folders in the zoo that hold a config.json but are no entry (left alone)."""
    try:
        items = list(os.scandir(root))
    except OSError:
        return []
    return sorted(Path(e.path) for e in items if not e.name.startswith(".") and not
                  ENTRY.match(e.name) and e.is_dir() and os.path.lexists(Path(e.path) / "config.json"))


def status(path: Path, build: bool) -> dict[str, Any] | None:
    """The row of one entry: its metadata (unless damaged) with ``path``, ``status`` and
    ``problem``; None when it vanished meanwhile. Never raises on a bad entry."""
    try:
        meta, _, verified, _ = check_entry(path, build)
    except NewerFormat as exc:
        return {"path": str(path), "status": "newer", "problem": exc.how}
    except DamagedCheckpoint as exc:
        return {"path": str(path), "status": "damaged", "problem": exc.how}
    except ValueError:
        return None  # gone meanwhile
    if not verified:
        return {**meta, "path": str(path), "status": "unverified",
                "problem": checkpoints.Unverified(path).how}
    return {**meta, "path": str(path), "status": "ok", "problem": ""}


def quarantine(root: Path, path: Path, reason: str = "") -> Path:
    """Move an entry folder to ``<zoo>/.quarantine/<name>-<time>`` (kept, never deleted, with
    the reason in QUARANTINED.txt); returns where it went."""
    return move_aside(path, root / KEEP_DIR, reason)


def quarantined(root: Path) -> list[Path]:
    """The folders in ``<zoo>/.quarantine``, sorted by name ([] when there is none)."""
    try:
        return sorted(Path(e.path) for e in os.scandir(root / KEEP_DIR) if e.is_dir())
    except OSError:
        return []


def adopt(root: Path, path: Path) -> str:
    """Check an unverified entry and save it again with an integrity record (see the module
    docstring); returns what was done. DamagedCheckpoint when it cannot be adopted."""
    meta, state, verified, model = check_entry(path, build=True)
    if verified:
        return "already verified"
    try:
        exp = Experiment.from_dict({k: meta[k] for k in ("name", "task", "model", "train")
                                    if k in meta})
    except ValueError as exc:
        raise DamagedCheckpoint(path, f"its configs are not valid ({exc}): it cannot be adopted") from None
    tag = meta.get("tag", "")
    m = ENTRY.match(path.name)
    if exp.key(tag) != m["key"] or exp.task.name != m["task"]:
        raise DamagedCheckpoint(path, f"its task, model and train configs hash to "
                                f"{exp.task.name}-{exp.key(tag)}, not to its folder name: it "
                                "cannot be adopted")
    model.load_state_dict(state, strict=False)
    snaps = checkpoints.load_snapshots(path, meta, checked=False)
    body = {k: v for k, v in meta.items() if k not in ("integrity", "format", "snapshot_steps")}
    body.update(key=exp.key(tag), adopted=time.strftime("%Y-%m-%dT%H:%M:%S"))
    checkpoints.save_model(path, model, body, snapshots=snaps or None)
    return "adopted: its tensors fit its config and are finite; its metrics are taken as they are"


def clean(root: Path, stale_s: float = STALE_S) -> list[str]:
    """Deal with what killed writers left (``atomic.clean_leftovers``) and break stale locks,
    for every entry whose lock is free. Returns one line per action."""
    try:
        items = list(os.scandir(root))
    except OSError:
        return []
    names = set()
    for item in items:
        m = LEFTOVER.match(item.name)
        if m:
            names.add(m["name"])
        elif item.name.startswith(".") and item.name.endswith(".lock"):
            names.add(item.name[1:-len(".lock")])
    return [line for name in sorted(names) for line in recover(root, name, stale_s)]


def recover(root: Path, name: str, stale_s: float = STALE_S) -> list[str]:
    """The leftovers of ``name``'s killed writers, dealt with under its lock (if it is free)."""
    lock = EntryLock(root, name)
    try:
        if not lock.try_acquire():
            return []  # its writer is alive: its folders are not leftovers
    except (OSError, ValueError):
        return []  # a read-only zoo, or something else in the lock's place: leave it
    try:
        return clean_leftovers(root, name, stale_s=stale_s)
    finally:
        lock.release()


def verify(root: Path, fix: bool = False, adopt_old: bool = False,
           lock_timeout: float | None = None) -> list[dict[str, Any]]:
    """Check every entry fully. ``adopt_old``: adopt the unverified ones that pass (``adopt``);
    ``fix``: move the damaged and (remaining) unverified ones to ``.quarantine`` (key
    ``quarantined``) and clean stale leftovers first. Entries of a newer format and folders that
    are no entries (status ``foreign``) are never touched. Rows as in ``status``."""
    check_root(root)
    if fix:
        clean(root)
    rows = []
    for path in folders(root):
        row = status(path, build=True)
        if row and ((fix and row["status"] in ("damaged", "unverified"))
                    or (adopt_old and row["status"] == "unverified")):
            row = _repair(root, path, row, fix, adopt_old, lock_timeout)
        if row:
            rows.append(row)
    rows += [{"path": str(p), "status": "foreign",
              "problem": "not a toymech entry (its name is no <task>-<key>): left alone"}
             for p in foreign(root)]
    return rows


def _repair(root: Path, path: Path, row: dict[str, Any], fix: bool, adopt_old: bool,
            lock_timeout: float | None) -> dict[str, Any]:
    lock = EntryLock(root, path.name, timeout=lock_timeout)
    if not lock.try_acquire():
        return {**row, "problem": row["problem"] + " (a writer holds it now: not touched)"}
    try:  # checked again: a writer may have replaced it meanwhile
        row = status(path, build=True) or row
        if adopt_old and row["status"] == "unverified":
            try:
                done = adopt(root, path)
                row = {**(status(path, build=True) or row), "adopted": done}
            except DamagedCheckpoint as exc:
                row = {"path": str(path), "status": "damaged", "problem": exc.how}
        if fix and row["status"] in ("damaged", "unverified"):
            row["quarantined"] = str(quarantine(root, path, row["problem"]))
        return row
    finally:
        lock.release()
