"""``python -m toymech`` is the ``toymech`` command."""

from toymech.cli import main

raise SystemExit(main())
