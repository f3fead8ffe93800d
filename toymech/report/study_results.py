"""A study's results gathered from the shipped data and said in words (``report.pages`` writes
them as pages).

``collect`` reads the report runs' records (``docs/results/data``, ``report.results``) and the
map tables (``docs/maps``, each checked row by row as ``maps.page`` reads it) into one
``StudyResults`` per registered study, its maps in the order the study declares
(``results_maps``). The words are computed, never typed: each scorecard's verdicts counted
(``counts_sentence``: how many of the judged claims hold, saying plainly when none does or none
was judged), the machine and cost of a run, a map's answer in a clause (``map_headline``, from
``maps.summary.cell_groups``, the one grouping), a study's headline and its finding, item by item.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import check
from ..display.prose import duration_text
from ..maps.cost_record import cost_file, read_record
from ..maps.page import MapPage, map_tables, study_for
from ..maps.summary import cell_groups
from ..studies import protocol
from ..studies.claims import BELOW, SCALED_CAVEAT, SCALED_SAYS, VerdictParts, verdict_parts
from .costs import shipped_costs
from .results import DATA_DIR, read_data, scaled_comparison
from .scorecards import verdict_counts

MAPS_DIR = "docs/maps"
SPECS_DIR = "specs/maps"
SIZE_ORDER = ("paper", "default", "smoke")
# verdict words that say a claim (or, in a variant, a property) held
HOLDING = ("reproduced", "holds (our test)", "holds", "consistent")
# verdict words that judge nothing at the run's setting
NOT_JUDGED = ("below the source's setting", "not measured", "pipeline check", "unresolved")

def slug(text: str) -> str:
    """``text`` as an anchor or file name: lower case, runs of other characters one dash."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")


def page_name(study) -> str:
    """A study's page name (``random-transformers``), the same as its page under docs/studies."""
    return slug(study.name)


def sentence(text: str) -> str:
    """``text`` ending as a sentence does (a full stop added where it has none)."""
    text = str(text).strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def variant_text(variant: dict) -> str:
    """A ``variant``'s knobs as a reader writes them: ``block_len=4-8, offset=0-3``."""
    return ", ".join(f"{k}={v}" for k, v in variant.items())


def _holding(word: str) -> bool:
    return word.removesuffix(" (scaled)").startswith(HOLDING)


def counts_sentence(card: dict | None, what: str = "claims") -> str:
    """A scorecard's (``card``'s) verdicts counted in words, ``what`` naming its rows ("claims",
    "properties"): how many of the judged ones hold, saying plainly
    when none does, and when none was judged at this setting (below the source's setting, not
    measured, a pipeline check)."""
    counts = verdict_counts(card)
    if not counts:
        return "no scorecard was displayed"
    total = sum(counts.values())
    judged = sum(n for w, n in counts.items() if not w.startswith(NOT_JUDGED))
    held = sum(n for w, n in counts.items() if _holding(w))
    listed = ", ".join(f"{n} {w}" for w, n in counts.items())
    if not judged:
        return f"none of its {total} {what} is judged at this setting ({listed})"
    if not held:
        return f"none of the {judged} {what} judged holds, of {total} ({listed})"
    return f"{held} of the {judged} {what} judged hold, of {total} ({listed})"


