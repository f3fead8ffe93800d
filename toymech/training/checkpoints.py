"""Checkpoints: the format of a folder holding ``model.safetensors`` + ``config.json`` (+
``train_state.pt`` for resuming, + ``snapshots.safetensors`` for runs that recorded parameter
snapshots), and the checks that decide whether its content is what was written.

Integrity. ``config.json`` records ``integrity = {weights_sha256, meta_sha256}``: the sha256 of
the weights file and of the metadata itself (without this record), and the weights file's header
records the metadata hash too. So a swapped, truncated or edited weights file, an edited config
or metrics history, or a config stripped of its record is found when the folder is read (a
``DamagedCheckpoint``: a ValueError naming the folder and what is wrong, in one line). The
tensors must be the ones the config describes (names, shapes, dtypes) and the parameters finite.
A folder without any record (an older toymech, or a record removed with its weights' header) is
``Unverified``: never loaded as a result (``toymech zoo verify --adopt`` checks and adopts it).

Format. ``config.json`` holds ``format`` (``FORMAT``; absent = 1). A folder of a later format is
``NewerFormat``: neither loaded nor called damaged (a newer toymech wrote it).

Reads are bounded (``reading``): a file is read only when it is a regular file (not a symlink,
FIFO, device or folder) under its size cap (``CAPS``), so no folder content can make a reader
hang or exhaust memory.

Training state. ``train_state.pt`` (what a continued or resumed run reads: the optimizer,
scheduler and data-stream states, the history so far) has its sha256 in the record too
(``train_state_sha256``) and is checked with the rest; a continued run reads it only through
``load_for_resume``, which checks every file it reads first. A damaged state is one line
(``DamagedCheckpoint``), never PyTorch's unpickling advice; a state without a recorded hash (an
older toymech) is not continued.

Snapshots. ``snapshots.safetensors`` holds the trained parameters at each snapshot step under
keys ``step00000300/blocks.0.attn.W_Q``; ``config.json`` lists the steps (``snapshot_steps``,
covered by the metadata hash) and the record holds the file's sha256 (``snapshots_sha256``).

Writing is ``atomic.write_folder_atomically`` (crash safety is described there).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load as load_bytes
from safetensors.torch import save_file

import toymech

from ..core import jsonable
from ..models import build_model, config_from_dict, move
from .atomic import STALE_S, clean_leftovers, fault, write_folder_atomically  # noqa: F401
from .checkpoint_files import (  # noqa: F401
    CAPS,
    CONFIG,
    FORMAT,
    SNAPSHOTS,
    TRAIN_STATE,
    WEIGHTS,
    DamagedCheckpoint,
    NewerFormat,
    Unverified,
    meta_problem,
    parse_meta,
    read_bounded,
    read_files,
)
from .divergence import DIVERGED_LOSS, TrainingDiverged  # noqa: F401  (loop.py reads them here)

_SNAPSHOT_KEY = re.compile(r"^step(?P<step>\d+)/(?P<name>.+)$")


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


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
               snapshots: dict[int, dict[str, torch.Tensor]] | None = None,
               log: Callable[[str], None] | None = None) -> Path:
    """Save weights + JSON metadata (which must hold the model config under ``"model"``), with
    the integrity record of the module docstring; ``snapshots`` (step -> parameters) go to
    ``snapshots.safetensors``."""
    cfg = model.toymech_config
    meta = {"toymech_version": toymech.__version__, **meta, "format": FORMAT, "model": cfg.to_dict()}
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
        if train_state is not None:
            record["train_state_sha256"] = _sha256((path.parent / TRAIN_STATE).read_bytes())
        _write_json({**meta, "integrity": record})(path)

    writers: dict[str, Callable[[Path], None]] = {
        WEIGHTS: lambda p: save_file(_state_dict(model), str(p),
                                     metadata={"toymech_meta_sha256": meta_sha}),
    }
    if snapshots:
        writers[SNAPSHOTS] = lambda p: save_file(_snapshot_state(snapshots), str(p),
                                                 metadata={"toymech_meta_sha256": meta_sha})
    if train_state is not None:  # before the config, which records its hash
        writers[TRAIN_STATE] = lambda p: torch.save(train_state, p)
    writers[CONFIG] = write_config
    return write_folder_atomically(Path(target), writers, log=log)


# --------------------------------------------------------------------------------------------
# reading and checking
# --------------------------------------------------------------------------------------------


def _header_metadata(blob: bytes) -> dict[str, str]:
    n = int.from_bytes(blob[:8], "little")
    return json.loads(blob[8:8 + n]).get("__metadata__") or {}


def inspect_folder(folder: Path, *, build: bool = True):
    """Read and check a checkpoint: ``(meta, state, verified, model)`` (model is None unless
    ``build``; ``verified`` is False for folders without an integrity record, which callers
    refuse as ``Unverified`` unless they adopt them). Raises ``DamagedCheckpoint`` for any
    damage, ``NewerFormat`` for a later format, ValueError when ``folder`` is no checkpoint."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no such folder")
    files = read_files(folder, (CONFIG, WEIGHTS, SNAPSHOTS, TRAIN_STATE))
    raw, blob = files[CONFIG], files[WEIGHTS]
    if raw is None and blob is None:
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no {CONFIG}")
    if raw is None:
        raise DamagedCheckpoint(folder, f"{CONFIG} is missing ({WEIGHTS} is there)")
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        meta = None  # parse_meta names the problem
    fmt = meta.get("format", 1) if isinstance(meta, dict) else 1
    if isinstance(fmt, int) and not isinstance(fmt, bool) and fmt > FORMAT:
        raise NewerFormat(folder, fmt)
    meta = parse_meta(folder, raw)
    if blob is None:
        raise DamagedCheckpoint(folder, f"{WEIGHTS} is missing")
    record = meta.get("integrity")
    verified = record is not None
    if verified:
        if not (isinstance(record.get("weights_sha256"), str)
                and isinstance(record.get("meta_sha256"), str)):
            raise DamagedCheckpoint(folder, f"the integrity record in {CONFIG} is malformed")
        if _sha256(blob) != record["weights_sha256"]:
            raise DamagedCheckpoint(folder, f"{WEIGHTS} is not the file saved with {CONFIG} (its "
                                    "sha256 differs: replaced, truncated or edited)")
        _check_snapshots(folder, meta, files[SNAPSHOTS])
        _check_train_state(folder, meta, files[TRAIN_STATE])
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
        except (TypeError, ValueError, KeyError, AttributeError, RuntimeError) as exc:
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


