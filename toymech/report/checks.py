"""What ``build_reports`` checks before any kernel starts, and the lock of a reports folder.

* the arguments (size, device, seeds, extra parameters) and every notebook: a readable Jupyter
  notebook (a file that is ``{}`` or empty is named, never a schema traceback) whose cell tagged
  ``parameters`` assigns every parameter the run passes (``parameters_cell``, ``with_seeds``);
* the reports folder: one that can be created, not a folder of source notebooks nor one holding
  pages toymech did not write (an ``index.html`` or ``.html`` page its ``index.json`` does not
  list), and no input notebook inside its ``executed/`` (the run replaces what is there);
* a study's notebook (``study_of``: the study it imports, else its file name in
  ``protocol.STUDIES``): the parameters it will get go through the study's own ``validate``
  (under ``params.checks_only``), so a bad ``also``, ``n_seeds`` or ``cache_dir`` is refused
  here with the line the notebook would print, not after its kernel started; so is its
  ``variant`` (the study's ``with_knobs``: every knob, value and combination);
* ``folder_lock``: one report run at a time writes into a folder (``zoo.locks``); a
  second waits for the first, saying so, rather than both writing the same pages.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core import Setting, check, check_int, check_path_writable_dir, check_seed, check_size
from ..devices import resolve_device
from ..studies import params as study_params
from ..studies import protocol
from ..zoo.locks import EntryLock
from .costs import toymech_costs
from .index import MARKER, written_by_toymech
from .staging import STAGING

# The notebooks' name for "how many seeds" (``build_reports(n_seeds=...)``): the first of these
# that a notebook's parameters cell assigns.
SEEDS_PARAMETERS = ("n_seeds",)  # the count of seeds; ``seeds`` is never a count (glossary)
SET_BY_ARGUMENT = ("size", "device", "seed", *SEEDS_PARAMETERS)
LOCK_NAME = "toymech-report"  # <out>/.toymech-report.lock


@contextlib.contextmanager
def quiet_papermill():
    """Papermill's parser logs "Unable to parse line" for assignments with unusual comments (the
    values are still injected); its other warnings concern parameters, checked here already."""
    logger = logging.getLogger("papermill")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def parameters_cell(path: Path, names: Sequence[str]) -> dict[str, str]:
    """The notebook's parameters and their default values (source text). Every name in ``names``
    must be assigned in its cell tagged ``parameters``: papermill only warns about unknown
    parameters, and without a tagged cell it injects at the top, where the notebook's own
    assignment silently overwrites the value."""
    import papermill

    with quiet_papermill():
        defined = {n: str(p.get("default", "")) for n, p in papermill.inspect_notebook(str(path)).items()}
    if any(name not in defined for name in names):
        # Fall back to the tagged cell's plain assignments (papermill skips some lines, see above).
        import nbformat

        cells = nbformat.read(str(path), as_version=4).cells
        source = "\n".join(c.source for c in cells if "parameters" in c.metadata.get("tags", []))
        found = re.findall(r"^(\w+)\s*(?::[^=]*)?=\s*(.*?)\s*(?:#.*)?$", source, re.M)
        defined = {**{n: v for n, v in found}, **defined}
    missing = [name for name in names if name not in defined]
    if missing:
        where = ", ".join(defined) if defined else "no cell tagged 'parameters'"
        raise ValueError(
            f"notebook {str(path)!r} does not define parameter(s) {', '.join(missing)} in its cell "
            f"tagged 'parameters' (it defines: {where})"
        )
    return defined


def with_seeds(path: Path, common: dict, defined: dict, n_seeds: int | None) -> dict:
    """The parameters of one notebook: ``common`` plus, with ``n_seeds``, its seeds parameter."""
    if n_seeds is None:
        return dict(common)
    name = next((n for n in SEEDS_PARAMETERS if n in defined), None)
    if name is None:
        raise ValueError(f"notebook {str(path)!r} does not define parameter(s) {' or '.join(SEEDS_PARAMETERS)} "
                         f"in its cell tagged 'parameters' (it defines: {', '.join(defined)}), so "
                         f"n_seeds={n_seeds} cannot reach it")
    return {**common, name: int(n_seeds)}


def check_arguments(notebooks, size, device, seed, n_seeds, extra_parameters) -> list[Path]:
    """The arguments every notebook gets, and the notebooks (readable, distinct names)."""
    check_size(size)
    resolve_device(device)  # the one device validator: a known name, and available here
    check_seed(seed)
    if n_seeds is not None:
        check_int("n_seeds", n_seeds, 1, protocol.MAX_SEEDS)  # == the CLI's --seeds
    for name in extra_parameters:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"extra parameter name {name!r} is not a Python identifier")
        if name in SET_BY_ARGUMENT:
            raise ValueError(f"extra parameter {name!r} is set by its own argument; pass {name}=... instead")
        value = extra_parameters[name]
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name}={value!r} is not allowed: a finite number")
        if name == "cache_dir" and value is not None:  # the notebooks' model zoo
            check_path_writable_dir("cache_dir", value)
    if isinstance(notebooks, (str, Path)):
        notebooks = [notebooks]
    paths = [Path(nb) for nb in notebooks]
    if not paths:
        raise ValueError("notebooks is empty; expected at least one .ipynb path")
    stems: dict[str, Path] = {}
    for path in paths:
        if path.suffix != ".ipynb":
            raise ValueError(f"notebook {str(path)!r} is not allowed; expected a .ipynb file")
        if not path.is_file():
            raise ValueError(f"notebook {str(path)!r} does not exist")
        read_notebook(path)
        if path.stem in stems:
            raise ValueError(f"notebooks {str(stems[path.stem])!r} and {str(path)!r} would write the same report name")
        stems[path.stem] = path
    return paths


def read_notebook(path: Path):
    """The notebook at ``path`` (nbformat 4); anything else is one line naming the file."""
    import nbformat

    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as exc:
        why = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise ValueError(f"notebook={str(path)!r} is not allowed: a Jupyter notebook (.ipynb JSON "
                         f"with cells and metadata); reading it gives {type(exc).__name__}: {why}"
                         ) from None


def check_out_dir(name: str, out_dir: Any, notebooks: list[Path],
                  reports: Sequence[str] | None = None) -> Path:
    """A reports folder that can be written, holding no source notebooks, no input notebook
    inside its ``executed/`` (whose files each run replaces) and no file toymech did not write
    where a report of ``notebooks`` goes. ``name``: the argument named in the error;
    ``out_dir``: the folder; ``reports``: each notebook's report name (``report_name``; None:
    the notebooks' stems)."""
    reports = [p.stem for p in notebooks] if reports is None else list(reports)
    out = check_path_writable_dir(name, out_dir)
    # An input notebook inside executed/ first: the most specific reason (and its remedy).
    executed = out.resolve() / "executed"
    for path in notebooks:
        inside = path.resolve().is_relative_to(executed)
        check(not inside, "notebook", str(path), f"a notebook outside {executed} (the run writes "
              "its executed notebooks there, replacing this one); copy it elsewhere first")
    if out.is_dir():
        sources = sorted(p.name for p in out.glob("*.ipynb"))
        check(not sources, name, str(out_dir), f"a reports folder, not one holding source "
              f"notebooks ({', '.join(sources[:3])}): the reports and executed/ would be written "
              "among them; pass another folder")
        index = out / "index.json"
        check(not os.path.lexists(index) or toymech_rows(out) is not None, name, str(out_dir),
              "a reports folder, not one holding an index.json toymech did not write (it would "
              "be replaced); move it, or pass another folder")
        check(toymech_costs(out), name, str(out_dir), "a reports folder, not one holding a "
              "costs.json toymech did not write (each run records its cell times there, "
              "replacing it); move it, or pass another folder")
        check(_toymech_marker(out), name, str(out_dir), f"a reports folder, not one holding a "
              f"{MARKER} toymech did not write (toymech records the files it writes there, "
              "replacing it); move it, or pass another folder")
        for folder in ("executed", STAGING):  # folders the run writes into
            check(not os.path.lexists(out / folder) or ((out / folder).is_dir()
                                                         and not (out / folder).is_symlink()),
                  name, str(out_dir), f"a reports folder, not one holding a {folder} that is not "
                  "a folder (the run writes its files into it); move it, or pass another folder")
        ours = toymech_pages(out)
        for report in reports:  # the files this run writes for each notebook
            for mine in (f"{report}.html", f"executed/{report}.ipynb"):
                check(not os.path.lexists(out / mine) or Path(mine).name in ours
                      or f"{report}.html" in ours, name, str(out_dir),
                      f"a reports folder, not one holding a {mine} toymech did not write (the "
                      "run would replace it); move it, or pass another folder")
        pages = sorted(p.name for p in out.glob("*.html") if p.name not in ours)
        check(not pages, name, str(out_dir), f"a reports folder, not one holding pages toymech "
              f"did not write ({', '.join(pages[:3])}): the reports and index.html would be "
              "written over them; pass another folder")
    return out


