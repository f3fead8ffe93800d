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
    from toymech.studies.claims import Claim, scorecard as _scorecard
    from toymech.studies.knobs import Knob
    from toymech.studies.params import optional_runs_for, validate_run
    from toymech.studies.protocol import StudySize, seeds_for, size_of
    from toymech.studies.trajectory import flat_patterns, through_training_for

    @dataclass(frozen=True)
    class ExtSize(StudySize):
        steps: int = 100

    TITLE = "extlab: repeating the first token"
    SOURCE = "extlab's own question"
    SIZES = {"smoke": ExtSize(1, 10), "default": ExtSize(2, 200), "paper": ExtSize(3, 400)}
    seeds_of = seeds_for(SIZES)
    OPTIONAL_RUNS = ()
    optional_runs = optional_runs_for(OPTIONAL_RUNS)
    KNOBS = knobs.table(Knob("first_width", "int", (4, 256), 16, "the model's width",
                             ("model.d_model",)))

    def experiment(size="default", seed=0):
        task = tasks.get("first_token_ext")
        model = ModelConfig(n_layers=1, n_heads=2, d_model=16, d_vocab=task.d_vocab,
                            n_ctx=task.seq_len, seed=seed)
        train = TrainConfig(steps=size_of(SIZES, size).steps, batch_size=32, lr=1e-3, seed=seed,
                            eval_every=10, eval_size=64)
        return Experiment(task, model, train, "extlab-first")

    EXPERIMENTS = {"extlab-first": Named("extlab-first", "extlab's model", experiment, "extstudy")}
    with_knobs = knobs.with_knobs_for(KNOBS, "extstudy", "extlab", lambda size: [experiment(size)])
    CLAIMS = (Claim("repeats", "the model repeats the first token", "extlab", "100 %",
                    value=lambda n: n["acc"], holds=lambda n: n["acc"] >= 0.95,
                    reference=lambda n: n["chance"], null="chance", unit="accuracy",
                    test="accuracy >= 0.95", why="extlab's own bar",
                    setting={"steps": 400, "d_model": 16, "first_token_task": 5}),)

    def validate(size, seed, device="auto", *, n_seeds=None, cache_dir=None, threads=None,
                 also=()):
        optional_runs(also)
        return validate_run(size, seed, device, n_seeds, cache_dir, threads)

    def experiments(size, seeds):
        return [experiment(size, s) for s in seeds]

    def eval_sets(task, size, seed, device="cpu"):
        return task.eval_sets(64, make_generator(seed_for(seed, "eval"), torch.device(device)))

    def probe_data(task, size, seed, device="cpu"):
        return {"task": task, "sets": eval_sets(task, size, seed, device)}

    def numbers(measured):
        return {"acc": float(measured["acc"]), "chance": float(measured["chance"])}

    @torch.no_grad()
    def measure_seed(runs, data):
        model = getattr(runs["model"], "model", runs["model"])
        test = data["sets"]["test"]
        return numbers({"acc": evaluate(model, data["task"], test)["acc"],
                        "chance": chance_levels(data["task"], test)["acc"]})

    def untrained_numbers(size, seed):
        exp = experiment(size, seed)
        return measure_seed({"model": build_model(exp.model, "cpu").eval()},
                            probe_data(exp.task, size, seed))

    def scorecard(per_seed, size, seeds=None):
        return _scorecard(CLAIMS, per_seed, size, seeds)

    @torch.no_grad()
    def dynamics_metrics(model, data):
        return {"test_acc": evaluate(model, data["task"], data["sets"]["test"])["acc"]}

    through_training = through_training_for(
        dynamics_metrics, lambda model, data: flat_patterns(model, data["task"],
                                                            data["sets"]["test"].tokens[0]),
        ("test_acc",))

    def describe(size, seed, device):
        return f"size {size} on {device}"
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
        "protocol.register_study('extstudy', 'extlab_study', 'notebooks/ext.ipynb')\n"
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
