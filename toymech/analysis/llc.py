"""The local learning coefficient (LLC), estimated with SGLD.

The method is that of Lau, Furman, Wang, Murfet and Wei, "Quantifying degeneracy in singular
models via the learning coefficient" (2023, arXiv:2308.12108), as used through training by
Hoogland et al. 2024, "The developmental landscape of in-context learning" (see
docs/sources.md). Around trained parameters w* with empirical loss L_n (the mean negative
log-likelihood of n samples), sample the localised, tempered posterior

    p(w) ∝ exp(-nβ L_n(w) - γ/2 ‖w - w*‖²),      β = 1 / log n by default,

with stochastic-gradient Langevin dynamics on minibatches B of m samples,

    w ← w - ε/2 (nβ ∇L_B(w) + γ (w - w*)) + √ε ξ,     ξ ~ N(0, I),

and estimate  λ̂ = nβ (E_w[L_n(w)] - L_n(w*)).  For a regular model with d free parameters
λ = d/2; degenerate directions (parameters that do not change the function) add nothing, so a
singular model has λ < d/2. Only parameters with ``requires_grad`` move (a frozen model's
parameter space is what it trains).

``E_w[L_n(w)] - L_n(w*)`` is read per draw as ``L_B(w_t) - L_B(w*)`` on the same minibatch: the
same expectation with far less minibatch noise (a control variate; it costs one forward pass
at w* per step).

``estimate_llc`` runs the chains; ``LLCResult`` keeps the per-draw traces and three checks
(finite chains, no negative estimate, a flat trace); ``calibrate`` sweeps step size and
localisation and ``choose`` picks the setting; ``task_llc`` / ``llc_through_training`` apply it to a
task's model and to every snapshot of a run; ``stage_boundaries`` reads stages off the curve.
"""

from __future__ import annotations

import copy
import fnmatch
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..core import check, check_float, check_int
from ..models.fast import fast_forward
from ..tasks.base import Batch, masked_cross_entropy
from .dynamics import transition_step
from .inputs import check_callable, check_module, check_tokens, finite, vocab_of

LossFn = Callable[[torch.nn.Module, Any], torch.Tensor]


