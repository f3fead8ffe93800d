"""The ``toymech`` command: its parser and ``main``. The zoo's commands (``train``, ``sweep``,
``map``, ``ladder``, ``list``, ``zoo``) run in ``toymech.cli.zoo_commands``, the notebooks'
(``report``, ``lab``, ``results``) in ``toymech.cli.report_commands``; what they share (exit codes,
``UsageError``, ``--param`` / ``--set`` parsing) is ``toymech.cli.args``.

Exit codes scripts can rely on: 0 success; 1 a run failed (a notebook, a training run, a lock
wait that timed out, a zoo entry that is damaged or unverified); 2 bad input (unknown
experiment, missing file, bad option, an unusable zoo folder), reported as ONE line on stderr
(``TOYMECH_DEBUG=1`` shows the traceback instead); 130 interrupted. Heavy imports (torch, transformer-lens, papermill) happen inside the
subcommands so that ``toymech --help`` answers at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Sequence

from . import zoo_commands
from .args import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from .report_commands import cmd_lab, cmd_report, cmd_results, cmd_site_reports

SIZES = ("smoke", "default", "paper")  # == toymech.core.SIZES, repeated to keep --help fast


class _Parser(argparse.ArgumentParser):
    # argparse prints the whole usage block before its error; scripts and people want one line.
    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------------


def _int_option(lo: int, hi: int, hi_text: str | None = None):
    """An argparse type: an integer in lo..hi written in ASCII decimal digits (argparse names
    the option in its message). '1_0', '٣' or '+3' are not integers here, though int() reads them."""
    allowed = f"an integer in {lo}..{hi_text or f'{hi:,}'} (decimal digits 0-9)"

    def parse(text: str) -> int:
        if not re.fullmatch(r"-?[0-9]{1,30}", text):
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; expected {allowed}")
        value = int(text)
        if value < 0 <= lo:
            raise argparse.ArgumentTypeError(f"{value} is negative; expected {allowed}")
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is not allowed; expected {allowed}")
        return value

    return parse


def _seconds(text: str) -> float:
    """An argparse type: seconds, a non-negative decimal number (ASCII)."""
    if not re.fullmatch(r"[0-9]{1,9}(\.[0-9]+)?", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; expected a number of seconds, "
                                         "e.g. 600")
    return float(text)


_seed = _int_option(0, 2**62 - 1, "2**62 - 1")  # == toymech.core.check_seed
_steps = _int_option(1, 10**8)  # == TrainConfig.steps
_jobs = _int_option(1, 256)
_port = _int_option(1, 65_535)
_threads = _int_option(1, 4096)  # == toymech.devices.choose_threads


CACHE_HELP = "model zoo folder (default: $TOYMECH_CACHE or ~/.cache/toymech)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="toymech", description="Train toy transformers, look inside them, render reports.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        metavar="MODULE", help="import a module of yours that registers tasks or "
                        "studies first (repeatable; also $TOYMECH_IMPORT and the toymech.tasks / "
                        "toymech.studies entry points)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in (_add_train, _add_sweep, _add_map, _add_list, _add_zoo, _add_report, _add_lab,
                _add_results, _add_site_reports,
                _add_ladder):  # one subcommand each, in the order --help lists them
        add(sub)
    return parser


def _add_lock_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lock-timeout", type=_seconds, metavar="SECONDS",
                   help="longest wait for another process holding a lock this command needs (a "
                   "zoo entry, a map's table, a reports folder, the results record; default: "
                   "$TOYMECH_LOCK_TIMEOUT, else 21600 s = 6 h); the wait names the holder, and "
                   "when it runs out the command exits 1 naming it, nothing written")


# == toymech.models.reference.SMOKE_MAX_REFERENCE_STEPS, repeated to keep --help fast
SMOKE_MAX_REFERENCE_STEPS = 10_000


def _add_yes(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes", action="store_true",
                   help="train at --size smoke even runs above smoke's budget of "
                   f"{SMOKE_MAX_REFERENCE_STEPS:,} reference steps (smoke is meant to take "
                   "seconds; the cost of the runs to train is printed first, in reference steps "
                   "and wall time on this machine, and above that budget refused without --yes)")


def _add_train(sub) -> None:
    """``toymech train``: one experiment into the zoo."""
    p = sub.add_parser("train", help="train a named experiment (or a JSON config) into the model zoo",
                       description="Train a model (or load it if the zoo has it) and print its final metrics.")
    p.add_argument("experiment", nargs="?",
                   help="experiment name, e.g. induction-2l ('toymech list experiments')")
    p.add_argument("--config", help="JSON file with task, model and train (see --dump-config); "
                   "it holds the whole experiment, so --size and --seed are refused with it")
    p.add_argument("--size", choices=SIZES, help="smoke, default or paper (default: default; "
                   "not with --config)")
    p.add_argument("--seed", type=_seed, help="seed of the model and the data (default: 0; "
                   "not with --config)")
    p.add_argument("--steps", type=_steps, help="override the number of training steps (at most 10**8)")
    p.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                   help="a knob of the experiment's study on top of --size (repeatable), e.g. "
                   "--set d_model=64 ('toymech list knobs')")
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:N or mps")
    p.add_argument("--cache", help=CACHE_HELP)
    p.add_argument("--retrain", action="store_true", help="train even if the zoo has this model")
    p.add_argument("--dump-config", metavar="FILE", help="write the experiment as JSON (- for stdout) and exit")
    p.add_argument("--threads", type=_threads, help="torch CPU threads (default: $TOYMECH_THREADS, "
                   "else the cores not busy with other work or other toymech processes)")
    _add_lock_timeout(p)
    _add_yes(p)
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar or log lines (refusals and repairs are still said)")
    p.set_defaults(func=zoo_commands.cmd_train)


def _add_sweep(sub) -> None:
    """``toymech sweep``: a grid into the zoo and a results table."""
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
    p.add_argument("--cache", help=CACHE_HELP)
    _add_lock_timeout(p)
    _add_yes(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=zoo_commands.cmd_sweep)


def _add_map(sub) -> None:
    """``toymech map``: a study's knobs x seeds -> one tidy table of labelled runs."""
    p = sub.add_parser("map", help="train a grid of a study's knobs x seeds, label every run and "
                       "write one tidy table", description="Read a map (YAML or JSON: study, "
                       "experiment, size, seeds, knobs, name), train what the zoo lacks (resumable), "
                       "measure every run with its study's map measurement and mechanism label, and "
                       "write <out>/<name>.csv with one row per run. Exit code 1 if a run failed.")
    p.add_argument("grid", help="map file (.yaml, .yml or .json)")
    p.add_argument("--size", choices=SIZES, help="override the map's size")
    p.add_argument("--seeds", dest="n_seeds", type=_int_option(1, 100), metavar="N",
                   help="override the map's seeds: N judged seeds of the study")
    p.add_argument("--backend", choices=("auto", "ray", "local"), default="auto",
                   help="as for sweeps (default: auto)")
    p.add_argument("--address", help="join this Ray cluster instead of starting a local Ray")
    p.add_argument("--out", help="table folder (default: <zoo>/maps)")
    p.add_argument("--refine", type=_int_option(0, 10000), default=0, metavar="N",
                   help="then add up to N runs where the map is unsure: more seeds where a cell's "
                   "seeds disagree, the midpoint of a numeric knob where neighbouring cells' labels "
                   "differ (rows marked refined)")
    p.add_argument("--report", nargs="?", const="reports", metavar="DIR",
                   help="also write the map's page, DIR/map-<name>.html, listed in DIR/index.html "
                   "(default DIR: reports, where toymech report writes)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    p.add_argument("--cache", help=CACHE_HELP)
    p.add_argument("--no-progress", action="store_true",
                   help="no live line (runs and cells done, the run in progress and its step, "
                   "an estimate left)")
    _add_lock_timeout(p)
    _add_yes(p)
    p.set_defaults(func=zoo_commands.cmd_map)


def _add_list(sub) -> None:
    """``toymech list``: studies, tasks, experiments, cached models."""
    p = sub.add_parser("list", help="studies, tasks, experiments and cached models",
                       description="List the studies, tasks, named experiments and the models "
                                   "cached in the zoo.")
    p.add_argument("what", nargs="?", default="all",
                   choices=("all", "studies", "tasks", "experiments", "models", "knobs"))
    p.add_argument("study", nargs="?", help="with 'knobs': one study's knobs (default: every study's)")
    p.add_argument("--cache", help=CACHE_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=zoo_commands.cmd_list)


def _add_zoo(sub) -> None:
    """``toymech zoo verify``: the zoo's integrity check."""
    p = sub.add_parser("zoo", help="check the model zoo (zoo verify [--fix] [--adopt])",
                       description="Maintain the model zoo.")
    zoo_sub = p.add_subparsers(dest="zoo_command", metavar="ACTION", parser_class=_Parser, required=True)
    p = zoo_sub.add_parser("verify", help="check every cached model (exit 1 if one is damaged or unverified)",
                           description="Check every cached model: its weights against their recorded "
                           "sha256, its metadata against its hash, its tensors against its config "
                           "(names, shapes, dtypes, finite). Exit 0 when every entry is served; 1 when "
                           "one is damaged or unverified (no integrity record: an older toymech). "
                           "Entries of a newer toymech and folders that are no entries are left alone.")
    p.add_argument("--fix", action="store_true",
                   help="move damaged and unverified entries to <zoo>/.quarantine (kept, not "
                   "deleted) and clean what killed runs left")
    p.add_argument("--adopt", action="store_true",
                   help="check unverified entries (tensors against their config, configs against "
                   "their folder's key) and save them again with an integrity record; their "
                   "metrics are taken as they are")
    p.add_argument("--cache", help=CACHE_HELP)
    _add_lock_timeout(p)
    p.set_defaults(func=zoo_commands.cmd_zoo_verify)


def _add_report(sub) -> None:
    """``toymech report``: notebooks executed and rendered."""
    p = sub.add_parser("report", help="execute notebooks with papermill and render offline HTML reports",
                       description="Execute notebooks (default: every notebooks/*.ipynb) and write "
                       "self-contained HTML reports plus index.html. Exit code 1 if a notebook failed.")
    p.add_argument("notebooks", nargs="*", help="notebook files (default: all in --dir)")
    p.add_argument("--dir", help="notebook folder (default: ./notebooks)")
    p.add_argument("--size", choices=SIZES, default="default",
                   help="size passed to every notebook's parameters cell (default: default)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    p.add_argument("--seed", type=_seed, default=0, help="seed passed to every notebook (default: 0)")
    p.add_argument("--seeds", dest="n_seeds", type=_int_option(1, 1000), metavar="N",  # == protocol.MAX_SEEDS
                   help="how many seeds the claims run over, passed to every notebook as `n_seeds` "
                   "(default: each notebook's own, by size)")
    p.add_argument("--code", action="store_true",
                   help="keep the code cells, logs and raw values in the reports (for authors)")
    p.add_argument("--out", default="reports", help="output folder (default: reports)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra notebook parameter (repeatable); VALUE is JSON or a string")
    p.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                   help="a knob of the notebook's study on top of --size (repeatable), e.g. "
                   "--set block_len=4-8 --set offset=0-3: the report is a variant's "
                   "('toymech list knobs')")
    p.add_argument("--jobs", type=_jobs, default=1,
                   help="notebooks executed at once; each kernel gets cores/jobs threads (default: 1)")
    p.add_argument("--cache", help=CACHE_HELP)
    _add_lock_timeout(p)
    _add_yes(p)
    p.set_defaults(func=cmd_report)


def _add_lab(sub) -> None:
    """``toymech lab``: JupyterLab on the notebooks."""
    p = sub.add_parser("lab", help="start JupyterLab on the notebooks",
                       description="Start JupyterLab (this Python environment as the kernel) on notebooks/.")
    p.add_argument("--dir", help="notebook folder (default: ./notebooks)")
    p.add_argument("--port", type=_port, help="server port")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--cache", help=CACHE_HELP)
    p.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="further arguments for jupyter lab (after --)")
    p.set_defaults(func=cmd_lab)


