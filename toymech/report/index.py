"""The index of a reports folder (``index.html`` + ``index.json``) and the offline check of a page.

The index keeps two things apart: whether each notebook *ran* (ok / failed) and what its claims
came to (the verdict counts of its scorecard). Each row shows the size and the seeds it ran with.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

from plotly.offline import get_plotlyjs

from ..display import circuitsvis_bundle_script
from ..files import replace_file
from .scorecards import scorecard_counts, scorecard_table_html, verdict_class, verdict_counts

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"


@dataclass
class ReportEntry:
    """One executed and rendered notebook (paths relative to the index's directory)."""

    notebook: str
    html: str
    executed: str
    status: str  # "ok" or "failed": whether the notebook ran, not what its claims came to
    size: str  # the notebooks' size parameter: smoke, default or paper
    device: str  # as asked (auto, cpu, ...)
    seed: int
    wall_s: float
    date: str
    versions: dict
    size_bytes: int = 0
    error: str | None = None  # "ValueError: ..." for a failed run
    parameters: dict = field(default_factory=dict)
    title: str = ""  # the notebook's first heading
    scorecard: dict | None = None  # {"columns": [...], "rows": [[...], ...]}, see find_scorecard
    seeds: str = ""  # the seeds it ran with, as the header says them ("3 (0, 1, 2)")
    device_used: str = ""  # as resolved (the kernel's own report when it gave one)
    code: bool = False  # rendered with the code (toymech report --code)
    commit: str = ""  # the toymech source's git commit (core.source_commit)
    machine: dict = field(default_factory=dict)  # models.reference.machine_record
    command: str = ""  # the command that made the report, as the user would type it
    finding: list = field(default_factory=list)  # its first sentences of "What this run found"

    @property
    def ok(self) -> bool:
        """Whether the notebook ran to its end (not what its claims came to)."""
        return self.status == "ok"


def versions() -> dict:
    # importlib.metadata, not imports: the CLI process should not pay for importing torch.
    found = {}
    for dist in ("torch", "transformer-lens", "toymech"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    return found


def _load_previous(out: Path) -> list[ReportEntry]:
    try:
        rows = json.loads((out / "index.json").read_text(encoding="utf-8"))
        return [ReportEntry(**row) for row in rows]
    except (OSError, ValueError, TypeError):
        return []  # no index yet, or one written by an incompatible version: start afresh


def _summary(rows: Sequence[ReportEntry]) -> dict:
    ran_ok = sum(e.ok for e in rows)
    claims: dict[str, int] = {}
    for e in rows:
        for word, n in verdict_counts(e.scorecard).items():
            claims[word] = claims.get(word, 0) + n
    return {"n": len(rows), "ok": ran_ok, "failed": len(rows) - ran_ok,
            "claims": ", ".join(f"{n} {w}" for w, n in claims.items())}


def write_index(out_dir: str | Path, entries: Sequence[ReportEntry]) -> Path:
    """Write ``index.html`` + ``index.json`` into the reports folder ``out_dir``: ``entries``
    plus earlier ones whose HTML still exists. Returns the index page's path."""
    out = Path(out_dir)
    fresh = {entry.html for entry in entries}
    kept = [e for e in _load_previous(out) if e.html not in fresh and (out / e.html).is_file()]
    rows = sorted(kept + list(entries), key=lambda e: e.html)
    replace_file(out / "index.json", json.dumps([asdict(e) for e in rows], indent=1))

    import jinja2
    import markupsafe

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES_DIR), autoescape=True)
    view = [
        {**asdict(e), "name": Path(e.notebook).stem,
         "extra": ", ".join(f"{k}={v!r}" for k, v in e.parameters.items()),
         # Built (and escaped) by scorecard_table_html, so the template must not escape it again.
         "scorecard_html": markupsafe.Markup(scorecard_table_html(e.scorecard)) if e.scorecard else None,
         "scorecard_counts": scorecard_counts(e.scorecard) if e.scorecard else "",
         "verdicts": [(w, n, verdict_class(w)) for w, n in verdict_counts(e.scorecard).items()]}
        for e in rows
    ]
    # A column that no row fills is left out: the table fits a 1,280 px window.
    columns = {"parameters": any(v["extra"] for v in view), "error": any(v["error"] for v in view)}
    page = env.get_template("reports_index.html.j2").render(rows=view, summary=_summary(rows), columns=columns)
    path = out / "index.html"
    replace_file(path, page)
    mark_written(out, ["index.json", "index.html"])
    return path


MARKER = ".toymech-reports.json"  # {file name: sha256} of the index files toymech wrote here


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def written_by_toymech(out: Path) -> dict[str, str]:
    """{file name: sha256} of the files toymech recorded writing into ``out`` ({} if none)."""
    try:
        data = json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(data, dict) else {}


def mark_written(out: Path, names: Sequence[str]) -> None:
    """Record ``names`` in ``out`` as toymech's own (their sha256), for the next run to know."""
    record = written_by_toymech(out)
    record.update({n: _sha(out / n) for n in names if (out / n).is_file()})
    replace_file(out / MARKER, json.dumps(record, indent=1, sort_keys=True))


# Loads the browser would make by itself: tag attributes (links <a href> are navigation, not
# loads), CSS url()/@import, and ES module imports. Vendored bundles are cut out first because
# they contain URL string literals that are never fetched; the browser test covers them.
_LOAD_PATTERNS = [
    re.compile(r"<(?!a\b)[a-zA-Z][^>]*?\s(?:src|href|data)\s*=\s*[\"']?([^\"'\s>]*)", re.I),
    re.compile(r"url\(\s*[\"']?([^\"')]*)", re.I),
    re.compile(r"@import\s+[\"']([^\"']*)", re.I),
    re.compile(r"(?<![@\w.])import\s*\(\s*[\"'`]([^\"'`]*)"),
    re.compile(r"(?<![@\w.])import\s+(?:[\w{}\s,*]+\s+from\s+)?[\"']([^\"']+)[\"']"),
]


def _bundle_sources() -> list[str]:

    bundle = circuitsvis_bundle_script()
    return [get_plotlyjs(), bundle[bundle.index(">") + 1 : bundle.rindex("</script>")]]


def external_loads(page: str) -> list[str]:
    """URLs that ``page`` (an HTML document) would load from outside itself.

    ``data:`` URIs and ``#fragment`` references are self-contained; anything else (http(s),
    protocol-relative, relative file paths, empty ``src=""``) is returned.
    """
    for source in _bundle_sources():
        page = page.replace(source, "")
    found = []
    for pattern in _LOAD_PATTERNS:
        for match in pattern.finditer(page):
            url = match.group(1).strip()
            if url.startswith(("data:", "#")) or url == "about:blank":
                continue
            found.append(url)
    return found