@dataclass(frozen=True)
class SGLDSettings:
    """Estimator settings. ``lr``: the step size ε; ``gamma``: the localisation γ; ``n_beta``:
    nβ (None: n / log n); ``chains`` independent chains of ``burnin`` discarded steps then
    ``draws`` kept ones, minibatches of ``batch_size``; ``seed`` seeds chain c with seed + c;
    ``flat_tol``: a trace is flat when its drift between the last two quarters is within this
    share of the estimate (or within 3 standard errors)."""

    lr: float = 1e-4
    gamma: float = 100.0
    n_beta: float | None = None
    chains: int = 4
    draws: int = 200
    burnin: int = 50
    batch_size: int = 64
    seed: int = 0
    flat_tol: float = 0.1

    def __post_init__(self) -> None:
        check_float("lr", self.lr, 0.0, 1.0, lo_open=True)
        check_float("gamma", self.gamma, 0.0)
        if self.n_beta is not None:
            check_float("n_beta", self.n_beta, 0.0, lo_open=True)
        check_int("chains", self.chains, 1, 1000)
        check_int("draws", self.draws, 24, 10**7)
        check_int("burnin", self.burnin, 0, 10**7)
        check_int("batch_size", self.batch_size, 1, 10**7)
        check_int("seed", self.seed, 0)
        check_float("flat_tol", self.flat_tol, 0.0, lo_open=True)

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain dict (JSON-ready)."""
        return asdict(self)

    def replace(self, **changes: Any) -> SGLDSettings:
        """A copy with ``changes`` (field=value), checked like new settings."""
        return SGLDSettings(**{**asdict(self), **changes})


@dataclass
class LLCResult:
    """One estimate. trace / trace_star: [chains, burnin + draws] minibatch losses at w_t and at
    w* on the same batches; ``llc_trace`` = nβ (trace - trace_star), the per-draw estimate."""

    per_chain: np.ndarray
    trace: np.ndarray
    trace_star: np.ndarray
    init_loss: float
    n: int
    n_beta: float
    settings: SGLDSettings
    seconds: float
    parameters: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def llc(self) -> float:
        return float(np.mean(self.per_chain))

    @property
    def llc_std(self) -> float:
        return float(np.std(self.per_chain, ddof=1)) if len(self.per_chain) > 1 else float("nan")

    @property
    def llc_trace(self) -> np.ndarray:
        return self.n_beta * (self.trace - self.trace_star)

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.trace).all() and np.isfinite(self.per_chain).all())

    @property
    def negative(self) -> bool:
        return bool((self.per_chain < 0).any())

    def drift(self) -> tuple[float, float]:
        """(drift, its standard error): the change of the chain-averaged per-draw estimate over
        the last half of the kept draws, from a least-squares line through 6 chunk means (the
        chunks absorb the draws' autocorrelation; the error is the line's, from the scatter
        of the chunk means about it)."""
        kept = self.llc_trace[:, self.settings.burnin:].mean(0)
        half = kept[len(kept) // 2:]
        k = 6
        size = len(half) // k
        means = half[: k * size].reshape(k, size).mean(1)
        x = (np.arange(k) + 0.5) * size
        slope, icept = np.polyfit(x, means, 1)
        resid = means - (slope * x + icept)
        se_slope = math.sqrt(float((resid ** 2).sum()) / (k - 2) / float(((x - x.mean()) ** 2).sum()))
        return float(slope * len(half)), float(se_slope * len(half))

    @property
    def flat(self) -> bool:
        """No trend over the last half of the draws: a drift within ``flat_tol`` of the
        estimate, or one the scatter cannot tell from zero (within 3 standard errors)."""
        if not self.finite:
            return False
        d, se = self.drift()
        return abs(d) <= max(self.settings.flat_tol * abs(self.llc), 3 * se)

    @property
    def healthy(self) -> bool:
        """Finite chains, no negative estimate, a flat trace."""
        return self.finite and not self.negative and self.flat

    def row(self) -> dict[str, Any]:
        d, se = self.drift() if self.finite else (float("nan"), float("nan"))
        return {"llc": self.llc, "llc_std": self.llc_std, "init_loss": self.init_loss,
                "finite": self.finite, "negative": self.negative, "flat": self.flat,
                "healthy": self.healthy, "drift": d, "drift_se": se, "seconds": self.seconds,
                "lr": self.settings.lr, "gamma": self.settings.gamma, "n_beta": self.n_beta,
                "chains": self.settings.chains, "draws": self.settings.draws,
                "burnin": self.settings.burnin, "batch_size": self.settings.batch_size}


def _size(data: Any) -> int:
    if isinstance(data, Batch):
        return data.tokens.shape[0]
    if isinstance(data, torch.Tensor):
        return data.shape[0]
    check(isinstance(data, (tuple, list)) and len(data) >= 1
          and all(isinstance(t, torch.Tensor) and t.shape[0] == data[0].shape[0] for t in data),
          "data", type(data).__name__,
          "a Batch, a tensor or a tuple of tensors with one first dimension (samples)")
    return data[0].shape[0]


def _take(data: Any, idx: torch.Tensor) -> Any:
    if isinstance(data, Batch):
        return Batch(data.tokens[idx], data.scored[idx], {k: v[idx] for k, v in data.extras.items()})
    if isinstance(data, torch.Tensor):
        return data[idx]
    return tuple(t[idx] for t in data)


@torch.no_grad()
def _full_loss(model, loss_fn: LossFn, data: Any, chunk: int) -> float:
    size, total = _size(data), 0.0
    for start in range(0, size, chunk):
        idx = torch.arange(start, min(size, start + chunk))
        total += float(loss_fn(model, _take(data, idx))) * len(idx)
    return total / size


def estimate_llc(model: torch.nn.Module, loss_fn: LossFn, data: Any,
                 settings: SGLDSettings = SGLDSettings(), n: int | None = None,
                 freeze: Sequence[str] = ()) -> LLCResult:
    """λ̂ at the model's current parameters w* (see the module docstring).

    ``loss_fn(model, minibatch)``: the mean per-sample negative log-likelihood (a 0-d tensor);
    ``data``: the n samples (a ``Batch``, a tensor or a tuple of tensors indexed on their first
    dimension), drawn with replacement; ``n``: the sample count in nβ (default: the number of
    items in ``data``); ``freeze``: parameter-name patterns (fnmatch, as
    ``TrainConfig.freeze``) that stay at w*, e.g. what the run never trained. The caller's
    model is not changed (the chains run on a copy).

    ``settings``: the ``SGLDSettings`` of the chains."""
    check_module(model)
    check_callable(loss_fn, "loss_fn", "loss_fn(model, minibatch) -> a 0-d loss")
    check(isinstance(settings, SGLDSettings), "settings", type(settings).__name__,
          "an SGLDSettings")
    size = _size(data)
    n = size if n is None else check_int("n", n, 2)
    check(size >= 1 and n >= 2, "data", size, "at least one sample and n >= 2")
    n_beta = settings.n_beta if settings.n_beta is not None else n / math.log(n)
    start = time.perf_counter()
    work, star = copy.deepcopy(model), copy.deepcopy(model)
    work.train(False), star.train(False)
    params = [p for name, p in work.named_parameters()
              if p.requires_grad and not any(fnmatch.fnmatch(name, pat) for pat in freeze)]
    check(bool(params), "model", type(model).__name__, "a model with trainable parameters")
    anchor = [p.detach().clone() for p in params]
    device = params[0].device
    init_loss = finite(_full_loss(star, loss_fn, data, max(settings.batch_size, 256)), "loss_fn",
                       "the loss at the model's own parameters, before any SGLD step")
    diverged: list[tuple[int, int]] = []  # (chain, step)
    steps = settings.burnin + settings.draws
    trace = np.zeros((settings.chains, steps))
    trace_star = np.zeros((settings.chains, steps))
    eps, gamma = settings.lr, settings.gamma
    for c in range(settings.chains):
        gen = torch.Generator(device="cpu").manual_seed(settings.seed + c)
        noise_gen = torch.Generator(device=device).manual_seed(settings.seed + c + 7919)
        with torch.no_grad():
            for p, a in zip(params, anchor):
                p.copy_(a)
        for t in range(steps):
            idx = torch.randint(0, size, (settings.batch_size,), generator=gen)
            batch = _take(data, idx.to(_index_device(data)))
            loss = loss_fn(work, batch)
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                trace[c, t] = float(loss)
                trace_star[c, t] = float(loss_fn(star, batch))
                for p, g, a in zip(params, grads, anchor):
                    drift = n_beta * g + gamma * (p - a)
                    xi = torch.randn(p.shape, generator=noise_gen, device=device, dtype=p.dtype)
                    p.add_(-0.5 * eps * drift + math.sqrt(eps) * xi)
            if not math.isfinite(trace[c, t]):
                trace[c, t:] = np.nan  # a diverged chain stays diverged
                diverged.append((c, t))
                break
    kept = slice(settings.burnin, None)
    per_chain = n_beta * (trace[:, kept] - trace_star[:, kept]).mean(1)
    if diverged:
        warnings.warn(f"SGLD diverged in {len(diverged)} of {settings.chains} chain(s) (chain "
                      f"{diverged[0][0]} at step {diverged[0][1]}; lr={eps:g}, gamma={gamma:g}): "
                      "the estimate is NaN and the result is marked (finite=False, "
                      "extra['diverged']); a smaller lr or a larger gamma keeps the chains bounded",
                      RuntimeWarning, stacklevel=2)
    return LLCResult(per_chain, trace, trace_star, init_loss, n, n_beta, settings,
                     time.perf_counter() - start, sum(p.numel() for p in params),
                     {"diverged": diverged} if diverged else {})


def _index_device(data: Any) -> torch.device:
    t = data.tokens if isinstance(data, Batch) else data if isinstance(data, torch.Tensor) \
        else data[0]
    return t.device


def task_loss(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
    """Mean cross-entropy over a task batch's scored targets (the task's training loss). The
    chains are a training-like loop of gradient steps, so they use the training step's
    hook-free forward where it supports the model (``models.fast.fast_forward``: the same
    math from the same Parameters; ``TOYMECH_FAST=0`` turns it off)."""
    forward = _forwards.get(id(model))
    if forward is None:
        forward = _fast(model) or model
        _forwards[id(model)] = forward
    return masked_cross_entropy(forward(batch.tokens), batch)


_forwards: dict[int, Callable] = {}


def _fast(model: torch.nn.Module):
    return fast_forward(model) if os.environ.get("TOYMECH_FAST", "1") == "1" else None


def task_llc(model: torch.nn.Module, pool: Batch, settings: SGLDSettings = SGLDSettings(),
             freeze: Sequence[str] = ()) -> LLCResult:
    """λ̂ of a task model on a fixed pool of sequences; n = the pool's scored targets (the
    samples whose mean loss L_n is); ``freeze``: see ``estimate_llc``.

    ``model`` at its current parameters; ``settings``: the ``SGLDSettings`` of the chains."""
    check_module(model)
    check(isinstance(pool, Batch), "pool", type(pool).__name__, "a toymech Batch")
    scored = int(pool.target_mask.sum())
    check(len(pool) >= 1 and scored >= 2, "pool", f"{len(pool)} sequence(s), {scored} scored "
          "target(s)", "a Batch with at least one sequence and 2 scored targets")
    check_tokens(pool.tokens, "pool", vocab_of(model))
    pool = pool.to(next(model.parameters()).device)
    try:
        return estimate_llc(model, task_loss, pool, settings, n=scored,
                            freeze=freeze)
    finally:
        _forwards.clear()  # the chains' model copies are gone


def calibrate(model: torch.nn.Module, loss_fn: LossFn, data: Any, lrs: Sequence[float],
              gammas: Sequence[float], settings: SGLDSettings = SGLDSettings(),
              n: int | None = None) -> pd.DataFrame:
    """One row per (lr, gamma): ``LLCResult.row`` (estimate, spread, the three checks)."""
    check(len(lrs) >= 1 and len(gammas) >= 1, "lrs", list(lrs), "at least one lr and gamma")
    rows = [estimate_llc(model, loss_fn, data, settings.replace(lr=lr, gamma=g), n).row()
            for lr in lrs for g in gammas]
    return pd.DataFrame(rows)


def choose(table: pd.DataFrame) -> dict[str, float] | None:
    """The setting a sweep picks: among healthy rows (finite, no negative chain, flat), the
    smallest localisation γ (it pulls the chains toward w* and shrinks λ̂ most), then the
    smallest step size (least discretisation bias). None when no row is healthy."""
    ok = table[table["healthy"]]
    if ok.empty:
        return None
    row = ok.sort_values(["gamma", "lr"]).iloc[0]
    return {"lr": float(row["lr"]), "gamma": float(row["gamma"])}


def stage_boundaries(steps: Sequence[float], llc: Sequence[float], min_change: float = 0.1
                     ) -> list[float]:
    """Steps where the LLC curve turns, a local maximum or minimum of λ̂ (Hoogland et al.'s
    stage boundaries are where dλ/d log t = 0; turns are the ones 16 snapshots can resolve).

    A zigzag filter: a peak (trough) counts once the curve has come down (up) from it by at
    least ``min_change`` of the curve's range, so wiggles smaller than that are noise, not
    stages. Plateaus without a turn are not reported. Non-finite values and step 0 are
    dropped.

    ``steps``: the snapshot steps; ``llc``: λ̂ at each of them."""
    s, v = np.asarray(steps, float), np.asarray(llc, float)
    check(s.shape == v.shape and s.ndim == 1, "llc", len(v), f"one value per step ({len(s)})")
    check_float("min_change", min_change, 0.0, 1.0, lo_open=True)
    keep = (s > 0) & np.isfinite(v)
    s, v = s[keep], v[keep]
    if len(v) < 3 or float(v.max() - v.min()) == 0:
        return []
    delta = min_change * float(v.max() - v.min())
    turns, direction, ext, lo, hi = [], 0, 0, 0, 0
    for i in range(1, len(v)):
        if direction == 0:  # which way does the curve go first?
            lo = i if v[i] < v[lo] else lo
            hi = i if v[i] > v[hi] else hi
            if v[i] - v[lo] >= delta:
                direction, ext = 1, i
            elif v[hi] - v[i] >= delta:
                direction, ext = -1, i
        elif direction * (v[i] - v[ext]) > 0:  # a new extreme in the current direction
            ext = i
        elif direction * (v[ext] - v[i]) >= delta:  # reversed by delta: ext was a turn
            turns.append(float(s[ext]))
            direction, ext = -direction, i
    return turns


def boundary_table(boundaries: Sequence[float], transitions: pd.DataFrame) -> pd.DataFrame:
    """Each circuit metric's transition step (``dynamics.transitions``: metric, step) beside
    the nearest LLC stage boundary and their distance in decades (|log10 ratio|)."""
    rows = []
    for metric, step in zip(transitions["metric"], transitions["step"]):
        near = (min(boundaries, key=lambda b: abs(math.log10(b) - math.log10(step)))
                if boundaries and step == step and step > 0 else float("nan"))
        dist = (abs(math.log10(near) - math.log10(step)) if near == near else float("nan"))
        rows.append({"metric": metric, "transition step": step, "nearest LLC boundary": near,
                     "decades apart": dist})
    return pd.DataFrame(rows)


@dataclass
class LLCCurve:
    """λ̂ through training: ``curve`` (one ``LLCResult.row`` per snapshot step), ``results``
    {step: LLCResult} (the chains' traces), ``boundaries`` (``stage_boundaries`` of the healthy
    steps) and the settings used."""

    curve: pd.DataFrame
    results: dict[int, LLCResult]
    boundaries: list[float]
    settings: SGLDSettings

    @property
    def half_step(self) -> float:
        """The step at which λ̂ (healthy steps only) is half way from its first to its last
        value (``dynamics.transition_step``, as for the circuit metrics); NaN if it did not
        move: a monotone curve has no turn but still has this."""
        ok = self.curve[self.curve["healthy"]]
        if len(ok) < 2:
            return float("nan")
        step = transition_step(ok["step"].to_numpy(), ok["llc"].to_numpy())
        return float("nan") if step is None else step

    def table(self, transitions: pd.DataFrame) -> pd.DataFrame:
        """``boundary_table`` against the circuits' ``transitions`` (a frame of metric and
        step, ``dynamics.transitions``), with the LLC's own half-way step and each transition's
        distance from it (decades)."""
        out = boundary_table(self.boundaries, transitions)
        half = self.half_step
        out["LLC half-way step"] = half
        out["decades from LLC half-way"] = [
            abs(math.log10(s) - math.log10(half)) if s == s and s > 0 and half == half
            else float("nan") for s in out["transition step"]]
        return out


def llc_through_training(entry: Any, pool: Batch, settings: SGLDSettings,
                         steps: Sequence[int] | None = None, min_change: float = 0.1
                         ) -> LLCCurve:
    """λ̂ at each snapshot ``steps`` of a zoo entry (``entry.model_at``; None: all of them): one
    ``LLCResult.row`` per step (with ``step``), the results (their traces are the convergence
    check), and the stage boundaries of the steps whose checks passed. Only the parameters the
    run trained move (its ``TrainConfig.freeze`` stays at w*).

    ``pool``: the fixed sequences λ̂ is measured on (``task_llc``); ``settings``: the
    ``SGLDSettings``; ``min_change``: as in ``stage_boundaries``."""
    available = list(getattr(entry, "snapshot_steps", []) or [])
    check(len(available) >= 1, "entry", type(entry).__name__, "a zoo entry with snapshots")
    chosen = available if steps is None else list(steps)
    for s in chosen:
        check(s in available, "steps", s, f"snapshot steps of the entry: {available}")
    freeze = tuple(getattr(entry, "meta", {}).get("train", {}).get("freeze", ()))
    results = [task_llc(entry.model_at(s), pool, settings, freeze) for s in chosen]
    curve = pd.DataFrame([{"step": s, **r.row()} for s, r in zip(chosen, results)])
    ok = curve[curve["healthy"]]
    bounds = stage_boundaries(ok["step"].tolist(), ok["llc"].tolist(), min_change)
    return LLCCurve(curve, dict(zip(curve["step"].tolist(), results)), bounds, settings)
