"""A zoo you can trust: damaged entries are found, named, quarantined and retrained; killed and
concurrent writers leave 0 corrupt, 0 phantom and 0 lost entries.

The crash tests run real processes that SIGKILL themselves at an injected point
(``TOYMECH_FAULT``, see ``toymech.training.atomic``)."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from toymech import experiments
from toymech.cli import main
from toymech.devices import HOST
from toymech.training.atomic import clean_leftovers
from toymech.training.checkpoints import DamagedCheckpoint, Unverified
from toymech.zoo import Zoo
from toymech.zoo.locks import EntryLock

STEPS = 4


def _exp(seed=0):
    exp = experiments.get("induction-1l", "smoke", seed=seed)
    exp.train = exp.train.replace(steps=STEPS, eval_every=min(exp.train.eval_every, STEPS))
    return exp


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A zoo with two good entries (seeds 0 and 1), trained once for the whole module."""
    root = tmp_path_factory.mktemp("pristine")
    zoo = Zoo(root)
    for seed in (0, 1):
        zoo.get_or_train(_exp(seed), device="cpu", progress=False, log=None)
    return root


@pytest.fixture
def zoo(pristine, tmp_path):
    shutil.copytree(pristine, tmp_path / "zoo")
    return Zoo(tmp_path / "zoo")


def _meta(path):
    return json.loads((path / "config.json").read_text())


def _write_meta(path, meta):
    (path / "config.json").write_text(json.dumps(meta))


def _legacy(path):
    """Make an entry look like one saved before integrity records existed."""
    meta = _meta(path)
    meta.pop("integrity")
    meta.pop("key")
    _write_meta(path, meta)
    save_file(load_file(str(path / "model.safetensors")), str(path / "model.safetensors"))


def _nan(path, keep_header=True):
    state = load_file(str(path / "model.safetensors"))
    name = next(k for k in state if k.endswith("W_Q"))
    state[name] = torch.full_like(state[name], float("nan"))
    save_file(state, str(path / "model.safetensors"))


def _other(path):
    return Zoo(path.parent).path(_exp(1))


