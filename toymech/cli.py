"""The ``toymech`` command: ``train``, ``sweep``, ``list``, ``report`` and ``lab``.

Exit codes scripts can rely on: 0 success; 1 a run failed (a notebook or a training run);
2 bad input (unknown experiment, missing file, bad option), reported as ONE line on stderr
(``TOYMECH_DEBUG=1`` shows the traceback instead); 130 interrupted. Heavy imports (torch, transformer-lens, papermill) happen inside the
subcommands so that ``toymech --help`` answers at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Sequence

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
SIZES = ("smoke", "default", "paper")  # == toymech.core.SIZES, repeated to keep --help fast
_REPO_NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the whole usage block before its error; scripts and people want one line.
    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")


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


def _check_cache(cache: str | None) -> None:
    # Before any work: a zoo that cannot be written would otherwise fail after training.
    if cache is not None:
        from toymech.core import check_path_writable_dir

        check_path_writable_dir("--cache", cache)


def _set_cache(cache: str | None) -> None:
    # Exported, not passed: notebooks executed by papermill run in kernels that inherit it.
    _check_cache(cache)
    if cache is not None:
        os.environ["TOYMECH_CACHE"] = str(Path(cache).expanduser().resolve())


def _parse_param(text: str) -> tuple[str, object]:
    name, sep, raw = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError(f"--param {text!r} is not NAME=VALUE")
    try:
        value = json.loads(raw)  # numbers, true/false, null, lists; anything else is a string
    except json.JSONDecodeError:
        value = raw
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        raise UsageError(f"--param {name}={raw!r} is not allowed: a finite number, JSON or a string")
    return name, value


# --------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------


def _cmd_report(args: argparse.Namespace) -> int:
    from toymech.core import check_path_writable_dir
    from toymech.devices import resolve_device
    from toymech.report import LiveProgress, build_reports

    resolve_device(args.device)  # fails fast (exit 2) when e.g. cuda is asked for but absent
    check_path_writable_dir("--out", args.out)
    _set_cache(args.cache)
    if args.notebooks:
        notebooks = [Path(p) for p in args.notebooks]
    else:
        folder = _notebook_dir(args.dir)
        notebooks = sorted(folder.glob("*.ipynb"))
        if not notebooks:
            raise UsageError(f"no notebooks in {str(folder)!r}")
    extra = dict(_parse_param(p) for p in args.param)
    seeds = f", seeds {args.seeds}" if args.seeds is not None else ""
    # One live line per notebook (redrawn in place on a terminal, printed per section otherwise),
    # under a heading printed once the arguments are checked (bad input stays one line).
    progress = LiveProgress(notebooks, stream=sys.stderr, header=(
        f"{len(notebooks)} notebook(s) at size {args.size}{seeds}, device {args.device}, seed "
        f"{args.seed}, {args.jobs} at a time -> {args.out}"))
    entries = build_reports(
        notebooks, out_dir=args.out, size=args.size, device=args.device, seed=args.seed,
        seeds=args.seeds, code=args.code, extra_parameters=extra, progress=progress, jobs=args.jobs,
    )
    failed = [e for e in entries if not e.ok]
    print(f"{len(entries) - len(failed)} ok, {len(failed)} failed; index: {Path(args.out) / 'index.html'}")
    return EXIT_FAILED if failed else EXIT_OK


# --------------------------------------------------------------------------------------------
# lab
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------


def _task_rows() -> list[dict]:
    import dataclasses

    from toymech import tasks

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


def _experiment_rows() -> list[dict]:
    from toymech import experiments

    return [{"name": n.name, "description": n.description, "study": n.study,
             "sizes": list(experiments.SIZES)} for n in experiments.registry().values()]


def _model_rows(cache: str | None) -> list[dict]:
    from toymech.training import Zoo

    rows = []
    for meta in Zoo(cache).entries():  # never raises on a bad entry: it comes back as damaged
        history = meta.get("history") if isinstance(meta.get("history"), list) else None
        last = history[-1] if history else {}
        task = meta.get("task") if isinstance(meta.get("task"), dict) else {}
        rows.append({"name": meta.get("name") or "", "task": task.get("name", ""),
                     "path": meta["path"], "device": meta.get("device"), "seconds": meta.get("seconds"),
                     "created": meta.get("created"),
                     "final": _final_metrics(last) if isinstance(last, dict) else {},
                     "status": meta["status"], "problem": meta["problem"]})
    return rows


def _final_metrics(row: dict) -> dict:
    """The numbers worth a line: step, train loss, and the held-out metrics (eval_*)."""
    keys = ["step", "train_loss"] + [k for k in row if k.startswith("eval_")]
    return {k: row[k] for k in keys if k in row}


def _fmt_metrics(final: dict) -> str:
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in final.items())


def _short(value: object, width: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _cmd_list(args: argparse.Namespace) -> int:
    from toymech.training import default_cache_dir

    what = [args.what] if args.what != "all" else ["tasks", "experiments", "models"]
    data = {}
    if "tasks" in what:
        data["tasks"] = _task_rows()
    if "experiments" in what:
        data["experiments"] = _experiment_rows()
    if "models" in what:
        data["models"] = _model_rows(args.cache)
    if args.json:
        print(json.dumps(data, indent=1, default=str))
        return EXIT_OK
    if "tasks" in data:
        print("tasks:")
        for row in data["tasks"]:
            params = ", ".join(f"{k}={_short(v)}" for k, v in row["parameters"].items()) or row.get("note", "")
            print(f"  {row['name']:<24} {params}")
    if "experiments" in data:
        print(f"experiments (sizes: {', '.join(SIZES)}):")
        for row in data["experiments"]:
            print(f"  {row['name']:<32} {row['description']}")
    if "models" in data:
        where = Path(args.cache).expanduser() if args.cache else default_cache_dir()
        print(f"cached models in {where}:" + ("" if data["models"] else " none"))
        for row in data["models"]:
            if row["status"] == "damaged":
                print(f"  {'DAMAGED':<32} {Path(row['path']).name}: {row['problem']} "
                      "('toymech zoo verify --fix' moves it aside)")
                continue
            label = row["name"] or row["task"]
            seconds = row["seconds"] if isinstance(row["seconds"], (int, float)) else 0
            mark = "" if row["status"] == "ok" else " (unverified: saved by an older toymech)"
            print(f"  {label:<32} {_fmt_metrics(row['final'])}  [{row['device']}, "
                  f"{seconds:.0f} s, {row['created']}] {Path(row['path']).name}{mark}")
    return EXIT_OK


def _cmd_zoo_verify(args: argparse.Namespace) -> int:
    from toymech.training import Zoo

    zoo = Zoo(args.cache)
    rows = zoo.verify(fix=args.fix)
    for row in rows:
        name = Path(row["path"]).name
        if row["status"] == "damaged":
            where = f"; moved to {row['quarantined']}" if row.get("quarantined") else ""
            print(f"DAMAGED     {name}: {row['problem']}{where}")
        else:
            print(f"{row['status']:<11} {name}")
    damaged = sum(r["status"] == "damaged" for r in rows)
    unverified = sum(r["status"] == "unverified" for r in rows)
    print(f"{len(rows) - damaged - unverified} ok, {unverified} unverified (older toymech), "
          f"{damaged} damaged in {zoo.root}"
          + ("" if not damaged or args.fix else "; 'toymech zoo verify --fix' moves them aside"),
          file=sys.stderr)
    return EXIT_FAILED if damaged else EXIT_OK


# --------------------------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------------------------


def _load_experiment(args: argparse.Namespace):
    from toymech import experiments
    from toymech.training import Experiment

    if (args.experiment is None) == (args.config is None):
        raise UsageError("give an experiment name or --config FILE (one of them); 'toymech list experiments' shows the names")
    if args.config is not None:
        try:
            spec = json.loads(Path(args.config).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot read --config {args.config!r}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UsageError(f"--config {args.config!r} is not allowed: a UTF-8 JSON file") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"--config {args.config!r} is not valid JSON: line {exc.lineno}, "
                             f"column {exc.colno}: {exc.msg}") from None
        if not isinstance(spec, dict):
            raise UsageError(f"--config {args.config!r} must hold a JSON object with task, model and train")
        name = spec.get("name", "")
        if not isinstance(name, str):
            raise UsageError(f"name={name!r} in --config {args.config!r} is not allowed: a string")
        experiment = Experiment.from_dict(spec)
    else:
        experiment = experiments.get(args.experiment, size=args.size, seed=args.seed)
    if args.steps is not None:
        train = experiment.train
        experiment.train = train.replace(steps=args.steps, eval_every=min(train.eval_every, args.steps),
                                         warmup_steps=min(train.warmup_steps, args.steps - 1))
    return experiment


def _cmd_train(args: argparse.Namespace) -> int:
    from toymech.training import Zoo

    _check_cache(args.cache)
    if args.dump_config and args.dump_config != "-":
        from toymech.core import check_path_writable_file

        check_path_writable_file("--dump-config", args.dump_config)
    experiment = _load_experiment(args)
    if args.dump_config:
        text = json.dumps(experiment.to_dict(), indent=1)
        if args.dump_config == "-":
            print(text)
        else:
            Path(args.dump_config).write_text(text + "\n", encoding="utf-8")
            print(f"wrote {args.dump_config}", file=sys.stderr)
        return EXIT_OK
    from toymech.devices import apply_threads, resolve_device

    resolve_device(args.device)
    zoo = Zoo(args.cache)
    log = (lambda line: print(line, file=sys.stderr)) if not args.quiet else None
    apply_threads(args.threads, log=log)  # explicit, $TOYMECH_THREADS, else the free cores
    entry = zoo.get_or_train(experiment, device=args.device, retrain=args.retrain,
                             progress=not args.quiet, log=log)
    label = experiment.name or experiment.task.name
    how = "loaded from the zoo" if entry.loaded else "trained"
    print(f"{label}: {how}; {_fmt_metrics(_final_metrics(entry.final))}; {entry.path}")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------


def _cmd_sweep(args: argparse.Namespace) -> int:
    from toymech.sweep import run_sweep

    _check_cache(args.cache)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    from toymech.devices import apply_threads

    # the in-process runner's threads by the thread policy (quietly: a bad grid's error is the
    # only line it prints; Ray workers use one thread each)
    apply_threads(None, log=None)
    result = run_sweep(args.grid, cache_dir=args.cache, backend=args.backend,
                       address=args.address, out=args.out, retries=args.retries,
                       device=args.device, progress=not args.no_progress, log=log)
    print(result.summary())
    return EXIT_FAILED if result.count("failed") else EXIT_OK


# --------------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------------


def _int_option(lo: int, hi: int, hi_text: str | None = None):
    """An argparse type: an integer in lo..hi (argparse names the option in its message)."""
    allowed = f"an integer in {lo}..{hi_text or f'{hi:,}'}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; expected {allowed}") from None
        if value < 0 <= lo:
            raise argparse.ArgumentTypeError(f"{value} is negative; expected {allowed}")
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is not allowed; expected {allowed}")
        return value

    return parse


_seed = _int_option(0, 2**62 - 1, "2**62 - 1")  # == toymech.core.check_seed
_steps = _int_option(1, 10**8)  # == TrainConfig.steps
_jobs = _int_option(1, 256)
_port = _int_option(1, 65_535)
_threads = _int_option(1, 4096)  # == toymech.devices.choose_threads


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toymech", description="Train toy transformers, look inside them, render reports.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    cache_help = "model zoo folder (default: $TOYMECH_CACHE or ~/.cache/toymech)"

    p = sub.add_parser("train", help="train a named experiment (or a JSON config) into the model zoo",
                       description="Train a model (or load it if the zoo has it) and print its final metrics.")
    p.add_argument("experiment", nargs="?",
                   help="experiment name, e.g. induction-2l ('toymech list experiments')")
    p.add_argument("--config", help="JSON file with task, model and train (see --dump-config)")
    p.add_argument("--size", choices=SIZES, default="default", help="smoke, default or paper (default: default)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the model and the data (default: 0)")
    p.add_argument("--steps", type=_steps, help="override the number of training steps (at most 10**8)")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps")
    p.add_argument("--cache", help=cache_help)
    p.add_argument("--retrain", action="store_true", help="train even if the zoo has this model")
    p.add_argument("--dump-config", metavar="FILE", help="write the experiment as JSON (- for stdout) and exit")
    p.add_argument("--threads", type=_threads, help="torch CPU threads (default: $TOYMECH_THREADS, "
                   "else the cores not busy with other work or other toymech processes)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or log lines")
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("sweep", help="train a grid of experiments into the zoo and write a results table",
                       description="Expand a grid (JSON or YAML: experiment, size, seed, overrides, "
                       "stack_seeds, retries, tag, name), train every trial into the zoo (trials "
                       "already there are loaded: a sweep is resumable) and write one CSV row per "
                       "trial. Exit code 1 if a trial failed.")
    p.add_argument("grid", help="grid file (.json, .yaml or .yml)")
    p.add_argument("--backend", choices=("auto", "ray", "local"), default="auto",
                   help="ray (toymech[sweep]), local (one trial after another in this process) "
                   "or auto: ray when installed (default: auto)")
    p.add_argument("--address", help="join this Ray cluster (auto, HOST:6379 or ray://HOST:10001) "
                   "instead of starting a local Ray")
    p.add_argument("--out", help="table file (default: <zoo>/sweeps/<name>.csv)")
    p.add_argument("--retries", type=_int_option(0, 100),
                   help="tries after a trial's first failure (default: the grid's, else 1)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    p.add_argument("--cache", help=cache_help)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("list", help="tasks, experiments and cached models with their metrics",
                       description="List tasks, named experiments and the models cached in the zoo.")
    p.add_argument("what", nargs="?", default="all",
                   choices=("all", "tasks", "experiments", "models"))
    p.add_argument("--cache", help=cache_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("zoo", help="check the model zoo (zoo verify [--fix])",
                       description="Maintain the model zoo.")
    zoo_sub = p.add_subparsers(dest="zoo_command", metavar="ACTION", parser_class=_Parser, required=True)
    p = zoo_sub.add_parser("verify", help="check every cached model (exit 1 if one is damaged)",
                           description="Check every cached model: its weights against their recorded "
                           "sha256, its metadata against its hash, finite weights that fit its config. "
                           "Exit 0 when none is damaged (unverified entries, saved by an older "
                           "toymech, are not damaged), 1 otherwise.")
    p.add_argument("--fix", action="store_true",
                   help="move damaged entries to <zoo>/.quarantine (kept, not deleted) and clean "
                   "what killed runs left")
    p.add_argument("--cache", help=cache_help)
    p.set_defaults(func=_cmd_zoo_verify)

    p = sub.add_parser("report", help="execute notebooks with papermill and render offline HTML reports",
                       description="Execute notebooks (default: every notebooks/*.ipynb) and write "
                       "self-contained HTML reports plus index.html. Exit code 1 if a notebook failed.")
    p.add_argument("notebooks", nargs="*", help="notebook files (default: all in --dir)")
    p.add_argument("--dir", help="notebook folder (default: ./notebooks)")
    p.add_argument("--size", choices=SIZES, default="default",
                   help="size passed to every notebook's parameters cell (default: default)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    p.add_argument("--seed", type=_seed, default=0, help="seed passed to every notebook (default: 0)")
    p.add_argument("--seeds", type=_int_option(1, 10**6), metavar="N",
                   help="how many seeds the claims run over, passed to every notebook as `n_seeds` (or `seeds`) "
                   "(default: each notebook's own, by size)")
    p.add_argument("--code", action="store_true",
                   help="keep the code cells, logs and raw values in the reports (for authors)")
    p.add_argument("--out", default="reports", help="output folder (default: reports)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra notebook parameter (repeatable); VALUE is JSON or a string")
    p.add_argument("--jobs", type=_jobs, default=1,
                   help="notebooks executed at once; each kernel gets cores/jobs threads (default: 1)")
    p.add_argument("--cache", help=cache_help)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("lab", help="start JupyterLab on the notebooks",
                       description="Start JupyterLab (this Python environment as the kernel) on notebooks/.")
    p.add_argument("--dir", help="notebook folder (default: ./notebooks)")
    p.add_argument("--port", type=_port, help="server port")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--cache", help=cache_help)
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="further arguments for jupyter lab (after --)")
    p.set_defaults(func=_cmd_lab)
    return parser


def _version() -> str:
    from toymech import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if getattr(args, "jupyter_args", None) and args.jupyter_args[0] == "--":
            args.jupyter_args = args.jupyter_args[1:]
        return args.func(args)
    except UsageError as exc:
        print(f"toymech: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:
        # toymech raises ValueError for bad input (unknown experiment, impossible parameter, ...).
        if os.environ.get("TOYMECH_DEBUG"):
            raise  # the traceback, for when the ValueError is a bug rather than bad input
        message = " ".join(str(exc).split())
        print(f"toymech: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("toymech: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    raise SystemExit(main())
