"""A small map's runs trained with ``toymech.sweep.train_missing`` (one process per core, one
torch thread each) against the same runs one after another in one process (on ``--threads``
threads, default the same number of cores), each side into a fresh zoo, repeats interleaved (so
load changes hit both alike), medians and the ratio. The machine's reference steps per second
(``toymech.models.reference``) are measured in the same run, so the figures also read in
reference steps.

The map: named experiments (``--models``, any of ``toymech.experiments.names()``, so one family
per run: study 1's models, default the three of the scorecard; Birth's ``bigram_triggers``;
study 3's ``rt-...``) over ``--seeds`` seeds at ``--size``, each cut to ``--steps`` (the size's
evaluation and snapshot schedule kept).

    python benchmarks/bench_map.py [--models induction-2l] [--steps 300] [--seeds 2]
        [--workers 2] [--repeats 2] [--threads 1,2]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import torch

from toymech import experiments
from toymech.models.reference import reference_step_seconds
from toymech.studies.induction.design import MAIN
from toymech.sweep import train_missing
from toymech.zoo import Zoo


def the_map(models, size: str, seeds: int, steps: int):
    exps = []
    for name in models:
        for seed in range(seeds):
            exp = experiments.get(name, size, seed)
            n = min(steps, exp.train.steps)  # a warm-up longer than the cut run is cut too
            exps.append(dataclasses.replace(exp, train=exp.train.replace(
                steps=n, warmup_steps=min(exp.train.warmup_steps, n - 1))))
    return exps


def one_process(exps, threads: int) -> float:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with tempfile.TemporaryDirectory() as cache:
            zoo = Zoo(cache)
            t0 = time.perf_counter()
            for e in exps:
                zoo.get_or_train(e, device="cpu", progress=False, log=None)
            return time.perf_counter() - t0
    finally:
        torch.set_num_threads(before)


def per_core(exps, workers: int) -> float:
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        train_missing(Zoo(cache), exps, workers=workers)
        return time.perf_counter() - t0


def _median(xs):
    return sorted(xs)[len(xs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MAIN))
    ap.add_argument("--size", default="default")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", default=None, help="the one process's threads, or several "
                    "comma-separated baselines measured in the same run, e.g. 1,2 (default: "
                    "--workers)")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    exps = the_map(args.models.split(","), args.size, args.seeds, args.steps)
    threads = [int(t) for t in (args.threads or str(args.workers)).split(",")]
    steps = sum(e.train.steps for e in exps)
    ref, pool = [], []
    seq: dict[int, list[float]] = {t: [] for t in threads}
    for i in range(args.repeats):
        ref.append(reference_step_seconds())
        for t in threads:
            seq[t].append(one_process(exps, t))
        pool.append(per_core(exps, args.workers))
        ref.append(reference_step_seconds())
        print(f"repeat {i + 1}: " + ", ".join(f"one process on {t} thread(s) {seq[t][-1]:.1f} s"
                                              for t in threads)
              + f", train_missing {pool[-1]:.1f} s; reference {1 / ref[-2]:.1f} / "
              f"{1 / ref[-1]:.1f} steps/s", flush=True)
    r, p = 1.0 / _median(ref), _median(pool)
    print(f"map: {len(exps)} runs ({args.models} x {args.seeds} seeds, {args.size}, "
          f"{args.steps} steps each, {steps} steps in all); reference {r:.1f} steps/s "
          f"(runs: {', '.join(f'{1 / x:.1f}' for x in ref)})")
    rows = [(f"one process, {t} thread(s)", seq[t]) for t in threads]
    for label, xs in rows + [(f"train_missing, {args.workers} processes x 1 thread", pool)]:
        m = _median(xs)
        print(f"  {label:40s} {m:7.1f} s = {m * r:8.0f} reference steps  "
              f"(runs: {', '.join(f'{x:.1f}' for x in xs)})")
    for t in threads:
        print(f"ratio (throughput) train_missing / one process on {t} thread(s) = "
              f"{_median(seq[t]) / p:.2f} (per repeat: "
              f"{', '.join(f'{a / b:.2f}' for a, b in zip(seq[t], pool))})")


if __name__ == "__main__":
    main()
