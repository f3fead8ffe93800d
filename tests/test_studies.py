"""Every study has the protocol's surface (``toymech.studies.protocol``), the template included,
checked with ``inspect.signature``; the registry is the one list of studies."""

import inspect
import re
import types
from pathlib import Path

import pytest

from toymech import core, experiments
from toymech.studies import protocol
from toymech.studies.protocol import STUDIES, surface_problems

ROOT = Path(__file__).resolve().parents[1]
ALL = [*STUDIES, protocol.TEMPLATE]


def test_the_registry_lists_the_studies_and_their_notebooks():
    assert {"induction", "birth", "random_transformers"} <= set(STUDIES)
    found = {p.name for p in (ROOT / "toymech" / "studies").iterdir()
             if p.is_dir() and (p / "__init__.py").exists() and not p.name.startswith("_")}
    assert found == set(STUDIES), "a study package that is not registered in protocol.STUDIES"
    for notebook in STUDIES.values():
        assert (ROOT / notebook).is_file(), notebook


@pytest.mark.parametrize("name", ALL)
def test_protocol_surface_and_signatures(name):
    study = protocol.study(name)
    assert surface_problems(study) == []
    assert set(study.SIZES) == set(core.SIZES)
    assert study.CLAIMS and all(c.statement and c.source_value and c.test and c.why
                                for c in study.CLAIMS)
    for exp_name, named in study.EXPERIMENTS.items():
        assert named.name == exp_name and named.study == name, (exp_name, named.study)
        assert named.make("smoke", 1).train.seed == 1
    with pytest.raises(ValueError, match="size='huge'"):
        study.validate("huge", 0, "cpu")
    with pytest.raises(ValueError, match="n_seeds=0"):
        study.validate("smoke", 0, "cpu", n_seeds=0)
    assert study.seeds_of("default", 4) == tuple(range(4, 4 + study.SIZES["default"].n_seeds))
    assert study.seeds_of("smoke", 2, n_seeds=4) == (2, 3, 4, 5)
    assert all(e.train.seed in (7, 8) for e in study.experiments("smoke", (7, 8)))


def test_a_changed_signature_fails_the_protocol():
    study = protocol.study("induction")
    fake = types.SimpleNamespace(**{k: getattr(study, k) for k in dir(study)
                                    if not k.startswith("__")})

    def validate(size, seed, device, cache_dir=None, threads=None):  # positional, as it was
        return None

    fake.validate = validate
    assert any("validate" in p for p in surface_problems(fake))
    fake.validate = study.validate
    del fake.measure_seed
    assert "missing measure_seed" in surface_problems(fake)
    fake.measure_seed = lambda runs, data, extra: None  # an extra positional parameter
    assert any("measure_seed" in p for p in surface_problems(fake))


def test_seeds_of_is_defined_once():
    hits = [p for p in (ROOT / "toymech").rglob("*.py") if re.search(r"^\s*def seeds_of\b",
                                                                     p.read_text(), re.M)]
    assert [p.name for p in hits] == ["protocol.py"]


def test_study_experiments_are_registered_by_name():
    registry = experiments.registry()
    for study in protocol.all_studies():
        for exp_name in study.EXPERIMENTS:
            assert registry[exp_name].study


def test_readme_and_sources_name_every_registered_study():
    readme, sources = (ROOT / "README.md").read_text(), (ROOT / "docs" / "sources.md").read_text()
    for name, notebook in STUDIES.items():
        study = protocol.study(name)
        assert Path(notebook).name in readme, notebook
        assert f"toymech/studies/{name}/" in sources, name
        assert study.TITLE.split(":")[0] in sources, study.TITLE


