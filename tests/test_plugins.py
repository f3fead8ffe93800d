"""Your own task or study outside the package (``--import MODULE``, ``$TOYMECH_IMPORT``, entry
points): the CLI, knobs and the registry take its name. Run in subprocesses, so the registry of
this test process stays the package's own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

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

    # --- the study: an instance of a Study subclass, registered once ---
    from toymech.studies._template.study import TemplateStudy

    class MyStudy(TemplateStudy):
        name = "mystudy"
        notebook = "notebooks/mine.ipynb"

    protocol.register_study(MyStudy())
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


# An installed lab's own code (not the package's template): a task that repeats a sequence's
# first token, and a one-module study of that task with the protocol's whole surface.
EXT_TASKS = textwrap.dedent('''
    from dataclasses import dataclass
    import torch
    from toymech.tasks import Batch, Task, register

    @register("first_token_ext")
    @dataclass(frozen=True)
    class FirstToken(Task):
        n: int = 6
        length: int = 5
        @property
        def vocab(self): return [f"t{i}" for i in range(self.n)]
        @property
        def seq_len(self): return 2 * self.length
        def sample(self, batch_size, generator):
            x = torch.randint(0, self.n, (batch_size, self.length), generator=generator,
                              device=generator.device)
            t = torch.cat([x, x[:, :1].expand(-1, self.length)], 1)
            s = torch.zeros_like(t, dtype=torch.bool)
            s[:, self.length:] = True
            return Batch(t, s)
''')
EXT_STUDY = textwrap.dedent('''
    """extlab's study: does a 1-layer model repeat a sequence's first token?"""
    from dataclasses import dataclass
    import torch
    import extlab_tasks  # noqa: F401  its task, registered
    from toymech import tasks
    from toymech.analysis.chance import chance_levels
    from toymech.core import seed_for
    from toymech.devices import make_generator
    from toymech.models import ModelConfig, build_model
    from toymech.training import Experiment, Named, TrainConfig, evaluate
    from toymech.studies import knobs
    from toymech.studies.claims import Claim
    from toymech.studies.knobs import Knob
    from toymech.studies.protocol import ProbeData, Study, StudySize, size_of

    @dataclass(frozen=True)
    class ExtSize(StudySize):
        steps: int = 100

    SIZES = {"smoke": ExtSize(1, 10), "default": ExtSize(2, 200), "paper": ExtSize(3, 400)}

    def experiment(size="default", seed=0):
        task = tasks.get("first_token_ext")
        model = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_vocab=task.d_vocab,
                            n_ctx=task.seq_len, seed=seed)
        train = TrainConfig(steps=size_of(SIZES, size).steps, batch_size=32, lr=1e-3, seed=seed,
                            eval_every=10, eval_size=64)
        return knobs.apply_knobs(KNOBS, Experiment(task, model, train, "extlab-first"),
                                 knobs.variant_values(KNOBS, size))

    KNOBS = knobs.table(Knob("first_width", "int", (4, 256), 16, "the model's width",
                             ("model.d_model",)))

    @dataclass(frozen=True)
    class ExtData(ProbeData):
        sets: dict
        example: torch.Tensor

    class ExtStudy(Study):
        name = "extstudy"
        title = "extlab: repeating the first token"
        source = "extlab's own question"
        sizes = SIZES
        named_experiments = {"extlab-first": Named("extlab-first", "extlab's model", experiment,
                                                   "extstudy")}
        knobs = KNOBS
        claims = (Claim("repeats", "the model repeats the first token", "extlab", "100 %",
                        value=lambda n: n["acc"], holds=lambda n: n["acc"] >= 0.95,
                        reference=lambda n: n["chance"], null="chance", unit="accuracy",
                        test="accuracy >= 0.95", why="extlab's own bar",
                        setting={"steps": 400, "d_model": 16, "first_token_task": 5}),)
        settings = None
        notebook = "notebooks/ext.ipynb"
        dynamics_names = ("test_acc",)

        def experiments(self, size, seeds):
            return [experiment(size, s) for s in seeds]

        def eval_sets(self, task, size, seed, device="cpu"):
            return task.eval_sets(64, make_generator(seed_for(seed, "eval"), torch.device(device)))

        def probe_data(self, task, size, seed, device="cpu"):
            sets = self.eval_sets(task, size, seed, device)
            return ExtData(task, sets, sets["test"].tokens[0])

        @torch.no_grad()
        def measure_seed(self, runs, data):
            model = getattr(runs["model"], "model", runs["model"])
            test = data.sets["test"]
            return {"acc": float(evaluate(model, data.task, test)["acc"]),
                    "chance": float(chance_levels(data.task, test)["acc"])}

        def untrained_numbers(self, size, seed):
            exp = experiment(size, seed)
            return self.measure_seed({"model": build_model(exp.model, "cpu").eval()},
                                     self.probe_data(exp.task, size, seed))

        @torch.no_grad()
        def dynamics_metrics(self, model, data):
            return {"test_acc": evaluate(model, data.task, data.sets["test"])["acc"]}

        def describe(self, size, seed, device, *, n_seeds=None):
            return f"size {size} on {device}"

    STUDY = ExtStudy()
''')


def _installed(folder, broken: bool = False):
    """``folder`` as a site directory holding an installed distribution, ``extlab`` (a
    ``.dist-info`` with ``METADATA`` and entry points in both groups), and its own modules: a
    task and a study written here, outside toymech and unlike its template. ``broken``: the
    studies' entry point names a module that raises on import."""
    folder.mkdir(parents=True)
    (folder / "extlab_tasks.py").write_text(EXT_TASKS)
    (folder / "extlab_study.py").write_text(EXT_STUDY)
    (folder / "extlab_studies.py").write_text(
        "from toymech.studies import protocol\n"
        "from extlab_study import STUDY\n"
        "protocol.register_study(STUDY)\n"
        + ("raise RuntimeError('extlab licence server unreachable')\n" if broken else ""))
    info = folder / "extlab-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extlab\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[toymech.tasks]\nfirst = extlab_tasks\n\n"
                                           "[toymech.studies]\nextstudy = extlab_studies\n")


