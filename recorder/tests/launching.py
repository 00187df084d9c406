"""What the launcher's tests share: running `python -m capsim_recorder run`
on a trace path, and reading a trace back. No torch import here."""

import json
import os
import subprocess
import sys

PACKAGE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def launch(trace, *args, wait=True, timeout=300):
    """`python -m capsim_recorder run -o TRACE ARGS...`: a finished run, or
    the Popen of a running one (wait=False)."""
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT)
    cmd = [sys.executable, "-m", "capsim_recorder", "run", "-o", trace, *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
