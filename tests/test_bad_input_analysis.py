"""Bad-input catalogue, part 6: the analysis API (``toymech.analysis``: activation and path
patching, the learning coefficient). Each case: a ValueError whose message is ONE line naming
the parameter, the value and what is allowed, raised before the chains or patched runs give a
number: a model that is no HookedTransformer, token ids outside the vocabulary, an empty batch,
NaN weights, a metric that is no callable or that returns NaN. A quantity that comes out
non-finite is never returned silently; an SGLD chain that diverges mid-way warns and marks its
result (see ``catalogue``)."""

from __future__ import annotations

import warnings

import pytest
import torch

NAN = float("nan")


def _model(**changes):
    from toymech import experiments
    from toymech.models import build_model

    exp = experiments.get("induction-1l", "smoke")
    torch.manual_seed(0)
    model = build_model(exp.model)
    with torch.no_grad():
        for name, value in changes.items():
            getattr_path(model, name).copy_(value(getattr_path(model, name)))
    return model.eval()


def getattr_path(obj, dotted: str):
    for part in dotted.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


def _tokens(n=4, low=0, high=None, pos=12):
    model = _model()
    high = model.cfg.d_vocab if high is None else high
    return torch.randint(low, high, (n, pos), generator=torch.Generator().manual_seed(1))


def _metric(logits):
    return logits[:, -1, 0].mean()


def _nan_metric(logits):
    return logits.sum() * NAN


def _nan_row(w):
    w = w.clone()
    w[3] = NAN
    return w


def _patch(fn="patch_heads", model=None, clean=None, corrupted=None, metric=_metric, **kw):
    def call():
        from toymech.analysis import patching

        m = _model() if model is None else model() if callable(model) else model
        c = _tokens() if clean is None else clean
        k = torch.roll(c, 1, dims=1) if corrupted is None else corrupted
        args = {"path_patch": ((0, 0), "logits"), "patch_inputs": ((0, 0, "v"),)}.get(fn, ())
        return getattr(patching, fn)(m, c, k, metric, *args, **kw)
    return call


def _lstm():
    from toymech.models import build_model
    from toymech.models.config import BaselineConfig

    return build_model(BaselineConfig(kind="lstm", d_model=8, d_vocab=26, n_ctx=24))


def _pool(n=8):
    from toymech.tasks.base import Batch

    return Batch(_tokens(n), _scored(n))


def _scored(n):
    scored = torch.ones(n, 12, dtype=torch.bool)
    scored[:, 0] = False  # the first token has no prefix
    return scored


def _llc(model=None, pool=None, **settings):
    def call():
        from toymech.analysis import llc

        m = _model() if model is None else model() if callable(model) else model
        p = _pool() if pool is None else pool() if callable(pool) else pool
        s = llc.SGLDSettings(chains=1, draws=24, burnin=0, batch_size=4, **settings)
        return llc.task_llc(m, p, s)
    return call


def _empty_pool():
    from toymech.tasks.base import Batch

    return Batch(torch.zeros(0, 12, dtype=torch.long), torch.zeros(0, 12, dtype=torch.bool))


def _estimate(loss_fn=None, model=None):
    def call():
        from toymech.analysis import llc

        m = torch.nn.Linear(2, 1) if model is None else model
        data = (torch.randn(16, 2), torch.randn(16, 1))
        return llc.estimate_llc(m, loss_fn, data, llc.SGLDSettings(chains=1, draws=24, burnin=0))
    return call


NAN_WQ = {"blocks.0.attn.W_Q": lambda w: torch.full_like(w, NAN)}
NAN_WE_ROW = {"embed.W_E": _nan_row}

