"""Checkpoints: a folder with ``model.safetensors`` + ``config.json`` (+ ``train_state.pt`` for
resuming, + ``snapshots.safetensors`` for runs that recorded parameter snapshots).

Integrity. ``config.json`` records ``integrity = {weights_sha256, meta_sha256}``: the sha256 of
the weights file and of the metadata itself (without this record), and the weights file's header
records the metadata hash too. So a swapped, truncated or edited weights file, an edited config
or metrics history, or a config stripped of its record is found when the folder is read (a
``DamagedCheckpoint``: a ValueError naming the folder and what is wrong, in one line). Weights
holding NaN or inf are refused too. A folder without any record was written by an older
toymech: it loads as *unverified*.

Snapshots. ``snapshots.safetensors`` holds the trained parameters at each snapshot step under
keys ``step00000300/blocks.0.attn.W_Q``; ``config.json`` lists the steps (``snapshot_steps``,
covered by the metadata hash) and the record holds the file's sha256 (``snapshots_sha256``), so
a missing, swapped or edited snapshots file is damage like a bad weights file. It is hashed when
the folder is checked and parsed only when a snapshot is asked for (``load_snapshots``).

Crash safety. Everything is written into a hidden folder ``.<name>.tmp-<pid>-<host>-<random>``
beside the target and renamed into place only once complete. An existing target is first
renamed to ``.<name>.old-<pid>-<host>-<random>``, then the new folder takes its place, then the
old one is deleted: a kill at any instant leaves the old or the new folder under the target's
name, or (between the two renames) the old one under its hidden name, which the next writer or
reader renames back (``clean_leftovers``). Leftovers count as stale once their owning process is
dead (same host) or they are older than ``STALE_S``; a live writer's folders are left alone.

Fault injection for tests: ``TOYMECH_FAULT=after-tmp-write`` (the temporary folder is complete,
nothing renamed yet), ``between-renames`` (the old folder is hidden, the new one not yet in place)
or ``holding-lock`` (see ``zoo``) makes the process SIGKILL itself at that point.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import load as load_bytes, load_file, save_file

import toymech

from ..core import jsonable
from ..models import build_model, config_from_dict, move

CONFIG, WEIGHTS, SNAPSHOTS = "config.json", "model.safetensors", "snapshots.safetensors"
_SNAPSHOT_KEY = re.compile(r"^step(?P<step>\d+)/(?P<name>.+)$")
STALE_S = 600.0  # leftovers of a writer on another host count as abandoned after 10 minutes
HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<owner>.+)$")
_OWNER = re.compile(r"^(?P<pid>\d+)(?:-(?P<host>[0-9a-f]{8}))?(?:-|$)")


class DamagedCheckpoint(ValueError):
    """A checkpoint folder whose content is not what was written: ``folder`` and ``how``."""

    def __init__(self, folder: Path | str, how: str):
        self.folder, self.how = Path(folder), " ".join(str(how).split())  # always one line
        super().__init__(f"checkpoint={str(folder)!r} is damaged: {self.how}")


def fault(point: str) -> None:
    """Kill this process at ``point`` when ``$TOYMECH_FAULT`` names it (crash tests only)."""
    if os.environ.get("TOYMECH_FAULT") == point:
        if hasattr(signal, "SIGKILL"):
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(137)


# --------------------------------------------------------------------------------------------
# owners of hidden folders and locks: pid + host
# --------------------------------------------------------------------------------------------


def owner_tag() -> str:
    return f"{os.getpid()}-{HOST}"


def process_start(pid: int) -> str | None:
    """The start time of ``pid`` (Linux /proc), which tells a reused pid from the original."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in "ZX" else fields[19]  # a zombie counts as gone