def toymech_rows(out: Path) -> list[dict] | None:
    """The rows of ``out``'s ``index.json`` when toymech wrote it (None otherwise): recorded
    with its sha256 in the folder's marker (``index.MARKER``), or, written before the marker,
    a list of index rows (each with a notebook, page, executed notebook and status)."""
    path = out / "index.json"
    try:
        raw = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        rows = json.loads(raw) if raw is not None else None
    except (OSError, ValueError, RecursionError):
        return None
    recorded = written_by_toymech(out).get("index.json")
    if recorded is not None:
        return rows if hashlib.sha256(raw).hexdigest() == recorded and isinstance(rows, list) \
            else None
    fields = {"notebook", "html", "executed", "status"}
    if isinstance(rows, list) and all(isinstance(r, dict) and fields <= set(r) for r in rows):
        return rows
    return None


def _toymech_marker(out: Path) -> bool:
    """Whether ``out``'s marker is absent or the record toymech keeps ({file name: sha256})."""
    path = out / MARKER
    if not os.path.lexists(path):
        return True
    try:
        data = json.loads(path.read_bytes()) if path.is_file() and not path.is_symlink() else None
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and all(
        isinstance(k, str) and isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v)
        for k, v in data.items())


def toymech_pages(out: Path) -> set[str]:
    """The pages of ``out`` that toymech wrote: those its ``index.json`` lists, and
    ``index.html`` beside it (none without an index.json toymech wrote, ``toymech_rows``)."""
    rows = toymech_rows(out)
    if rows is None:
        return set()
    return {"index.html"} | {r["html"] for r in rows if isinstance(r, dict) and isinstance(r.get("html"), str)}


