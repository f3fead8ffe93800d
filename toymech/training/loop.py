"""One training loop for every task and every model family, with stacked seeds as a mode of it.

``train(model, task, cfg)`` knows nothing about the task beyond the Task protocol (``sample``,
``loss``, ``metrics``). ``train_stacked(models, task, cfgs)`` runs the same loop for N models that
differ only in their seeds: their parameters are stacked along a new leading axis and the
forward pass is ``torch.vmap`` over ``torch.func.functional_call``. The optimisers are
elementwise (AdamW, Adam, SGD with momentum) and gradient clipping is per seed, so each stacked
model follows the run ``train`` would make, up to float rounding (tested).

Freezing is declared in ``TrainConfig.freeze`` (parameter-name patterns) and ``train_from``;
evaluation probes plug in as callbacks; on one model, checkpoints hold everything needed to
resume bit-for-bit on CPU (weights, optimizer, schedule, data-generator state, history).
Nothing syncs with the host inside a step: losses stay on the device until an evaluation step.
A single model's step computes its logits with ``toymech.models.fast_forward`` where that supports
the model (the attention-only toys: same math and Parameters, no hook points); environment
variable ``TOYMECH_FAST=0`` makes it call ``model(tokens)`` instead. Evaluation always does.

What is logged (``toymech.training.evaluation``): ``eval_*`` on the task's held-out examples where
it has a held-out split (then ``train_*`` on training examples beside them), else on a fixed
batch drawn like the training data. A stop rule (``TrainConfig.stop_metric``/``stop_value``)
ends a run at the first evaluation step that passes it; stacked seeds stop one by one (a
stopped seed's parameters are held where they were while the others go on).

Snapshots (``TrainConfig.snapshots``): at each snapshot step s (s optimizer updates done; 0 = the
initial weights) the loop keeps a CPU copy of every parameter that trains at some point (frozen
ones equal the final model's), each stacked model its own slice: ``TrainResult.snapshots``.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..core import check, seed_for
from ..devices import make_generator, rebalance, resolve_device, use_thread_policy
from ..models import move, parameter_counts
from ..tasks.base import Task
from . import live
from .config import TrainConfig
from .divergence import DIVERGED_LOSS, TrainingDiverged
from .engines import EagerEngine, StackedEngine
from .evaluation import LoggedEval, evaluate, passes  # noqa: F401 (evaluate: re-exported)
from .resume import latest_checkpoint, resume_state, save_training_checkpoint  # noqa: F401

# A callback sees the model (in eval mode, under no_grad) at every evaluation step and returns
# numbers to add to that step's history row.
Callback = Callable[[int, torch.nn.Module], dict[str, float]]


@dataclass
class TrainResult:
    model: torch.nn.Module
    history: list[dict[str, float]]
    trainable: int
    frozen: int
    seconds: float
    # step -> {parameter name: CPU tensor} of the parameters that train (see the module docstring)
    snapshots: dict[int, dict[str, torch.Tensor]] = field(default_factory=dict)
    cpu_seconds: float = 0.0  # process CPU time of the loop, this model's share (core-seconds)
    held_out: bool = False    # eval_* measured on held-out examples (see LoggedEval)
    # a single constant-lr run's optimizer, schedule and data-stream state at its last step, so
    # that a longer run can continue it (``train(..., resume_from=..., continue_shorter=True)``)
    train_state: dict | None = None

    @property
    def stop_step(self) -> int | None:
        """The step at which the stop rule ended the run (None: it ran all its steps)."""
        step = self.final.get("stop_step")
        return None if step is None else int(step)

    @property
    def final(self) -> dict[str, float]:
        """The last row of the history (the final metrics); {} when there is none."""
        return self.history[-1] if self.history else {}


def apply_freeze(model: torch.nn.Module, patterns: Iterable[str]) -> list[str]:
    """Set ``requires_grad=False`` on the parameters of ``model`` whose names match any of
    ``patterns`` (shell-style, e.g. ``"blocks.*.attn.*"``).

    Returns the frozen names; a pattern that matches nothing raises ValueError (a typo would
    otherwise silently train what the user meant to freeze).
    """
    names = [n for n, _ in model.named_parameters()]
    frozen: list[str] = []
    for pattern in patterns:
        hits = fnmatch.filter(names, pattern)
        check(bool(hits), "freeze", pattern,
              f"a pattern matching parameter names, e.g. {', '.join(names[:4])}, ...")
        frozen.extend(hits)
    params = dict(model.named_parameters())
    for n in frozen:
        params[n].requires_grad_(False)
    return sorted(set(frozen))


def _delayed(named: dict[str, torch.Tensor], train_from) -> list[tuple[str, int]]:
    """(name, first training step) of the parameters that start training late."""
    out = []
    for pattern, begin in train_from:
        hits = [n for n in fnmatch.filter(list(named), pattern) if named[n].requires_grad]
        check(bool(hits), "train_from", pattern,
              "a pattern matching trainable parameter names (not frozen ones)")
        out.extend((n, begin) for n in hits)
    return out


def _optimizer(params: list[torch.Tensor], cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay)
    cls = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    # One fused kernel for every parameter where the device has it: the same update, cheaper
    # (benchmarks/README.md).
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") and p.is_floating_point()
                                 for p in params)
    return cls(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay,
               fused=fused or None)


def lr_factor(step: int, cfg: TrainConfig) -> float:
    """The learning-rate multiplier at ``step`` under ``cfg``'s schedule: linear warm-up over
    ``warmup_steps``, then constant or cosine decay to 0 at ``steps``."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def train(model: torch.nn.Module, task: Task, cfg: TrainConfig, *,
          device: str | torch.device = "auto", callbacks: Iterable[Callback] = (),
          checkpoint_dir: str | Path | None = None, resume_from: str | Path | None = None,
          continue_shorter: bool = False, progress: bool = True,
          log: Callable[[str], None] | None = print) -> TrainResult:
    """Train ``model`` on fresh batches of ``task``; returns the model and its metrics history.

    History rows (every ``eval_every`` steps and at the end): ``step``, ``train_loss`` (mean
    since the previous row), the task's metrics (``eval_*``: on held-out examples where the task
    has a held-out split, with ``train_*`` on training examples beside them; else on a fixed
    batch drawn like the training data), the learning rate, whatever the callbacks return, and
    ``stop_step`` in the row where the stop rule ended the run.

    ``resume_from``: a training checkpoint (or a zoo entry that kept its training state) of this
    run to go on from. ``continue_shorter=True`` lets it be a shorter run of the same setting: a
    constant-lr run continues where the shorter one stopped, with the weights, optimizer state
    and data stream it had, so the result equals training ``cfg`` from step 0
    (``resume.extend_refusal`` says when it cannot; the history keeps the shorter run's rows).

    ``device``: where it trains (``"auto"``: CUDA, else MPS, else CPU). ``callbacks``:
    ``Callback`` objects called at every evaluation, whose numbers join the history.
    ``checkpoint_dir``: a folder for resumable ``step_*`` checkpoints (None: none).
    ``progress``: a progress bar; ``log``: a print-like function for the run's lines (None:
    quiet). Returns a ``TrainResult``; raises ``ValueError`` for a bad argument (one line naming
    it) and ``TrainingDiverged`` when the loss becomes non-finite or explodes. Only the zoo
    stores what it trains (``Zoo.get_or_train`` calls this). On a CPU the process's torch
    threads follow the package's policy unless chosen already (``devices.use_thread_policy``).
    """
    return _run([model], [task], [cfg], device, [list(callbacks)], checkpoint_dir, resume_from,
                progress, log, continue_shorter)[0]


