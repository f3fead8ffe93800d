"""Every study's knobs, over the registry (``protocol.STUDIES`` and the template), so a study
added from the template is covered with no edit here: each knob round-trips, its source value
builds the study's own experiments (the same zoo keys), out-of-range and unknown values are
refused in one line naming the knob, and the null world holds at a variant."""

import pickle
from pathlib import Path

import pytest

from toymech.core import Setting
from toymech.studies import knobs, protocol
from toymech.studies.claims import scorecard

NAMES = (*protocol.STUDIES, protocol.TEMPLATE)
# One variant per study for the null world (a knob of the study's data or model).
NULL_VARIANTS = {"induction": {"block_len": "4-8", "offset": "0-3"},
                 "birth": {"embeddings": "trained"},
                 "random_transformers": {"modulus": 31}}


def _knobs():
    return [(name, k) for name in NAMES for k in protocol.study(name).knobs.values()]


def _bad_values(knob):
    if knob.kind in ("int", "ints"):
        return [knob.allowed[1] + 1, knob.allowed[0] - 1, "x", 2.5, True]
    if knob.kind == "float":
        return [knob.allowed[1] * 10 + 1, "nan", "inf", "x", True]
    if knob.kind == "bool":
        return ["maybe", 2, None]
    return ["no-such-choice", 3, None]


@pytest.mark.parametrize("name, knob", _knobs(), ids=lambda x: getattr(x, "name", x))
def test_knob_round_trips_and_refuses_bad_values(name, knob):
    assert knob.parse(knob.source) == knob.source
    assert knob.parse(knob.text(knob.source)) == knob.source  # as a user types it
    assert knob.parse(knobs.jsonable_value(knob.source)) == knob.source  # as JSON
    assert knob.meaning and knob.allowed_text()
    for bad in _bad_values(knob):
        with pytest.raises(ValueError, match=rf"^{knob.name}=.* is not allowed: "):
            knob.parse(bad)
        with pytest.raises(ValueError, match=rf"{knob.name}="):
            protocol.study(name).with_knobs("default", {knob.name: bad})


def _values(knob):
    """Values of ``knob`` across its range, floats of 10 significant digits among them."""
    if knob.kind == "bool":
        return [True, False]
    if knob.kind == "choice":
        return list(knob.allowed)
    lo, hi = knob.allowed
    if knob.kind == "float":
        inside = [lo + (hi - lo) * f for f in (0.0, 1e-9, 0.0012345678, 0.31415926535, 1.0)]
        return [*inside, knob.source, knob.source * (1 + 1e-9)]
    mid = (lo + hi) // 2
    values = [lo, hi, mid, knob.source]
    if knob.kind == "ints" and hi - lo >= 4:
        values += [(lo, lo + 1, lo + 2), (lo, lo + 2, lo + 4)]
    return values


@pytest.mark.parametrize("name, knob", _knobs(), ids=lambda x: getattr(x, "name", x))
def test_every_knob_value_has_one_lossless_text_form(name, knob):
    """One text form per value that reads back as the same value (a float exactly: two floats
    apart in their tenth digit stay two texts); the text of that value again is the same text;
    the table's check (``ledger.verify_rows``) reads that text as written by toymech."""
    texts = {}
    for value in _values(knob):
        try:
            canonical = knob.parse(value)
        except ValueError:
            continue  # outside the knob's range (its source times a little)
        text = knob.text(canonical)
        assert knob.parse(text) == canonical and knob.text(knob.parse(text)) == text, (value, text)
        assert isinstance(canonical, float) == (knob.kind == "float")
        texts.setdefault(text, set()).add(canonical)
    assert all(len(v) == 1 for v in texts.values()), texts  # distinct values, distinct texts
    if knob.kind == "float":
        lo, hi = knob.allowed
        a = lo + (hi - lo) * 0.0010000001
        b = lo + (hi - lo) * 0.0010000002
        assert knob.text(knob.parse(a)) != knob.text(knob.parse(b))


