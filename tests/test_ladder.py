"""Study 3's width ladder is ordinary maps (``specs/maps/s3-width-<task>.yaml``): ``toymech ladder``
runs them by name through the one map engine, and the study words their cells
(``studies.random_transformers.ladder``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from toymech import maps
from toymech.cli import main
from toymech.maps.spec import sweep_grid
from toymech.studies.random_transformers import ladder
from toymech.studies.random_transformers.over_seeds import recipe_experiment
from toymech.studies.random_transformers.recipes import recipe
from toymech.zoo import Zoo

ROOT = Path(__file__).resolve().parents[1]
WIDTH_MAPS = sorted((ROOT / "specs" / "maps").glob("s3-width-*.yaml"))


def _stored(zoo: Path) -> set[str]:
    return {p.name for p in zoo.iterdir() if (p / "config.json").is_file()} if zoo.is_dir() else set()


def test_the_ladder_maps_are_found_wherever_the_tests_run():
    assert [p.stem for p in WIDTH_MAPS] == [f"s3-width-{t}" for t in sorted(
        ("parentheses", "modular_addition", "needle", "decimal_addition"))]


def test_the_ladder_command_and_the_map_give_the_same_table_from_one_zoo(tmp_path, monkeypatch,
                                                                       capsys):
    """``toymech ladder --tasks needle`` and ``toymech map specs/maps/s3-width-needle.yaml`` (at
    smoke, one seed: 5 widths x random / normal) write the same table; the map, after the
    ladder, trains nothing."""
    monkeypatch.setenv("TOYMECH_THREADS", "1")
    zoo = tmp_path / "zoo"
    tiny = ["--size", "smoke", "--seeds", "1", "--cache", str(zoo), "--backend", "local",
            "--no-progress", "--device", "cpu"]
    assert main(["ladder", "--tasks", "needle", "--out", str(tmp_path / "a"), *tiny]) == 0
    trained = _stored(zoo)
    assert len(trained) == 10
    assert main(["map", str(ROOT / "specs" / "maps" / "s3-width-needle.yaml"),
                 "--out", str(tmp_path / "b"), *tiny]) == 0
    assert _stored(zoo) == trained  # the map read the ladder's runs back
    a = maps.read_table(tmp_path / "a" / "s3-width-needle.csv")
    b = maps.read_table(tmp_path / "b" / "s3-width-needle.csv")
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 10 and set(a["experiment"]) == {"rt-needle-random", "rt-needle-normal"}
    assert sorted(a["knob.recipe_width"].astype(int).unique()) == [16, 32, 64, 128, 256]
    out = capsys.readouterr().out
    assert out.count("Label 'solved'") == 2  # each command printed the map's finding
    # what notebook 03 reads: the ladder's tables of a maps folder (not the sweep's .runs.csv
    # beside them, not another map), none where the folder is not there yet
    from toymech.maps.page import read_maps

    (tmp_path / "a" / "other.csv").write_bytes((tmp_path / "a" / "s3-width-needle.csv").read_bytes())
    assert (tmp_path / "a" / "s3-width-needle.runs.csv").is_file()
    pd.testing.assert_frame_equal(read_maps(tmp_path / "a", ladder.MAPS), a)
    assert read_maps(tmp_path / "no-maps-yet", ladder.MAPS) is None
    summary = ladder.ladder_summary(maps.cells(a, ("acc",)))
    assert len(summary) == 10 and set(summary["seeds"]) == {1}


@pytest.mark.parametrize("args, fragment", [
    (["--tasks", "needle", "sorting"], "--tasks 'sorting' is not allowed"),
    (["--tasks", "needle", "needle"], "distinct tasks"),
    (["--modes", "sideways"], "--modes=['sideways'] is not allowed"),
    (["--modes", "random", "random"], "distinct modes"),
    (["--seeds", "0"], "--seeds"),
])
def test_the_ladder_command_refuses_bad_input_before_any_work(tmp_path, capsys, args, fragment):
    zoo = tmp_path / "zoo"
    assert main(["ladder", *args, "--cache", str(zoo), "--backend", "local"]) == 2
    assert fragment in capsys.readouterr().err
    assert not zoo.exists()


@pytest.mark.parametrize("path", WIDTH_MAPS, ids=lambda p: p.stem)
def test_the_ladder_map_at_the_recipe_width_holds_the_recipe_claims_runs(path, tmp_path):
    """Each width map's runs at the recipe's width are the runs the recipe claims read (the same
    zoo keys), and ``with_ladder`` names them as the zoo stores them."""
    spec = maps.check_map(maps.load_map(path))
    task = ladder.task_mode(spec["experiment"][0])[0]
    trials = _trials(spec)
    assert len(trials) == 5 * 2 * 3  # widths x modes x judged seeds
    for mode in ("random", "normal"):
        mine = {t.seed: t.exp.key() for t in trials if t.experiment == f"rt-{task}-{mode}"
                and int(t.knobs["recipe_width"]) == recipe(task, mode).width}
        assert mine == {s: recipe_experiment(task, mode, "default", s).key() for s in (3, 4, 5)}
    rows = pd.DataFrame({"task": task, "zoo_key": [t.exp.key() for t in trials],
                         "status": ["ok"] * (len(trials) - 1) + ["diverged"]})
    entries = set(ladder.with_ladder(None, rows)["entry"])
    assert {Zoo(tmp_path).path(t.exp).name for t in trials[:-1]} == entries  # not the diverged


def _trials(spec):
    from toymech.grid import expand_grid

    return expand_grid(sweep_grid(spec))


def _table(acc_by_width: dict[int, list], task="parentheses", mode="random") -> pd.DataFrame:
    """A width map's table: one run per (width, seed); an accuracy None is a diverged run."""
    rows = []
    for width, accs in acc_by_width.items():
        for seed, acc in zip((3, 4, 5), accs):
            rows.append({"study": "random_transformers", "experiment": f"rt-{task}-{mode}",
                         "knob.recipe_width": str(width), "seed": seed, "size": "default",
                         "zoo_key": f"{width}-{seed}-{mode}", "commit": "abc", "task": task,
                         "mode": mode, "width": width,
                         "status": "ok" if acc is not None else "diverged",
                         "acc": acc if acc is not None else float("nan"),
                         "label": ("not measured" if acc is None else
                                   "solved" if acc >= 0.95 else "not solved")})
    return pd.DataFrame(rows)


