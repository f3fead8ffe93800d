"""The notebook side of the ``toymech`` command: ``report``, ``lab`` and ``results``
(their parsers are in ``toymech.cli.parser``; the ``--param`` / ``--set`` parsing they share
with ``train`` in ``toymech.cli.args``). Bad input raises ``UsageError``, which ``main`` prints
as one line (exit code 2). Heavy imports happen inside the commands, so ``toymech --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from .args import EXIT_FAILED, EXIT_OK, UsageError, check_cache, parse_params, parse_sets

_REPO_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


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
    check_cache(cache)
    env = os.environ.get("TOYMECH_CACHE")
    if cache is None and env is not None and not env.strip():  # == zoo.store.check_cache_env
        raise UsageError(f"TOYMECH_CACHE={env!r} is not allowed: a folder path, or unset (then "
                         "~/.cache/toymech); it is set but empty")
    if cache is not None:
        os.environ["TOYMECH_CACHE"] = str(Path(cache).expanduser().resolve())


def cmd_report(args: argparse.Namespace) -> int:
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
    extra = parse_params(args.param)
    variant = parse_sets(args.set)
    if variant:
        extra["variant"] = variant
    check_out_dir("--out", args.out, [p for p in notebooks if p.is_file()])
    cost = _cost_line(notebooks, args, variant)  # at smoke above its budget: refused
    seeds_note = f", seeds {args.n_seeds}" if args.n_seeds is not None else ""
    if variant:
        seeds_note += ", knobs " + ", ".join(f"{k}={v}" for k, v in variant.items())
    # One live line per notebook (redrawn in place on a terminal, printed per section otherwise),
    # under a heading printed once the arguments are checked (bad input stays one line).
    progress = LiveProgress(notebooks, stream=sys.stderr, header=(
        f"{len(notebooks)} notebook(s) at size {args.size}{seeds_note}, device {args.device}, seed "
        f"{args.seed}, {args.jobs} at a time -> {args.out}" + (f"\n{cost}" if cost else "")))
    entries = build_reports(
        notebooks, out_dir=args.out, size=args.size, device=args.device, seed=args.seed,
        n_seeds=args.n_seeds, code=args.code, extra_parameters=extra, progress=progress, jobs=args.jobs,
        command=shlex.join(["toymech", *sys.argv[1:]]),
    )
    failed = [e for e in entries if not e.ok]
    print(f"{len(entries) - len(failed)} ok, {len(failed)} failed; index: {Path(args.out) / 'index.html'}")
    return EXIT_FAILED if failed else EXIT_OK


def _cost_line(notebooks: list[Path], args: argparse.Namespace, variant: dict) -> str:
    """What the study notebooks' main runs that the zoo lacks cost to train (the study's
    ``experiments`` at the report's setting and seeds, in reference steps and wall time here:
    ``models.reference.training_cost``), said under the heading once every argument is checked;
    at ``smoke`` above its budget a ValueError unless ``--yes``. "" where there is nothing to
    train or a notebook's arguments do not build (its own check names them)."""
    from toymech.models.reference import training_cost
    from toymech.report.checks import read_notebook, study_of
    from toymech.studies import protocol
    from toymech.zoo import Zoo

    zoo, runs = Zoo(None), {}  # the zoo the kernels use ($TOYMECH_CACHE)
    try:
        for path in notebooks:
            name = study_of(path, read_notebook(path)) if path.is_file() else None
            if name is None:
                continue
            study = protocol.study(name)
            setting = study.with_knobs(args.size, variant or None)
            for exp in study.experiments(setting, study.seeds_of(args.size, args.seed,
                                                                 args.n_seeds)):
                if not zoo.has(exp):
                    runs[str(zoo.path(exp))] = exp
    except ValueError:
        return ""  # build_reports refuses these arguments, naming the notebook
    said: list[str] = []
    training_cost(list(runs.values()), args.size, confirmed=args.yes,
                  what="the studies' main runs: ", log=said.append)
    return said[0] if said else ""


def cmd_lab(args: argparse.Namespace) -> int:
    check_cache(args.cache)
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


def cmd_results(args: argparse.Namespace) -> int:
    if args.pages:
        if args.reports:
            raise UsageError("results --pages reads the shipped data; record report folders "
                             "first (toymech results <report folder>), then run --pages alone")
        from toymech.core import check_path_writable_dir
        from toymech.report.pages import write_pages

        check_path_writable_dir("--out", args.out)  # a file, or /proc: one line, nothing built
        written = write_pages(args.data, args.maps, args.out)
        print(f"{len(written)} file(s) written under {args.out} (the results pages, their "
              "finding boxes and figures)")
        return EXIT_OK
    if not args.reports:
        raise UsageError("results needs a report folder (toymech report --out), or --pages")
    from toymech.report.results import write_result_data

    paths = write_result_data(args.reports, args.into)
    print(f"{len(paths)} record(s) written: {', '.join(str(p) for p in paths)}; "
          "then: toymech results --pages")
    return EXIT_OK


def cmd_site_reports(args: argparse.Namespace) -> int:
    from toymech.report.site import copy_reports

    written = copy_reports(args.reports, args.into)
    print(f"{len(written)} report(s) copied into {args.into} without their scripts: "
          f"{', '.join(p.name for p in written)}; then: ./run.sh docs")
    return EXIT_OK