def train_stacked(models: Sequence[torch.nn.Module], task: Task | Sequence[Task],
                  cfgs: Sequence[TrainConfig], *, device: str | torch.device = "auto",
                  callbacks: Sequence[Iterable[Callback]] | None = None, progress: bool = True,
                  log: Callable[[str], None] | None = print) -> list[TrainResult]:
    """``train`` for N models of one shape whose configs differ only in ``seed``, as one program.

    ``task``: one task for every model, or one task per model (a map's data knobs: block
    lengths, offsets), each model then drawing its own batches from its own task; the tasks must
    give sequences of one length (they stack). ``models`` and ``cfgs``: one per run, the same
    length. ``callbacks[i]`` are model i's callbacks. ``device``, ``progress`` and ``log`` as in
    ``train``. Returns one ``TrainResult`` per model, in order; wall time is shared equally among
    them.
    """
    check(len(models) == len(cfgs) >= 1, "models", len(models),
          f"one model per train config ({len(cfgs)} configs)")
    tasks = list(task) if isinstance(task, (list, tuple)) else [task] * len(models)
    check(len(tasks) == len(models), "task", f"{len(tasks)} tasks",
          f"one task, or one per model ({len(models)})")
    for t in tasks:
        check(isinstance(t, Task), "task", type(t).__name__, "a toymech Task")
    lengths = sorted({t.seq_len for t in tasks})
    check(len(lengths) == 1, "task", f"sequence lengths {lengths}",
          "tasks whose sequences have one length (their batches stack)")
    for c in cfgs[1:]:
        check(c.replace(seed=0) == cfgs[0].replace(seed=0), "cfgs", c,
              "train configs that differ only in their seeds")
    shapes = [[(n, tuple(p.shape)) for n, p in m.named_parameters()] for m in models]
    check(all(s == shapes[0] for s in shapes), "models", len(models), "models of one shape")
    cbs = [list(c) for c in callbacks] if callbacks is not None else [[] for _ in models]
    check(len(cbs) == len(models), "callbacks", len(cbs), "one list of callbacks per model")
    return _run(list(models), tasks, list(cfgs), device, cbs, None, None, progress, log)


