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

``check_map`` checks every key before any work; ``sweep_grid`` is the sweep grid that trains the
map's runs (``toymech.grid``'s knobs axis).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import check, check_int, check_seed, check_size, short_repr
from ..studies import knobs as study_knobs, protocol
from ..training.specfiles import read_mapping

MAP_KEYS = ("study", "experiment", "size", "seeds", "seed", "knobs", "name", "until_converged")
MAX_STEPS = 10_000_000
MAX_MAP_SEEDS = 100


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
    names = spec.get("experiment") or [next(iter(study.named_experiments))]
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        check(isinstance(n, str) and n in study.named_experiments, "experiment", n,
              f"one of the study's: {', '.join(study.named_experiments)}")
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
    check(isinstance(label, str) and label.replace("-", "").replace("_", "").isalnum(), "name",
          label, "letters, digits, - and _")
    cap = spec.get("until_converged")
    if cap is not None:
        cap = check_int("until_converged", cap, 1, MAX_STEPS)
        check("steps" in study.knobs, "until_converged", cap,
              f"only for a study with a steps knob ({study_name} has none)")
        check("steps" not in given, "until_converged", cap,
              "a cap on the steps of runs still learning, or a steps knob in the map, not both")
    return {"study": study_name, "experiment": names, "size": size, "seeds": seeds,
            "knobs": given, "name": label, "until_converged": cap}


def sweep_grid(spec: dict[str, Any]) -> dict[str, Any]:
    """The sweep grid that trains the map's runs (the grid's knobs axis)."""
    return {"experiment": spec["experiment"], "size": spec["size"], "seed": spec["seeds"],
            "knobs": spec["knobs"], "name": f"map-{spec['name']}"}


__all__ = ["MAP_KEYS", "MAX_MAP_SEEDS", "check_map", "load_map", "sweep_grid"]
