"""`manage.py reap_runs [--loop SECONDS]`: interrupt and requeue runs whose worker was lost.

Each pass also sends every owed or lost task again (runs.train, runs.export, runs.explain,
datasets.process) and removes crash leftovers: webapp/runs/scheduling/reaper.py::run_reap.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from webapp.runs.scheduling.reaper import run_reap


class Command(BaseCommand):
    help = (
        "Mark runs whose worker stopped heartbeating interrupted, then requeue (or fail) them; "
        "send owed or lost tasks again; remove crash leftovers."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--loop", type=float, default=0.0, help="repeat every N seconds")

    def handle(self, *args: Any, loop: float = 0.0, **options: Any) -> None:
        while True:
            close_old_connections()
            reaped = run_reap()
            if reaped:
                self.stdout.write(f"interrupted runs: {', '.join(map(str, reaped))}")
            if not loop:
                return
            time.sleep(loop)
