"""Your own task or study outside the package (``--import MODULE``, ``$TOYMECH_IMPORT``, entry
points): the CLI, knobs and the registry take its name. Run in subprocesses, so the registry of
this test process stays the package's own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

MODULE = textwrap.dedent('''
    from dataclasses import dataclass
    import torch
    from toymech.tasks import Batch, Task, register
    from toymech.studies import protocol

    @register("reverse3_plugin")
    @dataclass(frozen=True)
    class Reverse3(Task):
        n: int = 5
        @property
        def vocab(self): return [str(i) for i in range(self.n)]
        @property
        def seq_len(self): return 6
        def sample(self, batch_size, generator):
            x = torch.randint(0, self.n, (batch_size, 3), generator=generator, device=generator.device)
            t = torch.cat([x, x.flip(1)], 1)
            s = torch.zeros_like(t, dtype=torch.bool)
            s[:, 3:] = True
            return Batch(t, s)

    protocol.register_study("mystudy", "toymech.studies._template", "notebooks/mine.ipynb")
''')


def _run(tmp_path, *argv, **env):
    (tmp_path / "mylab_plugin.py").write_text(MODULE)
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")]), **env}
    return subprocess.run([sys.executable, "-m", "toymech", *argv], capture_output=True,
                          text=True, env=environ, cwd=tmp_path)


def test_import_registers_a_task_and_a_study(tmp_path):
    zoo = str(tmp_path / "zoo")
    got = _run(tmp_path, "--import", "mylab_plugin", "train", "reverse3_plugin", "--size",
               "smoke", "--cache", zoo, "-q")
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.startswith("reverse3_plugin: trained")
    got = _run(tmp_path, "--import", "mylab_plugin", "list", "knobs", "mystudy")
    assert got.returncode == 0 and "mystudy:" in got.stdout and "max_len" in got.stdout
    got = _run(tmp_path, "list", "tasks", TOYMECH_IMPORT="mylab_plugin")  # the environment
    assert got.returncode == 0 and "reverse3_plugin" in got.stdout


def test_without_the_import_the_name_is_unknown_and_bad_modules_refused(tmp_path):
    got = _run(tmp_path, "train", "reverse3_plugin", "--size", "smoke")
    assert got.returncode == 2 and "experiment='reverse3_plugin' is not allowed" in got.stderr
    got = _run(tmp_path, "--import", "no_such_module_here", "list", "tasks")
    assert got.returncode == 2 and "--import='no_such_module_here' is not allowed" in got.stderr
    got = _run(tmp_path, "--import", "bad name", "list", "tasks")
    assert got.returncode == 2 and "a module name" in got.stderr
