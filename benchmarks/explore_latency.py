"""How long one change of ``toymech.explore`` takes, per study model, against the reference step.

For each study's main model at ``--size`` (untrained weights: a forward pass costs the same
whatever they are), on a sequence of its task's full length:

* ``set_sequence``: a new sequence and its state (one cached forward pass and every view's data);
* ``ablate``: a head switched off and the state again (hooks for that one run);
* ``widget``: the same change through the widget (text box -> every view redrawn: the strip, the
  circuitsvis view's HTML, the plotly heatmap's data).

Each is the median of ``--repeats`` changes, printed in ms and as a ratio to the reference step
(``toymech.models.reference``: one AdamW step of study 1's plain-PyTorch toy, batch 256, one
thread) measured in the same run. The target is under a second per change on a laptop CPU.

    python benchmarks/explore_latency.py [--size default] [--repeats 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch

import toymech.explore
from toymech import experiments
from toymech.devices import make_generator
from toymech.models import build_model
from toymech.models.reference import reference_step_seconds

MODELS = ("induction-2l", "birth-simplified", "rt-needle-random")


def median_ms(change, repeats: int) -> float:
    """Median wall time of ``change()`` over ``repeats`` calls (one warm-up call first), ms."""
    change()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        change()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def measure(name: str, size: str, repeats: int) -> dict[str, float]:
    """The three latencies of one study model (module docstring), ms."""
    exp = experiments.get(name, size=size, seed=0)
    x = toymech.explore(build_model(exp.model).eval(), exp.task, size=size)
    gen = make_generator(1, torch.device("cpu"))
    texts = [x.task.sample(1, gen).tokens[0] for _ in range(2)]
    sep = "" if all(len(t) == 1 for t in x.vocab) else " "
    strings = [x.task.decode(t, sep=sep) for t in texts]
    flip = iter(range(10**9))
    ui = x.widget
    return {
        "set_sequence": median_ms(lambda: x.set_sequence(texts[next(flip) % 2]), repeats),
        "ablate": median_ms(lambda: (x.ablate(0, 0), x.restore()), repeats) / 2,
        "widget": median_ms(lambda: setattr(ui.text, "value", strings[next(flip) % 2]), repeats),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="default", choices=["smoke", "default", "paper"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    torch.set_num_threads(args.threads)
    ref = 1000 * reference_step_seconds(20)
    print(f"size {args.size}, {torch.get_num_threads()} thread(s); reference step {ref:.1f} ms "
          "(measured in this run); each cell: ms (x reference step)")
    print(f"{'model':<20} {'set_sequence+state':>20} {'ablate+state':>20} {'widget redraw':>20}")
    for name in MODELS:
        row = measure(name, args.size, args.repeats)
        cells = "".join(f"{f'{v:.1f} ({v / ref:.2f})':>21}" for v in row.values())
        print(f"{name:<20}{cells}")


if __name__ == "__main__":
    main()
