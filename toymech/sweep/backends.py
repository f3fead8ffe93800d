"""Where a sweep's jobs run: this process (``LocalRunner``), local child processes
(``PoolRunner``) or Ray core tasks (``RayRunner``: an embedded local Ray, started with retries
inside a budget, or a cluster joined by address); ``make_runner`` picks one and records how it
started. ``run_job`` is what every runner runs for one job: train or load its experiments
through the zoo, never raising. Imports only ``toymech.zoo`` and below.
"""

from __future__ import annotations

import concurrent.futures as futures
import importlib
import logging
import multiprocessing
import os
import signal
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core import check, check_float, check_int
from ..devices import apply_threads
from ..training import Experiment, TrainingDiverged
from ..zoo import LockTimeout, Zoo, ZooEntry

# How long an embedded Ray may take to start, all attempts together (Ray itself gives its raylet
# a fixed 30 s per attempt, which a slow or busy machine can miss): TOYMECH_RAY_START_S.
RAY_START_S = 240.0
RAY_START_ATTEMPTS = 10


class RayStartFailed(RuntimeError):
    """An embedded Ray did not start within its budget (one line: what was tried, how long,
    and what to do instead): ``attempts`` made in ``seconds`` of a ``budget`` of seconds, and
    the last ``error`` Ray gave."""

    def __init__(self, attempts: int, seconds: float, budget: float, error: str):
        self.attempts, self.seconds, self.error = attempts, round(seconds, 2), error[:300]
        super().__init__(
            f"the embedded Ray did not start ({attempts} attempt(s) in {seconds:.0f} s of a "
            f"{budget:.0f} s budget, TOYMECH_RAY_START_S): {self.error[:200]}. Use --backend "
            f"local, or start Ray yourself (ray start --head) and join it with --address auto")


def resolve_callbacks(path: str | None):
    """``"package.module:function"`` -> that function (``function(experiment)`` returns the
    run's callbacks), imported here so that a spawned process can rebuild a study's callbacks;
    None -> None. A path that does not name such a function raises ValueError naming it."""
    if path is None:
        return None
    module, _, name = str(path).partition(":")
    try:
        fn = getattr(importlib.import_module(module), name, None) if module and name else None
    except ImportError:
        fn = None
    check(callable(fn), "callbacks", path,
          "'package.module:function', a function of an experiment returning its callbacks")
    return fn


