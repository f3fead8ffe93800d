"""Helpers of the bad-input catalogue (``tests/test_bad_input_*.py``).

Every case is run through a public entry point (``toymech.cli.main`` in-process, ``Zoo``,
``run_sweep``, ``experiments``) and checked the same way: its exit code (or exception type),
ONE line that names the parameter, the value and what is allowed, no traceback, and the zoo
folder unchanged or not created. A case that hangs fails after ``HANG_S`` seconds (an alarm),
so a regression shows as a failure, never as a stuck test run.

The catalogue uses only names that older toymech versions have too, so the same files count
what an older checkout handled: ``PYTHONPATH=<old checkout> pytest tests/test_bad_input_*.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import stat
import traceback
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from waiting import limit

HANG_S = 60  # on the machine the limits were written on; ``no_hang`` scales it to this one


class Hung(Exception):
    pass


@contextlib.contextmanager
def no_hang(seconds: int = HANG_S):
    """Fail (``Hung``) instead of waiting longer than ``seconds`` scaled to this machine
    (``waiting.limit``; main thread only)."""
    seconds = max(1, int(limit(seconds)))

    def ring(*_):
        raise Hung(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def tree(root: Path) -> dict[str, object]:
    """What a reader sees under ``root``: every name with its kind, and files' sizes and times
    (folders' own times are left out: a lock taken and released changes them, nothing else)."""
    if not os.path.lexists(root):
        return {}
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "dir"
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", st.st_size, st.st_mtime_ns)
            else:
                out[rel] = ("special", stat.S_IFMT(st.st_mode))
    return out


def one_line(text: str, fragments) -> None:
    """``text`` is one line without a traceback and holds every fragment."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert "Traceback" not in text, text[-3000:]
    assert len(lines) == 1, text[-3000:]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@contextlib.contextmanager
def env(**values: str | None):
    old = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_cli(argv: list[str], **environ: str | None) -> tuple[int, str, str]:
    """``toymech.cli.main(argv)`` in this process: (exit code, stdout, stderr); an exception
    that escapes it counts as a traceback on stderr (code 99)."""
    from toymech.cli import main

    out, err = io.StringIO(), io.StringIO()
    with env(TOYMECH_DEBUG=None, **environ), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            with no_hang():
                code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # a traceback, or a hang: what the catalogue refuses
            err.write(traceback.format_exc())
            code = 99
    return code, out.getvalue(), err.getvalue()


def stderr_lines(err: str) -> list[str]:
    """The lines on stderr that are not progress or thread notices."""
    return [line for line in err.splitlines() if line.strip() and not line.startswith("[toymech]")
            and "it/s" not in line]


def refused(code: int, out: str, err: str, fragments, want: int = 2) -> str:
    """A command refused its input: exit code ``want`` and ONE line on stderr, ``toymech:
    error: ...`` holding every fragment, no traceback. Returns the line."""
    assert code == want, (code, out[-2000:], err[-3000:])
    lines = stderr_lines(err)
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("toymech: error: "), err[-3000:]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# --------------------------------------------------------------------------------------------
# zoo entries damaged on purpose
# --------------------------------------------------------------------------------------------


def meta(path: Path) -> dict:
    return json.loads((path / "config.json").read_text())


def write_meta(path: Path, data: dict) -> None:
    (path / "config.json").write_text(json.dumps(data))


def legacy(path: Path) -> None:
    """Make an entry look like one saved before integrity records existed."""
    data = meta(path)
    data.pop("integrity", None)
    data.pop("key", None)
    write_meta(path, data)
    save_file(load_file(str(path / "model.safetensors")), str(path / "model.safetensors"))


def rehash(path: Path, data: dict, state: dict | None = None) -> None:
    """Save ``data`` (and ``state``) with a VALID integrity record, as a writer that put them
    there itself would have: only checks beyond the hashes can find what is wrong with them."""
    from toymech.training import checkpoints

    state = load_file(str(path / "model.safetensors")) if state is None else state
    data = {k: v for k, v in data.items() if k != "integrity"}
    sha = checkpoints._meta_sha256(data)
    save_file(state, str(path / "model.safetensors"), metadata={"toymech_meta_sha256": sha})
    record = {"weights_sha256": checkpoints._sha256((path / "model.safetensors").read_bytes()),
              "meta_sha256": sha}
    if (path / "snapshots.safetensors").is_file():
        record["snapshots_sha256"] = checkpoints._sha256((path / "snapshots.safetensors").read_bytes())
    if (path / "train_state.pt").is_file():
        record["train_state_sha256"] = checkpoints._sha256((path / "train_state.pt").read_bytes())
    write_meta(path, {**data, "integrity": record})


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


# --------------------------------------------------------------------------------------------
# counting a run of the catalogue: python tests/catalogue.py junit.xml
# --------------------------------------------------------------------------------------------

def outcome(message: str) -> str:
    """Why a case failed, from its failure message: what the catalogue refuses, worst first."""
    if "Hung" in message or "still running after" in message:
        # stopped while training: the input was taken and a run started
        return "accepted silently" if "it/s" in message else "hung"
    if "Traceback" in message or "(99," in message:
        return "traceback"
    if "DID NOT RAISE" in message or message.startswith("AssertionError: (0,"):
        return "accepted silently"
    if any(w in message for w in ("was written", "zoo changed", "was created")):
        return "wrote or moved"
    return "unclear (another code or line)"


def count(junit: str) -> dict[str, dict[str, int]]:
    """Cases per category (the test id's prefix) and outcome."""
    import re
    import xml.etree.ElementTree as ET

    out: dict[str, dict[str, int]] = {}
    for case in ET.parse(junit).iter("testcase"):
        m = re.search(r"\[([^:\]]+):", case.get("name", ""))
        if not m:
            continue
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        kind = "clear" if failure is None else outcome(failure.get("message", ""))
        row = out.setdefault(m[1], {})
        row[kind] = row.get(kind, 0) + 1
    return out


if __name__ == "__main__":
    import sys

    for category, row in count(sys.argv[1]).items():
        print(f"{category:<24} {sum(row.values()):>4}  " + ", ".join(f"{k} {v}" for k, v in sorted(row.items())))
