"""Birth of a Transformer: the bigram_triggers task, the simplified model and its freezing, the
memory-recall probes on hand-built weights, and the notebook at smoke size."""

import math
from pathlib import Path

import pytest
import torch

from toymech import experiments, tasks
from toymech.analysis import probes
from toymech.models import build_model
from toymech.studies import birth
from toymech.studies.birth import callbacks as bcb
from toymech.studies.birth import claims as bclaims
from toymech.studies.birth import design as bdesign
from toymech.studies.birth import measure as bmeasure
from toymech.studies.birth import tables as btables
from toymech.tasks.bigram_triggers import bigram_predictor_metrics, corpus_statistics
from toymech.training import train
from toymech.zoo import Zoo

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "02_birth_of_a_transformer.ipynb"


# --- the task ------------------------------------------------------------------------------------
@pytest.mark.parametrize("params, field", [
    ({"n_triggers": 0}, "n_triggers"), ({"n_triggers": 66}, "n_triggers"),
    ({"n_triggers": 2.5}, "n_triggers"), ({"trigger_mode": "sometimes"}, "trigger_mode"),
    ({"variant": "many"}, "variant"), ({"length": 1}, "length"),
    ({"n_ood": 3}, "n_ood"),  # held-out tokens need random triggers
    ({"trigger_mode": "random", "n_ood": 63}, "n_ood"),
    ({"vocab_size": 1}, "vocab_size"), ({"vocab_size": 66}, "vocab_size"),
    ({"vocab_size": 8, "n_triggers": 9}, "n_triggers"),
])
def test_bad_parameters_raise_naming_the_field(params, field):
    with pytest.raises(ValueError, match=rf"{field}=.* is not allowed"):
        tasks.get("bigram_triggers", **params)


def test_empty_or_unreadable_corpus(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="corpus="):
        tasks.get("bigram_triggers", corpus=str(empty))
    with pytest.raises(ValueError, match="corpus="):
        tasks.get("bigram_triggers", corpus=str(tmp_path / "missing.txt"))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\xfa")
    with pytest.raises(ValueError, match="corpus="):
        tasks.get("bigram_triggers", corpus=str(tmp_path / "bin.txt"))


def test_shipped_corpus_statistics():
    chars, uni, bi = corpus_statistics(None)
    assert len(chars) == 65 and uni.shape == (65,) and bi.shape == (65, 65)
    assert torch.allclose(bi.sum(1), torch.ones(65), atol=1e-5)
    task = tasks.get("bigram_triggers")
    assert task.d_vocab == 65 and task.seq_len == 256
    # the fixed triggers are the most frequent characters (space first in Shakespeare)
    assert task.vocab[int(task.fixed_triggers[0])] == "␣"
    assert float(uni[task.fixed_triggers].min()) >= float(uni.sort(descending=True).values[2])


def test_vocabulary_size_keeps_the_most_frequent_characters(tmp_path):
    full = tasks.get("bigram_triggers", length=32)
    assert "vocab_size" not in full.to_dict()  # older configs keep their keys
    task = tasks.get("bigram_triggers", length=32, vocab_size=10)
    assert task.d_vocab == 10 and tasks.from_dict(task.to_dict()) == task
    top = torch.argsort(full.pi_u, descending=True, stable=True)[:10]
    assert sorted(task.vocab) == sorted(full.vocab[int(i)] for i in top)
    assert torch.allclose(task.pi_u.sum(), torch.tensor(1.0))
    assert torch.allclose(task.pi_b.sum(1), torch.ones(10), atol=1e-5)
    toks = task.sample(8, torch.Generator().manual_seed(0)).tokens
    assert int(toks.max()) < 10
    # a character all of whose successors were cut gets a uniform row
    path = tmp_path / "ab.txt"
    path.write_text("ab" * 10 + "c" * 40 + "ab")
    cut = tasks.get("bigram_triggers", corpus=str(path), vocab_size=2, n_triggers=1, length=8)
    assert cut.vocab == ["a", "c"] and torch.allclose(cut.pi_b[0], torch.tensor([0.5, 0.5]))


