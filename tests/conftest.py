"""Test configuration: the suite runs against the compiled build, or the .py sources when
SEARCHBENCH_PURE=1 (board/_purepy.py installs the import hook before anything else loads)."""
import os

import board  # noqa: F401  (installs the pure-Python import hook first when requested)
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("pure", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pure" if os.environ.get("SEARCHBENCH_PURE") == "1" else "default")
