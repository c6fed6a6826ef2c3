"""The runs tests' fixtures (a queued run of team A; tasks to an in-memory broker)."""

from tests.webapp.runs.conftest import _memory_broker, run_a  # noqa: F401 - fixtures
