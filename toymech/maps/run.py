"""Maps: where a study's mechanism holds across a grid of its knobs and seeds, as one tidy table.

A map spec (``maps.spec``: a study, its experiments, a size, seeds and values per knob)
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
reads either), and beside them what building the table cost, ``<out>/<name>.cost.json``
(``maps.cost_record``: one entry per invocation that trained or measured a run). A later run of the
same map extends the table: rows whose zoo key is already there are read back, not measured
again. ``cells`` summarises the table per cell: runs, the share of seeds whose label is each
label, the median of each number. The figure is drawn from the table, never the other way round.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import check, check_bool, check_int, check_path_writable_dir, source_commit
from ..models.reference import reference_steps, training_cost
from ..studies import protocol
from ..studies.states import BUDGET_EXHAUSTED, STILL_LEARNING
from ..sweep import train_missing
from ..sweep.runner import check_options, preflight_all, run_trials
from ..sweep.table import Trial
from ..zoo import Zoo, inventory
from ..zoo.locks import LockTimeout
from . import ledger
from .cost_record import Invocation, add_invocation
from .live import MapProgress
from .refine import refinements
from .spec import check_map, load_map, map_trials
from .summary import budget_state, cell_key
from .table import (
    is_blank,
    is_knob_column,
    knob_column,
    knob_columns,
    read_or_empty,
    read_table,
    row_knobs,
    write_table,
)


def run_map(spec: dict[str, Any] | str | Path, *, cache_dir: str | Path | None = None,
            out: str | Path | None = None, backend: str = "auto", address: str | None = None,
            device: str = "auto", progress: bool = True, refine: int = 0,
            lock_timeout: float | None = None, confirm_cost: bool = False,
            log: Callable[[str], None] | None = print, command: str | None = None
            ) -> pd.DataFrame:
    """Train what the zoo lacks of ``spec``'s runs, measure every run with its study's
    ``map_row`` and write the tidy table (see the module docstring): returns it. ``out``: the
    table's folder (default: ``<zoo>/maps``). Killed and rerun, only the missing runs train and
    only the new rows are measured. ``refine``: then add up to that many runs where the map is
    unsure (``refinements``), their rows marked ``refined``.

    ``spec``: a map spec (dict) or the path of a JSON/YAML file holding one (``check_map``);
    ``cache_dir``: the zoo (None: ``$TOYMECH_CACHE``, else ``~/.cache/toymech``); ``backend``:
    ``auto``, ``local`` or ``ray`` (as ``grid.run_sweep``), ``address``: a Ray cluster to join;
    ``device``: where the runs train (``"auto"``: CUDA, else MPS, else CPU; on a GPU the runs of
    one model shape train stacked); ``progress``: the live line; ``lock_timeout``: the longest
    wait, in seconds, for another process holding a zoo entry or this map's table (None:
    ``$TOYMECH_LOCK_TIMEOUT``, else 6 hours; then ``LockTimeout`` naming the holder, nothing
    written); ``confirm_cost``: train at ``smoke`` runs above its budget
    (``models.reference.training_cost``: the cost of the runs to train is said first, in
    reference steps and wall time here); ``log``: a print-like function for the run's lines
    (None: quiet); ``command``: the command line that asked for this run, as typed, for the cost
    record (``maps.cost_record``, written in its public form; None: a call from Python). Raises
    ``ValueError`` for a bad spec or option (one line naming it) before any run trains. Example::

        table = run_map("specs/maps/s1-content.yaml", backend="local")
        print(finding(table, "content"))
    """
    stem = Path(spec).stem if isinstance(spec, (str, Path)) else "map"
    raw = load_map(spec) if isinstance(spec, (str, Path)) else dict(spec)
    raw.setdefault("name", stem)
    spec = check_map(raw)
    refine = check_int("refine", refine, 0, 10_000)
    confirm_cost = check_bool("confirm_cost", confirm_cost)
    study = protocol.study(spec["study"])
    zoo = Zoo(cache_dir, lock_timeout=lock_timeout)
    trials, notes = map_trials(spec)  # a knob reaching no run, or one run in two cells: refused
    _check_measurable(spec, study, trials)
    panel = _panel(spec, study, trials)
    folder = ledger.check_out(out) if out is not None else zoo.root / "maps"
    ledger.check_files(folder, spec, study, lambda p: read_table(p, verify=False))
    path = folder / f"{spec['name']}.csv"
    invocation = Invocation.begin(command, device if address is None else "cpu", path)
    inventory.check_root(zoo.root)
    check_path_writable_dir("zoo", zoo.root)
    missing = {str(zoo.path(t.exp)): t for t in trials if not zoo.has(t.exp)}
    preflight_all(list(missing.values()), device if address is None else "cpu")
    missing = {path: t.exp for path, t in missing.items()}
    training_cost(list(missing.values()), spec["size"], confirmed=confirm_cost,
                  what=f"map {spec['name']}: ", log=log)  # said, or refused, before any work
    if log:
        for line in notes + _calibration_notes(spec, study) + _policy_cost(spec, trials):
            log(line)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        ledger.claim(folder, spec, log, lock_timeout)
        with contextlib.ExitStack() as stack:
            live = stack.enter_context(MapProgress(spec["name"])) if progress else None
            table = _run_map(spec, study, zoo, folder, path, refine, live, log,
                             dict(zoo=zoo, backend=backend, address=address, device=device,
                                  log=log, panel=panel, lock_timeout=lock_timeout,
                                  invocation=invocation))
        written = add_invocation(folder, spec, invocation, log, lock_timeout)
        if log and written is not None:
            log(f"map {spec['name']}: its cost recorded in {written}")
        return table
    finally:
        if created:  # a map that stopped before writing anything leaves no empty folder
            with contextlib.suppress(OSError):
                folder.rmdir()


def _policy_cost(spec: dict[str, Any], trials) -> list[str]:
    """One line bounding what the budget policy may add: every run continued to the cap."""
    cap = spec.get("until_converged")
    if not cap:
        return []
    more = sum(reference_steps([t.exp]) * (cap / t.exp.train.steps - 1) for t in trials)
    return [f"map {spec['name']}: the budget policy may continue runs still learning up to "
            f"{cap:,} steps: at most about {more:,.0f} reference steps more"]


def _calibration_notes(spec: dict[str, Any], study) -> list[str]:
    """One line where the map's seeds include the study's calibration seeds at its size (the
    seeds its thresholds were chosen on): their rows are marked (``calibration``)."""
    tuned = _calibration_seeds(spec, study)
    used = [s for s in spec["seeds"] if s in tuned]
    if not used:
        return []
    return [f"map {spec['name']}: seed(s) {', '.join(map(str, used))} are the {spec['study']} "
            f"study's calibration seeds at {spec['size']} (its thresholds were chosen on them): "
            "their rows are marked calibration=True and are no independent evidence"]


def _calibration_seeds(spec: dict[str, Any], study) -> set[int]:
    settings = getattr(study, "settings", None)
    return set(settings.calibration_seeds(spec["size"])) if settings is not None else set()


def _settings(trials) -> list[Trial]:
    """One trial per distinct knob point (size and knobs as the grid gives them) of the map's
    ``trials`` (``spec.map_trials``), in grid order: its ``setting`` is a setting the map's
    cells are at (a cell is one experiment at one of them, ``summary.cell_key``)."""
    out, seen = [], set()
    for trial in trials:
        key = (trial.size, tuple(sorted((k, str(v)) for k, v in trial.knobs.items())))
        if key not in seen:
            seen.add(key)
            out.append(trial)
    return out


def _check_measurable(spec: dict[str, Any], study, trials) -> None:
    """Every cell's setting through the study's ``map_check`` before anything trains: a cell
    its measurement would refuse is refused now, naming its knobs."""
    for trial in _settings(trials):
        try:
            study.map_check(trial.setting)
        except ValueError as exc:
            given = ", ".join(f"{k}={_cell_text(study, k, v)}" for k, v in trial.knobs.items())
            raise ValueError(f"knobs {given} cannot be measured by the {spec['study']} map "
                             f"({exc}): leave that value out of the map") from None


def _panel(spec: dict[str, Any], study, trials):
    """The map's one test panel, built from every cell of ``spec`` (the study's ``map_panel``),
    or None for a study whose rows need none: every run of the map, refinements and runs
    continued by the budget policy included, is judged on it."""
    return study.map_panel([trial.setting for trial in _settings(trials)])


def _run_map(spec, study, zoo, folder, path, refine, live, log, how) -> pd.DataFrame:
    how["live"] = live
    table = _read(path, study)
    table = _unhashed(spec, study, folder, path, table, log, how)
    rows = _measured(spec, study, folder / f"{spec['name']}.runs.csv", table, False, **how)
    table = _save(folder, path, spec, study, rows, log, timeout=how["lock_timeout"])
    table = _until_converged(spec, study, folder, path, table, log, how)
    added = 0
    for part in (refinements(table, spec, refine) if refine else []):
        got = _measured(part, study, _part_file(folder, spec["name"], "refine", part), table,
                        True, **how)
        added += len(got)
        table = _save(folder, path, spec, study, got, log, timeout=how["lock_timeout"])
        table = _until_converged(spec, study, folder, path, table, log, how)
    if log:
        log(f"map {spec['name']}: {len(rows) + added} run(s) measured now ({added} refining), "
            f"{len(table) - len(rows) - added} read back; table: {path}")
    return table


def _still_learning(table: pd.DataFrame, spec: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The map specs (one run each, with whether the run was a refinement) that continue
    ``table``'s runs still learning below the cap of ``spec``'s budget policy (a run out of an
    earlier, lower budget included): their steps doubled, at most the cap."""
    cap = spec.get("until_converged")
    if not cap or "state" not in table or "steps" not in table:
        return []
    parts = []
    columns = knob_columns(table)
    for _, row in table[table["state"].astype(str).isin((STILL_LEARNING, BUDGET_EXHAUSTED))
                        ].iterrows():
        steps = row["steps"]
        check(not pd.isna(steps) and str(steps).strip() != "", "steps", steps,
              f"the budget policy (until_converged) continues a run from its row's steps column, "
              f"which run {row.get('zoo_key')}'s row lacks (a table written before the column): "
              f"measure the map again into an empty out folder, its runs are read from the zoo")
        steps = int(float(steps))
        if steps >= cap:
            continue
        parts.append(({**spec, "experiment": [str(row["experiment"])], "seeds": [int(row["seed"])],
                       "knobs": {**row_knobs(row, columns), "steps": [min(cap, 2 * steps)]}},
                      str(row.get("refined")) == "True"))
    return parts


