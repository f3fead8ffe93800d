"""toymech.display: the offline plotly renderer and the circuitsvis attention view."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch

from toymech import display
from toymech.display import attention_view, reset_bundles, setup_notebook
from toymech.report import external_loads

PLOTLY_MIME = "application/vnd.plotly.v1+json"


@pytest.fixture(autouse=True)
def fresh_state():
    """Each test starts as a fresh kernel would, and leaves plotly's renderer as it found it."""
    previous = pio.renderers.default
    reset_bundles()
    with warnings.catch_warnings():
        yield
    pio.renderers.default = previous
    reset_bundles()


def _props(view_html: str) -> dict:
    match = re.search(r"props = (\{.*?\}), tries", view_html, re.S)
    assert match, view_html[-500:]
    return json.loads(match.group(1))


def test_setup_notebook_is_idempotent_and_activates_renderer():
    setup_notebook()
    renderer = pio.renderers[display.RENDERER_NAME]
    setup_notebook()
    assert pio.renderers.default == display.RENDERER_NAME
    assert pio.renderers[display.RENDERER_NAME] is renderer


def test_plotly_js_sent_once_and_both_mimetypes_present():
    setup_notebook()
    first = go.Figure(go.Scatter(y=[1, 3, 2]))._repr_mimebundle_()
    second = go.Figure(go.Bar(y=[1, 2]))._repr_mimebundle_()
    for bundle in (first, second):
        assert set(bundle) >= {PLOTLY_MIME, "text/html"}
        assert bundle[PLOTLY_MIME]["data"]
    # plotly.js defines window.Plotly; the bundle is ~4.8 MB, a figure alone a few KB.
    assert len(first["text/html"]) > 1_000_000
    assert len(second["text/html"]) < 50_000
    for bundle in (first, second):
        assert external_loads(bundle["text/html"]) == []  # e.g. no MathJax / plotly CDN <script src>
    reset_bundles()
    third = go.Figure(go.Scatter(y=[0]))._repr_mimebundle_()
    assert len(third["text/html"]) > 1_000_000


def test_setup_notebook_silences_transformer_lens_deprecations():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # as in a notebook, where DeprecationWarnings show
        setup_notebook()  # its filters go in front of "always"
        warnings.warn("HookedTransformer is deprecated and will be removed in 4.0.", DeprecationWarning,
                      stacklevel=1)
        warnings.warn("something else is deprecated", DeprecationWarning, stacklevel=1)
    messages = [str(w.message) for w in caught]
    assert messages == ["something else is deprecated"]


def test_attention_view_bundle_once_values_rounded():
    attention = torch.softmax(torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0)), dim=-1)
    view = attention_view(["a", "b", "c", "d"], attention, head_names=["L0H0", "L0H1"], decimals=2)
    first = view._repr_mimebundle_()
    second = attention_view(["a", "b", "c", "d"], attention.numpy())._repr_html_()
    assert first["text/plain"] == "AttentionView(2 heads x 4 tokens)"
    bundle_marker = 'data-toymech-bundle="circuitsvis"'
    assert first["text/html"].count(bundle_marker) == 1 and bundle_marker not in second
    assert "var CircuitsVis" in first["text/html"] and "var CircuitsVis" not in second
    # Never the CDN route, never a module import.
    for page in (first["text/html"], second):
        assert "unpkg.com" not in page and 'type="module"' not in page
        assert "sourceMappingURL" not in page
    props = _props(first["text/html"])
    assert props["tokens"] == ["a", "b", "c", "d"]
    assert props["attentionHeadNames"] == ["L0H0", "L0H1"]
    values = np.array(props["attention"])
    assert values.shape == (2, 4, 4)
    np.testing.assert_allclose(values, attention.numpy(), atol=0.005 + 1e-9)
    props_text = re.search(r'"attention":(\[.*?\]\]\])', first["text/html"]).group(1)
    assert re.findall(r"\d\.\d{3,}", props_text) == []
    assert _props(second)["attentionHeadNames"] == ["H0", "H1"]


def test_attention_view_ids_unique_and_tokens_escaped():
    view = attention_view(["</script>", "<b>&"], np.full((1, 2, 2), 0.5))
    a, b = view.to_html(), view.to_html()
    ids = re.findall(r'<div id="(toymech-cv-[0-9a-f]+)"', a + b)
    assert len(ids) == 2 and ids[0] != ids[1]
    script = a[a.index("<script>") :]
    assert "</script>" not in script[: -len("</script>")]
    assert _props(a)["tokens"] == ["</script>", "<b>&"]


