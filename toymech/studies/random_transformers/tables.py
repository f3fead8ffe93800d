"""Study 3: the tables notebook 03 displays, computed from the rows of ``measure``."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from ...analysis.heads import head_label
from ...core import Setting, check, seed_for
from ...devices import make_generator
from ...tasks.base import Task
from .claims import (
    ALGORITHMIC,
    CHANCE,
    PAPER_ABLATIONS,
    PAPER_ACCURACY,
    PAPER_BITS_PER_PARAM,
    SOLVED,
)
from .design import Plan, size_spec, task_for
from .measure import summarize


def task_examples(size: Setting | str, seed: int = 0) -> pd.DataFrame:
    """One sequence of every task of the size (drawn from the ``example`` stream of ``seed``)."""
    rows = []
    for name, params in size_spec(size).tasks.items():
        task = task_for(name, size)
        batch = task.sample(1, make_generator(seed_for(seed, "example"), torch.device("cpu")))
        sep = "" if name in ("char_lm", "parentheses") else " "
        rows.append({"task": name, "parameters": params, "seq_len": task.seq_len,
                     "vocab": task.d_vocab, "example": task.decode(batch.tokens[0], sep)[:70],
                     "scored positions": batch.scored[0].nonzero().flatten().tolist()[:12]})
    return pd.DataFrame(rows)


def zoo_note(df: pd.DataFrame) -> str:
    """How many runs of ``df`` were trained now / loaded, and their training time."""
    return (f"{int((~df['loaded']).sum())} runs trained, {int(df['loaded'].sum())} loaded from "
            f"the zoo; training time {df['seconds'].sum():.0f} s")


def accuracy_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Our median accuracy (%) per task x (mode, width), beside the paper's stated numbers."""
    s = summary.copy()
    s["setting"] = s["mode"] + ", width " + s["width"].astype(str)
    ours = s.pivot(index="task", columns="setting", values="median") * 100
    ours.columns = [f"ours: {c}" for c in ours.columns]
    paper = pd.DataFrame(
        {f"paper: {setting}": {t: PAPER_ACCURACY.get((t, setting)) for t in ALGORITHMIC}
         for setting in ("normal, width 16", "random, width 1024")})
    return ours.join(paper, how="left").round(1)


TRIVIAL_MARGIN = 0.02  # within two points of the trivial predictor a run learned nothing usable


def trivial_notes(rows: pd.DataFrame) -> str:
    """Which runs of ``rows`` (one per run: ``task``, ``acc``, ``chance`` and either ``model`` or
    ``mode`` and ``width``) score, as a median over seeds, at or below their task's trivial
    predictor on the same test set (within ``TRIVIAL_MARGIN``), each with that predictor named:
    such a number is a model that learned nothing the task needs, not a weak solution."""
    check(isinstance(rows, pd.DataFrame) and {"task", "acc", "chance"} <= set(rows.columns),
          "rows", type(rows).__name__, "a DataFrame of runs with task, acc and chance columns")
    r = rows.copy()
    r["which"] = (r["model"].astype(str) if "model" in r else
                  r["mode"].astype(str) + " width " + r["width"].astype(str))
    med = r.groupby(["task", "which"], sort=False)[["acc", "chance"]].median()
    low = med[med["acc"] <= med["chance"] + TRIVIAL_MARGIN]
    if low.empty:
        return (f"Every run here scores more than {TRIVIAL_MARGIN * 100:.0f} points above its "
                "task's trivial predictor (median over seeds).")
    parts = []
    for task, group in low.groupby(level="task", sort=False):
        null = CHANCE.get(task, ("trivial predictor", "the most common answer"))[1]
        runs = ", ".join(f"{which} ({acc * 100:.1f} %)" for (_, which), acc in group["acc"].items())
        parts.append(f"{task.replace('_', ' ')}: {runs}, against {group['chance'].iloc[0] * 100:.1f} "
                     f"% for {null}")
    return ("At or below the trivial predictor of the same test set (median over seeds; within "
            f"{TRIVIAL_MARGIN * 100:.0f} points), so these runs learned nothing the task needs: "
            + "; ".join(parts) + ".")