def test_float_text_keeps_the_short_form_and_every_digit():
    from toymech.core import float_text

    assert [float_text(v) for v in (0.001, 3.0, 1e-05, 0.3, 123456.0)] == [
        "0.001", "3", "1e-05", "0.3", "123456"]  # as tables written before wrote them
    assert float_text(0.0012345678) == "0.0012345678"
    assert float_text(0.0010000001) != float_text(0.0010000002)
    assert float(float_text(0.1 + 0.2)) == 0.1 + 0.2
    with pytest.raises(ValueError, match="finite"):
        float_text(float("nan"))


def test_cost_keys_write_knob_values_in_the_one_text_form():
    from toymech.report.costs import CostTable

    a = CostTable.key("smoke", None, {"lr": 0.0010000001})
    assert a == "size=smoke,lr=0.0010000001" != CostTable.key("smoke", None, {"lr": 0.0010000002})
    assert CostTable.key("default", 3, {"block_len": "4-8", "mlp": True}) == (
        "size=default,seeds=3,block_len=4-8,mlp=yes")


@pytest.mark.parametrize("name", NAMES)
def test_source_values_build_the_study_itself(name):
    """A variant of the source's values IS the source's size: the same experiments, the same
    zoo keys (at ``paper``, where the study runs at its source's setting)."""
    st = protocol.study(name)
    every = {k.name: k.source for k in st.knobs.values()}
    same = st.with_knobs("paper", every)
    assert same == Setting("paper") and not same.knobs and not same.described
    assert [e.key() for e in st.experiments("paper", [0, 1])] == \
        [e.key() for e in st.experiments(same, [0, 1])]
    typed = {k.name: k.text(k.source) for k in st.knobs.values()}  # as --set would give them
    assert st.with_knobs("paper", typed) == Setting("paper")


# The knobs whose first other value (``_another_value``) the study refuses, with the value that
# shows the change: study 3's recipe_width 1 is no multiple of the heads (0 means "each recipe's
# own"); 20 digits do not fit the width-16 runs' context.
OTHER_VALUE = {("random_transformers", "recipe_width"): 4096, ("random_transformers", "digits"): 9}
# Knobs that change only the study's named runs (``toymech train NAME``), none of the notebook's
# runs at ``paper``: study 3's recipe_width sets the recipe runs' width.
ONLY_NAMED_RUNS = {("random_transformers", "recipe_width")}


@pytest.mark.parametrize("name, knob", _knobs(), ids=lambda x: getattr(x, "name", x))
def test_each_knob_changes_what_it_says(name, knob):
    """A value other than the source's changes at least one of the study's experiments at
    ``paper`` (a knob that changes nothing would read as a variant and be none), and a
    variant's runs get keys of their own."""
    st = protocol.study(name)
    value = OTHER_VALUE.get((name, knob.name), _another_value(knob))
    v = st.with_knobs("paper", {knob.name: value})  # a refusal here fails, naming the knob
    assert isinstance(v, Setting) and v.size == "paper" and list(v.knobs) == [knob.name], \
        (knob.name, value)
    assert knob.parse(v.knobs[knob.name]) == knob.parse(value) != knob.source
    assert v.described.startswith(f"a variant: {knob.name} ")
    again = pickle.loads(pickle.dumps(v))  # process pools and Ray get the same setting
    assert again == v and hash(again) == hash(v) and again.described == v.described
    keys = {e.key() for e in st.experiments("paper", [0])}
    changed = {e.key() for e in st.experiments(v, [0])} != keys
    if (name, knob.name) in ONLY_NAMED_RUNS:
        assert not changed and _changes_named_runs(name, v)
    else:
        assert changed


