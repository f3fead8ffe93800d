"""Training-step speed per model family, fp32 against bf16 autocast and against ``torch.compile``,
every variant measured in the same run (repeats interleaved, medians, ratios against fp32).

Families (each at its ``default`` size and recipe):

* ``induction``: the post's 2-layer attention-only toy (training uses ``fast_forward``; the
  compiled variant compiles the hooked forward);
* ``birth``: the paper's simplified model (hooked forward);
* ``gpt2``: study 3's GPT-2-style random transformer, width 256, modular addition.

For each: steps/s of the bare training step (forward, loss, backward, AdamW) in fp32, under
``torch.autocast(device, torch.bfloat16)`` (fp32 master weights and loss), and with the forward
compiled by ``torch.compile`` (compile time reported apart); the step's FLOPs counted by
``torch.utils.flop_counter.FlopCounterMode`` and the MFU against the fp32 and bf16 matmul peaks
measured in the same run. Also prints what the hardware offers (``toymech.training.precision``).

    python benchmarks/bench_precision.py [--steps 30] [--repeats 3] [--threads 1]
        [--families induction,birth,gpt2] [--no-compile]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from toymech.devices import make_generator, resolve_device
from toymech.models import build_model
from toymech.models.fast import fast_forward
from toymech.studies import birth, induction
from toymech.studies import random_transformers as rt
from toymech.training.precision import bf16_support


def _experiment(family: str):
    if family == "induction":
        return induction.experiment("induction-2l", "default", 0)
    if family == "birth":
        return birth.experiment("default", 0)
    return rt.experiment("modular_addition", 256, "random", "default", 0)


def _setup(family: str, dev: torch.device, compiled: bool):
    from toymech.training import apply_freeze
    exp = _experiment(family)
    model = build_model(exp.model, dev)
    apply_freeze(model, exp.train.freeze)
    # The compiled variant compiles the HookedTransformer's own forward (what every family has);
    # the others use the training loop's forward (``fast_forward`` where it supports the model).
    forward = torch.compile(model) if compiled else (fast_forward(model) or model)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4)
    gen = make_generator(0, dev)
    batches = [exp.task.sample(exp.train.batch_size, gen) for _ in range(4)]
    return exp, forward, opt, batches


def _step(exp, forward, opt, batch, bf16: bool, dev: torch.device) -> None:
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
        logits = forward(batch.tokens)
    loss = exp.task.loss(logits.float(), batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def _rate(setup, bf16: bool, steps: int, dev: torch.device) -> float:
    exp, forward, opt, batches = setup
    _step(exp, forward, opt, batches[0], bf16, dev)  # warm-up
    t = time.perf_counter()
    for i in range(steps):
        _step(exp, forward, opt, batches[i % len(batches)], bf16, dev)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return steps / (time.perf_counter() - t)


def _flops(setup, dev: torch.device) -> float:
    exp, forward, opt, batches = setup
    with FlopCounterMode(display=False) as counter:
        _step(exp, forward, opt, batches[0], False, dev)
    return float(counter.get_total_flops())


def _peak(dtype: torch.dtype, dev: torch.device, n: int = 512, reps: int = 5) -> float:
    a = torch.randn(n, n, device=dev, dtype=dtype)
    b = torch.randn(n, n, device=dev, dtype=dtype)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return 2 * n ** 3 * reps / (time.perf_counter() - t)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--families", default="induction,birth,gpt2")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    dev = resolve_device(args.device)
    ok, why = bf16_support(dev)
    print(f"device {dev}, {args.threads} thread(s); bf16 hardware support: {ok} ({why})")
    peaks = {name: _peak(dt, dev) for name, dt in (("fp32", torch.float32),
                                                   ("bf16", torch.bfloat16))}
    print("matmul peak, same run: " + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s"
                                                for k, v in peaks.items())
          + f" (bf16 / fp32 = {peaks['bf16'] / peaks['fp32']:.2f})")
    print(f"{'family':<10} {'variant':<14} {'steps/s':>9} {'vs fp32':>8} {'MFU':>7}")
    for family in args.families.split(","):
        variants = {"fp32": (False, False), "bf16 autocast": (True, False)}
        if not args.no_compile:
            variants["fp32 compiled"] = (False, True)
        setups, notes = {}, {}
        for name, (_, compiled) in variants.items():
            t = time.perf_counter()
            try:
                setups[name] = _setup(family, dev, compiled)
                _rate(setups[name], variants[name][0], 1, dev)  # compiles here
            except Exception as exc:  # a compiler missing on this machine: say so, go on
                notes[name] = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
                setups.pop(name, None)
            else:
                notes[name] = f"set-up {time.perf_counter() - t:.1f} s" if compiled else ""
        rates: dict[str, list[float]] = {name: [] for name in setups}
        for _ in range(args.repeats):  # interleaved: load changes hit every variant alike
            for name, setup in setups.items():
                rates[name].append(_rate(setup, variants[name][0], args.steps, dev))
        flops = _flops(setups["fp32"], dev)
        ref = statistics.median(rates["fp32"])
        for name in variants:
            if name not in rates:
                print(f"{family:<10} {name:<14} {'-':>9} {'-':>8} {'-':>7}  {notes[name]}")
                continue
            r = statistics.median(rates[name])
            peak = peaks["bf16" if name.startswith("bf16") else "fp32"]
            print(f"{family:<10} {name:<14} {r:9.1f} {r / ref:8.2f} {flops * r / peak:7.1%}  "
                  f"{notes[name]}")
        print(f"{family:<10} {flops / 1e6:.0f} MFLOP per step (FlopCounterMode, forward + backward)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
