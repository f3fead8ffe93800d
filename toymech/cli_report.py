"""The notebook side of the ``toymech`` command: ``report``, ``lab``, ``results`` and ``ladder``
(their parsers are in ``toymech.cli``), with the ``--param`` / ``--set`` parsing they share with
``train``. Bad input raises ``UsageError``, which ``toymech.cli.main`` prints as one line (exit
code 2). Heavy imports happen inside the commands, so ``toymech --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Sequence

from .cli_zoo import check_cache as _check_cache
from .core import json_nesting

EXIT_OK, EXIT_FAILED = 0, 1
MAX_PARAM_DEPTH = 100  # lists and objects nested deeper in a --param VALUE are refused
_REPO_NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


def _notebook_dir(given: str | None) -> Path:
    """``--dir``, else ./notebooks, else the notebooks/ folder of a source checkout."""
    if given is not None:
        path = Path(given)
        if not path.is_dir():
            raise UsageError(f"notebook folder {given!r} does not exist")
        return path
    for path in (Path("notebooks"), _REPO_NOTEBOOKS):
        if path.is_dir():
            return path
    raise UsageError("no notebooks/ folder here or in the toymech checkout; pass --dir")


def _set_cache(cache: str | None) -> None:
    # Exported, not passed: notebooks executed by papermill run in kernels that inherit it.
    _check_cache(cache)
    env = os.environ.get("TOYMECH_CACHE")
    if cache is None and env is not None and not env.strip():  # == zoo.store.check_cache_env
        raise UsageError(f"TOYMECH_CACHE={env!r} is not allowed: a folder path, or unset (then "
                         "~/.cache/toymech); it is set but empty")
    if cache is not None:
        os.environ["TOYMECH_CACHE"] = str(Path(cache).expanduser().resolve())


def _parse_params(texts: Sequence[str]) -> dict[str, object]:
    """Every ``--param NAME=VALUE``; a NAME given twice is refused (the last would win)."""
    out: dict[str, object] = {}
    for text in texts:
        name, value = _parse_param(text)
        if name in out:
            raise UsageError(f"--param {name}=... given twice is not allowed: one value per "
                             f"parameter ({name}={out[name]!r} and {text!r})")
        out[name] = value
    return out


def _parse_param(text: str) -> tuple[str, object]:
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--param {text!r} is not NAME=VALUE")
    if (depth := json_nesting(raw)) > MAX_PARAM_DEPTH:  # json.loads would recurse that deep
        raise UsageError(f"--param {name}={raw[:20]!r}... is not allowed: JSON nested at most "
                         f"{MAX_PARAM_DEPTH} deep (it nests {depth:,} deep)")
    try:
        value = json.loads(raw)  # numbers, true/false, null, lists; anything else is a string
    except json.JSONDecodeError:
        value = raw
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        raise UsageError(f"--param {name}={raw!r} is not allowed: a finite number, JSON or a string")
    if name in _OWN_OPTIONS:
        raise UsageError(f"--param {name}={raw!r} is not allowed: {name!r} has its own option; "
                         f"pass {_OWN_OPTIONS[name]} instead")
    return name, value


def parse_sets(texts: Sequence[str]) -> dict[str, str]:
    """``--set NAME=VALUE`` options as a variant (knob name -> the value as typed; the study's
    knobs read it: ``4-8``, ``4,6,8``, ``64``, ``true``). A knob given twice is refused."""
    out: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or value.strip() == "":
            raise UsageError(f"--set {text!r} is not KNOB=VALUE (e.g. --set block_len=4-8; "
                             "'toymech list knobs' lists them)")
        if name in out:
            raise UsageError(f"--set {name} is given twice ({out[name]!r} and {value!r}): once each")
        out[name] = value.strip()
    return out


# notebook parameters that `toymech report` sets from its own options (not through --param)
_OWN_OPTIONS = {"size": "--size", "device": "--device", "seed": "--seed", "n_seeds": "--seeds",
                "seeds": "--seeds", "variant": "--set KNOB=VALUE"}


def _cmd_report(args: argparse.Namespace) -> int:
    from toymech.devices import resolve_device
    from toymech.report import LiveProgress, build_reports
    from toymech.report.checks import check_out_dir

    resolve_device(args.device)  # fails fast (exit 2) when e.g. cuda is asked for but absent
    _set_cache(args.cache)
    if args.notebooks:
        notebooks = [Path(p) for p in args.notebooks]
    else:
        folder = _notebook_dir(args.dir)
        notebooks = sorted(folder.glob("*.ipynb"))
        if not notebooks:
            raise UsageError(f"no notebooks in {str(folder)!r}")
    extra = _parse_params(args.param)
    variant = parse_sets(args.set)
    if variant:
        extra["variant"] = variant
    check_out_dir("--out", args.out, [p for p in notebooks if p.is_file()])
    seeds_note = f", seeds {args.n_seeds}" if args.n_seeds is not None else ""
    if variant:
        seeds_note += ", knobs " + ", ".join(f"{k}={v}" for k, v in variant.items())
    # One live line per notebook (redrawn in place on a terminal, printed per section otherwise),
    # under a heading printed once the arguments are checked (bad input stays one line).
    progress = LiveProgress(notebooks, stream=sys.stderr, header=(
        f"{len(notebooks)} notebook(s) at size {args.size}{seeds_note}, device {args.device}, seed "
        f"{args.seed}, {args.jobs} at a time -> {args.out}"))
    entries = build_reports(
        notebooks, out_dir=args.out, size=args.size, device=args.device, seed=args.seed,
        n_seeds=args.n_seeds, code=args.code, extra_parameters=extra, progress=progress, jobs=args.jobs,
        command=shlex.join(["toymech", *sys.argv[1:]]),
    )
    failed = [e for e in entries if not e.ok]
    print(f"{len(entries) - len(failed)} ok, {len(failed)} failed; index: {Path(args.out) / 'index.html'}")
    return EXIT_FAILED if failed else EXIT_OK


def _cmd_lab(args: argparse.Namespace) -> int:
    _check_cache(args.cache)
    folder = _notebook_dir(args.dir).resolve()
    # `python -m jupyterlab` from this interpreter: the default kernel is then this environment.
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}"]
    if args.port is not None:
        command.append(f"--ServerApp.port={args.port}")
    if args.no_browser:
        command.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in args.jupyter_args:
        # Jupyter refuses to start as root, which is how containers and CI machines often run.
        print("toymech: running as root, so JupyterLab gets --allow-root", file=sys.stderr)
        command.append("--allow-root")
    command += args.jupyter_args
    if args.dry_run:
        print(shlex.join(command))
        return EXIT_OK
    _set_cache(args.cache)
    # exec: JupyterLab owns the terminal (Ctrl-C handling, its own exit code).
    os.execv(sys.executable, command)
    return EXIT_FAILED  # not reached


def _cmd_ladder(args: argparse.Namespace) -> int:
    from toymech.studies.random_transformers import ladder

    _set_cache(args.cache)
    given = {k: v for k, v in (("tasks", args.tasks), ("modes", args.modes),
                               ("widths", args.widths), ("seeds", args.seeds)) if v}
    runs = ladder.run(args.cache, backend=args.backend, **given)
    failed = sum(int((r.table["status"] != "ok").sum()) for r in runs)
    print(ladder.ladder_sentence(ladder.ladder_summary(ladder.ladder_table(args.cache))))
    if failed:
        print(f"{failed} rung(s) failed; the tables are in <zoo>/sweeps/{ladder.NAME}-*.csv")
    return EXIT_FAILED if failed else EXIT_OK


def _cmd_results(args: argparse.Namespace) -> int:
    from toymech.report.results import write_results

    if not args.reports and not args.ladder and not args.maps:
        raise UsageError("results needs a report folder, --ladder ZOO or --maps MAP")
    blocks_of = None
    if args.maps:
        from toymech.maps.page import map_blocks

        blocks_of = lambda: map_blocks(args.maps)  # noqa: E731
    keys = write_results(args.reports, args.into, args.ladder, blocks_of=blocks_of)
    print(f"{len(keys)} block(s) written into {args.into}: {', '.join(keys)}")
    return EXIT_OK
