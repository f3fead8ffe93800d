"""What the causal-test and learning-coefficient sections cost, per unit and scaled to a size.

For study 1's 2-layer model and Birth's main run at ``--size`` (models of that size; the weights
stay untrained because the cost of a forward or backward pass does not depend on them), times:

* the seed's causal numbers (``causal.causal_numbers``: what "over seeds" adds per seed);
* the per-snapshot patching effects (``causal.causal_metrics`` on the trajectory's data);
* one LLC estimate (``analysis.llc.task_llc`` with the size's ``LLC_SETTINGS``), from two short
  chains: cost = fixed part + chain steps x (time per chain step), fitted on 24 and 72 draws.

Each is printed in seconds and as a ratio to one training step of the same model at the size's
batch (forward, loss, backward, optimizer), measured in the same run; then scaled by the size's
seeds, snapshots and chain steps. One torch thread unless ``--threads``.

    python benchmarks/bench_causal_llc.py [--size default|paper] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import torch

from toymech.analysis.llc import task_llc, task_loss
from toymech.devices import make_generator
from toymech.models import build_model
from toymech.studies import birth, induction
from toymech.studies.birth import causal as bcausal
from toymech.studies.birth import dynamics as bdyn
from toymech.studies.induction import causal as icausal


def seconds(fn, repeats: int = 1) -> float:
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats


def train_step_seconds(exp, repeats: int = 3) -> float:
    """One AdamW step of a fresh model of ``exp`` on a batch of its size (the reference): the
    task loss on the scored targets (``analysis.llc.task_loss``), backward, update."""
    model = build_model(exp.model)
    batch = exp.task.sample(exp.train.batch_size, make_generator(0, torch.device("cpu")))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)

    def step():
        loss = task_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    step()
    return seconds(step, repeats)


def llc_seconds(model, pool, settings, freeze=()) -> tuple[float, float, int]:
    """(one estimate at ``settings``, seconds per chain step, chain steps), from two short runs."""
    short = settings.replace(chains=1, draws=24, burnin=2)
    longer = settings.replace(chains=1, draws=72, burnin=2)
    t1 = seconds(lambda: task_llc(model, pool, short, freeze))
    t2 = seconds(lambda: task_llc(model, pool, longer, freeze))
    per_step = (t2 - t1) / 48
    steps = settings.chains * (settings.draws + settings.burnin)
    return (t1 - 26 * per_step) + steps * per_step, per_step, steps


def row(name: str, secs: float, ref: float, times: int, what: str) -> None:
    print(f"{name:<44} {secs:9.3f} s  {secs / ref:8.1f} x step   x{times:<4} = "
          f"{secs * times:8.1f} s  ({what})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="default", choices=["default", "paper"])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    size = args.size
    print(f"size {size}, {torch.get_num_threads()} thread(s); ratios against one training step "
          "of the same model, measured in this run")

    exp = induction.experiment("induction-2l", size, 0)
    models = {n: build_model(induction.experiment(n, size, 0).model).eval()
              for n in ("induction-1l", "induction-1l-smeared", "induction-2l")}
    ref = train_step_seconds(exp)
    data = icausal.causal_data(exp.task, 0)
    seeds, snaps = induction.SIZES[size].n_seeds, exp.train.snapshots
    print(f"\nstudy 1, 2-layer model: training step {ref * 1000:.1f} ms (batch {exp.train.batch_size})")
    row("causal numbers (one seed, 3 models)", seconds(lambda: icausal.causal_numbers(models, data)),
        ref, seeds, "seeds")
    row("patching effects (one snapshot)",
        seconds(lambda: icausal.causal_metrics(models["induction-2l"], data), 3), ref, snaps,
        "snapshots of one run")
    pool = induction.STUDY.llc_pool(exp.task, size, 0)
    est, per, steps = llc_seconds(models["induction-2l"], pool, icausal.LLC_SETTINGS[size])
    print(f"  LLC chain step {per * 1000:.1f} ms ({per / ref:.2f} x step), {steps} per estimate")
    row("learning coefficient (one snapshot)", est, ref, snaps, "snapshots of one run")

    bexp = birth.experiment(size, 0)
    model = build_model(bexp.model).eval()
    ref = train_step_seconds(bexp)
    bdata = bcausal.causal_data(bexp.task, 0)
    small = bcausal.causal_data(bexp.task, 0, bdyn.N_CAUSAL)
    seeds, snaps = birth.SIZES[size].n_seeds, bexp.train.snapshots
    print(f"\nBirth, main run: training step {ref * 1000:.1f} ms (batch {bexp.train.batch_size})")
    row("causal numbers (one seed)", seconds(lambda: bcausal.causal_numbers(model, bdata)), ref,
        seeds, "seeds")
    row(f"patching effects (one snapshot, {bdyn.N_CAUSAL} seqs)",
        seconds(lambda: bcausal.causal_metrics(model, small)), ref, snaps, "snapshots of one run")
    est, per, steps = llc_seconds(model, birth.STUDY.llc_pool(bexp.task, size, 0),
                                  bcausal.LLC_SETTINGS[size], tuple(bexp.train.freeze))
    print(f"  LLC chain step {per * 1000:.1f} ms ({per / ref:.2f} x step), {steps} per estimate")
    row("learning coefficient (one snapshot)", est, ref, snaps, "snapshots of one run")


if __name__ == "__main__":
    main()