@dataclass
class _Loop:
    """What one run of the loop carries from phase to phase (``_run``)."""

    models: list[torch.nn.Module]
    tasks: list[Task]  # each model's task (one task repeated, or a map's data knobs)
    cfgs: list[TrainConfig]
    callbacks: list[list[Callback]]
    dev: torch.device
    run: EagerEngine | StackedEngine
    delayed: list[tuple[str, int]]  # parameters that start training late (``_delayed``)
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR
    gens: list[torch.Generator]  # each model's training-data stream
    logged: list[LoggedEval]  # each model's logged evaluation
    trainable: int
    frozen: int
    histories: list[list[dict[str, float]]]
    snapshots: list[dict[int, dict[str, torch.Tensor]]]
    snap_at: set[int]  # a set of ints: testing membership never syncs
    # the step at which each seed's stop rule fired (a run resumed from its stop stays stopped)
    stopped: list[int | None]
    start: int = 0  # the first step to run (after a resume, the checkpoint's)
    cpu_before: float = 0.0  # CPU seconds of the run before its resume

    @property
    def cfg(self) -> TrainConfig:
        return self.cfgs[0]

    @property
    def task(self) -> Task:
        return self.tasks[0]


def _run(models, tasks: list[Task], cfgs: list[TrainConfig], device, callbacks, checkpoint_dir,
         resume_from, progress, log, continue_shorter: bool = False) -> list[TrainResult]:
    loop = _setup(models, tasks, cfgs, device, callbacks, checkpoint_dir, resume_from, log)
    _start(loop, resume_from, continue_shorter)
    t0, c0 = time.perf_counter(), time.process_time()
    last_step = _steps(loop, checkpoint_dir, progress, log, c0)
    n = len(models)
    seconds, cpu = (time.perf_counter() - t0) / n, (time.process_time() - c0) / n
    if log and loop.histories[0]:
        log(_summary_line(loop, (last_step - loop.start) / max(seconds * n, 1e-9)))
    results = [TrainResult(m, h, loop.trainable, loop.frozen, seconds, snap,
                           loop.cpu_before + cpu, loop.logged[0].held_out)
               for m, h, snap in zip(models, loop.histories, loop.snapshots)]
    if n == 1 and loop.cfg.schedule == "constant":
        results[0].train_state = {
            "optimizer": loop.opt.state_dict(), "scheduler": loop.sched.state_dict(),
            "generator": loop.gens[0].get_state().cpu(), "history": loop.histories[0],
            "step": last_step}
    return results


