"""The model zoo: trained models cached on disk under a hash of their full configuration.

An entry is a folder ``<cache>/<task>-<key>/`` holding ``model.safetensors`` and
``config.json`` (task, model and train configs, the metrics history, wall time, device, its own
key and the integrity record of ``checkpoints``). The key hashes the task, model and train
configs plus a caller-given ``tag`` (use it when callbacks add to the history), NOT the device:
a model trained on a GPU is reused on a laptop.

Trust. Every load checks the entry (weights sha256, metadata hash, finite weights, its key
against its folder name); a damaged entry raises one ValueError naming the folder and how.
``get_or_train`` then moves it aside into ``<cache>/.quarantine/<name>-<time>`` (never deleted)
and trains it again; ``load`` only reports it. Entries without a record (older toymech) load as
*unverified*.

Writers. Entries are written atomically (``checkpoints.write_folder_atomically``) by one
process at a time: a writer holds ``<cache>/.<name>.lock`` (created with O_CREAT|O_EXCL, holding
its pid, host and start time) while it trains and stores; a second writer waits, then finds the
entry and loads it. A lock whose holder died is broken by the next writer. Hidden folders
(``.tmp-``, ``.old-``, ``.quarantine``, locks) are never listed.

Location: ``cache_dir`` argument, else ``$TOYMECH_CACHE``, else ``~/.cache/toymech``.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
from transformer_lens import HookedTransformer

from ..core import check, jsonable
from ..devices import resolve_device
from ..models import BaselineConfig, ModelConfig, build_model, config_from_dict, move
from ..tasks import Task, from_dict as task_from_dict
from . import checkpoints
from .checkpoints import DamagedCheckpoint
from .config import TrainConfig
from .locks import EntryLock

_ENTRY = re.compile(r"^.+-[0-9a-f]{16}$")  # an entry's folder name: <task>-<key>
from .loop import Callback, TrainResult, train, train_stacked


def default_cache_dir() -> Path:
    env = os.environ.get("TOYMECH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "toymech"


@dataclass
class Experiment:
    """Everything that defines a trained model: a task, a model config and a train config."""

    task: Task
    model: ModelConfig | BaselineConfig
    train: TrainConfig
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task.to_dict(), "model": self.model.to_dict(),
                "train": self.train.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Experiment":
        check(isinstance(d, dict), "experiment", type(d).__name__,
              "a JSON object with task, model and train")
        for key in ("task", "model", "train"):
            if key not in d:
                raise ValueError(f"experiment is missing {key!r}: it needs task, model and train")
        unknown = sorted(set(d) - {"name", "task", "model", "train"})
        check(not unknown, "experiment key", unknown[0] if unknown else None,
              "one of name, task, model, train")
        return cls(task_from_dict(d["task"]), config_from_dict(d["model"]),
                   TrainConfig.from_dict(d["train"]), d.get("name", ""))

    def key(self, tag: str = "") -> str:
        d = self.to_dict()
        d.pop("name")
        blob = json.dumps(jsonable({**d, "tag": tag}), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Named:
    """A named experiment: ``make(size, seed) -> Experiment`` (see ``toymech.experiments``)."""

    name: str
    description: str
    make: Callable[[str, int], Experiment]
    study: str = ""


@dataclass
class ZooEntry:
    model: HookedTransformer
    meta: dict[str, Any]
    loaded: bool  # True: read from the cache; False: trained now
    path: Path
    history: list[dict[str, float]] = field(default_factory=list)
    # step -> trained parameters (CPU); a loaded entry reads them from disk on first use
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict, repr=False)

    @property
    def final(self) -> dict[str, float]:
        return self.history[-1] if self.history else {}

    @property
    def snapshot_steps(self) -> list[int]:
        """The steps with a parameter snapshot (sorted; [] when the run recorded none)."""
        return sorted(int(s) for s in self.meta.get("snapshot_steps", []))

    def model_at(self, step: int) -> HookedTransformer:
        """A fresh copy of the model (same config and device) with the parameters it had after
        ``step`` optimizer updates (0: at initialisation); parameters that never train are the
        final model's, which are also their initial values."""
        available = self.snapshot_steps
        check(step in available, "step", step,
              f"one of the snapshot steps {available}" if available else
              "nothing: this run recorded no snapshots (TrainConfig.snapshots)")
        if step not in self.snapshots:
            self.snapshots.update(checkpoints.load_snapshots(self.path, self.meta))
        params = self.snapshots[step]
        model = build_model(self.model.toymech_config)
        model.load_state_dict(self.model.state_dict())
        model = move(model, next(self.model.parameters()).device)
        own = dict(model.named_parameters())
        with torch.no_grad():
            for name, value in params.items():
                own[name].copy_(value)
        return model.eval()