def test_text_file_and_user_distribution(tmp_path):
    path = tmp_path / "abc.txt"
    path.write_text("abcabcabcabd" * 50)
    task = tasks.get("bigram_triggers", corpus=str(path), n_triggers=1, length=20)
    assert task.vocab == ["a", "b", "c", "d"]
    user = tasks.get("bigram_triggers", chars=("x", "y"), unigram=(0.5, 0.5),
                     bigram=((0.0, 1.0), (1.0, 0.0)), n_triggers=1, length=10,
                     variant="no_triggers")
    toks = user.sample(4, torch.Generator().manual_seed(0)).tokens
    assert (toks[:, 1:] != toks[:, :-1]).all()  # the chain alternates x, y
    with pytest.raises(ValueError, match="unigram="):
        tasks.get("bigram_triggers", chars=("x", "y"), unigram=(0.5,), bigram=((0, 1), (1, 0)))


def test_sample_is_deterministic_under_a_generator():
    task = tasks.get("bigram_triggers", length=32, trigger_mode="random")
    a = task.sample(8, torch.Generator().manual_seed(3)).tokens
    b = task.sample(8, torch.Generator().manual_seed(3)).tokens
    c = task.sample(8, torch.Generator().manual_seed(4)).tokens
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("mode", ["fixed", "random"])
def test_triggers_are_always_followed_by_their_output(mode, gen):
    task = tasks.get("bigram_triggers", length=64, n_triggers=4, trigger_mode=mode)
    batch = task.sample(200, gen)
    toks, outs = batch.tokens, batch.extras["outputs"]
    assert ((outs >= 0).sum(1) == 4).all()  # exactly K triggers per sequence
    if mode == "fixed":
        assert torch.equal((outs[0] >= 0).nonzero()[:, 0].sort().values,
                           task.fixed_triggers.sort().values)
    forced = outs.gather(1, toks[:, :-1])
    is_trig = forced >= 0
    assert is_trig.any() and torch.equal(toks[:, 1:][is_trig], forced[is_trig])
    # in-context marks: after a trigger that occurred before; bigram marks: after a non-trigger
    for b in range(20):
        for t in range(1, 64):
            prev = int(toks[b, t - 1])
            trig = bool(outs[b, prev] >= 0)
            assert bool(batch.extras["bigram"][b, t]) == (not trig)
            seen = bool((toks[b, : t - 1] == prev).any())
            assert bool(batch.extras["in_context"][b, t]) == (trig and seen)


def test_non_trigger_transitions_follow_the_bigram_statistics(gen):
    task = tasks.get("bigram_triggers", length=256, n_triggers=3)
    batch = task.sample(1024, gen)
    prev, nxt = batch.tokens[:, :-1], batch.tokens[:, 1:]
    mask = batch.extras["bigram"][:, 1:]
    n = task.d_vocab
    counts = torch.bincount(prev[mask] * n + nxt[mask], minlength=n * n).view(n, n).double()
    rows = counts.sum(1) >= 1500
    assert int(rows.sum()) >= 8
    emp = counts[rows] / counts[rows].sum(1, keepdim=True)
    tv = 0.5 * (emp - task.pi_b[rows].double()).abs().sum(1)
    assert float(tv.max()) < 0.08, tv
    # first tokens follow the unigram law
    first = torch.bincount(batch.tokens[:, 0], minlength=n).double() / 1024
    assert 0.5 * float((first - task.pi_u.double()).abs().sum()) < 0.15


def test_variants_and_ood_triggers(gen):
    none = tasks.get("bigram_triggers", length=32, variant="no_triggers").sample(16, gen)
    assert not none.extras["in_context"].any() and none.extras["bigram"][:, 1:].all()
    only = tasks.get("bigram_triggers", length=32, variant="only_triggers").sample(16, gen)
    assert not only.extras["bigram"].any()
    # a deterministic successor: the same token is always followed by the same token
    succ = only.extras["outputs"].gather(1, only.tokens[:, :-1])
    assert torch.equal(succ, only.tokens[:, 1:])
    task = tasks.get("bigram_triggers", length=32, trigger_mode="random", n_triggers=2, n_ood=10)
    pool = task.train_trigger_pool
    assert int((~pool).sum()) == 10
    train_trig = task.sample(64, gen).extras["outputs"] >= 0
    assert not (train_trig & ~pool).any()
    ood = task.eval_sets(64, gen)["ood"].extras["outputs"] >= 0
    assert not (ood & pool).any() and (ood.sum(1) == 2).all()


