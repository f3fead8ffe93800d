"""Tasks of the random-transformers study: answers checked by independent computations."""

import math

import pytest
import torch

from toymech import tasks
from toymech.tasks.circuit_imitation import kl_to_target


@pytest.mark.parametrize("name, params, field", [
    ("modular_addition", {"p": 1}, "p"), ("modular_addition", {"p": 5.0}, "p"),
    ("modular_addition", {"train_frac": 1.0}, "train_frac"),
    ("modular_addition", {"p": 2, "train_frac": 0.01}, "train_frac"),
    ("needle", {"max_pairs": 0}, "max_pairs"), ("needle", {"max_pairs": 10, "n_keys": 5}, "n_keys"),
    ("needle", {"min_pairs": 4, "max_pairs": 3}, "min_pairs"), ("needle", {"n_values": 1}, "n_values"),
    ("decimal_addition", {"n_digits": 0}, "n_digits"), ("decimal_addition", {"n_digits": 19}, "n_digits"),
    ("parentheses", {"max_len": 1}, "max_len"),
    ("needle", {"train_frac": 0.0}, "train_frac"),
    ("decimal_addition", {"train_frac": 1.5}, "train_frac"),
    ("parentheses", {"split_seed": -1}, "split_seed"),
    ("memorization", {"n_keys": 0}, "n_keys"), ("memorization", {"n_values": 1}, "n_values"),
    ("char_lm", {"length": 1}, "length"), ("char_lm", {"train_frac": 1.0}, "train_frac"),
    ("circuit_imitation", {"target_width": 6, "target_heads": 4}, "target_heads"),
    ("circuit_imitation", {"length": 1}, "length"),
    ("circuit_imitation", {"logit_scale": 0}, "logit_scale"),
])
def test_impossible_parameters_raise(name, params, field):
    with pytest.raises(ValueError, match=rf"{field}=.* is not allowed"):
        tasks.get(name, **params)


def _scored_positions(batch):
    return [row.nonzero().flatten().tolist() for row in batch.scored]


def test_modular_addition_answers_and_split(gen):
    task = tasks.get("modular_addition", p=13)
    batch = task.sample(500, gen)
    for (a, b, c) in batch.tokens.tolist():
        assert c == (a + b) % 13
    assert _scored_positions(batch) == [[2]] * 500
    train, test = task.split
    assert len(set(train.tolist()) & set(test.tolist())) == 0
    assert sorted(train.tolist() + test.tolist()) == list(range(169))
    assert len(test) == 169 - round(0.95 * 169)
    # training batches only use training pairs; the test set is every held-out pair
    seen = set((batch.tokens[:, 0] * 13 + batch.tokens[:, 1]).tolist())
    assert seen <= set(train.tolist())
    ev = task.eval_sets(64, gen)["test"]
    assert sorted((ev.tokens[:, 0] * 13 + ev.tokens[:, 1]).tolist()) == sorted(test.tolist())
    # the split is fixed by its seed, whatever generator samples batches
    assert torch.equal(tasks.get("modular_addition", p=13).split[1], test)
    assert not torch.equal(tasks.get("modular_addition", p=13, split_seed=1).split[1], test)


def test_needle_answers_by_dict_lookup(gen):
    task = tasks.get("needle", max_pairs=7, n_keys=9, n_values=5)
    batch = task.sample(300, gen)
    vocab = task.vocab
    counts = set()
    for row, pos in zip(batch.tokens.tolist(), _scored_positions(batch)):
        words = [vocab[i] for i in row]
        q = words.index("?")
        pairs = words[:q]
        keys, values = pairs[0::2], pairs[1::2]
        assert all(k.startswith("k") for k in keys) and all(v.startswith("v") for v in values)
        assert len(set(keys)) == len(keys), "keys must be distinct"
        table = dict(zip(keys, values))
        assert words[q + 1] in table and words[q + 2] == table[words[q + 1]]
        assert pos == [q + 2] and set(words[q + 3:]) <= {"."}
        counts.add(len(keys))
    assert counts == set(range(1, 8))  # every haystack size occurs


def test_decimal_addition_by_python_integers(gen):
    task = tasks.get("decimal_addition", n_digits=5)
    batch = task.sample(400, gen)
    carries = 0
    for row in batch.tokens.tolist():
        text = task.decode(row)
        a_rev, rest = text.split("+")
        b_rev, c_rev = rest.split("=")
        a, b, c = int(a_rev[::-1]), int(b_rev[::-1]), int(c_rev[::-1])
        assert len(a_rev) == len(b_rev) == 5 and len(c_rev) == 6
        assert a + b == c
        carries += (a % 10 + b % 10) >= 10
    assert carries > 50
    assert _scored_positions(batch)[0] == list(range(12, 18))


