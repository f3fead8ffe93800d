"""Only a uniform guess is called chance: in every study's scorecard (built from its untrained
numbers at ``smoke``), in the claims' own references, and in README.md and every Markdown file
under docs/, a number named "chance" must be the loss or accuracy of a uniform guess over one of
the study's tasks (ln V, 1 / V or 100 / V for its vocabulary V; study 1: ln 26 over its letters).
A line derived from it (half of it, a midpoint) is a "threshold"; the best constant answer is a
"trivial predictor"."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from toymech import tasks
from toymech.core import SIZES
from toymech.studies import protocol
from toymech.studies.claims import _call

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# "3.26 (chance", "1.63 nats (chance: ...)", "chance's 3.26", "chance (4.6", "chance = 1.63"
_NUMBER = r"(?P<num>\d+(?:\.\d+)?)(?![\d/])"
CALLED_CHANCE = (re.compile(_NUMBER + r"\s*(?:nats|%)?\s*\((?:the )?chance\b"),
                 re.compile(r"\bchance(?:'s)?\s*(?:\(|=|:|,|\bis\b|\bof\b|\bat\b)\s*" + _NUMBER))


def _guesses(vocab: int, letters: int | None = None) -> set[float]:
    """A uniform guess over ``vocab`` answers (and over ``letters``): its loss and accuracy."""
    return {g for v in {vocab, letters or vocab} for g in (math.log(v), 1 / v, 100 / v)}


def uniform_guesses(name: str, size: str) -> set[float]:
    """The uniform guesses of every task study ``name``'s experiments train at ``size``, computed
    here from the tasks themselves (not from the study's numbers)."""
    st = protocol.study(name)
    out: set[float] = set()
    made = [named.make(size, 0).task for named in st.named_experiments.values()]
    spec = st.sizes[size]  # tasks a size names beside its experiments (study 3's side tasks)
    made += [tasks.get(t, **params) for t, params in (getattr(spec, "tasks", None) or {}).items()]
    for task in made:
        out |= _guesses(task.d_vocab, getattr(task, "n_letters", None))
    return out


def every_guess() -> set[float]:
    """The uniform guesses of every registered task and of every study's tasks at every size."""
    out = {g for n in tasks.names() for g in _guesses(tasks.get(n).d_vocab,
                                                      getattr(tasks.get(n), "n_letters", None))}
    for name in protocol.STUDIES:
        for size in SIZES:
            out |= uniform_guesses(name, size)
    return out


def _shown(text: str, guesses: set[float]) -> bool:
    """Whether the number ``text`` (as printed) is one of ``guesses`` to its printed digits."""
    digits = len(text.split(".")[1]) if "." in text else 0
    return any(abs(float(text) - g) <= 0.5 * 10 ** -digits + 1e-9 for g in guesses)


def called_chance(text: str, guesses: set[float]) -> list[str]:
    """The numbers ``text`` calls chance that are no uniform guess of ``guesses``, in context."""
    bad = []
    for pattern in CALLED_CHANCE:
        for m in pattern.finditer(text):
            if not _shown(m.group("num"), guesses):
                bad.append(text[max(0, m.start() - 60):m.end() + 30].replace("\n", " "))
    return bad


def test_the_check_fails_on_a_threshold_called_chance():
    guesses = _guesses(26)
    assert called_chance("| 1.63 (chance: half a uniform guess) |", guesses)
    assert called_chance("the midpoint, 1.98 (chance)", guesses)
    assert called_chance("| 4.6 (chance: the most common answer, about 1/p) |", _guesses(23))
    assert called_chance("below chance (1.63 nats)", guesses)
    assert not called_chance("| 3.26 (chance: a uniform guess over the 26 letters, ln 26) |",
                             guesses)
    assert not called_chance("| 1.63 (threshold: half a uniform guess) | above chance's 3.26",
                             guesses)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_number_in_the_docs_is_called_chance_unless_it_is_a_uniform_guess(doc):
    bad = called_chance(doc.read_text(encoding="utf-8"), every_guess())
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", list(protocol.STUDIES))
def test_every_scorecards_chance_is_the_uniform_guess_of_its_task(name):
    st = protocol.study(name)
    seeds = st.seeds_of("smoke", 0, 1)
    per_seed = [st.untrained_numbers("smoke", s) for s in seeds]
    guesses = uniform_guesses(name, "smoke")
    for c in st.claims:  # the reference itself, unrounded
        ref = _call(c.reference, per_seed[0])
        if c.null == "chance" and ref is not None:
            assert any(math.isclose(ref, g, rel_tol=1e-3) for g in guesses), (c.key, ref)
    card = st.scorecard(per_seed, "smoke", list(seeds))
    cells = "\n".join(f"| {cell} |" for cell in card["chance / null"])
    assert not called_chance(cells, guesses), called_chance(cells, guesses)