def _summary(table: pd.DataFrame):
    return ladder.ladder_summary(maps.cells(table, ("acc",)))


def test_first_width_is_the_narrowest_solved_on_most_seeds_and_a_failed_run_counts():
    summary = _summary(_table({16: [0.2, 0.3, 0.1], 32: [0.99, None, 0.5],
                               64: [0.99, 0.5, 0.97], 256: [1.0, 1.0, 0.99]}))
    # width 32: one of three solved (the diverged run counts in its seeds, never as solved)
    assert ladder.first_width(summary, "parentheses", "random") == 64
    row = summary[summary["width"] == 64].iloc[0]
    assert (row["median"], row["min"], row["max"], row["seeds"], row["solved"]) == \
        (0.97, 0.5, 0.99, 3, 2)
    row = summary[summary["width"] == 32].iloc[0]
    assert (row["seeds"], row["solved"], row["without label"], row["max"]) == (3, 1, 1, 0.99)
    assert "random from width 64" in ladder.ladder_sentence(summary)


def test_a_ladder_at_chance_solves_nowhere_and_says_how_far_it_went():
    summary = _summary(_table({16: [0.52, 0.5, 0.51], 256: [0.52, 0.52, 0.5]}))
    assert ladder.first_width(summary, "parentheses", "random") is None
    assert "random not up to width 256" in ladder.ladder_sentence(summary)
    assert "normal not run" in ladder.ladder_sentence(summary)
    assert ladder.ladder_sentence(None).startswith("The width ladder has not been run")
    assert ladder.ladder_summary(None) is None


def test_the_ladder_figure_shows_each_mode_the_solved_line_and_the_paper_width():
    from toymech.plots import random_transformers as rtplots

    summary = _summary(pd.concat([
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