def _unhashed(spec, study, folder, path, table, log, how) -> pd.DataFrame:
    """Rows without their hash (``ledger.unhashed``: a table from before row hashes, a hash
    blanked or its column removed) are never taken as toymech measured them: each row's run is
    measured again from the zoo (trained where the zoo lacks it) and compared with the row. A
    row whose values differ from its run's is a ValueError naming the row, the column and both
    values (nothing written); otherwise the rows are written back as measured now, with their
    hashes."""
    where = ledger.unhashed(table)
    if not where:
        return table
    if log:
        log(f"map {spec['name']}: {len(where)} row(s) of {path.name} without a row hash: measured "
            "again from the zoo and compared before the table is extended")
    columns = knob_columns(table)
    done = table.drop(index=table.index[where])
    parts: dict[str, tuple[dict[str, Any], bool, list[int]]] = {}  # one per cell: its seeds
    for i in where:
        row = table.iloc[i].to_dict()
        knobs = row_knobs(row, columns)
        if spec.get("until_converged") and not is_blank(row.get("steps")):
            knobs["steps"] = [int(float(row["steps"]))]  # the run the policy continued
        part = {**spec, "experiment": [str(row["experiment"])], "seeds": [], "knobs": knobs}
        refined = row.get("refined") is True
        key = json.dumps([part["experiment"], knobs, refined], sort_keys=True, default=str)
        parts.setdefault(key, (part, refined, []))[2].append(i)
    measured: dict[str, dict[str, Any]] = {}
    for part, refined, rows in parts.values():
        part["seeds"] = [int(table.iloc[i]["seed"]) for i in rows]
        got = _measured(part, study, _part_file(folder, spec["name"], "remeasure", part), done,
                        refined, **how)
        measured.update({r["zoo_key"]: r for r in got})
    for i in where:
        row = table.iloc[i].to_dict()
        differs = ledger.differences(row, measured.get(row["zoo_key"]))
        if differs:
            raise ValueError(
                f"map table={str(path)!r} row {i + 1} (zoo key {row['zoo_key']}) is not allowed: "
                f"it has no row hash, and {differs}; move the table aside to measure the map "
                "again")
    return _save(folder, path, spec, study, list(measured.values()), log, replace="same",
                 timeout=how["lock_timeout"])


