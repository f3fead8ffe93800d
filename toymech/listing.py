"""The tables of ``toymech list``: tasks, named experiments and the zoo's models, as rows (for
``--json``) and as text lines. A bad zoo entry is one row (status damaged, unverified or newer,
with its problem), never an error: every field is read defensively.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from . import experiments, tasks
from .core import SIZES, check
from .studies import knobs, protocol
from .zoo import Zoo


def task_rows() -> list[dict]:
    """The registered tasks at their defaults: name, parameters, vocabulary size and sequence
    length (a task whose defaults cannot be built says why instead)."""
    rows = []
    for name in tasks.names():
        try:
            task = tasks.get(name)  # its defaults, which are what `list` shows
        except (TypeError, ValueError) as exc:  # a task without defaults for every parameter
            rows.append({"name": name, "parameters": {}, "note": f"needs parameters ({exc})"})
            continue
        params = {f.name: getattr(task, f.name) for f in dataclasses.fields(task) if f.init}
        rows.append({"name": name, "parameters": params, "vocab": task.d_vocab, "seq_len": task.seq_len})
    return rows


def study_rows() -> list[dict]:
    """The registered studies (``toymech.studies.protocol.STUDIES``): name, title, notebook,
    how many claims and named experiments."""
    return [{"name": name, "title": protocol.study(name).title, "notebook": notebook,
             "claims": len(protocol.study(name).claims),
             "experiments": len(protocol.study(name).named_experiments)}
            for name, notebook in protocol.STUDIES.items()]


def knob_rows(study: str | None = None) -> list[dict]:
    """Every knob of ``study`` (None: of every registered study): the study, its name, the
    source's value, the allowed values, the fields it changes and its meaning."""
    names = list(protocol.STUDIES) if study is None else [study]
    for name in names:
        check(name in protocol.STUDIES, "study", name, f"one of {', '.join(protocol.STUDIES)}")
    return [{"study": name, **row} for name in names
            for row in knobs.listing(protocol.study(name).knobs)]


def experiment_rows() -> list[dict]:
    """The named experiments (``toymech.experiments.registry``): name, description, study and
    sizes."""
    return [{"name": n.name, "description": n.description, "study": n.study,
             "sizes": list(SIZES)} for n in experiments.registry().values()]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else repr(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def model_rows(cache: str | None) -> list[dict]:
    """The entries of the zoo at ``cache`` (None: ``$TOYMECH_CACHE``, else
    ``~/.cache/toymech``): name, task, status (a bad entry is a row with its problem), steps and
    final metrics."""
    rows = []
    for meta in Zoo(cache).entries():  # never raises on a bad entry: it comes back as a status
        history = meta.get("history") if isinstance(meta.get("history"), list) else []
        last = history[-1] if history and isinstance(history[-1], dict) else {}
        task = meta.get("task") if isinstance(meta.get("task"), dict) else {}
        train = meta.get("train") if isinstance(meta.get("train"), dict) else {}
        seed = train.get("seed")
        rows.append({"name": _text(meta.get("name")), "task": _text(task.get("name")),
                     "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
                     "path": meta["path"], "device": _text(meta.get("device")),
                     "seconds": _number(meta.get("seconds")), "created": _text(meta.get("created")),
                     "final": final_metrics(last), "status": meta["status"],
                     "problem": meta["problem"]})
    return rows


def quarantined_rows(cache: str | None) -> list[dict]:
    """The folders kept in ``<zoo>/.quarantine`` of the zoo at ``cache`` (damaged, unverified or
    replaced entries, moved aside, never served): name and path, with the reason where one was
    written."""
    rows = []
    for path in Zoo(cache).quarantined():
        try:
            reason = (path / "QUARANTINED.txt").read_text(errors="replace").strip()[:200]
        except OSError:
            reason = ""
        rows.append({"name": path.name, "path": str(path), "reason": reason})
    return rows


def final_metrics(row: dict) -> dict:
    """The numbers of a history ``row`` worth a line: step, train loss, and the held-out
    metrics (eval_*)."""
    keys = ["step", "train_loss"] + [k for k in row if isinstance(k, str) and k.startswith("eval_")]
    return {k: row[k] for k in keys if k in row}


def fmt_metrics(final: dict) -> str:
    """The metrics ``final`` as one line: ``step=2000 train_loss=1.71 ...``."""
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in final.items())


def _short(value: object, width: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


_MARKS = {"damaged": ("DAMAGED", "'toymech zoo verify --fix' moves it aside"),
          "unverified": ("UNVERIFIED", "not served"),
          "newer": ("NEWER", "left alone")}


def lines(data: dict[str, list[dict]], where: Path) -> list[str]:
    """The text of ``toymech list`` for ``data`` (tasks, experiments and/or models), naming
    the zoo folder ``where``."""
    out = []
    if "tasks" in data:
        out.append("tasks:")
        for r in data["tasks"]:
            params = ", ".join(f"{k}={_short(v)}" for k, v in r["parameters"].items()) or r.get("note", "")
            out.append(f"  {r['name']:<24} {params}")
    if "studies" in data:
        out.append("studies:")
        out += [f"  {r['name']:<24} {r['title']} ({r['claims']} claims; {r['notebook']})"
                for r in data["studies"]]
    if "knobs" in data:
        out.append("knobs (toymech report/train --set KNOB=VALUE; a notebook's variant):")
        study = None
        for r in data["knobs"]:
            if r["study"] != study:
                study = r["study"]
                out.append(f"  {study}:")
            out.append(f"    {r['knob']:<14} {r['source']:<20} {r['meaning']}")
            out.append(f"    {'':<14} {'':<20} allowed: {r['allowed']}; changes {r['changes']}")
    if "experiments" in data:
        out.append(f"experiments (sizes: {', '.join(SIZES)}):")
        out += [f"  {r['name']:<32} {r['description']}" for r in data["experiments"]]
    if "models" in data:
        out.append(f"cached models in {where}:" + ("" if data["models"] else " none"))
        for r in data["models"]:
            name = Path(r["path"]).name
            if r["status"] in _MARKS:
                mark, hint = _MARKS[r["status"]]
                out.append(f"  {mark:<32} {name}: {r['problem']} ({hint})")
                continue
            seconds = r["seconds"] if r["seconds"] is not None else 0.0
            seed = f"seed {r['seed']}" if r.get("seed") is not None else "seed not recorded"
            out.append(f"  {r['name'] or r['task']:<32} {seed}  {fmt_metrics(r['final'])}  "
                       f"[{r['device']}, {seconds:.0f} s, {r['created']}] {name}")
    kept = data.get("quarantined")
    if kept:
        out.append(f"  {len(kept)} quarantined entr{'y' if len(kept) == 1 else 'ies'} kept in "
                   f"{where / '.quarantine'} (not served; moved aside as damaged, unverified or "
                   "replaced)")
    return out
