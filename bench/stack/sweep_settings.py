"""Settings of bench/sweep_overhead.py's stack: bench/stack/settings.py with no step delay, and,
when NETLOOM_BENCH_PROFILE names a file, the training worker under cProfile (written at its exit).
"""

import os
import sys

from bench.stack.settings import *  # noqa: F403

RUNS_STEP_DELAY_SECONDS = 0.0

_PROFILE = os.environ.get("NETLOOM_BENCH_PROFILE")
if _PROFILE and "worker" in sys.argv and "train" in sys.argv:
    import atexit
    import cProfile

    _profiler = cProfile.Profile()
    _profiler.enable()
    atexit.register(lambda: (_profiler.disable(), _profiler.dump_stats(_PROFILE)))
