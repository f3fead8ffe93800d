"""Bad-input catalogue, part 5: the user's files and the report folder (``toymech report``,
``toymech sweep --out``). Each case: exit code 2, ONE line on stderr naming the option, the
notebook or the parameter, its value and what is allowed, no traceback, no kernel started, and
nothing under the test's folder written, moved or deleted (see ``catalogue``). Then two reports
into one ``--out`` at once: the second waits for the first."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from catalogue import refused, run_cli, tree
from waiting import limit

ROOT = Path(__file__).resolve().parents[1]
OK_NB = ROOT / "tests" / "fixtures" / "report_ok.ipynb"
BIRTH = ROOT / "notebooks" / "02_birth_of_a_transformer.ipynb"
INDUCTION = ROOT / "notebooks" / "01_induction_repeated_blocks.ipynb"
SMOKE = ["--size", "smoke", "--device", "cpu"]


def _places(tmp: Path) -> dict[str, str]:
    """The files the cases point at: a grid, a user's notes, a reports folder whose executed/
    holds a notebook, a folder of source notebooks, a notebook that is ``{}`` and an empty one."""
    grid = {"experiment": "modular_addition", "size": "smoke", "overrides": {"train.steps": [2]}}
    (tmp / "grid.json").write_text(json.dumps(grid))
    (tmp / "notes.txt").write_text("my notes\n")
    (tmp / "out" / "executed").mkdir(parents=True)
    shutil.copy(OK_NB, tmp / "out" / "executed" / "report_ok.ipynb")
    (tmp / "nbs").mkdir()
    shutil.copy(OK_NB, tmp / "nbs" / "report_ok.ipynb")
    (tmp / "empty_object.ipynb").write_text("{}")
    (tmp / "empty.ipynb").write_text("")
    (tmp / "site").mkdir()  # a user's own web pages
    (tmp / "site" / "index.html").write_text("<h1>my site</h1>\n")
    (tmp / "pages").mkdir()
    (tmp / "pages" / "notes.html").write_text("<p>my notes</p>\n")
    (tmp / "pages" / "index.json").write_text("[]")  # an index of toymech's that lists no page
    return {"tmp": str(tmp), "grid": str(tmp / "grid.json"), "notes": str(tmp / "notes.txt"),
            "out": str(tmp / "out"), "nbs": str(tmp / "nbs"), "site": str(tmp / "site"),
            "pages": str(tmp / "pages")}


REPORT = ["report", str(OK_NB), *SMOKE, "--out", "{tmp}/reports"]
BIRTH_REPORT = ["report", str(BIRTH), *SMOKE, "--out", "{tmp}/reports"]

# (argv with {placeholders}, fragments of the one stderr line)
CASES = {
    "sweep --out the grid itself (overwrote the grid before)": (
        ["sweep", "{grid}", "--out", "{grid}", "--backend", "local", "--device", "cpu", "--no-progress"],
        ["out=", "the grid"]),  # (the value is elided where the temp path is long, as under xdist)
    "sweep --out a user's file that is no results table": (
        ["sweep", "{grid}", "--out", "{notes}", "--backend", "local", "--device", "cpu", "--no-progress"],
        ["out=", "results table"]),
    "report a notebook inside --out's executed/ (deleted before)": (
        ["report", "{out}/executed/report_ok.ipynb", *SMOKE, "--out", "{out}"],
        ["notebook=", "executed", "copy it"]),
    "report --out the folder of the source notebooks": (
        ["report", "{nbs}/report_ok.ipynb", *SMOKE, "--out", "{nbs}"],
        ["--out=", "nbs", "source notebooks"]),
    "report --out a folder holding the user's index.html (written over before)": (
        ["report", str(OK_NB), *SMOKE, "--out", "{site}"], ["--out=", "pages toymech did not write", "index.html"]),
    "report --out a folder holding other .html pages (index.html written beside them before)": (
        ["report", str(OK_NB), *SMOKE, "--out", "{pages}"], ["--out=", "pages toymech did not write", "notes.html"]),
    "report --out /proc/x (FileNotFoundError before)": (
        ["report", str(OK_NB), *SMOKE, "--out", "/proc/toymech-x"], ["--out='/proc/toymech-x'"]),
    "report a notebook that is {} (ValidationError traceback before)": (
        ["report", "{tmp}/empty_object.ipynb", *SMOKE, "--out", "{tmp}/reports"],
        ["notebook=", "empty_object.ipynb", "Jupyter notebook"]),
    "report an empty .ipynb (named no file before)": (
        ["report", "{tmp}/empty.ipynb", *SMOKE, "--out", "{tmp}/reports"],
        ["notebook=", "empty.ipynb", "Jupyter notebook"]),
    "report --param size=huge (answered in API words before)": (
        [*REPORT, "--param", "size=huge"], ["--param size=", "--size"]),
    "report --param seed=3": ([*REPORT, "--param", "seed=3"], ["--param seed=", "--seed"]),
    "report --param n_seeds=4": ([*REPORT, "--param", "n_seeds=4"], ["--param n_seeds=", "--seeds"]),
    "report --seeds 1000000 (failed inside the notebook before)": (
        [*BIRTH_REPORT, "--seeds", "1000000"], ["--seeds", "1000000", "1,000"]),
    "report --param also={bad json (failed inside the notebook before)": (
        [*BIRTH_REPORT, "--param", "also={bad json"], ["also='{bad json'", "tied"]),
    "report --param also=[\"nonexistent\"] (failed inside the notebook before)": (
        [*BIRTH_REPORT, "--param", 'also=["nonexistent"]'], ["also[0]='nonexistent'", "tied"]),
    "report --param also=nonexistent (failed inside the notebook before)": (
        [*BIRTH_REPORT, "--param", "also=nonexistent"], ["also='nonexistent'"]),
    "report --param also=[\"tied\"] for the induction notebook": (
        ["report", str(INDUCTION), *SMOKE, "--out", "{tmp}/reports", "--param", 'also=["tied"]'],
        ["also[0]='tied'", "twins"]),
    "report --param cache_dir=/proc/x (failed inside the notebook before)": (
        [*BIRTH_REPORT, "--param", "cache_dir=/proc/toymech-x"], ["cache_dir='/proc/toymech-x'"]),
}


def _fill(value: str, places: dict[str, str]) -> str:
    for k, v in places.items():
        value = value.replace("{" + k + "}", v)
    return value


@pytest.mark.parametrize("case", list(CASES), ids=[f"user files and reports: {c}" for c in CASES])
def test_user_files_and_reports(case, tmp_path):
    argv, fragments = CASES[case]
    places = _places(tmp_path)
    argv = [_fill(a, places) for a in argv]
    before = tree(tmp_path)
    refused(*run_cli(argv), [_fill(f, places) for f in fragments])
    assert tree(tmp_path) == before, "something was written, moved or deleted"


def test_catalogue_part_5_size():
    assert len(CASES) >= 17


# --------------------------------------------------------------------------------------------
# two reports into one --out at once
# --------------------------------------------------------------------------------------------

WAIT_S = limit(300)  # generous: never a timing


def _waiting_notebook(path: Path, started: Path, release: Path) -> None:
    """A notebook that says it started (a file), then waits until ``release`` exists."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('size = "smoke"\ndevice = "cpu"\nseed = 0')
    params.metadata["tags"] = ["parameters"]
    body = nbformat.v4.new_code_cell(
        "import os, pathlib, time\n"
        f"pathlib.Path({str(started)!r}).joinpath(str(os.getpid())).touch()\n"
        f"while not pathlib.Path({str(release)!r}).exists():\n"
        "    time.sleep(0.05)\n"
        "print('released')")
    nb.cells = [params, body]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def _until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("case", ["two reports of one notebook into one --out (one run lost before)"],
                         ids=lambda c: f"concurrency and kills: {c}")
