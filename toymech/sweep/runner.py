"""Running a sweep's trials through the zoo: the preflight of every trial, the runners (Ray core
tasks or this process), retries, Ctrl-C, the table. Imports only ``toymech.zoo`` and below.

Each trial is ``Zoo.get_or_train`` (its lock makes concurrent workers and a re-run after a kill
safe); a trial whose entry exists is done and read back, never run again, so a sweep is
resumable. Before the first trial trains, every trial's experiment passes the preflight
(``toymech.training.preflight``: task against model, memory against a limit, freeze patterns
against the parameter names, a forward pass): one that cannot run refuses the whole sweep.
A trial that fails is tried ``retries`` more times (its error is kept); one that diverges
(``status`` diverged) is not, since it would diverge again. Backends: Ray core (``pip install
'toymech[sweep]'``; an embedded local Ray started for the sweep, or an existing cluster by
``address``) or the in-process runner (``local``), which give the same table. The table is
rewritten atomically after every finished job. Trials that Ray workers trained or loaded are
added to this process's ``zoo_stats`` (the in-process runner's are counted by the zoo itself).
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from ..core import check, check_bool, check_float, check_int, check_path_writable_dir, source_commit
from ..devices import check_device, choose_threads, resolve_device
from ..models.reference import machine_record
from ..training import Experiment, live, preflight, seedless_key
from ..zoo import Zoo, ZooEntry, add_zoo_stats
from .backends import make_runner, outcome
from .table import (
    SweepResult,
    Trial,
    check_out,
    check_retries,
    explicit_trials,
    row,
    sweep_name,
    write_meta,
    write_table,
)

BACKENDS = ("auto", "ray", "local")


def choose_backend(backend: str, address: str | None) -> str:
    check(isinstance(backend, str) and backend in BACKENDS, "backend", backend,
          f"one of {', '.join(repr(b) for b in BACKENDS)}")
    check(address is None or (isinstance(address, str) and address.strip() != ""), "address",
          address, "None or a Ray address: 'auto', 'host:6379' or 'ray://host:10001'")
    has_ray = importlib.util.find_spec("ray") is not None
    if backend == "ray" or address:
        check(has_ray, "backend" if backend == "ray" else "address", backend if backend == "ray"
              else address, "the ray backend needs ray: pip install 'toymech[sweep]'")
    check(not (address and backend == "local"), "address", address,
          "None with backend='local' (an address is for the ray backend)")
    return "ray" if backend == "ray" or (backend == "auto" and has_ray) else "local"


def check_options(*, cache_dir, backend, address, out, retries, device, gpu_fraction, workers,
                  grid=None):
    """Every option of a sweep, checked before its grid is read: (backend, device, zoo, out);
    ``grid``: the grid's file, which ``out`` must not be."""
    which = choose_backend(backend, address)
    if retries is not None:
        check_retries(retries)
    device = check_device(device)
    if not address:  # the trials run on this machine: the device must exist here
        device = str(resolve_device(device)) if which == "local" or device != "auto" else device
    check_float("gpu_fraction", gpu_fraction, 0.0, 1.0, lo_open=True)
    if workers is not None:
        check_int("workers", workers, 1, 4096)
    zoo = Zoo(cache_dir)
    check_path_writable_dir("cache_dir", zoo.root)
    return which, device, zoo, None if out is None else check_out(out, grid)


def preflight_all(trials: list[Trial], device: str) -> None:
    """Every trial's experiment through the preflight (once per setting: seeds change no
    shape), naming the trial that cannot run."""
    dev = resolve_device(device)
    seen: set[str] = set()
    for trial in trials:
        key = seedless_key(trial.exp)
        if key in seen:
            continue
        seen.add(key)
        try:
            preflight(trial.exp, dev, keep_model=False)
        except ValueError as exc:
            raise ValueError(f"trial {trial.id}: {exc}") from None