def test_notebooks_call_studies_with_keywords_after_two_arguments():
    for notebook in [*STUDIES.values(), "toymech/studies/_template/notebook.ipynb"]:
        import json
        cells = json.loads((ROOT / notebook).read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        for call in re.findall(r"\.validate\(([^)]*)\)", text):
            positional = [a for a in call.split(",") if "=" not in a and a.strip()]
            assert len(positional) <= 3, (notebook, call)  # size, seed, device


def test_template_runs_at_smoke(tmp_path):
    import torch

    from toymech.studies import _template as t
    dev = t.validate("smoke", 0, "cpu")
    runs = t.load_seeds("smoke", 0, dev, tmp_path)
    task = t.experiment("smoke", 0).task
    per_seed = [t.measure_seed({"model": e}, t.probe_data(task, "smoke", s))
                for s, e in runs.items()]
    card = t.scorecard(per_seed, "smoke", list(runs))
    assert card["verdict"].iloc[0].startswith("pipeline check") and dev == torch.device("cpu")
    path = t.through_training(runs[0], t.probe_data(task, "smoke", 0))
    assert len(path.steps) >= 2 and path.figure().layout.sliders


@pytest.mark.notebook
def test_template_notebook_runs_at_smoke(tmp_path):
    import papermill as pm
    out = tmp_path / "t.ipynb"
    pm.execute_notebook(str(ROOT / "toymech/studies/_template/notebook.ipynb"), str(out),
                        parameters=dict(size="smoke", device="cpu", cache_dir=str(tmp_path / "z"),
                                        threads=1), progress_bar=False)
    assert "Pipeline check" in out.read_text()


@pytest.mark.parametrize("name", ALL)
def test_one_switch_turns_every_optional_comparison_on(name):
    study = protocol.study(name)
    assert study.optional_runs("all") == tuple(study.OPTIONAL_RUNS)
    assert study.optional_runs(()) == ()
    study.validate("smoke", 0, "cpu", also="all")  # accepted by every notebook's study
    for option in study.OPTIONAL_RUNS:
        assert study.optional_runs([option]) == (option,)
    with pytest.raises(ValueError, match=r"also\[0\]='nope'"):
        study.optional_runs(["nope"])
    if "llc" in study.OPTIONAL_RUNS:  # the curve: on where LLC_ON says, or asked for
        for size, on in study.LLC_ON.items():
            assert study.llc_on(size) is on and study.llc_on(size, ("llc",)) is True
            assert study.llc_on(size, "all") is True


def _uses(code: str, study: str) -> set[str]:
    """The names read as ``<alias>.<name>`` from the study package in ``code`` (python source),
    ``<alias>`` being what ``code`` imports it as."""
    import ast
    tree = ast.parse(code)
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "toymech.studies":
            aliases |= {a.asname or a.name for a in node.names if a.name == study}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names
                        if a.name == f"toymech.studies.{study}" and a.asname}
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id in aliases}


def _notebook_code(notebook: Path) -> str:
    import json
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return "\n".join(line for line in code.splitlines()
                     if not line.lstrip().startswith(("%", "!")))  # IPython magics


@pytest.mark.parametrize("name", ALL)
def test_each_study_exports_the_protocol_and_what_its_notebook_calls(name):
    """A study's ``__all__`` is exactly the protocol's names and those its notebook (and the
    benchmarks) read from the package; its namespace holds nothing else but its modules. Code
    that needs a deeper name imports it from the module (``from toymech.studies.birth.measure
    import x``)."""
    study = protocol.study(name)
    notebook = ROOT / STUDIES.get(name, "toymech/studies/_template/notebook.ipynb")
    used = _uses(_notebook_code(notebook), name)
    for bench in sorted((ROOT / "benchmarks").glob("*.py")):
        used |= _uses(bench.read_text(), name)
    assert len(set(study.__all__)) == len(study.__all__), "a name exported twice"
    assert set(study.__all__) == set(protocol.surface(study)) | used, (
        f"exported, never called: {sorted(set(study.__all__) - set(protocol.surface(study)) - used)}"
        f"; called, not exported: {sorted(used - set(study.__all__))}")
    public = {k for k, v in vars(study).items()
              if not k.startswith("_") and not inspect.ismodule(v)}
    assert public == {k for k in study.__all__ if not inspect.ismodule(getattr(study, k))}