def run_job(exp_dicts: list[dict[str, Any]], cache_dir: str, device: str, tag: str,
            stacked: bool | None, threads: int | None = None,
            lock_timeout: float | None = None, callbacks: str | None = None
            ) -> list[dict[str, Any]]:
    """Train or load one job's experiments through the zoo; one outcome per experiment:
    ``{"ok": True, "final", "seconds", "device", "entry", "loaded"}`` or
    ``{"ok": False, "error", "diverged"}`` (the exception in one line). Never raises an
    ``Exception``. What every runner runs, in this process or another.

    ``exp_dicts``: the experiments, as ``Experiment.to_dict`` writes them (they travel to other
    processes). ``cache_dir``: the zoo. ``device``: where they train. ``tag``: the zoo tag of
    their entries. ``stacked``: train seeds of one shape together (None: where it pays).
    ``threads``: torch threads for this process (None: leave them). ``lock_timeout``: the
    longest wait for another writer of an entry. ``callbacks``: ``"package.module:function"``
    giving each experiment's callbacks (``resolve_callbacks``)."""
    started = time.perf_counter()
    try:
        if threads is not None:  # explicit: the library's thread policy keeps it
            apply_threads(threads, log=None)
        exps = [Experiment.from_dict(d) for d in exp_dicts]
        zoo = Zoo(cache_dir, lock_timeout=lock_timeout)
        make = resolve_callbacks(callbacks)
        cbs = [list(make(e)) for e in exps] if make else None
        if len(exps) == 1:
            entries = [zoo.get_or_train(exps[0], device=device, tag=tag, progress=False, log=None,
                                        callbacks=cbs[0] if cbs else ())]
        else:
            entries = zoo.get_or_train_many(exps, device=device, tag=tag, stacked=stacked,
                                            callbacks=cbs, progress=False, log=None)
    except Exception as exc:  # reported in the table, not raised: the other trials go on
        error = {"ok": False, "error": one_line(exc), "device": str(device),
                 "diverged": isinstance(exc, TrainingDiverged),
                 "lock_timeout": isinstance(exc, LockTimeout),
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
    """Runs the jobs one after another in this process (``wait`` runs the next one), with
    ``threads`` torch threads (None: the process's own, by the thread policy)."""

    name, remote = "local", False

    def __init__(self, threads: int | None = None):
        self.threads, self.queue = threads, []

    def submit(self, job: int, args: tuple, kwargs: dict) -> None:
        """Queue job number ``job``: ``run_job(*args, **kwargs)`` (one job's experiments)."""
        self.queue.append((job, args, kwargs))

    def pending(self) -> int:
        """The jobs submitted and not yet returned by ``wait``."""
        return len(self.queue)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        """Block until at least one job has finished; its (job, outcomes) pairs, one outcome
        per experiment of the job (``run_job``'s)."""
        job, args, kwargs = self.queue.pop(0)
        return [(job, run_job(*args, threads=self.threads, **kwargs))]

    def cancel(self) -> None:
        """Drop the jobs not yet finished (Ctrl-C: the sweep writes them as cancelled)."""
        self.queue.clear()

    def close(self) -> None:
        """Release what the runner holds (nothing: the jobs ran in this process)."""


class PoolRunner:
    """Runs the jobs in ``workers`` child processes of this machine (spawned, one torch thread
    each): what a sweep falls back to when an embedded Ray cannot start, so it still uses every
    free core. A child that dies fails its job's attempt (the driver retries it)."""

    name, remote = "processes", True

    def __init__(self, workers: int):
        self.workers = check_int("workers", workers, 1, 4096)
        self.pool = self._new_pool()
        self.futures: dict[futures.Future, tuple[int, int]] = {}

    def _new_pool(self) -> futures.ProcessPoolExecutor:
        return futures.ProcessPoolExecutor(self.workers,
                                           mp_context=multiprocessing.get_context("spawn"))

    def submit(self, job: int, args: tuple, kwargs: dict) -> None:
        """Queue job number ``job``: ``run_job(*args, **kwargs)`` (one job's experiments)."""
        try:
            fut = self.pool.submit(run_job, *args, threads=1, **kwargs)
        except futures.BrokenExecutor:  # an earlier child died and took the pool with it
            self.pool = self._new_pool()
            fut = self.pool.submit(run_job, *args, threads=1, **kwargs)
        self.futures[fut] = (job, len(args[0]))

    def pending(self) -> int:
        """The jobs submitted and not yet returned by ``wait``."""
        return len(self.futures)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        """Block until at least one job has finished; its (job, outcomes) pairs, one outcome
        per experiment of the job (``run_job``'s)."""
        done, _ = futures.wait(list(self.futures), return_when=futures.FIRST_COMPLETED)
        out = []
        for fut in done:
            job, n = self.futures.pop(fut)
            try:
                out.append((job, fut.result()))
            except Exception as exc:  # the child died (killed, out of memory)
                out.append((job, [{"ok": False, "error": one_line(exc)} for _ in range(n)]))
        return out

    def cancel(self) -> None:
        """Drop the jobs not yet finished (Ctrl-C: the sweep writes them as cancelled)."""
        for fut in self.futures:
            fut.cancel()
        self.futures.clear()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Release what the runner holds (its processes, a Ray it started)."""
        self.pool.shutdown(wait=True, cancel_futures=True)


def ray_start_budget() -> float:
    """Seconds an embedded Ray may take to start (``TOYMECH_RAY_START_S``, default 240)."""
    raw = os.environ.get("TOYMECH_RAY_START_S")
    if raw is None:
        return RAY_START_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    return check_float("TOYMECH_RAY_START_S", value, 1.0, 86_400.0)


def _descendants() -> set[int]:
    """This process's descendants (Linux ``/proc``; elsewhere none are known)."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parent[int(stat.parent.name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def _end(pids: set[int]) -> None:
    """SIGKILL ``pids`` (what a failed Ray start left running), ignoring the ones gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def start_ray(ray, workers: int, options: dict[str, Any]) -> dict[str, Any]:
    """Start an embedded local Ray, trying again while the budget lasts; the processes a failed
    attempt started (its GCS, raylet, monitors) are ended before the next. Returns the start-up
    record; raises ``RayStartFailed`` in one line."""
    budget, started, errors = ray_start_budget(), time.monotonic(), []
    # the raylet ends itself when its agents (Python processes) register late, as they do on a
    # busy machine: give them the whole budget (a user's own setting wins)
    os.environ.setdefault("RAY_agent_register_timeout_ms", str(int(budget * 1000)))
    # Ray runs its workers at nice 15 by default: beside any other busy process the trials (the
    # sweep's whole work) then starve beside two busy loops
    os.environ.setdefault("RAY_worker_niceness", "0")
    for attempt in range(1, RAY_START_ATTEMPTS + 1):
        before = _descendants()
        try:
            # results are a few rows: a small object store (Ray's default reserves 30 % of
            # the memory, per notebook when several run at once)
            ray.init(address="local", num_cpus=workers, object_store_memory=128 * 2**20,
                     **options)
            return {"attempts": attempt, "seconds": round(time.monotonic() - started, 2),
                    "outcome": "started"}
        except Exception as exc:  # Ray's start-up errors are of several types
            errors.append(one_line(exc))
            try:
                ray.shutdown()
            except Exception:
                pass
            _end(_descendants() - before)
        spent = time.monotonic() - started
        if spent + spent / attempt > budget:
            break  # another attempt like the last ones would run past the budget
    raise RayStartFailed(len(errors), time.monotonic() - started, budget, errors[-1])


class RayRunner:
    """Ray core tasks (``num_cpus=1``, a GPU fraction on CUDA, ``max_retries=0``: the driver
    retries, keeping each error). Starts an embedded local Ray, or joins ``address``; shuts down
    only a Ray it started itself. ``workers``: the CPUs an embedded Ray gets; ``gpu_fraction``:
    the share of a GPU each task asks for on CUDA; ``device``: where the tasks train
    (``"auto"``: CUDA when the cluster has a GPU, else the CPU)."""

    name, remote = "ray", True

    def __init__(self, address: str | None, workers: int, gpu_fraction: float, device: str):
        import ray

        self.ray, self.started, self.refs = ray, False, {}
        self.startup: dict[str, Any] = {"attempts": 0, "seconds": 0.0, "outcome": "reused"}
        if not ray.is_initialized():
            options = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                           ignore_reinit_error=True)
            if address:
                t0 = time.monotonic()
                ray.init(address=address, **options)
                self.startup = {"attempts": 1, "seconds": round(time.monotonic() - t0, 2),
                                "outcome": "joined"}
            else:  # "local": a fresh instance, never a cluster someone else started here
                self.startup = start_ray(ray, workers, options)
            self.started = True
        gpus = ray.cluster_resources().get("GPU", 0) > 0
        self.device = ("cuda" if device.startswith("cuda") or (device == "auto" and gpus)
                       else "cpu" if device == "auto" else device)
        self.task = ray.remote(run_job).options(
            num_cpus=1, max_retries=0, num_gpus=gpu_fraction if self.device.startswith("cuda") else 0)

    def submit(self, job: int, args: tuple, kwargs: dict) -> None:
        """Queue job number ``job``: ``run_job(*args, **kwargs)`` (one job's experiments)."""
        args = (*args[:2], self.device, *args[3:])
        self.refs[self.task.remote(*args, threads=1, **kwargs)] = (job, len(args[0]))

    def pending(self) -> int:
        """The jobs submitted and not yet returned by ``wait``."""
        return len(self.refs)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        """Block until at least one job has finished; its (job, outcomes) pairs, one outcome
        per experiment of the job (``run_job``'s)."""
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
        """Drop the jobs not yet finished (Ctrl-C: the sweep writes them as cancelled)."""
        for ref in list(self.refs):
            try:
                self.ray.cancel(ref)
            except Exception:
                pass
        self.refs.clear()

    def close(self) -> None:
        """Release what the runner holds (its processes, a Ray it started)."""
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self.started = False


def make_runner(which: str, address: str | None, workers: int, gpu_fraction: float, device: str,
                fallback: bool, log: Callable[[str], None] | None):
    """The runner for ``which`` and its start-up record. An embedded Ray that cannot start
    (``RayStartFailed``) is an error unless ``fallback``: then ``workers`` local processes (or
    this process for one worker) run the trials, and one line says so."""
    if which != "ray":
        return LocalRunner(), {"requested": which, "backend": "local", "attempts": 0,
                               "seconds": 0.0, "outcome": "in-process"}
    try:
        runner = RayRunner(address, workers, gpu_fraction, device)
        return runner, {"requested": "ray", "backend": "ray", **getattr(runner, "startup", {})}
    except RayStartFailed as exc:
        if not fallback or address:
            raise
        record = {"requested": "ray", "attempts": exc.attempts, "seconds": exc.seconds,
                  "outcome": "fell back", "error": exc.error}
    runner = PoolRunner(workers) if workers >= 2 else LocalRunner()
    where = f"{workers} local processes" if workers >= 2 else "this process"
    line = (f"[toymech] sweep: the embedded Ray did not start ({record['attempts']} attempt(s), "
            f"{record['seconds']:.0f} s); running the trials in {where} instead")
    if log is not None:
        log(line)
    else:
        warnings.warn(line, RuntimeWarning, stacklevel=3)
    return runner, {**record, "backend": runner.name}

