"""The training step with and without two of its parts, in one process, interleaved pairs: the
fused AdamW (``toymech.training.loop._optimizer``) and the embedding's ``index_add_`` gradient
(``toymech.models.fast._Embedding``) against the default AdamW and ``embedding``'s own backward.
Study 1's 2-layer model at ``default`` (batch 256), one thread, ``--steps`` a run, evaluation
only at the end. Prints each pair, the medians and the pairs' ratios (new / old):

    python benchmarks/bench_step_ab.py [--pairs 14] [--steps 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

from toymech import experiments
from toymech.models import build_model, fast
from toymech.training import loop, train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=14)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    exp = experiments.get("induction-2l", "default", 0)
    cfg = exp.train.replace(steps=args.steps, eval_every=args.steps)
    new_opt, new_emb = loop._optimizer, fast._Embedding.apply

    def old_opt(params, c):
        return torch.optim.AdamW(params, lr=c.lr, betas=c.betas, weight_decay=c.weight_decay)

    rates: dict[str, list[float]] = {"old": [], "new": []}
    try:
        for i in range(args.pairs):
            for arm in ("old", "new"):
                loop._optimizer = new_opt if arm == "new" else old_opt
                fast._Embedding.apply = (new_emb if arm == "new"
                                         else lambda table, tokens: F.embedding(tokens, table))
                model = build_model(exp.model)
                t0 = time.perf_counter()
                train(model, exp.task, cfg, device="cpu", progress=False, log=None)
                rates[arm].append(args.steps / (time.perf_counter() - t0))
            print(f"pair {i + 1}: old {rates['old'][-1]:.1f}, new {rates['new'][-1]:.1f} steps/s",
                  flush=True)
    finally:
        loop._optimizer, fast._Embedding.apply = new_opt, new_emb
    old, new = statistics.median(rates["old"]), statistics.median(rates["new"])
    pairs = sorted(b / a for a, b in zip(rates["old"], rates["new"]))
    print(f"medians: old {old:.1f}, new {new:.1f} steps/s, new / old {new / old:.3f}; pairs "
          f"{pairs[0]:.2f}-{pairs[-1]:.2f}, median {statistics.median(pairs):.3f}, "
          f"{sum(p > 1 for p in pairs)} of {len(pairs)} faster")


if __name__ == "__main__":
    main()