def test_two_reports_into_one_out(case, tmp_path):
    started, release, out = tmp_path / "started", tmp_path / "release", tmp_path / "reports"
    started.mkdir()
    nb = tmp_path / "wait.ipynb"
    _waiting_notebook(nb, started, release)
    command = [sys.executable, "-m", "toymech", "report", str(nb), *SMOKE, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TOYMECH_THREADS": "1"}
    env.pop("TOYMECH_DEBUG", None)
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    procs = [first]
    try:
        _until(lambda: any(started.iterdir()) or first.poll() is not None, "the first kernel")
        assert first.poll() is None, first.communicate()
        err2 = tmp_path / "second.err"
        with open(err2, "w") as sink:
            second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True, env=env)
        procs.append(second)
        # the second says it waits for the first, and starts no kernel meanwhile
        _until(lambda: "waiting" in err2.read_text() or second.poll() is not None
               or len(list(started.iterdir())) > 1, "the second's wait")
        assert second.poll() is None, (second.communicate(), err2.read_text())
        assert f"pid {first.pid}" in err2.read_text(), err2.read_text()
        assert len(list(started.iterdir())) == 1
        release.touch()
        out1, e1 = first.communicate(timeout=WAIT_S)
        out2, _ = second.communicate(timeout=WAIT_S)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert first.returncode == 0 and second.returncode == 0, (out1, e1, out2, err2.read_text())
    assert len(list(started.iterdir())) == 2  # both ran, one after the other
    index = json.loads((out / "index.json").read_text())
    rows = index if isinstance(index, list) else index.get("entries", index.get("reports", []))
    assert len(rows) == 1 and (out / "wait.html").is_file() and (out / "executed" / "wait.ipynb").is_file()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".lock")], "a lock was left behind"


