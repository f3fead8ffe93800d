"""Claims that can fail, over the registry (``protocol.STUDIES`` and the template): each
study's claims against its own source-like numbers (every claim holds), NaN / missing numbers
(not measured), at-chance numbers and the null world (untrained models at each size's own
settings through the study's own ``measure_seed``: every claim reads "not reproduced" ("does not
hold (our test)" for a test of ours), or "below the source's setting" while the seeds alone say
so, unless the row
declares why it cannot be shown to fail). Two seeds per size: a claim an untrained seed passes
reads "consistent" or "mixed" there, so it fails the test."""

import importlib
import math
import os
from collections.abc import Mapping

import pytest

from toymech.studies import protocol
from toymech.studies.claims import BELOW, Claim, Measured, assess, verdict_words
from toymech.studies.settings import KINDS, missing

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
    return [(name, c) for name in NAMES for c in protocol.study(name).claims]


@pytest.mark.parametrize("name, claim", _claims(), ids=lambda x: getattr(x, "key", x))
def test_each_claim_holds_on_source_like_numbers(name, claim):
    n = importlib_claims(name).source_like()
    assert claim.holds(Measured(n)) is True
    assert math.isfinite(claim.value(Measured(n)))
    a = assess(claim, [n] * 3)
    assert a.verdict == verdict_words(claim)[0] and a.agree == 3


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
    said = {c.key: (assess(c, [chance] * 3).verdict, verdict_words(c)[1]) for c in st.claims
            if c.trained and not c.null_exempt}  # what the seeds say, whatever the setting
    assert all(v.startswith(fails) for v, fails in said.values()), said


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
    bad = []
    for c in st.claims:
        # what the seeds say, whatever the setting (``assess`` without one)
        v, raw = card.loc[c.statement, "verdict"], assess(c, per_seed).verdict
        if c.null_exempt:
            continue
        fails = verdict_words(c)[1]
        ok = raw.startswith(fails) and (v.startswith(fails) or v.startswith(BELOW))
        if not ok:
            bad.append(f"{c.key}: {v} (the seeds alone: {raw})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", NAMES)
def test_exemptions_are_printed(name):
    from toymech.studies.docs import claims_markdown
    text = claims_markdown()
    for c in protocol.study(name).claims:
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
        for c in protocol.study(name).claims:
            assert f"| `{c.key}` |" in text, (name, c.key)
            assert c.test and c.why, c.key


@pytest.mark.parametrize("name, claim", _claims(), ids=lambda x: getattr(x, "key", x))
def test_every_claim_names_its_setting_and_each_size_states_it(name, claim):
    """No verdict without a setting: each row names the steps, a width and the data (or task
    sizes) it depends on (a recipe row of ours: the recipe's own), and every size of the study
    states each parameter, so none reads "not stated"."""
    assert not missing(claim.setting), (claim.key, missing(claim.setting))
    settings = importlib_claims(name).SETTINGS
    for size, ours in settings.sizes.items():
        unstated = [k for k in claim.setting if k not in ours]
        assert not unstated, (claim.key, size, unstated)


@pytest.mark.parametrize("name", NAMES)
def test_claim_keys_are_unique(name):
    claims = protocol.study(name).claims
    assert len({c.key for c in claims}) == len(claims)


def _claim(setting):
    return Claim("k-1", "a claim", "s", "v", value=lambda n: n["a"], holds=lambda n: True,
                 setting=setting)


@pytest.mark.parametrize("setting, lacks", [
    ({}, list(KINDS)),
    ({"steps": 10_000}, ["a width", "the data or task size"]),
    ({"steps": 10_000, "d_model": 32}, ["the data or task size"]),
    ({"digits": 10}, ["the steps", "a width"]),
    ({"circuit_target": 128}, ["the steps", "a width"]),
])
def test_registration_refuses_an_empty_or_partial_setting(setting, lacks):
    with pytest.raises(ValueError) as err:
        _claim(setting)
    text = str(err.value)
    assert "'k-1'" in text and "\n" not in text  # one line naming the claim ...
    assert all(kind in text for kind in lacks), text  # ... and what is missing
    assert _claim({"steps": 1, "width": 16, "digits": 10}).setting  # a whole one registers
