"""Model configurations: frozen, JSON-friendly descriptions of every model toymech builds.

* ``ModelConfig``: a TransformerLens ``HookedTransformer`` (optionally with a structural
  ``variant`` from ``toymech.models.variants``: the registry lives here, the variants register
  themselves when ``toymech.models`` is imported, so every saved model loads anywhere).
* ``BaselineConfig``: the plain-PyTorch baselines of study 3 (LSTM, linearised transformer).

``config_from_dict`` reads either back from a checkpoint's JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    check,
    check_bool,
    check_float,
    check_int,
    check_seed,
    check_str,
    dataclass_from_dict,
    set_checked,
)

# "none": no positional signal at all (no table, no learned positions; only the causal mask
# tells a query where it is).
POSITIONS = ("sinusoidal_qk", "post_sinusoidal_qk", "shortformer", "standard", "rotary", "none")
# Smeared keys: one alpha per head, or (the induction post's code) one per head and key position.
SMEARS = ("per_head", "per_position")
# Weight init: TransformerLens' own, or PyTorch's nn.Linear default (U(+-1/sqrt(fan_in))).
INITS = ("transformer_lens", "torch_linear")
NORMALIZATIONS = (None, "LN", "LNPre")
ACT_FNS = ("gelu", "gelu_new", "relu", "solu_ln")


@dataclass(frozen=True)
class ModelConfig:
    """A toy transformer, as ``build_model`` builds it; every field is checked here (a
    ValueError names the field, the value and what is allowed).

    ``n_layers``: transformer blocks. ``n_heads``: attention heads per block. ``d_model``: the
    residual stream's width. ``d_vocab``: the vocabulary (a task's ``d_vocab``). ``n_ctx``: the
    longest sequence (a task's ``seq_len``). ``d_head``: each head's width (None:
    ``d_model // n_heads``). ``attn_only``: no MLPs. ``d_mlp``: the MLPs' width (None: 4 x
    ``d_model`` unless ``attn_only``). ``act_fn``: the MLPs' activation (gelu, gelu_new, relu,
    solu_ln). ``normalization``: None, ``"LN"`` or ``"LNPre"`` (TransformerLens' LayerNorm
    before each block and the unembedding). ``positions``: how positions enter: sinusoidal_qk
    and post_sinusoidal_qk (a sin/cos table added to queries and keys only), shortformer,
    standard (learned, in the residual stream), rotary or none. ``smear_keys``: each key mixed
    with the previous position's (smeared keys), weighted per head or per head and position
    (``smear``, from ``smear_init``). ``use_bias``: biases in the linear maps. ``init``:
    TransformerLens' initialisation (``init_range``: its scale, None = 0.8/sqrt(d_model)) or
    PyTorch's ``nn.Linear`` default (``"torch_linear"``). ``variant``: a registered structural
    variant (``register_variant``) with its ``variant_options``. ``seed``: the initialisation's
    seed.

    ``positions="post_sinusoidal_qk"``, ``smear="per_position"`` and ``init="torch_linear"`` give
    the induction post's exact model (see ``toymech.models.build``); the defaults keep older
    configs (saved without these keys) meaning what they meant. Example:
    ``build_model(ModelConfig(n_layers=2, d_model=64, d_vocab=27, n_ctx=24, seed=0))``."""

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
    smear: str = "per_head"
    use_bias: bool = False
    init_range: float | None = None
    init: str = "transformer_lens"
    variant: str = ""
    variant_options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        # Upper bounds are sane limits for toy models (nothing that would hang or exhaust memory).
        for name, most in (("n_layers", 64), ("n_heads", 256), ("d_model", 16_384),
                           ("d_vocab", 1_000_000), ("n_ctx", 65_536)):
            set_checked(self, **{name: check_int(name, getattr(self, name), 1, most)})
        for name in ("attn_only", "smear_keys", "use_bias"):
            set_checked(self, **{name: check_bool(name, getattr(self, name))})
        set_checked(self, seed=check_seed(self.seed))
        check(isinstance(self.variant_options, dict)
              and all(isinstance(k, str) for k in self.variant_options), "variant_options",
              self.variant_options, "a dict of the variant's options (string keys)")
        check(not self.variant_options or self.variant != "", "variant_options",
              self.variant_options, "{} when no variant is given")
        _check_variant_options(self.variant, self.variant_options)
        check_int("d_vocab", self.d_vocab, 2, 1_000_000)
        if self.d_head is None:
            check(self.d_model % self.n_heads == 0, "n_heads", self.n_heads,
                  f"a divisor of d_model={self.d_model} (or give d_head)")
            object.__setattr__(self, "d_head", self.d_model // self.n_heads)
        set_checked(self, d_head=check_int("d_head", self.d_head, 1, 16_384))
        if self.attn_only:
            check(self.d_mlp is None, "d_mlp", self.d_mlp, "None when attn_only=True")
        elif self.d_mlp is None:
            object.__setattr__(self, "d_mlp", 4 * self.d_model)
        else:
            set_checked(self, d_mlp=check_int("d_mlp", self.d_mlp, 1, 65_536))
        check_str("positions", self.positions, POSITIONS)
        check_str("smear", self.smear, SMEARS)
        check_str("init", self.init, INITS)
        check(self.init == "transformer_lens" or self.init_range is None, "init_range",
              self.init_range, f"None with init={self.init!r} (its bounds are 1/sqrt(fan_in))")
        check(self.normalization is None or isinstance(self.normalization, str), "normalization",
              self.normalization, f"one of {NORMALIZATIONS}")
        check(self.normalization in NORMALIZATIONS, "normalization", self.normalization,
              f"one of {NORMALIZATIONS}")
        check_str("act_fn", self.act_fn, ACT_FNS)
        set_checked(self, smear_init=check_float("smear_init", self.smear_init, 0.0, 1.0,
                                                 lo_open=True, hi_open=True))
        check(self.positions != "sinusoidal_qk" or self.d_head % 2 == 0, "d_head", self.d_head,
              "an even number with positions='sinusoidal_qk'")
        if self.init_range is not None:
            set_checked(self, init_range=check_float("init_range", self.init_range, 0.0, 1e6,
                                                     lo_open=True))
        check(isinstance(self.variant, str) and (self.variant == "" or self.variant in VARIANTS),
              "variant", self.variant,
              f"'' or a registered variant: {', '.join(sorted(VARIANTS)) or '(none registered)'}")

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (every field; ``from_dict`` reads it back)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelConfig:
        """The config ``to_dict`` wrote (``d``); an unknown key is refused by name."""
        return dataclass_from_dict(cls, d, "model config")

    def replace(self, **changes: Any) -> ModelConfig:
        """A copy with ``changes`` (field name -> value), checked again; ``d_head`` and
        ``d_mlp`` follow a new ``d_model``, ``n_heads`` or ``attn_only`` unless given."""
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
VARIANTS: dict[str, Callable[[Any, ModelConfig], None]] = {}


# name -> the variant's options with their defaults (given to ``register_variant``): configs
# then refuse unknown option names and values of another type than the default's.
VARIANT_OPTIONS: dict[str, dict[str, Any]] = {}


def register_variant(name: str, options: dict[str, Any] | None = None) -> Callable:
    """Decorator: register ``fn(model, cfg)``, which reshapes a freshly built model in place,
    as the structural variant ``name`` (``ModelConfig.variant``), so a saved model of it loads
    by path in a fresh interpreter. ``options``: the variant's option names and defaults (the
    schema ``variant_options`` are checked against; None: any JSON scalars)."""
    def deco(fn: Callable[[Any, ModelConfig], None]) -> Callable:
        if name in VARIANTS:
            raise ValueError(f"model variant {name!r} is registered twice")
        VARIANTS[name] = fn
        if options is not None:
            VARIANT_OPTIONS[name] = dict(options)
        return fn
    return deco


def _check_variant_options(variant: str, options: dict[str, Any]) -> None:
    """Option values are JSON scalars (finite numbers); with a registered schema, known names
    only, each of its default's type (a None default: None or a finite number >= 0)."""
    schema = VARIANT_OPTIONS.get(variant)
    for key, value in options.items():
        name = f"variant_options[{key!r}]"
        if schema is not None:
            check(key in schema, "variant_options key", key, f"one of {', '.join(schema)}")
            default = schema[key]
            if isinstance(default, bool):
                check_bool(name, value)
            elif isinstance(default, (int, float)):
                check_float(name, value)
            elif default is None and value is not None:
                check_float(name, value, 0.0)
            elif isinstance(default, str):
                check_str(name, value, empty=True)
        check(value is None or isinstance(value, (bool, int, str))
              or (isinstance(value, float) and value == value and abs(value) != float("inf")),
              name, value, "a JSON scalar (finite number, true/false, string or null)")