def _changes_named_runs(name, v):
    """The knob changes one of the study's named experiments (``toymech train NAME``; study
    3's ``recipe_width``: the recipe runs), though none of the notebook's runs at ``paper``."""
    from toymech.experiments import registry

    named = [x for x in registry().values() if x.study == name]
    return any(x.make("paper", 0).key() != x.make(v, 0).key() for x in named)


def _another_value(knob, low=False):
    if knob.kind == "bool":
        return not knob.source
    if knob.kind == "choice":
        return next(c for c in knob.allowed if c != knob.source)
    lo, hi = knob.allowed
    if knob.kind == "float":
        return lo if low else min(hi, knob.source * 2)
    src = knob.source if isinstance(knob.source, int) else knob.source[0]
    up = src * 2 if lo <= src * 2 <= hi and src > 0 else src + 1  # doubling keeps divisibility
    return max(lo, src - 1) if low or up > hi else up


def test_a_setting_is_a_value():
    """A Setting is its size and knobs (its sentence apart), hashable and checked; a plain size
    name converts at the boundary (``Setting.of``) and a setting's knobs are kept on top."""
    a = Setting("default", {"block_len": [4, 5, 6]}, "a variant: block_len 4-6")
    assert a == Setting("default", {"block_len": (4, 5, 6)}) and len({a, Setting("default",
                                                                     {"block_len": [4, 5, 6]})}) == 1
    assert a != Setting("default") and a != Setting("paper", {"block_len": [4, 5, 6]})
    assert Setting.of("smoke") == Setting("smoke") and Setting.of(a) is a
    assert a.text() == "size default, a variant: block_len 4-6" and str(a) == "default"
    assert Setting("paper").text() == "size paper"
    with pytest.raises(ValueError, match=r"^size='huge'"):
        Setting.of("huge")
    with pytest.raises(ValueError, match=r"^knobs="):
        Setting("default", ["block_len", 6])
    with pytest.raises(TypeError):
        a.knobs["block_len"] = 7  # read-only: a setting never changes under a cache key
    st = protocol.study("induction")
    both = st.with_knobs(st.with_knobs("default", {"offset": "0-3"}), {"block_len": "4-8"})
    assert dict(both.knobs) == {"block_len": (4, 5, 6, 7, 8), "offset": (0, 1, 2, 3)}


def test_study_3_plan_knobs_reach_the_plan_through_their_declaration():
    """study 3's ``width``, ``recipe_width`` and ``trains`` act on the plan (their ``plan``) and
    write no override of their own (``trains`` also overrides the random arm's freezing)."""
    from toymech.studies import random_transformers as rt
    from toymech.studies.random_transformers.design import FREEZE_MODES

    k = rt.STUDY.knobs
    assert k["width"].plan and k["recipe_width"].plan and k["trains"].plan
    assert k["width"].overrides is None and k["recipe_width"].overrides is None
    base = rt.plan("paper")
    wide = rt.plan(rt.with_knobs("paper", {"width": 512}))
    assert base.widths == (16, 1024) and wide.widths == (16, 512)
    assert rt.plan(rt.with_knobs("paper", {"recipe_width": 128})).recipe_width == 128
    u = rt.with_knobs("paper", {"trains": "U"})
    assert rt.plan(u).trains == "U" and "U" not in rt.plan(u).ablation_modes
    assert rt.experiment("needle", 1024, "random", u, 0).train.freeze == FREEZE_MODES["U"]
    exp = rt.experiment("needle", 64, "random", "paper", 0)
    assert k["width"].apply(exp, 512).key() == exp.key()  # no override: only the plan
    with pytest.raises(ValueError, match=r"^width=18 is not allowed"):
        rt.with_knobs("paper", {"width": 18})


# A setting's knob value read directly (``size.knobs["width"]``, ``Setting.of(s).knobs.get``).
READ_KNOB = r"(size|setting)\.knobs\s*(\.get\(|\[)|Setting\.of\([^)]*\)\.knobs\s*(\.get\(|\[)"


