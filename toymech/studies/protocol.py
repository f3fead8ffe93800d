"""The study protocol: the one object every study is, written down once.

A study is a package ``toymech/studies/<name>/`` whose ``__init__`` builds its ``Study`` once,
``STUDY = Study(...)``, from its modules' functions and tables (and keeps those as module names
too, for its notebook: ``import toymech.studies.induction as study; study.validate(...)``).
Generic code (the CLI, experiments, grids, maps, reports, the docs) asks ``study(name)`` for the
``Study`` and never imports a study module by name. Its fields:

============================  =====================================================================
field                         role
============================  =====================================================================
``name``                      the registered name (``toymech list studies``; a ``Named``'s study)
``title``                     the study's title
``source``                    the source it reproduces, cited by its public name (docs/sources.md)
``sizes``                     {"smoke", "default", "paper"} -> a frozen ``StudySize`` subclass: the
                              one place the study's sizes live (training, evaluation, ``n_seeds``)
``named_experiments``         {name: ``Named``}: the study's named experiments (names prefixed by
                              it)
``claims``                    tuple of ``Claim`` (``toymech.studies.claims``)
``settings``                  its ``StudySettings`` (``studies.settings``): per size, the
                              parameters its claims' settings name, the cost of its report and
                              the calibration seeds (the scorecard and the claims table read it)
``knobs``                     {name: ``knobs.Knob``}: what a variant may change (``toymech list
                              knobs``); each knob's declaration says how it reaches the config
``notebook``                  the path of the study's notebook
``notebook_options``          the names of the notebook's options ``validate`` takes besides
                              ``size``, ``seed`` and ``device`` (``n_seeds``, ``cache_dir``,
                              ``threads``, ``also`` and the study's own), declared
``module``                    the package that exports the functions below under these names
                              (its ``__name__``: where the reference documents them)
``validate``                  ``(size, seed, device="auto", *, n_seeds=None, cache_dir=None,
                              threads=None, also=(), **study options)``: checks the notebook's
                              parameters (ValueError naming the bad one), applies the thread
                              policy, resolves the device once
``seeds_of``                  ``(size, seed, n_seeds=None)``: the seeds claims are assessed over
``experiments``               ``(size, seeds)``: the ``Experiment`` list the study's main runs
                              train for those seeds (what ``toymech train`` or a sweep would make)
``eval_sets``                 ``(task, size, seed, device="cpu")``: named evaluation batches, drawn
                              from the run's ``eval`` stream
``measure_seed``              ``(runs, data)``: one seed's named numbers (a flat {name: float}),
                              the only input of the claims. ``runs``: the seed's runs by name, each
                              a zoo entry (or a bare model: a run that never trained); ``data``:
                              the study's evaluation data for that seed
``untrained_numbers``         ``(size, seed)``: ``measure_seed`` on the same runs left at their
                              initialisation: the null world every claim fails
``numbers``                   ``(measured)``: the flattening ``measure_seed`` ends with
``scorecard``                 ``(per_seed, size, seeds=None)``: the claims assessed over seeds
``probe_data``                ``(task, size, seed, device="cpu")``: the fixed data every training
                              snapshot is measured on
``dynamics_metrics``          ``(model, data)``: the study's numbers for one snapshot
``through_training``          ``(entry, data, name="")``: a ``Trajectory`` over the run's snapshots
``describe``                  ``(size, seed, device, **study options)``: the run's settings in a
                              line
``with_knobs``                ``(size, variant=None)``: the ``core.Setting`` of a size with a
                              variant's knobs on top, every knob and combination checked
                              (``knobs.with_knobs_for(KNOBS, ...)`` makes it)
``optional_run_names``        the optional comparisons a notebook's ``also`` may name
``optional_runs``             ``(also=())``: ``also`` checked and expanded (``"all"``: every one;
                              ``params.optional_runs_for``)
``llc_on``                    ``(size, also=())``, only where ``optional_run_names`` has ``"llc"``
                              (else None): whether the learning-coefficient curve runs
``map_row``                   ``(run, size, seed)``, only for a study that maps (else None): one
                              run's row of a map (its numbers, properties and mechanism label)
``map_label``                 with ``map_row``: the label of its rows that says the mechanism holds
                              (a map's finding and its report's colour read its share)
``map_check``                 ``(size)`` or None: a ValueError for a setting ``map_row`` could
                              not measure (called for every cell before anything trains)
``map_panel``                 ``(sizes)`` or None: the one test panel of a map whose cells are
                              ``sizes`` (each a ``Setting``), which the map passes to every
                              ``map_row(..., panel=)``
``map_evidence``              ``(table)`` or None: the causal evidence of a map's table in words
                              (its page and results block print it)
``map_predictions``           other works' predictions judged on its maps
                              (``studies.predictions.MapPrediction``)
``results_maps``              the names of its maps (a spec's ``name``: the shipped table's name
                              before its size and machine) its results page shows first, the
                              first as its figure; its other shipped maps follow
============================  =====================================================================

A ``size`` above is a size name or a ``core.Setting`` (a size with a variant's knobs, from
``with_knobs``; ``Setting.of`` converts at the boundary): the knobs reach the experiments a
study builds from it (``experiments``, ``untrained_numbers``, ``map_row``, ...), and a
``Setting`` with knobs is named in ``describe`` and ``scorecard`` as a variant. ``tests/test_studies.py`` checks every study's functions
against the signatures above, so a study that drifts fails CI. Built-in studies are listed in
``STUDIES`` (name -> notebook; their package builds the ``Study`` when first asked for);
``register_study`` adds one from outside the package (``toymech.plugins``).
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..core import SIZES as SIZE_NAMES, check, check_int, check_seed, size_name
from .settings import skipping

# The built-in studies: package name under toymech.studies -> the notebook that shows it.
STUDIES: dict[str, str] = {
    "induction": "notebooks/01_induction_repeated_blocks.ipynb",
    "birth": "notebooks/02_birth_of_a_transformer.ipynb",
    "random_transformers": "notebooks/03_random_transformers.ipynb",
}
TEMPLATE = "_template"
_REGISTERED: dict[str, "Study"] = {}  # name -> its Study, once built or registered

MAX_SEEDS = 1000
# The notebook options every study's ``validate`` takes besides size, seed and device.
COMMON_OPTIONS = frozenset({"n_seeds", "cache_dir", "threads", "also"})
# The functions every study has (the optional ones: ``OPTIONAL_FUNCTIONS``).
FUNCTIONS = ("validate", "seeds_of", "experiments", "eval_sets", "measure_seed",
             "untrained_numbers", "numbers", "scorecard", "probe_data", "dynamics_metrics",
             "through_training", "describe", "with_knobs", "optional_runs")
OPTIONAL_FUNCTIONS = ("llc_on", "map_row", "map_check", "map_panel", "map_evidence")


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
    """``sizes[size]`` of a size name or a ``core.Setting``, with an unknown size a ValueError
    naming it."""
    return sizes[size_name(size)]


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
        return skipping(seed, n, skip.get(size_name(size), ()))

    return seeds_of


@dataclass(frozen=True, eq=False)
class Study:
    """One study (see the module docstring for every field): its tables, its notebook and its
    functions, built once by its package (``STUDY = Study(...)``) and registered by name (one
    object per study: compared and hashed as itself). The optional functions are None where a
    study has none."""

    name: str
    title: str
    source: str
    sizes: Mapping[str, StudySize]
    named_experiments: Mapping[str, Any]
    claims: tuple
    settings: Any
    knobs: Mapping[str, Any]
    notebook: str
    notebook_options: frozenset[str]
    module: str
    validate: Callable[..., Any]
    seeds_of: Callable[..., tuple[int, ...]]
    experiments: Callable[..., list]
    eval_sets: Callable[..., Any]
    measure_seed: Callable[..., Any]
    untrained_numbers: Callable[..., Any]
    numbers: Callable[..., Any]
    scorecard: Callable[..., Any]
    probe_data: Callable[..., Any]
    dynamics_metrics: Callable[..., Any]
    through_training: Callable[..., Any]
    describe: Callable[..., str]
    with_knobs: Callable[..., Any]
    optional_runs: Callable[..., tuple[str, ...]]
    optional_run_names: tuple[str, ...] = ()
    llc_on: Callable[..., bool] | None = None
    map_row: Callable[..., dict] | None = None
    map_label: str | None = None
    map_check: Callable[..., None] | None = None
    map_panel: Callable[..., Any] | None = None
    map_evidence: Callable[..., str] | None = None
    map_predictions: tuple = ()
    results_maps: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check(isinstance(self.name, str) and self.name.isidentifier(), "study name", self.name,
              "an identifier")
        check(isinstance(self.sizes, Mapping) and set(self.sizes) == set(SIZE_NAMES), "sizes",
              sorted(self.sizes) if isinstance(self.sizes, Mapping) else self.sizes,
              f"one StudySize for each of {', '.join(SIZE_NAMES)}")
        bad = [k for k, v in self.sizes.items() if not isinstance(v, StudySize)]
        check(not bad, "sizes", bad[:1], "StudySize values")
        for name in FUNCTIONS:
            check(callable(getattr(self, name)), name, getattr(self, name), "a function")
        for name in OPTIONAL_FUNCTIONS:
            fn = getattr(self, name)
            check(fn is None or callable(fn), name, fn, "a function or None")
        check((self.llc_on is not None) == ("llc" in self.optional_run_names), "llc_on",
              self.llc_on, "a function exactly where optional_run_names has 'llc'")
        check((self.map_label is not None) == (self.map_row is not None), "map_label",
              self.map_label, "a label exactly where the study has a map_row")
        check(self.map_row is not None or (self.map_check is None and self.map_panel is None
                                           and self.map_evidence is None
                                           and not self.map_predictions),
              "map_check", self.map_check, "None (and no map_panel) for a study without map_row")
        options = frozenset(self.notebook_options)
        check(COMMON_OPTIONS <= options, "notebook_options", sorted(options),
              f"every common option ({', '.join(sorted(COMMON_OPTIONS))}) and the study's own")
        object.__setattr__(self, "notebook_options", options)
        object.__setattr__(self, "claims", tuple(self.claims))
        object.__setattr__(self, "optional_run_names", tuple(self.optional_run_names))
        object.__setattr__(self, "map_predictions", tuple(self.map_predictions))
        check(all(isinstance(n, str) and n for n in self.results_maps), "results_maps",
              self.results_maps, "map names (strings), the first the results page's figure")
        object.__setattr__(self, "results_maps", tuple(self.results_maps))

    @property
    def maps(self) -> bool:
        """Whether the study can be mapped (it has a ``map_row``)."""
        return self.map_row is not None

    def size(self, size: Any) -> StudySize:
        """Its ``StudySize`` of ``size`` (a size name or a ``core.Setting``)."""
        return size_of(self.sizes, size)


def study(name: str) -> Study:
    """The registered ``Study`` named ``name`` (one of ``STUDIES``, or the template)."""
    check(name in STUDIES or name == TEMPLATE, "study", name, f"one of {', '.join(STUDIES)}")
    if name not in _REGISTERED:  # a built-in study: its package builds its Study once
        built = importlib.import_module(f"toymech.studies.{name}").STUDY
        check(isinstance(built, Study) and built.name == name, "study", name,
              f"a package whose STUDY is the Study named {name!r}")
        check(name == TEMPLATE or built.notebook == STUDIES[name], "notebook", built.notebook,
              f"the notebook STUDIES names for {name!r} ({STUDIES.get(name)})")
        _REGISTERED[name] = built
    return _REGISTERED[name]


def register_study(new: Study) -> Study:
    """Register a study that lives outside the package (a ``Study`` of yours, e.g. a copy of the
    template's with its own ``name`` and ``notebook``): the CLI, ``toymech list``, knobs,
    reports and maps then take ``new.name``. Returns it. A name already taken by another study
    is a ValueError."""
    check(isinstance(new, Study), "study", type(new).__name__, "a Study (toymech.studies.protocol)")
    check(new.name != TEMPLATE and not new.name.startswith("_"), "study", new.name,
          "a name not starting with '_'")
    taken = new.name in STUDIES and _REGISTERED.get(new.name) is not new
    check(not taken, "study", new.name, f"a name not yet registered ({', '.join(STUDIES)} are)")
    _REGISTERED[new.name] = new
    STUDIES[new.name] = str(new.notebook)
    return new


def all_studies() -> list[Study]:
    """Every registered study, in the registry's order."""
    return [study(name) for name in STUDIES]


def surface(s: Study) -> tuple[str, ...]:
    """The names of the functions ``s`` has: every one of ``FUNCTIONS`` and those of
    ``OPTIONAL_FUNCTIONS`` it sets (each exported under that name by ``s.module``)."""
    return (*FUNCTIONS, *(n for n in OPTIONAL_FUNCTIONS if getattr(s, n) is not None))
