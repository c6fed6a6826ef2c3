"""The stack's settings (tests/stack/e2e_settings.py) under the name tests/workers/bench_settings.py
imports them by: that module leaves for bench/ with its own import, and this one with it."""

from tests.stack.e2e_settings import *  # noqa: F403