def test_metrics_report_the_parts_apart(gen):
    task = tasks.get("bigram_triggers", length=64)
    batch = task.sample(64, gen)
    base = bigram_predictor_metrics(task, batch)
    assert {"loss", "acc", "icl_acc", "icl_loss", "bigram_acc", "bigram_loss"} <= set(base)
    assert base["icl_acc"] < 0.1 < base["bigram_acc"] < 0.45
    # an oracle that knows each sequence's outputs is perfect in context
    logits = torch.log(task.pi_b[batch.tokens].clamp(min=1e-9))
    forced = batch.extras["outputs"].gather(1, batch.tokens)
    logits = logits.scatter(-1, forced.clamp(min=0)[..., None],
                            torch.where(forced >= 0, 100.0, logits.gather(
                                -1, forced.clamp(min=0)[..., None])[..., 0])[..., None])
    assert task.metrics(logits, batch)["icl_acc"] == 1.0


# --- probes on hand-built weights -------------------------------------------------------------------
def _orthonormal(n, d, seed=0):
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=torch.Generator().manual_seed(seed)))
    return q[:n]


def test_previous_token_probe_perfect_and_random():
    P = _orthonormal(32, 48)
    assert probes.previous_token_probe(P[1:].T @ P[:-1], P) == 1.0
    rand = torch.randn(48, 48, generator=torch.Generator().manual_seed(1))
    chance = sum(1 / (t + 1) for t in range(1, 32)) / 31
    assert probes.previous_token_probe(rand, P) < chance + 0.2


def test_induction_and_copy_probes_perfect_and_random():
    N, d = 20, 32
    E, U = _orthonormal(N, d, 1), _orthonormal(N, d, 2).T
    ov1 = _orthonormal(d, d, 3)
    assert probes.induction_key_probe(E.T @ (E @ ov1), E, ov1) == 1.0
    assert probes.output_copy_probe(E.T @ U.T, E, U) == 1.0
    g = torch.Generator().manual_seed(5)
    rand = [probes.output_copy_probe(torch.randn(d, d, generator=g), E, U) for _ in range(20)]
    assert sum(rand) / 20 < 3 / N
    rand = [probes.induction_key_probe(torch.randn(d, d, generator=g), E, ov1) for _ in range(20)]
    assert sum(rand) / 20 < 3 / N
    trig = torch.tensor([0, 3])
    assert probes.induction_key_probe(E.T @ (E @ ov1), E, ov1, trig) == 1.0
    with pytest.raises(ValueError, match="tokens="):
        probes.output_copy_probe(E.T @ U.T, E, U, torch.tensor([N]))


def test_bigram_kl_probe():
    N = 6
    pi_b = torch.softmax(torch.randn(N, N, generator=torch.Generator().manual_seed(0)), -1)
    eye = torch.eye(N)
    assert probes.bigram_kl_probe(torch.log(pi_b), eye, eye, pi_b) < 1e-5
    kl_uniform = float((pi_b * torch.log(pi_b * N)).sum(1).mean())
    assert probes.bigram_kl_probe(torch.zeros(N, N), eye, eye, pi_b) == pytest.approx(kl_uniform,
                                                                                     rel=1e-4)


def test_linear_probe_finds_a_linear_code_and_not_noise():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 5, (600,), generator=g)
    code = torch.nn.functional.one_hot(labels, 5).float() @ torch.randn(5, 16, generator=g)
    good = probes.linear_probe(code + 0.1 * torch.randn(600, 16, generator=g), labels, 5, g)
    noise = probes.linear_probe(torch.randn(600, 16, generator=g), labels, 5, g)
    assert good["test_acc"] > 0.95 and noise["test_acc"] < 0.4