def _until_converged(spec, study, folder, path, table, log, how) -> pd.DataFrame:
    """The budget policy (``maps.spec``): continue the runs still learning, measure them again
    and replace their rows, until none is still learning below the cap."""
    round_ = 0
    while True:
        parts = _still_learning(table, spec)
        if not parts:
            return table
        round_ += 1
        if log:
            log(f"map {spec['name']}: {len(parts)} run(s) still learning, continued "
                f"(round {round_}, cap {spec['until_converged']} steps)")
        got = []
        for part, refined in parts:
            got += _measured(part, study, _part_file(folder, spec["name"], "converge", part),
                             table, refined, **how)
        if not got:  # nothing measured anew (every continued run known): nothing to continue
            return table
        table = _save(folder, path, spec, study, got, log, replace=True,
                      timeout=how["lock_timeout"])


def _part_file(folder: Path, name: str, kind: str, part: dict[str, Any]) -> Path:
    """The runs table of one part of a map (a refinement or a continued run): named by what it
    runs (experiment, seeds, knobs, steps), so no later round, refinement or invocation of the
    map writes over another part's file."""
    what = json.dumps({k: part[k] for k in ("experiment", "seeds", "knobs")}, sort_keys=True,
                      default=str)
    return folder / f"{name}.{kind}-{hashlib.sha256(what.encode()).hexdigest()[:12]}.runs.csv"


