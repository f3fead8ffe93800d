"""Maps: where a study's mechanism holds across a grid of its knobs and seeds, as one tidy table.

A map spec (a dict, or a JSON/YAML file holding one)::

    {"study": "induction",                       # a registered study with a ``map_row``
     "experiment": ["induction-2l"],             # its named experiments (a name or a list)
     "size": "default", "seeds": 3,              # a count (seeds no calibration used) or a list
     "knobs": {"block_len": [6, "5-7", "4-8"],   # the study's knobs, each a list of values
               "offset": [0, "0-3"]},
     "name": "s1-content"}                       # the table's name (default: the file's stem)

is a sweep grid over the study's knobs (``toymech.grid``: the knobs axis, so the runs train
through the one sweep machinery, resumable; on a CPU what the zoo lacks trains first as one
one-thread process per free core, ``sweep.train_missing``; on a GPU the runs sharing a model shape
as one stacked program where that measures faster; on Ray with ``backend="ray"``) followed by the
study's own
measurement of each run (``study.map_row(entry, size, seed)``: named numbers, properties and the
mechanism label of the run, a pure function of its measurements). ``run_map`` writes ONE tidy
table, one row per run: the experiment, every knob (the source's value where the cell leaves it),
the seed, the size, the zoo key, the commit, each number, each property (yes / no) and the
label, as ``<out>/<name>.csv`` and the same table as ``<out>/<name>.parquet`` (``read_table``
reads either). A later run of the
same map extends the table: rows whose zoo key is already there are read back, not measured
again. ``cells`` summarises the table per cell: runs, the share of seeds whose label is each
label, the median of each number. The figure is drawn from the table, never the other way round.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .core import check, check_int, check_seed, check_size, short_repr, source_commit
from .files import replace_file
from . import map_files
from .grid import expand_grid, run_sweep
from .maps_live import MapProgress
from .sweep import train_missing
from .studies import knobs as study_knobs, protocol
from .training.specfiles import read_mapping
from .zoo import Zoo

MAP_KEYS = ("study", "experiment", "size", "seeds", "seed", "knobs", "name")
MAX_MAP_SEEDS = 100


def load_map(path: str | Path) -> dict[str, Any]:
    """A map spec read from a ``.json``, ``.yaml`` or ``.yml`` file (strictly)."""
    return read_mapping(path, "map")


def check_map(spec: Any, name: str = "map") -> dict[str, Any]:
    """The spec with its defaults, every key checked (ValueError naming it) before any work:
    ``study`` (with a ``map_row``), ``experiment`` (its names), ``size``, ``seeds`` (a count of
    the study's judged seeds from ``seed``, or a list), ``knobs`` (the study's, checked by its
    ``with_knobs`` at every cell), ``name``."""
    check(isinstance(spec, dict), name, type(spec).__name__, "a mapping (JSON object)")
    unknown = sorted(set(spec) - set(MAP_KEYS))
    check(not unknown, "map key", unknown[0] if unknown else None, f"one of {', '.join(MAP_KEYS)}")
    study_name = spec.get("study")
    check(isinstance(study_name, str) and study_name in protocol.STUDIES, "study", study_name,
          f"one of {', '.join(protocol.STUDIES)}")
    study = protocol.study(study_name)
    check(callable(getattr(study, "map_row", None)), "study", study_name,
          "a study with a map measurement (map_row): "
          + ", ".join(s for s in protocol.STUDIES if hasattr(protocol.study(s), "map_row")))
    names = spec.get("experiment") or [next(iter(study.EXPERIMENTS))]
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        check(isinstance(n, str) and n in study.EXPERIMENTS, "experiment", n,
              f"one of the study's: {', '.join(study.EXPERIMENTS)}")
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
        study_knobs.parse_variant(study.KNOBS, {key: None} if key not in study.KNOBS else {},
                                  study_name)
        check(isinstance(values, list) and len(values) >= 1, f"knobs[{key!r}]", values,
              "a non-empty list of values")
        seen: dict[Any, Any] = {}
        for v in values:
            canonical = study.KNOBS[key].parse(v)
            check(canonical not in seen, f"knobs[{key!r}]", values,
                  f"each value once: {short_repr(seen.get(canonical))} and {short_repr(v)} are the same "
                  f"value ({study.KNOBS[key].text(canonical)})")
            seen[canonical] = v
    label = spec.get("name", "map")
    check(isinstance(label, str) and label.replace("-", "").replace("_", "").isalnum(), "name",
          label, "letters, digits, - and _")
    return {"study": study_name, "experiment": names, "size": size, "seeds": seeds,
            "knobs": given, "name": label}


def _grid(spec: dict[str, Any]) -> dict[str, Any]:
    """The sweep grid that trains the map's runs (the grid's knobs axis)."""
    return {"experiment": spec["experiment"], "size": spec["size"], "seed": spec["seeds"],
            "knobs": spec["knobs"], "name": f"map-{spec['name']}"}


def run_map(spec: dict[str, Any] | str | Path, *, cache_dir: str | Path | None = None,
            out: str | Path | None = None, backend: str = "auto", address: str | None = None,
            device: str = "auto", progress: bool = True, refine: int = 0,
            log: Callable[[str], None] | None = print) -> pd.DataFrame:
    """Train what the zoo lacks of ``spec``'s runs, measure every run with its study's
    ``map_row`` and write the tidy table (see the module docstring): returns it. ``out``: the
    table's folder (default: ``<zoo>/maps``). Killed and rerun, only the missing runs train and
    only the new rows are measured. ``refine``: then add up to that many runs where the map is
    unsure (``refinements``), their rows marked ``refined``."""
    stem = Path(spec).stem if isinstance(spec, (str, Path)) else "map"
    raw = load_map(spec) if isinstance(spec, (str, Path)) else dict(spec)
    raw.setdefault("name", stem)
    spec = check_map(raw)
    refine = check_int("refine", refine, 0, 10_000)
    study = protocol.study(spec["study"])
    zoo = Zoo(cache_dir)
    _check_measurable(spec, study)
    folder = map_files.check_out(out) if out is not None else zoo.root / "maps"
    map_files.check_files(folder, spec, study, read_table)  # nothing of the user's replaced
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{spec['name']}.csv"
    try:
        with contextlib.ExitStack() as stack:
            live = stack.enter_context(MapProgress(spec["name"])) if progress else None
            return _run_map(spec, study, zoo, folder, path, refine, live, log,
                            dict(zoo=zoo, backend=backend, address=address, device=device,
                                 log=log))
    finally:
        if created:  # a map that stopped before writing anything leaves no empty folder
            with contextlib.suppress(OSError):
                folder.rmdir()


def _check_measurable(spec: dict[str, Any], study) -> None:
    """Every cell's setting through the study's ``map_check`` (where it has one) before
    anything trains: a cell its measurement would refuse is refused now, naming its knobs."""
    measurable = getattr(study, "map_check", None)
    if measurable is None:
        return
    seen = set()
    for trial in expand_grid(_grid(spec)):
        knobs = {k.removeprefix("knob."): v for k, v in trial.overrides.items()
                 if k.startswith("knob.")}
        cell = (str(trial.size), tuple(sorted((k, str(v)) for k, v in knobs.items())))
        if cell in seen:
            continue
        seen.add(cell)
        try:
            measurable(study.with_knobs(trial.size, knobs))
        except ValueError as exc:
            given = ", ".join(f"{k}={_cell_text(study, k, v)}" for k, v in knobs.items())
            raise ValueError(f"knobs {given} cannot be measured by the {spec['study']} map "
                             f"({exc}): leave that value out of the map") from None


def _run_map(spec, study, zoo, folder, path, refine, live, log, how) -> pd.DataFrame:
    how["live"] = live
    table = _read(path, study)
    rows = _measured(spec, study, folder / f"{spec['name']}.runs.csv", table, False, **how)
    table = _save(folder, path, spec, study, rows, log)
    added = 0
    for i, part in enumerate(refinements(table, spec, refine) if refine else []):
        got = _measured(part, study, folder / f"{spec['name']}.refine-{i}.runs.csv", table, True,
                        **how)
        added += len(got)
        table = _save(folder, path, spec, study, got, log)
    if log:
        log(f"map {spec['name']}: {len(rows) + added} run(s) measured now ({added} refining), "
            f"{len(table) - len(rows) - added} read back; table: {path}")
    return table


def _save(folder: Path, path: Path, spec: dict[str, Any], study, rows: list[dict[str, Any]],
          log) -> pd.DataFrame:
    """Merge ``rows`` into the table under the map's lock: another writer of this map may have
    added rows meanwhile (re-read and checked here), so only the rows it lacks are added and
    none is lost; the files written are recorded as toymech's (``map_files``)."""
    with map_files.writing(folder, spec, log):
        map_files.check_recorded(folder, spec["name"], [path.name, path.with_suffix(".parquet").name])
        current = _read(path, study)
        known = set(current["zoo_key"]) if "zoo_key" in current else set()
        new = [r for r in rows if r["zoo_key"] not in known]
        table = pd.concat([current, pd.DataFrame(new)], ignore_index=True) if new else current
        _write(table, path)
        map_files.record(folder, spec)
    return table


