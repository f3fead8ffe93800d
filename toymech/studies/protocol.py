"""The study protocol: the abstract ``Study`` every study subclasses, and the registry of studies.

A study is a package ``toymech/studies/<name>/`` (the template: ``toymech/studies/_template/``)
whose ``study.py`` subclasses ``Study`` and whose ``__init__`` makes its one instance,
``STUDY = <Name>Study()``. Generic code (the CLI, experiments, grids, maps, reports, the docs)
asks ``study(name)`` for that instance and never imports a study module by name. Built-in
studies are listed in ``STUDIES`` (name -> notebook; their package is imported when first
asked for); ``register_study`` adds one from outside the package (``toymech.plugins``).
"""

from __future__ import annotations

import abc
import dataclasses
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pandas as pd
import torch

from ..analysis.llc import LLCCurve, SGLDSettings, llc_through_training
from ..core import SIZES as SIZE_NAMES
from ..core import Setting, check, check_int, check_seed, seed_for, size_name
from ..devices import make_generator
from ..tasks import Batch, Task
from ..training import Experiment
from . import knobs as study_knobs
from . import params
from .claims import scorecard as claims_scorecard
from .params import MAX_SEEDS, check_n_seeds, validate_run
from .settings import StudySettings, skipping
from .trajectory import Trajectory, example_patterns, trajectory

__all__ = ["STUDIES", "TEMPLATE", "COMMON_OPTIONS", "MAX_SEEDS", "Study", "StudySize",
           "ProbeData", "study", "register_study", "all_studies", "every_study_knobs",
           "judged_seeds", "size_of"]

# The built-in studies: package name under toymech.studies -> the notebook that shows it.
STUDIES: dict[str, str] = {
    "induction": "notebooks/01_induction_repeated_blocks.ipynb",
    "birth": "notebooks/02_birth_of_a_transformer.ipynb",
    "random_transformers": "notebooks/03_random_transformers.ipynb",
}
TEMPLATE = "_template"
_REGISTERED: dict[str, Study] = {}  # name -> its Study, once built or registered

# The notebook options every study's ``validate`` takes besides size, seed and device.
COMMON_OPTIONS = frozenset({"n_seeds", "cache_dir", "threads", "also"})


