"""The ``toymech`` commands that work on the model zoo: ``train``, ``sweep``, ``map`` (and
``ladder``, which runs study 3's width-ladder maps by name), ``list`` and ``zoo verify`` (the parser and ``main`` are in ``toymech.cli.parser``). Bad input is a ValueError,
which ``main`` prints as one line (exit code 2). Heavy imports happen inside the commands, so
that ``toymech --help`` answers at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from .args import EXIT_FAILED, EXIT_OK, check_cache, parse_sets

# --------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    from toymech import listing
    from toymech.zoo import default_cache_dir

    if getattr(args, "study", None) is not None and args.what != "knobs":
        raise ValueError(f"study={args.study!r} is not allowed: a study is named only with "
                         "'toymech list knobs STUDY'")
    what = [args.what] if args.what != "all" else ["studies", "tasks", "experiments", "models"]
    builders = {"studies": listing.study_rows, "tasks": listing.task_rows,
                "experiments": listing.experiment_rows,
                "models": lambda: listing.model_rows(args.cache),
                "knobs": lambda: listing.knob_rows(getattr(args, "study", None))}
    data = {name: builders[name]() for name in what}
    if "models" in data:
        data["quarantined"] = listing.quarantined_rows(args.cache)
    if args.json:
        print(json.dumps(data, indent=1, default=str))
        return EXIT_OK
    where = Path(args.cache).expanduser() if args.cache else default_cache_dir()
    print("\n".join(listing.lines(data, where)))
    return EXIT_OK


def cmd_zoo_verify(args: argparse.Namespace) -> int:
    from toymech.zoo import Zoo

    zoo = Zoo(args.cache, lock_timeout=args.lock_timeout)
    if not os.path.lexists(zoo.root):  # checking nothing is no "0 ok"
        raise ValueError(f"zoo={str(zoo.root)!r} is not allowed: an existing zoo folder (it does "
                         "not exist; --cache or $TOYMECH_CACHE names the zoo)")
    rows = zoo.verify(fix=args.fix, adopt=args.adopt)
    for row in rows:
        name = Path(row["path"]).name
        where = f"; moved to {row['quarantined']}" if row.get("quarantined") else ""
        if row.get("adopted"):
            print(f"{'adopted':<11} {name}: {row['adopted']}")
        elif row["status"] == "ok":
            print(f"{'ok':<11} {name}")
        else:
            print(f"{row['status'].upper():<11} {name}: {row['problem']}{where}")
    count = {s: sum(r["status"] == s for r in rows) for s in ("ok", "unverified", "damaged", "newer")}
    bad = count["damaged"] + count["unverified"]
    hint = ("" if not bad or args.fix else "; 'toymech zoo verify --fix' moves them aside"
            + ("" if not count["unverified"] else ", --adopt checks and adopts the unverified"))
    print(f"{count['ok']} ok, {count['unverified']} unverified (not served), {count['damaged']} "
          f"damaged, {count['newer']} newer than this toymech in {zoo.root}{hint}", file=sys.stderr)
    return EXIT_FAILED if bad else EXIT_OK


# --------------------------------------------------------------------------------------------
# train
# --------------------------------------------------------------------------------------------


def _refuse_two_steps(name: str, sets: dict[str, str], steps: int) -> None:
    """``--steps`` beside a ``--set`` knob that writes ``train.steps`` is a contradiction (the
    entry would be named after one and trained for the other): refused before any work."""
    from toymech import experiments
    from toymech.studies import protocol

    named = experiments.registry().get(name)
    if named is None or not named.study:
        return  # experiments.get names the problem
    knobs = protocol.study(named.study).knobs
    for knob_name, value in sets.items():
        knob = knobs.get(knob_name)
        if knob is not None and "train.steps" in knob.fields:
            raise ValueError(f"--steps={steps} is not allowed with --set {knob_name}={value}: "
                             "both set the training steps; give one of them")


def load_experiment(args: argparse.Namespace):
    from toymech import experiments
    from toymech.training import Experiment
    from toymech.training.specfiles import parse_json, read_text

    if (args.experiment is None) == (args.config is None):
        raise ValueError("give an experiment name or --config FILE (one of them); 'toymech list experiments' shows the names")
    if args.config is not None:
        given = [f"--{k}" for k in ("size", "seed", "set") if getattr(args, k)]
        if given:
            raise ValueError(f"{given[0]} is not allowed with --config: the file holds the whole "
                             "experiment (its size's settings and its seeds); edit it, or train by name")
        spec = parse_json(read_text(args.config, "--config"), "--config", args.config)
        if not isinstance(spec, dict):
            raise ValueError(f"--config={args.config!r} is not allowed: a JSON object with task, "
                             f"model and train (it holds a {type(spec).__name__})")
        experiment = Experiment.from_dict(spec)
    else:
        sets = parse_sets(getattr(args, "set", None) or [])
        if args.steps is not None and sets:
            _refuse_two_steps(args.experiment, sets, args.steps)
        setting = experiments.setting(args.experiment, args.size or "default", sets)
        experiment = experiments.get(args.experiment, setting,
                                     seed=0 if args.seed is None else args.seed)
    if args.steps is not None:
        train = experiment.train
        experiment.train = train.replace(steps=args.steps, eval_every=min(train.eval_every, args.steps),
                                         warmup_steps=min(train.warmup_steps, args.steps - 1))
    return experiment


def cmd_train(args: argparse.Namespace) -> int:
    from toymech import listing
    from toymech.devices import apply_threads, check_device, resolve_device
    from toymech.zoo import Zoo

    check_cache(args.cache)
    check_device(args.device)
    if args.dump_config is not None and args.dump_config != "-":
        from toymech.core import check_path_writable_file

        check_path_writable_file("--dump-config", args.dump_config)
    experiment = load_experiment(args)
    if args.dump_config is not None:
        text = json.dumps(experiment.to_dict(), indent=1)
        if args.dump_config == "-":
            print(text)
            return EXIT_OK
        try:
            Path(args.dump_config).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"--dump-config={args.dump_config!r} is not allowed: a file that can "
                             f"be written ({exc.strerror})") from None
        print(f"wrote {args.dump_config}", file=sys.stderr)
        return EXIT_OK
    zoo = Zoo(args.cache, lock_timeout=args.lock_timeout)
    log = (lambda line: print(line, file=sys.stderr)) if not args.quiet else None
    apply_threads(args.threads, log=log)  # explicit, $TOYMECH_THREADS, else the free cores
    if args.retrain or not zoo.has(experiment):  # every check, then its cost said (or refused)
        from toymech.core import check_path_writable_dir
        from toymech.models.reference import training_cost
        from toymech.training import preflight
        from toymech.zoo import inventory

        inventory.check_root(zoo.root)
        check_path_writable_dir("zoo", zoo.root)
        preflight(experiment, resolve_device(args.device), keep_model=False)
        training_cost([experiment], None if args.config else (args.size or "default"),
                      confirmed=args.yes, log=log)
    entry = zoo.get_or_train(experiment, device=args.device, retrain=args.retrain,
                             progress=not args.quiet, log=log)
    label = experiment.name or experiment.task.name
    how = "loaded from the zoo" if entry.loaded else "trained"
    print(f"{label}: {how}; {listing.fmt_metrics(listing.final_metrics(entry.final))}; {entry.path}")
    return EXIT_OK


def cmd_map(args: argparse.Namespace) -> int:
    from toymech import maps

    check_cache(args.cache)
    spec = maps.load_map(args.grid)
    spec.setdefault("name", Path(args.grid).stem)
    return _run_maps([(spec, f"toymech map {args.grid}")], args)


# The width ladder of study 3 is ordinary maps, one per algorithmic task, shipped beside the
# others; ``toymech ladder`` is a name for running them (the same tables as ``toymech map``).
LADDER_MAPS = "s3-width-"  # specs/maps/s3-width-<task>.yaml
_REPO_MAPS = Path(__file__).resolve().parents[2] / "specs" / "maps"


def ladder_specs(folder: Path | None = None) -> dict[str, Path]:
    """{task: its width-ladder map file}: ``specs/maps/s3-width-<task>.yaml`` of the toymech
    checkout (or ``folder``), in name order."""
    folder = _REPO_MAPS if folder is None else folder
    found = {p.stem.removeprefix(LADDER_MAPS): p
             for p in sorted(folder.glob(f"{LADDER_MAPS}*.yaml"))} if folder.is_dir() else {}
    if not found:
        raise ValueError(f"ladder maps={str(folder / (LADDER_MAPS + '*.yaml'))!r} is not "
                         "allowed: the width ladder's map files of a toymech checkout (run "
                         "toymech map on your own copy of specs/maps/s3-width-<task>.yaml)")
    return found


def cmd_ladder(args: argparse.Namespace) -> int:
    """``toymech ladder``: ``toymech map`` on each width-ladder map (``ladder_specs``),
    ``--modes`` keeping the map's experiments named ``*-<mode>``."""
    from toymech import maps

    check_cache(args.cache)
    specs = ladder_specs()
    tasks = args.tasks or list(specs)
    for task in tasks:
        if task not in specs:
            raise ValueError(f"--tasks {task!r} is not allowed: one of {', '.join(specs)} (a "
                             f"width-ladder map {LADDER_MAPS}<task>.yaml)")
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"--tasks={list(tasks)!r} is not allowed: distinct tasks (one given twice)")
    modes = args.modes or []
    if len(set(modes)) != len(modes):
        raise ValueError(f"--modes={list(modes)!r} is not allowed: distinct modes (one given twice)")
    todo = []
    for task in tasks:
        spec = maps.load_map(specs[task])
        spec.setdefault("name", specs[task].stem)
        if modes:
            names = spec.get("experiment") or []
            names = [names] if isinstance(names, str) else list(names)
            kept = [n for n in names if any(n.endswith(f"-{m}") for m in modes)]
            if len(kept) != len(modes):
                raise ValueError(f"--modes={list(modes)!r} is not allowed: modes of the "
                                 f"{spec['name']} map's experiments ({', '.join(names)})")
            spec["experiment"] = kept
        todo.append((spec, f"toymech map {specs[task].relative_to(specs[task].parents[2])}"))
    return _run_maps(todo, args)


