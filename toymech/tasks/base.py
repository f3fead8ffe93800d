"""The Task protocol, the Batch it returns, and a registry of tasks by name.

A task is a frozen dataclass whose fields are its parameters (validated in ``__post_init__``),
with a vocabulary of readable token strings, a sequence length, and a vectorised
``sample(batch_size, generator)`` that draws randomness ONLY from the given ``torch.Generator``
(TransformerLens reseeds the global generators whenever a model is built, so global state is
never safe for data).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

# Re-exported for task modules (they import only from .base).
from ..core import (  # noqa: F401
    check,
    check_bool,
    check_float,
    check_int,
    check_seed,
    check_str,
    dataclass_from_dict,
    is_int,
    set_checked,
)


@dataclass(frozen=True)
class Batch:
    """A batch of sequences and the targets that are scored.

    ``tokens``: [batch, seq] int64. ``scored``: [batch, seq] bool; ``scored[b, t]`` means token t
    is a scored target, predicted from ``tokens[b, :t]`` (so column 0 is always False); the
    next-token loss at position t-1 counts only where ``scored[b, t]``. ``extras``:
    task-specific tensors (labels, target distributions, ...), same batch dimension.
    """

    tokens: torch.Tensor
    scored: torch.Tensor
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tokens.ndim != 2:
            raise ValueError(f"tokens must be [batch, seq], got shape {tuple(self.tokens.shape)}")
        if self.scored.shape != self.tokens.shape:
            raise ValueError(
                f"scored must have the shape of tokens {tuple(self.tokens.shape)}, "
                f"got {tuple(self.scored.shape)}"
            )
        if self.scored[:, 0].any():
            raise ValueError("scored[:, 0] must be False: the first token has no prefix")

    @property
    def target_mask(self) -> torch.Tensor:
        """[batch, seq-1] bool aligned with ``logits[:, :-1]`` predicting ``tokens[:, 1:]``."""
        return self.scored[:, 1:]

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on ``device`` (tokens, scored mask and extras)."""
        return Batch(
            self.tokens.to(device),
            self.scored.to(device),
            {k: v.to(device) for k, v in self.extras.items()},
        )

    def __len__(self) -> int:
        return self.tokens.shape[0]