def _toymech(folder, *argv):
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(folder), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "toymech", *argv], capture_output=True,
                          text=True, env=environ, cwd=folder)


def test_an_installed_distributions_entry_points_register_its_task_and_study(tmp_path):
    """Entry points (``toymech.plugins.load``) of a distribution found on ``sys.path``, with a
    task and a study of its own: no ``--import``, no ``$TOYMECH_IMPORT``. The study's named
    experiment trains through the CLI like the package's own."""
    site = tmp_path / "site"
    _installed(site)
    got = _toymech(site, "list", "tasks")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "first_token_ext" in got.stdout
    got = _toymech(site, "list", "knobs", "extstudy")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "extstudy:" in got.stdout and "first_width" in got.stdout
    got = _toymech(site, "list", "studies")
    assert got.returncode == 0 and "extstudy" in got.stdout
    got = _toymech(site, "train", "extlab-first", "--size", "smoke", "--cache",
                   str(tmp_path / "zoo"), "-q")
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.startswith("extlab-first: trained")
    # the same folder without the distribution's record: nothing is loaded
    for path in (site / "extlab-0.1.dist-info").iterdir():
        path.unlink()
    (site / "extlab-0.1.dist-info").rmdir()
    got = _toymech(site, "list", "tasks")
    assert got.returncode == 0 and "first_token_ext" not in got.stdout


def test_a_broken_installed_plugin_is_one_line_naming_its_entry_point(tmp_path):
    """An entry point whose module raises: exit code 2 and one line on stderr naming the entry
    point, its group, the error and where, with what to do (no traceback)."""
    site = tmp_path / "site"
    _installed(site, broken=True)
    got = _toymech(site, "list", "tasks")
    assert got.returncode == 2, got.stderr[-2000:]
    lines = got.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in got.stderr
    for fragment in ("entry point extstudy='extlab_studies'", "toymech.studies",
                     "RuntimeError", "extlab licence server unreachable", "extlab_studies.py",
                     "fix or uninstall its package"):
        assert fragment in lines[0], (fragment, lines[0])


# --- CONTRIBUTING's walk-throughs on a copy of the template, outside the package -------------
TEMPLATE = Path(__file__).resolve().parents[1] / "toymech" / "studies" / "_template"
# "Add a knob": one declaration in the study's KNOBS.
NEW_KNOB = ('    Knob("n_heads", "int", (1, 16), 4, "attention heads per layer", '
            '("model.n_heads",)),\n')
# "Add a map measure": one method of the study (and the label that says the mechanism holds).
MAP_MEASURE = textwrap.indent(textwrap.dedent('''
    map_label = "solves"

    def map_row(self, run, size, seed):
        exp = design.experiment(size, seed)
        n = self.measure_seed({"model": run}, self.probe_data(exp.task, size, seed))
        beyond = n["acc"] - n["chance"]
        return {**n, "beyond_baseline": beyond, "state": LEARNED if beyond > 0 else UNTRAINED,
                "label": "solves" if n["acc"] >= SOLVED else "does not solve"}
'''), "    ")
LAB_MAP = """study: labstudy
experiment: labstudy-parentheses
size: smoke
seeds: [0]
knobs:
  n_heads: [2, 4]
name: lab-heads
"""