def _check_train_state(folder: Path, meta: dict[str, Any], blob: bytes | None) -> None:
    """The training state against the record of a verified ``meta`` (no hash recorded: an older
    toymech's entry, whose state ``load_for_resume`` refuses)."""
    sha = meta["integrity"].get("train_state_sha256")
    if sha is None:
        return
    if not isinstance(sha, str):
        raise DamagedCheckpoint(folder, f"the integrity record in {CONFIG} has a malformed "
                                "train_state_sha256")
    if blob is None:
        raise DamagedCheckpoint(folder, f"{TRAIN_STATE} is missing (its sha256 is recorded in "
                                f"{CONFIG})")
    if _sha256(blob) != sha:
        raise DamagedCheckpoint(folder, f"{TRAIN_STATE} is not the file saved with {CONFIG} (its "
                                "sha256 differs: replaced, truncated or edited)")


def load_snapshots(folder: Path, meta: dict[str, Any], steps: set[int] | None = None, *,
                   checked: bool = True) -> dict[int, dict[str, torch.Tensor]]:
    """The snapshots of the checkpoint whose (already checked) metadata is ``meta``: step ->
    {parameter name: tensor}, only ``steps`` when given. The file is checked again against
    ``meta``'s record (it may have been replaced since): ``DamagedCheckpoint`` if it differs.
    ``checked=False`` only for adopting a folder without a record (``inventory.adopt``)."""
    folder = Path(folder)
    if not meta.get("snapshot_steps"):
        return {}
    blob = read_files(folder, (SNAPSHOTS,))[SNAPSHOTS]
    if checked:
        if not isinstance(meta.get("integrity"), dict):
            raise Unverified(folder)
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
    raw = read_bounded(Path(folder), CONFIG) if Path(folder).is_dir() else None
    if raw is None:
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no config.json")
    return parse_meta(Path(folder), raw)


