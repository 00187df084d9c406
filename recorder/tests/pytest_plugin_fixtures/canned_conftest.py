"""The conftest of test_pytest_plugin.py's inner pytest sessions (copied
beside each inner test file as conftest.py): a test marked
`@pytest.mark.canned("NAME.jsonl")` is "recorded" without torch, its trace
the canned file of that name in CAPSIM_CANNED_DIR; `fail="start"` or
`fail="stop"` plays a recorder that fails there. Unmarked tests get the
plugin's real recorder. `RECORDING["on"]` says whether a canned recording
is running (the body must run inside it, its fixtures outside).
"""

import os
import shutil

import pytest

from capsim_recorder import pytest_plugin

CANNED = os.environ.get("CAPSIM_CANNED_DIR", "")
RECORDING = {"on": False}
REAL = pytest_plugin.open_recording


def pytest_configure(config):
    config.addinivalue_line("markers", "canned(name, fail=None): a canned recording")


class Canned:
    def __init__(self, source, path, fail):
        self.source, self.path, self.fail = source, path, fail

    def __enter__(self):
        if self.fail == "start":
            raise RuntimeError("the canned recorder refuses to start")
        RECORDING["on"] = True
        return self

    def __exit__(self, *exc):
        RECORDING["on"] = False
        if self.fail == "stop":
            raise OSError("the canned recorder could not write its trace")
        shutil.copyfile(self.source, self.path)
        return False


def canned_recording(item, path):
    marker = item.get_closest_marker("canned")
    if marker is None:
        return REAL(item, path)
    return Canned(os.path.join(CANNED, marker.args[0]), path, marker.kwargs.get("fail"))


pytest_plugin.open_recording = canned_recording


@pytest.fixture
def outside():
    """A fixture: it runs before the recording starts."""
    return RECORDING["on"]