def _add_results(sub) -> None:
    """``toymech results``: a report run's record as data; the results pages from the data."""
    p = sub.add_parser("results", help="record a report run as data (docs/results/data), or "
                       "generate the results pages from the shipped data (--pages)",
                       description="With report folders: write each notebook's scorecard, "
                                   "commit, machine, wall time and command (folders as "
                                   "placeholders) as one JSON record per (notebook, setting). "
                                   "With --pages: generate docs/results/ (a page per study: "
                                   "finding, figures, tables, commands) from those records and "
                                   "the map tables.")
    p.add_argument("reports", nargs="*", help="report folders written by toymech report")
    p.add_argument("--into", default="docs/results/data", help="the folder of the records "
                   "(default: docs/results/data)")
    p.add_argument("--pages", action="store_true", help="generate the results pages instead")
    p.add_argument("--data", default="docs/results/data", help="with --pages: the records "
                   "(default: docs/results/data)")
    p.add_argument("--maps", nargs="+", default=["docs/maps"], metavar="MAP", help="with --pages: "
                   "folders of map tables or tables (default: docs/maps)")
    p.add_argument("--out", default="docs/results", help="with --pages: where the pages go "
                   "(default: docs/results)")
    _add_lock_timeout(p)
    p.set_defaults(func=cmd_results)


