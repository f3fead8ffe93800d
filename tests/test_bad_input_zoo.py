"""Bad-input catalogue, part 3: zoo damage, and concurrency and kills. Each case damages a copy
of a small trained zoo (or leaves a lock or a killed writer's leftovers in it), runs a command
in-process, and checks its exit code, the ONE line that names the entry (or the option) and the
problem, no traceback, no hang (FIFOs, /dev/zero, live and dead lock holders), and that the zoo
is unchanged where the command is not meant to repair it (see ``catalogue``)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from pathlib import Path

import pytest
import torch
from catalogue import legacy, meta, rehash, run_cli, stderr_lines, tree, weights, write_meta

STEPS = "4"
TRAIN = ["train", "induction-1l", "--size", "smoke", "--steps", STEPS, "--device", "cpu", "-q"]
LONGER = [*TRAIN[:5], str(2 * int(STEPS)), *TRAIN[6:]]  # continues the entry of ``STEPS`` steps


def _exp(seed):
    from toymech import experiments

    exp = experiments.get("induction-1l", "smoke", seed=seed)
    exp.train = exp.train.replace(steps=int(STEPS), eval_every=min(exp.train.eval_every, int(STEPS)))
    return exp


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    from toymech.zoo import Zoo

    root = tmp_path_factory.mktemp("pristine")
    for seed in (0, 1):
        Zoo(root).get_or_train(_exp(seed), device="cpu", progress=False, log=None)
    return root


def _name(root: Path, seed: int) -> str:
    from toymech.zoo import Zoo

    return Zoo(root).path(_exp(seed)).name


# --- damage ----------------------------------------------------------------------------------

def _dtype(dtype):
    def damage(p):
        rehash(p, meta(p), {k: v.to(dtype) if v.is_floating_point() else v for k, v in weights(p).items()})
    return damage


def _int8_legacy(p):
    legacy(p)
    from safetensors.torch import save_file
    save_file({k: torch.zeros_like(v, dtype=torch.int8) for k, v in weights(p).items()}, str(p / "model.safetensors"))


def _extra_tensor(p):
    rehash(p, meta(p), {**weights(p), "blocks.9.attn.W_Q": torch.zeros(2)})


def _nan_rehashed(p):
    state = weights(p)
    key = next(k for k in state if k.endswith("W_Q"))
    state[key] = torch.full_like(state[key], float("nan"))
    rehash(p, meta(p), state)


def _field(key, value, stripped=True):
    def damage(p):
        if stripped:
            legacy(p)
            write_meta(p, {**meta(p), key: value})
        else:
            rehash(p, {**meta(p), key: value})
    return damage


def _edit_eval_legacy(p):
    legacy(p)
    m = meta(p)
    m["history"][-1]["eval_loss"] = 0.01
    write_meta(p, m)


def _swap(name, kind):
    def damage(p):
        (p / name).unlink()
        if kind == "fifo":
            os.mkfifo(p / name)
        elif kind == "zero":
            os.symlink("/dev/zero", p / name)
        elif kind == "dir":
            (p / name).mkdir()
        elif kind == "huge":
            with open(p / name, "wb") as f:
                f.truncate(70 * 2**20)  # sparse: 70 MB long, nothing on disk
    return damage


def _folder(kind):
    def damage(p):
        shutil.rmtree(p)
        os.mkfifo(p) if kind == "fifo" else os.symlink("/dev/zero", p)
    return damage


def _other_weights(p):
    shutil.copy(p.parent / _name(p.parent, 1) / "model.safetensors", p / "model.safetensors")


def _copied(p):
    for f in (p.parent / _name(p.parent, 1)).iterdir():
        shutil.copy(f, p / f.name)


def _edited_metrics(p):
    m = meta(p)
    m["history"][-1]["eval_loss"] = 0.01
    write_meta(p, m)


def _newer(p):
    rehash(p, {**meta(p), "format": 2})


def _task_version(version):
    """The entry's task recorded at ``version``, with a valid integrity record and its key."""
    def damage(p):
        m = meta(p)
        rehash(p, {**m, "task": {**m["task"], "version": version}})
    return damage