def _measured(spec: dict[str, Any], study, runs_table: Path, done: pd.DataFrame, refined: bool,
              *, zoo: Zoo, backend: str, address: str | None, device: str,
              live: MapProgress | None, log) -> list[dict[str, Any]]:
    """The rows of ``spec``'s runs that ``done`` lacks: trained where the zoo lacks them (the
    sweep machinery), each measured by the study's ``map_row``."""
    if backend != "ray" and address is None:
        # what the zoo lacks trains first (``sweep.train_missing``): on a CPU one one-thread
        # process per free core; on a GPU in this process, the runs that share a model shape
        # (seeds, data knobs) as one stacked program where that measures faster
        # (``training.stacking``). The sweep below then reads every run back from the zoo.
        trials = expand_grid(_grid(spec))
        if live is not None:
            live.plan([(zoo.path(t.exp), _cell_key(t), t.exp) for t in trials],
                      {zoo.path(t.exp) for t in trials if zoo.has(t.exp)})
        on_progress = (lambda done, total, e: live.trained(zoo.path(e), _ran(zoo, e))) \
            if live else None
        try:
            train_missing(zoo, [t.exp for t in trials], device=device, log=log,
                          on_progress=on_progress)
        except RuntimeError as exc:  # a run that failed (diverged) is a row of the table: the
            if log:                  # sweep below records its status, the others are stored
                log(f"[toymech] {exc}")
        if live is not None:
            live.failed({zoo.path(t.exp) for t in trials if not zoo.has(t.exp)})
    result = run_sweep(_grid(spec), cache_dir=zoo.root, backend=backend, address=address,
                       out=runs_table, device=device,
                       progress=live is not None and (backend == "ray" or address is not None),
                       log=log)
    known = set(done["zoo_key"]) if "zoo_key" in done else set()
    commit = source_commit()
    rows = []
    for i, trial in enumerate(result.trials):
        if live is not None:
            live.measured(i, len(result.trials))
        key = trial.exp.key(trial.tag)
        if key in known:
            continue
        knobs = {k.removeprefix("knob."): v for k, v in trial.overrides.items()
                 if k.startswith("knob.")}
        row: dict[str, Any] = {"experiment": trial.experiment,
                               **{f"knob.{k}": _cell_text(study, k, v) for k, v in knobs.items()},
                               "seed": trial.seed, "size": str(trial.size), "zoo_key": key,
                               "commit": commit, "refined": refined}
        status = result.table.loc[result.table.index[i], "status"]
        if status != "ok":
            row.update({"status": status, "label": "not measured"})
        else:
            size = study.with_knobs(trial.size, knobs)
            row.update({"status": "ok", **study.map_row(result.entry(i, "cpu"), size, trial.seed)})
        row[map_files.ROW_HASH] = map_files.row_hash(row)  # what was measured, as measured
        rows.append(row)
    return rows


