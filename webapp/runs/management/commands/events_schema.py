"""`manage.py events_schema`: print the JSON Schema of one frame of a run's stream (ws/runs/<id>/)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from webapp.runs.stream.event_types import stream_json_schema


class Command(BaseCommand):
    help = (
        "Print the JSON Schema of the run stream's frames (state, replayed and every event type)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(json.dumps(stream_json_schema(), indent=2, sort_keys=False))