def _notice(log, line: str) -> None:
    """A line the user must see: through ``log``, else on stderr."""
    (log or (lambda text: print(text, file=sys.stderr, flush=True)))(line)


class Zoo:
    def __init__(self, cache_dir: str | Path | None = None):
        self.root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()

    def path(self, exp: Experiment, tag: str = "") -> Path:
        return self.root / f"{exp.task.name}-{exp.key(tag)}"

    def lock(self, exp: Experiment, tag: str = "", log=None) -> EntryLock:
        """The writer's claim on ``exp``'s entry (``with zoo.lock(exp): ...``)."""
        return EntryLock(self.root, self.path(exp, tag).name, log)

    def has(self, exp: Experiment, tag: str = "") -> bool:
        path = self.path(exp, tag)
        if not (path / "config.json").is_file() and self.root.is_dir():
            if any(self.root.glob(f".{glob.escape(path.name)}.old-*")):
                self._recover(path.name)  # a --retrain killed between its two renames
        return (path / "config.json").is_file()

    def load(self, exp: Experiment, device: str | torch.device = "auto", tag: str = "",
             log=print) -> ZooEntry:
        """Read ``exp``'s entry, checked. ValueError (one line, naming the folder) when it is
        absent or damaged; ``get_or_train`` instead moves a damaged entry aside and retrains."""
        path = self.path(exp, tag)
        dev = resolve_device(device)
        if not self.has(exp, tag) and not path.exists():
            raise ValueError(f"zoo={str(self.root)!r} has no entry {path.name} for "
                             f"{exp.name or exp.task.name}: get_or_train (toymech train) makes it")
        meta, state, verified, model = self._check(path, build=True)
        model.load_state_dict(state, strict=False)
        model = move(model, dev)
        if log:
            log(f"[toymech] loaded {exp.name or exp.task.name} from the zoo ({path.name}; "
                f"trained on {meta.get('device')} in {meta.get('seconds', 0):.0f} s)"
                + ("" if verified else "; unverified: saved by an older toymech"))
        return ZooEntry(model, meta, True, path, meta.get("history", []))

    def store(self, exp: Experiment, result: TrainResult, device: torch.device, tag: str = "",
              **extra: Any) -> ZooEntry:
        """Write a trained model into the zoo (the only place models are written), replacing
        the entry if there is one."""
        with self.lock(exp, tag):
            return self._store(exp, result, device, tag, **extra)

    def _store(self, exp: Experiment, result: TrainResult, device: torch.device, tag: str = "",
               **extra: Any) -> ZooEntry:
        path = self.path(exp, tag)
        meta = {**exp.to_dict(), "tag": tag, "key": exp.key(tag), "history": result.history,
                "seconds": result.seconds, "device": str(device), "trainable": result.trainable,
                "frozen": result.frozen, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **extra}
        checkpoints.save_model(path, result.model, meta, snapshots=result.snapshots)
        if result.snapshots:
            meta["snapshot_steps"] = sorted(result.snapshots)
        self.clean()  # what killed writers of other entries left behind
        return ZooEntry(result.model, meta, False, path, result.history, dict(result.snapshots))

    def get_or_train(self, exp: Experiment, *, device: str | torch.device = "auto",
                     callbacks: Iterable[Callback] = (), tag: str = "", retrain: bool = False,
                     progress: bool = True, log=print) -> ZooEntry:
        """Load ``exp`` from the cache, or train it (and store it) if it is not there or damaged
        (the damaged entry is moved to ``.quarantine``). Holds the entry's lock while training:
        a concurrent caller waits, then loads what this one stored."""
        dev = resolve_device(device)
        if not retrain:
            entry = self._load_sound(exp, dev, tag, log, repair=False)
            if entry is not None:
                return entry
        with self.lock(exp, tag, log):
            if not retrain:  # again: another process may have stored it while we waited
                entry = self._load_sound(exp, dev, tag, log, repair=True)
                if entry is not None:
                    return entry
            model = build_model(exp.model, dev)
            result = train(model, exp.task, exp.train, device=dev, callbacks=callbacks,
                           progress=progress, log=log)
            return self._store(exp, result, dev, tag)

    def _load_sound(self, exp: Experiment, dev: torch.device, tag: str, log,
                    repair: bool) -> ZooEntry | None:
        """The entry if it is there and sound, else None; with ``repair`` (under the lock), an
        orphaned old entry is restored first and a damaged one quarantined."""
        path = self.path(exp, tag)
        if repair:
            checkpoints.clean_leftovers(self.root, path.name)
        if not path.exists() and not self.has(exp, tag):
            return None
        try:
            return self.load(exp, dev, tag, log)
        except DamagedCheckpoint as exc:
            if repair:
                moved = self.quarantine(path, str(exc))
                _notice(log, f"[toymech] {exc}; moved it to {moved} and training it again")
            return None

    def get_or_train_many(self, exps: Sequence[Experiment], *, device: str | torch.device = "auto",
                          callbacks: Sequence[Iterable[Callback]] | None = None, tag: str = "",
                          stacked: bool | None = None, progress: bool = False, log=None
                          ) -> list[ZooEntry]:
        """``get_or_train`` for each experiment; the missing ones that differ only in their seeds
        train together as stacked seeds when ``stacked`` (None: where it was measured to pay,
        see ``stacking_pays``)."""
        dev = resolve_device(device)
        exps = list(exps)
        cbs = [list(c) for c in callbacks] if callbacks is not None else [[] for _ in exps]
        missing = [i for i, e in enumerate(exps) if not self.has(e, tag)]
        stack = stacked if stacked is not None else stacking_pays(exps[0], dev) if exps else False
        if stack and len(missing) > 1 and _same_but_seed([exps[i] for i in missing]):
            todo = [exps[i] for i in missing]
            models = [build_model(e.model, dev) for e in todo]
            results = train_stacked(models, todo[0].task, [e.train for e in todo], device=dev,
                                    callbacks=[cbs[i] for i in missing], progress=progress,
                                    log=log)
            # stored under each entry's lock; the trained models are returned as they are
            fresh = {i: self.store(exps[i], r, dev, tag, stacked=len(todo))
                     for i, r in zip(missing, results)}
        else:
            fresh = {}
        return [fresh[i] if i in fresh else
                self.get_or_train(e, device=dev, callbacks=cbs[i], tag=tag, progress=progress,
                                  log=log) for i, e in enumerate(exps)]

    # ----------------------------------------------------------------------------------------
    # checking, listing, repairing
    # ----------------------------------------------------------------------------------------

    def _check(self, path: Path, build: bool):
        """``checkpoints.inspect_folder`` plus the entry's key against its folder name; a
        folder replaced while it was read is read again rather than called damaged."""
        for attempt in range(3):
            try:
                before = os.stat(path).st_ino
                meta, state, verified, model = checkpoints.inspect_folder(path, build=build)
                key = path.name.rsplit("-", 1)[-1]
                if verified and meta.get("key") != key:
                    raise DamagedCheckpoint(path, f"it records the key {meta.get('key')!r}, not "
                                            f"the {key!r} of its folder name (copied or moved "
                                            "from another entry)")
                return meta, state, verified, model
            except (FileNotFoundError, DamagedCheckpoint, ValueError) as exc:
                try:
                    replaced = os.stat(path).st_ino != before
                except (FileNotFoundError, UnboundLocalError):
                    replaced = True
                if replaced and attempt < 2:
                    continue
                if not path.exists():
                    raise ValueError(f"zoo entry {str(path)!r} disappeared while being read") from None
                if isinstance(exc, DamagedCheckpoint):
                    raise
                how = ("it is not a folder" if not path.is_dir() else
                       "neither config.json nor model.safetensors is in it"
                       if isinstance(exc, ValueError) else f"unreadable ({exc})")
                raise DamagedCheckpoint(path, how) from None
        raise AssertionError("not reached")

    def _folders(self) -> list[Path]:
        """Every visible entry folder (hidden names are leftovers, locks or the quarantine)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if not p.name.startswith(".") and (
            _ENTRY.match(p.name) or (p / "config.json").exists() or (p / "model.safetensors").exists()))

    def _status(self, path: Path, build: bool) -> dict[str, Any] | None:
        try:
            meta, _, verified, _ = self._check(path, build)
        except DamagedCheckpoint as exc:
            return {"path": str(path), "status": "damaged", "problem": exc.how}
        except ValueError:
            return None  # gone meanwhile
        except OSError as exc:
            return {"path": str(path), "status": "damaged", "problem": f"unreadable ({exc})"}
        return {**meta, "path": str(path), "status": "ok" if verified else "unverified",
                "problem": ""}

    def entries(self) -> list[dict[str, Any]]:
        """Metadata of every cached model (newest first), each with ``path``, ``status`` (ok,
        unverified or damaged) and ``problem`` (why it is damaged: one line; a damaged entry
        carries nothing else). Never raises on a bad entry."""
        try:
            self.clean()
        except OSError:
            pass  # a read-only zoo is still listed
        rows = [r for r in (self._status(p, build=False) for p in self._folders()) if r]
        return sorted(rows, key=lambda m: str(m.get("created", "")), reverse=True)

    def verify(self, fix: bool = False) -> list[dict[str, Any]]:
        """Check every entry fully (weights loaded into the model their config describes); with
        ``fix``, move the damaged ones to ``.quarantine`` (key ``quarantined``) and clean stale
        leftovers first. Rows as in ``entries``."""
        if fix:
            self.clean()
        rows = []
        for path in self._folders():
            row = self._status(path, build=True)
            if row and fix and row["status"] == "damaged":
                lock = EntryLock(self.root, path.name)
                if not lock.try_acquire():
                    row["problem"] += " (a writer holds it now: not moved)"
                else:
                    try:  # checked again: a writer may have replaced it meanwhile
                        row = self._status(path, build=True)
                        if row and row["status"] == "damaged":
                            row["quarantined"] = str(self.quarantine(path, row["problem"]))
                    finally:
                        lock.release()
            if row:
                rows.append(row)
        return rows

    def quarantine(self, path: Path, reason: str = "") -> Path:
        """Move an entry folder to ``<zoo>/.quarantine/<name>-<time>`` (kept, never deleted,
        with the reason in QUARANTINED.txt); returns where it went."""
        qdir = self.root / ".quarantine"
        qdir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        dest, n = qdir / f"{path.name}-{stamp}", 1
        while dest.exists():
            dest, n = qdir / f"{path.name}-{stamp}-{n}", n + 1
        os.rename(path, dest)
        if reason and dest.is_dir():
            try:
                (dest / "QUARANTINED.txt").write_text(reason + "\n")
            except OSError:
                pass
        return dest

    def clean(self, stale_s: float = checkpoints.STALE_S) -> list[str]:
        """Deal with what killed writers left (``checkpoints.clean_leftovers``: restore an old
        entry whose replacement never arrived, remove stale temporary folders) and break stale
        locks, for every entry whose lock is free. Returns one line per action."""
        if not self.root.is_dir():
            return []
        names = set()
        for item in self.root.iterdir():
            m = checkpoints.LEFTOVER.match(item.name)
            if m:
                names.add(m["name"])
            elif item.name.startswith(".") and item.name.endswith(".lock"):
                names.add(item.name[1:-len(".lock")])
        return [line for name in sorted(names) for line in self._recover(name, stale_s)]

    def _recover(self, name: str, stale_s: float = checkpoints.STALE_S) -> list[str]:
        lock = EntryLock(self.root, name)
        try:
            if not lock.try_acquire():
                return []  # its writer is alive: its folders are not leftovers
        except OSError:
            return []
        try:
            return checkpoints.clean_leftovers(self.root, name, stale_s=stale_s)
        finally:
            lock.release()


def seedless_key(exp: Experiment) -> str:
    """What defines ``exp`` apart from its seeds (and name): equal for runs that differ only in
    their seeds, i.e. that can train together as stacked seeds."""
    d = exp.to_dict()
    d.pop("name", None)
    d["model"].pop("seed", None)
    d["train"].pop("seed", None)
    return json.dumps(jsonable(d), sort_keys=True)


def _same_but_seed(exps: Sequence[Experiment]) -> bool:
    """True when the experiments differ only in their seeds (model and train)."""
    return len({seedless_key(e) for e in exps}) == 1


def stacking_pays(exp: Experiment, device: torch.device) -> bool:
    """Whether stacked seeds beat a loop of single runs for models like ``exp`` on ``device``.

    Measured (benchmarks/bench_multiseed.py, one CPU thread): 1.5x at width 16, none at width
    64. On a GPU one toy model uses a sliver of the device, so stacking always pays there.
    """
    return device.type == "cuda" or getattr(exp.model, "d_model", 10**9) <= 16
