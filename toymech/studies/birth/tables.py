"""Study 2: tables and summaries of what was measured (pure functions of histories, tables and
models; nothing here trains or draws a batch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ... import tasks
from ...analysis import probes
from .claims import half_and_rise

History = Sequence[Mapping[str, float]]


# --- when each memory forms -----------------------------------------------------------------------
FORMATION_KEYS = {"bigram acc": "cb_bigram_acc", "W_F bigram KL": "probe_wf_kl",
                  "W_O² output copy": "probe_wo2", "W_K² induction key": "probe_wk2",
                  "W_K¹ previous token": "probe_wk1", "in-context acc": "cb_icl_acc",
                  "induction attention": "attn_induction"}
MARKED = ("bigram acc", "W_O² output copy", "W_K² induction key", "W_K¹ previous token")


def formation_table(history: History) -> pd.DataFrame:
    """Per memory / metric: its first and final value and the half-way step (half of the way to
    its extreme, ``claims.half_and_rise``), sorted by it (the order in which the pieces form)."""
    rows = []
    for label, key in FORMATION_KEYS.items():
        pts = [r[key] for r in history if key in r]
        if pts:
            rows.append({"memory / metric": label, "key": key, "first": pts[0],
                         "final": pts[-1], "half-way step": half_and_rise(history, key)[0]})
    return pd.DataFrame(rows).sort_values("half-way step").set_index("memory / metric")


def formation_marks(order: pd.DataFrame) -> dict[str, float]:
    """label -> half-way step of the ``MARKED`` memories (for ``plots.birth.dynamics``)."""
    steps = order["half-way step"]
    return {label: float(steps[label]) for label in MARKED
            if label in steps and steps[label] == steps[label]}


def before_step(history: History, key: str = "cb_icl_acc", fraction: float = 0.15) -> int:
    """The last recorded step at which ``key`` had covered at most ``fraction`` of its total
    rise (a point 'before the induction head forms'); the first recorded step otherwise."""
    pts = [(int(r["step"]), r[key]) for r in history if key in r]
    v0, v1 = pts[0][1], pts[-1][1]
    ok = [s for s, v in pts if v1 == v0 or (v - v0) / (v1 - v0) <= fraction]
    return ok[-1] if ok else pts[0][0]


def dynamics_summary(history: History, baseline: Mapping[str, float]) -> list[str]:
    """Sentences with the run's final accuracies beside the exact bigram model's, the half-way
    steps and the final probes (numbers only; the verdicts are the claims'). A metric that never
    got half way reads "not half way", one not recorded "not measured"."""
    f = history[-1]
    h = {label: half_and_rise(history, key)[0] for label, key in FORMATION_KEYS.items()}

    def step(label: str) -> str:
        v = h[label]
        return f"{v:.0f}" if v == v else "not half way"

    def val(key: str) -> str:
        v = f.get(key)
        return f"{v:.2f}" if v is not None and v == v else "not measured"

    return [
        f"in-context accuracy {f['cb_icl_acc']:.3f} at step {f['step']} (exact bigram model: "
        f"{baseline['icl_acc']:.3f}); bigram accuracy {f['cb_bigram_acc']:.3f} (exact bigram "
        f"model: {baseline['bigram_acc']:.3f})",
        f"half-way steps: bigram accuracy {step('bigram acc')}, W_F KL {step('W_F bigram KL')}, "
        f"in-context accuracy {step('in-context acc')}",
        f"half-way steps: W_O² {step('W_O² output copy')}, W_K² {step('W_K² induction key')}, "
        f"W_K¹ {step('W_K¹ previous token')}",
        f"final probes: W_K¹ {val('probe_wk1')}, W_K² {val('probe_wk2')}, W_O² {val('probe_wo2')}, "
        f"W_F KL {val('probe_wf_kl')} nats; attention: previous token {val('attn_prev')}, "
        f"induction {val('attn_induction')} (uniform {val('attn_induction_uniform')}); linear "
        f"probe (previous token) {val('linprobe_prev')}",
    ]


def kcomp_summary(history: History, model: HookedTransformer, task: tasks.Task) -> str:
    """K-composition at the first and last recorded step, its random baseline, what the
    hand-built W_K² would score (``construction_kcomp``), and how far the trained score went from
    the baseline towards the construction's, beside the in-context accuracy and the W_K² probe:
    the score is a norm over the whole matrices, so at these shapes even a perfect induction key
    sits close to the baseline, and the sentence says so with the numbers."""
    first, last = history[0], history[-1]
    base, built = last["kcomp_baseline"], construction_kcomp(model, task)
    text = (f"K-composition: {first['kcomp']:.3f} at step {first['step']} -> {last['kcomp']:.3f} "
            f"at step {last['step']} (random baseline {base:.3f}); the hand-built W_K² would "
            f"score {built:.3f}.")
    if built > base:
        share = (last["kcomp"] - base) / (built - base)
        text += (f" Even the construction is only {built - base:.3f} above the baseline at these "
                 f"shapes; the trained score covers {share:.0%} of that way")
        extra = [f"{name} {last[key]:.2f}" for name, key in
                 (("in-context accuracy", "cb_icl_acc"), ("the W_K² recall probe", "probe_wk2"))
                 if key in last]
        text += f", while {' and '.join(extra)}" if extra else ""
        formed = all(last.get(k, 0.0) >= 0.5 for k in ("cb_icl_acc", "probe_wk2"))
        text += (": the score stays small because it averages over every direction of the "
                 "matrices, not because the induction key is missing." if formed else ".")
    return text


# --- the sweeps -----------------------------------------------------------------------------------
def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """In-context accuracy per (triggers, K) and evaluation set (``trigger_sweep`` rows)."""
    return sweep.pivot_table(index=["triggers", "K"], columns="set", values="icl_acc")


def sweep_summary(sweep: pd.DataFrame) -> list[str]:
    """Means on the shared set and the OOD accuracies by K (numbers; the claims judge them)."""
    wide = sweep_table(sweep)
    lines = []
    if "non-top-K" in wide:
        means = wide["non-top-K"].groupby(level="triggers").mean()
        lines.append("On the shared non-top-K set (mean over K): " + ", ".join(
            f"{mode}-trigger models {v:.3f}" for mode, v in means.items()))
    for mode in wide.index.get_level_values("triggers").unique():
        if "ood" in wide:
            by_k = ", ".join(f"K = {int(k)}: {float(v):.3f}" for k, v in wide.loc[mode, "ood"].items())
            lines.append(f"{mode.capitalize()}-trigger models, in-context accuracy with never-trigger "
                         f"tokens as triggers: {by_k}")
    return lines


def freezing_view(table: pd.DataFrame) -> pd.DataFrame:
    """``freezing_comparison``'s table as a reader sees it: the scheme is the row's name, so its
    internal value (``paper``, ``learned_pos``, ...) is left out; training time named with its
    unit."""
    return table.drop(columns=["freezing"], errors="ignore").rename(
        columns={"seconds": "training time (s)"})


def freezing_summary(table: pd.DataFrame) -> list[str]:
    """One sentence per row of ``freezing_comparison``."""
    nan = float("nan")
    return [f"{name}: in-context {r['icl_acc']:.3f} (OOD {r.get('ood_icl_acc', nan):.3f}), "
            f"bigram {r['bigram_acc']:.3f}; probes W_K¹ {r.get('probe_wk1', nan):.2f}, "
            f"W_K² {r['probe_wk2']:.2f}, W_O² {r['probe_wo2']:.2f}; K-composition "
            f"{r['kcomp']:.3f}; {r.get('trainable', nan):,.0f} trainable parameters"
            for name, r in table.drop(columns=["freezing"], errors="ignore").astype(float).iterrows()]


# --- the hand-built construction ------------------------------------------------------------------
def _triggers(task: tasks.Task) -> torch.Tensor | None:
    return task.fixed_triggers if getattr(task, "trigger_mode", "") == "fixed" else None


def construction_table(trained: HookedTransformer, initial: HookedTransformer,
                       task: tasks.Task) -> pd.DataFrame:
    """Per memory: cosine of the trained matrix and of the initial one with the construction
    (``probes.construction``, built from the trained model's frozen parts), and the recall probe
    of the trained weights and of the construction itself."""
    trig = _triggers(task)
    ideal = probes.construction(trained, task.pi_b, trig)
    now, before = probes.trained_matrices(trained), probes.trained_matrices(initial)
    E, P, U = trained.W_E, trained.W_pos, trained.W_U
    ov1 = trained.OV[0, 0]
    others = None
    if trig is not None:
        keep = torch.ones(task.d_vocab, dtype=torch.bool)
        keep[trig] = False
        others = torch.arange(task.d_vocab)[keep]

    def probe(name: str, M: torch.Tensor) -> float:
        if name.startswith("W_K1"):
            return probes.previous_token_probe(M, P)
        if name.startswith("W_K2"):
            return probes.induction_key_probe(M, E, ov1, trig)
        if name.startswith("W_O2"):
            return probes.output_copy_probe(M, E, U)
        return probes.bigram_kl_probe(M, E, U, task.pi_b, others)

    rows = [{"memory": name,
             "cosine(trained, construction)": probes.matrix_cosine(now[name], M),
             "cosine(init, construction)": probes.matrix_cosine(before[name], M),
             "probe (trained)": probe(name, now[name]),
             "probe (construction)": probe(name, M)} for name, M in ideal.items()]
    return pd.DataFrame(rows).set_index("memory")


def construction_kcomp(model: HookedTransformer, task: tasks.Task) -> float:
    """K-composition score ‖OV1 · QK2ᵀ‖_F / (‖OV1‖_F ‖QK2‖_F) that the hand-built W_K² would have
    with the model's layer-0 OV circuit (what a perfect induction key scores at these shapes)."""
    ov1 = model.OV[0, 0].AB.detach().cpu()
    qk2 = probes.construction(model, task.pi_b, _triggers(task))["W_K2 (induction key)"]
    return float((ov1 @ qk2.T).norm() / (ov1.norm() * qk2.norm()))
