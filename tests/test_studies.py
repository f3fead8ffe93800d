"""Every study is a ``Study`` (``toymech.studies.protocol``), the template included, whose
functions have the protocol's signatures (checked here with ``inspect.signature``: the
conformance check lives in the tests, not in the package); the registry is the one list of
studies."""

import dataclasses
import inspect
import re
from pathlib import Path

import pytest

from toymech import core, experiments
from toymech.studies import protocol
from toymech.studies.protocol import STUDIES

ROOT = Path(__file__).resolve().parents[1]
ALL = [*STUDIES, protocol.TEMPLATE]

# name -> the parameters every study's function starts with: (name, kind, has a default). A
# study may add keyword-only parameters with defaults after these where OPEN_ENDED says.
P, K = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
SIGNATURES = {
    "validate": (("size", P, False), ("seed", P, False), ("device", P, True),
                 ("n_seeds", K, True), ("cache_dir", K, True), ("threads", K, True)),
    "seeds_of": (("size", P, False), ("seed", P, False), ("n_seeds", P, True)),
    "experiments": (("size", P, False), ("seeds", P, False)),
    "eval_sets": (("task", P, False), ("size", P, False), ("seed", P, False), ("device", P, True)),
    "measure_seed": (("runs", P, False), ("data", P, False)),
    "untrained_numbers": (("size", P, False), ("seed", P, False)),
    "numbers": (("measured", P, False),),
    "scorecard": (("per_seed", P, False), ("size", P, False), ("seeds", P, True)),
    "probe_data": (("task", P, False), ("size", P, False), ("seed", P, False), ("device", P, True)),
    "dynamics_metrics": (("model", P, False), ("data", P, False)),
    "through_training": (("entry", P, False), ("data", P, False), ("name", P, True)),
    "describe": (("size", P, False), ("seed", P, False), ("device", P, False)),
    "optional_runs": (("also", P, True),),
    "with_knobs": (("size", P, False), ("variant", P, True)),
    "llc_on": (("size", P, False), ("also", P, True)),
    "map_row": (("run", P, False), ("size", P, False), ("seed", P, False)),
    "map_check": (("size", P, False),),
    "map_panel": (("sizes", P, False),),
    "map_evidence": (("table", P, False),),
}
OPEN_ENDED = ("validate", "describe", "probe_data", "eval_sets",  # may add keyword-only options
              "map_row")


def surface_problems(study: protocol.Study) -> list[str]:
    """What ``study``'s functions state differently from the protocol (empty: it conforms)."""
    problems = []
    for name in protocol.surface(study):
        fn, want = getattr(study, name), SIGNATURES[name]
        params = list(inspect.signature(fn).parameters.values())
        head = [(p.name, p.kind, p.default is not inspect.Parameter.empty)
                for p in params[:len(want)]]
        if head != list(want):
            problems.append(f"{name}{inspect.signature(fn)} does not start with "
                            f"({', '.join(n for n, _, _ in want)}) as the protocol states")
            continue
        extra = params[len(want):]
        if extra and name not in OPEN_ENDED:
            problems.append(f"{name} has extra parameters {[p.name for p in extra]}")
        for p in extra:
            if p.kind not in (K, inspect.Parameter.VAR_KEYWORD) or (
                    p.kind == K and p.default is inspect.Parameter.empty):
                problems.append(f"{name}: extra parameter {p.name!r} must be keyword-only "
                                "with a default")
    options = {n for n in inspect.signature(study.validate).parameters
               if n not in ("size", "seed", "device")}
    if options != set(study.notebook_options):
        problems.append(f"notebook_options {sorted(study.notebook_options)} are not the options "
                        f"validate takes ({sorted(options)})")
    return problems


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
    assert isinstance(study, protocol.Study) and study.name == name
    assert protocol.study(name) is study  # built once
    assert surface_problems(study) == []
    assert set(study.sizes) == set(core.SIZES)
    assert study.claims and all(c.statement and c.source_value and c.test and c.why
                                for c in study.claims)
    for exp_name, named in study.named_experiments.items():
        assert named.name == exp_name and named.study == name, (exp_name, named.study)
        assert named.make("smoke", 1).train.seed == 1
    with pytest.raises(ValueError, match="size='huge'"):
        study.validate("huge", 0, "cpu")
    with pytest.raises(ValueError, match="n_seeds=0"):
        study.validate("smoke", 0, "cpu", n_seeds=0)
    assert study.seeds_of("default", 4) == tuple(range(4, 4 + study.sizes["default"].n_seeds))
    assert study.seeds_of("smoke", 2, n_seeds=4) == (2, 3, 4, 5)
    assert all(e.train.seed in (7, 8) for e in study.experiments("smoke", (7, 8)))


