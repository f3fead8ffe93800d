"""The ``toymech`` command, one package: ``parser`` (the parser and ``main``), ``args`` (exit
codes, ``UsageError``, ``--param`` / ``--set`` parsing, the ``--cache`` check), ``zoo_commands``
(``train``, ``sweep``, ``map``, ``ladder``, ``list``, ``zoo verify``) and ``report_commands``
(``report``, ``lab``, ``results``). Imports go one way: parser -> commands -> args."""

from .args import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError, parse_sets
from .parser import build_parser, main

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "UsageError",
           "build_parser", "main", "parse_sets"]