def _terminal_sigint() -> None:
    """In the child: Ctrl-C as a terminal's foreground command has it. A suite started as a
    shell's background job (``pytest ... &``) inherits SIGINT ignored, and the report would
    rightly ignore it too."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_report(command: list[str], env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=_terminal_sigint, **kw)


@pytest.mark.parametrize("case", ["a rerun killed midway (left a half-run notebook under an ok row "
                                  "before, and toymech results replaced the good block)"],
                         ids=lambda c: f"concurrency and kills: {c}")
def test_a_killed_rerun_leaves_the_last_finished_run_served(case, tmp_path):
    from toymech.report import results

    started, release, out = tmp_path / "started", tmp_path / "release", tmp_path / "reports"
    started.mkdir()
    release.touch()
    nb = tmp_path / "wait.ipynb"
    _waiting_notebook(nb, started, release)
    command = [sys.executable, "-m", "toymech", "report", str(nb), *SMOKE, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TOYMECH_THREADS": "1"}
    env.pop("TOYMECH_DEBUG", None)
    first = _run_report(command, env)
    o, e = first.communicate(timeout=WAIT_S)
    assert first.returncode == 0, (o, e)
    served = {p: (out / p).read_bytes() for p in ("executed/wait.ipynb", "wait.html", "index.json")}
    block = [results.record_data(r) for r in results.report_records(out)]

    release.unlink()
    for p in started.iterdir():
        p.unlink()
    rerun = _run_report(command, env)
    try:
        _until(lambda: any(started.iterdir()) or rerun.poll() is not None, "the rerun's kernel")
        assert rerun.poll() is None, rerun.communicate()
        kernel = int(next(started.iterdir()).name)
        rerun.kill()  # killed midway: the kernel is still in its cell
        rerun.wait()
        os.kill(kernel, signal.SIGKILL)
    finally:
        if rerun.poll() is None:
            rerun.kill()
            rerun.wait()
    # the last finished run is still the one served, byte for byte, and so is its record
    assert {p: (out / p).read_bytes() for p in served} == served
    assert [results.record_data(r) for r in results.report_records(out)] == block

    release.touch()
    third = _run_report(command, env)
    o, e = third.communicate(timeout=WAIT_S)
    assert third.returncode == 0, (o, e)
    assert "wait started" in e and "did not finish" in e and "still the one served" in e, e
    assert (out / "executed" / "wait.ipynb").read_bytes() != served["executed/wait.ipynb"]
    assert not (out / ".unfinished").exists()


@pytest.mark.parametrize("case", ["Ctrl-C during a report (a 20-line kernel traceback before)"],
                         ids=lambda c: f"concurrency and kills: {c}")
def test_ctrl_c_during_a_report_ends_on_one_line(case, tmp_path):
    """SIGINT to the command's process group, as a terminal's Ctrl-C sends it: exit 130, the
    line "toymech: interrupted", no traceback (the kernel's included); the next run says the
    interrupted notebook did not finish."""
    started, release, out = tmp_path / "started", tmp_path / "release", tmp_path / "reports"
    started.mkdir()
    nb = tmp_path / "wait.ipynb"
    _waiting_notebook(nb, started, release)
    command = [sys.executable, "-m", "toymech", "report", str(nb), *SMOKE, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TOYMECH_THREADS": "1"}
    env.pop("TOYMECH_DEBUG", None)
    run = _run_report(command, env, start_new_session=True)
    try:
        _until(lambda: any(started.iterdir()) or run.poll() is not None, "the kernel")
        assert run.poll() is None, run.communicate()
        kernel = int(next(started.iterdir()).name)
        os.killpg(run.pid, signal.SIGINT)
        o, e = run.communicate(timeout=WAIT_S)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 130, (o, e)
    assert "Traceback" not in e and "ERROR" not in e, e
    assert e.strip().splitlines()[-1] == "toymech: interrupted", e
    _until(lambda: not Path(f"/proc/{kernel}").exists(), "the kernel to end")
    release.touch()
    again = _run_report(command, env)
    o, e = again.communicate(timeout=WAIT_S)
    assert again.returncode == 0 and "did not finish" in e and "no finished run" in e, (o, e)
