"""Every core busy: the runs a zoo lacks, trained as one process per free core, one torch thread
each (``train_missing``). Imports only ``toymech.zoo`` and below.

Each run is ``Zoo.get_or_train`` in a child process (spawned, so no thread pool is forked), so
what it stores is what training it alone on one thread stores, under the entry's lock and
written atomically: a run killed half-way leaves no entry and trains again at the next call;
a second caller waiting on the same entry loads it. The longest runs start first, so the last
core is not left with the longest run alone.

Measured (``benchmarks/bench_map.py``, 2-core CPU): one process per core against one process on
the same cores, ratios in ``benchmarks/README.md``.
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import multiprocessing
from collections.abc import Callable, Sequence

import torch

from ..core import check, check_float, check_int, jsonable
from ..devices import choose_threads, resolve_device
from ..models.reference import REFERENCE_STEP_COST, run_cost
from ..training import Experiment, preflight, seedless_key
from ..training.resume import EXTENDABLE
from ..zoo import LockTimeout, Zoo, ZooEntry, add_zoo_stats, mark_trained
from .backends import one_line, resolve_callbacks, run_job

Progress = Callable[[int, int, Experiment], None]

# an automatic choice spawns processes only when the runs to train come to at least START_STEPS
# reference steps per worker (``models.reference.run_cost``), since each worker first imports
# torch and toymech (a few seconds: a smoke run is over before that)
START_STEPS = 200


def train_missing(zoo: Zoo, experiments: Sequence[Experiment], *, workers: int | None = None,
                  device: str | torch.device = "cpu", tag: str = "",
                  on_progress: Progress | None = None, log: Callable[[str], None] | None = None,
                  start_steps: float = START_STEPS, callbacks: str | None = None
                  ) -> list[ZooEntry]:
    """Train the ``experiments`` that ``zoo`` lacks, one process per free core, and return every
    experiment's entry (in the order given, read back from the zoo).

    workers: at most this many processes on a CPU (None: ``choose_threads()``, the free cores
        or ``$TOYMECH_THREADS``); never more than the runs to train, nor than their cost in
        reference steps over ``start_steps`` (what a worker's start-up must be worth; 0: no
        such limit). One worker, or a device other than the CPU, trains in this process one
        run after another (``Zoo.get_or_train_many``: a GPU stacks seeds where
        ``stacking_pays``).
    on_progress: called in this process as ``on_progress(done, total, experiment)`` after each
        run that trained (``total``: the runs that were missing).
    callbacks: ``"package.module:function"`` naming a function of an experiment that returns its
        callbacks (a study's probes: ``backends.resolve_callbacks``), rebuilt in each process.
    device: where they train (``"cpu"``: one process per worker; another device trains here).
    tag: the zoo tag of the entries (``Zoo.get_or_train``'s).
    log: a print-like function for the lines of runs that fail and are tried again (None:
        quiet).
    Every missing run's setting passes the preflight before anything starts; a run that fails
    is tried once more, then this raises RuntimeError naming it (the other runs are stored).
    """
    check(isinstance(zoo, Zoo), "zoo", zoo, "a toymech.zoo.Zoo")
    check(isinstance(experiments, (list, tuple)), "experiments", type(experiments).__name__,
          "a list of Experiments")
    for i, e in enumerate(experiments):
        check(isinstance(e, Experiment), f"experiments[{i}]", e,
              "an Experiment (toymech.experiments.get)")
    check(isinstance(tag, str), "tag", tag, "a string ('' for none)")
    check(on_progress is None or callable(on_progress), "on_progress", on_progress,
          "None or a callable (done, total, experiment)")
    check(log is None or callable(log), "log", log, "None or a callable taking one line")
    if workers is not None:
        check_int("workers", workers, 1, 4096)
    check_float("start_steps", start_steps, 0.0, 1e12)
    resolve_callbacks(callbacks)  # a bad path is refused here, before any work
    dev = resolve_device(device)
    experiments = list(experiments)
    missing, seen = [], set()
    for e in experiments:
        path = zoo.path(e, tag)
        if path not in seen and not zoo.has(e, tag):
            missing.append(e)
        seen.add(path)
    settings = {}
    for e in missing:  # seeds change no shape: one preflight per setting
        settings.setdefault(seedless_key(e), e)
    for e in settings.values():
        preflight(e, dev, keep_model=False)
    chains = _chains(missing)
    missing = [missing[i] for c in chains for i in c]  # the longest chains first
    n = min(len(missing), workers if workers is not None else choose_threads())
    if start_steps > 0:
        steps = sum(run_cost(e) for e in missing) / REFERENCE_STEP_COST
        n = max(1, min(n, int(steps // start_steps)))
    n = min(n, len(chains)) if chains else n
    if missing and (n <= 1 or dev.type != "cpu"):
        _in_process(zoo, missing, dev, tag, on_progress, log, callbacks)
    elif missing:
        _in_processes(zoo, missing, n, tag, on_progress, log, callbacks)
    return [zoo.load(e, dev, tag, log=None) for e in experiments]


def _chains(missing: Sequence[Experiment]) -> list[list[int]]:
    """``missing`` as chains of indices: the runs of one setting that differ only in their steps
    (a constant learning rate: ``resume.extend_refusal``) form one chain, shortest first, so
    that each continues the one before it (``Zoo.longest_continuable``); every other run is a chain of one.
    The chains come longest first (by their longest run's ``run_cost``)."""
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(missing):
        if e.train.schedule == "constant":
            d = e.to_dict()
            d.pop("name", None)
            for k in EXTENDABLE:
                d["train"].pop(k, None)
            key = json.dumps(jsonable(d), sort_keys=True)
        else:
            key = f"#{i}"
        groups.setdefault(key, []).append(i)
    chains = [sorted(g, key=lambda i: missing[i].train.steps) for g in groups.values()]
    return sorted(chains, key=lambda c: -run_cost(missing[c[-1]]))


def _in_process(zoo, missing, dev, tag, on_progress, log, callbacks=None) -> None:
    make = resolve_callbacks(callbacks)
    if dev.type != "cpu":
        zoo.get_or_train_many(missing, device=dev, tag=tag, log=log,
                              callbacks=[list(make(e)) for e in missing] if make else None)
        if on_progress:
            for i, e in enumerate(missing):
                on_progress(i + 1, len(missing), e)
        return
    errors: dict[int, str] = {}
    for i, e in enumerate(missing):
        try:
            zoo.get_or_train(e, device=dev, tag=tag, progress=False, log=log,
                             callbacks=list(make(e)) if make else ())
        except LockTimeout:
            raise  # another process holds the run past the lock timeout: no run failed
        except (ValueError, RuntimeError, OSError) as exc:  # the others still train
            errors[i] = one_line(exc)
            continue
        if on_progress:
            on_progress(i + 1 - len(errors), len(missing), e)
    if errors:
        i = min(errors)
        raise RuntimeError(f"{len(errors)} of {len(missing)} runs failed; first: "
                           f"{missing[i].name or missing[i].task.name} seed "
                           f"{missing[i].train.seed}: {errors[i]}")


def _in_processes(zoo, missing, workers, tag, on_progress, log, callbacks=None) -> None:
    """Each chain of runs (``_chains``: one run, or the step counts of one setting, shortest
    first) a job of a pool of ``workers`` spawned processes of one thread; a job that failed (a
    child killed or out of memory, a lock that timed out) runs once more."""
    chains = _chains(missing)
    attempts = {c: 0 for c in range(len(chains))}
    errors: dict[int, str] = {}
    counted: set[int] = set()
    todo = list(range(len(chains)))
    while todo:
        pool = futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            jobs = {pool.submit(run_job, [missing[i].to_dict() for i in chains[c]],
                                str(zoo.root), "cpu", tag, False, threads=1,
                                lock_timeout=zoo.lock_timeout, callbacks=callbacks): c
                    for c in todo}
            todo = []
            for fut in futures.as_completed(jobs):
                c = jobs[fut]
                attempts[c] += 1
                try:
                    outcomes = fut.result()
                except Exception as exc:  # the child died and took the pool with it
                    outcomes = [{"ok": False, "error": one_line(exc)}] * len(chains[c])
                retry = False
                for i, outcome in zip(chains[c], outcomes):
                    if outcome["ok"]:
                        errors.pop(i, None)
                        if i not in counted:  # a retried chain loads what it stored before
                            counted.add(i)
                            if not outcome.get("loaded"):  # trained for this process
                                add_zoo_stats(trained=1, train_seconds=outcome.get("seconds", 0.0))
                                mark_trained(zoo.path(missing[i], tag))
                            if on_progress:
                                on_progress(len(counted), len(missing), missing[i])
                        continue
                    if outcome.get("lock_timeout"):  # not a failed run: the wait ran out
                        raise LockTimeout(outcome["error"].removeprefix("LockTimeout: "))
                    errors[i] = outcome["error"]
                    retry = retry or (not outcome.get("diverged") and attempts[c] < 2)
                if retry:
                    todo.append(c)
                    e = missing[chains[c][0]]
                    if log:
                        log(f"[toymech] {e.name or e.task.name} seed {e.train.seed} failed "
                            f"({errors[next(i for i in chains[c] if i in errors)]}); trying again")
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    if errors:
        i = min(errors)
        e = missing[i]
        raise RuntimeError(f"{len(errors)} of {len(missing)} runs failed; first: "
                           f"{e.name or e.task.name} seed {e.train.seed}: {errors[i]}")
