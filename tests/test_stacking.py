"""Runs of one model shape that differ in their data knobs train as one stacked program (the GPU
path of maps), each run the same as training it alone, to float rounding (checked on the CPU)."""

import json

import pytest
import torch

from toymech.models import build_model
from toymech.studies import induction
from toymech.training import train, train_stacked
from toymech.training.stacking import measure_stacking, stack_groups, stack_key
from toymech.zoo import Zoo

VARIANTS = [{}, {"block_len": "4-8"}, {"offset": "0-3"}, {"block_len": "4-8", "offset": "0-3"}]


def _runs(steps=24, seeds=(3,)):
    out = []
    for v in VARIANTS:
        for s in seeds:
            e = induction.experiment("induction-2l", induction.with_knobs("smoke", v), s)
            e.train = e.train.replace(steps=steps, eval_every=8)
            out.append(e)
    return out


def test_data_knobs_share_a_stack_key_and_shapes_do_not():
    exps = _runs()
    assert len({json.dumps(e.to_dict()["task"], sort_keys=True) for e in exps}) == 4
    assert len({stack_key(e) for e in exps}) == 1
    wide = induction.experiment("induction-2l", induction.with_knobs("smoke", {"d_model": 64}), 3)
    longer = induction.experiment("induction-2l", induction.with_knobs("smoke", {"n_blocks": 5}),
                                  3)
    assert stack_key(wide) != stack_key(exps[0]) and stack_key(longer) != stack_key(exps[0])
    assert stack_groups(exps + [wide, exps[1]]) == [[0, 1, 2, 3, 5], [4]]


def test_stacked_data_knobs_match_each_run_trained_alone():
    exps = _runs()
    alone = [train(build_model(e.model), e.task, e.train, device="cpu", progress=False, log=None)
             for e in exps]
    together = train_stacked([build_model(e.model) for e in exps], [e.task for e in exps],
                             [e.train for e in exps], device="cpu", progress=False, log=None)
    for a, b in zip(alone, together):
        assert [r["step"] for r in a.history] == [r["step"] for r in b.history]
        for ra, rb in zip(a.history, b.history):
            for k in ("train_loss", "eval_loss", "eval_acc"):
                if k in ra:
                    assert ra[k] == pytest.approx(rb[k], abs=1e-4), k
        for (na, pa), (_, pb) in zip(a.model.named_parameters(), b.model.named_parameters()):
            assert torch.allclose(pa, pb, atol=1e-4), na
    # each run drew its own data: the four variants' models differ (same seed, same init)
    assert not torch.allclose(together[0].model.W_E, together[1].model.W_E)


def test_stacked_tasks_must_have_one_length():
    a = _runs()[0]
    b = induction.experiment("induction-2l", induction.with_knobs("smoke", {"n_blocks": 5}), 3)
    b.train = a.train
    with pytest.raises(ValueError, match=r"task=.*sequence lengths .* one length"):
        train_stacked([build_model(a.model), build_model(a.model)], [a.task, b.task],
                      [a.train, a.train.replace(seed=4)], device="cpu", progress=False, log=None)
    with pytest.raises(ValueError, match=r"one task, or one per model \(2\)"):
        train_stacked([build_model(a.model), build_model(a.model)], [a.task] * 3,
                      [a.train, a.train.replace(seed=4)], device="cpu", progress=False, log=None)


def test_the_zoo_stacks_a_maps_data_knobs_and_stores_each_run(tmp_path):
    exps = _runs(steps=8)
    entries = Zoo(tmp_path).get_or_train_many(exps, device="cpu", stacked=True)
    assert [e.meta.get("stacked") for e in entries] == [4] * 4
    assert len({e.path for e in entries}) == 4
    back = [Zoo(tmp_path).load(e, "cpu", log=None) for e in exps]
    for b, e in zip(back, entries):
        assert b.loaded
        for pa, pb in zip(b.model.parameters(), e.model.parameters()):
            assert torch.equal(pa.cpu(), pb.cpu())
    # nothing left to train: a second call only loads
    again = Zoo(tmp_path).get_or_train_many(exps, device="cpu", stacked=True)
    assert all(e.loaded for e in again)


def test_measure_stacking_gives_a_throughput_ratio():
    ratio = measure_stacking(_runs()[0], "cpu", n=2, steps=2)
    assert 0.0 < ratio < 100.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_stacked_data_knobs_match_runs_alone_and_the_cpu():
    """The GPU path: stacked on CUDA equals each run alone on CUDA (float rounding; a CUDA
    generator draws other batches than a CPU one, so the CPU is no reference here)."""
    exps = _runs(steps=24, seeds=(3, 4))
    together = train_stacked([build_model(e.model) for e in exps], [e.task for e in exps],
                             [e.train for e in exps], device="cuda", progress=False, log=None)
    for e, b in zip(exps, together):
        a = train(build_model(e.model), e.task, e.train, device="cuda", progress=False, log=None)
        assert a.history[-1]["eval_loss"] == pytest.approx(b.history[-1]["eval_loss"], abs=1e-3)
        for pa, pb in zip(a.model.parameters(), b.model.parameters()):
            assert torch.allclose(pa.detach().cpu(), pb.detach().cpu(), atol=1e-3)
