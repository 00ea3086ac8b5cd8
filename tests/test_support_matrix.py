"""The support matrix (README "Supported versions"): the floor run really runs the floors.

`make test-floor` sets GRPO_LAB_MATRIX=floor: every requirement must then be installed at
exactly the floor requirements.txt declares (the floors we promise are the ones we test).
`make test-newest` sets it to "newest" (Python 3.13). Without it (the main run) only the
parsing is checked.
"""
import os
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MATRIX = os.environ.get("GRPO_LAB_MATRIX", "")


def floors() -> dict[str, str]:
    out = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)>=([^ ,;#]+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _padded(v: str) -> tuple:
    parts = [int(x) for x in re.findall(r"\d+", v.split("+")[0])[:3]]
    return tuple(parts + [0] * (3 - len(parts)))


def test_requirements_declare_floors():
    f = floors()
    assert {"numpy", "pandas", "torch", "transformers", "matplotlib"} <= set(f), f


@pytest.mark.skipif(MATRIX != "floor", reason="only in `make test-floor`")
def test_floor_combination_runs_every_floor():
    assert sys.version_info[:2] == (3, 11)      # pyproject's requires-python
    assert re.search(r'requires-python = ">=3\.11"', (ROOT / "pyproject.toml").read_text())
    wrong = {name: (want, metadata.version(name)) for name, want in floors().items()
             if name != "torch" and _padded(metadata.version(name)) != _padded(want)}
    assert not wrong, f"installed ≠ declared floor: {wrong}"


@pytest.mark.skipif(MATRIX != "newest", reason="only in `make test-newest`")
def test_newest_combination_is_python_3_13_above_the_floors():
    assert sys.version_info[:2] == (3, 13)
    below = {n: v for n, v in floors().items() if _padded(metadata.version(n)) < _padded(v)}
    assert not below, below


def test_the_matrix_stages_run_the_cached_data_and_english_notebook_tests():
    """Issue 21 #2: every cached file is loaded under the floor and the newest pandas, i.e. both
    matrix stages collect tests/test_cached_data.py (not ignored, not marked slow) and the notebooks."""
    make = (ROOT / "Makefile").read_text()
    m = re.search(r"^MATRIX_TESTS \?=(.*?)(?<!\\)\n", make, flags=re.M | re.S)
    assert m, "Makefile: MATRIX_TESTS not found"
    selection = m.group(1)
    assert re.search(r"(^|\s)tests(\s|$)", selection) and "notebooks/*.ipynb" in selection, selection
    assert "test_cached_data" not in selection and "not slow" in selection, selection
    assert "pytest.mark.slow" not in (ROOT / "tests" / "test_cached_data.py").read_text()
    assert re.search(r"^test-floor:.*\n(\t.*\n)*\t.*matrix-run", make, flags=re.M)
    assert re.search(r"^test-newest:.*\n(\t.*\n)*\t.*matrix-run", make, flags=re.M)