def test_a_changed_signature_fails_the_protocol():
    study = protocol.study("induction")

    def validate(size, seed, device, cache_dir=None, threads=None):  # positional, as it was
        return None

    assert any("validate" in p for p in surface_problems(
        dataclasses.replace(study, validate=validate)))
    wider = dataclasses.replace(study, measure_seed=lambda runs, data, extra: None)
    assert any("measure_seed" in p for p in surface_problems(wider))
    assert any("notebook_options" in p for p in surface_problems(
        dataclasses.replace(study, notebook_options=study.notebook_options | {"colour"})))
    with pytest.raises(ValueError, match="measure_seed"):  # a function the protocol needs
        dataclasses.replace(study, measure_seed=None)
    with pytest.raises(ValueError, match="llc_on"):  # "llc" named, no curve to run
        dataclasses.replace(study, llc_on=None)
    with pytest.raises(ValueError, match="map_label"):  # a map row says which label holds
        dataclasses.replace(study, map_label=None)
    with pytest.raises(ValueError, match="sizes"):
        dataclasses.replace(study, sizes={"smoke": study.sizes["smoke"]})


def test_seeds_of_is_defined_once():
    hits = [p for p in (ROOT / "toymech").rglob("*.py") if re.search(r"^\s*def seeds_of\b",
                                                                     p.read_text(), re.M)]
    assert [p.name for p in hits] == ["protocol.py"]


def test_study_experiments_are_registered_by_name():
    registry = experiments.registry()
    for study in protocol.all_studies():
        for exp_name in study.named_experiments:
            assert registry[exp_name].study


def test_readme_and_sources_name_every_registered_study():
    readme, sources = (ROOT / "README.md").read_text(), (ROOT / "docs" / "sources.md").read_text()
    for name, notebook in STUDIES.items():
        study = protocol.study(name)
        assert Path(notebook).name in readme, notebook
        assert f"toymech/studies/{name}/" in sources, name
        assert study.title.split(":")[0] in sources, study.title


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
    study, module = protocol.study(name), _module(name)
    assert study.optional_runs("all") == tuple(study.optional_run_names)
    assert study.optional_runs(()) == ()
    study.validate("smoke", 0, "cpu", also="all")  # accepted by every notebook's study
    for option in study.optional_run_names:
        assert study.optional_runs([option]) == (option,)
    with pytest.raises(ValueError, match=r"also\[0\]='nope'"):
        study.optional_runs(["nope"])
    if "llc" in study.optional_run_names:  # the curve: on where LLC_ON says, or asked for
        for size, on in module.LLC_ON.items():
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
    study = _module(name)
    notebook = ROOT / STUDIES.get(name, "toymech/studies/_template/notebook.ipynb")
    used = _uses(_notebook_code(notebook), name)
    for bench in sorted((ROOT / "benchmarks").glob("*.py")):
        used |= _uses(bench.read_text(), name)
    protocol_names = _protocol_names(protocol.study(name))
    assert len(set(study.__all__)) == len(study.__all__), "a name exported twice"
    assert set(study.__all__) == protocol_names | used, (
        f"exported, never called: {sorted(set(study.__all__) - protocol_names - used)}"
        f"; called, not exported: {sorted(used - set(study.__all__))}")
    public = {k for k, v in vars(study).items()
              if not k.startswith("_") and not inspect.ismodule(v)}
    assert public == {k for k in study.__all__ if not inspect.ismodule(getattr(study, k))}


def _module(name: str):
    """The study's package (its notebook's names), imported by the test, never by toymech."""
    import importlib
    return importlib.import_module(protocol.study(name).module)


def _protocol_names(study: protocol.Study) -> set[str]:
    """The module names a study package exports for its ``Study``: ``STUDY``, its tables and
    its functions (each the same object as the Study's field)."""
    module = _module(study.name)
    tables = {"TITLE": study.title, "SOURCE": study.source, "SIZES": study.sizes,
              "EXPERIMENTS": study.named_experiments, "CLAIMS": study.claims,
              "OPTIONAL_RUNS": study.optional_run_names, "KNOBS": study.knobs}
    if study.llc_on is not None:
        tables["LLC_ON"] = module.LLC_ON
    if study.maps:
        tables["MAP_LABEL"] = study.map_label
    if study.map_predictions:
        tables["MAP_PREDICTIONS"] = study.map_predictions
    for attr, value in tables.items():
        assert getattr(module, attr) == value, attr
    for attr in protocol.surface(study):
        assert getattr(module, attr) is getattr(study, attr), attr
    assert module.STUDY is study
    return {"STUDY", *tables, *protocol.surface(study)}


def test_generic_code_never_inspects_or_names_a_study_module():
    """No ``inspect.signature`` or ``__name__.split`` in toymech (the Study says what it has),
    and no size-name string carrying knobs (``Variant``, ``knobs_of``): a ``Setting`` does."""
    hits = [str(p.relative_to(ROOT)) for p in (ROOT / "toymech").rglob("*.py")
            if re.search(r"inspect\.signature|__name__\.split|\bVariant\b|knobs_of",
                         p.read_text())]
    assert hits == []


def test_register_study_takes_a_study_object_under_a_free_name():
    study = protocol.study("induction")
    assert protocol.register_study(study) is study  # the same study again: nothing changes
    with pytest.raises(ValueError, match=r"^study='str' is not allowed: a Study"):
        protocol.register_study("induction")
    with pytest.raises(ValueError, match=r"^study='induction' is not allowed: a name not yet "):
        protocol.register_study(dataclasses.replace(study))  # another study, a taken name
    with pytest.raises(ValueError, match=r"^study='_mine' is not allowed: a name not starting"):
        protocol.register_study(dataclasses.replace(study, name="_mine"))
    assert protocol.study("induction") is study and "_mine" not in STUDIES