def test_studies_read_knob_values_only_through_the_knobs_module():
    """A study's modules never read a setting's knob values themselves: ``knobs.variant_values``
    (experiment builders, ``apply_knobs``) and ``knobs.apply_to_plan`` are the one path."""
    import re

    root = Path(__file__).resolve().parents[1] / "toymech" / "studies"
    hits = [f"{p.relative_to(root)}: {m.group(0)}" for p in root.glob("*/*.py")
            for m in re.finditer(READ_KNOB, p.read_text())]
    assert hits == []


@pytest.mark.parametrize("name", NAMES)
def test_unknown_knob_and_bad_variant_refused(name):
    st = protocol.study(name)
    with pytest.raises(ValueError, match=r"^knob='no_such_knob' is not allowed: one of "):
        st.with_knobs("default", {"no_such_knob": 1})
    with pytest.raises(ValueError, match=r"^variant="):
        st.with_knobs("default", ["block_len", 6])
    with pytest.raises(ValueError, match=r"^size="):
        st.with_knobs("huge", {})


def test_a_knob_of_another_study_is_named_as_such():
    with pytest.raises(ValueError, match=r"a knob of study 'birth', not of 'induction'"):
        protocol.study("induction").with_knobs("default", {"embeddings": "trained"})


def test_width_knobs_keep_the_model_consistent():
    from toymech.studies import induction as st

    exp = st.experiment("induction-2l", st.with_knobs("default", {"d_model": 64}))
    assert exp.model.d_model == 64 and exp.model.d_head == 16  # d_model / n_heads, never 4 x 8
    exp = st.experiment("induction-2l", st.with_knobs("default", {"d_model": 64, "n_heads": 2}))
    assert exp.model.d_head == 32


def test_a_sequence_longer_than_the_context_is_refused():
    st = protocol.study("induction")
    with pytest.raises(ValueError, match=r"n_blocks, block_len=.* sequences of at most 1024"):
        st.with_knobs("default", {"n_blocks": 200, "block_len": 200})
    with pytest.raises(ValueError, match=r"offset=5 .*must repeat its block"):  # never repeats
        st.with_knobs("default", {"seq_len": 12, "block_len": "4-8", "offset": 5})


@pytest.mark.parametrize("name", sorted(NULL_VARIANTS))
def test_null_world_at_a_variant(name):
    """Untrained models at a variant pass no trained claim's test: every such row of the
    variant's scorecard reads "does not hold" (properties, never a verdict on the source)."""
    st = protocol.study(name)
    size = st.with_knobs("default", NULL_VARIANTS[name])
    assert isinstance(size, Setting) and size.knobs
    seeds = st.seeds_of(size, 0, 2)
    card = st.scorecard([st.untrained_numbers(size, s) for s in seeds], size, list(seeds))
    assert card.attrs["title"].startswith("Properties of a variant")
    bad = [f"{c.key}: {card.loc[c.statement, 'verdict']}" for c in st.claims
           if c.trained and not c.null_exempt
           and not card.loc[c.statement, "verdict"].startswith(("does not hold", "not measured"))]
    assert not bad, "\n".join(bad)
    assert not card["verdict"].str.contains("reproduced").any()


def test_variant_scorecard_counts_seeds_as_properties():
    st = protocol.study("induction")
    from toymech.studies.induction import claims as cl

    size = st.with_knobs("default", {"offset": "0-3"})
    good = cl.source_like()
    card = scorecard(st.claims, [good, good, good], size, [3, 4, 5])
    assert card["verdict"].str.startswith("holds, 3 of 3 seeds").any()
    assert not card["verdict"].str.contains("reproduced").any()
    assert "offset 0-3" in card.attrs["title"]