def study_of(path: Path, nb) -> str | None:
    """The registered study a notebook shows: the one study package its code imports, else the
    study whose notebook has its file name; None for other notebooks."""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    found = {m for m in re.findall(r"toymech\.studies(?:\s+import\s+|\.)(\w+)", code)
             if m in protocol.STUDIES}
    if len(found) == 1:
        return found.pop()
    return next((s for s, p in protocol.STUDIES.items() if Path(p).name == path.name), None)


def check_study_parameters(path: Path, parameters: dict[str, Any]) -> None:
    """The parameters a study's notebook gets through the study's ``validate``; its ValueError
    (the line the notebook would print) names the notebook."""
    name = study_of(path, read_notebook(path))
    if name is None:
        return
    study = protocol.study(name)
    validate = study.validate
    accepted = study.notebook_options
    options = {k: v for k, v in parameters.items() if k in accepted}
    try:
        with study_params.checks_only():
            validate(parameters["size"], parameters["seed"], parameters["device"], **options)
        if parameters.get("variant"):  # every knob, value and combination, before any kernel
            study.with_knobs(parameters["size"], parameters["variant"])
    except ValueError as exc:
        raise ValueError(f"{path.name}: {' '.join(str(exc).split())}") from None


VARIANT_MARK = "@"  # <stem>@<knob>=<value>,...: a variant's report beside the plain one
_NAME_MOST = 150  # longer variant names become the notebook's stem and a hash of the knobs


def report_name(path: Path, size: Any, variant: Any = None) -> str:
    """The name of notebook ``path``'s report in a reports folder (its page ``<name>.html``, its
    executed notebook ``executed/<name>.ipynb``): the notebook's stem, and for a variant the
    knobs it changes, in the order and form of the setting's canonical key (the study's
    ``with_knobs(size, variant)``; ``01_induction_repeated_blocks@block_len=4-8,offset=0-3``),
    so a variant's report never replaces the plain report of its notebook, nor another
    variant's. A variant at the source's values is the plain setting and has the plain name.
    ``size``: the run's size name; ``variant``: None or a mapping of knob names to values (a
    notebook of no registered study: the values as given)."""
    if not variant:
        return path.stem
    pairs = [(str(k), str(v)) for k, v in canonical_variant([path], size, variant).items()]
    if not pairs:
        return path.stem
    text = ",".join(f"{k}={v.replace(', ', '+')}" for k, v in pairs)
    text = re.sub(r"[^A-Za-z0-9_.+=,-]", "_", text)
    if len(text) > _NAME_MOST:
        text = hashlib.sha256(json.dumps(pairs).encode()).hexdigest()[:12]
    return f"{path.stem}{VARIANT_MARK}{text}"


def canonical_variant(paths: Sequence[Path], size: Any, variant: Any) -> dict:
    """``variant`` (None, or a mapping of knob names to values) as the study behind the
    notebooks ``paths`` keys it: its ``with_knobs(size, variant).variant()``, only the knobs
    that change a run, each value in its one text form, so ``block_len=4-8`` and
    ``block_len=[4, 5, 6, 7, 8]`` are one variant and the source's values none ({}). Notebooks
    of no registered study: the knobs as given, sorted by name. ValueError for a knob, value
    or combination the study refuses."""
    if not variant:
        return {}
    for path in paths:
        name = study_of(path, read_notebook(path))
        if name is not None:
            return protocol.study(name).with_knobs(size, variant).variant()
    return dict(sorted(dict(variant).items()))


def study_n_seeds(path: Path, size: Setting | str) -> int | None:
    """How many seeds the study behind notebook ``path`` runs at ``size`` (a size name or a
    ``Setting``) by default (its ``SIZES[size].n_seeds``); None for a notebook of no registered
    study."""
    name = study_of(path, read_notebook(path))
    if name is None:
        return None
    return protocol.study(name).size(size).n_seeds


def folder_lock(out: Path, log=None) -> EntryLock:
    """The claim of one report run on ``out`` (``with folder_lock(out): ...``): a second run
    into the same folder waits for it (``TOYMECH_LOCK_TIMEOUT`` at most), saying who holds it."""
    return EntryLock(out, LOCK_NAME, log, what=f"reports folder {out}", where="reports folder")
