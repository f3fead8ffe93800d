"""The map tables shipped in docs/maps/: each reads back through the one checked reader (every
row's hash); the answers re-run under the evidence rules carry their study's evidence columns
(study 1: the behavioural fingerprint, the resample ablations, the margin's interval and the
earlier rule's label; Birth: the recall margins, the cosines to the construction and the
null's accuracy; study 3: the accuracy's interval and the baselines); and the negative control
on study 1's capacity map (the plain 1-layer model, which cannot copy by content) carries no
content label."""

from __future__ import annotations

from pathlib import Path

import pytest

from toymech import experiments
from toymech.maps.page import study_for
from toymech.maps.table import read_table

ROOT = Path(__file__).resolve().parents[1]
MAPS = ROOT / "docs" / "maps"
TABLES = sorted(MAPS.glob("*.csv"))

# The re-run answers, and per study the columns (or column prefixes) each must hold.
EVIDENCE = {
    "induction": ("agreement.", "fingerprint", "beyond_baseline.low", "beyond_baseline.high",
                  "label_earlier_rule", "state"),
    "birth": ("margin.", "cosine.", "overlap.", "null.icl_acc", "trained", "state"),
    "random_transformers": ("acc_low", "acc_high", "baseline.", "state"),
}
# and where a table holds 2-layer runs (the resample ablations cut layer 0 out of layer 1)
TWO_LAYER_EVIDENCE = ("key_resample_share.", "query_resample_share.")
RERUN = ("s1-capacity-default-cpu.csv", "s1-smeared-default-cpu.csv", "s2-reviewer-default-cpu.csv",
         "s3-budget-parentheses-default-cpu.csv")


@pytest.mark.parametrize("path", TABLES, ids=[p.name for p in TABLES])
def test_every_shipped_table_reads_back_row_by_row(path):
    table = read_table(path, verify=True)
    assert len(table) > 0 and study_for(table).name, path.name  # one registered study's table


@pytest.mark.parametrize("name", RERUN)
def test_the_rerun_answers_carry_their_studys_evidence_columns(name):
    table = read_table(MAPS / name, verify=True)
    study = study_for(table).name
    two_layer = any(experiments.get(e, "smoke", 0).model.n_layers >= 2
                    for e in set(table["experiment"]))
    needed = EVIDENCE[study] + (TWO_LAYER_EVIDENCE if study == "induction" and two_layer else ())
    missing = [p for p in needed if not any(c == p or c.startswith(p) for c in table.columns)]
    assert not missing, f"{name} lacks {missing}"


def test_the_negative_control_on_the_capacity_map_is_never_content():
    table = read_table(MAPS / "s1-capacity-default-cpu.csv", verify=True)
    control = table[table["experiment"] == "induction-1l"]
    assert len(control) > 0, "the capacity map holds no run of the plain 1-layer model"
    assert "content" not in set(control["label"].fillna("")), control[["label", "state"]]
