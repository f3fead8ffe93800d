"""Pure analysis functions: model / tensors in, tensors or tables out.

Submodules kept as namespaces: ``probes`` (Birth study: memory-recall probes, linear probes,
callback), ``patching`` (causal tests: activation and path patching), ``llc`` (the local learning
coefficient, SGLD).
"""

from . import bootstrap, llc, patching, probes
from .baselines import (
                        Prediction,
                        agreement,
                        attention_prediction,
                        baseline_losses,
                        context_frequency_loss,
                        copy_back_prediction,
                        frequency_prediction,
                        induction_prediction,
                        position_copy_loss,
                        position_prediction,
                        recency_prediction,
)
from .circuits import (
                        COMPOSITION_MODES,
                        composition_baseline,
                        composition_scores,
                        copy_score,
                        direct_path,
                        direct_path_copy_score,
                        eigenvalues,
                        full_ov_circuits,
                        ov_copy_scores,
)
from .dynamics import (
                        formation_order,
                        order_agreement,
                        transition_step,
                        transitions,
                        transitions_over_seeds,
)
from .evaluation import (
                        ablation_losses,
                        composition_path_losses,
                        head_ablation_hooks,
                        heads_reaching,
                        mean_head_outputs,
                        model_prediction,
                        per_position_loss,
                        resample_path_losses,
                        set_losses,
)
from .heads import head_label, head_labels
from .llc import (
                        LLCCurve,
                        SGLDSettings,
                        estimate_llc,
                        llc_through_training,
                        stage_boundaries,
                        task_llc,
)
from .patching import (
                        Patched,
                        composition_paths,
                        downstream,
                        logit_diff,
                        patch_heads,
                        patch_inputs,
                        patch_layers,
                        path_patch,
                        scored_loss,
                        spread,
                        target_logprob,
)
from .patterns import (
                        DETECTORS,
                        attention_patterns,
                        detection_patterns,
                        head_pattern_scores,
                        pattern_scores,
)
from .subspace import (
                        BASES,
                        concentration,
                        explained_variance,
                        hidden_states,
                        overlap_null,
                        subspace_overlap,
)

__all__ = [
    "BASES", "COMPOSITION_MODES", "DETECTORS", "LLCCurve", "Patched", "Prediction",
    "SGLDSettings", "ablation_losses", "agreement", "attention_patterns", "attention_prediction",
    "baseline_losses", "bootstrap", "copy_back_prediction", "frequency_prediction",
    "heads_reaching", "induction_prediction", "mean_head_outputs", "model_prediction",
    "position_prediction", "recency_prediction", "resample_path_losses", "composition_baseline", "composition_path_losses",
    "composition_paths", "composition_scores", "concentration", "context_frequency_loss", "copy_score",
    "detection_patterns", "direct_path", "direct_path_copy_score", "downstream", "eigenvalues",
    "estimate_llc", "explained_variance", "formation_order", "full_ov_circuits",
    "head_ablation_hooks", "head_label", "head_labels", "head_pattern_scores", "hidden_states",
    "llc", "llc_through_training", "logit_diff", "order_agreement", "overlap_null",
    "ov_copy_scores",
    "patch_heads", "patch_inputs", "patch_layers", "path_patch", "patching", "pattern_scores",
    "per_position_loss", "position_copy_loss", "probes", "scored_loss", "set_losses", "spread", "stage_boundaries",
    "subspace_overlap",
    "target_logprob", "task_llc", "transition_step", "transitions", "transitions_over_seeds",
]