# --- mechanism labels: pure functions of a run's numbers, checked on hand-built and null cases ---
def test_induction_labels():
    from toymech.studies.induction.measure import mechanism_label

    base = {"predictable": {"copier": 1.85, "best": 0.0, "oracle": 0.3},
            "shifted": {"copier": 2.0, "best": 0.0, "oracle": 0.55},
            "shorter": {"copier": 1.65, "best": 1.5, "oracle": 0.2},
            "longer": {"copier": 2.0, "best": 1.7, "oracle": 0.5}}
    solved = {"predictable": 0.1, "shifted": 0.2, "shorter": 0.3, "longer": 0.3}
    assert mechanism_label(solved, base) == "content"
    assert mechanism_label({**solved, "shorter": 4.0}, base) == "partial"
    assert mechanism_label({**solved, "shifted": 2.9}, base) == "partial"  # fails a shifted start
    assert mechanism_label({**solved, "shorter": 4.0, "longer": 4.0}, base) == "position"
    assert mechanism_label({k: 3.3 for k in solved}, base) == "untrained"  # at chance
    assert mechanism_label({}, base) == "untrained"
    assert mechanism_label(solved, {}) == "untrained"  # no predictor measured: never content
    # block_len=3: 2- and 4-letter blocks at 1.2 pass half a uniform guess (1.63), not a
    # frequency copier at 0.75 / 1.15
    short = {**base, "shorter": {"copier": 0.75, "best": 0.75, "oracle": 0.1},
             "longer": {"copier": 1.15, "best": 1.15, "oracle": 0.2}}
    assert mechanism_label({**solved, "shorter": 1.2, "longer": 1.2}, short) == "position"


def test_induction_labels_untrained_are_never_content():
    from toymech.studies.induction.over_seeds import labels

    st = protocol.study("induction")
    for size in ("smoke", st.with_knobs("smoke", NULL_VARIANTS["induction"])):
        assert set(labels(st.untrained_numbers(size, 0)).values()) == {"untrained"}


def test_birth_labels():
    from toymech.studies.birth.claims import at_chance, source_like
    from toymech.studies.birth.map_measure import mechanism_label

    good = source_like()
    label = mechanism_label(good)
    assert label.startswith("in-context head; memories ") and "W" in label
    assert mechanism_label(at_chance(good)).startswith("no in-context head")
    assert mechanism_label({}) == "not measured"


def test_random_transformer_labels():
    from toymech.studies.random_transformers.claims import at_chance, source_like
    from toymech.studies.random_transformers.over_seeds import label_table, solved_label

    good = source_like()
    assert solved_label(good, "modular_addition", "random", "large") == "solved"
    assert solved_label(at_chance(good), "modular_addition", "random", "large") == "not solved"
    assert solved_label({}, "needle", "normal", "large") == "not measured"
    table = label_table({3: good, 4: at_chance(good)})
    assert (table.loc[4] != "solved").all() and (table.loc[3] == "solved").any()


def test_explore_a_variant(tmp_path):
    import toymech.explore

    x = toymech.explore("induction-2l", size="smoke", cache_dir=tmp_path / "zoo",
                        variant={"block_len": "4-8"})
    assert x.source.task.block_lens == (4, 5, 6, 7, 8)
    assert x.set_sequence("QWERTYQWERTYQWERTYQWERTY")["loss"]
    with pytest.raises(ValueError, match=r"^variant="):
        toymech.explore(x.source.model, x.source.task, variant={"block_len": "4-8"})


def test_a_variant_report_gets_a_results_record_of_its_own():
    from toymech.report.results import data_name, record_data

    base = {"name": "01_induction_repeated_blocks", "size": "default", "card": None,
            "wall_s": None}
    own = record_data(base)
    variant = record_data({**base, "parameters": {"variant": {"block_len": "4-8"}}})
    assert own["variant"] == {} and variant["variant"] == {"block_len": "4-8"}
    assert data_name(own) == "01_induction_repeated_blocks-default.json"
    assert data_name(variant) == "01_induction_repeated_blocks-default-block_len=4-8.json"