def shared_verdicts(card: dict) -> tuple[str, list[list[str]]]:
    """A scorecard's (``card``'s) rows with short verdict cells, and one sentence saying once
    what they share (empty where nothing is shared): the parameters short of the source's that
    every row short of it names, the command that reaches the source's setting where two rows
    or more name it, and the caveat on a quoted scaled verdict where two rows or more carry it
    (``claims.verdict_parts`` reads each cell). A row keeps what it does not share; a card
    without a verdict column is returned as it is."""
    rows = [list(r) for r in card["rows"]]
    if "verdict" not in card["columns"]:
        return "", rows
    at = card["columns"].index("verdict")
    parts = [verdict_parts(r[at]) if at < len(r) else VerdictParts("") for r in rows]
    short = [p for p in parts if p.gaps]
    gaps = [g for g in short[0].gaps if all(g in p.gaps for p in short)] if len(short) > 1 else []
    reaches = Counter(p.reach for p in parts if p.reach)
    reach, named = reaches.most_common(1)[0] if reaches else ("", 0)
    reach = reach if named > 1 else ""
    caveat = sum(bool(p.scaled_says) for p in parts) > 1
    said = [f"every row short of the source's setting ran at {', '.join(gaps)}"] if gaps else []
    if reach:
        said.append("each row below the source's setting"
                    + ("" if named == sum(reaches.values()) else ", unless it names another")
                    + f": {reach}")
    if caveat:
        said.append(f"where a row quotes what {SCALED_SAYS.strip()}, {SCALED_CAVEAT}")

    def cell(p: VerdictParts) -> str:
        rest = "; ".join(g for g in p.gaps if g not in gaps)
        if p.word != BELOW:
            return f"{p.word.removesuffix(' (scaled)')} (scaled: {rest})" if rest else p.word
        return "; ".join([BELOW + (f": {rest}" if rest else "")]
                         + ([p.reach] if p.reach and p.reach != reach else [])
                         + ([f"{SCALED_SAYS}{p.scaled_says}"
                             + ("" if caveat else f", but {SCALED_CAVEAT}")]
                            if p.scaled_says else []))

    for row, p in zip(rows, parts):
        if at < len(row):
            row[at] = cell(p)
    text = "; ".join(said)
    return (sentence(text[:1].upper() + text[1:]) if text else ""), rows


def machine_text(machine: dict | list | None) -> str:
    """The machine of a run in words: cores, GPU, reference speed, torch, device (a list: each
    machine of a map's invocations, ``maps.cost_record``)."""
    if isinstance(machine, list) and machine:
        return "; ".join(machine_text(m) for m in machine)
    if not isinstance(machine, dict) or not machine:
        return "not recorded"
    gpu = "CUDA" if machine.get("cuda") else "no GPU"
    ref = machine.get("reference_steps_per_s")
    return (f"{machine.get('cores', '?')} cores, {gpu}"
            + (f", {ref} reference steps/s" if ref else "")
            + (f", torch {machine['torch']}" if machine.get("torch") else "")
            + (f", device {machine['device']}" if machine.get("device") else ""))


def cost_text(record: dict) -> str:
    """What the run of ``record`` cost: wall time, core-seconds, reference steps, models
    trained (a map's cost record: its runs, over how many invocations)."""
    parts = []
    if isinstance(record.get("wall_s"), (int, float)):
        parts.append(f"{duration_text(record['wall_s'])} wall")
    if isinstance(record.get("core_s"), (int, float)):
        parts.append(f"{record['core_s']:,.0f} core-s")
    if isinstance(record.get("reference_steps"), (int, float)):
        parts.append(f"{record['reference_steps']:,.0f} reference steps")
    zoo = record.get("zoo") or {}
    if zoo:
        parts.append(f"{zoo.get('trained', '?')} models trained, {zoo.get('loaded', '?')} read "
                     "from the zoo")
    runs = record.get("runs") or {}
    if runs:
        trained = runs.get("trained", 0)
        parts.append(f"{trained} run{'' if trained == 1 else 's'} trained, "
                     f"{runs.get('measured', 0)} measured "
                     f"({runs.get('loaded', 0)} of them from models the zoo held)"
                     + (f", {runs['failed']} failed" if runs.get("failed") else ""))
    if len(record.get("invocations") or []) > 1:
        parts.append(f"over {len(record['invocations'])} invocations")
    return "; ".join(parts) or "not recorded"


