"""The text corpus the tasks read: the shipped Tiny Shakespeare (gzipped package data), or a
user's text file. The one loader (Birth's bigram statistics and the character-level LM both
read it)."""

from __future__ import annotations

import functools
import gzip
import importlib.resources
from pathlib import Path

SHIPPED = "tinyshakespeare.txt.gz"


@functools.lru_cache(maxsize=8)
def read_corpus(path: str | None = None) -> str:
    """The corpus text: the shipped gzipped Tiny Shakespeare when ``path`` is None, else a UTF-8
    text file (gzipped when its name ends in .gz). An unreadable file is a ValueError naming it."""
    try:
        if path is None:
            res = importlib.resources.files("toymech.data") / SHIPPED
            return gzip.decompress(res.read_bytes()).decode("utf-8")
        p = Path(path).expanduser()
        raw = p.read_bytes()
        return (gzip.decompress(raw) if p.suffix == ".gz" else raw).decode("utf-8")
    except (OSError, UnicodeDecodeError, gzip.BadGzipFile) as err:
        raise ValueError(f"corpus={path!r} is not allowed: a readable UTF-8 text file ({err})"
                         ) from None