def process_alive(pid: int, host: str | None = HOST) -> bool | None:
    """Whether ``pid`` runs; None when that cannot be told (another host, or Windows)."""
    if host != HOST or os.name == "nt":
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    if Path("/proc/self/stat").exists() and process_start(pid) is None:
        return False  # a zombie: killed, not yet reaped by its parent
    return True


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
    arrived); other leftovers are deleted. Returns one line per action."""
    try:
        items = sorted(os.scandir(parent), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    done = []
    for item in items:
        m = LEFTOVER.match(item.name)
        if (not m or (name is not None and m["name"] != name) or not item.is_dir(follow_symlinks=False)
                or not _stale(item.path, m["owner"], stale_s)):
            continue
        target = Path(parent) / m["name"]
        if m["kind"] == "old" and not target.exists():
            try:
                os.rename(item.path, target)
                done.append(f"restored {target.name} from {item.name}")
                continue
            except OSError:
                pass  # someone else restored or wrote it meanwhile
        shutil.rmtree(item.path, ignore_errors=True)
        done.append(f"removed {item.name}")
    return done


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


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


def write_folder_atomically(target: Path, writers: dict[str, Callable[[Path], None]]) -> Path:
    """Write each ``name -> writer(path)`` (in order) into a temporary folder, then rename it to
    ``target``. An existing ``target`` is replaced only after the new folder is complete, and a
    kill at any instant leaves the old or the new folder (see the module docstring)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(target.parent, target.name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{owner_tag()}-", dir=target.parent))
    try:
        for name, writer in writers.items():
            writer(tmp / name)
            _fsync(tmp / name)
        fault("after-tmp-write")
        _rename_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync(target.parent)
    return target


def _rename_into_place(tmp: Path, target: Path) -> None:
    for _ in range(5):  # only unlocked writers racing on one target ever loop
        if not target.exists():
            try:
                os.rename(tmp, target)
                return
            except OSError:
                if not target.exists():
                    raise
                continue  # another writer's folder arrived first: replace it
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
        shutil.rmtree(old, ignore_errors=True)
        return
    raise OSError(f"could not rename {tmp} to {target}: other writers keep replacing it")


def _write_json(obj: Any) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(json.dumps(jsonable(obj), indent=1, sort_keys=True))
    return write


def _state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    # safetensors refuses shared or non-contiguous tensors; copies are cheap for toy models.
    return {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _meta_sha256(meta: dict[str, Any]) -> str:
    """Hash of the metadata as JSON reads it back (sorted keys, no whitespace, no record)."""
    body = {k: v for k, v in meta.items() if k != "integrity"}
    return _sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def _snapshot_state(snapshots: dict[int, dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {f"step{step:08d}/{name}": t.detach().cpu().contiguous().clone()
            for step in sorted(snapshots) for name, t in snapshots[step].items()}


def save_model(target: Path, model: torch.nn.Module, meta: dict[str, Any],
               train_state: dict[str, Any] | None = None,
               snapshots: dict[int, dict[str, torch.Tensor]] | None = None) -> Path:
    """Save weights + JSON metadata (which must hold the model config under ``"model"``), with
    the integrity record of the module docstring; ``snapshots`` (step -> parameters) go to
    ``snapshots.safetensors``."""
    cfg = model.toymech_config
    meta = {"toymech_version": toymech.__version__, **meta, "model": cfg.to_dict()}
    meta.pop("snapshot_steps", None)
    if snapshots:
        meta["snapshot_steps"] = sorted(int(s) for s in snapshots)
    hooked = getattr(model, "cfg", None)
    if hasattr(hooked, "to_dict"):
        meta["hooked_config"] = hooked.to_dict()
    meta.pop("integrity", None)
    meta = json.loads(json.dumps(jsonable(meta)))  # exactly what config.json will read back
    meta_sha = _meta_sha256(meta)

    def write_config(path: Path) -> None:  # after the weights, whose hash it records
        record = {"weights_sha256": _sha256((path.parent / WEIGHTS).read_bytes()),
                  "meta_sha256": meta_sha}
        if snapshots:
            record["snapshots_sha256"] = _sha256((path.parent / SNAPSHOTS).read_bytes())
        _write_json({**meta, "integrity": record})(path)

    writers: dict[str, Callable[[Path], None]] = {
        WEIGHTS: lambda p: save_file(_state_dict(model), str(p),
                                     metadata={"toymech_meta_sha256": meta_sha}),
    }
    if snapshots:
        writers[SNAPSHOTS] = lambda p: save_file(_snapshot_state(snapshots), str(p),
                                                 metadata={"toymech_meta_sha256": meta_sha})
    writers[CONFIG] = write_config
    if train_state is not None:
        writers["train_state.pt"] = lambda p: torch.save(train_state, p)
    return write_folder_atomically(Path(target), writers)


# --------------------------------------------------------------------------------------------
# reading and checking
# --------------------------------------------------------------------------------------------


def _read_files(folder: Path, names: tuple[str, ...]) -> dict[str, bytes | None]:
    """The files' bytes (None: absent), read through ONE handle on the folder where the OS has
    them, so that a concurrent replacement cannot mix an old config with new weights."""
    if os.open not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return {n: (folder / n).read_bytes() if (folder / n).is_file() else None for n in names}
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    out: dict[str, bytes | None] = {}
    try:
        for name in names:
            try:
                fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
            except (FileNotFoundError, IsADirectoryError):
                out[name] = None
                continue
            with os.fdopen(fd, "rb") as f:
                out[name] = f.read()
    finally:
        os.close(dfd)
    return out


def _header_metadata(blob: bytes) -> dict[str, str]:
    n = int.from_bytes(blob[:8], "little")
    return json.loads(blob[8:8 + n]).get("__metadata__") or {}


def inspect_folder(folder: Path, *, build: bool = True):
    """Read and check a checkpoint: ``(meta, state, verified, model)`` (model is None unless
    ``build``; ``verified`` is False for folders without an integrity record). Raises
    ``DamagedCheckpoint`` for any damage, ValueError when ``folder`` is no checkpoint at all."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no such folder")
    files = _read_files(folder, (CONFIG, WEIGHTS, SNAPSHOTS))
    raw, blob = files[CONFIG], files[WEIGHTS]
    if raw is None and blob is None:
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no {CONFIG}")
    if raw is None:
        raise DamagedCheckpoint(folder, f"{CONFIG} is missing ({WEIGHTS} is there)")
    try:
        meta = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise DamagedCheckpoint(folder, f"{CONFIG} is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DamagedCheckpoint(folder, f"{CONFIG} holds a JSON {type(meta).__name__}, not an object")
    if not isinstance(meta.get("model"), dict):
        raise DamagedCheckpoint(folder, f"{CONFIG} has no model config (key 'model')")
    if blob is None:
        raise DamagedCheckpoint(folder, f"{WEIGHTS} is missing")
    record = meta.get("integrity")
    verified = record is not None
    if verified:
        if not (isinstance(record, dict) and isinstance(record.get("weights_sha256"), str)
                and isinstance(record.get("meta_sha256"), str)):
            raise DamagedCheckpoint(folder, f"the integrity record in {CONFIG} is malformed")
        if _sha256(blob) != record["weights_sha256"]:
            raise DamagedCheckpoint(folder, f"{WEIGHTS} is not the file saved with {CONFIG} (its "
                                    "sha256 differs: replaced, truncated or edited)")
        _check_snapshots(folder, meta, files[SNAPSHOTS])
    try:
        state = load_bytes(blob)
        header = _header_metadata(blob)
    except Exception as exc:  # SafetensorError and whatever a garbage header raises
        raise DamagedCheckpoint(folder, f"{WEIGHTS} is not a readable safetensors file "
                                f"({type(exc).__name__}: {exc})") from None
    if not verified and "toymech_meta_sha256" in header:
        raise DamagedCheckpoint(folder, f"{CONFIG} lost its integrity record (its weights have one)")
    model = None
    if build:
        try:
            model = build_model(config_from_dict(meta["model"]))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise DamagedCheckpoint(folder, f"its model config is not valid ({exc})") from None
        problem = state_mismatch(model, state)
        if problem:
            raise DamagedCheckpoint(folder, f"{WEIGHTS} does not match the model its {CONFIG} "
                                    f"describes: {problem}")
    # Parameters must be finite; buffers may not be (TransformerLens's mask value IGNORE is -inf).
    params = {k for k, _ in model.named_parameters()} if model is not None else None
    bad = [k for k, v in state.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())
           and (k in params if params is not None else not k.endswith("IGNORE"))]
    if bad:
        raise DamagedCheckpoint(folder, f"{WEIGHTS} holds NaN or inf in {len(bad)} tensor(s), "
                                f"e.g. {bad[0]}")
    if verified:
        if _meta_sha256(meta) != record["meta_sha256"]:
            raise DamagedCheckpoint(folder, f"{CONFIG} was edited after it was saved (its content "
                                    "no longer has the recorded sha256)")
        if header.get("toymech_meta_sha256") != record["meta_sha256"]:
            raise DamagedCheckpoint(folder, f"{WEIGHTS} and {CONFIG} come from different saves")
    return meta, state, verified, model


def _check_snapshots(folder: Path, meta: dict[str, Any], blob: bytes | None) -> None:
    """The snapshots file against the record of a verified ``meta`` (nothing recorded: none)."""
    record = meta["integrity"]
    if "snapshot_steps" not in meta and "snapshots_sha256" not in record:
        return
    sha = record.get("snapshots_sha256")
    if not isinstance(sha, str):
        raise DamagedCheckpoint(folder, f"the integrity record in {CONFIG} has no snapshots_sha256 "
                                f"although {CONFIG} lists snapshot_steps")
    if blob is None:
        raise DamagedCheckpoint(folder, f"{SNAPSHOTS} is missing (its sha256 is recorded in {CONFIG})")
    if _sha256(blob) != sha:
        raise DamagedCheckpoint(folder, f"{SNAPSHOTS} is not the file saved with {CONFIG} (its "
                                "sha256 differs: replaced, truncated or edited)")


def load_snapshots(folder: Path, meta: dict[str, Any],
                   steps: set[int] | None = None) -> dict[int, dict[str, torch.Tensor]]:
    """The snapshots of the checkpoint whose (already checked) metadata is ``meta``: step ->
    {parameter name: tensor}, only ``steps`` when given. The file is checked again against
    ``meta``'s record (it may have been replaced since): ``DamagedCheckpoint`` if it differs."""
    folder = Path(folder)
    if not meta.get("snapshot_steps"):
        return {}
    blob = _read_files(folder, (SNAPSHOTS,))[SNAPSHOTS]
    if isinstance(meta.get("integrity"), dict):
        _check_snapshots(folder, meta, blob)
    elif blob is None:
        raise DamagedCheckpoint(folder, f"{SNAPSHOTS} is missing ({CONFIG} lists snapshot_steps)")
    try:
        flat = load_bytes(blob)
    except Exception as exc:
        raise DamagedCheckpoint(folder, f"{SNAPSHOTS} is not a readable safetensors file "
                                f"({type(exc).__name__}: {exc})") from None
    out: dict[int, dict[str, torch.Tensor]] = {}
    for key, tensor in flat.items():
        m = _SNAPSHOT_KEY.match(key)
        if m is None:
            raise DamagedCheckpoint(folder, f"{SNAPSHOTS} holds a tensor named {key!r}, not "
                                    "'step<N>/<parameter>'")
        step = int(m["step"])
        if steps is None or step in steps:
            out.setdefault(step, {})[m["name"]] = tensor
    return out


def read_meta(folder: Path) -> dict[str, Any]:
    """The metadata alone (not checked against the weights; ``inspect_folder`` does that)."""
    path = Path(folder) / CONFIG
    if not path.is_file():
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no config.json")
    try:
        meta = json.loads(path.read_text())
    except ValueError as exc:
        raise DamagedCheckpoint(folder, f"{CONFIG} is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DamagedCheckpoint(folder, f"{CONFIG} holds a JSON {type(meta).__name__}, not an object")
    return meta


def load_model(folder: Path, device: str | torch.device = "cpu"):
    """Rebuild the model from its saved config and load its weights, checked (see ``inspect_folder``).
    Returns (model, meta)."""
    meta, state, _, model = inspect_folder(folder, build=True)
    model.load_state_dict(state, strict=False)  # non-persistent buffers are not in the file
    return move(model, device), meta


def state_mismatch(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> str | None:
    """How ``state`` does not fit ``model`` (missing/unexpected keys, a shape), or None."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        return f"missing {missing[:3]}, unexpected {unexpected[:3]}"
    for k, v in state.items():
        if tuple(v.shape) != tuple(own[k].shape):
            return f"{k} has shape {tuple(v.shape)}, the model expects {tuple(own[k].shape)}"
    return None


def load_state_checked(model: torch.nn.Module, state: dict[str, torch.Tensor], source: str) -> None:
    """``load_state_dict`` with a ValueError naming the first mismatched tensor."""
    problem = state_mismatch(model, state)
    if problem:
        raise ValueError(f"checkpoint={source!r} does not match the model: {problem}")
    model.load_state_dict(state, strict=False)  # non-persistent buffers are not in the file


def load_train_state(folder: Path) -> dict[str, Any]:
    path = Path(folder) / "train_state.pt"
    if not path.is_file():
        raise ValueError(f"checkpoint={str(folder)!r} has no train_state.pt: it cannot be resumed")
    return torch.load(path, map_location="cpu", weights_only=True)


def load_file_state(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(Path(folder) / WEIGHTS))
