"""Claims that can fail, over the registry (``protocol.STUDIES`` and the template): each
study's claims against its own source-like numbers (every claim holds), NaN / missing numbers
(not measured), at-chance numbers and the null world (untrained models at each size's own
settings through the study's own ``measure_seed``: every claim reads "not reproduced", or
"below the source's setting" while the seeds alone say "not reproduced", unless the row
declares why it cannot be shown to fail). Two seeds per size: a claim an untrained seed passes
reads "consistent" or "mixed" there, so it fails the test."""

import importlib
import math
import os
from collections.abc import Mapping

import pytest

from toymech.studies import protocol
from toymech.studies.claims import BELOW, Measured, assess, scorecard

NAMES = (*protocol.STUDIES, protocol.TEMPLATE)


def importlib_claims(name):
    """The study's ``claims`` module (its ``source_like`` and ``at_chance``)."""
    return importlib.import_module(f"toymech.studies.{name}.claims")


def _study(name):
    return protocol.study(name), importlib_claims(name)


class _Recorder(Mapping):
    """A seed's numbers that remember which keys a claim read."""

    def __init__(self, numbers):
        self.numbers, self.read = numbers, set()

    def __getitem__(self, key):
        self.read.add(key)
        return self.numbers[key]

    def __iter__(self):
        return iter(self.numbers)

    def __len__(self):
        return len(self.numbers)


def _claims():
    return [(name, c) for name in NAMES for c in protocol.study(name).CLAIMS]


@pytest.mark.parametrize("name, claim", _claims(), ids=lambda x: getattr(x, "key", x))
def test_each_claim_holds_on_source_like_numbers(name, claim):
    n = importlib_claims(name).source_like()
    assert claim.holds(Measured(n)) is True
    assert math.isfinite(claim.value(Measured(n)))
    a = assess(claim, [n] * 3)
    assert a.verdict == "reproduced" and a.agree == 3


@pytest.mark.parametrize("name, claim", _claims(), ids=lambda x: getattr(x, "key", x))
def test_nan_or_missing_numbers_are_not_measured(name, claim):
    n = importlib_claims(name).source_like()
    rec = _Recorder(n)
    claim.holds(Measured(rec))
    assert rec.read, "the claim reads no number"
    for key in sorted(rec.read):
        # A sweep over the Ks a user chose, or the memories a model has, may legitimately lack
        # one of them; a control read among alternatives (the normal run at one of two widths)
        # too: there only NaN and inf must read "not measured".
        optional = key.startswith(("sweep.", "construction.")) or ".normal." in key
        variants = [{**n, key: float("nan")}, {**n, key: float("inf")}]
        if not optional:
            variants.append({k: v for k, v in n.items() if k != key})
        for broken in variants:
            a = assess(claim, [broken] * 3)
            if optional and a.measured:
                continue
            assert a.measured == 0 and a.verdict == "not measured", key
    assert assess(claim, [{}]).verdict == "not measured"


@pytest.mark.parametrize("name", NAMES)
def test_at_chance_numbers_pass_no_claim(name):
    """Every number moved to what a model that learned nothing gives (the study's own
    ``at_chance``): no trained claim passes, none reads mixed or unresolved."""
    st, cl = _study(name)
    chance = cl.at_chance(cl.source_like())
    card = scorecard(st.CLAIMS, [chance] * 3)
    trained = [c.statement for c in st.CLAIMS if c.trained and not c.null_exempt]
    assert card.loc[trained, "verdict"].str.startswith("not reproduced").all(), \
        card.loc[trained, "verdict"].to_string()


# --- the null world: untrained models at each size's own settings, the study's own code ---------
# ``paper`` builds the sources' full-size models (study 3 at width 1024, Birth at T = 256): over
# an hour on a 2-core CPU, so it runs where TOYMECH_PAPER_TESTS=1 asks for it (a GPU box, a
# nightly job); ``default`` runs in every suite.
PAPER_TESTS = os.environ.get("TOYMECH_PAPER_TESTS") == "1"


@pytest.mark.parametrize("size", ("default", pytest.param("paper", marks=pytest.mark.skipif(
    not PAPER_TESTS, reason="the paper-size null world: set TOYMECH_PAPER_TESTS=1 (over an hour "
                            "on a 2-core CPU)"))))
@pytest.mark.parametrize("name", NAMES)
def test_null_world(name, size):
    st = protocol.study(name)
    seeds = st.seeds_of(size, 0, 2)
    per_seed = [st.untrained_numbers(size, s) for s in seeds]
    card = st.scorecard(per_seed, size, list(seeds))
    alone = scorecard(st.CLAIMS, per_seed)  # what the seeds say, whatever the setting
    bad = []
    for c in st.CLAIMS:
        v, raw = card.loc[c.statement, "verdict"], alone.loc[c.statement, "verdict"]
        if c.null_exempt:
            continue
        ok = raw.startswith("not reproduced") and (v.startswith("not reproduced")
                                                    or v.startswith(BELOW))
        if not ok:
            bad.append(f"{c.key}: {v} (the seeds alone: {raw})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", NAMES)
def test_exemptions_are_printed(name):
    from toymech.studies.docs import claims_markdown
    text = claims_markdown()
    for c in protocol.study(name).CLAIMS:
        if c.null_exempt:
            assert " ".join(c.null_exempt.split()) in text, c.key


def test_claims_are_documented_one_row_each():
    """docs/sources.md has the generated claims table, current: one row per claim key of every
    registered study, each with our test, the tolerance's derivation and its setting
    (``python -m toymech.studies.docs`` rewrites it)."""
    from pathlib import Path

    from toymech.studies.docs import with_table
    text = (Path(__file__).parents[1] / "docs" / "sources.md").read_text()
    assert with_table(text) == text, "run: python -m toymech.studies.docs"
    for name in protocol.STUDIES:
        for c in protocol.study(name).CLAIMS:
            assert f"| `{c.key}` |" in text, (name, c.key)
            assert c.test and c.why, c.key


@pytest.mark.parametrize("name", NAMES)
def test_claim_keys_are_unique_and_state_a_setting(name):
    claims = protocol.study(name).CLAIMS
    assert len({c.key for c in claims}) == len(claims)
    # Only a claim of ours (a recipe's, at its own setting) may state no source setting.
    assert all(c.setting or c.ours for c in claims), [c.key for c in claims if not c.setting]