BASELINE_KINDS = ("lstm", "linearised")


@dataclass(frozen=True)
class BaselineConfig:
    """A plain-PyTorch baseline (``toymech.models.baselines``): ``kind`` lstm or linearised,
    ``n_layers`` layers of width ``d_model`` over ``d_vocab`` tokens and ``n_ctx`` positions,
    initialised from ``seed``."""

    kind: str
    d_model: int
    d_vocab: int
    n_ctx: int
    n_layers: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        check_str("kind", self.kind, BASELINE_KINDS)
        for name, most in (("d_model", 16_384), ("d_vocab", 1_000_000), ("n_ctx", 65_536),
                           ("n_layers", 64)):
            set_checked(self, **{name: check_int(name, getattr(self, name), 1, most)})
        set_checked(self, seed=check_seed(self.seed))

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (``config_from_dict`` reads it back)."""
        return dataclasses.asdict(self)


def config_from_dict(d: dict[str, Any]) -> ModelConfig | BaselineConfig:
    """The model config saved as ``d`` (a baseline when it has a ``kind``)."""
    check(isinstance(d, dict), "model config", type(d).__name__, "a JSON object (dict)")
    if "kind" in d:
        return dataclass_from_dict(BaselineConfig, d, "baseline config")
    return ModelConfig.from_dict(d)


# --------------------------------------------------------------------------------------------
# Size estimates from the config alone (nothing is allocated): the preflight compares them with
# a memory limit before a model is built (``toymech.training.preflight``).
# --------------------------------------------------------------------------------------------

FLOAT_BYTES = 4  # every toymech model trains in float32


def parameter_estimate(cfg: ModelConfig | BaselineConfig) -> int:
    """The number of parameters ``build_model(cfg)`` creates, from the config (exact for the
    transformers up to the variants' few extras; the baselines' count of their layers):

    embed V·d (+ n_ctx·d for learned positions) + L·(4·H·d_head·d + 3·H·d_head + d [attention]
    + 2·d·d_mlp + d_mlp + d [MLP] + 4·d [two LayerNorms] + smear alphas) + d·V + V [unembed]."""
    d, v, L = cfg.d_model, cfg.d_vocab, cfg.n_layers
    if isinstance(cfg, BaselineConfig):
        if cfg.kind == "lstm":  # 4 gates, input and hidden weights, two biases each
            return v * d + L * 4 * (2 * d * d + 2 * d) + d * v + v
        return v * d + cfg.n_ctx * d + L * (2 * (d * d + d) + 8 * d * d + 5 * d + 4 * d) + d * v + v
    h, dh = cfg.n_heads, cfg.d_head
    pos = cfg.n_ctx * d if cfg.positions in ("standard", "shortformer") else 0
    attn = 4 * h * dh * d + 3 * h * dh + d
    if cfg.smear_keys:
        attn += h * (cfg.n_ctx - 1 if cfg.smear == "per_position" else 1)
    mlp = 0 if cfg.attn_only else 2 * d * cfg.d_mlp + cfg.d_mlp + d
    norms = 4 * d if cfg.normalization else 0
    return v * d + pos + L * (attn + mlp + norms) + (2 * d if cfg.normalization else 0) + d * v + v


def buffer_bytes(cfg: ModelConfig | BaselineConfig) -> int:
    """Bytes of the non-parameter tensors a model holds: each layer's causal mask (n_ctx² bools)
    and its positional tables (2·n_ctx·d_head floats)."""
    if isinstance(cfg, BaselineConfig):
        return 0
    return cfg.n_layers * (cfg.n_ctx ** 2 + 2 * cfg.n_ctx * cfg.d_head * FLOAT_BYTES)


def activation_bytes(cfg: ModelConfig | BaselineConfig, batch: int, seq: int,
                     grad: bool = True) -> int:
    """Bytes of the activations of one forward pass over ``batch`` sequences of ``seq`` tokens
    (kept for the backward pass when ``grad``; under no_grad about two layers' worth live at
    once). Per token and layer: residual and norms 4·d, q/k/v/z 4·H·d_head, attention scores
    and pattern 2·H·seq, MLP 2·d_mlp; plus the logits, their log-softmax and gradient 3·V.
    An estimate (within about a factor of 2 of what PyTorch holds), to refuse what cannot fit."""
    d, v = cfg.d_model, cfg.d_vocab
    if isinstance(cfg, BaselineConfig):
        per_layer = 12 * d
    else:
        h, dh = cfg.n_heads, cfg.d_head
        per_layer = 4 * d + 4 * h * dh + 2 * h * seq + (0 if cfg.attn_only else 2 * cfg.d_mlp)
    layers = cfg.n_layers if grad else min(2, cfg.n_layers)
    return FLOAT_BYTES * batch * seq * (layers * per_layer + d + 3 * v)
