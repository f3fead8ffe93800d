"""The results record (``toymech results`` -> docs/results.md) and study 3's width ladder
(``studies.random_transformers.ladder``) that it records."""

from __future__ import annotations

import json

import nbformat
import pandas as pd
import pytest

from toymech.cli import main
from toymech.report import results
from toymech.studies.random_transformers import ladder, named
from toymech.studies.random_transformers.recipes import recipe


# --- the ladder -----------------------------------------------------------------------------
def _table(acc_by_width: dict[int, list[float]], task="parentheses", mode="random"):
    rows = []
    for width, accs in acc_by_width.items():
        for seed, acc in zip(ladder.LADDER_SEEDS, accs):
            rows.append({"task": task, "mode": mode, "width": width, "seed": seed,
                         "held_out_acc": acc, "last_step": 100, "core_seconds": 1.0,
                         "lr": recipe(task, mode).lr, "steps": recipe(task, mode).steps,
                         "entry": f"{task}-{mode}-{width}-{seed}"})
    return pd.DataFrame(rows)


def test_the_ladder_is_the_recipe_at_each_width_on_judged_seeds():
    exps = ladder.experiments("modular_addition", "random", widths=(16, 256), seeds=(3, 4))
    r = recipe("modular_addition", "random")
    assert [(e.model.d_model, e.train.seed) for e in exps] == [(16, 3), (16, 4), (256, 3), (256, 4)]
    assert all(e.train.lr == r.lr and e.train.steps == r.steps for e in exps)
    with pytest.raises(ValueError, match="seeds=.*seed 0 calibrated"):
        ladder.experiments("parentheses", "random", seeds=(0, 1))
    with pytest.raises(ValueError, match="widths="):
        ladder.experiments("parentheses", "random", widths=(10,))
    with pytest.raises(ValueError, match="task='sorting'"):
        ladder.experiments("sorting", "random")


def test_first_width_is_the_narrowest_median_past_the_line():
    summary = ladder.ladder_summary(_table({16: [0.2, 0.3, 0.1], 64: [0.99, 0.5, 0.97],
                                            256: [1.0, 1.0, 0.99]}))
    assert ladder.first_width(summary, "parentheses", "random") == 64  # median 0.97
    row = summary[summary["width"] == 64].iloc[0]
    assert (row["median"], row["min"], row["max"], row["seeds"], row["solved"]) == (0.97, 0.5, 0.99, 3, 2)
    assert "random from width 64" in ladder.ladder_sentence(summary)


def test_a_ladder_at_chance_solves_nowhere_and_says_how_far_it_went():
    summary = ladder.ladder_summary(_table({16: [0.52, 0.5, 0.51], 256: [0.52, 0.52, 0.5]}))
    assert ladder.first_width(summary, "parentheses", "random") is None
    assert "random not up to width 256" in ladder.ladder_sentence(summary)
    assert ladder.ladder_sentence(None) == "The width ladder has not been run."


def test_recipe_claims_read_the_ladder_rung_at_the_recipe_width_of_each_seed():
    r = recipe("parentheses", "random")
    lad = _table({16: [0.1, 0.1, 0.1], r.width: [0.99, 0.2, 0.98]})
    cal = pd.DataFrame([{"task": "parentheses", "mode": "random", "width": r.width, "seed": 0,
                         "held_out_acc": 1.0, "last_step": 100, "lr": r.lr, "steps": r.steps,
                         "entry": "cal"}])
    both = ladder.with_ladder(cal, lad)
    got = {s: named.numbers({"widths": (16, 64), "seed": s, "calibration": both})
           .get("acc.parentheses.random.recipe") for s in (0, 3, 4, 5, 6)}
    assert got == {0: 1.0, 3: 0.99, 4: 0.2, 5: 0.98, 6: None}  # seed 6: not run, not measured


# --- the record -----------------------------------------------------------------------------
def test_updating_a_record_replaces_its_blocks_and_keeps_the_prose():
    text = ("# Results\n\nWhat we saw.\n\n" + results.START.format(key="a size=paper")
            + "\nold\n" + results.END + "\n\nMore prose.\n")
    new = results.update_record(text, {"a size=paper": results.START.format(key="a size=paper")
                                       + "\nnew\n" + results.END + "\n",
                                       "b size=default": "B-block\n"})
    assert "What we saw." in new and "More prose." in new
    assert "\nnew\n" in new and "\nold\n" not in new and new.rstrip().endswith("B-block")
    assert results.update_record(new, {}) == new


def test_a_folder_that_is_no_report_is_refused_and_the_record_is_untouched(tmp_path, capsys):
    record = tmp_path / "results.md"
    record.write_text("# mine\n")
    assert main(["results", str(tmp_path), "--into", str(record)]) == 2
    assert "has no index.json" in capsys.readouterr().err
    assert record.read_text() == "# mine\n"
    assert main(["results", "--into", str(record)]) == 2