def test_trigger_attention_scores_on_hand_built_patterns():
    tokens = torch.tensor([[5, 1, 7, 5, 2, 5]])
    in_context = torch.tensor([[False, False, False, False, True, False]])  # query at position 3
    T = 6
    prev = torch.zeros(1, 1, T, T)
    prev[0, 0, 0, 0] = 1
    prev[0, 0, torch.arange(1, T), torch.arange(T - 1)] = 1
    assert float(probes.previous_token_attention(prev)[0]) == 1.0
    pattern = torch.zeros(1, 1, T, T)
    pattern[0, 0, :, 0] = 1.0
    pattern[0, 0, 3, 0], pattern[0, 0, 3, 1] = 0.0, 1.0  # position 3 (a 5) looks at 1 (after 5)
    assert float(probes.trigger_induction_attention(pattern, tokens, in_context)[0]) == 1.0


# --- the simplified model, freezing and construction --------------------------------------------------
def test_simplified_model_structure():
    task = tasks.get("bigram_triggers", length=16)
    model = build_model(bdesign.simplified_config(task, 16))
    assert torch.equal(model.W_Q[0, 0], torch.eye(16)) and torch.equal(model.W_V[1, 0], torch.eye(16))
    assert hasattr(model.blocks[1].mlp, "W_F")
    tied = build_model(bdesign.simplified_config(task, 16, tied=True, ff=False))
    assert torch.equal(tied.W_U, tied.W_E.T) and "unembed.W_U" not in dict(tied.named_parameters())
    with pytest.raises(ValueError, match="variant_options"):
        bdesign.simplified_config(task, 16, colour="blue")
    with pytest.raises(ValueError, match="freezing="):
        bdesign.freeze_patterns("most")
    with pytest.raises(ValueError, match="freezing="):
        birth.experiment("smoke", freezing="everything")


@pytest.mark.parametrize("freezing, tied", [("paper", False), ("learned_pos", True)])
def test_freezing_leaves_frozen_tensors_bit_identical(freezing, tied):
    exp = birth.experiment("smoke", 0, freezing=freezing, tied=tied, steps=4)
    model = build_model(exp.model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, exp.task, exp.train, device="cpu", progress=False, log=None)
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    assert "embed.W_E" in frozen and "blocks.0.attn.W_K" not in frozen
    assert ("pos_embed.W_pos" in frozen) == (freezing == "paper")
    for name, p in model.named_parameters():
        if name in frozen:
            assert torch.equal(p, before[name]), name
    for name in ("blocks.0.attn.W_K", "blocks.1.attn.W_K", "blocks.1.attn.W_O",
                 "blocks.1.mlp.W_F"):
        assert not torch.equal(dict(model.named_parameters())[name], before[name]), name


def test_unknown_freeze_pattern_is_a_value_error():
    exp = birth.experiment("smoke", 0)
    model = build_model(exp.model)
    with pytest.raises(ValueError, match="freeze="):
        train(model, exp.task, exp.train.replace(freeze=("blocks.*.attn.W_Z",)), device="cpu",
              progress=False, log=None)


def test_construction_recalls_perfectly_on_the_frozen_parts():
    exp = birth.experiment("smoke", 0)
    task = tasks.get("bigram_triggers", length=16)
    model = build_model(bdesign.simplified_config(task, 64))
    table = birth.construction_table(model, model, task)
    assert table.loc["W_K1 (previous token)", "probe (construction)"] == 1.0
    assert table.loc["W_O2 (output copy)", "probe (construction)"] > 0.9
    assert table.loc["W_K2 (induction key)", "probe (construction)"] == 1.0
    assert table["cosine(init, construction)"].abs().max() < 0.3
    M = torch.randn(5, 5)
    assert probes.matrix_cosine(M, 2 * M) == pytest.approx(1.0)
    assert probes.matrix_cosine(M, -M) == pytest.approx(-1.0)
    assert exp.task.n_triggers == 3


def test_callback_records_the_dynamics_keys():
    exp = birth.experiment("smoke", 0, steps=4)
    model = build_model(exp.model)
    result = train(model, exp.task, exp.train, device="cpu", progress=False, log=None,
                   callbacks=[bcb.birth_callback(exp.task, n_sequences=8)])
    row = result.history[-1]
    for key in ("cb_icl_acc", "cb_bigram_acc", "probe_wk1", "probe_wk2", "probe_wo2",
                "probe_wf_kl", "attn_prev", "attn_induction", "kcomp", "kcomp_baseline",
                "linprobe_prev"):
        assert key in row and math.isfinite(row[key]), key
    control = build_model(birth.experiment("smoke", 0, model="control", freezing="none").model)
    assert "probe_wk2" in probes.model_probes(control, exp.task.pi_b)


