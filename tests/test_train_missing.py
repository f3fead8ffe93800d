"""``toymech.sweep.train_missing``: the runs a zoo lacks, one process per core, each the same as
training it alone on one thread."""

from __future__ import annotations

import pytest
import torch

from toymech import experiments
from toymech.sweep import train_missing
from toymech.zoo import Zoo


def _exps(seeds=(0, 1)):
    return [experiments.get("induction-2l", "smoke", s) for s in seeds]


def test_two_processes_store_what_one_thread_alone_trains(tmp_path):
    exps = _exps()
    seen = []
    entries = train_missing(Zoo(tmp_path / "pool"), exps, workers=2,
                            on_progress=lambda done, total, e: seen.append((done, total)),
                            start_steps=0)
    assert sorted(seen) == [(1, 2), (2, 2)]
    assert [e.loaded for e in entries] == [True, True]  # read back from the zoo
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = [Zoo(tmp_path / "alone").get_or_train(e, device="cpu", progress=False, log=None)
                 for e in exps]
    finally:
        torch.set_num_threads(before)
    for ours, ref in zip(entries, alone):
        assert ours.path.name == ref.path.name
        assert [r["train_loss"] for r in ours.history] == [r["train_loss"] for r in ref.history]
        theirs = dict(ref.model.named_parameters())
        for name, p in ours.model.named_parameters():
            assert torch.equal(p, theirs[name]), name
    assert entries[0].model is not entries[1].model
    # everything present: nothing trains, every entry is loaded in the order given
    again = train_missing(Zoo(tmp_path / "pool"), exps[::-1], workers=2,
                          on_progress=lambda *a: pytest.fail("nothing should train"))
    assert [e.path for e in again] == [entries[1].path, entries[0].path]


def test_short_runs_train_in_this_process_and_duplicates_once(tmp_path, monkeypatch):
    from toymech.sweep import pool
    monkeypatch.setattr(pool, "_in_processes", lambda *a: pytest.fail("no processes for this"))
    exps = _exps((3, 4))  # two smoke runs: far below a worker's start-up (start_steps)
    seen = []
    entries = train_missing(Zoo(tmp_path), exps + exps[:1], workers=4,
                            on_progress=lambda done, total, e: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
    assert entries[0].path == entries[2].path != entries[1].path


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 0}, r"workers=0 is not allowed"),
    ({"on_progress": 3}, r"on_progress=3 is not allowed"),
    ({"tag": 1}, r"tag=1 is not allowed"),
    ({"start_steps": -1}, r"start_steps=-1 is not allowed"),
])
def test_bad_options_are_refused_before_anything_is_written(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_missing(Zoo(tmp_path / "z"), _exps(), **kwargs)
    assert not (tmp_path / "z").exists()


def test_bad_experiments_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"experiments\[1\]='x' is not allowed"):
        train_missing(Zoo(tmp_path / "z"), [_exps()[0], "x"])
    with pytest.raises(ValueError, match=r"experiments='generator' is not allowed"):
        train_missing(Zoo(tmp_path / "z"), (e for e in _exps()))
    assert not (tmp_path / "z").exists()


def test_runs_trained_by_the_workers_count_as_trained_not_as_read_from_the_zoo(tmp_path):
    """A report's facts line ("N models trained, M read from the zoo") counts what the worker
    processes trained as trained, and reading those entries back (here, or by the study after)
    as nothing more; an entry this process did not train counts as read from the zoo."""
    from toymech.zoo import reset_zoo_stats, zoo_stats

    reset_zoo_stats()
    zoo = Zoo(tmp_path)
    exps = _exps()
    train_missing(zoo, exps, workers=2, start_steps=0)
    zoo.load(exps[0], "cpu", log=None)
    stats = zoo_stats()
    assert (stats["trained"], stats["loaded"]) == (2, 0) and stats["train_seconds"] > 0
    reset_zoo_stats()  # as a later process would see the same zoo
    train_missing(zoo, exps, workers=2, start_steps=0)
    assert (zoo_stats()["trained"], zoo_stats()["loaded"]) == (0, 2)
