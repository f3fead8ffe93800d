"""Running a sweep's trials through the zoo: the preflight of every trial, the runners (Ray core
tasks or this process), retries, Ctrl-C, the table. Imports only ``toymech.training`` and below.

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
import logging
import time
from pathlib import Path
from typing import Any, Callable

import torch
from tqdm.auto import tqdm

from ..core import check, check_bool, check_float, check_int, check_path_writable_dir
from ..devices import check_device, choose_threads, resolve_device
from ..training import (Experiment, TrainingDiverged, Zoo, ZooEntry, add_zoo_stats, preflight,
                        seedless_key)
from .table import (SweepResult, Trial, check_out, check_retries, explicit_trials, row, sweep_name,
                    write_table)

BACKENDS = ("auto", "ray", "local")


def run_job(exp_dicts: list[dict[str, Any]], cache_dir: str, device: str, tag: str,
            stacked: bool | None, threads: int | None = None,
            lock_timeout: float | None = None) -> list[dict[str, Any]]:
    """Train or load one job's experiments through the zoo; one outcome per experiment:
    ``{"ok": True, "final", "seconds", "device", "entry", "loaded"}`` or
    ``{"ok": False, "error", "diverged"}`` (the exception in one line). Never raises an
    ``Exception``."""
    started = time.perf_counter()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        exps = [Experiment.from_dict(d) for d in exp_dicts]
        zoo = Zoo(cache_dir, lock_timeout=lock_timeout)
        if len(exps) == 1:
            entries = [zoo.get_or_train(exps[0], device=device, tag=tag, progress=False, log=None)]
        else:
            entries = zoo.get_or_train_many(exps, device=device, tag=tag, stacked=stacked,
                                            progress=False, log=None)
    except Exception as exc:  # reported in the table, not raised: the other trials go on
        error = {"ok": False, "error": one_line(exc), "device": str(device),
                 "diverged": isinstance(exc, TrainingDiverged),
                 "seconds": time.perf_counter() - started}
        return [dict(error) for _ in exp_dicts]
    return [outcome(e) for e in entries]


def outcome(entry: ZooEntry) -> dict[str, Any]:
    final = {k: float(v) for k, v in entry.final.items()
             if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"ok": True, "final": final, "seconds": float(entry.meta.get("seconds") or 0.0),
            "device": str(entry.meta.get("device", "")), "entry": entry.path.name,
            "loaded": bool(entry.loaded)}


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__name__}: {text}"[:500]


class LocalRunner:
    """Runs the jobs one after another in this process (``wait`` runs the next one)."""

    name, remote = "local", False

    def __init__(self, threads: int | None = None):
        self.threads, self.queue = threads, []

    def submit(self, job: int, args: tuple, kwargs: dict) -> None:
        self.queue.append((job, args, kwargs))

    def pending(self) -> int:
        return len(self.queue)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        job, args, kwargs = self.queue.pop(0)
        return [(job, run_job(*args, threads=self.threads, **kwargs))]

    def cancel(self) -> None:
        self.queue.clear()

    def close(self) -> None:
        pass


class RayRunner:
    """Ray core tasks (``num_cpus=1``, a GPU fraction on CUDA, ``max_retries=0``: the driver
    retries, keeping each error). Starts an embedded local Ray, or joins ``address``; shuts down
    only a Ray it started itself."""

    name, remote = "ray", True

    def __init__(self, address: str | None, workers: int, gpu_fraction: float, device: str):
        import ray

        self.ray, self.started, self.refs = ray, False, {}
        if not ray.is_initialized():
            options = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                           ignore_reinit_error=True)
            if address:
                ray.init(address=address, **options)
            else:  # "local": a fresh instance, never a cluster someone else started here
                # results are a few rows: a small object store (Ray's default reserves 30 % of
                # the memory, per notebook when several run at once)
                ray.init(address="local", num_cpus=workers, object_store_memory=128 * 2**20,
                         **options)
            self.started = True
        gpus = ray.cluster_resources().get("GPU", 0) > 0
        self.device = ("cuda" if device.startswith("cuda") or (device == "auto" and gpus)
                       else "cpu" if device == "auto" else device)
        self.task = ray.remote(run_job).options(
            num_cpus=1, max_retries=0, num_gpus=gpu_fraction if self.device.startswith("cuda") else 0)

    def submit(self, job: int, args: tuple, kwargs: dict) -> None:
        args = (*args[:2], self.device, *args[3:])
        self.refs[self.task.remote(*args, threads=1, **kwargs)] = (job, len(args[0]))

    def pending(self) -> int:
        return len(self.refs)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        done, _ = self.ray.wait(list(self.refs), num_returns=1)
        out = []
        for ref in done:
            job, n = self.refs.pop(ref)
            try:
                out.append((job, self.ray.get(ref)))
            except Exception as exc:  # the worker died (killed, out of memory): a failed attempt
                out.append((job, [{"ok": False, "error": one_line(exc)} for _ in range(n)]))
        return out

    def cancel(self) -> None:
        for ref in list(self.refs):
            try:
                self.ray.cancel(ref)
            except Exception:
                pass
        self.refs.clear()

    def close(self) -> None:
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self.started = False


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
               lock_timeout: float | None = None, log: Callable[[str], None] | None = print
               ) -> SweepResult:
    """Run checked ``trials`` (see the module docstring) and write the table to ``path``."""
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

    bar = tqdm(total=len(trials), initial=len(trials) - sum(map(len, todo.values())),
               desc="sweep", unit="trial", disable=not progress)
    runner = None
    try:
        if todo:
            runner = (RayRunner(address, workers or max(1, min(choose_threads(), len(todo))),
                                gpu_fraction, device) if which == "ray" else LocalRunner())
        stack = spec.get("stack_seeds", False)
        stacked = True if stack == "always" else None if stack else False

        def submit(job: int) -> None:
            exps = [trials[i].exp.to_dict() for i in todo[job]]
            runner.submit(job, (exps, str(zoo.root), device, trials[todo[job][0]].tag, stacked),
                          {"lock_timeout": lock_timeout})

        for job in todo:
            submit(job)
        write_table(rows, path)
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
        if runner is not None and not keep_ray:
            runner.close()
    table = write_table(rows, path)
    return SweepResult(table, trials, path, zoo.root, runner.name if runner else "none")


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
                    log: Callable[[str], None] | None = None) -> SweepResult:
    """A sweep of explicit experiments (a study's grid). Those that differ only in their seeds
    train as one job, stacked where that pays (``stacked``: None), always (True) or never
    (False)."""
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
                      lock_timeout=lock_timeout, log=log)