# call -> fragments of the one-line message (the first names the parameter)
CASES = {
    "patch_heads NaN W_Q (finite effects before)": (_patch(model=lambda: _model(**NAN_WQ)), ["model=", "blocks.0.attn.W_Q", "finite"]),
    "patch_layers NaN W_Q": (_patch("patch_layers", model=lambda: _model(**NAN_WQ)), ["model=", "W_Q"]),
    "path_patch NaN W_Q": (_patch("path_patch", model=lambda: _model(**NAN_WQ)), ["model=", "W_Q"]),
    "patch_heads NaN embedding row (NaN effects before)": (_patch(model=lambda: _model(**NAN_WE_ROW)), ["model=", "embed.W_E"]),
    "patch_heads metric returning NaN (NaN effects before)": (_patch(metric=_nan_metric), ["metric=", "nan", "finite"]),
    "patch_layers metric returning NaN": (_patch("patch_layers", metric=_nan_metric), ["metric=", "nan"]),
    "patch_heads an empty batch (zeros before)": (_patch(clean=torch.zeros(0, 12, dtype=torch.long), corrupted=torch.zeros(0, 12, dtype=torch.long)), ["clean=", "(0, 12)", "at least one"]),
    "patch_heads negative token ids (wrapped before)": (_patch(clean=_tokens(low=-3, high=0)), ["clean=", "-3", "token ids in 0.."]),
    "patch_heads token ids past d_vocab (IndexError before)": (_patch(clean=_tokens(low=500, high=501)), ["clean=", "500", "token ids in 0.."]),
    "patch_heads corrupted ids past d_vocab": (_patch(corrupted=_tokens(low=500, high=501)), ["corrupted=", "500"]),
    "patch_heads an LSTM model (AttributeError before)": (_patch(model=_lstm), ["model=", "HookedTransformer"]),
    "patch_heads a string for the model": (_patch(model="induction-1l"), ["model='induction-1l'", "HookedTransformer"]),
    "path_patch an LSTM model": (_patch("path_patch", model=_lstm), ["model=", "HookedTransformer"]),
    "composition_paths a string for the model": (_patch("composition_paths", model="induction-1l"), ["model='induction-1l'"]),
    "patch_heads metric=None (TypeError before)": (_patch(metric=None), ["metric=None", "callable"]),
    "patch_inputs metric=None": (_patch("patch_inputs", metric=None), ["metric=None"]),
    "patch_heads float tokens": (_patch(clean=torch.zeros(4, 12)), ["clean="]),
    "task_llc NaN weights (llc=nan before)": (_llc(model=lambda: _model(**NAN_WQ)), ["model=", "W_Q", "finite"]),
    "task_llc an empty pool (named n=0 before)": (_llc(pool=_empty_pool), ["pool=", "at least"]),
    "task_llc token ids past d_vocab": (_llc(pool=lambda: __import__("toymech.tasks.base", fromlist=["Batch"]).Batch(_tokens(low=500, high=501), _scored(4))), ["pool=", "500"]),
    "task_llc a string for the model (AttributeError before)": (_llc(model="induction-1l"), ["model='induction-1l'"]),
    "estimate_llc loss_fn None": (_estimate(None), ["loss_fn=None", "callable"]),
    "estimate_llc NaN weights": (_estimate(lambda m, d: ((m(d[0]) - d[1]) ** 2).mean(), model=torch.nn.Linear(2, 1).requires_grad_(True).apply(lambda m: torch.nn.init.constant_(m.weight, NAN))), ["model=", "weight"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=[f"analysis: {c}" for c in CASES])
def test_analysis(case):
    call, fragments = CASES[case]
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message.strip(), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_catalogue_part_6_size():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", ["an SGLD chain diverging mid-way (a silent nan before)"],
                         ids=lambda c: f"analysis: {c}")
def test_a_diverging_chain_warns_and_is_marked(case):
    from toymech.analysis import llc

    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1)
    data = (torch.randn(64, 2), torch.randn(64, 1))
    settings = llc.SGLDSettings(lr=0.9, gamma=1.0, chains=2, draws=48, burnin=0, batch_size=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = llc.estimate_llc(model, lambda m, d: ((m(d[0]) - d[1]) ** 2).mean() * 1e3, data, settings)
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert said and "diverged" in said[0] and "lr=0.9" in said[0], said
    assert not result.finite and not result.healthy and result.extra.get("diverged"), result.extra
