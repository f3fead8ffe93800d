"""Pure analysis functions: model / tensors in, tensors or tables out."""

from .circuits import (COMPOSITION_MODES, composition_baseline, composition_scores, copy_score,
                       direct_path, direct_path_copy_score, eigenvalues, full_ov_circuits,
                       ov_copy_scores)
from .dynamics import (formation_order, order_agreement, transition_step, transitions,
                       transitions_over_seeds)
from .heads import head_label, head_labels
from .evaluation import (COMPOSITION_PATHS, ablation_losses, composition_path_losses,
                         head_ablation_hooks, per_position_loss, set_losses)
from .patterns import (DETECTORS, attention_patterns, detection_patterns, head_pattern_scores,
                       pattern_scores)

__all__ = [
    "COMPOSITION_MODES", "COMPOSITION_PATHS", "DETECTORS", "ablation_losses",
    "attention_patterns", "composition_baseline", "composition_path_losses",
    "composition_scores", "copy_score", "detection_patterns", "direct_path",
    "direct_path_copy_score", "eigenvalues", "formation_order", "full_ov_circuits",
    "head_ablation_hooks", "head_label", "head_labels", "head_pattern_scores", 
    "order_agreement", "ov_copy_scores", "pattern_scores",
    "per_position_loss", "set_losses", "transition_step", "transitions", "transitions_over_seeds",
]
from . import probes  # noqa: E402  (Birth study: memory-recall probes, linear probes, callback)
from .subspace import BASES, concentration, explained_variance, hidden_states  # noqa: E402,F401
from . import patching  # noqa: E402  (causal tests: activation and path patching)
from .patching import (Patched, composition_paths, downstream, logit_diff, patch_heads,  # noqa: E402,F401
                       patch_inputs,
                       patch_layers, path_patch, scored_loss, spread, target_logprob)
from . import llc  # noqa: E402  (the local learning coefficient, SGLD)
from .llc import (LLCCurve, SGLDSettings, estimate_llc, llc_through_training,  # noqa: E402,F401
                  stage_boundaries, task_llc)