def _run_maps(todo: list, args: argparse.Namespace) -> int:
    """Run each (map spec, the ``toymech map`` command that runs it) with the options of
    ``toymech map`` (every spec checked before any work) and print each map's finding."""
    from toymech import maps
    from toymech.devices import apply_threads
    from toymech.studies import protocol
    from toymech.zoo import Zoo

    for spec, _ in todo:
        if getattr(args, "size", None) is not None:
            spec["size"] = args.size
        if getattr(args, "n_seeds", None) is not None:
            spec["seeds"] = args.n_seeds
        maps.check_map(spec)  # every key, knob and value before any work
    report = getattr(args, "report", None)
    if report is not None:  # a reports folder that can take the pages, before any work
        from toymech.maps.page import PAGE_PREFIX
        from toymech.report.checks import check_out_dir

        # the pages' own files (map-<name>.html, executed/map-<name>.ipynb) are checked too
        check_out_dir("report", report, [Path(f"{PAGE_PREFIX}{s['name']}.ipynb") for s, _ in todo])
    apply_threads(None, log=None)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    failed = False
    for spec, command in todo:
        table = maps.run_map(spec, cache_dir=args.cache, out=args.out, backend=args.backend,
                             address=getattr(args, "address", None),
                             device=getattr(args, "device", "auto"),
                             progress=not args.no_progress, refine=getattr(args, "refine", 0),
                             lock_timeout=args.lock_timeout, confirm_cost=args.yes, log=log,
                             command=shlex.join(["toymech", *getattr(args, "argv", [])]))
        print(maps.finding(table, protocol.study(spec["study"]).map_label))
        failed = failed or bool((table.get("status") != "ok").any())
        if report is not None:  # the map's page, listed in the reports folder's index
            from toymech.maps.page import build_map_report

            folder = Path(args.out) if args.out else Zoo(args.cache).root / "maps"
            entry = build_map_report(folder / f"{spec['name']}.csv", report,
                                     command=f"{command} --report {report}")
            print(f"map page: {Path(report) / entry.html} ({entry.status})", file=sys.stderr)
            failed = failed or not entry.ok
    return EXIT_FAILED if failed else EXIT_OK


# --------------------------------------------------------------------------------------------
# sweep
# --------------------------------------------------------------------------------------------


def cmd_sweep(args: argparse.Namespace) -> int:
    from toymech.grid import run_sweep

    check_cache(args.cache)
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    from toymech.devices import apply_threads

    # the in-process runner's threads by the thread policy (quietly: a bad grid's error is the
    # only line it prints; Ray workers use one thread each)
    apply_threads(None, log=None)
    result = run_sweep(args.grid, cache_dir=args.cache, backend=args.backend,
                       address=args.address, out=args.out, retries=args.retries,
                       device=args.device, progress=not args.no_progress,
                       lock_timeout=args.lock_timeout, confirm_cost=args.yes, log=log)
    print(result.summary())
    return EXIT_FAILED if result.count("failed") or result.count("diverged") else EXIT_OK