def _add_site_reports(sub) -> None:
    """``toymech site-reports``: finished reports onto the documentation site."""
    p = sub.add_parser("site-reports", help="copy finished reports onto the documentation site "
                       "(docs/reports), without the scripts the site serves once",
                       description="Copy every report that ran ok in the report folders (map "
                                   "pages included) into the site's reports folder, each without "
                                   "its inline plotly.js and circuitsvis bundle (the site serves "
                                   "one copy of each), and rewrite the page listing them.")
    p.add_argument("reports", nargs="+", help="report folders written by toymech report or "
                   "toymech map --report")
    p.add_argument("--into", default="docs/reports", help="the site's reports folder "
                   "(default: docs/reports)")
    p.set_defaults(func=cmd_site_reports)


def _add_ladder(sub) -> None:
    """``toymech ladder``: study 3's width ladder, its maps run by name."""
    p = sub.add_parser("ladder", help="run study 3's width-ladder maps (recipes at widths 16-256, judged seeds)",
                       description="toymech map on each of specs/maps/s3-width-<task>.yaml: each "
                                   "algorithmic task's recipe at each width, random and normal, on "
                                   "seeds no calibration used; the tables are the maps' own "
                                   "(<zoo>/maps/s3-width-<task>.csv), as toymech map writes them.")
    # each list once (a repeated flag would keep only its last list)
    p.add_argument("--tasks", nargs="+", action=_Once, help="algorithmic tasks (default: every width-ladder map)")
    p.add_argument("--modes", nargs="+", action=_Once, help="random and/or normal: the maps' "
                   "experiments named *-<mode> (default: both)")
    p.add_argument("--size", choices=SIZES, help="override the maps' size")
    p.add_argument("--seeds", dest="n_seeds", type=_int_option(1, 100), metavar="N",
                   help="override the maps' seeds: N judged seeds of the study")
    p.add_argument("--backend", choices=("auto", "ray", "local"), default="auto")
    p.add_argument("--out", help="table folder (default: <zoo>/maps)")
    p.add_argument("--report", nargs="?", const="reports", metavar="DIR",
                   help="also write each map's page into DIR (as toymech map --report)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)")
    p.add_argument("--cache", help=CACHE_HELP)
    p.add_argument("--no-progress", action="store_true", help="no live line")
    _add_lock_timeout(p)
    _add_yes(p)
    p.set_defaults(func=zoo_commands.cmd_ladder)