class Task:
    """Base class of every task. Subclasses are frozen dataclasses and set ``name``.

    ``version``: raised by a task when what its samples or its logged evaluation mean changes
    (so zoo entries made before do not pass for new ones); ``to_dict`` carries it when above 1,
    so the keys of tasks that never changed stay what they were.
    """

    name: ClassVar[str] = "task"
    version: ClassVar[int] = 1

    # --- to be provided by subclasses -------------------------------------------------------
    @property
    def vocab(self) -> list[str]:
        """The readable string of each token id (``vocab[i]`` for id ``i``)."""
        raise NotImplementedError

    @property
    def seq_len(self) -> int:
        """The length of every sequence ``sample`` draws."""
        raise NotImplementedError

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """``batch_size`` fresh sequences, drawn only from ``generator`` (so a seeded generator
        gives the same batch), never one of the task's held-out split."""
        raise NotImplementedError

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """Named evaluation sets of about ``n`` sequences each, drawn from ``generator``;
        ``test`` is the training distribution (held out where the task has a split)."""
        return {"test": self.sample(n, generator)}

    def held_out(self, n: int, generator: torch.Generator) -> Batch | None:
        """About ``n`` examples that training never draws (the task's held-out split, drawn from
        ``generator``), or None
        when the task has no split (then every sample is as new as any other). The training
        loop logs its ``eval_*`` on these where they exist."""
        return None

    def loss(self, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The training objective of ``logits`` [batch, seq, vocab] on ``batch`` (default:
        cross-entropy on the scored targets)."""
        return masked_cross_entropy(logits, batch)

    def metrics(self, logits: torch.Tensor, batch: Batch) -> dict[str, float]:
        """Evaluation numbers of ``logits`` on one ``batch`` (default: loss and accuracy on the
        scored targets)."""
        return {"loss": float(self.loss(logits, batch)),
                "acc": float(masked_accuracy(logits, batch))}

    # --- shared helpers ---------------------------------------------------------------------
    @property
    def d_vocab(self) -> int:
        """The vocabulary's size."""
        return len(self.vocab)

    def decode(self, tokens: torch.Tensor | list[int], sep: str = "") -> str:
        """``tokens`` (ids) -> a readable string, the tokens' strings joined by ``sep``."""
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        return sep.join(self.vocab[i] for i in ids)

    def str_tokens(self, tokens: torch.Tensor | list[int]) -> list[str]:
        """``tokens`` (ids) -> their readable strings, one per token."""
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        return [self.vocab[i] for i in ids]

    def to_dict(self) -> dict[str, Any]:
        """The task as JSON-ready data: its name, parameters and (above 1) version;
        ``toymech.tasks.from_dict`` reads it back."""
        d = {"name": self.name, **dataclasses.asdict(self)}  # type: ignore[call-overload]
        return {**d, "version": self.version} if self.version > 1 else d

    @staticmethod
    def check_batch_size(batch_size: int) -> None:
        """``ValueError`` unless ``batch_size`` is an integer in 1..10^6."""
        check_int("batch_size", batch_size, 1, 10**6)


_REGISTRY: dict[str, Callable[..., Task]] = {}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make a task constructible as ``toymech.tasks.get(name, **params)``."""

    def deco(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"task {name!r} is registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def names() -> list[str]:
    """The registered task names, sorted (``toymech list tasks``)."""
    return sorted(_REGISTRY)


def module_of(name: str) -> str | None:
    """The module that registered the task ``name`` (None: no such task)."""
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    return None if cls is None else cls.__module__


def version_of(name: str) -> int | None:
    """The version of the registered task ``name`` in this toymech (None: no such task)."""
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    return None if cls is None else int(getattr(cls, "version", 1))


def get(name: str, **params: Any) -> Task:
    """Build the registered task ``name`` with ``params`` (its dataclass fields), e.g.
    ``get("repeated_blocks", block_len=6)``; unknown names and parameters raise ``ValueError``."""
    check(isinstance(name, str) and name in _REGISTRY, "task", name,
          f"one of {', '.join(names())}")
    cls = _REGISTRY[name]
    if dataclasses.is_dataclass(cls):
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(
                f"task {name!r} has no parameter {unknown[0]!r}: its parameters are "
                f"{', '.join(sorted(known)) or '(none)'}"
            )
    return cls(**params)


def from_dict(d: dict[str, Any]) -> Task:
    """The task ``Task.to_dict`` wrote (``d``); ``ValueError`` for an unknown name or a bad
    parameter."""
    check(isinstance(d, dict), "task config", type(d).__name__,
          "a JSON object (dict) with a name and the task's parameters")
    d = dict(d)
    name = d.pop("name", None)
    if name is None:
        raise ValueError("a task dict needs a 'name' entry")
    given = "version" in d
    version = d.pop("version", 1)  # absent: a hand-written dict, or saved before any change
    task = get(name, **d)
    check(is_int(version) and 1 <= version <= task.version, "task version", version,
          f"at most {task.version}, the version of {name!r} in this toymech (a newer one saved it)")
    # An older version asked for by name is another task (its data or logged evaluation
    # differ): never trained or served as this one.
    check(not given or version == task.version, "task version", version,
          f"{task.version}, the version of {name!r} in this toymech (version {version} drew other "
          "data or logged another evaluation, which this toymech no longer makes)")
    return task


def masked_cross_entropy(logits: torch.Tensor, batch: Batch, reduction: str = "mean") -> torch.Tensor:
    """Next-token cross-entropy (nats) over the scored targets only.

    logits: [batch, seq, d_vocab]. ``reduction="none"`` gives [batch, seq-1] with unscored
    targets set to NaN (so per-position means can ignore them).
    """
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, batch.tokens[:, 1:, None])[..., 0]
    mask = batch.target_mask
    if reduction == "none":
        return nll.masked_fill(~mask, float("nan"))
    return (nll * mask).sum() / mask.sum().clamp(min=1)


def masked_accuracy(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Fraction of ``batch``'s scored targets whose argmax prediction in ``logits`` is right."""
    hit = (logits[:, :-1].argmax(-1) == batch.tokens[:, 1:]) & batch.target_mask
    return hit.sum() / batch.target_mask.sum().clamp(min=1)