def load_model(folder: Path, device: str | torch.device = "cpu"):
    """Rebuild the model from its saved config and load its weights, checked (see
    ``inspect_folder``; a folder without an integrity record is refused). Returns (model, meta)."""
    meta, state, verified, model = inspect_folder(folder, build=True)
    if not verified:
        raise Unverified(folder)
    model.load_state_dict(state, strict=False)  # non-persistent buffers are not in the file
    return move(model, device), meta


def state_mismatch(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> str | None:
    """How ``state`` does not fit ``model`` (missing/unexpected keys, a shape, a dtype), or None."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        return f"missing {missing[:3]}, unexpected {unexpected[:3]}"
    for k, v in state.items():
        if tuple(v.shape) != tuple(own[k].shape):
            return f"{k} has shape {tuple(v.shape)}, the model expects {tuple(own[k].shape)}"
        if v.dtype != own[k].dtype:
            return f"{k} has dtype {v.dtype}, the model expects {own[k].dtype}"
    return None


def load_state_checked(model: torch.nn.Module, state: dict[str, torch.Tensor], source: str) -> None:
    """``load_state_dict`` with a ValueError naming the first mismatched tensor."""
    problem = state_mismatch(model, state)
    if problem:
        raise ValueError(f"checkpoint={source!r} does not match the model: {problem}")
    model.load_state_dict(state, strict=False)  # non-persistent buffers are not in the file


def load_for_resume(folder: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, Any]]:
    """Everything a continued or resumed run reads, each file checked against the integrity
    record first (``inspect_folder``): ``(meta, weights, train state)``. Raises
    ``DamagedCheckpoint`` (one line) for a damaged folder or state, ``Unverified`` for a folder
    without a record, ValueError for a folder without a state or whose state has no recorded
    hash (an older toymech's: it is not continued)."""
    folder = Path(folder)
    meta, weights, verified, _ = inspect_folder(folder, build=False)
    if not verified:
        raise Unverified(folder)
    blob = read_bounded(folder, TRAIN_STATE)
    if blob is None:
        raise ValueError(f"checkpoint={str(folder)!r} has no {TRAIN_STATE}: it cannot be resumed")
    sha = meta["integrity"].get("train_state_sha256")
    if sha is None:
        raise ValueError(f"checkpoint={str(folder)!r} has no recorded sha256 for its "
                         f"{TRAIN_STATE} (an older toymech saved it): it is not continued")
    if _sha256(blob) != sha:  # read again: it may have been replaced since inspect_folder
        raise DamagedCheckpoint(folder, f"{TRAIN_STATE} is not the file saved with {CONFIG} (its "
                                "sha256 differs: replaced, truncated or edited)")
    try:
        state = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors carry several lines of advice: name the type
        raise DamagedCheckpoint(folder, f"{TRAIN_STATE} is not a readable training state "
                                f"({type(exc).__name__})") from None
    missing = [k for k in ("optimizer", "scheduler", "generator", "history", "step")
               if not isinstance(state, dict) or k not in state]
    if missing:
        raise DamagedCheckpoint(folder, f"{TRAIN_STATE} lacks {missing[0]!r}")
    return meta, weights, state
