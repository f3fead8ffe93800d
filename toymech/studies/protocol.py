"""The study protocol: the one surface every study package has, written down once.

A study is a package ``toymech/studies/<name>/`` whose ``__init__`` exposes:

=====================  ===========================================================================
name                   role
=====================  ===========================================================================
``TITLE``              the study's title (str)
``SOURCE``             the source it reproduces, cited by its public name (docs/sources.md)
``SIZES``              {"smoke", "default", "paper"} -> a frozen ``StudySize`` subclass: the one
                       place the study's sizes live (training, evaluation, ``n_seeds``)
``EXPERIMENTS``        {name: ``Named``}: the study's named experiments (names prefixed by it)
``CLAIMS``             tuple of ``Claim`` (``toymech.studies.claims``)
``validate``           ``(size, seed, device="auto", *, n_seeds=None, cache_dir=None, threads=None,
                       **study options)``: checks the notebook's parameters (ValueError naming
                       the bad one), applies the thread policy, resolves the device once
``seeds_of``           ``(size, seed, n_seeds=None)``: the seeds claims are assessed over
``experiments``        ``(size, seeds)``: the ``Experiment`` list the study's main runs train for
                       those seeds (what ``toymech train`` or a sweep would make)
``eval_sets``          ``(task, size, seed, device="cpu")``: named evaluation batches, drawn from
                       the run's ``eval`` stream
``measure_seed``       ``(runs, data)``: one seed's named numbers (a flat {name: float}), the only
                       input of the claims. ``runs``: the seed's runs by name, each a zoo entry
                       (or a bare model: a run that never trained), whose rows it computes
                       itself; ``data``: the study's evaluation data for that seed
                       (``probe_data``, or its own: study 3's ``measure_data``). (Birth's
                       takes its sweep, freezing and extremes runs as their tables.)
``untrained_numbers``  ``(size, seed)``: ``measure_seed`` on the same runs left at their
                       initialisation, at ``size``'s settings: the null world every claim fails
``numbers``            ``(measured)``: the flattening ``measure_seed`` ends with
``scorecard``          ``(per_seed, size, seeds=None)``: the claims assessed over seeds at a size
``probe_data``         ``(task, size, seed, device="cpu")``: the fixed data every training
                       snapshot is measured on
``dynamics_metrics``   ``(model, data)``: the study's numbers for one snapshot
``through_training``   ``(entry, data, name="")``: a ``Trajectory`` over the run's snapshots
``describe``           ``(size, seed, device, **study options)``: the run's settings in a line
``KNOBS``              {name: ``knobs.Knob``}: what a variant may change (``toymech list knobs``)
``with_knobs``         ``(size, variant=None)``: the size with a variant's knobs on top (a
                       ``core.Variant``, or the size itself), every knob and combination checked;
                       ``knobs.with_knobs_for(KNOBS, ...)`` makes it; ``experiment`` applies it
``OPTIONAL_RUNS``      tuple of the optional comparisons a notebook's ``also`` may name
``optional_runs``      ``(also=())``: ``also`` checked and expanded (``"all"``: every one);
                       ``params.optional_runs_for(OPTIONAL_RUNS)`` makes it; ``validate`` takes
                       ``also`` too
``llc_on``             ``(size, also=())``, only where ``OPTIONAL_RUNS`` names ``"llc"``: whether
                       the learning-coefficient curve runs (``params.llc_on_for(OPTIONAL_RUNS,
                       LLC_ON)``; the curve itself: ``learning_coefficient.llc_for``)
=====================  ===========================================================================

``tests/test_studies.py`` checks every study and the template against ``SIGNATURES`` with
``inspect.signature``, so a study that drifts fails CI. Studies are registered in ``STUDIES`` (the
one list; ``toymech list studies`` shows it).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Mapping

from ..core import SIZES as SIZE_NAMES, check, check_int, check_seed, check_size
from .settings import skipping

# The registry: package name under toymech.studies -> the notebook that shows it.
STUDIES: dict[str, str] = {
    "induction": "notebooks/01_induction_repeated_blocks.ipynb",
    "birth": "notebooks/02_birth_of_a_transformer.ipynb",
    "random_transformers": "notebooks/03_random_transformers.ipynb",
}
TEMPLATE = "_template"
# Studies registered from outside the package (``register_study``): name -> module path.
_MODULES: dict[str, str] = {}

MAX_SEEDS = 1000

DATA = ("TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "CLAIMS", "OPTIONAL_RUNS", "KNOBS")

# name -> the parameters every study's function starts with: (name, kind, has a default).
# A study may add keyword-only parameters with defaults after these (``**options`` below).
P, K = inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY
SIGNATURES: dict[str, tuple[tuple[str, Any, bool], ...]] = {
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
}
# Only a study that maps (``toymech.maps``) has this: one run's row of a map (its numbers,
# properties and mechanism label), from a zoo entry or a bare model, its size (with the
# variant's knobs) and its seed.
MAP_SIGNATURES = {"map_row": (("run", P, False), ("size", P, False), ("seed", P, False))}
# ... and ``MAP_LABEL``: the label of its rows that says the mechanism holds (a map's finding and
# its report's colour read the share of seeds with this label); optionally ``MAP_PREDICTIONS``:
# other works' predictions judged on its maps (``studies.predictions.MapPrediction``); and
# optionally ``map_check(size)``: a ValueError for a setting its ``map_row`` could not measure
# and ``map_panel(sizes)``: the one test panel of a map whose cells are ``sizes``, which the map
# passes to every ``map_row(..., panel=)``; and ``map_evidence(table)``: the causal evidence of a
# map's table in words (its page and results block print it)
# (a map calls it for every cell before anything trains).
# Only a study whose OPTIONAL_RUNS name "llc" (a learning-coefficient curve) has these (and
# ``LLC_ON``: size -> whether the curve runs without being asked for).
LLC_SIGNATURES = {"llc_on": (("size", P, False), ("also", P, True))}
OPEN_ENDED = ("validate", "describe", "probe_data", "eval_sets", "map_row")  # may add keyword-only options


@dataclass(frozen=True)
class StudySize:
    """What every study's size has: how many seeds its claims are assessed over by default.
    Each study subclasses it with its own fields (frozen dataclasses: read as attributes)."""

    n_seeds: int

    def __post_init__(self) -> None:
        check_int("n_seeds", self.n_seeds, 1, MAX_SEEDS)

    def replace(self, **changes: Any) -> "StudySize":
        """A copy with ``changes`` (field=value), checked like a new size."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ProbeData:
    """What every study's ``probe_data`` returns: the fixed data each training snapshot of a
    run is measured on (glossary: probe), drawn from the run's ``probe`` and ``eval`` streams.
    Its task; each study subclasses it with its own fields (``<study>/dynamics.py``)."""

    task: Any  # the run's toymech Task (a study's subclass names its own task class)