def _template_copy(folder, name):
    """CONTRIBUTING's "Add a study" outside the package: the template copied to ``folder/name``
    with its ``NAME``, its named experiment and its notebook renamed, a knob added (one
    declaration) and a map measure (one method), registered by ``<name>_plugin`` (the module
    ``toymech --import`` loads)."""
    shutil.copytree(TEMPLATE, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    design, study = folder / name / "design.py", folder / name / "study.py"
    text = design.read_text()
    assert text.count('NAME = "_template"') == 1 and text.count("KNOBS = knobs.table(\n") == 1
    design.write_text(text.replace('NAME = "_template"', f'NAME = "{name}"')
                      .replace("template-parentheses", f"{name}-parentheses")
                      .replace("KNOBS = knobs.table(\n", "KNOBS = knobs.table(\n" + NEW_KNOB))
    text = study.read_text()
    notebook = 'notebook = "toymech/studies/_template/notebook.ipynb"'
    assert text.count(notebook) == 1
    study.write_text(text.replace(notebook, f'notebook = "notebooks/90_{name}.ipynb"')
                     .replace("from .claims import", "from toymech.studies.states import "
                              "LEARNED, UNTRAINED\nfrom .claims import SOLVED,")
                     + MAP_MEASURE)
    (folder / f"{name}_plugin.py").write_text(
        f"from toymech.studies import protocol\nfrom {name} import STUDY\n"
        "protocol.register_study(STUDY)\n")


def test_a_copy_of_the_template_outside_the_package_is_a_study(tmp_path):
    """The template copied out of the package (CONTRIBUTING: "Add a study", "Add a knob", "Add
    a map measure") is a study the CLI takes by its name: its knobs are listed and change its
    runs, its named experiment trains, its smoke runs are measured and scored in process, and a
    map over its new knob labels every run."""
    _template_copy(tmp_path, "labstudy")
    zoo = str(tmp_path / "zoo")
    got = _toymech(tmp_path, "--import", "labstudy_plugin", "list", "knobs", "labstudy")
    assert got.returncode == 0, got.stderr[-2000:]
    assert "labstudy:" in got.stdout and "n_heads" in got.stdout and "d_model" in got.stdout
    got = _toymech(tmp_path, "--import", "labstudy_plugin", "train", "labstudy-parentheses",
                   "--size", "smoke", "--set", "n_heads=2", "--cache", zoo, "-q")
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.startswith("labstudy-parentheses [n_heads=2]: trained")
    run = textwrap.dedent('''
        import labstudy_plugin  # noqa: F401  registers it
        from toymech.studies import protocol
        study = protocol.study("labstudy")
        assert study.maps and not protocol.study("_template").maps
        two = study.with_knobs("smoke", {"n_heads": 2})
        assert study.experiments(two, [0])[0].model.n_heads == 2
        assert not study.with_knobs("smoke", {"n_heads": 4}).knobs  # the source's value
        dev = study.validate("smoke", 0, "cpu", cache_dir=ZOO)
        from labstudy.over_seeds import load_seeds
        runs = load_seeds("smoke", 0, dev, ZOO)
        task = study.experiments("smoke", [0])[0].task
        per_seed = [study.measure_seed({"model": e}, study.probe_data(task, "smoke", s))
                    for s, e in runs.items()]
        card = study.scorecard(per_seed, "smoke", list(runs))
        assert card["verdict"].iloc[0].startswith("pipeline check")
        path = study.through_training(runs[0], study.probe_data(task, "smoke", 0))
        assert len(path.steps) >= 2
        print("ok", len(runs))
    ''').replace("ZOO", repr(zoo))
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    got = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True,
                         env=environ, cwd=tmp_path)
    assert got.returncode == 0 and "ok 2" in got.stdout.splitlines(), got.stderr[-2000:]
    (tmp_path / "lab.yaml").write_text(LAB_MAP)
    got = _toymech(tmp_path, "--import", "labstudy_plugin", "map", "lab.yaml", "--cache", zoo,
                   "--backend", "local", "--no-progress")
    assert got.returncode == 0, got.stderr[-2000:]
    import pandas as pd
    table = pd.read_csv(tmp_path / "zoo" / "maps" / "lab-heads.csv")
    assert len(table) == 2 and set(table["status"]) == {"ok"}
    assert set(table["label"]) <= {"solves", "does not solve"} and "acc" in table