def _ran(zoo: Zoo, exp) -> float:
    """The share of its step budget a stored run trained (a stop rule may end it early; 1.0
    where its record does not say)."""
    try:
        meta = json.loads((zoo.path(exp) / "config.json").read_text(encoding="utf-8"))
        return float(meta["history"][-1]["step"]) / max(1, int(exp.train.steps))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return 1.0


def _cell_key(trial) -> tuple:
    """A trial's cell: its experiment and knob values (not its seed)."""
    return (trial.experiment, *sorted((k, str(v)) for k, v in trial.overrides.items()
                                      if k.startswith("knob.")))


def _cells_of(table: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    keys = ["experiment", *[c for c in table.columns if c.startswith("knob.")]]
    ok = table[table["status"] == "ok"] if "status" in table else table
    return {cell if isinstance(cell, tuple) else (cell,): runs
            for cell, runs in ok.groupby(keys, sort=False)}


def _midpoint(knob, a: str, b: str) -> str | None:
    """The value half way between two single numeric values of a knob, as the table writes it
    (None where there is none strictly between, or the knob is not a number)."""
    if knob.kind not in ("int", "ints", "float"):
        return None
    x, y = knob.parse(a), knob.parse(b)
    if isinstance(x, tuple) or isinstance(y, tuple):
        return None
    mid = (x + y) / 2 if knob.kind == "float" else (x + y) // 2
    return knob.text(knob.parse(mid)) if min(x, y) < mid < max(x, y) else None


def refinements(table: pd.DataFrame, spec: dict[str, Any], budget: int) -> list[dict[str, Any]]:
    """Up to ``budget`` more runs where the map is unsure, as map specs of one cell each:
    first a cell whose seeds disagree (more than one label) gets more seeds (the study's next
    judged seeds, one per split cell in turn, at most as many as it has); then, along a numeric knob, two neighbouring cells
    whose commonest labels differ get the value half way between them, with the map's seeds.
    ``spec``: the map's (``check_map``'s) spec."""
    study = protocol.study(spec["study"])
    cells = _cells_of(table)
    names = ["experiment", *[c.removeprefix("knob.") for c in table.columns
                             if c.startswith("knob.")]]
    used = {int(s) for s in table["seed"]}
    pool = [s for s in study.seeds_of(spec["size"], 0, MAX_MAP_SEEDS) if s not in used]
    split = [cell for cell, runs in cells.items() if runs["label"].nunique() > 1]
    more: dict[tuple, list[int]] = {cell: [] for cell in split}
    left = budget
    for _ in range(max((len(cells[c]) for c in split), default=0)):  # a seed per cell in turn,
        for cell in split:                                     # each at most doubling its seeds
            if left and pool and len(more[cell]) < len(cells[cell]):
                more[cell].append(pool.pop(0))
                left -= 1
    parts = [_one_cell(spec, names, cell, seeds) for cell, seeds in more.items() if seeds]
    top = {cell: runs["label"].mode().iloc[0] for cell, runs in cells.items()}
    seeds, planned = list(spec["seeds"]), set()
    for j, name in enumerate(names[1:], start=1):
        knob = study.KNOBS[name]
        for cell, other in ((a, b) for a in top for b in top
                            if a[:j] + a[j + 1:] == b[:j] + b[j + 1:] and a[j] != b[j]):
            if left < len(seeds):
                return parts
            mid = _midpoint(knob, cell[j], other[j])
            new = cell[:j] + (mid,) + cell[j + 1:]
            inside = any(_between(knob, c[j], cell[j], other[j]) for c in top
                         if c[:j] + c[j + 1:] == cell[:j] + cell[j + 1:])
            if mid is None or top[cell] == top[other] or inside or new in planned:
                continue  # not neighbours, the same label, or planned already
            parts.append(_one_cell(spec, names, new, seeds))
            planned.add(new)
            left -= len(seeds)
    return parts


def _between(knob, v: str, a: str, b: str) -> bool:
    """Whether ``v`` lies strictly between ``a`` and ``b`` (single numeric values)."""
    try:
        x, lo, hi = knob.parse(v), *sorted((knob.parse(a), knob.parse(b)))
    except (TypeError, ValueError):
        return False
    return not isinstance(x, tuple) and lo < x < hi


def _one_cell(spec: dict[str, Any], names: list[str], cell: tuple, seeds: list[int]
              ) -> dict[str, Any]:
    """A map spec of one cell (checked as every map is)."""
    return check_map({**spec, "experiment": [cell[0]], "seeds": list(seeds),
                      "knobs": {n: [v] for n, v in zip(names[1:], cell[1:])}})


def _cell_text(study, knob: str, value: Any) -> str:
    """A knob's value in the table, as a reader writes it (``4-8``)."""
    k = study.KNOBS[knob]
    return k.text(k.parse(value))


TEXT_COLUMNS = ("experiment", "size", "zoo_key", "commit", "status", "label")


def read_table(path: str | Path) -> pd.DataFrame:
    """A map's table as ``toymech map`` wrote it, from its ``.csv`` or its ``.parquet``: the
    same frame either way (knobs, keys and labels as text)."""
    path = Path(path)
    check(path.is_file(), "map table", str(path), "a table written by toymech map (.csv, .parquet)")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    header = pd.read_csv(path, nrows=0).columns
    table = pd.read_csv(path, dtype={c: str for c in header
                                     if c.startswith("knob.") or c in TEXT_COLUMNS})
    if "refined" in table:  # True / False as written (a bool column, as Parquet keeps it)
        table["refined"] = table["refined"].map(lambda v: v is True or str(v) == "True")
    return table


def _read(path: Path, study) -> pd.DataFrame:
    """The map's table so far, every row checked (``map_files.verify_rows``); empty if none."""
    if not path.is_file():
        return pd.DataFrame()
    try:
        table = read_table(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"map table={str(path)!r} is not allowed: a table written by toymech map "
                         f"(reading it gives {type(exc).__name__}); move it aside to start "
                         "again") from None
    if len(table):
        map_files.verify_rows(table, path, study)
    return table


def _write(table: pd.DataFrame, path: Path) -> None:
    """The table as CSV and, beside it, as Parquet (each atomically: a killed write leaves the
    last good table). Text columns are written as text, so both read back as the same frame."""
    table = table.assign(**{c: table[c].map(lambda v: v if pd.isna(v) else str(v))
                            for c in table.columns if c.startswith("knob.") or c in TEXT_COLUMNS})
    if "refined" in table:  # rows of a map measured before it was refined: not refined
        table = table.assign(refined=table["refined"].map(lambda v: v is True))
    replace_file(path, lambda tmp: table.to_csv(tmp, index=False))
    parquet = path.with_suffix(".parquet")
    replace_file(parquet, lambda tmp: table.to_parquet(tmp, index=False))


def cells(table: pd.DataFrame, numbers: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per cell (the experiment and every knob): runs, how many seeds carry each label
    (``share <label>``: a fraction), and the median of each of ``numbers``."""
    check(isinstance(table, pd.DataFrame) and "label" in table, "table", type(table).__name__,
          "a map table (toymech map)")
    keys = ["experiment", *[c for c in table.columns if c.startswith("knob.")]]
    out = []
    for cell, runs in table.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, cell if isinstance(cell, tuple) else (cell,)))
        row["runs"] = len(runs)
        for label, n in runs["label"].value_counts().items():
            row[f"share {label}"] = n / len(runs)
        for name in numbers:
            if name in runs:
                vals = pd.to_numeric(runs[name], errors="coerce").dropna()
                row[f"median {name}"] = float(vals.median()) if len(vals) else math.nan
        out.append(row)
    return pd.DataFrame(out).fillna({c: 0.0 for c in pd.DataFrame(out).columns
                                     if c.startswith("share ")})


def finding(table: pd.DataFrame, label: str) -> str:
    """The map's finding in words, computed from the table: in which cells the label holds on
    every seed, on some, on none."""
    c = cells(table)
    share = c.get(f"share {label}", pd.Series(0.0, index=c.index))
    knob_cols = [k for k in c.columns if k.startswith("knob.")]

    def name(row) -> str:
        return ", ".join(f"{k.removeprefix('knob.')} {row[k]}" for k in knob_cols) + \
            (f" ({row['experiment']})" if c["experiment"].nunique() > 1 else "")

    every = [name(r) for (_, r), s in zip(c.iterrows(), share) if s == 1.0]
    some = [name(r) for (_, r), s in zip(c.iterrows(), share) if 0 < s < 1]
    runs = int(c["runs"].min()) if len(c) else 0
    parts = [f"Label '{label}' on every seed in {len(every)} of {len(c)} cells"
             + (f" ({'; '.join(every)})" if every else "")]
    if some:
        parts.append(f"on some seeds in {len(some)} ({'; '.join(some)})")
    parts.append(f"on none in {len(c) - len(every) - len(some)}")
    return ", ".join(parts) + f"; at least {runs} seed(s) per cell."


__all__ = ["cells", "check_map", "finding", "load_map", "read_table", "refinements", "run_map"]
