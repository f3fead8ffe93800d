"""Synthetic source-like numbers: one seed of each study on which every claim holds (shared by
the claims tests)."""

import math

from toymech.studies import random_transformers as rt


# --- source-like numbers: one seed that agrees with every claim ----------------------------------
def _induction_like():
    n = {"chance.loss": math.log(26), "floor.loss": 0.708}
    for short, test, doubled in (("1l", 2.6, 3.4), ("smeared", 1.24, 2.31), ("2l", 1.40, 2.31)):
        n.update({f"{short}.test": test, f"{short}.doubled": doubled,
                  f"{short}.direct_copy": -0.99, f"{short}.predictable": 0.1,
                  f"{short}.shifted": 0.2, f"{short}.period5": 0.3, f"{short}.period7": 0.3})
    n.update({"smeared.option1": 0.99, "smeared.option2": 0.73, "2l.option1": 0.73,
              "2l.option2": 6.42, "2l.copy_max.L0": -0.93, "2l.copy_min.L0": -1.0,
              "2l.copy_max.L1": 1.0, "2l.copy_min.L1": 0.9, "smeared.copying_heads": 2.0,
              "smeared.suppressing_heads": 2.0, "1l.copying_heads": 4.0,
              "2l.prev_token_max.L0": 0.9, "2l.path.direct": 3.12, "2l.path.k": 2.52,
              "2l.path.q": 2.62, "2l.path.both": 1.39, "2l.share_k": 0.6, "2l.share_q": 0.2,
              "2l.pref_clean": 4.0, "2l.pref_corrupted": 1.0, "2l.layer1_restores": 0.8,
              "smeared.recent_suppressing": 2.0})
    return n


def _birth_like():
    n = {"icl_acc": 0.97, "bigram_acc": 0.29, "baseline.icl_acc": 0.05,
         "baseline.bigram_acc": 0.30, "chance.acc": 1 / 65, "interval": 5.0,
         "half.bigram_acc": 20.0, "half.icl_acc": 200.0, "half.W_O2": 100.0, "half.W_K2": 150.0,
         "half.W_K1": 180.0, "half.W_F": 15.0}
    n.update({f"rise.{m}": 0.8 for m in ("icl_acc", "W_O2", "W_K2", "W_K1")})
    n.update({"rise.bigram_acc": 0.25, "rise.W_F": 1.0,
              "freeze.paper.icl_acc": 0.9, "freeze.none.icl_acc": 0.95,
              "freeze.paper.probe_wk2": 0.8, "freeze.none.probe_wk2": 0.75,
              "freeze.paper.probe_wo2": 0.9, "freeze.none.probe_wo2": 1.0,
              "extremes.frozen.icl_acc": 0.95, "extremes.frozen.probe_wk2": 0.9,
              "extremes.frozen.probe_wo2": 0.9, "extremes.unfrozen.icl_acc": 0.97,
              "extremes.unfrozen.probe_wk2": 0.85, "extremes.unfrozen.probe_wo2": 0.95})
    for mode, shared in (("fixed", (0.1, 0.2, 0.3)), ("random", (0.5, 0.6, 0.7))):
        for k, v in zip((1, 3, 5), shared):
            n[f"sweep.{mode}.non-top-K.K{k}"] = v
            n[f"sweep.{mode}.ood.K{k}"] = v / 2
    for m in ("W_K1", "W_K2", "W_O2", "W_F"):
        n[f"construction.{m}.trained"], n[f"construction.{m}.init"] = 0.3, 0.01
    n.update({"causal.head_moves": 0.92, "causal.value_moves": 0.91,
              "causal.corrupted_moves": 0.01, "causal.k_share": 0.89, "causal.q_share": -0.01,
              "causal.v_share": -0.02, "causal.clean_logp": -0.1, "causal.corrupted_logp": -4.0})
    return n


def _rt_like():
    chance = {"modular_addition": 1 / 23, "needle": 0.5, "decimal_addition": 0.01,
              "parentheses": 0.56}
    n = {f"chance.{t}": c for t, c in chance.items()}
    for t in rt.ALGORITHMIC:
        n[f"acc.{t}.random.recipe"] = 1.0
        n.update({f"acc.{t}.normal.small": 1.0, f"acc.{t}.normal.large": 1.0,
                  f"acc.{t}.random.large": 1.0, f"acc.{t}.random.small": 0.6,
                  f"acc.{t}.E_token+U.large": 1.0, f"acc.{t}.U.large": 0.1,
                  f"acc.{t}.E_token+E_pos.large": 1.0})
    n.update({"acc.decimal_addition.E_token+U.large": 0.485,
              "acc.modular_addition.E_token+E_pos.large": 0.05,
              "acc.decimal_addition.normal.small": 0.35,
              "mem.bits.normal": 2.88, "mem.bits.random": 0.41, "lm.loss.normal": 1.5,
              "lm.loss.random": 2.2, "lm.chance": math.log(65), "conc.memorization.random": 0.8,
              "conc.memorization.normal": 0.5, "conc.char_lm.random": 0.7,
              "conc.char_lm.normal": 0.4, "circuit.gap.narrowest": 0.01,
              "circuit.gap.widest": 0.3, "circuit.random.widest": 0.35,
              "baseline.linearised.parentheses": 0.973, "baseline.linearised.needle": 0.5,
              "baseline.linearised.decimal_addition": 0.05, "baseline.lstm.parentheses": 0.99,
              "baseline.lstm.decimal_addition": 0.02, "baseline.lstm-frozen.needle": 0.55})
    return n