def size_of(sizes: Mapping[str, StudySize], size: Any) -> StudySize:
    """``sizes[size]``, with an unknown size a ValueError naming it."""
    return sizes[check_size(size)]


def check_n_seeds(n_seeds: Any) -> int | None:
    """``n_seeds`` checked: None (the size's default) or a count of seeds in 1..MAX_SEEDS."""
    return None if n_seeds is None else check_int("n_seeds", n_seeds, 1, MAX_SEEDS)


def seeds_for(sizes: Mapping[str, StudySize],
              calibration: Mapping[str, tuple[int, ...]] | None = None
              ) -> Callable[..., tuple[int, ...]]:
    """A study's ``seeds_of`` over its ``SIZES`` (``sizes``; the one definition of it).
    ``calibration``:
    per size, the seeds its thresholds or recipes were chosen on, which are never judged."""
    skip = dict(calibration or {})

    def seeds_of(size: str, seed: int, n_seeds: int | None = None) -> tuple[int, ...]:
        """The seeds a claim is assessed over: ``seed, seed + 1, ...``, ``n_seeds`` of them (None:
        the size's ``n_seeds``), passing over the size's calibration seeds. The first ones are the
        same whatever the count, so a run with more seeds reuses the zoo entries of a shorter one."""
        spec = size_of(sizes, size)
        seed = check_seed(seed)
        n = check_n_seeds(n_seeds) or spec.n_seeds
        return skipping(seed, n, skip.get(size, ()))

    return seeds_of