def _setup(models, tasks: list[Task], cfgs: list[TrainConfig], device, callbacks,
           checkpoint_dir, resume_from, log) -> _Loop:
    """Phase 1: the device, freezing, the optimizer and schedule, the data generators."""
    dev = resolve_device(device)
    use_thread_policy(dev, log)  # on a CPU, the command line's threads (unless chosen already)
    cfg, n, task = cfgs[0], len(models), tasks[0]
    for m, task in zip(models, tasks):
        check(task.seq_len <= m.cfg.n_ctx, "task.seq_len", task.seq_len,
              f"at most the model's n_ctx={m.cfg.n_ctx}")
        check(task.d_vocab <= m.cfg.d_vocab, "task.d_vocab", task.d_vocab,
              f"at most the model's d_vocab={m.cfg.d_vocab}")
        move(m, dev)
        frozen_names = apply_freeze(m, cfg.freeze)
    task = tasks[0]
    trainable, frozen = parameter_counts(models[0])
    check(trainable > 0, "freeze", cfg.freeze, "patterns that leave something to train")
    if log:
        log(f"[toymech] {task.name}: {trainable:,} trainable / {frozen:,} frozen parameters"
            f"{' (frozen: ' + ', '.join(frozen_names) + ')' if frozen_names else ''} on {dev}"
            f"{f', {n} seeds stacked' if n > 1 else ''}")
    check(n == 1 or (checkpoint_dir is None and resume_from is None), "checkpoint_dir",
          checkpoint_dir, "None with stacked seeds (checkpoints are for single runs)")
    run = EagerEngine(models[0], cfg) if n == 1 else StackedEngine(models, cfg)
    delayed = _delayed(run.named, cfg.train_from)
    opt = _optimizer(run.params, cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg))
    gens = [make_generator(seed_for(c.seed, "data"), dev) for c in cfgs]
    # The logged batches have their own stream so they are identical however training resumes.
    logged = [LoggedEval.for_run(t, c, dev) for t, c in zip(tasks, cfgs)]
    return _Loop(models, tasks, cfgs, callbacks, dev, run, delayed, opt, sched, gens, logged,
                 trainable, frozen, histories=[[] for _ in models],
                 snapshots=[{} for _ in models], snap_at=set(cfg.snapshot_steps),
                 stopped=[None] * n)


def _start(loop: _Loop, resume_from, continue_shorter: bool = False) -> None:
    """Phase 2: resume a single run from its checkpoint; the initial snapshot of a fresh one."""
    if resume_from is not None:
        loop.histories[0], loop.start, loop.snapshots[0] = resume_state(
            resume_from, loop.models[0], loop.task, loop.cfg, loop.opt, loop.sched, loop.gens[0],
            loop.dev, continue_shorter)
    if loop.start == 0 and 0 in loop.snap_at:
        _record(loop.snapshots, 0, loop.run)
    last = loop.histories[0][-1] if loop.histories[0] else {}
    if "stop_step" in last:
        loop.stopped[0] = int(last["stop_step"])
    loop.cpu_before = last.get("cpu_seconds", 0.0)


def _steps(loop: _Loop, checkpoint_dir, progress, log, c0: float) -> int:
    """Phase 3: the optimizer steps, an evaluation every ``eval_every``; the last step done."""
    cfg, task, run = loop.cfg, loop.task, loop.run
    window: list[torch.Tensor] = []  # losses kept on device: no host sync every step
    last_step = loop.start
    bar = _progress(range(loop.start, cfg.steps), cfg.steps, loop.start, progress, task.name)
    tick = live.ticker(cfg.steps)  # None unless a watcher asked ($TOYMECH_LIVE)
    for m in loop.models:
        m.train()
    for step in bar:
        if all(s is not None for s in loop.stopped):
            break
        window.append(_update(loop, step))
        done = last_step = step + 1
        if tick is not None:
            tick(done)
        if done in loop.snap_at:
            _record(loop.snapshots, done, run)
        if done % cfg.eval_every == 0 or done == cfg.steps:
            mean = torch.stack(window).mean(0).tolist()
            window.clear()
            _check_finite(mean, done, cfg)
            _log_rows(loop, done, mean, c0, log)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{loop.histories[0][-1]['eval_loss']:.3f}")
            if checkpoint_dir is not None and cfg.checkpoint_every and (
                    done % cfg.checkpoint_every == 0 or done == cfg.steps or loop.stopped[0]):
                save_training_checkpoint(Path(checkpoint_dir) / f"step_{done:07d}", loop.models[0],
                                         task, cfg, loop.opt, loop.sched, loop.gens[0],
                                         loop.histories[0], done, snapshots=loop.snapshots[0])
    run.sync()
    for m in loop.models:
        m.eval()
    return last_step