def test_named_experiments_and_formation_summary():
    for name in ("birth-simplified", "birth-simplified-random", "birth-control"):
        assert name in experiments.names()
        exp = experiments.get(name, "smoke")
        assert exp.task.name == "bigram_triggers"
    hist = [{"step": s, "a": v} for s, v in ((10, 0.0), (20, 0.2), (30, 0.6), (40, 1.0))]
    assert bclaims.half_and_rise(hist, "a") == (pytest.approx(27.5), 1.0)  # interpolated
    falling = [{"step": s, "kl": v} for s, v in ((0, 3.0), (10, 1.0), (20, 2.0))]
    assert bclaims.half_and_rise(falling, "kl", -1) == (pytest.approx(5.0), 2.0)  # half way to 1.0
    assert btables.before_step(hist, "a", 0.25) == 20
    exp = birth.experiment("smoke", 0)
    assert bdesign.truncated(exp, 3).train.steps == 3
    paper = experiments.get("birth-simplified", "paper")
    assert paper.task.seq_len == 256 and paper.train.batch_size == 512
    assert paper.train.optimizer == "sgd" and paper.model.d_model == 128


@pytest.mark.notebook
def test_notebook_runs_at_smoke(smoke_reports):
    # Executed once per session at size smoke by conftest's smoke_reports (see test_notebooks.py).
    out = smoke_reports.executed(NOTEBOOK)
    text = out.read_text()
    assert "Pipeline check" in text and "Traceback" not in text  # the scorecard, at smoke


@pytest.mark.parametrize("tied", [False, True])
def test_zoo_round_trip_rebuilds_the_variant(tmp_path, tied):
    exp = birth.experiment("smoke", 0, tied=tied, steps=2)
    trained = Zoo(tmp_path).get_or_train(exp, device="cpu", progress=False, log=None)
    loaded = Zoo(tmp_path).get_or_train(exp, device="cpu", progress=False, log=None)
    assert loaded.loaded and not trained.loaded
    tokens = exp.task.sample(2, torch.Generator().manual_seed(0)).tokens
    assert torch.allclose(loaded.model(tokens), trained.model(tokens))
    assert torch.equal(loaded.model.blocks[1].mlp.W_F,
                       trained.model.blocks[1].mlp.W_F)


# --- seed streams -------------------------------------------------------------------------------------
def test_evaluation_batches_follow_the_run_seed():
    task = tasks.get("bigram_triggers", length=16, trigger_mode="random", n_ood=8)
    a, b = birth.STUDY.eval_sets(task, "smoke", 0, n=8), birth.STUDY.eval_sets(task, "smoke", 1, n=8)
    assert set(a) == {"test", "ood"}
    assert not torch.equal(a["test"].tokens, b["test"].tokens)
    assert not torch.equal(a["ood"].tokens, b["ood"].tokens)
    assert torch.equal(a["test"].tokens, birth.STUDY.eval_sets(task, "smoke", 0, n=8)["test"].tokens)
    # the evaluation stream is not the training stream of the same seed, nor the example stream
    train_batch = task.sample(8, torch.Generator().manual_seed(0))
    assert not torch.equal(a["test"].tokens, train_batch.tokens)
    assert not torch.equal(birth.example_batch(task, 0, 8).tokens, a["test"].tokens)
    assert not torch.equal(birth.example_batch(task, 0).tokens, birth.example_batch(task, 1).tokens)
    shared = birth.STUDY.eval_sets(task, "smoke", 0, n=8, pools={"non-top-K": bmeasure.shared_pool(task, 8)})
    trig = shared["non-top-K"].extras["outputs"] >= 0
    assert not (trig & ~bmeasure.shared_pool(task, 8)).any()
    assert birth.bigram_baseline(task, "smoke", 0) != birth.bigram_baseline(task, "smoke", 1)


