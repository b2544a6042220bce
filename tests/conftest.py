"""Test configuration: the suite runs against the compiled build, or the .py sources when
SEARCHBENCH_PURE=1 (board/_purepy.py installs the import hook before anything else loads)."""
import os

import board  # noqa: F401  (installs the pure-Python import hook first when requested)
from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("pure", deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("pure" if os.environ.get("SEARCHBENCH_PURE") == "1" else "default")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_external_switch_stays_in_its_test() -> object:
    """``searchbench --no-external-programs`` sets an environment variable for its process (worker
    processes inherit it); a test that runs the command in-process must not pass it on to the next."""
    from engines.catalog import NO_EXTERNAL_ENV

    before = os.environ.get(NO_EXTERNAL_ENV)
    yield
    if before is None:
        os.environ.pop(NO_EXTERNAL_ENV, None)
    else:
        os.environ[NO_EXTERNAL_ENV] = before