def _v1_of_a_v2_task(root, tmp):
    """A modular-addition entry (its task is at version 2) that records task version 1."""
    from toymech import experiments
    from toymech.zoo import Zoo

    exp = experiments.get("modular_addition", "smoke")
    exp.train = exp.train.replace(steps=2, eval_every=2)
    entry = Zoo(root).get_or_train(exp, device="cpu", progress=False, log=None)
    _task_version(1)(entry.path)


def _one_quarantined(root, tmp):
    from toymech.zoo import Zoo

    Zoo(root).quarantine(root / _name(root, 1), "damaged on purpose")


def _optimizer_bits(p):
    """Flip the lowest bit of a few values of one optimizer moment: a state that still loads."""
    state = torch.load(p / "train_state.pt", weights_only=True)
    moments = next(v for v in state["optimizer"]["state"].values() if "exp_avg" in v)
    flat = moments["exp_avg"].view(-1)
    bits = flat[:5].contiguous().view(torch.int32) ^ 1
    flat[:5] = bits.view(flat.dtype)
    torch.save(state, p / "train_state.pt")


def _garbage_state(p):
    (p / "train_state.pt").write_bytes(b"\x80\x02not a pickle at all")


VERIFY = ["zoo", "verify", "--cache", "{zoo}"]
LIST = ["list", "models", "--cache", "{zoo}"]

# damage(path) -> (argv, exit code, fragments of the stdout line naming the entry)
DAMAGE_CASES = {
    "stripped record (exit 0 before)": (legacy, VERIFY, 1, ["UNVERIFIED", "no integrity record"]),
    "int8 zeros without a record (served before)": (_int8_legacy, VERIFY, 1, ["DAMAGED", "dtype"]),
    "edited eval_loss without a record (served before)": (_edit_eval_legacy, VERIFY, 1, ["UNVERIFIED"]),
    "bfloat16 weights with a valid record": (_dtype(torch.bfloat16), VERIFY, 1, ["DAMAGED", "dtype torch.bfloat16"]),
    "float64 weights with a valid record": (_dtype(torch.float64), VERIFY, 1, ["DAMAGED", "dtype torch.float64"]),
    "an extra tensor with a valid record": (_extra_tensor, VERIFY, 1, ["DAMAGED", "unexpected"]),
    "NaN weights with a valid record": (_nan_rehashed, VERIFY, 1, ["DAMAGED", "NaN"]),
    "config.json a FIFO (list hung before)": (_swap("config.json", "fifo"), VERIFY, 1, ["DAMAGED", "FIFO"]),
    "model.safetensors a FIFO": (_swap("model.safetensors", "fifo"), VERIFY, 1, ["DAMAGED", "FIFO"]),
    "config.json -> /dev/zero (MemoryError before)": (_swap("config.json", "zero"), VERIFY, 1, ["DAMAGED", "symbolic link"]),
    "model.safetensors -> /dev/zero": (_swap("model.safetensors", "zero"), VERIFY, 1, ["DAMAGED", "symbolic link"]),
    "config.json a folder (traceback before)": (_swap("config.json", "dir"), VERIFY, 1, ["DAMAGED", "folder"]),
    "model.safetensors a folder": (_swap("model.safetensors", "dir"), VERIFY, 1, ["DAMAGED", "folder"]),
    "config.json of 70 MB": (_swap("config.json", "huge"), VERIFY, 1, ["DAMAGED", "bytes"]),
    "history [1] without a record (traceback before)": (_field("history", [1]), VERIFY, 1, ["DAMAGED", "history"]),
    "seconds 'abc' without a record (traceback before)": (_field("seconds", "abc"), VERIFY, 1, ["DAMAGED", "seconds"]),
    "name a list with a valid record": (_field("name", ["a", "b"], stripped=False), VERIFY, 1, ["DAMAGED", "name"]),
    "weights swapped from another seed": (_other_weights, VERIFY, 1, ["DAMAGED", "sha256"]),
    "entry copied from another key": (_copied, VERIFY, 1, ["DAMAGED", "records the key"]),
    "edited metrics with the record": (_edited_metrics, VERIFY, 1, ["DAMAGED", "edited after"]),
    "entry folder -> /dev/zero": (_folder("zero"), VERIFY, 1, ["DAMAGED", "not a folder"]),
    "entry folder a FIFO": (_folder("fifo"), VERIFY, 1, ["DAMAGED", "not a folder"]),
    "list: config.json a FIFO (hung before)": (_swap("config.json", "fifo"), LIST, 0, ["DAMAGED", "FIFO"]),
    "list: name a list (TypeError before)": (_field("name", ["a", "b"], stripped=False), LIST, 0, ["DAMAGED", "name"]),
    "list: history [1] without a record": (_field("history", [1]), LIST, 0, ["DAMAGED", "history"]),
    "list: config.json -> /dev/zero": (_swap("config.json", "zero"), LIST, 0, ["DAMAGED"]),
    "list: stripped record": (legacy, LIST, 0, ["UNVERIFIED"]),
    "newer format, verify --fix (quarantined before)": (_newer, [*VERIFY, "--fix"], 0, ["NEWER", "newer than this toymech"]),
    "bits flipped in the optimizer state (verify said ok before)": (_optimizer_bits, VERIFY, 1, ["DAMAGED", "train_state.pt", "sha256"]),
    "train_state.pt garbage": (_garbage_state, VERIFY, 1, ["DAMAGED", "train_state.pt"]),
    "train_state.pt removed": (lambda p: (p / "train_state.pt").unlink(), VERIFY, 1, ["DAMAGED", "train_state.pt", "missing"]),
    "task version 3 with a valid record (listed ok and served before)": (_task_version(3), VERIFY, 0, ["NEWER", "version 3"]),
    "list: task version 3 with a valid record": (_task_version(3), LIST, 0, ["NEWER", "version 3"]),
}


