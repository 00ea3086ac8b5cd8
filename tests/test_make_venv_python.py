"""`make` notices a venv built by another Python (issue 21: the matrix builds venvs with 3.10/3.11/
3.13, and a checkout's .venv may predate a Python change) and rebuilds it, saying so, instead of
reusing it. Checked with `make -n` (nothing is installed): a venv of Python A with its install
stamp up to date, and PYTHON pointing at Python B."""
import glob
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"
OTHERS = sorted(p for p in glob.glob(os.path.expanduser("~/.pyenv/versions/3.1*/bin/python3.1*"))
                if not p.endswith("-config") and not p.endswith(f"python{HERE}") and p[-1].isdigit())

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _venv(where: Path) -> Path:
    venv.EnvBuilder(with_pip=False, symlinks=True).create(where)
    for stamp in (".grpo_lab-installed", ".grpo_lab-test-extras"):
        (where / stamp).touch()             # newer than requirements.txt: up to date for make
    return where


def _dry_run(venv_dir: Path, python: str) -> str:
    r = subprocess.run(["make", "-n", "--no-print-directory", "venv", f"VENV={venv_dir}", f"PYTHON={python}"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout + r.stderr


def test_a_venv_of_the_same_python_is_reused(tmp_path):
    out = _dry_run(_venv(tmp_path / "v"), sys.executable)
    assert "rebuilding" not in out and "pip install" not in out, out


@pytest.mark.skipif(not OTHERS, reason="needs a second Python under ~/.pyenv")
def test_a_venv_of_another_python_is_rebuilt_and_the_reason_said(tmp_path):
    v = _venv(tmp_path / "v")
    other = OTHERS[-1]
    want = Path(other).name.removeprefix("python")
    out = _dry_run(v, other)
    assert f"{v} was built with Python {HERE}, but PYTHON={other} is Python {want}: rebuilding" in out, out
    assert f"rm -rf {v}" in out and f"{other} -m venv {v}" in out and "pip install" in out, out
