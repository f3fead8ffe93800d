"""A map's runs on one device: stacked by model shape (``Zoo.get_or_train_many``, the GPU path of
``toymech map``) against the same runs trained one after another, each side into a fresh zoo.

    python benchmarks/bench_gpu_map.py [--map specs/maps/s1-content.yaml] [--size default]
                                       [--seeds 3] [--steps 300] [--alone 4] [--device cuda]

The map's runs are cut to ``--steps`` (the size's evaluation schedule kept). One after another
costs the same per run whatever the map, so it is timed on the first ``--alone`` runs of each
model shape and scaled to the map; the stacked side trains the whole map. Printed: both sides'
runs per second and their ratio, the largest difference between a run's parameters trained
stacked and alone (float rounding on the device), ``measure_stacking``'s ratio for each shape
(what ``stacking_pays`` decides with), and one CPU thread's reference steps per second on this
machine, measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time

import torch

from toymech.devices import resolve_device
from toymech.grid import expand_grid
from toymech.maps.spec import check_map, load_map, sweep_grid
from toymech.models.reference import reference_step_seconds
from toymech.training.stacking import measure_stacking, stack_groups
from toymech.zoo import Zoo


def the_runs(path: str, size: str | None, seeds: int | None, steps: int):
    raw = load_map(path)
    raw.setdefault("name", "bench")
    if size:
        raw["size"] = size
    if seeds:
        raw["seeds"] = seeds
    spec = check_map(raw)
    out = []
    for t in expand_grid(sweep_grid(spec)):
        e = t.exp
        cut = min(steps, e.train.steps)
        out.append(dataclasses.replace(e, train=e.train.replace(
            steps=cut, eval_every=min(e.train.eval_every, cut), snapshots=0,
            warmup_steps=min(e.train.warmup_steps, cut - 1))))
    return out


def _timed(fn, dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    t0 = time.perf_counter()
    out = fn()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--map", default="specs/maps/s1-content.yaml")
    ap.add_argument("--size", default=None)
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--alone", type=int, default=4)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    dev = resolve_device(args.device)
    ref = reference_step_seconds()
    exps = the_runs(args.map, args.size, args.seeds, args.steps)
    groups = stack_groups(exps)
    sample = [i for g in groups for i in g[:args.alone]]
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev)
    print(f"device {name}; {len(exps)} runs in {len(groups)} model shape(s), {args.steps} steps "
          f"each; reference {1 / ref:.1f} CPU steps/s", flush=True)
    # warm both programs once (kernels, allocator) on a throw-away zoo
    with tempfile.TemporaryDirectory() as cache:
        warm = [dataclasses.replace(exps[i], train=exps[i].train.replace(
            steps=2, eval_every=2)) for i in groups[0][:2]]
        Zoo(cache).get_or_train_many(warm, device=dev, stacked=True)
        Zoo(cache + "-1").get_or_train(warm[0], device=dev, progress=False, log=None)
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
        stacked, t_stacked = _timed(lambda: Zoo(a).get_or_train_many(
            exps, device=dev, stacked=True), dev)
        alone, t_alone = _timed(lambda: [Zoo(b).get_or_train(
            exps[i], device=dev, progress=False, log=None) for i in sample], dev)
        diff = max(float((p - q).detach().abs().max())
                   for i, one in zip(sample, alone)
                   for p, q in zip(stacked[i].model.parameters(), one.model.parameters()))
    per_run_alone = t_alone / len(sample)
    ratio = (len(exps) / t_stacked) / (1 / per_run_alone)
    shapes = [round(measure_stacking(exps[g[0]], dev, n=len(g)), 2) for g in groups]
    out = {"device": name, "runs": len(exps), "shapes": len(groups), "steps": args.steps,
           "stacked_s": round(t_stacked, 2), "alone_s_per_run": round(per_run_alone, 3),
           "alone_runs_timed": len(sample), "throughput_ratio": round(ratio, 2),
           "max_param_diff_stacked_vs_alone": diff, "measure_stacking": shapes,
           "reference_cpu_steps_per_s": round(1 / ref, 1)}
    print(f"stacked: {len(exps)} runs in {t_stacked:.1f} s ({len(exps) / t_stacked:.2f} runs/s); "
          f"alone: {per_run_alone:.2f} s a run ({len(sample)} timed); throughput ratio "
          f"{ratio:.1f}x; largest parameter difference {diff:.2e}; measure_stacking per shape "
          f"{shapes}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