def _balanced_by_stack(s: str) -> bool:
    stack = []
    for ch in s:
        if ch == "(":
            stack.append(ch)
        elif not stack:
            return False
        else:
            stack.pop()
    return not stack


def test_parentheses_labels_by_a_stack(gen):
    task = tasks.get("parentheses", max_len=20)
    batch = task.sample(1000, gen)
    n_balanced, depths = 0, []
    for row, pos in zip(batch.tokens.tolist(), _scored_positions(batch)):
        text = task.decode(row)
        string, rest = text.split("?")
        assert set(string) <= {"(", ")"} and 2 <= len(string) <= 20
        assert rest[0] == ("Y" if _balanced_by_stack(string) else "N")
        assert pos == [len(string) + 1] and set(rest[1:]) <= {"."}
        n_balanced += rest[0] == "Y"
        depth = 0
        for ch in string:
            depth += 1 if ch == "(" else -1
            depths.append(depth)
    assert 0.45 < n_balanced / 1000 < 0.65  # about half balanced
    assert max(depths) >= 6  # deep strings occur


def test_memorization_table_and_bits(gen):
    task = tasks.get("memorization", n_keys=6, n_values=10)
    batch = task.sample(200, gen)
    table = task.table.tolist()
    for a, b, v in batch.tokens.tolist():
        assert 0 <= a < 6 and 6 <= b < 12 and 12 <= v < 22
        assert v - 12 == table[a][b - 6]
    everything = task.eval_sets(8, gen)["all"]
    assert len(everything) == 36
    # a model that puts probability 1 on the right value stores log2(10) bits per pair
    logits = torch.full((36, 3, task.d_vocab), -1e4)
    logits[torch.arange(36), 1, everything.tokens[:, 2]] = 0.0
    assert task.metrics(logits, everything)["memorized_bits"] == pytest.approx(36 * math.log2(10))
    # uniform over the values stores nothing
    logits = torch.full((36, 3, task.d_vocab), -1e4)
    logits[:, 1, 12:] = 0.0
    assert task.metrics(logits, everything)["memorized_bits"] == pytest.approx(0.0, abs=1e-6)


def test_char_lm_reads_the_shipped_corpus(gen):
    task = tasks.get("char_lm", length=32)
    assert task.d_vocab == 65
    batch = task.sample(4, gen)
    assert batch.tokens.shape == (4, 32) and batch.scored[:, 1:].all()
    text = task.decode(batch.tokens[0])
    from toymech.tasks.char_lm import corpus
    assert text in corpus()[0]
    test = task.eval_sets(4, gen)["test"]
    cut = int(0.9 * len(corpus()[0]))
    assert task.decode(test.tokens[0]) in corpus()[0][cut:]


def test_circuit_imitation_kl(gen):
    task = tasks.get("circuit_imitation", target_width=8, n_tokens=12, length=6)
    batch = task.sample(32, gen)
    target = batch.extras["target_logp"]
    assert target.shape == (32, 6, 12)
    assert torch.allclose(target.exp().sum(-1), torch.ones(32, 6), atol=1e-5)
    # the student that outputs the target's own logits has KL 0, any other one KL > 0
    assert float(kl_to_target(target, batch)) == pytest.approx(0.0, abs=1e-6)
    m = task.metrics(torch.zeros(32, 6, 12), batch)
    manual = (target.exp() * (target + math.log(12))).sum(-1)[:, :-1].mean()
    assert m["kl"] == pytest.approx(float(manual), rel=1e-5) and m["kl"] > 0.05
    noise = torch.randn(32, 6, 12, generator=torch.Generator().manual_seed(5))
    assert float(kl_to_target(noise, batch)) >= 0
    # deterministic target; a different target seed or width is a different function
    again = tasks.get("circuit_imitation", target_width=8, n_tokens=12, length=6)
    assert torch.allclose(again.target_logp(batch.tokens), target)
    other = tasks.get("circuit_imitation", target_width=8, n_tokens=12, length=6, target_seed=1)
    assert not torch.allclose(other.target_logp(batch.tokens), target)
    wider = tasks.get("circuit_imitation", target_width=16, n_tokens=12, length=6)
    assert not torch.allclose(wider.target_logp(batch.tokens), target, atol=1e-2)


