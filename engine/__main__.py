"""Entry point for `python -m engine`."""

from engine.cli import main

raise SystemExit(main())
