"""One grid through the local-Ray backend and through the in-process runner, each into a fresh
temporary zoo, on this machine: trials/hour of each and the ratio Ray / in-process (one run).

The Ray figure is given twice: with Ray's start-up (what one `toymech sweep` pays) and without
it (what a longer sweep approaches). The in-process runner uses torch's CPU threads by the
toymech policy (free cores); each Ray worker runs one thread, one trial per core.

    .venv/bin/python benchmarks/bench_sweep.py --trials 8 --steps 200
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time

from toymech.devices import apply_threads, choose_threads, free_cores, usable_cores
from toymech.grid import run_sweep


def grid(trials: int, steps: int) -> dict:
    seeds = list(range(max(1, trials // 2)))
    return {"experiment": "modular_addition", "size": "smoke", "seed": seeds,
            "overrides": {"model.d_model": [16, 32], "train.steps": [steps],
                          "train.eval_every": [max(1, steps // 10)]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8, help="trials (an even number)")
    parser.add_argument("--steps", type=int, default=200, help="training steps of each trial")
    args = parser.parse_args()
    spec = grid(args.trials, args.steps)
    n = 2 * len(spec["seed"])
    print(f"{n} trials of modular_addition (smoke, widths 16 and 32, {args.steps} steps); "
          f"{usable_cores()} cores, {free_cores()} free at start")

    import ray

    workers = choose_threads()
    with tempfile.TemporaryDirectory() as zoo:
        t0 = time.perf_counter()
        ray.init(address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)
        t1 = time.perf_counter()
        ray_result = run_sweep(spec, cache_dir=zoo, backend="ray", progress=False, log=None)
        t2 = time.perf_counter()
        ray.shutdown()
    threads = apply_threads(log=None)
    with tempfile.TemporaryDirectory() as zoo:
        t3 = time.perf_counter()
        local_result = run_sweep(spec, cache_dir=zoo, backend="local", progress=False, log=None)
        t4 = time.perf_counter()
    for result in (ray_result, local_result):
        assert result.count("ok") == n, result.table[["trial", "status", "error"]]

    def per_hour(seconds: float) -> float:
        return n / seconds * 3600

    ray_all, ray_run, local = per_hour(t2 - t0), per_hour(t2 - t1), per_hour(t4 - t3)
    print(f"ray, {workers} worker(s) x 1 thread: start-up {t1 - t0:.1f} s, trials {t2 - t1:.1f} s "
          f"-> {ray_all:.0f} trials/h with start-up, {ray_run:.0f} without")
    print(f"in-process, {threads} thread(s): {t4 - t3:.1f} s -> {local:.0f} trials/h")
    print(f"ratio ray / in-process: {ray_all / local:.2f} with Ray's start-up, "
          f"{ray_run / local:.2f} without")


if __name__ == "__main__":
    main()