def _update(loop: _Loop, step: int) -> torch.Tensor:
    """One optimizer step of every model on a fresh batch each: the losses, on the device."""
    cfg, run = loop.cfg, loop.run
    losses = run.loss(loop.tasks, [t.sample(cfg.batch_size, g)
                                   for t, g in zip(loop.tasks, loop.gens)])
    loop.opt.zero_grad(set_to_none=True)
    losses.sum().backward()  # stacked models share no parameters: each gets its own grad
    for name, begin in loop.delayed:
        if step < begin:
            run.named[name].grad = None  # skipped by the optimizer: no update, no decay
    if cfg.grad_clip is not None:
        run.clip()
    loop.opt.step()
    run.restore()  # stacked seeds that have stopped keep their parameters
    loop.sched.step()
    return losses.detach()


def _log_rows(loop: _Loop, done: int, mean: list[float], c0: float, log) -> None:
    """An evaluation step: each running model's history row (the logged evaluation, the
    callbacks' numbers), and the stop rule."""
    cfg, run, n = loop.cfg, loop.run, len(loop.models)
    run.sync()
    if loop.dev.type == "cpu":
        rebalance(log)  # another toymech process may have started: share the cores
    for s, m in enumerate(loop.models):
        if loop.stopped[s] is not None:
            continue
        row = {"step": done, "train_loss": mean[s], "lr": loop.opt.param_groups[0]["lr"]}
        row.update(loop.logged[s].row(m, loop.tasks[s], run.eval_forward))
        row["cpu_seconds"] = loop.cpu_before + (time.process_time() - c0) / n
        if loop.callbacks[s]:
            m.eval()
            with torch.no_grad():
                for cb in loop.callbacks[s]:
                    row.update(cb(done, m))
            m.train()
        if passes(row, cfg):
            row["stop_step"], loop.stopped[s] = done, done
            run.hold(s)
            if loop.snap_at and done not in loop.snap_at:  # the final weights, as a snapshot
                loop.snapshots[s][done] = run.snapshot()[s]
        loop.histories[s].append(row)


def _summary_line(loop: _Loop, steps_per_s: float) -> str:
    """The log line at the end: the last step, why it stopped, the eval loss, the speed."""
    cfg, last = loop.cfg, loop.histories[0][-1]
    stop = (f" (stopped: {cfg.stop_metric} {last[cfg.stop_metric]:.4f} passed "
            f"{cfg.stop_value})" if "stop_step" in last else "")
    return (f"[toymech] {loop.task.name}: step {last['step']}{stop}, eval loss "
            f"{last['eval_loss']:.4f}{' (held out)' if loop.logged[0].held_out else ''}, "
            f"{steps_per_s:.1f} steps/s")


def _record(snapshots: list[dict[int, dict[str, torch.Tensor]]], step: int, run) -> None:
    for s, params in enumerate(run.snapshot()):
        snapshots[s][step] = params


def _check_finite(losses: list[float], step: int, cfg: TrainConfig) -> None:
    # Non-finite, or far above chance (see training.divergence): the run has diverged.
    bad = [i for i, v in enumerate(losses)
           if not math.isfinite(v) or v > DIVERGED_LOSS]
    if bad:
        raise TrainingDiverged(
            f"training diverged: train_loss={losses[bad[0]]:.4g} at step {step} (seed "
            f"{bad[0]} of the run; above {DIVERGED_LOSS:g} nats counts as diverged); "
            f"lr={cfg.lr} is likely too large (or init_range); nothing was stored")


def _progress(iterable, total: int, initial: int, progress: bool, desc: str):
    if not progress:
        return iterable
    from tqdm.auto import tqdm
    return tqdm(iterable, total=total, initial=initial, desc=desc, mininterval=1.0,
                smoothing=0.1)
