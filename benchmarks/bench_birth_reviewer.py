"""What Birth's design map (with the reviewer comparison) costs to re-run, from a short measured
run: one training step and one map row (``birth.map_row``) of each kind of arm (the paper's
frozen model; token embeddings, unembedding and positions trained; every matrix trained) at
``default`` on trigger-only data, one torch thread, in a fresh zoo; then the map specs' runs
(``specs/maps/s2-design-calibration/`` and ``s2-design-calibrated/``) priced at those rates:
at least (every run stops at its spec's steps) and at most (every run still learning until its
budget policy's cap, measured again at each doubling). The machine's reference steps per second
(``toymech.models.reference``) are measured in the same run, before and after, so the figures
also read in reference steps.

    python benchmarks/bench_birth_reviewer.py [--steps 40]
"""

from __future__ import annotations

import argparse
import glob
import tempfile
import time
from pathlib import Path

import torch

from toymech.maps.spec import check_map, load_map
from toymech.models.reference import reference_step_seconds
from toymech.studies.birth import STUDY
from toymech.studies.birth.design import experiment
from toymech.studies.birth.map_measure import map_row
from toymech.zoo import Zoo

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"frozen": {}, "embeddings": {"embeddings": "trained", "positions": "learned"},
         "every matrix": {"embeddings": "trained", "positions": "learned",
                          "attention": "trained"}}


def kind_of(knobs: dict) -> str:
    """Which measured kind of arm prices a run with these knob values."""
    if knobs.get("attention") == "trained":
        return "every matrix"
    return "embeddings" if knobs.get("embeddings") == "trained" else "frozen"


def measure(steps: int) -> dict[str, tuple[float, float]]:
    """{kind: (seconds per training step, seconds per map row)} on trigger-only data, lr 0.3."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        zoo = Zoo(cache)
        for kind, knobs in KINDS.items():
            size = STUDY.with_knobs("default", {**knobs, "data": "only_triggers", "lr": 0.3,
                                                "steps": steps})
            exp = experiment(size, 0)
            t0 = time.perf_counter()
            entry = zoo.get_or_train(exp, device="cpu", progress=False, log=None)
            t1 = time.perf_counter()
            map_row(entry, size, 0)
            out[kind] = ((t1 - t0) / steps, time.perf_counter() - t1)
    return out


def plan() -> list[tuple[str, str, int, int]]:
    """(spec file, kind, steps at least, steps at most) per run of the design map's specs."""
    runs = []
    for path in sorted(glob.glob(str(ROOT / "specs/maps/s2-design-calibrat*/*.yaml"))):
        spec = check_map(load_map(path))
        cap = spec["until_converged"] or 400
        cells = [{}]
        for knob, values in spec["knobs"].items():
            cells = [{**c, knob: v} for c in cells for v in values]
        for cell in cells:
            for _ in spec["seeds"]:
                runs.append((Path(path).name, kind_of(cell), 400, max(400, cap)))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per measured run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    ref_before = reference_step_seconds()
    rates = measure(args.steps)
    ref_after = reference_step_seconds()
    ref = (ref_before + ref_after) / 2
    print(f"reference step: {ref_before * 1e3:.1f} ms before, {ref_after * 1e3:.1f} ms after")
    for kind, (step_s, row_s) in rates.items():
        print(f"{kind}: {step_s * 1e3:.0f} ms a training step ({step_s / ref:.1f} reference "
              f"steps), {row_s:.1f} s a map row ({row_s / ref:,.0f} reference steps)")
    runs = plan()
    low = sum(lo * rates[k][0] + rates[k][1] for _, k, lo, _ in runs)
    # at most: every run continued 400 -> 800 -> 1,600 steps, a row measured at each length
    high = sum(hi * rates[k][0] + rates[k][1] * (1 + (hi > 400) + (hi > 800))
               for _, k, _, hi in runs)
    print(f"{len(runs)} runs in {len({f for f, *_ in runs})} spec files: {low / 60:.0f} to "
          f"{high / 60:.0f} core-minutes ({low / ref:,.0f} to {high / ref:,.0f} reference "
          "steps); runs that diverge cost less")


if __name__ == "__main__":
    main()