@dataclass(frozen=True)
class StudySize:
    """What every study's size has: how many seeds its claims are assessed over by default.
    Each study subclasses it with its own fields (frozen dataclasses: read as attributes)."""

    n_seeds: int

    def __post_init__(self) -> None:
        check_int("n_seeds", self.n_seeds, 1, MAX_SEEDS)

    def replace(self, **changes: Any) -> StudySize:
        """A copy with ``changes`` (field=value), checked like a new size."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ProbeData:
    """What every study's ``probe_data`` returns: the fixed data each training snapshot of a
    run is measured on (glossary: probe), drawn from the run's ``probe`` and ``eval`` streams.
    Its task; each study subclasses it with its own fields (``<study>/dynamics.py``), among
    them ``example``, the one sequence whose attention the scrubber shows."""

    task: Any  # the run's toymech Task (a study's subclass names its own task class)


def size_of(sizes: Mapping[str, StudySize], size: Setting | str) -> StudySize:
    """``sizes[size]`` of a size name or a ``core.Setting``, with an unknown size a ValueError
    naming it."""
    return sizes[size_name(size)]


def judged_seeds(sizes: Mapping[str, StudySize], calibration: Mapping[str, Sequence[int]],
                 size: Setting | str, seed: int, n_seeds: int | None = None
                 ) -> tuple[int, ...]:
    """The seeds a study's claims are assessed over (``Study.seeds_of``, for a study's own
    modules, which hold its tables rather than the study): ``seed, seed + 1, ...``, ``n_seeds``
    of them (None: the ``n_seeds`` of ``sizes[size]``), passing over the size's seeds in
    ``calibration``. The first ones are the same whatever the count, so a run with
    more seeds reuses the zoo entries of a shorter one."""
    spec = size_of(sizes, size)
    seed = check_seed(seed)
    n = check_n_seeds(n_seeds) or spec.n_seeds
    return skipping(seed, n, tuple(calibration.get(size_name(size), ())))


class Study(abc.ABC):
    """One study: what it declares (class attributes) and what it computes (methods), in the
    manner of scikit-learn's estimators. A study is one subclass, in ``<study>/study.py``, whose
    one instance its package makes (``STUDY = <Name>Study()``) and ``study(name)`` returns; it
    holds no state (compared and hashed as itself). Its instance is checked when made: a
    subclass that leaves an abstract method out cannot be instantiated (TypeError naming it),
    and a table that breaks a rule below is a ValueError.

    **Declared** (class attributes; the tables live in the study's modules and the class names
    them):

    ======================  ========================================================================
    attribute               what it is
    ======================  ========================================================================
    ``name``                the registered name (an identifier; ``toymech list studies``; a
                            ``Named``'s study)
    ``title``               the title; its part before a colon names the study's section of
                            docs/sources.md
    ``source``              the source it reproduces, cited by its public name
    ``source_called``       what its messages call the source ("the post": "block_len 4-8 (the
                            post's 6)")
    ``sizes``               {"smoke", "default", "paper"} -> a frozen ``StudySize`` subclass: the
                            one place the study's sizes live
    ``calibration``         size -> the seeds its thresholds or recipes were chosen on: never
                            judged (``seeds_of`` passes over them)
    ``named_experiments``   {name: ``Named``}: its named experiments (names prefixed by it)
    ``knobs``               {name: ``knobs.Knob``}: what a variant may change, each knob's
                            declaration saying how it reaches the config
    ``claims``              tuple of ``claims.Claim``
    ``settings``            its ``settings.StudySettings``: per size, the parameters its claims'
                            settings name, the report's cost and the calibration seeds
    ``notebook``            the path of its notebook
    ``own_options``         the notebook options ``validate`` takes besides ``COMMON_OPTIONS``
                            (checked by ``check_own_options``)
    ``optional_run_names``  the optional comparisons a notebook's ``also`` may name
    ``llc_on_sizes``        where ``optional_run_names`` has ``"llc"``: size -> whether the
                            learning-coefficient curve runs without being asked
    ``llc_settings``        size -> the ``SGLDSettings`` of that curve
    ``llc_pool_sizes``      size -> the sequences its loss is over
    ``dynamics_names``      the ``dynamics_metrics`` whose transition steps are compared
    ``dynamics_shown``      more ``dynamics_metrics`` drawn through training, not compared
    ``map_label``           for a study that maps: the label of its rows that says the mechanism
                            holds (a map's finding and its page's colour read its share)
    ``map_predictions``     other works' predictions judged on its maps
                            (``studies.predictions.MapPrediction``)
    ``null_family``         for a study that maps: the algorithms without the mechanism its map
                            label is judged against, in the study's own shape (studies 1 and 2:
                            a tuple of members; study 3: task -> member names); empty: none
    ``results_maps``        the names of its maps (a spec's ``name``: the shipped table's name
                            before its size and machine) its results page shows first, the
                            first as its figure; its other shipped maps follow
    ``text_columns``        columns of its map rows that hold text although they may read as
                            numbers (a map table reads them back as text)
    ======================  ========================================================================

    **Computed** (a ``size`` is a size name or a ``core.Setting``, a size with a variant's
    knobs from ``with_knobs``; the knobs reach the experiments a study builds from it):

    * abstract, every study writes them: ``experiments(size, seeds)``, ``eval_sets(task, size,
      seed, device)``, ``probe_data(task, size, seed, device)``, ``dynamics_metrics(model,
      data)``, ``measure_seed(runs, data)``, ``untrained_numbers(size, seed)``,
      ``describe(size, seed, device, *, n_seeds, **own options)`` (a study's method may add
      keyword-only options with defaults: ``probe_data(..., eval_n=None)``);
    * with a default a study may override: ``knob_runs(size)`` (the runs a knob is judged by),
      ``check_knobs(experiment, values)``, ``check_own_options(size, seed, **own options)``,
      ``dynamics_patterns(model, data)``; for a map, ``map_row(run, size, seed)`` (a study
      "maps" when it overrides it: ``maps``), ``map_check(size)``, ``map_panel(sizes)``,
      ``map_evidence(table)``;
    * inherited, the same in every study: ``validate``, ``seeds_of``, ``optional_runs``,
      ``llc_on``, ``llc_pool``, ``llc_curve``, ``with_knobs``, ``scorecard``,
      ``through_training``, ``size``, ``notebook_options``.

    **Layout**: the same function in the same file of every study, so a reader finds each in
    one place (the template is the documented example):

    ==================  ============================================================================
    file                holds
    ==================  ============================================================================
    ``__init__.py``     ``STUDY = <Name>Study()`` and the names its notebook reads
    ``study.py``        the subclass: its declarations and methods, each naming the function below
    ``design.py``       ``NAME``, ``SIZES``, ``CALIBRATION``, ``COST``, ``setting``, ``KNOBS``,
                        ``experiment``, ``experiments``, ``EXPERIMENTS`` (study 3: in
                        ``recipes.py``), ``OPTIONAL_RUNS``, ``LLC_ON``, ``eval_sets``,
                        ``describe`` and the check of its own options
    ``claims.py``       ``SOURCE``, ``CLAIMS``, ``SETTINGS``, ``numbers`` (one seed's named
                        numbers), ``source_like``, ``at_chance``
    ``over_seeds.py``   ``measure_seed``, ``untrained_numbers``, ``findings``: the study over
                        its seeds
    ``dynamics.py``     its ``ProbeData``, ``probe_data``, ``dynamics_metrics``,
                        ``DYNAMICS_METRICS``
    ``causal.py``       (a learning-coefficient curve or causal tests) ``LLC_SETTINGS``,
                        ``LLC_POOL``
    ``map_measure.py``  (a study that maps) ``map_row``, ``MAP_LABEL``, ``map_check``,
                        ``map_panel``, ``map_evidence``; ``predictions.py``: ``MAP_PREDICTIONS``
    ==================  ============================================================================

    Anything else is the study's own (``measure.py``, ``tables.py``, ...).
    """

    # --- declared ---------------------------------------------------------------------------
    name: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[str]
    source_called: ClassVar[str] = "the source"
    sizes: ClassVar[Mapping[str, StudySize]]
    calibration: ClassVar[Mapping[str, tuple[int, ...]]] = {}
    named_experiments: ClassVar[Mapping[str, Any]]
    knobs: ClassVar[Mapping[str, study_knobs.Knob]]
    claims: ClassVar[tuple]
    settings: ClassVar[StudySettings]
    notebook: ClassVar[str]
    own_options: ClassVar[frozenset[str]] = frozenset()
    optional_run_names: ClassVar[tuple[str, ...]] = ()
    llc_on_sizes: ClassVar[Mapping[str, bool]] = {}
    llc_settings: ClassVar[Mapping[str, SGLDSettings]] = {}
    llc_pool_sizes: ClassVar[Mapping[str, int]] = {}
    dynamics_names: ClassVar[tuple[str, ...]] = ()
    dynamics_shown: ClassVar[tuple[str, ...]] = ()
    map_label: ClassVar[str | None] = None
    map_predictions: ClassVar[tuple] = ()
    null_family: ClassVar[Sequence[Any] | Mapping[str, Any]] = ()
    results_maps: ClassVar[tuple[str, ...]] = ()
    text_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        cls = type(self)
        for attr in ("name", "title", "source", "sizes", "named_experiments", "knobs",
                     "claims", "settings", "notebook"):
            check(hasattr(cls, attr), attr, None, f"a class attribute of {cls.__name__}")
        check(isinstance(self.name, str) and self.name.isidentifier(), "study name", self.name,
              "an identifier")
        check(isinstance(self.sizes, Mapping) and set(self.sizes) == set(SIZE_NAMES), "sizes",
              sorted(self.sizes) if isinstance(self.sizes, Mapping) else self.sizes,
              f"one StudySize for each of {', '.join(SIZE_NAMES)}")
        bad = [k for k, v in self.sizes.items() if not isinstance(v, StudySize)]
        check(not bad, "sizes", bad[:1], "StudySize values")
        unknown = sorted(set(self.calibration) - set(SIZE_NAMES))
        check(not unknown, "calibration", unknown, f"sizes among {', '.join(SIZE_NAMES)}")
        llc = "llc" in self.optional_run_names
        for table in ("llc_on_sizes", "llc_settings", "llc_pool_sizes"):
            given = getattr(self, table)
            check(set(given) == (set(SIZE_NAMES) if llc else set()), table, sorted(given),
                  "one entry per size exactly where optional_run_names has 'llc'")
        check((self.map_label is not None) == self.maps, "map_label", self.map_label,
              "a label exactly where the study has a map_row")
        check(self.maps or not self.map_predictions, "map_predictions", self.map_predictions,
              "none for a study without map_row")
        check(self.maps or not self.null_family, "null_family", self.null_family,
              "none for a study without map_row")
        check(isinstance(self.results_maps, tuple)
              and all(isinstance(n, str) and n for n in self.results_maps), "results_maps",
              self.results_maps, "a tuple of map names (strings), the first the results "
              "page's figure")
        clash = sorted(self.own_options & COMMON_OPTIONS)
        check(not clash, "own_options", clash, "options besides the common ones")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a study holds no state: {name} is a class attribute of "
                             f"{type(self).__name__}")

    def __repr__(self) -> str:
        return f"<study {self.name!r}: {self.title}>"

    # --- abstract: every study writes them --------------------------------------------------
    @abc.abstractmethod
    def experiments(self, size: Setting | str, seeds: Sequence[int]) -> list[Experiment]:
        """The ``Experiment`` list the study's main runs train for ``seeds`` at ``size``
        (what ``toymech train`` or a sweep would make)."""

    @abc.abstractmethod
    def eval_sets(self, task: Task, size: Setting | str, seed: int,
                  device: str | torch.device = "cpu") -> dict[str, Batch]:
        """Named evaluation batches of ``task`` at ``size``, drawn from the ``eval`` stream of
        the run with seed ``seed``, on ``device``."""

    @abc.abstractmethod
    def probe_data(self, task: Task, size: Setting | str, seed: int,
                   device: str | torch.device = "cpu") -> ProbeData:
        """The fixed data every training snapshot of the run with seed ``seed`` of ``task`` at
        ``size`` is measured on, on ``device``."""

    @abc.abstractmethod
    def dynamics_metrics(self, model: Any, data: ProbeData) -> dict[str, float]:
        """The study's numbers for one snapshot ``model``, measured on ``data``
        (``probe_data``)."""

    @abc.abstractmethod
    def measure_seed(self, runs: Mapping[str, Any], data: Any) -> dict[str, float]:
        """One seed's named numbers (a flat {name: float}), the only input of the claims.
        ``runs``: the seed's runs by name, each a zoo entry (or a bare model: a run that never
        trained); ``data``: the study's evaluation data for that seed."""

    @abc.abstractmethod
    def untrained_numbers(self, size: Setting | str, seed: int) -> dict[str, float]:
        """``measure_seed`` on the runs of ``size`` and ``seed`` left at their initialisation:
        the null world every claim fails."""

    @abc.abstractmethod
    def describe(self, size: Setting | str, seed: int, device: Any, *,
                 n_seeds: int | None = None, **options: Any) -> str:
        """The run's settings in a line: ``size`` (a variant names its knobs), ``device``, the
        ``n_seeds`` seeds from ``seed`` and the study's own ``options``."""

    # --- with a default a study may override ------------------------------------------------
    def knob_runs(self, size: Setting | str) -> list[Experiment]:
        """The runs a knob is judged by at ``size`` (``with_knobs`` builds them: a knob that
        changes none of them is dropped, a combination the configs refuse fails). Default:
        the main runs of seed 0."""
        return self.experiments(size, (0,))

    def check_knobs(self, experiment: Experiment, values: Mapping[str, Any]) -> None:
        """The study's own bounds on ``experiment`` built with the knob ``values`` (a
        ValueError naming the knobs). Default: none."""
        return None

    def check_own_options(self, size: Setting | str, seed: int, **options: Any) -> None:
        """Check the study's own notebook ``options`` (``own_options``) at ``size`` and
        ``seed``: a ValueError naming the bad one. Default: a study without options."""
        return None

    def dynamics_patterns(self, model: Any, data: ProbeData) -> tuple:
        """Every head's attention in ``model`` on ``data.example``, the probe data's one
        sequence shown through training (``trajectory.example_patterns``)."""
        return example_patterns(model, data)

    def map_row(self, run: Any, size: Setting | str, seed: int, **options: Any) -> dict:
        """One map run's row: its named numbers, properties and its ``label`` (a pure function
        of its measurements). ``run``: the zoo entry; ``size``: its ``Setting``; ``seed``: its
        seed. A study that maps overrides it (and declares ``map_label``)."""
        raise NotImplementedError(f"study {self.name!r} has no map measurement (map_row)")

    def map_check(self, size: Setting | str) -> None:
        """A ValueError for a setting ``size`` that ``map_row`` could not measure (called for
        every cell before anything trains). Default: every setting can be measured."""
        return None

    def map_panel(self, sizes: Sequence[Setting]) -> Any:
        """The one test panel of a map whose cells are ``sizes``, which the map passes to every
        ``map_row(..., panel=)``. Default: None (rows need no shared panel)."""
        return None

    def map_evidence(self, table: pd.DataFrame) -> str:
        """The causal evidence of a map's ``table`` in words (its page and results block print
        it). Default: none ("")."""
        return ""

    # --- inherited: the same in every study -------------------------------------------------
    @property
    def maps(self) -> bool:
        """Whether the study can be mapped (it overrides ``map_row``)."""
        return type(self).map_row is not Study.map_row

    @property
    def notebook_options(self) -> frozenset[str]:
        """The names of the notebook's options ``validate`` takes besides ``size``, ``seed``
        and ``device``: ``COMMON_OPTIONS`` and the study's ``own_options``."""
        return COMMON_OPTIONS | frozenset(self.own_options)

    def size(self, size: Setting | str) -> StudySize:
        """Its ``StudySize`` of ``size`` (a size name or a ``core.Setting``)."""
        return size_of(self.sizes, size)

    def validate(self, size: Setting | str, seed: int, device: str | torch.device = "auto", *,
                 n_seeds: int | None = None, cache_dir: str | None = None,
                 threads: int | None = None, also: Any = (), **options: Any) -> torch.device:
        """Check the notebook's parameters (one ValueError each, naming the bad one), apply
        the thread policy and resolve the device, once (``params.validate_run``): ``size`` (a
        size name or a variant), ``seed`` (the first judged seed), ``device`` (``"auto"``:
        CUDA, else MPS, else CPU), ``n_seeds`` (None: the size's), ``cache_dir`` (the zoo;
        None: ``$TOYMECH_CACHE``), ``threads`` (torch threads; None: the automatic share of
        the free cores), ``also`` (optional comparisons of ``optional_run_names``) and the
        study's own ``options`` (``own_options``, ``check_own_options``). Returns the device."""
        dev = validate_run(size, seed, device, n_seeds, cache_dir, threads)
        for key in options:
            check(key in self.own_options, "option", key,
                  f"one of {', '.join(sorted(self.notebook_options))}")
        self.check_own_options(size, seed, **options)
        self.optional_runs(also)
        return dev

    def seeds_of(self, size: Setting | str, seed: int, n_seeds: int | None = None
                 ) -> tuple[int, ...]:
        """The seeds a claim is assessed over: ``seed, seed + 1, ...``, ``n_seeds`` of them
        (None: the size's ``n_seeds``), passing over the size's ``calibration`` seeds
        (``judged_seeds``)."""
        return judged_seeds(self.sizes, self.calibration, size, seed, n_seeds)

    def optional_runs(self, also: Any = ()) -> tuple[str, ...]:
        """The optional comparisons ``also`` names (``"all"``: every one of
        ``optional_run_names``); a name outside them: ValueError. The notebook's ``also``
        after its setup cell."""
        return params.check_options("also", also, self.optional_run_names)

    def llc_on(self, size: Setting | str, also: Any = ()) -> bool:
        """Whether the notebook estimates the learning coefficient through training at
        ``size``: at the sizes ``llc_on_sizes`` turns on, or where ``also`` names ``"llc"``
        (or is ``"all"``); never for a study without the curve."""
        asked = "llc" in self.optional_runs(also)
        return bool(self.llc_on_sizes.get(size_name(size), False)) or asked

    def llc_pool(self, task: Task, size: Setting | str, seed: int,
                 device: str | torch.device = "cpu") -> Batch:
        """The fixed training-distribution sequences of ``task`` the learning coefficient's
        loss L_n is over: ``llc_pool_sizes[size]`` of them from the ``probe`` stream of
        ``seed``, on ``device``."""
        n = self.llc_pool_sizes[size_name(size)]
        return task.sample(n, make_generator(seed_for(seed, "probe"), torch.device(device)))

    def llc_curve(self, entry: Any, task: Task, size: Setting | str, seed: int,
                  steps: list[int] | None = None) -> LLCCurve:
        """λ̂ at the snapshots (``steps``; None: every one) of the zoo entry ``entry``, trained
        on ``task`` at ``size`` with seed ``seed``, with the size's ``llc_settings`` over its
        ``llc_pool``."""
        dev = next(entry.model.parameters()).device
        return llc_through_training(entry, self.llc_pool(task, size, seed, dev),
                                    self.llc_settings[size_name(size)], steps)

    def with_knobs(self, size: Setting | str, variant: Mapping[str, Any] | None = None
                   ) -> Setting:
        """The ``Setting`` of ``size`` (a size name, or a Setting whose knobs are kept) with
        the knobs of ``variant`` (a mapping of knob names to values) on top. A knob that
        changes none of ``knob_runs`` is dropped (no knob left: ``Setting(size)``, the size
        itself). Every knob, value and combination is checked here, before any work
        (ValueError naming the knob, the value and what is allowed)."""
        build = study_knobs.with_knobs_for(self.knobs, self.name, self.source_called,
                                           self.knob_runs, every_study_knobs, self.check_knobs)
        return build(size, variant)

    def scorecard(self, per_seed: Sequence[Mapping[str, float]], size: Setting | str,
                  seeds: Sequence[int] | None = None) -> pd.DataFrame:
        """The study's claims assessed over seeds at ``size``: ``per_seed`` holds one dict of
        ``measure_seed`` numbers per seed, ``seeds`` names them (never a calibration seed).
        Returns the scorecard (one row per claim; ``attrs["title"]`` names the size and
        seeds)."""
        study_knobs.variant_values(self.knobs, size)  # its title never names another's variant
        return claims_scorecard(self.claims, per_seed, size, seeds, self.settings)

    def through_training(self, entry: Any, data: ProbeData, name: str = "") -> Trajectory:
        """The run ``entry`` (trained with snapshots) through training: ``dynamics_metrics``
        and ``dynamics_patterns`` at every snapshot, measured on the probe data ``data``
        (``probe_data``), and each of ``dynamics_names``' transition steps (those of
        ``dynamics_shown`` drawn beside them); ``name`` titles it (default: the entry's name).
        Returns a ``Trajectory`` (``.figure()``: the scrubber)."""
        return trajectory(entry, name or entry.meta.get("name", ""), self.dynamics_metrics,
                          self.dynamics_patterns, data, self.dynamics_names,
                          shown=self.dynamics_shown)