@pytest.mark.parametrize(
    "tokens, attention, kwargs, message",
    [
        (["a", "b"], np.zeros((2, 2)), {}, r"attention has shape \[2, 2\], expected \[n_heads, 2, 2\].*attention\[None\]"),
        (["a", "b"], np.zeros((1, 3, 3)), {}, r"attention has shape \[1, 3, 3\], expected \[n_heads, 2, 2\]"),
        (["a", "b"], np.zeros((1, 2, 3)), {}, r"shape \[1, 2, 3\]"),
        (["a", "b"], np.zeros((0, 2, 2)), {}, r"shape \[0, 2, 2\]"),
        ("ab", np.zeros((1, 2, 2)), {}, r"tokens must be a list of str"),
        ([1, 2], np.zeros((1, 2, 2)), {}, r"tokens must be a list of str"),
        (["a", "b"], np.zeros((2, 2, 2)), {"head_names": ["x"]}, r"head_names has 1 names, expected 2"),
        (["a", "b"], np.zeros((1, 2, 2)), {"decimals": -1}, r"decimals=-1 is not allowed; expected an int from 0 to 8"),
        (["a", "b"], np.zeros((1, 2, 2)), {"decimals": 2.5}, r"decimals=2.5"),
        (["a", "b"], np.full((1, 2, 2), np.nan), {}, r"NaN or infinite"),
    ],
)
def test_attention_view_rejects_bad_input(tokens, attention, kwargs, message):
    with pytest.raises(ValueError, match=message):
        attention_view(tokens, attention, **kwargs)


# --------------------------------------------------------------------------------------------
# captions, folded views, prose from the run, facts
# --------------------------------------------------------------------------------------------


def test_attention_view_caption_and_folding():
    pattern = np.full((2, 3, 3), 1 / 3)
    shown = attention_view(list("abc"), pattern, caption="L0H1 <looks> back").to_html()
    assert "<details" not in shown
    assert '<p class="toymech-attention-caption">L0H1 &lt;looks&gt; back</p>' in shown
    assert shown.index("toymech-attention-caption") < shown.index('class="toymech-circuitsvis"')
    folded = attention_view(list("abc"), pattern, caption="why", open=False).to_html()
    opening = re.search(r"<details[^>]*>", folded).group(0)
    assert opening == '<details class="toymech-attention">'  # no `open`: folded
    assert "<summary>Attention patterns: 2 heads on 3 tokens (click to unfold or fold)</summary>" in folded
    # A view inside a closed <details> is drawn when first unfolded (a hidden one would be 0 px wide).
    assert 'addEventListener("toggle"' in folded
    with pytest.raises(ValueError, match="open='no' is not allowed"):
        attention_view(list("abc"), pattern, open="no")
    with pytest.raises(ValueError, match="caption=3 is not allowed"):
        attention_view(list("abc"), pattern, caption=3)


def test_attention_caption_names_the_heads_from_their_scores():
    from toymech.display import attention_caption

    scores = {"previous-token": torch.tensor([[0.91, 0.05], [0.10, 0.45]]),
              "induction": np.array([[0.0, 0.1], [0.72, 0.2]])}
    caption = attention_caption(scores, baselines={"induction": 0.08})
    assert caption == (
        "Worth looking at: L0H0 and L1H1 attend to the previous token: a stripe just below the "
        "diagonal (previous-token score 0.91, 0.45). L1H0 attends to the token after an earlier "
        "copy of the current one: a stripe the repeat's period minus one below the diagonal "
        "(induction score 0.72; uniform attention would give 0.08).")
    assert attention_caption(scores, threshold=0.5, top=1).count("L0H0") == 1
    # the head a view opens on is the one the caption names first (or quotes, when none is strong)
    from toymech.display import attention_view, focus_head
    assert focus_head(scores) == "L0H0" and focus_head({"induction": scores["induction"]}) == "L1H0"
    assert focus_head({"retrieval": np.array([[0.1, 0.3]])}) == "L0H1"
    view = attention_view(list("ab"), np.full((2, 2, 2), 0.5), head_names=["x", "y"], focus="y")
    assert '"y"' in view._repr_html_().split("focus = ")[1][:10]
    with pytest.raises(ValueError, match=r"focus='z' is not allowed: None or one of the head"):
        attention_view(list("ab"), np.full((2, 2, 2), 0.5), head_names=["x", "y"], focus="z")
    flat = attention_caption({"retrieval": np.full((1, 4), 0.1)}, baselines={"retrieval": 0.1})
    assert flat == ("No head reaches a retrieval score of 0.40: the attention here is diffuse. The "
                    "highest is L0H0's retrieval score, 0.10 (uniform attention: 0.10).")
    named = attention_caption({"odd": np.array([[0.9]])}, head_names=["layer 1"])
    assert named == "Worth looking at: layer 1 scores high on the odd pattern (odd score 0.90)."
    for bad, message in [({}, "scores="), ({"a": np.zeros((2, 2)), "b": np.zeros((1, 2))}, r"scores\['b'\]"),
                         ({"a": np.full((1, 2), np.nan)}, r"scores\['a'\]")]:
        with pytest.raises(ValueError, match=message):
            attention_caption(bad)
    with pytest.raises(ValueError, match="threshold=0 is not allowed"):
        attention_caption({"a": np.zeros((1, 1))}, threshold=0)