def shipped_cost(notebook: str, size: str) -> str:
    """The estimate ``toymech report`` starts from (``toymech/data/report_costs.json``): the
    notebook at ``size`` from an empty zoo, with the machine that measured it; "" where none."""
    row = shipped_costs().get(notebook, {}).get(f"size={size}")
    if not isinstance(row, dict) or not isinstance(row.get("total_s"), (int, float)):
        return ""
    ref = f", {1 / row['reference_step_s']:.1f} reference steps/s" \
        if row.get("reference_step_s") else ""
    jobs = row.get("jobs")
    beside = f", {jobs} notebooks at once" if isinstance(jobs, int) and jobs > 1 else ""
    return (f"{duration_text(row['total_s'])} on a {row.get('cores', '?')}-core CPU{ref}{beside} "
            "(`toymech/data/report_costs.json`, what `toymech report` estimates from)")


def commit_of(record: dict) -> str:
    """The commit a ``record`` was made at, or "not recorded"."""
    return str(record.get("commit") or "not recorded")


@dataclass
class MapResult:
    """A shipped map table: its file, its page's numbers (``MapPage``) and its rebuild line."""

    path: Path
    page: MapPage
    name: str  # the spec's name where the study declares it, else the table's stem
    command: str
    # its measured cost: the record toymech map wrote beside the table (``maps.cost_record``),
    # else a record of kind "map" in the results data; only one measured on this very table
    cost: dict | None = None

    anchor: str = ""  # its label on the page: the name, or the stem where two share a name


@dataclass
class StudyResults:
    """Everything one study's page shows."""

    study: Any
    cards: list = field(default_factory=list)  # scorecard records of its notebook, no variant
    variants: list = field(default_factory=list)
    tables: list = field(default_factory=list)  # other tables (kind "table")
    maps: list = field(default_factory=list)  # MapResult, the study's declared order first


def _spec_command(name: str, specs: Path) -> str:
    if (specs / f"{name}.yaml").is_file():
        return f"toymech map {SPECS_DIR}/{name}.yaml"
    if (specs / name).is_dir():
        return f"toymech map on each of {SPECS_DIR}/{name}/*.yaml"
    return "toymech map (its spec is not in specs/maps)"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _map_name(stem: str, declared: tuple[str, ...]) -> str:
    found = [d for d in declared if stem == d or stem.startswith(d + "-")]
    return max(found, key=len) if found else stem


def collect(data_dir: str | Path = DATA_DIR, maps: str | Path | Sequence | None = MAPS_DIR,
            specs: str | Path = SPECS_DIR) -> list[StudyResults]:
    """Every registered study's results: its records in ``data_dir`` and its map tables in
    ``maps`` (a folder or a table, several of them, or None for none; a map's rebuild command
    from its spec in ``specs``), each table checked as it
    is read (a table named on its own that is none is refused; in a folder it is skipped with a
    line). A map's cost is the record beside its table (``<stem>.cost.json``, written by
    ``toymech map``), else its record in ``data_dir`` (``map-<stem>.json``), whichever names the
    table's sha256; a record of another table (or of none) is not shown."""
    records = read_data(data_dir) if Path(data_dir).is_dir() else []
    out = {name: StudyResults(protocol.study(name)) for name in protocol.STUDIES}
    costs = {rec["map"]: rec for rec in records if rec["kind"] == "map"}
    for rec in records:
        if rec["kind"] == "map":
            continue
        name = rec.get("study")
        if name not in out:
            raise ValueError(f"results data {rec['file']!r} is not allowed: a record of a "
                             f"registered study ({', '.join(out)}); it names {name!r}")
        if rec["kind"] == "table":
            out[name].tables.append(rec)
        elif rec.get("variant"):
            out[name].variants.append(rec)
        else:
            out[name].cards.append(rec)
    given = [] if maps is None else [maps] if isinstance(maps, (str, Path)) else list(maps)
    for path in given:
        check(Path(path).exists(), "--maps", str(path), "a folder of map tables (docs/maps) "
              "or a map table (.csv)")
    tables = map_tables(given) if given else []
    for path in tables:
        page = MapPage.read(path)
        results = out[study_for(page.table).name]
        name = _map_name(path.stem, results.study.results_maps)
        sha = _sha256(path)
        # a record measured for another table of that name (the map ran again since) is not its
        cost = next((rec for rec in (read_record(path.with_name(cost_file(path.stem))),
                                     costs.get(path.stem))
                     if rec and rec.get("table_sha256") == sha), None)
        results.maps.append(MapResult(path, page, name, (cost or {}).get("command")
                                      or _spec_command(name, Path(specs)), cost))
    for results in out.values():
        declared = list(results.study.results_maps)
        results.maps.sort(key=lambda m: (declared.index(m.name) if m.name in declared
                                         else len(declared), m.path.stem))
        taken: set[str] = set()
        for m in results.maps:
            m.anchor = slug(m.name if m.name not in taken else m.path.stem)
            taken.add(m.name)
        results.cards.sort(key=lambda r: _size_rank(r["size"]))
        results.variants.sort(key=lambda r: (_size_rank(r["size"]), variant_text(r["variant"])))
    return list(out.values())


