"""The one atomic file writer (``toymech.files.replace_file``): complete files only, temporary
names unique per process and thread, nothing left behind, and no second hand-written copy."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toymech.files import replace_file, temp_name

ROOT = Path(__file__).resolve().parents[1]


def test_replaces_text_bytes_and_writer_functions(tmp_path):
    target = tmp_path / "t.json"
    replace_file(target, "one")
    assert target.read_text() == "one"
    replace_file(target, b"two")
    assert target.read_bytes() == b"two"
    replace_file(target, lambda p: p.write_text("three"), durable=True)
    assert target.read_text() == "three"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")

    def half(p):
        p.write_text("half a tab")
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        replace_file(target, half)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "record.md"
    target.write_text("x")
    os.chmod(target, 0o640)
    replace_file(target, "y")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_temporary_names_differ_per_thread_and_call(tmp_path):
    names = set()

    def take():
        names.add(temp_name(tmp_path / "f").name)
        names.add(temp_name(tmp_path / "f").name)
    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(names) == 16
    assert all(n.startswith(f".f.tmp-{os.getpid()}-") for n in names)


def test_threads_and_processes_replacing_one_file_leave_one_whole_file(tmp_path):
    target = tmp_path / "shared.txt"
    texts = [f"{i}:" + "x" * 50_000 for i in range(6)]
    script = ("import sys; from toymech.files import replace_file\n"
              "for _ in range(30): replace_file(sys.argv[1], sys.argv[2])")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(target), f"p{i}:" + "y" * 50_000],
                              env=env) for i in range(2)]
    errors = []

    def write(text):
        try:
            for _ in range(30):
                replace_file(target, text)
        except OSError as exc:  # a shared temporary name would show up here
            errors.append(exc)
    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait() for p in procs] == [0, 0]
    assert not errors
    assert target.read_text() in texts + [f"p{i}:" + "y" * 50_000 for i in range(2)]
    assert [p.name for p in tmp_path.iterdir()] == ["shared.txt"]


# Files that rename on purpose without writing: the checkpoint folder writer, and the report
# staging that moves finished pages into place.
RENAMES_ALLOWED = {"files.py", "training/atomic.py", "report/staging.py"}


def test_no_hand_written_write_then_rename_is_left():
    pattern = re.compile(r"os\.replace\(|\.replace\(\s*tmp|tmp\w*\.rename\(|\.tmp\b[\"'}]")
    found = []
    for path in sorted((ROOT / "toymech").rglob("*.py")):
        rel = path.relative_to(ROOT / "toymech").as_posix()
        if rel in RENAMES_ALLOWED:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "use toymech.files.replace_file:\n" + "\n".join(found)