def ablation_summary(main: pd.DataFrame, abl: pd.DataFrame, p: Plan) -> pd.DataFrame:
    """``summarize`` of the ablation runs beside normal/random at the large width."""
    large = p.widths[-1]
    ref = main[(main["width"] == large) & main["task"].isin(p.ablation_tasks)]
    return summarize(pd.concat([ref, abl], ignore_index=True))


def ablation_table(abl_summary: pd.DataFrame, modes: Sequence[str]) -> pd.DataFrame:
    """Median accuracy (%) per task x mode (normal, random, then the ablations)."""
    t = (abl_summary.pivot(index="task", columns="mode", values="median") * 100).round(1)
    return t[[m for m in ["normal", "random", *modes] if m in t]]


def paper_ablations() -> pd.DataFrame:
    return pd.DataFrame({"paper": PAPER_ABLATIONS}).rename_axis("mode")


def sweep_table(sweep_summary: pd.DataFrame) -> pd.DataFrame:
    return sweep_summary.pivot(index=["task", "width"], columns="mode",
                               values=["median", "min", "max"]).round(3)


def short_budget_table(short: pd.DataFrame, main: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (task, width, lr) of the ``short_budget`` runs: median, min and max test accuracy over
    seeds, how many seeds solved the task (accuracy >= ``SOLVED``), the median accuracy on
    the task's training split where it has one (a model that memorized its training pairs
    scores high there and not on the test pairs), and the same task's random transformer at the
    study's own learning rate (the widest in ``main``)."""
    by = ["task", "width", "lr"]
    out = summarize(short, by=tuple(by)).drop(columns="runs")
    groups = short.groupby(by)
    solved, runs = groups["acc"].agg(lambda a: int((a >= SOLVED).sum())), groups.size()
    out["solved"] = [f"{k}/{n}" for k, n in zip(solved, runs)]
    if "train_acc" in short:  # the task's training split: memorized vs generalized
        out["train split, median"] = groups["train_acc"].median().to_numpy()
    random = main[main["mode"] == "random"] if main is not None and len(main) else None
    for task in out["task"].unique():
        ref = random[random["task"] == task] if random is not None else []
        if len(ref):
            widest = ref[ref["width"] == ref["width"].max()]
            out.loc[out["task"] == task, f"study lr, width {int(widest['width'].iloc[0])}"] = \
                widest["acc"].median()
    return out.round(3)


def memorization_table(df: pd.DataFrame, task: Task) -> pd.DataFrame:
    """Bits stored per trainable parameter, from rows of ``run`` on the memorization task (the
    ``all_memorized_bits`` column: the whole table evaluated)."""
    out = df[["width", "mode", "seed", "trainable", "all_acc", "all_memorized_bits"]].copy()
    out["table_bits"] = task.total_bits
    out["bits_per_param"] = out["all_memorized_bits"] / out["trainable"]
    out["paper_bits_per_param"] = out["mode"].map(PAPER_BITS_PER_PARAM)
    return out


def memorization_note(mem_table: pd.DataFrame, task: Task) -> str:
    """How much of the table the models recall against a guess (1 / n_values), and what the
    bits-per-parameter comparison can say from that: a capacity measure needs models that
    recalled most of the table (else the fit is unfinished) or a table larger than they could
    store (at the paper's 2.88 bits per parameter)."""
    chance = 1.0 / task.n_values
    acc = mem_table.groupby("mode")["all_acc"].median()
    recall = ", ".join(f"{mode} {a * 100:.1f} %" for mode, a in acc.items())
    text = (f"The models recall {recall} of the table (median over runs) against "
            f"{chance * 100:.1f} % for a guess (1 of {task.n_values} values)")
    full = float(acc.max()) >= 0.5
    over = bool((mem_table["table_bits"] > PAPER_BITS_PER_PARAM["normal"]
                 * mem_table["trainable"]).all())
    if not full and not over:
        text += (": none recalled most of the table, and the table holds less than the larger "
                 "models could store, so the bits per parameter here measure an unfinished fit, "
                 "not a capacity")
    return text + "."


def memorization_summary(mem_table: pd.DataFrame) -> pd.DataFrame:
    """Bits per trainable parameter per mode: every run's, and the paper's."""
    g = mem_table.groupby("mode")["bits_per_param"]
    return pd.DataFrame({"runs": g.apply(lambda s: s.round(2).tolist()), "median": g.median(),
                         "paper": pd.Series(PAPER_BITS_PER_PARAM)}).round(3)