def test_circuit_target_is_causal_and_sharp():
    task = tasks.get("circuit_imitation", target_width=32, n_tokens=64, length=16)
    tokens = torch.randint(0, 64, (64, 16), generator=torch.Generator().manual_seed(0))
    logp = task.target_logp(tokens)
    changed = tokens.clone()
    changed[:, 9:] = (changed[:, 9:] + 1) % 64
    later = task.target_logp(changed)
    assert torch.allclose(later[:, :9], logp[:, :9], atol=1e-5)  # causal: no look-ahead
    assert not torch.allclose(later[:, 9:], logp[:, 9:], atol=1e-3)
    top = logp.exp().max(-1).values  # logit_scale 2: peaked but not one-hot distributions
    assert 0.05 < float(top.median()) < 0.8
    # more sharply scaled logits give sharper distributions
    sharp = tasks.get("circuit_imitation", target_width=32, n_tokens=64, length=16, logit_scale=4.0)
    assert float(sharp.target_logp(tokens).exp().max(-1).values.median()) > float(top.median())


def test_circuit_target_against_a_reference_and_layering():
    import ast
    from pathlib import Path

    import toymech.tasks.circuit_imitation as ci
    target = ci.RandomGPT2(n_tokens=7, n_ctx=5, width=8, n_layers=1, n_heads=2, seed=3)
    assert all(float(p.std()) == pytest.approx(8 ** -0.5, rel=0.4) for p in target.parameters())
    tokens = torch.tensor([[1, 4, 0, 6, 2]])
    # an independent computation with torch's MultiheadAttention (same weights, no biases)
    layer = target.layers[0]
    mha = torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w.T for w in layer.W_QKV]))
        mha.out_proj.weight.copy_(layer.W_O.T)
    ln = lambda x: torch.nn.functional.layer_norm(x, (8,))  # noqa: E731
    x = target.W_E[tokens] + target.W_pos[:5]
    h = ln(x)
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    x = x + mha(h, h, h, attn_mask=mask, need_weights=False)[0]
    x = x + torch.nn.functional.gelu(ln(x) @ layer.W_in) @ layer.W_out
    assert torch.allclose(target(tokens), ln(x) @ target.W_U, atol=1e-5)
    # the task layer imports nothing above it (no models, training, ...)
    tree = ast.parse(Path(ci.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            assert node.level == 1, ast.dump(node)


@pytest.mark.parametrize("name, params", [
    ("modular_addition", {"p": 7}), ("needle", {"max_pairs": 3, "n_keys": 4}),
    ("decimal_addition", {"n_digits": 2}), ("parentheses", {"max_len": 6}),
    ("memorization", {"n_keys": 3}), ("char_lm", {"length": 8}),
    ("circuit_imitation", {"target_width": 4, "n_tokens": 5, "length": 4}),
])
def test_generators_are_deterministic_and_in_vocab(name, params):
    task = tasks.get(name, **params)
    a = task.sample(16, torch.Generator().manual_seed(3))
    b = task.sample(16, torch.Generator().manual_seed(3))
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.scored, b.scored)
    assert a.tokens.shape == (16, task.seq_len)
    assert 0 <= int(a.tokens.min()) and int(a.tokens.max()) < task.d_vocab
    assert a.target_mask.any(dim=1).all()  # every sequence has a scored target


# --- held-out splits -------------------------------------------------------------------------
from toymech.tasks import held_out_split  # noqa: E402

SPLIT_TASKS = [("needle", {"max_pairs": 4, "n_keys": 8, "n_values": 8}),
               ("decimal_addition", {"n_digits": 2}), ("parentheses", {"max_len": 16})]


def _rows(batch):
    return {tuple(r) for r in batch.tokens.tolist()}


@pytest.mark.parametrize("name, params", SPLIT_TASKS)
def test_training_never_draws_a_held_out_sequence(name, params):
    task = tasks.get(name, **params)
    g = torch.Generator().manual_seed(0)
    train, held = task.sample(4000, g), task.held_out(500, g)
    problems = {n: {tuple(r) for r in task.split_key(b).tolist()}
                for n, b in (("train", train), ("held", held))}
    assert len(held) == 500 and problems["train"].isdisjoint(problems["held"])
    # membership recomputed from the definition: (sum_t w_t x_t mod P) < (1 - train_frac) P
    width = task.split_key(held).shape[1]
    w = torch.randint(1, held_out_split.PRIME, (width,), generator=torch.Generator().manual_seed(0))

    def is_held(row):
        h = sum(int(a) * int(b) for a, b in zip(row, w)) % held_out_split.PRIME
        return h < round(0.05 * held_out_split.PRIME)
    assert all(is_held(r) for r in list(problems["held"])[:50])
    assert not any(is_held(r) for r in list(problems["train"])[:200])
    # about 5 % of the task's distinct problems are held out; every training row is scored
    distinct = torch.unique(task.split_key(task._draw(20000, torch.Generator().manual_seed(1))),
                            dim=0)
    frac = float(held_out_split.held_out_mask(distinct, task.train_frac, task.split_seed).float().mean())
    assert len(distinct) > 2000 and 0.04 < frac < 0.06 and train.target_mask.any(1).all()
    sets = task.eval_sets(300, torch.Generator().manual_seed(2))
    assert set(sets) == {"test", "train"}
    assert held_out_split.held_out_mask(task.split_key(sets["test"]), 0.95, 0).all()
    assert not held_out_split.held_out_mask(task.split_key(sets["train"]), 0.95, 0).any()


def test_needle_with_several_queries(gen):
    task = tasks.get("needle", max_pairs=5, n_keys=9, n_values=6, queries=3)
    assert task.seq_len == 2 * 5 + 1 + 6
    batch = task.sample(200, gen)
    vocab = task.vocab
    for row, pos in zip(batch.tokens.tolist(), _scored_positions(batch)):
        words = [vocab[i] for i in row]
        q = words.index("?")
        table = dict(zip(words[:q][0::2], words[:q][1::2]))
        asked = words[q + 1: q + 7]
        assert pos == [q + 2, q + 4, q + 6] and set(words[q + 7:]) <= {"."}
        assert all(asked[2 * j] in table and asked[2 * j + 1] == table[asked[2 * j]]
                   for j in range(3))
    # first_acc scores the first query only: a model right on it alone scores 1 there, 1/3 overall
    logits = torch.zeros(200, task.seq_len, task.d_vocab)
    first = batch.extras["n_pairs"] * 2 + 2
    rows = torch.arange(200)
    logits[rows, first - 1, batch.tokens[rows, first]] = 5.0
    wrong = (batch.tokens + 1) % task.d_vocab
    for j in (1, 2):
        logits[rows, first - 1 + 2 * j, wrong[rows, first + 2 * j]] = 5.0
    m = task.metrics(logits, batch)
    assert m["first_acc"] == 1.0 and m["acc"] == pytest.approx(1 / 3)
    single = tasks.get("needle", max_pairs=5, n_keys=9)
    one = single.sample(64, gen)
    m = single.metrics(torch.randn(64, single.seq_len, single.d_vocab, generator=gen), one)
    assert m["first_acc"] == m["acc"]


def test_split_is_fixed_by_its_seed_and_can_be_turned_off():
    a = tasks.get("decimal_addition", n_digits=2)
    b = tasks.get("decimal_addition", n_digits=2, split_seed=1)
    g = torch.Generator().manual_seed(0)
    raw = a._draw(5000, g)
    ma = held_out_split.held_out_mask(raw.tokens, a.train_frac, a.split_seed)
    assert torch.equal(ma, held_out_split.held_out_mask(raw.tokens, a.train_frac, a.split_seed))
    assert not torch.equal(ma, held_out_split.held_out_mask(raw.tokens, b.train_frac, b.split_seed))
    whole = tasks.get("decimal_addition", n_digits=2, train_frac=1.0)
    assert whole.held_out(10, g) is None and set(whole.eval_sets(10, g)) == {"test"}
    # without a split the task draws exactly what _draw draws
    assert torch.equal(whole.sample(64, torch.Generator().manual_seed(5)).tokens,
                       whole._draw(64, torch.Generator().manual_seed(5)).tokens)


def test_a_short_margin_leaves_held_out_rows_unscored():
    task = tasks.get("decimal_addition", n_digits=2)
    g = torch.Generator().manual_seed(0)
    held = task.held_out(64, g)
    # a draw that returns only held-out rows: none may be scored for training
    batch = held_out_split.training_rows(lambda n: held_out_split.take(held, torch.arange(n) % 64), 32,
                                 task.train_frac, task.split_seed)
    assert len(batch) == 32 and not batch.scored.any()


def test_task_versions_in_the_saved_dict():
    for name, params in SPLIT_TASKS + [("modular_addition", {"p": 7})]:
        task = tasks.get(name, **params)
        d = task.to_dict()
        assert d["version"] == 2 and tasks.from_dict(d) == task
        old = {k: v for k, v in d.items() if k != "version"}  # saved before the change
        assert tasks.from_dict(old) == task
        with pytest.raises(ValueError, match="task version=3 is not allowed: at most 2"):
            tasks.from_dict({**d, "version": 3})
    # tasks that never changed keep their dicts (and so their zoo keys)
    assert "version" not in tasks.get("repeated_blocks").to_dict()


def test_modular_addition_held_out_is_the_held_out_part(gen):
    task = tasks.get("modular_addition", p=59)
    test = set(task.split[1].tolist())
    every = task.held_out(1024, gen)
    pairs = set((every.tokens[:, 0] * 59 + every.tokens[:, 1]).tolist())
    assert len(every) == 174 and pairs == test
    some = task.held_out(50, gen)
    idx = (some.tokens[:, 0] * 59 + some.tokens[:, 1]).tolist()
    assert len(set(idx)) == 50 and set(idx) <= test
