"""Shared test set-up: headless matplotlib, deterministic hypothesis profile."""
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- a JupyterLab server started by a test (tests/test_make_lab.py, tests/test_wheel_install.py) ---
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab_server(tmp_path):
    """``serve(argv_for, *, cwd, env=None, path="/api/status") -> str``: start a JupyterLab server.

    ``argv_for(flags)`` returns the command line, given the server flags to pass on (loopback
    only, a free port, no browser, a test token). ``serve`` waits (up to ~2 minutes on a busy
    machine) until ``path`` answers 200 and returns the body; a server that exits or never
    answers fails the test with the tail of its log. Every server is stopped at teardown.
    """
    import subprocess
    import time
    import urllib.error
    import urllib.request

    running = []

    def serve(argv_for, *, cwd, env=None, path="/api/status") -> str:
        port, token = _free_port(), "grpo-lab-test"
        flags = ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                 "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
        env = {**(os.environ if env is None else env), "JUPYTER_RUNTIME_DIR": str(tmp_path / "lab-runtime")}
        log = open(tmp_path / f"lab-{len(running)}.log", "w+")
        proc = subprocess.Popen(argv_for(flags), cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env)
        running.append((proc, log, port))
        for _ in range(240):
            if proc.poll() is not None:
                break
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}?token={token}", timeout=2) as r:
                    if r.status == 200:
                        return r.read().decode()
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        log.seek(0)
        pytest.fail(f"{argv_for(flags)[0]} exited with {proc.poll()} or never answered {path}:\n{log.read()[-3000:]}")

    yield serve
    left = []
    for proc, log, port in running:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        for _ in range(20):                    # the server must stop with the process the test started
            left = _servers_on(port)
            if not left:
                break
            time.sleep(0.5)
        for pid in left:
            os.kill(pid, 9)
        if left:
            pytest.fail(f"stopping {proc.args[0]} left the JupyterLab server on port {port} running "
                        f"(pid {left}): a signal to the launcher must reach the server")


def _servers_on(port: int) -> list[int]:
    """PIDs of processes started with ``--ServerApp.port=port`` (Linux /proc; elsewhere none are seen)."""
    from pathlib import Path

    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"--ServerApp.port={port}".encode() in argv:
            out.append(int(d.name))
    return out
