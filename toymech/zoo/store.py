"""The model zoo: trained models cached on disk under a hash of their full configuration.

An entry is a folder ``<cache>/<task>-<key>/`` holding ``model.safetensors`` and
``config.json`` (task, model and train configs, the metrics history, wall time, device, its own
key and the integrity record of ``checkpoints``). The key hashes the task, model and train
configs plus a caller-given ``tag`` (use it when callbacks add to the history), NOT the device:
a model trained on a GPU is reused on a laptop.

Served means verified. Every load checks the entry (weights and metadata against their hashes,
its tensors against its config: names, shapes, dtypes, finite parameters; its key against its
folder name). An entry that fails, or has no integrity record (an older toymech: ``toymech zoo
verify --adopt`` adopts it explicitly), is never loaded as a result: ``load`` refuses it in one
line; ``get_or_train`` moves it into ``<cache>/.quarantine/<name>-<time>`` (never deleted) and
trains it again, saying so even when quiet. An entry of a newer format is refused, never
replaced. States and repairs: ``inventory``.

Input first. ``get_or_train`` checks its arguments and runs the preflight (``preflight``: the
task fits the model, memory against a limit, freeze patterns against the parameter names, a
forward pass on two sequences) before it takes a lock or writes anything; a run that diverges
(``divergence``) stores nothing.

Writers. Entries are written atomically (``atomic.write_folder_atomically``) by one process at
a time: a writer holds ``<cache>/.<name>.lock`` (``locks``) while it trains and stores; a second
writer waits (at most the lock timeout), then finds the entry and loads it.

Training. What a missing entry takes to train (continuing the longest shorter run of its
setting, stacking seeds) is the policy in ``zoo.runs``; this module stores what it returns.

Location: ``cache_dir`` argument, else ``$TOYMECH_CACHE``, else ``~/.cache/toymech`` (a
TOYMECH_CACHE set but empty is refused, never read as unset).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformer_lens import HookedTransformer

from ..core import check, check_bool
from ..devices import resolve_device, use_thread_policy
from ..models import build_model, move
from ..training import checkpoints, live
from ..training.atomic import clean_leftovers
from ..training.checkpoints import DamagedCheckpoint, Unverified
from ..training.divergence import DIVERGED_LOSS, TrainingDiverged
from ..training.experiment import Experiment
from ..training.loop import Callback, TrainResult
from ..training.preflight import check_callbacks, preflight
from . import inventory, runs
from .locks import EntryLock
from .locks import lock_timeout as lock_timeout_s
from .runs import notice
from .stats import add_zoo_stats, loaded_from_zoo, mark_trained


def default_cache_dir() -> Path:
    """``$TOYMECH_CACHE``, else ``~/.cache/toymech``. Set but empty (or blank) is refused, not
    read as unset: a script whose variable came out empty must not train into the home folder."""
    env = os.environ.get("TOYMECH_CACHE")
    check_cache_env(env)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "toymech"


def check_cache_env(env: str | None) -> None:
    """``$TOYMECH_CACHE``'s value: unset (None) or a path that is not blank."""
    check(env is None or env.strip() != "", "TOYMECH_CACHE", env,
          "a folder path, or unset (then ~/.cache/toymech); it is set but empty")


@dataclass
class ZooEntry:
    """One trained model of the zoo, as ``Zoo.get_or_train`` (or ``load``) returns it.

    ``model``: the ``HookedTransformer`` (on the device asked for); ``meta``: its ``config.json``
    (task, model and train configs, key, device, seconds, integrity record); ``loaded``: True when
    read from the zoo, False when trained by this call; ``path``: the entry's folder;
    ``history``: the metrics rows logged during training; ``snapshots``: step -> parameters, read
    from disk on first use (see ``model_at``).
    """

    model: HookedTransformer
    meta: dict[str, Any]
    loaded: bool  # True: read from the cache; False: trained now
    path: Path
    history: list[dict[str, float]] = field(default_factory=list)
    # step -> trained parameters (CPU); a loaded entry reads them from disk on first use
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict, repr=False)

    @property
    def final(self) -> dict[str, float]:
        """The last row of the training history (the final metrics); {} when there is none."""
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


def _check_call(exp: Any, tag: Any, log: Any) -> None:
    check(isinstance(exp, Experiment), "experiment", exp, "an Experiment (toymech.experiments.get)")
    check(isinstance(tag, str), "tag", tag, "a string ('' for none)")
    check(log is None or callable(log), "log", log, "None or a callable taking one line")


