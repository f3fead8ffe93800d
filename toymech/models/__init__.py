"""Model layer: configs -> models. Every variant is registered on import of this package.

``ModelConfig`` -> ``HookedTransformer`` (``build_model``); ``BaselineConfig`` -> a
plain-PyTorch baseline; ``config_from_dict`` reads either back from JSON.
"""

from . import variants
from .build import (
                    ToyAttention,
                    build_model,
                    move,
                    parameter_counts,
                    post_sinusoid_table,
                    sinusoid_table,
                    to_hooked_config,
                    torch_linear_init,
)
from .config import (
                    BASELINE_KINDS,
                    VARIANTS,
                    BaselineConfig,
                    ModelConfig,
                    config_from_dict,
                    register_variant,
)
from .fast import fast_forward

__all__ = ["BASELINE_KINDS", "VARIANTS", "BaselineConfig", "ModelConfig", "ToyAttention",
           "build_model", "config_from_dict", "fast_forward", "move", "parameter_counts",
           "register_variant", "post_sinusoid_table", "sinusoid_table", "to_hooked_config",
           "torch_linear_init", "variants"]
