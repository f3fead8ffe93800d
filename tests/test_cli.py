"""The `toymech` command, run as a user would: in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import limit

FIXTURES = Path(__file__).parent / "fixtures"
OK, FAIL = FIXTURES / "report_ok.ipynb", FIXTURES / "report_fail.ipynb"


def toymech(*args: str, cwd: Path | None = None, timeout: float = 300, **env_vars: str) -> subprocess.CompletedProcess:
    # `python -m toymech` is the same entry point as the console script and needs no PATH.
    env = {**os.environ, "TOYMECH_DEBUG": "", **env_vars}
    return subprocess.run([sys.executable, "-m", "toymech", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=limit(timeout))


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toymech: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_console_script_installed():
    script = shutil.which("toymech") or str(Path(sys.executable).parent / "toymech")
    result = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=limit(60))
    assert result.returncode == 0 and result.stdout.startswith("toymech ")


@pytest.mark.parametrize(
    "command, expected",
    [
        ([], ["train", "list", "report", "lab"]),
        (["train"], ["--config", "--size", "--steps", "--device", "--cache", "--dump-config"]),
        (["list"], ["tasks", "experiments", "models", "--json"]),
        (["report"], ["--size", "--device", "--seed", "--out", "--param"]),
        (["lab"], ["--dry-run", "--dir", "--port"]),
    ],
)
def test_help_everywhere(command, expected):
    result = toymech(*command, "--help")
    assert result.returncode == 0, result.stderr
    for word in expected:
        assert word in result.stdout


def test_no_command_prints_help_and_exits_2():
    result = toymech()
    assert result.returncode == 2 and "usage: toymech" in result.stdout


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["frobnicate"], ["invalid choice: 'frobnicate'"]),
        (["report", "--size", "huge"], ["--size", "'huge'", "smoke"]),
        (["report", "--seed", "-3"], ["--seed", "negative"]),
        (["report", "--device", "gpu"], ["device='gpu'", "cpu"]),
        (["report", "missing.ipynb"], ["'missing.ipynb' does not exist"]),
        (["report", str(OK), "--param", "steps"], ["--param 'steps' is not NAME=VALUE"]),
        (["report", str(OK), "--param", "steps=3"], ["does not define parameter(s) steps"]),
        (["lab", "--dir", "/nonexistent/nb", "--dry-run"], ["'/nonexistent/nb' does not exist"]),
        (["train"], ["give an experiment name or --config FILE"]),
        (["train", "no-such-preset", "--dump-config", "-"], ["no-such-preset", "induction-2l"]),
        (["train", "--config", "/nonexistent.json"], ["--config=", "a file that can be read"]),
        (["train", "induction-1l", "--steps", "0"], ["--steps", "0 is not allowed"]),
        (["list", "everything"], ["invalid choice: 'everything'"]),
    ],
)
def test_bad_input_is_one_line_exit_2(args, fragments):
    assert_one_line_error(toymech(*args), *fragments)


def test_bad_config_file(tmp_path):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    assert_one_line_error(toymech("train", "--config", str(bad_json)), "bad.json", "valid JSON (line 1")
    incomplete = tmp_path / "incomplete.json"
    incomplete.write_text(json.dumps({"task": {"name": "repeated_blocks"}}))
    assert_one_line_error(toymech("train", "--config", str(incomplete)), "missing 'model'")


def test_lab_dry_run(tmp_path):
    (tmp_path / "notebooks").mkdir()
    result = toymech("lab", "--dry-run", "--no-browser", "--port", "8899", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    root = " --allow-root" if os.geteuid() == 0 else ""  # Jupyter refuses root without it
    assert result.stdout.strip() == (
        f"{sys.executable} -m jupyterlab --ServerApp.root_dir={(tmp_path / 'notebooks').resolve()}"
        f" --ServerApp.port=8899 --no-browser{root}"
    )
    passthrough = toymech("lab", "--dry-run", "--", "--ServerApp.ip=0.0.0.0", cwd=tmp_path)
    assert passthrough.returncode == 0 and passthrough.stdout.strip().endswith("--ServerApp.ip=0.0.0.0")


def test_report_exit_codes_and_outputs(tmp_path):
    failing = toymech("report", str(OK), str(FAIL), "--size", "smoke", "--device", "cpu",
                      "--seed", "1", "--out", str(tmp_path / "both"), JUPYTER_DATA_DIR=str(tmp_path / "jd"))
    assert failing.returncode == 1, failing.stderr
    assert "1 ok, 1 failed" in failing.stdout
    assert "failed" in failing.stderr and "RuntimeError: fixture failure on purpose" in failing.stderr
    index = (tmp_path / "both" / "index.html").read_text()
    assert "report_ok.html" in index and "report_fail.html" in index
    assert (tmp_path / "both" / "report_fail.html").is_file()

    # The executed notebook is signed (trusted) in the user's Jupyter data dir, kept apart here.
    data_dir = tmp_path / "jupyter-data"
    ok = toymech("report", str(OK), "--size", "smoke", "--out", str(tmp_path / "ok"),
                 JUPYTER_DATA_DIR=str(data_dir))
    assert ok.returncode == 0, ok.stderr
    assert "1 ok, 0 failed" in ok.stdout
    assert "without encryption" not in ok.stderr  # kernel start-up chatter is silenced
    assert (tmp_path / "ok" / "report_ok.html").stat().st_size > 1_000_000
    import nbformat
    from nbformat.sign import NotebookNotary

    executed = nbformat.read(tmp_path / "ok" / "executed" / "report_ok.ipynb", as_version=4)
    assert NotebookNotary(data_dir=str(data_dir)).check_signature(executed)
    (tmp_path / "elsewhere").mkdir()
    assert not NotebookNotary(data_dir=str(tmp_path / "elsewhere")).check_signature(executed)


def test_report_default_notebooks_from_dir(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(FAIL, folder / "only.ipynb")
    result = toymech("report", "--size", "smoke", "--out", "out", cwd=tmp_path,
                     JUPYTER_DATA_DIR=str(tmp_path / "jd"))
    assert result.returncode == 1 and (tmp_path / "out" / "only.html").is_file(), result.stderr


def test_train_list_and_config_round_trip(tmp_path):
    cache = str(tmp_path / "zoo")
    config = tmp_path / "exp.json"
    dumped = toymech("train", "induction-1l", "--size", "smoke", "--dump-config", str(config))
    assert dumped.returncode == 0, dumped.stderr
    spec = json.loads(config.read_text())
    assert spec["name"] == "induction-1l" and spec["train"]["steps"] == 40

    trained = toymech("train", "--config", str(config), "--steps", "4", "--device", "cpu", "--cache", cache)
    assert trained.returncode == 0, trained.stderr
    last = trained.stdout.strip().splitlines()[-1]
    assert last.startswith("induction-1l: trained; step=4 train_loss=") and "eval_loss=" in last
    assert "4/4" in trained.stderr  # the progress bar ran to the end

    again = toymech("train", "--config", str(config), "--steps", "4", "--cache", cache, "-q")
    assert again.returncode == 0 and "loaded from the zoo" in again.stdout

    listed = toymech("list", "--json", "--cache", cache)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert "repeated_blocks" in [t["name"] for t in data["tasks"]]
    assert "induction-2l" in [p["name"] for p in data["experiments"]]
    [model] = data["models"]
    assert model["name"] == "induction-1l" and model["final"]["step"] == 4
    assert set(model["final"]) >= {"train_loss", "eval_loss"}
    assert model["seed"] == spec["train"]["seed"]  # each model's seed is listed (none before)

    text = toymech("list", "models", "--cache", cache)
    assert text.returncode == 0 and "induction-1l" in text.stdout and "eval_loss=" in text.stdout
    assert f"seed {spec['train']['seed']}" in text.stdout, text.stdout
