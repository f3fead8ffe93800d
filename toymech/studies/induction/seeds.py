"""Study 1 over seeds: the post's three models trained from ``n`` seeds (``SIZES[size]["seeds"]``),
each seed measured on what the claims read, and the per-seed verdicts tabulated.

The notebook's detailed views read one seed (the notebook's); the scorecard and the agreement
lines read every seed. Seeds that differ only in their seed train together as stacked seeds where
that was measured to pay (``Zoo.get_or_train_many``); the entries are the same zoo entries a
single run would make, so the notebook's seed is never trained twice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd
import torch

from ... import analysis
from ...core import check_int
from ...tasks import Batch
from ...training import Zoo
from .claims import CLAIMS, SHORT, numbers
from .experiments import MAIN, SIZES, experiment
from .measure import POST_SETS, Model

COPYING, SUPPRESSING = 0.5, -0.5  # a head's OV copy score above / below: copies / suppresses


def seeds_of(size: str, seed: int) -> tuple[int, ...]:
    """The seeds a claim is assessed over: ``seed, seed + 1, ...`` (``SIZES[size]["seeds"]``)."""
    check_int("seed", seed, 0)
    return tuple(range(seed, seed + SIZES[size]["seeds"]))


def load_seeds(size: str, seed: int, device: torch.device, cache_dir: str | Path | None = None,
               names: Sequence[str] = MAIN, progress: bool = False) -> dict[int, dict[str, Model]]:
    """The models ``names`` for every seed of ``seeds_of(size, seed)``: {seed: {name: Model}}."""
    zoo, seeds = Zoo(cache_dir), seeds_of(size, seed)
    out: dict[int, dict[str, Model]] = {s: {} for s in seeds}
    for name in names:
        entries = zoo.get_or_train_many([experiment(name, size, s) for s in seeds], device=device,
                                        progress=progress)
        for s, entry in zip(seeds, entries):
            out[s][name] = Model(name, entry)
    return out


def measure_claims(models: Mapping[str, Model], sets: Mapping[str, Batch]) -> dict[str, float]:
    """What the claims read, for one seed: losses on the post's sets and copy scores (cheaper than
    ``measure``: no ablations, no patterns). Returns ``claims.numbers`` plus head counts."""
    for m in models.values():
        m.losses.update(analysis.set_losses(m.model, {k: sets[k] for k in POST_SETS}))
        m.direct_copy = analysis.direct_path_copy_score(m.model)
        m.head_copy = analysis.ov_copy_scores(m.model)
    out = numbers(models)
    for name, m in models.items():
        short = SHORT.get(name)
        if short is not None:
            out[f"{short}.copying_heads"] = float((m.head_copy > COPYING).sum())
            out[f"{short}.suppressing_heads"] = float((m.head_copy < SUPPRESSING).sum())
            out[f"{short}.heads"] = float(m.head_copy.numel())
    return out


def measure_seeds(runs: Mapping[int, Mapping[str, Model]], sets: Mapping[str, Batch]
                  ) -> dict[int, dict[str, float]]:
    """``measure_claims`` for every seed: {seed: numbers}."""
    return {s: measure_claims(models, sets) for s, models in runs.items()}


def _prefers(n: Mapping[str, float], short: str) -> str:
    o1, o2 = n.get(f"{short}.option1"), n.get(f"{short}.option2")
    if o1 is None or o2 is None:
        return "n/a"
    return "option 1" if o1 < o2 else "option 2"


def seed_table(per_seed: Mapping[int, Mapping[str, float]]) -> pd.DataFrame:
    """One row per seed: test and OOD losses, which option each model prefers, and the heads that
    copy / suppress (OV copy score above 0.5 / below -0.5)."""
    rows = []
    for s, n in per_seed.items():
        row: dict[str, object] = {"seed": s}
        for short in ("1l", "smeared", "2l"):
            row[f"{short} test"] = n.get(f"{short}.test")
        for short in ("smeared", "2l"):
            row[f"{short} option 1"] = n.get(f"{short}.option1")
            row[f"{short} option 2"] = n.get(f"{short}.option2")
            row[f"{short} prefers"] = _prefers(n, short)
        for short in ("smeared", "2l"):
            row[f"{short} heads copy/suppress"] = (
                f"{int(n[f'{short}.copying_heads'])}/{int(n[f'{short}.suppressing_heads'])}"
                if f"{short}.copying_heads" in n else "n/a")
        rows.append(row)
    return pd.DataFrame(rows).set_index("seed").round(3)


def _agree(key: str, seeds: Sequence[Mapping[str, float]]) -> str:
    """"k/n" for the claim ``key``, with the claim's own test (seeds that lack its numbers are
    left out of n)."""
    claim = next(c for c in CLAIMS if c.key == key)
    held = []
    for x in seeds:
        try:
            held.append(bool(claim.holds(x)))
        except KeyError:
            pass
    return f"{sum(held)}/{len(held)}"


def agreement_lines(per_seed: Mapping[int, Mapping[str, float]]) -> list[str]:
    """The headline comparisons as "k/n seeds" sentences, computed with the claims' own tests."""
    seeds = list(per_seed.values())
    both = sum(_prefers(x, "2l") == "option 1" and _prefers(x, "smeared") == "option 2"
               for x in seeds)
    counts = [str(int(x["smeared.suppressing_heads"])) if "smeared.suppressing_heads" in x
              else "n/a" for x in seeds]
    heads = int(seeds[0].get("smeared.heads", 0)) if seeds else 0
    return [
        f"2-layer prefers option 1 (copy the first block) in {_agree('2l-option1', seeds)} seeds",
        f"1-layer smeared prefers option 2 (copy the most recent block) in "
        f"{_agree('smeared-option2', seeds)} seeds",
        f"the post's disagreement (both at once) in {both}/{len(seeds)} seeds",
        f"suppressing heads in the 1-layer smeared model, per seed: {', '.join(counts)} (of "
        f"{heads} heads)",
        f"the 2-layer direct path suppresses the current letter in "
        f"{_agree('direct-suppresses', seeds)} seeds",
    ]