def test_note_fills_numbers_from_the_run():
    from toymech.display import duration_text, note

    text = note("{n} seeds ({seeds}) on {device}, {seconds:duration}, {steps:,} steps, loss {loss:.2f}",
                n=3, seeds=[0, 1, 2], device=torch.device("cpu"), seconds=1208, steps=10000, loss=0.7141)
    assert str(text) == "3 seeds (0, 1, 2) on cpu, 20 min 8 s, 10,000 steps, loss 0.71"
    assert text._repr_mimebundle_()["text/markdown"] == str(text)
    assert [duration_text(s) for s in (0.25, 42, 60, 185, 3725)] == ["0.2 s", "42 s", "1 min", "3 min 5 s", "1 h 2 min"]
    with pytest.raises(ValueError, match=r"names \{steps\}, which has no value \(values given: n\)"):
        note("{n} and {steps}", n=1)
    with pytest.raises(ValueError, match="name every field"):
        note("{} seeds", n=1)
    with pytest.raises(ValueError, match="template="):
        note("  ")
    with pytest.raises(ValueError, match="seconds=-1"):
        duration_text(-1)


def test_facts_output_is_machine_readable(monkeypatch):
    from toymech.display import FACTS_MIME, facts

    monkeypatch.setattr("toymech.display.prose.zoo_stats", lambda: None)  # nothing recorded
    bundle = facts(device=torch.device("cpu"), seeds=(0, 1), core_s=False)._repr_mimebundle_()
    assert bundle[FACTS_MIME] == {"device": "cpu", "seeds": [0, 1]}
    assert bundle["text/plain"] == "run facts: device=cpu, seeds=[0, 1]"
    monkeypatch.setattr("toymech.display.prose.zoo_stats", lambda: {"trained": 2, "loaded": 5})
    assert facts(seeds=[0], core_s=False)._repr_mimebundle_()[FACTS_MIME] == {
        "seeds": [0], "zoo": {"trained": 2, "loaded": 5}}
    assert "zoo" not in facts(zoo=False)._repr_mimebundle_()[FACTS_MIME]
    sum(i * i for i in range(200_000))  # some CPU time of this process
    used = facts(zoo=False)._repr_mimebundle_()[FACTS_MIME]["core_s"]
    assert used > 0 and facts(zoo=False)._repr_mimebundle_()[FACTS_MIME]["core_s"] >= used


def test_renderer_raises_low_figures_to_the_minimum_height():
    setup_notebook()
    bundle = go.Figure(go.Scatter(y=[1, 2]), layout_height=88)._repr_mimebundle_()
    assert f'"height":{display.MIN_FIGURE_HEIGHT}' in bundle["text/html"].replace(" ", "")
    tall = go.Figure(go.Scatter(y=[1, 2]), layout_height=500)._repr_mimebundle_()
    assert '"height":500' in tall["text/html"].replace(" ", "")


def test_plotly_js_travels_compressed_and_figures_wait_for_it():
    import base64
    import gzip

    from plotly.offline import get_plotlyjs

    setup_notebook()
    first = go.Figure(go.Scatter(y=[1, 2]))._repr_mimebundle_()["text/html"]
    second = go.Figure(go.Bar(y=[1]))._repr_mimebundle_()["text/html"]
    data = re.search(r'"data:application/gzip;base64,([A-Za-z0-9+/=]+)"', first).group(1)
    assert gzip.decompress(base64.b64decode(data)).decode("utf-8") == get_plotlyjs()
    assert len(first) < 0.45 * len(get_plotlyjs())  # 1.96 MB instead of 4.8 MB
    assert first.count('data-toymech-bundle="plotly"') == 1 and "data-toymech-bundle" not in second
    for page in (first, second):  # each figure draws once plotly.js is decoded
        script = page[page.rindex("<script"):]
        assert script.count("Plotly.newPlot") == 1
        assert script.index("window.toymechPlotly || Promise.resolve()") < script.index("Plotly.newPlot")


def test_a_notebook_follows_the_free_cores_before_every_cell(monkeypatch):
    from IPython.core.events import EventManager, available_events

    import toymech.display as display

    calls = []
    monkeypatch.setattr(display, "rebalance", lambda log=print: calls.append(log))

    class Shell:
        pass

    shell = Shell()
    shell.events = EventManager(shell, available_events)
    assert display._rebalance_before_cells(shell) is True
    assert display._rebalance_before_cells(shell) is False  # once, however often set up
    shell.events.trigger("pre_run_cell", None)
    shell.events.trigger("pre_run_cell", None)
    assert calls == [None, None]  # quietly, before each cell