def _check_history(history: list[dict[str, Any]]) -> None:
    """A result whose losses are non-finite or past ``DIVERGED_LOSS`` is not stored as good."""
    for row in history:
        for key in ("train_loss", "eval_loss"):
            v = row.get(key)
            if isinstance(v, (int, float)) and not (math.isfinite(v) and v <= DIVERGED_LOSS):
                raise TrainingDiverged(f"training diverged: {key}={v:.4g} at step "
                                       f"{row.get('step')}; nothing was stored")


class Zoo:
    """The model zoo in ``cache_dir`` (None: ``$TOYMECH_CACHE``, else ``~/.cache/toymech``): the
    only writer of trained models (see the module docstring).

    ``lock_timeout``: seconds a writer waits for another process's lock on the same entry (None:
    ``$TOYMECH_LOCK_TIMEOUT``, else 6 hours). Raises ``ValueError`` for a blank or non-path
    ``cache_dir`` or a bad timeout. Example: ``Zoo().get_or_train(experiments.get("induction-2l",
    size="smoke", seed=0)).model``.
    """

    def __init__(self, cache_dir: str | Path | None = None, *, lock_timeout: float | None = None):
        if cache_dir is None:
            self.root = default_cache_dir()
        else:
            check(isinstance(cache_dir, (str, Path)) and str(cache_dir).strip() != ""
                  and "\0" not in str(cache_dir), "cache_dir", cache_dir,
                  "None (the default zoo) or a folder path")
            self.root = Path(cache_dir).expanduser()
        lock_timeout_s(lock_timeout)  # checked now (and $TOYMECH_LOCK_TIMEOUT), not at the first lock
        self.lock_timeout = lock_timeout

    def path(self, exp: Experiment, tag: str = "") -> Path:
        """The folder ``exp``'s entry has (or would have) under ``tag`` (see ``get_or_train``)."""
        _check_call(exp, tag, None)
        return self.root / f"{exp.task.name}-{exp.key(tag)}"

    def lock(self, exp: Experiment, tag: str = "", log=None) -> EntryLock:
        """The writer's claim on ``exp``'s entry under ``tag`` (``with zoo.lock(exp): ...``);
        ``log`` (a print-like function, or None) hears that it waits for another holder."""
        return EntryLock(self.root, self.path(exp, tag).name, log, timeout=self.lock_timeout)

    def has(self, exp: Experiment, tag: str = "") -> bool:
        """Whether the zoo holds an entry for ``exp`` under ``tag`` (not yet verified: ``load``
        verifies)."""
        path = self.path(exp, tag)
        if not os.path.lexists(path) and self.root.is_dir():
            if any(e.name.startswith(f".{path.name}.old-") for e in os.scandir(self.root)):
                inventory.recover(self.root, path.name)  # a --retrain killed between renames
        return os.path.lexists(path / checkpoints.CONFIG)

    def load(self, exp: Experiment, device: str | torch.device = "auto", tag: str = "",
             log=print) -> ZooEntry:
        """Read ``exp``'s entry (under ``tag``), checked and verified, onto ``device``
        (``"auto"``: CUDA, else MPS, else CPU); ``log`` hears one line (None: quiet). Raises
        ``ValueError`` (one line, naming the folder) when it is absent, damaged, unverified or of
        a newer format; ``get_or_train`` instead moves a damaged or unverified entry aside and
        retrains."""
        _check_call(exp, tag, log)
        inventory.check_root(self.root)
        path = self.path(exp, tag)
        dev = resolve_device(device)
        use_thread_policy(dev, log)  # what is measured on it runs on the policy's threads
        if not self.has(exp, tag) and not os.path.lexists(path):
            raise ValueError(f"zoo={str(self.root)!r} has no entry {path.name} for "
                             f"{exp.name or exp.task.name}: get_or_train (toymech train) makes it")
        meta, state, verified, model = inventory.check_entry(path, build=True)
        if not verified:
            raise Unverified(path)
        model.load_state_dict(state, strict=False)
        model = move(model, dev)
        loaded_from_zoo(path)
        if log:
            log(f"[toymech] loaded {exp.name or exp.task.name} from the zoo ({path.name}; "
                f"trained on {meta.get('device')} in {meta.get('seconds', 0):.0f} s)")
        return ZooEntry(model, meta, True, path, meta.get("history", []))

    def store(self, exp: Experiment, result: TrainResult, device: torch.device, tag: str = "",
              **extra: Any) -> ZooEntry:
        """Write ``result`` (a ``TrainResult`` of ``exp``, trained on ``device``) into the zoo
        under ``tag`` (the only place models are written), replacing the entry if there is one;
        ``extra`` keys join its metadata. Returns the new ``ZooEntry``."""
        _check_call(exp, tag, None)
        _check_history(result.history)
        with self.lock(exp, tag):
            return self._store(exp, result, device, tag, **extra)

    def _store(self, exp: Experiment, result: TrainResult, device: torch.device, tag: str = "",
               log=None, **extra: Any) -> ZooEntry:
        path = self.path(exp, tag)
        _check_history(result.history)
        meta = {**exp.to_dict(), "tag": tag, "key": exp.key(tag), "history": result.history,
                "seconds": result.seconds, "device": str(device), "trainable": result.trainable,
                "frozen": result.frozen, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **extra}
        if result.train_state is not None:
            meta["continuable"] = True  # train_state.pt: a longer run can go on from here
        try:
            checkpoints.save_model(path, result.model, meta, train_state=result.train_state,
                                   snapshots=result.snapshots, log=lambda line: notice(log, line))
        except OSError as exc:
            raise ValueError(f"zoo={str(self.root)!r} is not allowed: a folder toymech can write "
                             f"({exc.strerror or exc}); the trained model was not stored") from None
        if result.snapshots:
            meta["snapshot_steps"] = sorted(result.snapshots)
        add_zoo_stats(trained=1, train_seconds=result.seconds)
        mark_trained(path)
        try:
            self.clean()  # what killed writers of other entries left behind
        except (OSError, ValueError):
            pass  # the entry is stored; leftovers wait for the next writer
        return ZooEntry(result.model, meta, False, path, result.history, dict(result.snapshots))

    def get_or_train(self, exp: Experiment, *, device: str | torch.device = "auto",
                     callbacks: Iterable[Callback] = (), tag: str = "", retrain: bool = False,
                     progress: bool = True, log=print) -> ZooEntry:
        """Load ``exp`` from the cache, or train it (and store it) if it is not there, damaged
        or unverified (that entry is moved to ``.quarantine``). Everything is checked before
        any work (see the module docstring). Holds the entry's lock while training: a
        concurrent caller waits, then loads what this one stored.

        ``device``: where it trains and is returned (``"auto"``: CUDA, else MPS, else CPU; not
        part of the key). ``callbacks``: ``training.Callback`` objects whose metrics join the
        history (give them a ``tag``, which joins the key, so that their entry is not a plain
        run's). ``retrain``: train again even if the entry is sound (the old one is
        quarantined). ``progress``: a progress bar; ``log``: a print-like function for its lines
        (None: quiet). Returns the ``ZooEntry``; raises ``ValueError`` for a bad argument or an
        experiment the preflight refuses, ``TrainingDiverged`` when the run diverges (nothing is
        stored) and ``LockTimeout`` when another writer holds the entry too long. On a CPU the
        process's torch threads follow the package's policy, as ``toymech train`` sets them,
        unless the process or its user chose already (``devices.use_thread_policy``)."""
        _check_call(exp, tag, log)
        retrain, progress = check_bool("retrain", retrain), check_bool("progress", progress)
        callbacks = check_callbacks(callbacks)
        inventory.check_root(self.root)
        dev = resolve_device(device)
        use_thread_policy(dev, log)  # the threads `toymech train` uses, unless chosen already
        if not retrain:
            entry = self._load_sound(exp, dev, tag, log, repair=False)
            if entry is not None:
                return entry
        else:
            self._refuse_newer(exp, tag)
        plan = preflight(exp, dev, extra_metrics=bool(callbacks))  # before the lock: a refused
        # experiment writes nothing
        with self.writing():
            with self.lock(exp, tag, log):
                if not retrain:  # again: another process may have stored it while we waited
                    entry = self._load_sound(exp, dev, tag, log, repair=True)
                    if entry is not None:
                        return entry
                with live.training(f"{exp.name or exp.task.name} seed {exp.train.seed}"):
                    result, extra = runs.train_or_continue(self.root, plan.model, exp, tag, dev,
                                                           callbacks, progress, log)
                return self._store(exp, result, dev, tag, log=log, **extra)

    @contextlib.contextmanager
    def writing(self):
        """A context for writing entries: removes the zoo folder again if it was created for a
        run that failed (a refused or diverged run leaves no empty zoo behind)."""
        created = not os.path.lexists(self.root)
        try:
            yield
        except BaseException:
            if created:
                try:
                    self.root.rmdir()  # only if empty
                except OSError:
                    pass
            raise

    def _refuse_newer(self, exp: Experiment, tag: str) -> None:
        """``retrain`` never replaces an entry that a newer toymech wrote."""
        path = self.path(exp, tag)
        if os.path.lexists(path):
            row = inventory.status(path, build=False)
            if row and row["status"] == "newer":
                raise ValueError(f"retrain=True is not allowed for zoo entry {str(path)!r}: it is "
                                 f"{row['problem']}; it is left as it is")

    def _load_sound(self, exp: Experiment, dev: torch.device, tag: str, log,
                    repair: bool) -> ZooEntry | None:
        """The entry if it is there and sound, else None; with ``repair`` (under the lock), an
        orphaned old entry is restored first and a damaged or unverified one quarantined."""
        path = self.path(exp, tag)
        if repair:
            clean_leftovers(self.root, path.name)
        if not os.path.lexists(path) and not self.has(exp, tag):
            return None
        try:
            return self.load(exp, dev, tag, log)
        except DamagedCheckpoint as exc:
            if repair:
                moved = self.quarantine(path, str(exc))
                notice(log, f"[toymech] {exc}; moved it to {moved} and training it again")
            return None

    def longest_continuable(self, exp: Experiment, tag: str = "") -> runs.ContinuableRun | None:
        """The zoo's longest shorter run of ``exp``'s setting (and ``tag``) that ``exp`` can
        continue, or None (``zoo.runs.longest_continuable``)."""
        return runs.longest_continuable(self.root, exp, tag)

    def get_or_train_many(self, exps: Sequence[Experiment], *, device: str | torch.device = "auto",
                          callbacks: Sequence[Iterable[Callback]] | None = None, tag: str = "",
                          stacked: bool | None = None, progress: bool = False, log=None
                          ) -> list[ZooEntry]:
        """``get_or_train`` for each experiment of ``exps`` (the entries in that order); the
        missing ones that share a model shape and differ in training only by their seeds
        (``training.stacking.stack_key``: seeds, and a map's data knobs) train together as one
        stacked program when ``stacked`` (None: where it was measured to pay, see
        ``stacking_pays``). ``device``, ``tag``, ``progress`` and ``log`` as in ``get_or_train``;
        ``callbacks``: None, or one iterable of callbacks per experiment (``zoo.runs.train_many``)."""
        exps = list(exps)
        for e in exps:
            _check_call(e, tag, log)
        check(stacked is None or isinstance(stacked, bool), "stacked", stacked,
              "None (where it pays), True or False")
        progress = check_bool("progress", progress)
        cbs = ([check_callbacks(c) for c in callbacks] if callbacks is not None
               else [[] for _ in exps])
        check(len(cbs) == len(exps), "callbacks", len(cbs), f"one list per experiment ({len(exps)})")
        return runs.train_many(self, exps, cbs, resolve_device(device), tag, stacked, progress, log)

    # ----------------------------------------------------------------------------------------
    # checking, listing, repairing (inventory)
    # ----------------------------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """Metadata of every cached model (newest first), each with ``path``, ``status`` (ok,
        unverified, newer or damaged) and ``problem`` (one line; a damaged entry carries
        nothing else). Never raises on a bad entry."""
        inventory.check_root(self.root)
        try:
            self.clean()
        except (OSError, ValueError):
            pass  # a read-only zoo is still listed
        rows = [r for r in (inventory.status(p, build=False) for p in inventory.folders(self.root)) if r]
        return sorted(rows, key=lambda m: str(m.get("created", "")), reverse=True)

    def verify(self, fix: bool = False, adopt: bool = False) -> list[dict[str, Any]]:
        """Check every entry fully (``inventory.verify``): ``adopt`` the unverified ones that
        pass, ``fix`` (quarantine) the damaged and unverified ones. Rows as in ``entries``."""
        fix, adopt = check_bool("fix", fix), check_bool("adopt", adopt)
        try:
            return inventory.verify(self.root, fix=fix, adopt_old=adopt,
                                    lock_timeout=self.lock_timeout)
        except OSError as exc:
            raise ValueError(f"zoo={str(self.root)!r} is not allowed: a folder toymech can write "
                             f"({exc.strerror or exc})") from None

    def quarantined(self) -> list[Path]:
        """The folders kept in ``<zoo>/.quarantine`` (never served), sorted by name."""
        return inventory.quarantined(self.root)

    def quarantine(self, path: Path, reason: str = "") -> Path:
        """Move the entry folder ``path`` to ``<zoo>/.quarantine/<name>-<time>`` (kept, never
        deleted, with the ``reason`` in QUARANTINED.txt); returns where it went."""
        return inventory.quarantine(self.root, Path(path), reason)

    def clean(self, stale_s: float = inventory.STALE_S) -> list[str]:
        """Deal with what killed writers left and break locks older than ``stale_s`` seconds
        whose holder is gone (``inventory.clean``); returns what it did, one line each."""
        return inventory.clean(self.root, stale_s)
