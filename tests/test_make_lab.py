"""`make lab`, the README's main command, starts a JupyterLab server — also as root (issue 16 #13).

The test asks the Makefile for the exact command its ``lab`` target runs (``make
lab-command``), starts it on a free loopback port, waits until the server answers, and stops it.
"""
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
def test_make_lab_server_answers_on_loopback(tmp_path):
    port, token = _free_port(), "grpo-lab-test"
    argv = _lab_command(VENV=Path(sys.executable).parent.parent,
                        LAB_ARGS=f"--no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
                                 f"--ServerApp.port_retries=0 --IdentityProvider.token={token}")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = open(tmp_path / "lab.log", "w+")
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/api/status?token={token}"
        answered = None
        for _ in range(240):                      # up to ~2 minutes on a busy machine
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    answered = r.status
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        log.seek(0)
        assert answered == 200, f"jupyter lab exited with {proc.poll()} or never answered:\n{log.read()[-3000:]}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