def _read(path: Path, study) -> pd.DataFrame:
    """The map's table so far, every row checked (``ledger.verify_rows``; rows without a hash
    pass here, to be measured again: ``_unhashed``); empty if none."""
    table = read_or_empty(path)
    if len(table):
        ledger.verify_rows(table, path, study, remeasure=True)
    return table


def _run_of(row) -> tuple:
    """A row's run apart from its steps: its experiment, knob values and seed."""
    return (str(row["experiment"]), str(int(float(row["seed"]))),
            *sorted((k, str(v)) for k, v in row.items() if is_knob_column(k) and not is_blank(v)))


def _save(folder: Path, path: Path, spec: dict[str, Any], study, rows: list[dict[str, Any]],
          log, replace: bool | str = False, timeout: float | None = None) -> pd.DataFrame:
    """Merge ``rows`` into the table under the map's lock: another writer of this map may have
    added rows meanwhile (re-read and checked here), so only the rows it lacks are added and
    none is lost; the files written are recorded as toymech's (``ledger``). ``replace``: each
    row replaces the shorter run of its experiment, knobs and seed (the budget policy's);
    ``"same"``: each row replaces the row of the same zoo key (measured again). A run is one
    row whatever policy wrote it: a row of a run the table holds under another zoo key is a
    ValueError, never a second row."""
    with ledger.writing(folder, spec, log, timeout):
        ledger.check_recorded(folder, spec["name"], [path.name, path.with_suffix(".parquet").name])
        current = _read(path, study)
        if replace == "same" and len(current):
            again = {r["zoo_key"]: r for r in rows}
            current = pd.DataFrame([again.get(r["zoo_key"], r) for r in current.to_dict("records")],
                                   columns=list(dict.fromkeys(
                                       [*current.columns, *(c for r in rows for c in r)])))
            rows, replace = [], False
        known = set(current["zoo_key"]) if "zoo_key" in current else set()
        new = [r for r in rows if r["zoo_key"] not in known]
        if replace and new and len(current):
            # each longer run takes the place of its shorter row: the table keeps its cells'
            # order (the grid's), which the page and the findings read
            longer = {_run_of(r): r for r in new}
            rows, placed = [], set()
            for r in current.to_dict("records"):
                run = _run_of(r)
                if run in longer and int(r.get("steps", 0)) < int(longer[run]["steps"]):
                    rows.append(longer[run])
                    placed.add(run)
                else:
                    rows.append(r)
            new = [r for r in new if _run_of(r) not in placed]
            current = pd.DataFrame(rows, columns=list(dict.fromkeys(
                [*current.columns, *(c for r in rows for c in r)])))
        runs = {_run_of(r): r["zoo_key"] for r in current.to_dict("records")}
        for r in new:  # never a second row of one run (another policy's, another zoo key)
            check(_run_of(r) not in runs, f"map {spec['name']} run", r["zoo_key"],
                  f"a run the table does not hold under another zoo key ({runs.get(_run_of(r))}: "
                  "the same experiment, knobs and seed); move the table aside to measure the "
                  "map again")
        table = pd.concat([current, pd.DataFrame(new)], ignore_index=True) if new else current
        write_table(table, path)
        ledger.record(folder, spec)
    return table


