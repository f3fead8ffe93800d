"""Head labels: the one place the ``L{layer}H{head}`` form is written."""

from __future__ import annotations


def head_label(layer: int, head: int) -> str:
    """``"L0H1"``: layer and head, both counted from 0 (as in TransformerLens)."""
    return f"L{int(layer)}H{int(head)}"


def head_labels(n_layers: int, n_heads: int, layers=None) -> list[str]:
    """Every head's label, layer by layer (``layers``: only these layers, in that order).

    ``L{layer}H{head}`` for a model of ``n_layers`` layers of ``n_heads`` heads."""
    return [head_label(layer, head) for layer in (range(n_layers) if layers is None else layers)
            for head in range(n_heads)]
