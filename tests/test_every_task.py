"""The rules every registered task obeys (CONTRIBUTING, "Add a task"), one test each,
parametrised over ``toymech.tasks.names()``: a new task is covered without an edit here.
Task-specific labels stay in ``tests/test_tasks.py`` and ``tests/test_random_tasks.py``."""

import pytest
import torch

from toymech import tasks
from toymech.tasks import held_out_split

NAMES = tasks.names()


@pytest.fixture(params=NAMES)
def task(request):
    return tasks.get(request.param)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_sampling_is_deterministic_under_a_generator(task):
    a, b = task.sample(32, _gen(7)), task.sample(32, _gen(7))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.scored, b.scored)
    assert a.extras.keys() == b.extras.keys()
    assert all(torch.equal(a.extras[k], b.extras[k]) for k in a.extras)
    c = task.sample(32, _gen(8))
    assert not torch.equal(a.tokens, c.tokens), "another seed draws the same batch"


def test_tokens_and_scored_mask(task):
    batch = task.sample(32, _gen(0))
    assert batch.tokens.dtype == torch.long and batch.tokens.shape == (32, task.seq_len)
    assert 0 <= int(batch.tokens.min()) and int(batch.tokens.max()) < task.d_vocab
    assert batch.scored.dtype == torch.bool and batch.scored.shape == batch.tokens.shape
    assert not batch.scored[:, 0].any(), "the first token has no prefix to predict it from"
    assert batch.scored.any(), "nothing is scored"
    for name, held in task.eval_sets(16, _gen(1)).items():
        assert held.scored.dtype == torch.bool and held.scored.shape == held.tokens.shape, name
        assert held.scored.any(), f"eval set {name!r} scores nothing"


def test_to_dict_round_trip(task):
    again = tasks.from_dict(task.to_dict())
    assert type(again) is type(task) and again == task
    assert again.to_dict() == task.to_dict()


def test_vocabulary_is_readable_and_decodes(task):
    vocab = task.vocab
    assert len(vocab) == task.d_vocab > 1
    # readable: printable text (a character-level corpus's own whitespace, e.g. "\n", is itself)
    assert all(isinstance(s, str) and s and (s.isprintable() or s.isspace()) for s in vocab), \
        vocab[:20]
    assert len(set(vocab)) == len(vocab), "two token ids share a string"
    tokens = task.sample(4, _gen(2)).tokens
    for row in tokens:
        assert task.str_tokens(row) == [vocab[i] for i in row.tolist()]
        assert task.decode(row, sep="|") == "|".join(task.str_tokens(row))
        if hasattr(task, "encode"):
            assert torch.equal(torch.as_tensor(task.encode(task.decode(row))), row)


@pytest.mark.parametrize("name", [n for n in NAMES if tasks.get(n).held_out(8, _gen(0))
                                  is not None])
def test_held_out_split_is_disjoint_from_training(name):
    task = tasks.get(name)
    held = task.held_out(256, _gen(3))
    train = task.sample(512, _gen(4))
    if isinstance(task, held_out_split.HeldOutSplit):  # the closed-form split: a fixed hash per sequence
        assert held_out_split.held_out_mask(task.split_key(held), task.train_frac, task.split_seed).all()
        in_held = held_out_split.held_out_mask(task.split_key(train), task.train_frac, task.split_seed)
        assert not train.scored[in_held].any(), "a held-out sequence is scored in training"
        sets = task.eval_sets(64, _gen(5))  # the mixin's: test held out, train as for training
        assert set(sets) == {"test", "train"}, sorted(sets)
        key = lambda b: held_out_split.held_out_mask(task.split_key(b), task.train_frac,  # noqa: E731
                                             task.split_seed)
        assert key(sets["test"]).all() and not sets["train"].scored[key(sets["train"])].any()
    scored = train.scored.any(1)
    seen = {tuple(row) for row in train.tokens[scored].tolist()}
    assert not seen & {tuple(row) for row in held.tokens.tolist()}