def _measured(spec: dict[str, Any], study, runs_table: Path, done: pd.DataFrame, refined: bool,
              *, zoo: Zoo, backend: str, address: str | None, device: str,
              live: MapProgress | None, log, panel=None,
              lock_timeout: float | None = None,
              invocation: Invocation | None = None) -> list[dict[str, Any]]:
    """The rows of ``spec``'s runs that ``done`` lacks: trained where the zoo lacks them (the
    sweep machinery), each measured by the study's ``map_row``. A lock on a run that another
    process holds past ``lock_timeout`` ends the map (``LockTimeout``: no row of it written).
    ``invocation``: counts the runs trained, measured, loaded and failed (its cost record)."""
    trials, _ = map_trials(spec)
    lacked = {zoo.path(t.exp): t.exp for t in trials if not zoo.has(t.exp)}  # to train now
    if backend != "ray" and address is None:
        # what the zoo lacks trains first (``sweep.train_missing``): on a CPU one one-thread
        # process per free core; on a GPU in this process, the runs that share a model shape
        # (seeds, data knobs) as one stacked program where that measures faster
        # (``training.stacking``). The sweep below then reads every run back from the zoo.
        if live is not None:
            live.plan([(zoo.path(t.exp), _cell_key(study, t), t.exp) for t in trials],
                      {zoo.path(t.exp) for t in trials if zoo.has(t.exp)})
        on_progress = (lambda done, total, e: live.trained(zoo.path(e), trained_share(zoo, e))) \
            if live else None
        try:
            train_missing(zoo, [t.exp for t in trials], device=device, log=log,
                          on_progress=on_progress)
        except LockTimeout:
            raise  # waited for another writer long enough: the map ends, nothing written
        except RuntimeError as exc:  # a run that failed (diverged) is a row of the table: the
            if log:                  # sweep below records its status, the others are stored
                log(f"[toymech] {exc}")
        if live is not None:
            live.failed({zoo.path(t.exp) for t in trials if not zoo.has(t.exp)})
    which, device, _, out = check_options(cache_dir=zoo.root, backend=backend, address=address,
                                          out=runs_table, retries=None, device=device,
                                          gpu_fraction=0.25, workers=None)
    result = run_trials(trials, {}, which=which, device=device, zoo=zoo, path=out, retries=1,
                        address=address,
                        progress=live is not None and (backend == "ray" or address is not None),
                        lock_timeout=lock_timeout, log=log, fallback=backend == "auto")
    if invocation is not None:
        invocation.count("trained", sum(zoo.has(exp) for exp in lacked.values()))
    known = set(done["zoo_key"]) if "zoo_key" in done else set()
    # under the budget policy a run continued past its first steps has a row of the longer run
    # (another zoo key): the shorter run's row is not added back when the map is read again
    longer = ({_run_of(r): int(r["steps"]) for r in done.to_dict("records")}
              if spec.get("until_converged") and "steps" in done else {})
    commit = source_commit()
    tuned = _calibration_seeds(spec, study)  # rows of these seeds are marked
    rows = []
    for i, trial in enumerate(result.trials):
        if live is not None:
            live.measured(i, len(result.trials))
        key = trial.exp.key(trial.tag)
        if key in known:
            continue
        shown = {k: v for k, v in trial.knobs.items()
                 if not (k == "steps" and spec.get("until_converged"))}  # the policy's, not a cell's
        row: dict[str, Any] = {"study": spec["study"], "experiment": trial.experiment,
                               **{knob_column(k): _cell_text(study, k, v) for k, v in shown.items()},
                               "seed": trial.seed, "size": trial.size,
                               "steps": int(trial.exp.train.steps), "zoo_key": key,
                               "commit": commit, "refined": refined,
                               "calibration": trial.seed in tuned}
        if longer.get(_run_of(row), -1) >= row["steps"]:
            continue
        status = result.table.loc[result.table.index[i], "status"]
        if status != "ok":
            row.update({"status": status, "label": "not measured"})
        else:
            extra = {"panel": panel} if panel is not None else {}
            row.update({"status": "ok", **study.map_row(result.entry(i, "cpu"), trial.setting,
                                                        trial.seed, **extra)})
            if "state" in row:  # the map's budget, which the study does not know
                row["state"] = budget_state(row["state"], row["steps"], spec.get("until_converged"))
        row[ledger.ROW_HASH] = ledger.row_hash(row)  # what was measured, as measured
        rows.append(row)
        if invocation is not None:
            if status != "ok":
                invocation.count("failed")
            else:
                invocation.count("measured")
                invocation.count("loaded", zoo.path(trial.exp) not in lacked)
    return rows


def trained_share(zoo: Zoo, exp) -> float:
    """The share of its step budget a stored run trained (a stop rule may end it early; 1.0
    where its record does not say)."""
    try:
        meta = json.loads((zoo.path(exp) / "config.json").read_text(encoding="utf-8"))
        return float(meta["history"][-1]["step"]) / max(1, int(exp.train.steps))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return 1.0


def _cell_key(study, trial) -> tuple:
    """A trial's cell (``summary.cell_key``: its experiment and knob values as the table writes
    them, not its seed), so the live line counts the cells the table will have."""
    return cell_key(trial.experiment, {k: _cell_text(study, k, v) for k, v in trial.knobs.items()})


def _cell_text(study, knob: str, value: Any) -> str:
    """A knob's value in the table, as a reader writes it (``4-8``)."""
    k = study.knobs[knob]
    return k.text(k.parse(value))


__all__ = ["run_map", "trained_share"]
