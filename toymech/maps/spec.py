"""A map's spec: a study, its named experiments, a size, seeds and a list of values per knob.

As a dict, or a JSON/YAML file holding one::

    {"study": "induction",                       # a registered study with a ``map_row``
     "experiment": ["induction-2l"],             # its named experiments (a name or a list)
     "size": "default", "seeds": 3,              # a count (seeds no calibration used) or a list
     "knobs": {"block_len": [6, "5-7", "4-8"],   # the study's knobs, each a list of values
               "offset": [0, "0-3"]},
     "name": "s1-content",                       # the table's name (default: the file's stem)
     "until_converged": 8000}                    # optional budget policy: at most this many steps

``until_converged`` (optional) is the map's budget policy: a run its study calls ``still
learning`` (``toymech.studies.states``) is continued (its steps doubled, at most this many, the
zoo continuing the shorter run) and measured again, until it stops learning or reaches the cap;
its row is replaced by the longer run's. The study needs a ``steps`` knob, and the spec may then
not map ``steps`` itself.

``until_converged`` must exceed the steps every experiment of the map trains at its size (a cap
at or below them could never continue a run), and it is part of the map's identity
(``ledger.identity``): the same map with another policy is another map, never merged into one
table (a run would be kept twice, once per policy).

A knob that does not change one of the map's experiments (``n_layers`` on a map holding the
1-layer ``induction-1l-smeared`` beside the 2-layer ``induction-2l``: every value builds the same
1-layer run) is left at the source's value for that experiment: its runs are mapped once, in
one cell whose column shows the source's value, and the map says so in one line
(``map_trials``). A knob that changes none of the map's experiments is refused before any work,
and so are two cells of one experiment that would build the same run (the same zoo key): a
run is one row, one cell.

``check_map`` checks every key before any work; ``map_trials`` is the map's runs (one trial each,
through the sweep grid ``sweep_grid``: ``toymech.grid``'s knobs axis).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core import Setting, check, check_int, check_seed, check_size, short_repr
from ..grid import expand_grid
from ..studies import knobs as study_knobs
from ..studies import protocol
from ..sweep.table import Trial
from ..training.specfiles import read_mapping

MAP_KEYS = ("study", "experiment", "size", "seeds", "seed", "knobs", "name", "until_converged")
MAX_STEPS = 10_000_000
MAX_MAP_SEEDS = 100
MAX_NAME = 100  # characters of a map's name (it names files, a lock and a page)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def load_map(path: str | Path) -> dict[str, Any]:
    """The map spec in the file at ``path``: ``.json``, ``.yaml`` or ``.yml`` (strictly: a key
    given twice is refused)."""
    return read_mapping(path, "map")


def check_map(spec: Any, name: str = "map") -> dict[str, Any]:
    """The spec with its defaults, every key checked (ValueError naming it) before any work:
    ``study`` (with a ``map_row``), ``experiment`` (its names), ``size``, ``seeds`` (a count of
    the study's judged seeds from ``seed``, or a list), ``knobs`` (the study's, checked by its
    ``with_knobs`` at every cell), ``name``, ``until_converged`` (None, or the steps cap of the
    budget policy).

    ``spec``: the spec (a mapping); ``name``: what to call it in an error."""
    check(isinstance(spec, dict), name, type(spec).__name__, "a mapping (JSON object)")
    unknown = sorted(set(spec) - set(MAP_KEYS))
    check(not unknown, "map key", unknown[0] if unknown else None, f"one of {', '.join(MAP_KEYS)}")
    study_name = spec.get("study")
    check(isinstance(study_name, str) and study_name in protocol.STUDIES, "study", study_name,
          f"one of {', '.join(protocol.STUDIES)}")
    study = protocol.study(study_name)
    check(study.maps, "study", study_name,
          "a study with a map measurement (map_row): "
          + ", ".join(s for s in protocol.STUDIES if protocol.study(s).maps))
    names = spec.get("experiment")
    names = [next(iter(study.named_experiments))] if names is None else names
    names = [names] if isinstance(names, str) else names
    check(isinstance(names, list) and len(names) >= 1, "experiment", names,
          "a name of the study's experiments or a non-empty list of them (left out: "
          f"{next(iter(study.named_experiments))})")
    for n in names:
        check(isinstance(n, str) and n in study.named_experiments, "experiment", n,
              f"one of the study's: {', '.join(study.named_experiments)}")
    check(len(set(names)) == len(names), "experiment", names, "each experiment once")
    size = check_size(spec.get("size", "default"))
    seed = check_seed(spec.get("seed", 0))
    seeds = spec.get("seeds", None)
    if seeds is None or (not isinstance(seeds, (list, tuple))):
        count = check_int("seeds", seeds if seeds is not None else 3, 1, MAX_MAP_SEEDS)
        seeds = list(study.seeds_of(size, seed, count))
    else:
        check(len(seeds) >= 1, "seeds", seeds, "a count or a non-empty list of seeds")
        seeds = [check_seed(s, "seeds") for s in seeds]
        check(len(set(seeds)) == len(seeds), "seeds", seeds, "each seed once")
    given = spec.get("knobs") or {}
    check(isinstance(given, dict) and len(given) >= 1, "knobs", given,
          "a mapping of the study's knobs to lists of values, e.g. {'block_len': [6, '4-8']}")
    for key, values in given.items():
        if key not in study.knobs:  # refused, naming the study whose knob it is
            study_knobs.parse_variant(study.knobs, {key: None}, study_name,
                                      protocol.every_study_knobs())
        check(isinstance(values, list) and len(values) >= 1, f"knobs[{key!r}]", values,
              "a non-empty list of values")
        seen: dict[Any, Any] = {}
        for v in values:
            canonical = study.knobs[key].parse(v)
            check(canonical not in seen, f"knobs[{key!r}]", values,
                  f"each value once: {short_repr(seen.get(canonical))} and {short_repr(v)} are the same "
                  f"value ({study.knobs[key].text(canonical)})")
            seen[canonical] = v
    label = spec.get("name", "map")
    check(isinstance(label, str) and NAME.fullmatch(label) is not None
          and len(label) <= MAX_NAME, "name", label,
          f"letters, digits, - and _ (ASCII: a-z, A-Z, 0-9), at most {MAX_NAME} characters, "
          "starting with a letter or digit (without a name: the map file's name; give 'name:' "
          "in the map)")
    cap = spec.get("until_converged")
    if cap is not None:
        cap = check_int("until_converged", cap, 1, MAX_STEPS)
        check("steps" in study.knobs, "until_converged", cap,
              f"only for a study with a steps knob ({study_name} has none)")
        check("steps" not in given, "until_converged", cap,
              "a cap on the steps of runs still learning, or a steps knob in the map, not both")
        for n in names:  # a cap the runs already reach could never continue one of them
            own = int(study.named_experiments[n].make(Setting(size), seeds[0]).train.steps)
            check(cap > own, "until_converged", cap,
                  f"a cap above the steps the runs train ({n} trains {own:,} at {size}): the "
                  "budget policy doubles the steps of a run still learning, up to the cap")
    return {"study": study_name, "experiment": names, "size": size, "seeds": seeds,
            "knobs": given, "name": label, "until_converged": cap}


def sweep_grid(spec: dict[str, Any]) -> dict[str, Any]:
    """The sweep grid of every combination of the map's experiments, seeds and knob values (the
    grid's knobs axis); ``map_trials`` makes the map's runs from it."""
    return {"experiment": spec["experiment"], "size": spec["size"], "seed": spec["seeds"],
            "knobs": spec["knobs"], "name": f"map-{spec['name']}"}


def map_trials(spec: dict[str, Any]) -> tuple[list[Trial], list[str]]:
    """(the map's runs, one trial each, in grid order; the lines that say what was left out)
    for a checked ``spec`` (``check_map``). A knob whose values all build the same run of an
    experiment is set to the source's value in that experiment's trials (its runs are one
    cell, not one per value), said in one line; a knob that changes none of the map's
    experiments, or two cells of one experiment that build the same run, is a ValueError
    naming them, before any work (module docstring)."""
    study = protocol.study(spec["study"])
    trials = expand_grid(sweep_grid(spec))
    first = spec["seeds"][0]
    notes, reached = [], {k: [] for k in spec["knobs"]}
    for name in spec["experiment"]:
        cells = [t for t in trials if t.experiment == name and t.seed == first]
        for k in spec["knobs"]:
            if _reaches(study, name, first, cells, k):
                reached[k].append(name)
                continue
            source = study.knobs[k].source
            values = {study.knobs[k].parse(v) for v in spec["knobs"][k]}
            for t in trials:
                if t.experiment == name:
                    t.knobs = {**t.knobs, k: study_knobs.jsonable_value(source)}
                    t.setting = None  # rebuilt below from the knobs now set
            if values != {source}:
                notes.append(f"map {spec['name']}: knob {k} does not change {name} (its runs "
                             f"are the same at every value): mapped once, at {k} "
                             f"{study.knobs[k].text(source)} (the source's value)")
    for k, names in reached.items():
        changes = {study.knobs[k].parse(v) for v in spec["knobs"][k]} != {study.knobs[k].source}
        check(names or not changes, f"knobs[{k!r}]", spec["knobs"][k],
              f"values that change a run of the map: {k} changes none of its experiments "
              f"({', '.join(spec['experiment'])}); 'toymech list knobs {spec['study']}' says "
              "which runs each knob changes")
    settings: dict[tuple, Setting] = {}  # each knob point's Setting, built once
    for t in trials:
        if t.setting is None:
            point = tuple(sorted((k, repr(v)) for k, v in t.knobs.items()))
            if point not in settings:
                settings[point] = study.with_knobs(spec["size"], t.knobs)
            t.setting = settings[point]
    out: list[Trial] = []
    seen: dict[tuple, Trial] = {}  # (experiment, seed, knobs) -> its trial
    runs: dict[str, Trial] = {}  # zoo key -> the trial that builds it
    for t in trials:
        where = (t.experiment, t.seed, tuple(sorted((k, repr(v)) for k, v in t.knobs.items())))
        if where in seen:
            continue  # the same run, left at the source's value above
        other = runs.get(t.key)
        if other is not None:
            raise ValueError(
                f"knobs {_cell_words(study, other)} and {_cell_words(study, t)} are not allowed "
                f"together in map {spec['name']!r}: they build the same run of {t.experiment} "
                f"(zoo key {t.key}), which would be two cells; leave one of them out")
        seen[where] = runs[t.key] = t
        t.index = t.group = len(out)
        out.append(t)
    return out, notes


def _reaches(study, name: str, seed: int, cells: list[Trial], knob: str) -> bool:
    """Whether ``knob`` changes experiment ``name``'s run in one of its ``cells`` (the trials of
    one seed): some cell's run differs from the same cell with ``knob`` at the source's value."""
    source = study_knobs.jsonable_value(study.knobs[knob].source)
    for t in cells:
        at = {k: study_knobs.jsonable_value(study.knobs[k].parse(v)) for k, v in t.knobs.items()}
        try:
            plain = study.named_experiments[name].make(
                Setting(t.size, {**at, knob: source}), seed).key(t.tag)
        except ValueError:  # that combination cannot be built: the knob matters here
            return True
        if plain != t.key:
            return True
    return False


def _cell_words(study, trial: Trial) -> str:
    """A trial's knobs as the table writes them: ``n_layers=1, offset=0``."""
    return ", ".join(f"{k}={study.knobs[k].text(study.knobs[k].parse(v))}"
                     for k, v in trial.knobs.items())


__all__ = ["MAP_KEYS", "MAX_MAP_SEEDS", "check_map", "load_map", "map_trials", "sweep_grid"]