class _Once(argparse.Action):
    """A list option given once: a second ``--tasks ...`` is refused rather than replacing the
    first list."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise UsageError(f"{option_string} given twice is not allowed: give every value "
                             f"after one {option_string} (e.g. {option_string} a b)")
        setattr(namespace, self.dest, values)


def _run_failed() -> tuple[type, ...]:
    """A run that failed rather than bad input (exit 1, one line): a lock wait that timed out,
    a diverged run. Only a command that reached the zoo can raise them, so they are looked up
    here rather than imported (``--help`` stays free of heavy imports)."""
    found = [getattr(sys.modules.get(m), n, None) for m, n in
             (("toymech.zoo.locks", "LockTimeout"),
              ("toymech.training.divergence", "TrainingDiverged"),
             ("toymech.sweep.backends", "RayStartFailed"))]
    return tuple(t for t in found if t is not None) or (_Never,)


class _Never(Exception):
    pass


@contextlib.contextmanager
def _lock_timeout(seconds: float | None):
    """``--lock-timeout`` for every lock the command takes, its child processes' and notebook
    kernels' too: ``$TOYMECH_LOCK_TIMEOUT`` while the command runs (restored after)."""
    if seconds is None:
        yield
        return
    old = os.environ.get("TOYMECH_LOCK_TIMEOUT")
    os.environ["TOYMECH_LOCK_TIMEOUT"] = f"{seconds:.6f}".rstrip("0").rstrip(".")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TOYMECH_LOCK_TIMEOUT", None)
        else:
            os.environ["TOYMECH_LOCK_TIMEOUT"] = old


def _version() -> str:
    from toymech import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        # the command line as typed (a map's cost record names it, in its public form)
        args.argv = list(sys.argv[1:] if argv is None else argv)
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if getattr(args, "jupyter_args", None) and args.jupyter_args[0] == "--":
            args.jupyter_args = args.jupyter_args[1:]
        from toymech import plugins

        if plugins.load(args.imports):  # your tasks and studies, before any name is looked up
            from toymech import experiments

            experiments.check_task_names()  # a plugin's task never hides behind a study's name
        if args.imports:  # the report's kernels import them too
            os.environ[plugins.ENV] = ",".join(
                dict.fromkeys([*plugins.modules_from_env(), *args.imports]))
        with _lock_timeout(getattr(args, "lock_timeout", None)):
            return args.func(args)
    except UsageError as exc:
        print(f"toymech: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _run_failed() as exc:
        print(f"toymech: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_FAILED
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
