"""What a map costs per run, against the same runs trained one by one with `toymech train`, in the
same run: the two commands a user would type, each into a fresh zoo, as subprocesses.

    python benchmarks/bench_map_cli.py [--steps 300] [--seeds 2] [--size default] [--repeats 1]

The map: study 1's 2-layer model over block length {6, 4-8} x start offset {0, 0-3} x ``--seeds``
judged seeds at ``--size``, every run cut to ``--steps`` with the study's `steps` knob (so both
sides train exactly the same runs). Side A: `toymech map GRID --cache A` (what the zoo lacks
trains one process per free core, then every run is measured and the table written). Side B: one
`toymech train induction-2l --size S --seed N --set block_len=.. --set offset=.. --set steps=..`
per run, one after another, on the threads toymech chooses. Printed: each side's wall seconds,
per run, the ratio B / A (> 1: the map is cheaper per run, measurement included), and one CPU
thread's reference steps per second measured before and after, so the figures read in
reference steps on any machine.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toymech.models.reference import reference_step_seconds

BLOCK_LENS, OFFSETS = ["6", "4-8"], ["0", "0-3"]


def _run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--size", default="default")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    py = [sys.executable, "-m", "toymech"]
    with tempfile.TemporaryDirectory() as tmp:
        grid = Path(tmp) / "bench.yaml"
        grid.write_text(
            "study: induction\nexperiment: [induction-2l]\n"
            f"size: {args.size}\nseeds: {args.seeds}\nname: bench\n"
            f"knobs:\n  block_len: [{', '.join(repr(b) for b in BLOCK_LENS)}]\n"
            f"  offset: [{', '.join(repr(o) for o in OFFSETS)}]\n  steps: [{args.steps}]\n")
        seeds = None
        rows = []
        for r in range(args.repeats):
            ref0 = reference_step_seconds()
            a_cache, b_cache = Path(tmp) / f"a{r}", Path(tmp) / f"b{r}"
            t_map = _run(py + ["map", str(grid), "--cache", str(a_cache), "--backend", "local",
                               "--no-progress"])
            if seeds is None:  # the seeds the map chose (judged seeds: none a calibration used)
                import pandas as pd
                seeds = sorted(set(pd.read_csv(a_cache / "maps" / "bench.csv")["seed"]))
            runs = list(itertools.product(BLOCK_LENS, OFFSETS, seeds))
            t_cli = sum(_run(py + ["train", "induction-2l", "--size", args.size, "--seed", str(s),
                                   "--set", f"block_len={b}", "--set", f"offset={o}", "--set",
                                   f"steps={args.steps}", "--cache", str(b_cache), "-q"])
                        for b, o, s in runs)
            ref1 = reference_step_seconds()
            rows.append((t_map, t_cli, len(runs), ref0, ref1))
            print(f"repeat {r + 1}: toymech map {t_map:.1f} s, {len(runs)} x toymech train "
                  f"{t_cli:.1f} s, ratio {t_cli / t_map:.2f}; reference {1 / ref0:.1f} / "
                  f"{1 / ref1:.1f} steps/s", flush=True)
    for t_map, t_cli, n, ref0, ref1 in rows:
        ref = (ref0 + ref1) / 2
        print(f"map of {n} runs ({args.steps} steps each, {args.size}): toymech map "
              f"{t_map / n:.2f} s a run ({t_map / n / ref:.0f} reference steps, measurement "
              f"included); toymech train one by one {t_cli / n:.2f} s a run "
              f"({t_cli / n / ref:.0f} reference steps); ratio {t_cli / t_map:.2f}")


if __name__ == "__main__":
    main()