def test_the_ladder_block_names_commit_machine_and_every_rung(tmp_path, monkeypatch):
    sweeps = tmp_path / "sweeps"
    sweeps.mkdir()
    (sweeps / "rt-width-ladder-parentheses-random.csv").write_text("trial\n")
    (sweeps / "rt-width-ladder-parentheses-random.csv.meta.json").write_text(json.dumps(
        {"commit": "abc123", "wall_s": 120.0,
         "machine": {"cores": 2, "reference_steps_per_s": 40.0, "torch": "x", "cuda": False}}))
    table = _table({16: [0.1, 0.2, 0.3], 64: [1.0, 0.99, 0.98]})
    monkeypatch.setattr(ladder, "ladder_table", lambda root: table)
    key, block = results.ladder_block(tmp_path)
    assert key == results.LADDER_KEY
    assert "abc123" in block and "40.0 reference steps/s" in block and "4,800 reference steps" in block
    assert "0.990 [0.980, 1.000] (3/3)" in block and "0.200 [0.100, 0.300] (0/3)" in block


@pytest.mark.usefixtures("smoke_reports")
def test_the_record_of_a_finished_report_holds_each_full_scorecard(smoke_reports, tmp_path):
    record = tmp_path / "results.md"
    record.write_text("# Results record\n\nA paragraph a person wrote.\n")
    assert main(["results", str(smoke_reports.out), "--into", str(record)]) == 0
    text = record.read_text()
    assert "A paragraph a person wrote." in text
    for entry in smoke_reports.entries:
        nb = nbformat.read(smoke_reports.out / entry.executed, as_version=4)
        card = results.scorecard_of(nb)
        assert card and card["rows"], entry.notebook
        key = f"{results.START.format(key=entry.notebook.rsplit('/', 1)[-1][:-6] + ' size=smoke')}"
        block = text[text.index(key):]
        block = block[:block.index(results.END)]
        for row in card["rows"]:
            assert results._cell(row[0]) in block  # every claim, in full (no "...")
        assert f"commit: `{entry.commit or 'not recorded'}`" in block
        assert "reference steps/s" in block and "reference steps)" in block
        assert "command:" in block
    again = results.update_record(text, dict(results.report_block(r)
                                             for r in results.report_records(smoke_reports.out)))
    assert again == text  # regenerating from the same folder changes nothing


def test_the_ladder_command_refuses_bad_input_before_any_work(tmp_path, capsys):
    zoo = tmp_path / "zoo"
    assert main(["ladder", "--tasks", "parentheses", "sorting", "--cache", str(zoo)]) == 2
    assert "task='sorting' is not allowed" in capsys.readouterr().err
    assert main(["ladder", "--seeds", "0", "1", "--cache", str(zoo)]) == 2
    assert "seed 0 calibrated the recipes" in capsys.readouterr().err
    assert not (zoo / "sweeps").exists()


def test_the_ladder_figure_shows_each_mode_the_solved_line_and_the_paper_width():
    from toymech.plots import random_transformers as rtplots

    summary = ladder.ladder_summary(pd.concat([
        _table({16: [0.2, 0.3, 0.1], 64: [0.99, 0.5, 0.97]}),
        _table({16: [1.0, 1.0, 0.99], 64: [1.0, 1.0, 1.0]}, mode="normal")]))
    fig = rtplots.width_ladder(summary)
    names = {t.name for t in fig.data}
    assert names == {"random", "normal"}
    random_trace = next(t for t in fig.data if t.name == "random")
    assert list(random_trace.x) == [16, 64] and list(random_trace.y) == [0.2, 0.97]
    assert list(random_trace.error_y.arrayminus) == pytest.approx([0.1, 0.47])
    texts = [a.text for a in fig.layout.annotations]
    assert any("paper's width" in t for t in texts) and any("solved (95%)" in t for t in texts)
    assert 1024 in fig.layout.xaxis.tickvals


def test_scaled_verdicts_are_set_beside_the_source_setting_ones():
    cols = ["claim", "ours", "verdict"]
    small = {"name": "nb", "size": "default", "seeds": "3", "card": {"columns": cols, "rows": [
        ["a", "1", "reproduced (scaled: steps 2,000 vs the source's 10,000)"],
        ["b", "2", "not reproduced (scaled: steps 2,000 vs ...)"],
        ["c", "3", "below the source's setting: steps 2,000 vs 10,000"],
        ["d", "4", "mixed (scaled)"],
        ["e", "5", "below the source's setting: steps 2,000 vs 10,000; reached by ...; our "
                   "scaled run says mixed, but no run has shown that the scaled setting gives "
                   "the source's setting's verdict"]]}}
    full = {"name": "nb", "size": "paper", "seeds": "10", "card": {"columns": cols, "rows": [
        ["a", "1", "reproduced"], ["b", "2", "mixed"], ["c", "3", "reproduced"],
        ["e", "5", "mixed"]]}}
    key, block = results.scaled_check_block(small, full)
    assert key == "nb size=default vs size=paper"
    # c was not judged scaled; d has no paper row; e is a scaled claim not yet shown (its
    # verdict reads below, quoting the scaled run's), compared all the same
    assert "2 of 3 claims" in block
    assert "| e | mixed (scaled) | mixed | yes |" in block
    assert "| a | reproduced (scaled) | reproduced | yes |" in block
    assert "| b | not reproduced (scaled) | mixed | no |" in block
    assert results.scaled_check_block({**small, "card": None}, full) is None