def run_trials(trials: list[Trial], spec: dict[str, Any], *, which: str, device: str, zoo: Zoo,
               path: Path, retries: int, address: str | None = None, progress: bool = True,
               workers: int | None = None, gpu_fraction: float = 0.25, keep_ray: bool = False,
               lock_timeout: float | None = None, log: Callable[[str], None] | None = print,
               fallback: bool = False) -> SweepResult:
    """Run checked ``trials`` (see the module docstring) and write the table to ``path``.
    ``fallback``: when an embedded Ray cannot start, run the trials in local processes (one
    line says so) instead of failing (an explicit ``backend='ray'`` fails)."""
    progress, keep_ray = check_bool("progress", progress), check_bool("keep_ray", keep_ray)
    check(log is None or callable(log), "log", log, "None or a callable taking one line")
    preflight_all(trials, device if not address else "cpu")
    rows, todo = {}, {}  # todo: job -> indices of its trials not yet in the zoo
    for trial in trials:
        entry = _load_done(zoo, trial)
        rows[trial.index] = row(trial, "ok", outcome(entry)) if entry else row(trial, "pending")
        if entry is None:
            todo.setdefault(trial.group, []).append(trial.index)
    attempts = {job: 0 for job in todo}
    began = time.perf_counter()
    commit = source_commit() if todo else ""  # the code that trains, as it is now

    bar = tqdm(total=len(trials), initial=len(trials) - sum(map(len, todo.values())),
               desc="sweep", unit="trial", disable=not progress)
    runner, meta = None, {"requested": which, "backend": "none", "attempts": 0, "seconds": 0.0,
                          "outcome": "nothing to run"}
    try:
        if todo:
            runner, meta = make_runner(which, address, workers or max(1, min(choose_threads(),
                                                                             len(todo))),
                                       gpu_fraction, device, fallback, log)
        stack = spec.get("stack_seeds", False)
        stacked = True if stack == "always" else None if stack else False

        def submit(job: int) -> None:
            exps = [trials[i].exp.to_dict() for i in todo[job]]
            runner.submit(job, (exps, str(zoo.root), device, trials[todo[job][0]].tag, stacked),
                          {"lock_timeout": lock_timeout})

        for job in todo:
            submit(job)
        write_table(rows, path)
        finished = len(trials) - sum(map(len, todo.values()))
        if todo:
            live.sweep_progress(finished, len(trials))  # for a watcher ($TOYMECH_LIVE)
        while runner is not None and runner.pending():
            for job, outcomes in runner.wait():
                attempts[job] += 1
                failed = not all(o["ok"] for o in outcomes)
                diverged = failed and all(o.get("diverged") for o in outcomes if not o["ok"])
                if failed and not diverged and attempts[job] <= retries:
                    if log:  # above the bar, not through it
                        say = bar.write if progress and log is print else log
                        say(f"[toymech] sweep: {trials[todo[job][0]].id} failed (attempt "
                            f"{attempts[job]} of {retries + 1}): {outcomes[0]['error']}; retrying")
                    submit(job)
                    continue
                for i, o in zip(todo[job], outcomes):
                    status = "ok" if o["ok"] else "diverged" if o.get("diverged") else "failed"
                    rows[i] = row(trials[i], status, o, attempts[job])
                if runner.remote:  # what the workers did for this process
                    ran = [o for o in outcomes if o["ok"]]
                    add_zoo_stats(trained=sum(not o["loaded"] for o in ran),
                                  loaded=sum(o["loaded"] for o in ran),
                                  train_seconds=sum(o["seconds"] for o in ran if not o["loaded"]))
                bar.update(len(todo[job]))
                finished += len(todo[job])
                live.sweep_progress(finished, len(trials))
                write_table(rows, path)
    except KeyboardInterrupt:
        if runner is not None:
            runner.cancel()
        for i, r in rows.items():
            if r["status"] == "pending":
                rows[i] = row(trials[i], "cancelled", attempts=attempts.get(trials[i].group, 0))
        write_table(rows, path)
        raise
    finally:
        bar.close()
        live.sweep_done()
        if runner is not None and not keep_ray:
            runner.close()
    table = write_table(rows, path)
    if todo:  # what trained these rows: the commit, the machine and the wall time
        meta = {**meta, "commit": commit, "machine": machine_record(),
                "wall_s": round(time.perf_counter() - began, 1)}
    write_meta(meta, path)
    return SweepResult(table, trials, path, zoo.root, runner.name if runner else "none", meta)

def _load_done(zoo: Zoo, trial: Trial) -> ZooEntry | None:
    """The trial's entry when the zoo has it and it is sound (a damaged or unverified one is
    run again: ``get_or_train`` quarantines it)."""
    if not zoo.has(trial.exp, trial.tag):
        return None
    try:
        return zoo.load(trial.exp, device="cpu", tag=trial.tag, log=None)
    except ValueError:
        return None


def run_experiments(experiments: list[Experiment], *, cache_dir: str | Path | None = None,
                    name: str | None = None, stacked: bool | None = None,
                    backend: str = "auto", device: str = "auto", retries: int = 1,
                    tag: str = "", progress: bool = False, keep_ray: bool = True,
                    workers: int | None = None, lock_timeout: float | None = None,
                    log: Callable[[str], None] | None = None,
                    fallback: bool | None = None) -> SweepResult:
    """A sweep of explicit ``experiments`` (a study's grid) into the zoo, with one table
    (``<zoo>/sweeps/<name>.csv``); returns the ``SweepResult``. Those that differ only in their
    seeds train as one job, stacked where that pays (``stacked``: None), always (True) or never
    (False).

    ``cache_dir``: the zoo (None: ``$TOYMECH_CACHE``, else ``~/.cache/toymech``). ``name``: the
    table's name (None: one from the experiments' hash). ``backend``: auto, ray or local (as
    ``grid.run_sweep``). ``device``: where they train (``"auto"``: CUDA, else MPS, else CPU).
    ``retries``: tries after a trial's first failure. ``tag``: the zoo tag of their entries.
    ``progress``: a live line. ``keep_ray``: leave an embedded Ray running for the process's
    next sweep. ``workers``: trials at once (None: the free cores). ``lock_timeout``: the
    longest wait for another writer of an entry. ``log``: a print-like function for the run's
    lines (None: quiet). ``fallback`` (default: ``backend == 'auto'``): an embedded Ray that
    cannot start hands the trials to local processes instead of failing. Example:
    ``run_experiments([experiments.get("induction-1l", "smoke", s) for s in (0, 1)])``."""
    check(stacked is None or isinstance(stacked, bool), "stacked", stacked,
          "None (where it pays), True or False")
    which, device, zoo, _ = check_options(cache_dir=cache_dir, backend=backend, address=None,
                                          out=None, retries=retries, device=device,
                                          gpu_fraction=0.25, workers=workers)
    spec: dict[str, Any] = {"experiments": list(experiments), "retries": retries, "tag": tag,
                            "stack_seeds": "always" if stacked else stacked is None}
    if name:
        spec["name"] = name
    trials = explicit_trials(spec)
    path = zoo.root / "sweeps" / f"{sweep_name(spec)}.csv"
    return run_trials(trials, spec, which=which, device=device, zoo=zoo, path=path,
                      retries=retries, progress=progress, workers=workers, keep_ray=keep_ray,
                      lock_timeout=lock_timeout, log=log,
                      fallback=backend == "auto" if fallback is None else bool(fallback))
