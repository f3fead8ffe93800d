"""Every study is an instance of a subclass of the abstract ``Study``
(``toymech.studies.protocol``), the template included: a subclass without one of the abstract
methods cannot be made, a table that breaks a rule is refused when the study is made, and the
rules that hold over the registry are checked here; the registry is the one list of studies."""

import ast
import inspect
import re
from pathlib import Path

import pytest

from toymech import core, experiments
from toymech.studies import protocol
from toymech.studies.protocol import STUDIES, Study

ROOT = Path(__file__).resolve().parents[1]
ALL = [*STUDIES, protocol.TEMPLATE]
ABSTRACT = {"experiments", "eval_sets", "probe_data", "dynamics_metrics", "measure_seed",
            "untrained_numbers", "describe"}


def test_the_registry_lists_the_studies_and_their_notebooks():
    assert {"induction", "birth", "random_transformers"} <= set(STUDIES)
    found = {p.name for p in (ROOT / "toymech" / "studies").iterdir()
             if p.is_dir() and (p / "__init__.py").exists() and not p.name.startswith("_")}
    assert found == set(STUDIES), "a study package that is not registered in protocol.STUDIES"
    for notebook in STUDIES.values():
        assert (ROOT / notebook).is_file(), notebook


@pytest.mark.parametrize("name", ALL)
def test_each_study_is_one_instance_of_its_subclass(name):
    study = protocol.study(name)
    assert isinstance(study, Study) and type(study) is not Study and study.name == name
    assert protocol.study(name) is study  # made once
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
    with pytest.raises(ValueError, match="option='colour' is not allowed"):
        study.validate("smoke", 0, "cpu", colour="red")
    assert study.seeds_of("default", 4) == tuple(range(4, 4 + study.sizes["default"].n_seeds))
    assert study.seeds_of("smoke", 2, n_seeds=4) == (2, 3, 4, 5)
    assert all(e.train.seed in (7, 8) for e in study.experiments("smoke", (7, 8)))
    with pytest.raises(AttributeError, match="a study holds no state"):
        study.name = "other"


@pytest.mark.parametrize("name", ALL)
def test_the_notebooks_options_are_the_studys_own_options(name):
    """Every option of a notebook's parameters cell but ``variant`` is one of the study's
    ``notebook_options``, and ``validate`` takes them as the cell sets them (``toymech report``
    passes them so): the study's declared ``own_options`` and what its ``check_own_options``
    takes agree."""
    from toymech.report.checks import parameters_cell

    study = protocol.study(name)
    notebook = ROOT / STUDIES.get(name, "toymech/studies/_template/notebook.ipynb")
    given = parameters_cell(notebook, ["size", "seed"])
    assert set(given) - {"size", "seed", "device", "variant"} <= study.notebook_options
    options = {k: ast.literal_eval(v) for k, v in given.items() if k in study.own_options}
    assert study.validate("smoke", 0, "cpu", **options).type == "cpu"


def _declared(**changes):
    """A subclass of the template's study with ``changes`` to its class attributes or methods."""
    from toymech.studies._template.study import TemplateStudy

    return type("Changed", (TemplateStudy,), changes)


def test_a_subclass_without_an_abstract_method_cannot_be_made():
    assert set(Study.__abstractmethods__) == ABSTRACT
    for missing in sorted(ABSTRACT):
        cls = type("Partial", (Study,), {n: lambda self, *a, **k: None
                                         for n in ABSTRACT - {missing}})
        with pytest.raises(TypeError, match=f"abstract method.*{missing}"):
            cls()
    _declared()()  # the template's own methods: complete


def test_a_study_whose_tables_break_a_rule_is_refused_when_made():
    template = protocol.study(protocol.TEMPLATE)
    with pytest.raises(ValueError, match="^sizes="):
        _declared(sizes={"smoke": template.sizes["smoke"]})()
    with pytest.raises(ValueError, match="^study name='my study'"):
        _declared(name="my study")()
    with pytest.raises(ValueError, match="^llc_on_sizes="):  # "llc" named, no curve to run
        _declared(optional_run_names=("llc",))()
    with pytest.raises(ValueError, match="^map_label="):  # a map row says which label holds
        _declared(map_row=lambda self, run, size, seed: {})()
    with pytest.raises(ValueError, match="^map_label="):  # a label, no map row
        _declared(map_label="content")()
    with pytest.raises(ValueError, match="^own_options="):
        _declared(own_options=frozenset({"also"}))()
    with pytest.raises(ValueError, match="^calibration="):
        _declared(calibration={"huge": (0,)})()
    with pytest.raises(ValueError, match="^null_family="):  # a null family, no map row
        _declared(null_family=("chance",))()
    with pytest.raises(ValueError, match="^results_maps="):
        _declared(results_maps="s1-capacity")()  # a string, not a tuple of names
    with pytest.raises(ValueError, match="^results_maps="):
        _declared(results_maps=("",))()
    maps = _declared(map_row=lambda self, run, size, seed: {"label": "x"}, map_label="x")()
    assert maps.maps and not template.maps
    assert template.null_family == () and template.results_maps == ()
    assert template.map_panel([]) is None and template.map_evidence(None) == ""


