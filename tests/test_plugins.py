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

    # --- the study: a Study object, registered once ---
    import dataclasses
    from toymech.studies._template import STUDY as TEMPLATE
    protocol.register_study(dataclasses.replace(TEMPLATE, name="mystudy",
                                                notebook="notebooks/mine.ipynb"))
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


def _installed(folder):
    """``folder`` as a site directory holding an installed distribution (a ``.dist-info`` with
    entry points in both groups) and its modules: a task module, and a study that is a package of
    its own (the template's modules copied out and importing toymech by absolute names)."""
    import re
    from pathlib import Path

    template = Path(__file__).resolve().parents[1] / "toymech" / "studies" / "_template"
    study = folder / "extlab_study"
    study.mkdir(parents=True)
    for src in template.glob("*.py"):
        text = re.sub(r"^from \.\.\. import", "from toymech import", src.read_text(), flags=re.M)
        text = re.sub(r"^from \.\.\.(\w)", r"from toymech.\1", text, flags=re.M)
        text = re.sub(r"^from \.\. import", "from toymech.studies import", text, flags=re.M)
        text = re.sub(r'^NAME = "_template"', 'NAME = "extstudy"', text, flags=re.M)
        text = re.sub(r"^from \.\.(\w)", r"from toymech.studies.\1", text, flags=re.M)
        (study / src.name).write_text(text)
    task_part, _ = MODULE.split("# --- the study")
    (folder / "extlab_tasks.py").write_text(task_part)
    (folder / "extlab_studies.py").write_text(
        "import dataclasses\n"
        "from toymech.studies import protocol\n"
        "from extlab_study import STUDY\n"
        "protocol.register_study(dataclasses.replace(STUDY, notebook='notebooks/ext.ipynb'))\n")
    info = folder / "extlab-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extlab\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[toymech.tasks]\nreverse3 = extlab_tasks\n\n"
                                           "[toymech.studies]\nextstudy = extlab_studies\n")


def _toymech(folder, *argv):
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(folder), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "toymech", *argv], capture_output=True,
                          text=True, env=environ, cwd=folder)


def test_an_installed_distributions_entry_points_register_its_task_and_study(tmp_path):
    """Entry points (``toymech.plugins.load``) of a distribution found on ``sys.path``, with a
    study package outside toymech: no ``--import``, no ``$TOYMECH_IMPORT``."""
    site = tmp_path / "site"
    _installed(site)
    got = _toymech(site, "list", "tasks")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "reverse3_plugin" in got.stdout
    got = _toymech(site, "list", "knobs", "extstudy")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "extstudy:" in got.stdout and "max_len" in got.stdout
    # the same folder without the distribution's record: nothing is loaded
    for path in (site / "extlab-0.1.dist-info").iterdir():
        path.unlink()
    (site / "extlab-0.1.dist-info").rmdir()
    got = _toymech(site, "list", "tasks")
    assert got.returncode == 0 and "reverse3_plugin" not in got.stdout
