"""The README's Python example runs."""

import pathlib
import subprocess
import sys


def test_the_example_runs():
    example = pathlib.Path(__file__).parents[1] / "examples" / "all_reduce.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "every element is 10.0" in out.stdout