def test_each_mapping_study_declares_its_null_family_and_results_maps():
    """Each built-in study names the null family its map label is judged against (kept in one
    place of its modules) and the maps its results page leads with, among its shipped maps."""
    from toymech.studies.birth import nulls
    from toymech.studies.induction import panel
    from toymech.studies.random_transformers import map_measure

    family = {"induction": panel.NULL_FAMILY, "birth": nulls.NULL_FAMILY,
              "random_transformers": map_measure.NULL_FAMILY}
    shipped = {p.stem for p in (ROOT / "docs" / "maps").glob("*.csv")}
    for name in family:
        study = protocol.study(name)
        assert study.maps and study.null_family is family[name], name
        assert study.null_family and study.results_maps, name
        for map_name in study.results_maps:
            assert any(s.startswith(map_name + "-") for s in shipped), (name, map_name)


def test_what_every_study_shares_is_defined_once():
    """``seeds_of`` and the other shared methods live on ``Study`` alone: no study module defines
    them, and no closure factory binds them by hand."""
    hits = [p for p in (ROOT / "toymech").rglob("*.py") if re.search(r"^\s*def seeds_of\b",
                                                                     p.read_text(), re.M)]
    assert [p.name for p in hits] == ["protocol.py"]
    factories = re.compile(r"\b(seeds_for|optional_runs_for|llc_on_for|through_training_for|"
                           r"llc_for)\b")
    assert [str(p) for p in (ROOT / "toymech").rglob("*.py") if factories.search(p.read_text())] \
        == []
    shared = ("validate", "seeds_of", "optional_runs", "llc_on", "llc_pool", "llc_curve",
              "with_knobs", "scorecard", "through_training")
    for name in ALL:
        cls = type(protocol.study(name))
        assert not [m for m in shared if m in vars(cls)], cls


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
    study = t.STUDY
    dev = study.validate("smoke", 0, "cpu")
    runs = t.load_seeds("smoke", 0, dev, tmp_path)
    task = t.experiment("smoke", 0).task
    per_seed = [study.measure_seed({"model": e}, study.probe_data(task, "smoke", s))
                for s, e in runs.items()]
    card = study.scorecard(per_seed, "smoke", list(runs))
    assert card["verdict"].iloc[0].startswith("pipeline check") and dev == torch.device("cpu")
    path = study.through_training(runs[0], study.probe_data(task, "smoke", 0))
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
    assert study.optional_runs("all") == tuple(study.optional_run_names)
    assert study.optional_runs(()) == ()
    study.validate("smoke", 0, "cpu", also="all")  # accepted by every notebook's study
    for option in study.optional_run_names:
        assert study.optional_runs([option]) == (option,)
    with pytest.raises(ValueError, match=r"also\[0\]='nope'"):
        study.optional_runs(["nope"])
    if "llc" in study.optional_run_names:  # the curve: on where LLC_ON says, or asked for
        for size, on in study.llc_on_sizes.items():
            assert study.llc_on(size) is on and study.llc_on(size, ("llc",)) is True
            assert study.llc_on(size, "all") is True
    else:  # no curve to draw, whatever is asked
        assert not any(study.llc_on(size, "all") for size in core.SIZES)


def _uses(code: str, study: str) -> set[str]:
    """The names read as ``<alias>.<name>`` from the study package in ``code`` (python source),
    ``<alias>`` being what ``code`` imports it as."""
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
def test_each_package_names_its_study_and_what_its_notebook_reads(name):
    """A study's package holds ``STUDY`` (and its class) and exactly the names its notebook (and
    the benchmarks) read from it (``<alias>.<name>``), besides its modules; a name that is one
    of the study's methods is that method of ``STUDY``. Code that needs a deeper name imports it from the
    module (``from toymech.studies.birth.measure import x``)."""
    package = _package(name)
    notebook = ROOT / STUDIES.get(name, "toymech/studies/_template/notebook.ipynb")
    used = _uses(_notebook_code(notebook), name)
    for bench in sorted((ROOT / "benchmarks").glob("*.py")):
        used |= _uses(bench.read_text(), name)
    public = {k for k, v in vars(package).items()
              if not k.startswith("_") and not inspect.ismodule(v)}
    used = {k for k in used if not inspect.ismodule(getattr(package, k, None))}
    study = package.STUDY
    own = {"STUDY", type(study).__name__}  # the instance and its class
    assert public == own | used, (f"named, never read: {sorted(public - used - own)}"
                                  f"; read, not named: {sorted(used - public)}")
    assert study is protocol.study(name)
    for attr in public:
        if inspect.ismethod(getattr(study, attr, None)):
            assert getattr(package, attr) == getattr(study, attr), attr


def _package(name: str):
    """The study's package (its notebook's names), imported by the test, never by toymech."""
    import importlib
    return importlib.import_module(f"toymech.studies.{name}")


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
        protocol.register_study(type(study)())  # another study, a taken name
    mine = type("Mine", (type(study),), {"name": "_mine"})
    with pytest.raises(ValueError, match=r"^study='_mine' is not allowed: a name not starting"):
        protocol.register_study(mine())
    assert protocol.study("induction") is study and "_mine" not in STUDIES
