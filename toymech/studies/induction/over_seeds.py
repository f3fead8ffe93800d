"""Study 1 over seeds: the post's three models trained from every seed of ``seeds_of(size, seed,
n_seeds)``, each seed measured on what the claims read, and the per-seed table.

The notebook's detailed views read one seed (the notebook's); the scorecard reads every seed.
Seeds that differ only in their seed train together as stacked seeds where that was measured to
pay (``Zoo.get_or_train_many``); the entries are the same zoo entries a single run would make, so
the notebook's seed is never trained twice, and a run with more seeds reuses the first ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ... import analysis
from ...core import Setting
from ...devices import initial_threads
from ...models import build_model
from ...sweep import train_missing
from ...zoo import Zoo
from ..claims import verdict_table
from ..findings import Findings, at_setting, misses, opening, scorecard_sentence
from ..grid_training import train_grid
from ..protocol import judged_seeds
from .causal import causal_numbers
from .claims import CLAIMS, SETTINGS, SHORT, floor_and_chance, numbers
from .design import CALIBRATION, MAIN, POST_SETTING, SIZES, experiment
from .dynamics import InductionProbeData, probe_data
from .measure import (
    MECHANISM_SETS,
    POST_SETS,
    Model,
    learning,
    mechanism_bounds,
    mechanism_label,
    mechanism_predictions,
    mechanism_verdict,
)
from .own_sets import baselines_of, bounds_of
from .panel import bars


def load_seeds(size: Setting | str, seed: int, device: torch.device,
               cache_dir: str | Path | None = None, n_seeds: int | None = None,
               names: Sequence[str] = MAIN, progress: bool = False) -> dict[int, dict[str, Model]]:
    """The models ``names`` for every seed of ``seeds_of(size, seed, n_seeds)``:
    {seed: {name: Model}}."""
    zoo, seeds = Zoo(cache_dir), judged_seeds(SIZES, CALIBRATION, size, seed, n_seeds)
    out: dict[int, dict[str, Model]] = {s: {} for s in seeds}
    # what is missing trains first: on a CPU one process per free core, one run each, the
    # longest first (train_missing); on a GPU as one sweep, seeds stacked where that pays
    exps = sorted((experiment(n, size, s) for n in names for s in seeds),
                  key=lambda e: -e.model.n_layers)
    missing = [e for e in exps if not zoo.has(e)]
    if missing and torch.device(device).type == "cuda":
        train_grid(missing, zoo, device, stacked=None)
    elif missing:
        train_missing(zoo, missing, workers=max(1, initial_threads()), device=device)
    trained_now = {zoo.path(e) for e in missing}
    for name in names:
        entries = zoo.get_or_train_many([experiment(name, size, s) for s in seeds], device=device,
                                        progress=progress)
        for s, entry in zip(seeds, entries):
            entry.loaded = entry.loaded and entry.path not in trained_now  # trained by this call
            out[s][name] = Model(name, entry)
    return out


def _as_model(name: str, run) -> Model:
    """A ``Model`` from a zoo ``Model`` or a bare ``HookedTransformer`` (e.g. untrained)."""
    return run if isinstance(run, Model) else Model(name, None, module=run)


def _measured_for_claims(m: Model, data: InductionProbeData) -> Model:
    """What the claims read of one model (``measure_seed``), as a new ``Model`` from ``m``'s name
    and entry alone (whatever ``m`` had measured already is not carried over)."""
    model = m.model
    wanted = {k: data.sets[k] for k in (*POST_SETS, *MECHANISM_SETS) if k in data.sets}
    two = model.cfg.n_layers == 2
    return Model(
        m.name, m.entry, module=m.module, losses=analysis.set_losses(model, wanted),
        direct_copy=analysis.direct_path_copy_score(model), head_copy=analysis.ov_copy_scores(model),
        pattern_scores=(analysis.head_pattern_scores(model, data.pattern_tokens, kinds=("previous_token",))
                        if two else {}),
        paths=analysis.composition_path_losses(model, data.sets["test"]) if two and model.cfg.attn_only else {})


@torch.no_grad()
def measure_seed(runs: Mapping[str, Model | HookedTransformer], data: InductionProbeData
                 ) -> dict[str, float]:
    """One seed's named numbers (``claims.numbers``): each model's losses on the post's sets and
    the mechanism sets, copy metrics, and for 2-layer models the layer-0 previous-token scores
    and the composition path losses; and the predictors without induction on the mechanism sets
    (``base.*``: ``measure.mechanism_baselines``, once per seed: no model's). ``runs``: {name:
    Model or HookedTransformer} of one seed; ``data``: that seed's ``probe_data`` (its ``eval``
    stream; pattern scores on ``data.pattern_tokens``). Cheaper than ``measure``: no ablations.
    ``runs`` are left as they are."""
    models = {name: _measured_for_claims(_as_model(name, r), data) for name, r in runs.items()}
    floor, chance = floor_and_chance(data.task)
    predictions = (mechanism_predictions(data.task, data.sets) if "predictable" in data.sets
                   else {})
    bounds = {name: mechanism_bounds(m.model, data.sets, predictions)
              for name, m in models.items()} if predictions else {}
    out = numbers({"models": models, "chance": chance, "floor": floor, "base": bars(predictions),
                   "bounds": bounds, "learning": {n: learning(m) for n, m in models.items()}})
    if data.causal is not None:  # the causal tests (``causal.causal_numbers``)
        out.update(causal_numbers({n: m.model for n, m in models.items()}, data.causal))
    return out


def untrained_numbers(size: Setting | str, seed: int) -> dict[str, float]:
    """The null world: the post's three models at ``size``'s settings, initialised for ``seed``
    and left untrained, measured by ``measure_seed`` (what every claim must fail)."""
    exps = {n: experiment(n, size, seed) for n in MAIN}
    models = {n: build_model(e.model, "cpu").eval() for n, e in exps.items()}
    return measure_seed(models, probe_data(exps[MAIN[0]].task, size, seed))


def measure_seeds(runs: Mapping[int, Mapping[str, Model]], task, size: Setting | str,
                  device: str | torch.device = "cpu") -> dict[int, dict[str, float]]:
    """``measure_seed`` for every seed, each on its own evaluation data (``probe_data`` of that
    seed): {seed: numbers}."""
    return {s: measure_seed(models, probe_data(task, size, s, device))
            for s, models in runs.items()}


def _prefers(n: Mapping[str, float], short: str) -> str:
    o1, o2 = n.get(f"{short}.option1"), n.get(f"{short}.option2")
    if o1 is None or o2 is None:
        return "n/a"
    return "option 1" if o1 < o2 else "option 2"


def _mechanism_of(n: Mapping[str, float], short: str) -> tuple:
    """(the model ``short``'s losses on the mechanism sets, the predictors without induction on
    them, whether it was still learning (None: cannot tell), its margins' intervals) from one
    seed's numbers ``n``; what was not measured is left out."""
    still = n.get(f"{short}.still_learning", 0.0)
    return ({k: n[f"{short}.{k}"] for k in MECHANISM_SETS if f"{short}.{k}" in n},
            baselines_of(n), None if math.isnan(still) else bool(still), bounds_of(n, short))


def labels(n: Mapping[str, float]) -> dict[str, str]:
    """One seed's mechanism label per model (``measure.mechanism_label``, the maps' rule, with
    the seed's predictors without induction, ``base.*``, the model's margins' intervals and
    whether it was still learning): {short name: content / partial / position, or its state}."""
    return {short: mechanism_label(*_mechanism_of(n, short)) for short in SHORT.values()}


def seed_table(per_seed: Mapping[int, Mapping[str, float]]) -> pd.DataFrame:
    """One row per seed: each model's mechanism label (content / partial / position, or its
    state: untrained, still learning, undecided), test
    losses, the option each model's losses favour, the heads that copy / suppress, and each
    claim's verdict for that seed (from the claims' own tests)."""
    rows = []
    for s, n in per_seed.items():
        row: dict[str, object] = {"seed": s}
        row.update({f"{short} mechanism": label for short, label in labels(n).items()})
        for short in SHORT.values():
            row[f"{short} test"] = n.get(f"{short}.test")
        for short in ("smeared", "2l"):
            row[f"{short} option 1"] = n.get(f"{short}.option1")
            row[f"{short} option 2"] = n.get(f"{short}.option2")
            row[f"{short} lower loss on"] = _prefers(n, short)
        for short in ("smeared", "2l"):
            row[f"{short} heads copy/suppress"] = (
                f"{int(n[f'{short}.copying_heads'])}/{int(n[f'{short}.suppressing_heads'])}"
                if f"{short}.copying_heads" in n else "n/a")
        rows.append(row)
    table = pd.DataFrame(rows).set_index("seed").round(3)
    return table.join(verdict_table(CLAIMS, per_seed))


_MECHANISM = {"content-based": "by induction (content): beyond every predictor without "
                               "induction on other block lengths, failing no set",
              "partial": "partly by content: beyond the predictors without induction on some "
                         "of the other block lengths, or failing a set induction solves",
              "position": "by position, not by induction: no better than a predictor without "
                          "induction on other block lengths",
              "undecided": "undecided: a margin's interval straddles the cut, or too few sets "
                           "can tell",
              "still learning": "not yet: it was still learning when it stopped",
              "not solved": "not at all yet: the predictable letters are not solved in "
                            "distribution"}


def findings(per_seed: Mapping[int, Mapping[str, float]], card: pd.DataFrame, size: Setting | str):
    """"What this run found": the mechanism each model uses over seeds (the mechanism check), the
    out-of-distribution preferences, the scorecard's counts, what did not reproduce, and the
    run's budget against the post's, all computed (``studies.findings``)."""
    lines = []
    measured = list(per_seed.values())  # each seed's numbers
    at = at_setting(SETTINGS, size, POST_SETTING, "the post's")
    for short, label in (("2l", "The 2-layer model"), ("smeared", "The 1-layer smeared model")):
        verdicts = [mechanism_verdict(*_mechanism_of(n, short))
                    for n in measured if "base.predictable.oracle" in n]
        if verdicts:
            top, count = max(((v, verdicts.count(v)) for v in set(verdicts)), key=lambda x: x[1])
            key = next(k for k in _MECHANISM if top.startswith(k))
            lines.append(opening(at, f"{label} predicts the repeated letters "
                                     f"{_MECHANISM[key]} ({count} of {len(verdicts)} seeds)."))
    prefs = [(_prefers(n, "2l"), _prefers(n, "smeared")) for n in measured]
    if prefs:
        lines.append(opening(at, f"Out of distribution the 2-layer model has the lower loss on "
                                 f"option 1 (copy the first block) in "
                                 f"{sum(a == 'option 1' for a, _ in prefs)} of {len(prefs)} "
                                 "seeds, the smeared model on option 2 (the most recent block) "
                                 f"in {sum(b == 'option 2' for _, b in prefs)} of "
                                 f"{len(prefs)}."))
    lines.append(scorecard_sentence(card))
    lines.append(misses(card))
    return Findings(lines, setting=at, size=size)