DAMAGE = {  # name -> (damage(path), what the one-line message must say)
    "weights swapped from another seed": (
        lambda p: shutil.copy(_other(p) / "model.safetensors", p / "model.safetensors"), "sha256 differs"),
    "weights full of NaN": (_nan, "sha256 differs"),
    "config edited to another architecture": (
        lambda p: _write_meta(p, {**_meta(p), "model": {**_meta(p)["model"], "d_model": 16}}),
        "does not match the model"),
    "edited metrics": (
        lambda p: _write_meta(p, {**_meta(p), "history": [{**h, "eval_loss": 0.0} for h in _meta(p)["history"]]}),
        "edited after it was saved"),
    "truncated weights": (
        lambda p: (p / "model.safetensors").write_bytes((p / "model.safetensors").read_bytes()[:300]),
        "sha256 differs"),
    "garbage weights": (lambda p: (p / "model.safetensors").write_bytes(os.urandom(4000)), "sha256 differs"),
    "deleted weights": (lambda p: (p / "model.safetensors").unlink(), "model.safetensors is missing"),
    "config.json is []": (lambda p: (p / "config.json").write_text("[]"), "holds a JSON list"),
    "config.json is not JSON": (lambda p: (p / "config.json").write_text("{"), "not valid JSON"),
    "config.json lacks model": (
        lambda p: _write_meta(p, {k: v for k, v in _meta(p).items() if k != "model"}), "no model config"),
    "deleted config.json": (lambda p: (p / "config.json").unlink(), "config.json is missing"),
    "integrity record stripped": (
        lambda p: _write_meta(p, {k: v for k, v in _meta(p).items() if k != "integrity"}),
        "lost its integrity record"),
    "whole entry copied from another": (
        lambda p: [shutil.copy(f, p / f.name) for f in _other(p).iterdir()], "records the key"),
    "older entry with NaN weights": (lambda p: (_legacy(p), _nan(p)), "NaN or inf"),
    "older entry with garbage weights": (
        lambda p: (_legacy(p), (p / "model.safetensors").write_bytes(b"\x08" + bytes(300))),
        "not a readable safetensors file"),
    "folder is empty": (lambda p: [f.unlink() for f in p.iterdir()], "neither config.json nor"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_entry_is_named_then_quarantined_and_retrained(zoo, kind, capsys):
    damage, says = DAMAGE[kind]
    exp = _exp(0)
    path = zoo.path(exp)
    damage(path)
    # load only reports: one line naming the folder and how it is damaged
    with pytest.raises(ValueError, match=says) as info:
        zoo.load(exp, "cpu", log=None)
    assert isinstance(info.value, DamagedCheckpoint) and path.name in str(info.value)
    assert "\n" not in str(info.value) and path.exists()
    # listing never raises and marks it
    rows = {Path(r["path"]).name: r for r in zoo.entries()}
    assert rows[path.name]["status"] == "damaged" and rows[path.name]["problem"]
    [deep] = [r for r in zoo.verify() if r["path"] == str(path)]
    assert deep["status"] == "damaged" and says in deep["problem"]
    assert rows[_other(path).name]["status"] == "ok"
    # get_or_train moves it aside (kept, with the reason) and trains it again, with a notice
    entry = zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    assert not entry.loaded
    assert path.name in capsys.readouterr().err
    [moved] = (zoo.root / ".quarantine").iterdir()
    assert moved.name.startswith(path.name) and says in (moved / "QUARANTINED.txt").read_text()
    assert [r["status"] for r in zoo.verify()] == ["ok", "ok"]
    assert zoo.get_or_train(exp, device="cpu", progress=False, log=None).loaded


def _int8_zeros(path):
    state = load_file(str(path / "model.safetensors"))
    save_file({k: torch.zeros_like(v, dtype=torch.int8) for k, v in state.items()},
              str(path / "model.safetensors"))


def _edit_metrics(path):
    _write_meta(path, {**_meta(path), "history": [{**h, "eval_loss": 0.01} for h in _meta(path)["history"]]})


def _swap_weights(path):
    shutil.copy(_other(path) / "model.safetensors", path / "model.safetensors")


# The damage kinds of the issue, each with the integrity record kept and with it stripped the
# way an older toymech would have written the entry (no record, no hash in the weights' header):
# none of them is ever served as a result.
KINDS = {"stripped record": lambda p: None, "edited metrics": _edit_metrics,
         "wrong dtype (int8 zeros)": _int8_zeros, "NaN weights": _nan, "swapped weights": _swap_weights}


@pytest.mark.parametrize("stripped", [False, True], ids=["record kept", "record stripped"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_no_damaged_or_unverifiable_entry_loads_as_a_result(zoo, kind, stripped, capsys):
    if kind == "stripped record" and not stripped:
        pytest.skip("the same case as 'record stripped'")
    exp, path = _exp(0), zoo.path(_exp(0))
    KINDS[kind](path)
    if stripped:
        _legacy(path)
    with pytest.raises(ValueError) as info:
        zoo.load(exp, "cpu", log=None)
    assert path.name in str(info.value) and "\n" not in str(info.value)
    assert isinstance(info.value, Unverified if stripped and kind in ("stripped record", "edited metrics",
                                                                     "swapped weights")
                      else DamagedCheckpoint)
    assert main(["zoo", "verify", "--cache", str(zoo.root)]) == 1  # listed, exit 1
    assert path.name in capsys.readouterr().out
    assert main(["train", "induction-1l", "--size", "smoke", "--steps", str(STEPS), "--device",
                 "cpu", "--cache", str(zoo.root), "-q"]) == 0
    out, err = capsys.readouterr()
    assert ": trained;" in out and path.name in err and "training it again" in err  # even with -q
    assert [r["status"] for r in zoo.verify()] == ["ok", "ok"]


def test_adopt_checks_old_entries_explicitly(zoo, capsys):
    good, bad, exp = zoo.path(_exp(0)), zoo.path(_exp(1)), _exp(0)
    before = load_file(str(good / "model.safetensors"))
    _legacy(good)
    _int8_zeros(bad)
    _legacy(bad)
    statuses = {Path(r["path"]).name: r["status"] for r in zoo.entries()}
    assert statuses == {good.name: "unverified", bad.name: "unverified"}  # listing builds nothing
    assert main(["zoo", "verify", "--adopt", "--cache", str(zoo.root)]) == 1  # bad is still bad
    out = capsys.readouterr().out
    assert f"adopted     {good.name}" in out and f"DAMAGED     {bad.name}" in out and "dtype" in out
    entry = zoo.load(exp, "cpu", log=None)  # served now, with its record and its own weights
    assert entry.meta["adopted"] and entry.meta["integrity"]
    assert all(torch.equal(before[k], v) for k, v in entry.model.state_dict().items() if k in before)
    # an old entry whose configs do not hash to its folder's key is not adopted
    _legacy(good)
    meta = _meta(good)
    meta["train"]["lr"] = 0.5
    _write_meta(good, meta)
    rows = {Path(r["path"]).name: r for r in zoo.verify(adopt=True)}
    assert rows[good.name]["status"] == "damaged" and "cannot be adopted" in rows[good.name]["problem"]


def test_cli_list_verify_and_train_on_a_damaged_zoo(zoo, capsys):
    cache = str(zoo.root)
    bad = zoo.path(_exp(0))
    (bad / "model.safetensors").write_bytes(b"garbage")
    assert main(["list", "models", "--cache", cache]) == 0
    out = capsys.readouterr().out
    assert "DAMAGED" in out and bad.name in out and "sha256 differs" in out
    assert main(["list", "models", "--cache", cache, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["models"]
    assert sorted(r["status"] for r in rows) == ["damaged", "ok"]
    assert main(["zoo", "verify", "--cache", cache]) == 1
    assert f"DAMAGED     {bad.name}" in capsys.readouterr().out and bad.exists()
    assert main(["zoo", "verify", "--fix", "--cache", cache]) == 1  # it found one, and moved it
    assert "moved to" in capsys.readouterr().out and not bad.exists()
    assert main(["zoo", "verify", "--cache", cache]) == 0
    # `toymech train` on a damaged entry: a one-line notice on stderr, then it trains
    assert main(["train", "induction-1l", "--size", "smoke", "--steps", "3", "--device", "cpu",
                 "--cache", cache, "-q"]) == 0
    capsys.readouterr()
    [trained] = [p for p in zoo.root.iterdir() if p.name not in (bad.name, _other(bad).name)
                 and not p.name.startswith(".")]
    (trained / "config.json").write_text("[]")
    assert main(["train", "induction-1l", "--size", "smoke", "--steps", "3", "--device", "cpu",
                 "--cache", cache, "-q"]) == 0
    captured = capsys.readouterr()
    [notice] = [line for line in captured.err.splitlines() if "damaged" in line]
    assert trained.name in notice and "training it again" in notice
    assert ": trained;" in captured.out
    assert all(r["status"] == "ok" for r in zoo.verify())


def test_leftovers_are_invisible_restored_or_cleaned(zoo):
    exp = _exp(0)
    path = zoo.path(exp)
    dead = 2**22 + 12345  # above the default pid_max: no such process
    # a killed first write (a complete temporary folder) and a killed --retrain (the entry hidden)
    shutil.copytree(path, zoo.root / f".{path.name}.tmp-{dead}-{HOST}-abc")
    shutil.copytree(zoo.path(_exp(1)), zoo.root / f".{zoo.path(_exp(1)).name}.tmp-{dead}-{HOST}-x")
    os.rename(path, zoo.root / f".{path.name}.old-{dead}-{HOST}-def")
    alive = zoo.root / f".other-0123456789abcdef.tmp-{os.getpid()}-{HOST}-ghi"  # a live writer's
    alive.mkdir()
    names = [Path(r["path"]).name for r in zoo.entries()]  # the reader restores the hidden entry
    assert sorted(names) == sorted([path.name, zoo.path(_exp(1)).name])
    assert sorted(p.name for p in zoo.root.iterdir()) == sorted(names + [alive.name])
    assert zoo.get_or_train(exp, device="cpu", progress=False, log=None).loaded
    # a stale lock (dead holder) is broken; a live one is respected
    lock = zoo.root / f".{path.name}.lock"
    lock.write_text(json.dumps({"pid": dead, "host": HOST, "nonce": "x"}))
    assert zoo.get_or_train(exp, device="cpu", retrain=True, progress=False, log=None).loaded is False
    assert not lock.exists()
    held = EntryLock(zoo.root, path.name)
    assert held.try_acquire() and not EntryLock(zoo.root, path.name).try_acquire()
    held.release()
    assert not lock.exists() and clean_leftovers(zoo.root) == []


# --------------------------------------------------------------------------------------------
# real processes, killed at injected points
# --------------------------------------------------------------------------------------------

WORKER = textwrap.dedent(f"""
    import sys
    from toymech import experiments
    from toymech.zoo import Zoo
    exp = experiments.get("induction-1l", "smoke", seed=0)
    exp.train = exp.train.replace(steps=int(sys.argv[3]), eval_every=min(exp.train.eval_every, {STEPS}))
    import os
    open(f"{{sys.argv[1]}}.ready-{{os.getpid()}}", "a").close()  # imports done: about to ask the zoo
    entry = Zoo(sys.argv[1]).get_or_train(exp, device="cpu", retrain=sys.argv[2] == "retrain",
                                          progress=False, log=lambda line: print(line, file=sys.stderr))
    print("RESULT", "loaded" if entry.loaded else "trained", entry.path.name)
""")


def _start(root, mode, fault="", steps=STEPS):
    env = {**os.environ, "TOYMECH_FAULT": fault, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", WORKER, str(root), mode, str(steps)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _audit(root, expected):
    """(corrupt, phantom, lost) after a crash, as a reader sees the zoo: corrupt = listed entries
    that are not sound; phantom = listed folders that are no entry of ours (hidden leftovers,
    other names); lost = entries that were good before and are not listed as good now."""
    zoo = Zoo(root)
    rows = zoo.entries()  # the reader: restores what a killed --retrain hid
    deep = {Path(r["path"]).name: r["status"] for r in zoo.verify()}
    corrupt = [n for n, s in deep.items() if s != "ok"]
    phantom = [Path(r["path"]).name for r in rows if Path(r["path"]).name not in expected
               or Path(r["path"]).name.startswith(".")]
    lost = [n for n in expected if deep.get(n) != "ok"]
    return corrupt, phantom, lost


SCENARIOS = [  # (fault, retrain: an entry exists and is being replaced)
    ("after-tmp-write", False), ("holding-lock", False),
    ("after-tmp-write", True), ("between-renames", True), ("holding-lock", True),
]
# CI injects each kill once; TOYMECH_KILL_ROUNDS=4 repeats the campaign (20 kills) on demand.
SCENARIOS = SCENARIOS * int(os.environ.get("TOYMECH_KILL_ROUNDS", "1"))


def test_kill_at_each_fault_point_loses_and_corrupts_nothing(pristine, tmp_path):
    name = Zoo(pristine).path(_exp(0)).name
    roots, procs = [], []
    for i, (fault, retrain) in enumerate(SCENARIOS):
        root = tmp_path / f"zoo{i}"
        if retrain:
            shutil.copytree(pristine, root)
            shutil.rmtree(root / Zoo(pristine).path(_exp(1)).name)
        roots.append(root)
        procs.append(_start(root, "retrain" if retrain else "get", fault))
    report = []
    for (fault, retrain), root, proc in zip(SCENARIOS, roots, procs):
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == -9, (fault, out, err[-2000:])  # it really was killed there
        hidden = sorted(p.name for p in root.iterdir() if p.name.startswith("."))
        if fault == "between-renames":
            assert not (root / name).exists() and any(".old-" in h for h in hidden)
        if fault == "holding-lock":
            assert f".{name}.lock" in hidden
        expected = [name] if retrain else []
        corrupt, phantom, lost = _audit(root, expected)
        report.append((fault, "retrain" if retrain else "fresh", len(corrupt), len(phantom), len(lost)))
        assert (corrupt, phantom, lost) == ([], [], []), (fault, retrain, hidden)
        if retrain:  # the old entry is intact and is what the next caller gets
            entry = Zoo(root).get_or_train(_exp(0), device="cpu", progress=False, log=None)
            assert entry.loaded
            before = load_file(str(pristine / name / "model.safetensors"))
            assert all(torch.equal(before[k], v) for k, v in entry.model.state_dict().items() if k in before)
        else:
            assert not Zoo(root).get_or_train(_exp(0), device="cpu", progress=False, log=None).loaded
        # the next write cleaned every leftover (dead owners), so only the entry remains
        assert sorted(p.name for p in root.iterdir()) == [name], hidden
    print("\nkills injected / corrupt / phantom / lost:", report)


def test_two_processes_train_one_entry_at_once(tmp_path):
    """Started together into one empty zoo; the entry's lock is held by this test until both
    are ready, so both surely contend for it: one trains, the other waits and loads."""
    import time

    held = True

    root = tmp_path / "zoo"
    exp = _exp(0)
    exp.train = exp.train.replace(steps=40)
    lock = Zoo(root).lock(exp)
    if held:
        assert lock.try_acquire()
    procs = [_start(root, "get", steps=40) for _ in range(2)]
    if held:
        while len(list(tmp_path.glob("zoo.ready-*"))) < 2 and all(p.poll() is None for p in procs):
            time.sleep(0.2)
        time.sleep(3)  # both past their imports and waiting on the lock
        lock.release()
    results, errs = [], []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        results.append(out.split("RESULT", 1)[1].split())
        errs.append(err)
    assert sorted(r[0] for r in results) == ["loaded", "trained"]  # trained once, not twice
    if held:
        assert all("waiting for the writer" in e for e in errs)
    assert results[0][1] == results[1][1]
    rows = Zoo(root).verify()
    assert [r["status"] for r in rows] == ["ok"]
    assert [p.name for p in root.iterdir()] == [results[0][1]]  # no lock or temporary left