def lm_table(lm: pd.DataFrame) -> pd.DataFrame:
    return lm[["width", "mode", "seed", "trainable", "loss", "acc", "train_loss"]].round(3)


def concentration_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table 4 form: rows (task, mode), columns (basis, layer)."""
    return rows.pivot_table(index=["task", "mode"], columns=["basis", "layer"],
                            values="ev").round(3)


def concentration_gap(rows: pd.DataFrame) -> pd.DataFrame:
    """EV_k (k: ``measure.top_k``) after the layers (principal basis, mean over layers) per task and mode, and
    random minus normal."""
    c = rows[(rows["basis"] == "principal") & (rows["layer"] != "embedding")]
    c = c.pivot_table(index="task", columns="mode", values="ev")
    c["random - normal"] = c["random"] - c["normal"]
    return c.round(3)


def circuit_table(circ: pd.DataFrame) -> pd.DataFrame:
    """Mean KL over seeds per target width and student mode."""
    return circ.pivot_table(index="target_width", columns="mode", values="kl").round(3)


UNIFORM_WITHIN = 1.5  # a head whose largest attention is under 1.5x uniform singles nothing out


def needle_caption(tokens: Sequence[str], right: bool, summary: pd.DataFrame, width: int,
                   patterns: Sequence[torch.Tensor] | None = None) -> str:
    """The random needle model's accuracy and this example; with ``patterns`` (per layer
    ``[heads, n, n]``), whether any head singles out a position from the query: when none does
    (every largest weight under ``UNIFORM_WITHIN`` x uniform), the model in effect averages its
    context, as the linearised baseline does, and the page says so."""
    med = summary.set_index(["task", "width", "mode"])["median"]
    acc = med.get(("needle", width, "random"), float("nan"))
    text = (f"Random width-{width} needle accuracy {acc * 100:.1f} % (median over seeds); this "
            f"example is answered {'right' if right else 'wrong'}: {' '.join(tokens)}.")
    if patterns:
        q = len(tokens) - 2
        top = max(float(p[:, q, :q + 1].max()) for p in patterns)
        uniform = 1.0 / (q + 1)
        if top < UNIFORM_WITHIN * uniform:
            text += (f" No head singles out a position from the query: the largest attention "
                     f"weight is {top:.3f}, against {uniform:.3f} for uniform attention over the "
                     f"{q + 1} positions, so this model in effect averages its context, much like "
                     "the linearised baseline of section 10.")
        else:
            text += (f" The largest attention weight from the query is {top:.3f} (uniform: "
                     f"{uniform:.3f}).")
    return text


def needle_attention(tokens: Sequence[str], patterns: Sequence[torch.Tensor]) -> pd.DataFrame:
    """Where each head attends from the query key (the second-to-last position, which predicts
    the answer): its most attended position, the position of the matching key in the haystack
    and of that key's value."""
    q = len(tokens) - 2
    keys = [i for i in range(0, q - 1, 2) if tokens[i] == tokens[q]]
    rows = []
    for layer, pattern in enumerate(patterns):
        for head, top in enumerate(pattern[:, q].argmax(-1).tolist()):
            rows.append({"head": head_label(layer, head), "most attended": top,
                         "attention there": round(float(pattern[head, q, top]), 3),
                         "matching key at": keys, "its value at": [k + 1 for k in keys],
                         "attends the key or value": top in keys or top in [k + 1 for k in keys]})
    return pd.DataFrame(rows).set_index("head")


def baseline_table(main: pd.DataFrame, base: pd.DataFrame, p: Plan) -> pd.DataFrame:
    """Mean accuracy over seeds per task of the baselines beside the transformers of the same
    width, and the paper's linearised transformer at width 512."""
    ours = main[(main["width"] == p.baseline_width) & main["task"].isin(p.baseline_tasks)]
    ours = ours.assign(model="transformer, " + ours["mode"])
    both = pd.concat([ours[["model", "task", "acc"]], base[["model", "task", "acc"]]])
    table = both.pivot_table(index="task", columns="model", values="acc")
    paper = base.groupby("task")["paper_w512"].first().astype(float) / 100
    return table.join(paper.rename("paper: linearised w512")).round(3)
