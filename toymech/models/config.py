"""Model configurations: frozen, JSON-friendly descriptions of every model toymech builds.

* ``ModelConfig``: a TransformerLens ``HookedTransformer`` (optionally with a structural
  ``variant`` from ``toymech.models.variants``: the registry lives here, the variants register
  themselves when ``toymech.models`` is imported, so every saved model loads anywhere).
* ``BaselineConfig``: the plain-PyTorch baselines of study 3 (LSTM, linearised transformer).

``config_from_dict`` reads either back from a checkpoint's JSON.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from ..core import check, dataclass_from_dict

POSITIONS = ("sinusoidal_qk", "shortformer", "standard", "rotary")
NORMALIZATIONS = (None, "LN", "LNPre")
ACT_FNS = ("gelu", "gelu_new", "relu", "solu_ln")


@dataclass(frozen=True)
class ModelConfig:
    """A toy transformer. ``d_head`` defaults to ``d_model // n_heads``; ``d_mlp`` to 4*d_model
    unless ``attn_only``. ``init_range`` None = TransformerLens' default (0.8/sqrt(d_model))."""

    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 32
    d_vocab: int = 26
    n_ctx: int = 24
    d_head: int | None = None
    attn_only: bool = True
    d_mlp: int | None = None
    act_fn: str = "gelu"
    normalization: str | None = None
    positions: str = "sinusoidal_qk"
    smear_keys: bool = False
    smear_init: float = 0.73
    use_bias: bool = False
    init_range: float | None = None
    variant: str = ""
    variant_options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_layers", "n_heads", "d_model", "d_vocab", "n_ctx"):
            value = getattr(self, name)
            check(_is_int(value) and value >= 1, name, value, "an integer >= 1")
        for name in ("attn_only", "smear_keys", "use_bias"):
            check(isinstance(getattr(self, name), bool), name, getattr(self, name), "True or False")
        check(_is_int(self.seed) and self.seed >= 0, "seed", self.seed, "an integer >= 0")
        check(isinstance(self.variant_options, dict), "variant_options", self.variant_options,
              "a dict of the variant's options")
        check(self.d_vocab >= 2, "d_vocab", self.d_vocab, "an integer >= 2")
        if self.d_head is None:
            check(self.d_model % self.n_heads == 0, "n_heads", self.n_heads,
                  f"a divisor of d_model={self.d_model} (or give d_head)")
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        check(isinstance(self.d_head, int) and self.d_head >= 1, "d_head", self.d_head,
              "an integer >= 1")
        if self.attn_only:
            check(self.d_mlp is None, "d_mlp", self.d_mlp, "None when attn_only=True")
        elif self.d_mlp is None:
            object.__setattr__(self, "d_mlp", 4 * self.d_model)
        check(self.positions in POSITIONS, "positions", self.positions, f"one of {POSITIONS}")
        check(self.normalization in NORMALIZATIONS, "normalization", self.normalization,
              f"one of {NORMALIZATIONS}")
        check(self.act_fn in ACT_FNS, "act_fn", self.act_fn, f"one of {ACT_FNS}")
        check(isinstance(self.smear_init, (int, float)) and not isinstance(self.smear_init, bool)
              and 0.0 < self.smear_init < 1.0, "smear_init", self.smear_init,
              "a number strictly between 0 and 1 (the initial sigmoid(alpha))")
        check(self.positions != "sinusoidal_qk" or self.d_head % 2 == 0, "d_head", self.d_head,
              "an even number with positions='sinusoidal_qk'")
        check(self.init_range is None or (isinstance(self.init_range, (int, float))
              and not isinstance(self.init_range, bool) and 0 < self.init_range < 1e6), "init_range", self.init_range,
              "None or a finite number > 0")
        check(self.variant == "" or self.variant in VARIANTS, "variant", self.variant,
              f"'' or a registered variant: {', '.join(sorted(VARIANTS)) or '(none registered)'}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ModelConfig":
        return dataclass_from_dict(cls, d, "model config")

    def replace(self, **changes: Any) -> "ModelConfig":
        # Derived fields are recomputed unless given explicitly.
        d = self.to_dict()
        if "d_model" in changes or "n_heads" in changes:
            d["d_head"] = None
        if "d_model" in changes or "attn_only" in changes:
            d["d_mlp"] = None
        d.update(changes)
        return ModelConfig(**d)


# Structural variants beyond the fields above (e.g. fixed W_Q = I): name -> fn(model, cfg) that
# edits the freshly built model in place; ``build_model`` applies it, so a model rebuilt from its
# saved config matches. Filled by ``toymech.models.variants`` (always imported with the package).
VARIANTS: dict[str, Callable[[Any, "ModelConfig"], None]] = {}


def register_variant(name: str) -> Callable:
    def deco(fn: Callable[[Any, "ModelConfig"], None]) -> Callable:
        if name in VARIANTS:
            raise ValueError(f"model variant {name!r} is registered twice")
        VARIANTS[name] = fn
        return fn
    return deco


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


BASELINE_KINDS = ("lstm", "linearised")


@dataclass(frozen=True)
class BaselineConfig:
    """A plain-PyTorch baseline (``toymech.models.baselines``): ``kind`` lstm or linearised."""

    kind: str
    d_model: int
    d_vocab: int
    n_ctx: int
    n_layers: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        check(self.kind in BASELINE_KINDS, "kind", self.kind, f"one of {', '.join(BASELINE_KINDS)}")
        for name in ("d_model", "d_vocab", "n_ctx", "n_layers"):
            v = getattr(self, name)
            check(_is_int(v) and v >= 1, name, v, "an integer >= 1")
        check(_is_int(self.seed) and self.seed >= 0, "seed", self.seed, "an integer >= 0")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def config_from_dict(d: dict[str, Any]) -> "ModelConfig | BaselineConfig":
    """The model config saved as ``d`` (a baseline when it has a ``kind``)."""
    check(isinstance(d, dict), "model config", type(d).__name__, "a JSON object (dict)")
    if "kind" in d:
        return dataclass_from_dict(BaselineConfig, d, "baseline config")
    return ModelConfig.from_dict(d)
