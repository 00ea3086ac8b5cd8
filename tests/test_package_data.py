"""A non-editable install ships every cached data file the notebooks read (issue 21 #3).

``pyproject.toml``'s ``package-data`` lists glob patterns; a file under ``grpo_lab/data`` that no
pattern matches is missing from the wheel, and the notebook reading it shows nothing after
``pip install .`` (notebook 08's ``real_lm`` folder was missed this way once).
"""
import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "grpo_lab"


def _patterns():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["grpo_lab"]


def _shipped(rel: str, patterns) -> bool:
    # setuptools globs per path segment: '*' does not cross '/'
    return any(rel.count("/") == p.count("/") and fnmatch.fnmatch(rel, p) for p in patterns)


def test_every_cached_data_file_is_in_the_wheel():
    patterns = _patterns()
    files = [f.relative_to(PKG).as_posix() for f in (PKG / "data").rglob("*")
             if f.is_file() and not any(part.startswith(".") for part in f.relative_to(PKG).parts)]
    assert any(f.startswith("data/real_lm/evals/") for f in files)          # the capstone's evaluations exist
    missing = [f for f in files if not _shipped(f, patterns)]
    assert not missing, f"pyproject.toml [tool.setuptools.package-data] misses: {missing}"


def test_unfinished_slices_are_not_shipped():
    assert not _shipped("data/real_lm/evals/.parts/before/slice_000.csv", _patterns())
