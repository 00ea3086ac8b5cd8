"""`make lab`, the README's main command, starts a JupyterLab server — also as root (issue 16 #13).

The test asks the Makefile for the exact command its ``lab`` target runs (``make
lab-command``), starts it on a free loopback port, waits until the server answers, and stops it.
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lab_command(**make_vars) -> list[str]:
    args = [f"{k}={v}" for k, v in make_vars.items()]
    out = subprocess.run(["make", "-s", "--no-print-directory", "lab-command", *args], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return shlex.split(out.strip())


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_passes_allow_root_exactly_when_root():
    argv = _lab_command(VENV=Path(sys.executable).parent.parent)
    assert argv[:3] == [str(Path(sys.executable).parent / "jupyter"), "lab", "notebooks/"]
    assert ("--allow-root" in argv) == (os.geteuid() == 0)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_server_answers_on_loopback(lab_server):
    venv = Path(sys.executable).parent.parent
    body = lab_server(lambda flags: _lab_command(VENV=venv, LAB_ARGS=" ".join(flags)), cwd=ROOT)
    assert '"started"' in body                    # /api/status: the server's own status record
