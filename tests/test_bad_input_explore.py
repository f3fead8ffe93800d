"""Bad-input catalogue, part 9: the explorer (``toymech.explore``). Each refused case: a
ValueError whose message is ONE line naming the parameter, the value and what is allowed; a
model whose weights are not finite is explored with a loud ``RuntimeWarning``; what the docs
promise is accepted (numpy integer heads, ``at_step(None)`` on any model).

Which failed before (toymech at d832c33): NaN weights gave NaN probabilities and all-zero
attention with no warning; ``patch`` of a sequence with itself returned an all-NaN table;
``at_step(10**30)`` served the last snapshot; a task longer than the model's context raised a
RuntimeError inside the model; a bad ``target`` was blamed on ``sequence``; ``np.int64`` heads
were "not an integer"; ``at_step(None)`` on a bare model was refused.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from catalogue import no_hang
from test_explore import TASK, T, previous_token_model

import toymech.explore
from toymech.tasks import RepeatedBlocks


@pytest.fixture
def explorer():
    x = toymech.explore(previous_token_model(), TASK)
    x.set_sequence("ABABABAB")
    return x


def _long_task(_):
    return toymech.explore(previous_token_model(), RepeatedBlocks(n_blocks=3, block_len=4, n_letters=5))


CASES = {
    "patch() of the sequence with itself (all-NaN table before)": (
        lambda x: x.patch("ABABABAB"), ["source_text='ABABABAB'", "differs"]),
    "patch() of the same tokens as ids": (
        lambda x: x.patch([0, 1, 0, 1, 0, 1, 0, 1]), ["source_text=", "differs"]),
    "at_step(None) is fine, at_step(5) on a bare model says None is allowed": (
        lambda x: x.at_step(5), ["step=5", "None (the final weights)"]),
    "a task longer than the model's context (RuntimeError inside before)": (
        _long_task, ["task='repeated_blocks'", "n_ctx=8", "seq_len=12"]),
    "set_position target='Z' (blamed sequence before)": (
        lambda x: x.set_position(3, target="Z"), ["target='Z'", "ABCDE"]),
    "set_position target=7 (blamed sequence before)": (
        lambda x: x.set_position(3, target=7), ["target=7", "0..4"]),
    "set_position target=True": (lambda x: x.set_position(3, target=True), ["target=True"]),
    "set_position target=1.0": (lambda x: x.set_position(3, target=1.0), ["target=1.0"]),
    "ablate head=np.int64(1) out of range": (lambda x: x.ablate(0, np.int64(1)), ["head=", "0..0"]),
    "ablate layer=np.float64(0)": (lambda x: x.ablate(np.float64(0.0), 0), ["layer=", "an integer"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=[f"explorer: {c}" for c in CASES])
def test_explorer_refuses(case, explorer):
    call, fragments = CASES[case]
    with no_hang(), pytest.raises(ValueError) as info:
        call(explorer)
    message = str(info.value)
    assert "\n" not in message.strip(), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_catalogue_part_9_size():
    assert len(CASES) >= 10


def test_numpy_integer_heads_are_heads(explorer):
    """A head picked from a numpy table (``np.int64``) is a head (refused before)."""
    state = explorer.ablate(np.int64(0), np.int64(0))
    assert state["ablated"] == [(0, 0, "zero")] and type(state["ablated"][0][0]) is int
    assert explorer.restore(np.int64(0), np.int64(0))["ablated"] == []


def test_at_step_none_on_a_bare_model_is_the_final_weights(explorer):
    """``None`` is documented as "final weights" on any model (refused on a bare one before)."""
    before = explorer.state()
    state = explorer.at_step(None)
    assert state["step"] is None and np.allclose(state["attribution"], before["attribution"])


def test_weights_that_are_not_finite_warn_loudly():
    """NaN weights: a RuntimeWarning naming the parameters (silent NaN views before)."""
    model = previous_token_model()
    with torch.no_grad():
        model.blocks[0].attn.W_Q[0, 0, 0] = float("nan")
    with pytest.warns(RuntimeWarning, match=r"not finite .*blocks\.0\.attn\.W_Q.*meaningless"):
        toymech.explore(model, TASK)
    with torch.no_grad():
        model.blocks[0].attn.W_Q[0, 0, 0] = float("inf")
    with pytest.warns(RuntimeWarning, match="not finite"):
        toymech.explore(model, TASK)


def test_finite_weights_do_not_warn(recwarn):
    toymech.explore(previous_token_model(), TASK)
    assert not [w for w in recwarn if "not finite" in str(w.message)]


@pytest.fixture(scope="module")
def smoke_entry(tmp_path_factory):
    from toymech import experiments
    from toymech.zoo import Zoo

    zoo = Zoo(tmp_path_factory.mktemp("explore-zoo"))
    return zoo.get_or_train(experiments.get("induction-2l", "smoke", 0), device="cpu",
                            progress=False, log=None)


@pytest.mark.parametrize("step", [10**30, 41, -1, 2.5, True], ids=lambda s: f"explorer: at_step({s!r})")
def test_at_step_beyond_the_run_is_refused(smoke_entry, step):
    """The run trained 40 steps: a step past it is refused, not served as the last (10**30 was)."""
    x = toymech.explore(smoke_entry)
    with pytest.raises(ValueError, match=r"^step=.* is not allowed: an integer in 0\.\.40"):
        x.at_step(step)
    assert x.at_step(40)["step"] == 40 and x.at_step(38)["step"] == 40
    assert T == 8  # the hand-built task's length, which the context case above relies on