def _size_rank(size: str) -> int:
    return SIZE_ORDER.index(size) if size in SIZE_ORDER else len(SIZE_ORDER)


def map_headline(result: MapResult) -> str:
    """A map's (``result``'s) answer in one clause: in how many cells its label holds on every
    seed, on some,
    on none (``summary.cell_groups``, the one grouping)."""
    groups = cell_groups(result.page.table)
    label = result.page.label
    every = sum(c.held(label) == c.n for c in groups)
    some = sum(0 < c.held(label) < c.n for c in groups)
    if not every and not some:
        return (f"on the map `{result.name}` the label '{label}' holds on no seed of any of "
                f"its {len(groups)} cells")
    return (f"on the map `{result.name}` the label '{label}' holds on every seed in {every} of "
            f"its {len(groups)} cells" + (f" and on some seeds in {some}" if some else ""))


def headline(results: StudyResults) -> str:
    """A study's finding in one sentence (the landing page's), computed from its ``results``."""
    parts = []
    if results.cards:
        first = results.cards[0]
        parts.append(f"at `{first['size']}` {counts_sentence(first['scorecard'])}")
    if results.maps:
        parts.append(map_headline(results.maps[0]))
    if not parts:
        return f"{results.study.title}: nothing recorded yet."
    return f"{results.study.title}: " + "; ".join(parts) + "."


def comparisons(results: StudyResults) -> list[tuple[dict, dict, dict]]:
    """(scaled record, paper record, ``results.scaled_comparison``) for each of a study's
    ``results`` records below ``paper`` whose scaled verdicts can be set beside paper's."""
    full = [r for r in results.cards if r["size"] == "paper"]
    return [(small, big, found) for big in full for small in results.cards
            if small["size"] != "paper" and (found := scaled_comparison(small, big))]


def finding_lines(results: StudyResults) -> list[str]:
    """The finding of a study's ``results``: one item per scorecard, scaled comparison, map and
    variant, in words."""
    lines = []
    for rec in results.cards:
        lines.append(f"- At `{rec['size']}` ({len(rec.get('seeds') or [])} seeds, commit "
                     f"`{commit_of(rec)[:7]}`): {counts_sentence(rec['scorecard'])}.")
    for small, big, found in comparisons(results):
        lines.append(f"- Of the {len(found['rows'])} claims judged at a scaled setting at "
                     f"`{small['size']}`, {found['agree']} get the verdict they get at "
                     f"`{big['size']}`.")
    for m in results.maps:
        lines.append(f"- Map `{m.name}`: {sentence(m.page.finding)}")
    for rec in results.variants:
        lines.append(f"- The variant {variant_text(rec['variant'])} at `{rec['size']}` (properties "
                     f"of our runs, never verdicts): "
                     f"{counts_sentence(rec['scorecard'], 'properties')}.")
    return lines or ["- Nothing recorded yet: no report run and no map table."]