def test_two_spellings_of_one_setting_are_one_report_and_the_source_value_none(tmp_path,
                                                                               monkeypatch):
    """``build_reports`` converts a variant once (``checks.canonical_variant``): ``4-8``, the
    list and ``4,5,6,7,8`` give one report name, one cost-table key, one injected ``variant``
    and so one results record; the source's value is the plain run (no variant anywhere)."""
    from toymech.report import build
    from toymech.report.costs import CostTable
    from toymech.report.results import data_name, record_data

    seen = []
    monkeypatch.setattr(build, "_run_all", lambda req, machine: seen.append((req, machine)) or [])
    monkeypatch.setattr(build, "reference_step_seconds", lambda: 0.03)  # nothing runs
    notebook = Path(__file__).resolve().parents[1] / protocol.STUDIES["induction"]
    source = protocol.study("induction").knobs["block_len"].source
    for i, value in enumerate(["4-8", [4, 5, 6, 7, 8], "4,5,6,7,8", source, str(source)]):
        build.build_reports([notebook], tmp_path / f"r{i}", size="paper",
                            extra_parameters={"variant": {"block_len": value}})
    keys = []
    for req, machine in seen:
        (path,) = req.paths
        record = record_data({"name": notebook.stem, "size": "paper", "card": None,
                              "wall_s": None, "parameters": req.parameters[path]})
        keys.append((req.names[path], machine.cost_key, req.parameters[path].get("variant"),
                     data_name(record)))
    assert keys[0] == keys[1] == keys[2] == (
        f"{notebook.stem}@block_len=4-8", CostTable.key("paper", None, {"block_len": "4-8"}),
        {"block_len": "4-8"}, f"{notebook.stem}-paper-block_len=4-8.json")
    assert keys[3] == keys[4] == (notebook.stem, CostTable.key("paper", None), None,
                                  f"{notebook.stem}-paper.json")


def test_the_documented_papermill_command_gives_the_notebook_a_mapping(tmp_path):
    """docs/variants.md's papermill line, prepared (parameters injected, no kernel): the
    notebook's ``variant`` is the mapping the study's ``with_knobs`` takes, not a string."""
    import ast
    import re
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    import nbformat
    from waiting import limit

    root = Path(__file__).resolve().parents[1]
    doc = (root / "docs" / "variants.md").read_text(encoding="utf-8")
    lines = re.findall(r"`(papermill [^`]+)`", " ".join(doc.split()))
    assert len(lines) == 1, lines
    argv = shlex.split(lines[0])
    notebook, out = root / argv[1], tmp_path / "out.ipynb"
    got = subprocess.run([sys.executable, "-m", "papermill", str(notebook), str(out), *argv[3:],
                          "--prepare-only"], capture_output=True, text=True, timeout=limit(300))
    assert got.returncode == 0, got.stderr[-2000:]
    injected = next(c for c in nbformat.read(out, as_version=4).cells
                    if "injected-parameters" in c.metadata.get("tags", []))
    values = {}
    for node in ast.parse(injected.source).body:
        values[node.targets[0].id] = ast.literal_eval(node.value)
    assert isinstance(values["variant"], dict), values
    from toymech.studies import induction

    assert induction.with_knobs("smoke", values["variant"]).knobs == {"d_model": 64}


def test_only_the_table_column_helper_names_the_knob_prefix():
    """A knob's table column is named in one place (``sweep.table``: ``knob_column``,
    ``knob_columns``, ``is_knob_column``); no other module spells or checks the prefix."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "toymech"
    hits = [str(p.relative_to(root)) for p in root.rglob("*.py")
            if p.relative_to(root).as_posix() != "sweep/table.py"
            and re.search(r"[\"']knob\.|startswith\(KNOB_PREFIX|KNOB_PREFIX\s*\+", p.read_text())]
    assert hits == []