@pytest.fixture
def zoo(pristine, tmp_path):
    root = tmp_path / "z"
    shutil.copytree(pristine, root)
    return root


def _run(argv, root, tmp, **environ):
    fill = {"{zoo}": str(root), "{tmp}": str(tmp)}
    argv = [fill.get(a, a) for a in argv]
    return run_cli(argv, **environ)


@pytest.mark.parametrize("case", list(DAMAGE_CASES), ids=[f"zoo damage: {c}" for c in DAMAGE_CASES])
def test_zoo_damage(case, zoo, tmp_path):
    damage, argv, code, fragments = DAMAGE_CASES[case]
    entry = zoo / _name(zoo, 0)
    damage(entry)
    before = tree(zoo)
    got, out, err = _run(argv, zoo, tmp_path)
    assert got == code and "Traceback" not in out + err, (got, out[-2000:], err[-3000:])
    named = [line for line in out.splitlines() if entry.name in line]
    assert len(named) == 1, out
    for fragment in fragments:
        assert fragment in named[0], (fragment, named[0])
    assert tree(zoo) == before, "the zoo changed"


def _user_folder(root, tmp):
    (root / "my-analysis").mkdir()
    (root / "my-analysis" / "config.json").write_text("{}")
    legacy(root / _name(root, 0))


def _quarantine_file(root, tmp):
    (root / ".quarantine").write_text("not a folder")
    legacy(root / _name(root, 0))


def _notes(root, tmp):
    (root / _name(root, 0) / "NOTES.txt").write_text("mine")


def _notes_legacy(root, tmp):
    _notes(root, tmp)
    legacy(root / _name(root, 0))


