"""Several seeds of one config: stacked (``train_stacked``: torch.func + vmap) vs one after another.

    python benchmarks/bench_multiseed.py [--families induction,birth,random] [--seeds 1,4,10]
                                         [--steps 30] [--device auto] [--threads 1]
                                         [--width 64] [--task parentheses] [--mode random]
                                         [--no-vmap1]

For each model family at its ``default`` size and each number of seeds N, trains the N seeds
once as a loop of single ``train`` runs and once stacked, and prints the seconds of each way,
the per-model throughput (model-steps per second), the ratio stacked / loop of those throughputs
(> 1: stacking is faster) and the largest difference between the two ways' trained parameters
(they should agree to float rounding).

The families (``--families``):

* ``induction``: ``toymech.studies.induction.experiment("induction-2l", "default", seed)``.
  A single run's step uses ``toymech.models.fast_forward``; the stacked step uses
  ``functional_call`` of the model, so the ratio also compares the two forward paths.
* ``birth``: ``toymech.studies.birth.experiment("default", seed)``.
* ``random``: ``toymech.studies.random_transformers.experiment("parentheses", 64, "random",
  "default", seed)`` (``--task``, ``--width``, ``--mode`` change the first three).

Each experiment's training is shortened to ``--steps`` with one evaluation at the end and no
snapshots (a warm-up is scaled to the same share of the shorter run, e.g. random transformers'
100 of 1000 steps become 3 of 30). Models are built before the clock starts; each timing covers the whole ``train`` /
``train_stacked`` call (set-up, steps, the final evaluation of each model). Each family first
gets an untimed 2-step warm-up of both ways.

With N = 1, ``train_stacked`` takes the single-model path (the same program as ``train``), so
its ratio only shows the noise. Unless ``--no-vmap1``, an extra row "1 (vmap)" forces the
stacked (vmap + functional_call) program on one model, to show that program's own overhead.
"""

import argparse
import contextlib
import time

import torch

from toymech.devices import resolve_device
from toymech.models import build_model
from toymech.studies import birth, induction
from toymech.studies import random_transformers as rt
from toymech.training import loop, train, train_stacked

FAMILIES = {
    "induction": lambda seed: induction.experiment("induction-2l", "default", seed),
    "birth": lambda seed: birth.experiment("default", seed),
    "random": lambda seed, task="parentheses", width=64, mode="random", size="default":
        rt.experiment(task, width, mode, size, seed),
}


@contextlib.contextmanager
def _vmap_for_one():
    """Make the loop run one model through the stacked (vmap) program instead of the eager one."""
    eager = loop.EagerEngine
    loop.EagerEngine = lambda model, cfg: loop.StackedEngine([model], cfg)
    try:
        yield
    finally:
        loop.EagerEngine = eager


def _experiments(family: str, n: int, steps: int, random_options: dict):
    options = random_options if family == "random" else {}
    exps = [FAMILIES[family](s, **options) for s in range(n)]
    for e in exps:
        t = e.train  # a warm-up keeps its share of the (shorter) run: it must be < steps
        warmup = min(round(t.warmup_steps * steps / t.steps), steps - 1)
        e.train = t.replace(steps=steps, eval_every=steps, snapshots=0, warmup_steps=warmup)
    return exps


def _time_loop(exps, device):
    models = [build_model(e.model, device) for e in exps]
    t = time.perf_counter()
    out = [train(m, e.task, e.train, device=device, progress=False, log=None).model
           for m, e in zip(models, exps)]
    return time.perf_counter() - t, out


def _time_stacked(exps, device, force_vmap=False):
    models = [build_model(e.model, device) for e in exps]
    ctx = _vmap_for_one() if force_vmap else contextlib.nullcontext()
    t = time.perf_counter()
    with ctx:
        res = train_stacked(models, exps[0].task, [e.train for e in exps], device=device,
                            progress=False, log=None)
    return time.perf_counter() - t, [r.model for r in res]


def _max_diff(models_a, models_b) -> float:
    return max(float((a - b).detach().abs().max())
               for m1, m2 in zip(models_a, models_b)
               for a, b in zip(m1.parameters(), m2.parameters()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="induction,birth,random",
                    help=f"comma-separated, from {', '.join(FAMILIES)}")
    ap.add_argument("--seeds", default="1,4,10", help="comma-separated numbers of seeds")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--width", type=int, default=64, help="random family: d_model")
    ap.add_argument("--task", default="parentheses", help="random family: task")
    ap.add_argument("--mode", default="random", help="random family: training mode")
    ap.add_argument("--size", default="default", help="random family: the size (task sizes, "
                    "batch; e.g. paper for the rebuttal's width-16 runs with --width 16)")
    ap.add_argument("--no-vmap1", action="store_true",
                    help="skip the extra one-model run through the stacked (vmap) program")
    args = ap.parse_args()
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    for f in families:
        if f not in FAMILIES:
            ap.error(f"unknown family {f!r}; choose from {', '.join(FAMILIES)}")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    random_options = {"task": args.task, "width": args.width, "mode": args.mode,
                      "size": args.size}
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    print(f"{args.steps} steps per model, device {device}, {args.threads} thread(s); random "
          f"family: {args.task}, width {args.width}, {args.mode}, size {args.size}")
    header = (f"{'family':<10} {'seeds':>9} {'loop s':>8} {'stacked s':>10} "
              f"{'loop st/s':>10} {'stack st/s':>11} {'ratio':>6} {'max diff':>9}")
    print(header)
    print("-" * len(header))
    for family in families:
        # untimed warm-up (first calls of torch kernels, vmap tracing set-up) for both ways
        warm = _experiments(family, 2, 2, random_options)
        _time_loop(warm[:1], device)
        _time_stacked(warm, device)
        for n in seeds:
            rows = [(str(n), False)]
            if n == 1 and not args.no_vmap1:
                rows.append(("1 (vmap)", True))
            exps = _experiments(family, n, args.steps, random_options)
            t_loop, looped = _time_loop(exps, device)
            for label, force in rows:
                t_stack, stacked = _time_stacked(exps, device, force_vmap=force)
                thr_loop = n * args.steps / t_loop
                thr_stack = n * args.steps / t_stack
                diff = _max_diff(looped, stacked)
                print(f"{family:<10} {label:>9} {t_loop:>8.2f} {t_stack:>10.2f} "
                      f"{thr_loop:>10.1f} {thr_stack:>11.1f} {thr_stack / thr_loop:>6.2f} "
                      f"{diff:>9.1e}", flush=True)


if __name__ == "__main__":
    main()