def study(name: str) -> Study:
    """The registered ``Study`` named ``name`` (one of ``STUDIES``, or the template)."""
    check(name in STUDIES or name == TEMPLATE, "study", name, f"one of {', '.join(STUDIES)}")
    if name not in _REGISTERED:  # a built-in study: its package makes its Study once
        built = importlib.import_module(f"toymech.studies.{name}").STUDY
        check(isinstance(built, Study) and built.name == name, "study", name,
              f"a package whose STUDY is the Study named {name!r}")
        check(name == TEMPLATE or built.notebook == STUDIES[name], "notebook", built.notebook,
              f"the notebook STUDIES names for {name!r} ({STUDIES.get(name)})")
        _REGISTERED[name] = built
    return _REGISTERED[name]


def register_study(new: Study) -> Study:
    """Register a study that lives outside the package (an instance of your ``Study``
    subclass, e.g. a copy of the template's with its own ``name`` and ``notebook``): the CLI,
    ``toymech list``, knobs, reports and maps then take ``new.name``. Returns it. A name
    already taken by another study is a ValueError."""
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


def every_study_knobs() -> dict[str, list[str]]:
    """Every registered study's knob names (to say which study an unknown knob belongs to)."""
    return {name: list(table) for name, table in _knob_tables().items()}


def _knob_tables() -> dict[str, Mapping[str, study_knobs.Knob]]:
    return {name: study(name).knobs for name in STUDIES}


study_knobs.study_tables = _knob_tables