# (setup(root, tmp), argv, exit code, where the line is, fragments, zoo unchanged)
SPECIAL_CASES = {
    "a user's folder in the zoo, verify --fix (quarantined before)": (_user_folder, [*VERIFY, "--fix"], 1, "my-analysis", ["FOREIGN", "left alone"], False),
    ".quarantine a file, verify --fix (traceback before)": (_quarantine_file, [*VERIFY, "--fix"], 2, "stderr", ["quarantine="], True),
    "newer format, train (quarantined and retrained before)": (lambda r, t: _newer(r / _name(r, 0)), TRAIN, 2, "stderr", ["newer than this toymech"], True),
    "newer format, train --retrain": (lambda r, t: _newer(r / _name(r, 0)), [*TRAIN, "--retrain"], 2, "stderr", ["retrain=True", "newer"], True),
    "stripped record, train -q (said nothing before)": (lambda r, t: legacy(r / _name(r, 0)), TRAIN, 0, "notice", ["unverified", "moved it to"], False),
    "--retrain with NOTES.txt in the entry (deleted before)": (_notes, [*TRAIN, "--retrain"], 0, "notice", ["NOTES.txt", ".quarantine"], False),
    "verify --fix of an unverified entry holding NOTES.txt": (_notes_legacy, [*VERIFY, "--fix"], 1, "entry", ["UNVERIFIED", "moved to"], False),
    "task version 3, train (served as the current task's before)": (lambda r, t: _task_version(3)(r / _name(r, 0)), TRAIN, 2, "stderr", ["newer than this toymech", "version 3"], True),
    "task version 1 of a version-2 task, verify (listed ok and served before)": (_v1_of_a_v2_task, VERIFY, 1, "modular_addition-", ["DAMAGED", "version 1"], True),
    "task version 1 of a version-2 task, list": (_v1_of_a_v2_task, LIST, 0, "modular_addition-", ["DAMAGED", "version 1"], True),
    "bits flipped in the optimizer state, a longer run (continued from it before)": (lambda r, t: _optimizer_bits(r / _name(r, 0)), LONGER, 0, "notice", ["could not continue", "train_state.pt", "from step 0"], False),
    "garbage train_state.pt, a longer run (PyTorch's weights_only advice before)": (lambda r, t: _garbage_state(r / _name(r, 0)), LONGER, 0, "notice", ["could not continue", "train_state.pt", "from step 0"], False),
    "list with a quarantined entry (not mentioned before)": (_one_quarantined, LIST, 0, "quarantined", ["1 quarantined", ".quarantine"], True),
}


@pytest.mark.parametrize("case", list(SPECIAL_CASES), ids=[f"zoo damage: {c}" for c in SPECIAL_CASES])
def test_zoo_damage_special(case, zoo, tmp_path):
    setup, argv, code, where, fragments, unchanged = SPECIAL_CASES[case]
    setup(zoo, tmp_path)
    before = tree(zoo)
    got, out, err = _run(argv + (["--cache", str(zoo)] if argv[0] == "train" else []), zoo, tmp_path)
    assert got == code and "Traceback" not in out + err, (got, out[-2000:], err[-3000:])
    _assert_line(where, out, err, fragments, zoo)
    if unchanged:
        assert tree(zoo) == before, "the zoo changed"
    if "NOTES" in case:  # kept, moved aside with the entry it was in
        assert [p.read_text() for p in zoo.rglob("NOTES.txt")] == ["mine"]
        assert ".quarantine" in str(next(zoo.rglob("NOTES.txt")))


def _assert_line(where, out, err, fragments, root):
    if where == "stderr":
        lines = stderr_lines(err)
        assert len(lines) == 1 and lines[0].startswith("toymech: error: "), err[-3000:]
    elif where == "notice":
        lines = [line for line in err.splitlines() if all(f in line for f in fragments)]
    else:
        name = _name(root, 0) if where == "entry" else where
        lines = [line for line in out.splitlines() if name in line]
    assert len(lines) == 1, (where, out[-2000:], err[-2000:])
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


# --------------------------------------------------------------------------------------------
# concurrency and kills: locks held by others, leftovers of killed writers
# --------------------------------------------------------------------------------------------

