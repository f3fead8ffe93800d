"""The bad-input catalogue, part knobs: every way a variant can be asked for wrongly (``--set``
on ``toymech train``/``report``, a sweep grid's ``knobs``, a map) is refused before any work, in
ONE line naming the knob, the value and what is allowed, with nothing written. All of these were
new with the knobs (no earlier toymech had ``--set``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from catalogue import no_hang, refused, run_cli, tree

ROOT = Path(__file__).resolve().parents[1]
NB = "notebooks/01_induction_repeated_blocks.ipynb"
# (argv, fragments of the one stderr line)
CASES = {
    "unknown knob": (["train", "induction-2l", "--set", "blocklen=5"],
                     ["knob='blocklen'", "one of n_letters", "toymech list knobs induction"]),
    "wrong type": (["train", "induction-2l", "--set", "d_model=wide"],
                   ["d_model='wide'", "an integer in 4..1024"]),
    "float for an int": (["train", "induction-2l", "--set", "d_model=32.5"], ["d_model='32.5'"]),
    "out of range": (["train", "induction-2l", "--set", "n_letters=53"],
                     ["n_letters='53'", "an integer in 2..52"]),
    "negative offset": (["train", "induction-2l", "--set", "offset=-1"], ["offset='-1'"]),
    "empty range": (["train", "induction-2l", "--set", "block_len=8-4"],
                    ["block_len='8-4'", "a range such as"]),
    "repeated value in a list": (["train", "induction-2l", "--set", "block_len=4,4"],
                                 ["block_len='4,4'", "each value once"]),
    "non-ASCII digits": (["train", "induction-2l", "--set", "d_model=\u0666\u0664"],
                         ["d_model="]),
    "bad bool": (["train", "induction-2l", "--set", "mlp=maybe"], ["mlp='maybe'", "true or false"]),
    "bad choice": (["train", "induction-2l", "--set", "positions=nowhere"],
                   ["positions='nowhere'", "one of post_sinusoidal_qk", "rotary, none"]),
    "nan lr": (["train", "induction-2l", "--set", "lr=nan"], ["lr='nan'"]),
    "a knob of another study": (["train", "induction-2l", "--set", "embeddings=trained"],
                                ["knob='embeddings'", "a knob of study 'birth', not of 'induction'"]),
    "an impossible combination": (["train", "induction-2l", "--set", "d_model=30"],
                                  ["d_model=30", "n_heads=4", "divisor of d_model=30"]),
    "sequence longer than the context": (["train", "induction-2l", "--set", "n_blocks=200",
                                          "--set", "block_len=200"],
                                         ["sequences of at most 1024"]),
    "blocks that never repeat": (["train", "induction-2l", "--set", "seq_len=12", "--set",
                                  "block_len=4-8", "--set", "offset=5"],
                                 ["must repeat its block"]),
    "--set steps with --steps (trained 40 steps named [steps=80] before)": (
        ["train", "induction-2l", "--set", "steps=80", "--steps", "40"],
        ["--steps=40", "--set steps=80", "give one of them"]),
    "a block longer than the sequence beside seq_len (120-letter sequences before)": (
        ["train", "induction-2l", "--set", "seq_len=24", "--set", "block_len=30"],
        ["seq_len=24", "block_len=30", "sequence length 24"]),
    "a knob given twice": (["train", "induction-2l", "--set", "d_model=64", "--set",
                            "d_model=128"], ["--set d_model is given twice"]),
    "no value": (["train", "induction-2l", "--set", "d_model="], ["is not KNOB=VALUE"]),
    "no name": (["train", "induction-2l", "--set", "=4"], ["is not KNOB=VALUE"]),
    "an experiment of no study": (["train", "modular_addition", "--set", "d_model=64"],
                                  ["belongs to no study"]),
    "--set with --config": (["train", "--config", "x.json", "--set", "d_model=64"],
                            ["--set is not allowed with --config"]),
    "report: unknown knob": (["report", "--size", "smoke", "--set", "blocklen=5", NB],
                             ["knob='blocklen'"]),
    "report: knob of another study": (["report", "--size", "smoke", "--set", "modulus=31", NB],
                                      ["a knob of study 'random_transformers'"]),
    "report: --param variant": (["report", "--size", "smoke", "--param", "variant={}", NB],
                                ["'variant' has its own option", "--set"]),
    # the knobs of the variants: Birth's feed-forward and positions, study 3's parts
    "birth: ff neither a choice nor true/false": (
        ["train", "birth-simplified", "--set", "ff=sometimes"],
        ["ff='sometimes'", "one of none, first, last, both", "false means none"]),
    "birth: unknown position join": (["train", "birth-simplified", "--set", "position_join=stack"],
                                     ["position_join='stack'", "one of add, concat"]),
    "birth: unknown positions": (["train", "birth-simplified", "--set", "positions=rotary"],
                                 ["positions='rotary'", "frozen_random, learned, sinusoidal, none"]),
    "birth: vocabulary below the sweep's room": (["train", "birth-simplified", "--set", "vocab=10"],
                                                 ["vocab='10'", "an integer in 24..65"]),
    "birth: vocabulary above the corpus": (["train", "birth-simplified", "--set", "vocab=66"],
                                           ["vocab='66'", "an integer in 24..65"]),
    "birth: more triggers than tokens": (["train", "birth-simplified", "--set", "vocab=24", "--set",
                                          "n_triggers=30"],
                                         ["n_triggers=30", "an integer in 1..24"]),
    "birth: no trigger count": (["train", "birth-simplified", "--set", "n_triggers=0"],
                                ["n_triggers='0'", "an integer in 1..64"]),
    "birth: unknown data": (["train", "birth-simplified", "--set", "data=only_bigrams"],
                            ["data='only_bigrams'", "one of mixed, only_triggers, no_triggers"]),
    "rt: width not above the small width": (["train", "rt-parentheses-random", "--set",
                                             "width=12"],
                                            ["width=12", "above the table's small width 16"]),
    "rt: width not a multiple of the heads": (["train", "rt-parentheses-random", "--set",
                                               "width=66"], ["width=66", "a multiple of n_heads=4"]),
    "rt: recipe width not a multiple of the heads": (
        ["train", "rt-parentheses-random", "--set", "recipe_width=18"],
        ["recipe_width=18", "a multiple of n_heads=4"]),
    "rt: recipe width too wide": (["train", "rt-parentheses-random", "--set", "recipe_width=8192"],
                                  ["recipe_width='8192'", "0..4096"]),
    "rt: the normal arm as what the random one trains": (
        ["train", "rt-parentheses-random", "--set", "trains=normal"],
        ["trains='normal'", "one of random, E_token+U, E_token+E_pos, U"]),
    "list knobs of no study": (["list", "knobs", "nope"], ["study='nope'", "one of induction"]),
    "list tasks with a study": (["list", "tasks", "induction"], ["study='induction'"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_bad_knobs_refused(case, tmp_path, monkeypatch):
    argv, fragments = CASES[case]
    monkeypatch.chdir(ROOT)  # the notebook paths are the checkout's
    zoo = tmp_path / "zoo"
    out = tmp_path / "reports"
    extra = ["--cache", str(zoo)] if argv[0] in ("train", "report", "list") else []
    extra += ["--out", str(out)] if argv[0] == "report" else []
    before = tree(tmp_path)
    with no_hang():
        code, stdout, err = run_cli([*argv, *extra])
    refused(code, stdout, err, fragments)
    assert tree(tmp_path) == before, "something was written"