def test_validate_names_the_bad_parameter_and_sets_threads():
    with pytest.raises(ValueError, match="size="):
        birth.validate("tiny", 0, "cpu")
    with pytest.raises(ValueError, match="seed="):
        birth.validate("smoke", -1, "cpu")
    with pytest.raises(ValueError, match="threads="):
        birth.validate("smoke", 0, "cpu", threads=0)
    before = torch.get_num_threads()
    try:
        assert birth.validate("smoke", 0, "cpu", threads=1) == torch.device("cpu")
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_before_and_after_views_come_from_the_runs_snapshots(tmp_path):
    """``snapshots`` reads the main run's own weight snapshots (no second training run): init
    equals a freshly built model, the last view is the trained model."""
    from toymech.models import build_model
    from toymech.studies import birth
    from toymech.zoo import Zoo

    zoo = Zoo(tmp_path)
    exp = birth.experiment("smoke", 0)
    main = birth.main_run(zoo, exp, "cpu", log=None)
    views = birth.snapshots(zoo, exp, main, "cpu", log=None)
    assert len(zoo.entries()) == 1  # nothing else was trained
    init, before, last = views.values()
    fresh = build_model(exp.model, "cpu")
    for name, p in fresh.state_dict().items():
        assert torch.equal(init.state_dict()[name], p), name
    assert int(list(views)[1].split()[-1]) in main.snapshot_steps
    assert last is main.model


# --- the main run over seeds -------------------------------------------------------------------------
def test_main_runs_reuse_the_notebooks_seed_and_measure_each_seed(tmp_path):
    zoo = Zoo(tmp_path)
    exp = birth.experiment("smoke", 5)
    main = birth.main_run(zoo, exp, "cpu", log=None)
    runs = birth.main_runs(zoo, "smoke", 5, "cpu")
    assert list(runs) == [5, 6] and runs[5].loaded and runs[5].path == main.path
    more = birth.main_runs(zoo, "smoke", 5, "cpu", n_seeds=3)
    assert list(more) == [5, 6, 7] and more[6].loaded and not more[7].loaded
    per_seed = {s: birth.measure_seed({"main": e}, birth.probe_data(exp.task, "smoke", s))
                for s, e in runs.items()}
    assert "construction.W_K2.trained" in per_seed[6]  # from the run's initial snapshot
    assert per_seed[5]["baseline.icl_acc"] != per_seed[6]["baseline.icl_acc"] or \
        per_seed[5]["icl_acc"] != per_seed[6]["icl_acc"]
    table = birth.seed_table(per_seed)
    assert list(table.index) == [5, 6] and "top-down" in table.columns
    assert set(table["top-down"]) <= {"yes", "no", "n/a"}


def test_freezing_rows_name_their_freezing_and_feed_the_claims(tmp_path):
    table = bmeasure.freezing_comparison(Zoo(tmp_path), "smoke", 0, steps=2, device="cpu", log=None)
    assert list(table["freezing"]) == ["paper", "learned_pos", "none"]
    n = bclaims.numbers({"history": [{"step": 0}, {"step": 1}], "baseline": {}, "d_vocab": 65,
                       "freezing": table})
    assert {"freeze.paper.icl_acc", "freeze.none.probe_wk2"} <= set(n)


def test_optimizer_comparison_counts_each_optimizers_seeds():
    from toymech.studies.birth.claims import source_like
    good = source_like()
    bad = {**good, "half.W_K1": 120.0}  # W_K1 before W_K2: top-down fails
    table = birth.optimizer_table({"adam": {0: bad, 1: good}, "sgd": {0: good, 1: good, 2: good}})
    assert table.loc["adam", "top-down"] == "1/2" and table.loc["sgd", "top-down"] == "3/3"
    assert table.loc["sgd", "seeds"] == 3 and table.loc["sgd", "half W_O² (median)"] == 100.0
    other = birth.other_optimizer("default")
    assert other != birth.SIZES["default"].optimizer
    sgd = birth.experiment("default", 0, optimizer="sgd")
    assert sgd.train.optimizer == "sgd" and sgd.train.momentum == 0.9
    with pytest.raises(ValueError, match="optimizer='rmsprop'"):
        birth.experiment("default", 0, optimizer="rmsprop")
    with pytest.raises(ValueError, match="optimizer='sgd'"):
        birth.experiment("default", 0, model="control", freezing="none", optimizer="sgd")