def study(name: str) -> ModuleType:
    """The study package ``name`` (one of ``STUDIES``, or the template)."""
    check(name in STUDIES or name == TEMPLATE, "study", name, f"one of {', '.join(STUDIES)}")
    return importlib.import_module(_MODULES.get(name, f"toymech.studies.{name}"))


def register_study(name: str, module: str, notebook: str) -> None:
    """Register a study that lives outside the package (a module of yours with the protocol's
    surface, e.g. a copy of the template): the CLI, ``toymech list``, knobs, reports and maps
    then take ``name``; ``module``: its import path; ``notebook``: the path of its notebook. Its
    module must conform (``surface_problems``: ValueError otherwise)."""
    check(isinstance(name, str) and name.isidentifier() and name != TEMPLATE, "study", name,
          "an identifier not starting a package study's name")
    check(name not in STUDIES or _MODULES.get(name) == module, "study", name,
          f"a name not yet registered ({', '.join(STUDIES)} are)")
    mod = importlib.import_module(module)
    problems = surface_problems(mod)
    check(not problems, "study", name, f"a module with the study protocol ({problems[0] if problems else ''})")
    _MODULES[name] = module
    STUDIES[name] = str(notebook)


def all_studies() -> list[ModuleType]:
    """Every registered study package, in the registry's order."""
    return [study(name) for name in STUDIES]


def _signatures(module: ModuleType) -> dict[str, tuple[tuple[str, Any, bool], ...]]:
    """The functions the protocol asks of ``module`` (the LLC ones where it names "llc")."""
    out = dict(SIGNATURES)
    if "llc" in tuple(getattr(module, "OPTIONAL_RUNS", ())):
        out.update(LLC_SIGNATURES)
    if hasattr(module, "map_row"):
        out.update(MAP_SIGNATURES)
    return out


def surface(module: ModuleType) -> tuple[str, ...]:
    """Every name the protocol asks of ``module``: ``DATA``, the functions of ``SIGNATURES``,
    ``LLC_ON`` with ``LLC_SIGNATURES`` where its ``OPTIONAL_RUNS`` name "llc", and ``MAP_LABEL``
    with ``MAP_SIGNATURES`` where it has a ``map_row`` (and ``MAP_PREDICTIONS`` and
    ``map_check`` where it has those)."""
    signatures = _signatures(module)
    maps = ("MAP_LABEL", *(("MAP_PREDICTIONS",) if hasattr(module, "MAP_PREDICTIONS") else ()),
            *(("map_check",) if hasattr(module, "map_check") else ()),
            *(("map_panel",) if hasattr(module, "map_panel") else ()),
            *(("map_evidence",) if hasattr(module, "map_evidence") else ()))
    return (*DATA, *(("LLC_ON",) if "llc_on" in signatures else ()),
            *(maps if "map_row" in signatures else ()), *signatures)


def notebook_options(module: ModuleType) -> frozenset[str]:
    """The names of the notebook options of the study ``module``: the parameters its
    ``validate`` takes besides ``size``, ``seed`` and ``device`` (``n_seeds``, ``cache_dir``,
    ``threads``, ``also`` and its own), so that generic code asks the registry rather than
    reading a signature itself."""
    names = inspect.signature(module.validate).parameters
    return frozenset(n for n in names if n not in ("size", "seed", "device"))


def surface_problems(module: ModuleType) -> list[str]:
    """What ``module`` lacks or states differently from the protocol (empty: it conforms)."""
    signatures = _signatures(module)
    problems = [f"missing {name}" for name in surface(module) if not hasattr(module, name)]
    sizes = getattr(module, "SIZES", None)
    if isinstance(sizes, Mapping):
        if set(sizes) != set(SIZE_NAMES):
            problems.append(f"SIZES has {sorted(sizes)}, not {list(SIZE_NAMES)}")
        problems += [f"SIZES[{k!r}] is not a StudySize" for k, v in sizes.items()
                     if not isinstance(v, StudySize)]
    validate = getattr(module, "validate", None)
    if callable(validate) and "also" not in inspect.signature(validate).parameters:
        problems.append("validate takes no 'also' (the notebook's optional comparisons)")
    for name, want in signatures.items():
        fn = getattr(module, name, None)
        if fn is None:
            continue
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
    return problems