def _host():
    import hashlib
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _start_time(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def _lock(root, body, age=0.0, seed=2):
    path = root / f".{_name(root, seed)}.lock"
    if body == "FIFO":
        os.mkfifo(path)
    elif body == "DIR":
        path.mkdir()
    else:
        path.write_text(body if isinstance(body, str) else json.dumps(body))
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


DEAD = 2**22 + 4321  # above the default pid_max: no such process


def _leftover(kind, notes=False):
    def setup(root, tmp):
        name = _name(root, 0)
        hidden = root / f".{name}.{kind}-{DEAD}-{_host()}-abc"
        if kind == "old" and not notes:
            os.rename(root / name, hidden)  # a --retrain killed between its two renames
        else:
            shutil.copytree(root / name, hidden)
            if notes:
                (hidden / "NOTES.txt").write_text("mine")
    return setup


TRAIN2 = [*TRAIN, "--seed", "2"]
# (setup(root, tmp), argv, exit code, where the line is, fragments, zoo unchanged[, env])
CONCURRENCY_CASES = {
    "live foreign pid, no start time, old lock (waited forever before)": (
        lambda r, t: _lock(r, {"pid": 1, "host": _host()}, age=3600), [*TRAIN2, "--lock-timeout", "60"], 0, None, [], False),
    "live holder, -q, --lock-timeout 1 (waited forever silently before)": (
        lambda r, t: _lock(r, {"pid": os.getpid(), "host": _host(), "start": _start_time(os.getpid())}),
        [*TRAIN2, "--lock-timeout", "1"], 1, "stderr", ["locked by pid", "--lock-timeout"], True),
    "live holder, -q: the wait is said": (
        lambda r, t: _lock(r, {"pid": os.getpid(), "host": _host(), "start": _start_time(os.getpid())}),
        [*TRAIN2, "--lock-timeout", "1"], 1, "notice", ["waiting for the writer", f"pid {os.getpid()}"], True),
    "live holder, TOYMECH_LOCK_TIMEOUT=1": (
        lambda r, t: _lock(r, {"pid": os.getpid(), "host": _host(), "start": _start_time(os.getpid())}),
        TRAIN2, 1, "stderr", ["locked by pid"], True, {"TOYMECH_LOCK_TIMEOUT": "1"}),
    "a fresh lock from another host, --lock-timeout 1": (
        lambda r, t: _lock(r, {"pid": 12, "host": "0123abcd", "hostname": "elsewhere"}),
        [*TRAIN2, "--lock-timeout", "1"], 1, "stderr", ["locked by pid 12 on elsewhere"], True),
    "lock of a dead pid": (lambda r, t: _lock(r, {"pid": DEAD, "host": _host()}), TRAIN2, 0, None, [], False),
    "empty lock file, 1 minute old": (lambda r, t: _lock(r, "", age=60), TRAIN2, 0, None, [], False),
    "lock file a FIFO (hung before)": (lambda r, t: _lock(r, "FIFO"), TRAIN2, 2, "stderr", ["lock=", "regular file"], True),
    "lock path a folder (traceback before)": (lambda r, t: _lock(r, "DIR"), TRAIN2, 2, "stderr", ["lock=", "folder"], True),
    "killed first write left a temporary folder": (_leftover("tmp"), TRAIN2, 0, None, [], False),
    "--retrain killed between renames: list restores the entry": (_leftover("old"), LIST, 0, "entry", ["induction-1l"], False),
    "killed --retrain's old folder held NOTES.txt (deleted before)": (_leftover("old", notes=True), [*VERIFY, "--fix"], 0, None, [], False),
    "verify --fix leaves an entry a live writer holds": (
        lambda r, t: (legacy(r / _name(r, 0)), _lock(r, {"pid": os.getpid(), "host": _host(), "start": _start_time(os.getpid())}, seed=0)),
        [*VERIFY, "--fix"], 1, "entry", ["a writer holds it"], True),
}


@pytest.mark.parametrize("case", list(CONCURRENCY_CASES), ids=[f"concurrency and kills: {c}" for c in CONCURRENCY_CASES])
def test_concurrency_and_kills(case, zoo, tmp_path):
    setup, argv, code, where, fragments, unchanged, *environ = CONCURRENCY_CASES[case]
    setup(zoo, tmp_path)
    before = tree(zoo)
    got, out, err = _run(argv + (["--cache", str(zoo)] if argv[0] == "train" else []), zoo,
                         tmp_path, **(environ[0] if environ else {}))
    assert got == code and "Traceback" not in out + err, (got, out[-2000:], err[-3000:])
    if where:
        _assert_line(where, out, err, fragments, zoo)
    if unchanged:
        assert tree(zoo) == before, "the zoo changed"
    if "NOTES" in case:
        assert [p.read_text() for p in zoo.rglob("NOTES.txt")] == ["mine"]
    if code == 0 and argv[0] == "train":  # it trained, and left no lock or leftover behind
        assert not [p.name for p in zoo.iterdir() if p.name.startswith(".") and p.name != ".quarantine"]


def test_catalogue_part_3_size():
    assert len(DAMAGE_CASES) + len(SPECIAL_CASES) >= 30 and len(CONCURRENCY_CASES) >= 12
