"""Fixtures for the browser suite: a throw-away JupyterLab server and a headless Chromium.

The suite needs Debian's ``chromium`` (``apt-get install chromium``) and the Python
``playwright`` package; it never downloads a browser (``playwright install`` is not
used), it drives the system Chromium through ``executable_path``. When either is
missing the tests skip with the reason -- except under CI (env ``CI`` set), where they
fail, so that CI cannot silently pass without a browser.

The server runs on a free 127.0.0.1 port without a token (loopback only, for the
duration of the session), serves a temporary copy of ``notebooks/`` (nothing is
written into the repository), and uses temporary settings/workspace/config directories
so a developer's own JupyterLab settings cannot change the result. It is stopped by its
PID (its process group: the server and the kernels it started) in the fixture finalizer.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
# The notebooks served (a copy); another folder only to check the suite itself.
NOTEBOOK_DIR = Path(os.environ.get("BROWSER_NOTEBOOK_DIR", ROOT / "notebooks"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
SERVER_START_TIMEOUT_S = 120

# JupyterLab user settings for the session: render every cell (no virtual scrolling, so
# the DOM holds every output area), and never ask about or fetch news/updates.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}

RESULTS_KEY = pytest.StashKey[list]()


def unavailable(reason: str):
    """Skip locally, fail under CI: CI must really run the browser suite."""
    if os.environ.get("CI"):
        pytest.fail(f"browser suite cannot run under CI: {reason}", pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _die_with_parent() -> None:
    """Linux: SIGTERM the server if pytest itself is killed (the finalizer would not run)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except Exception:
        pass


class LabServer:
    def __init__(self, proc: subprocess.Popen, url: str, root: Path, log: Path):
        self.proc, self.url, self.root, self.log = proc, url, root, log

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no server log)"

    def stop(self) -> None:
        """Stop the server and its kernels: SIGTERM to its process group, then SIGKILL."""
        if self.proc.poll() is not None:
            return
        pgid = self.proc.pid                      # started with start_new_session=True
        for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        # kernels left in the group after the server exited
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="session")
def playwright_sync():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the Python package `playwright` is not installed (pip install playwright)")
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory, playwright_sync):
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOK_DIR, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    settings = base / "settings"
    for rel, value in LAB_SETTINGS.items():
        path = settings / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)                   # a student's kernel: %matplotlib widget decides
    env.update(JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
               JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               PYTHONUNBUFFERED="1")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = base / "server.log"
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.allow_root=True",
           f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
           "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_die_with_parent)
    server = LabServer(proc, url, root, log)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not (_answers(f"{url}/api/status") and _answers(f"{url}/lab")):
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{server.log_tail()}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within {SERVER_START_TIMEOUT_S} s:\n"
                            f"{server.log_tail()}", pytrace=False)
            time.sleep(0.25)
        yield server
    finally:
        server.stop()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, ARTIFACTS / "jupyterlab-server.log")


@pytest.fixture(scope="session")
def browser(playwright_sync, tmp_path_factory):
    """A headless Chromium with a fresh user-data dir (a persistent context)."""
    ctx = playwright_sync.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    ctx.set_default_timeout(30_000)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def latency_rows(request):
    """Rows of the key-press -> changed-plot table, printed in the terminal summary."""
    return request.config.stash.setdefault(RESULTS_KEY, [])


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[(n - 1) // 2] + xs[n // 2]) / 2 if n else float("nan")


def format_table(rows) -> str:
    runs = [r for r in rows if r["kind"] == "run-all"]
    rows = [r for r in rows if r["kind"] != "run-all"]
    lines = [f"{'notebook':24s} {'panel':34s} {'control':28s} {'moves':>5s} {'median ms':>9s} {'max ms':>7s}"]
    for r in rows:
        ms = r["latencies_ms"]
        med = f"{_median(ms):9.0f}" if ms else f"{'-':>9s}"
        mx = f"{max(ms):7.0f}" if ms else f"{'-':>7s}"
        note = "" if r["changed"] == r["presses"] else "  <- " + "; ".join(r["notes"])
        lines.append(f"{r['notebook'][:24]:24s} {r['panel'][:34]:34s} {r['control'][:28]:28s} "
                     f"{r['presses']:>5d} {med} {mx}{note}")
    per_panel = {}
    for r in rows:
        per_panel.setdefault((r["notebook"], r["panel"]), []).extend(r["latencies_ms"])
    lines.append("")
    lines.append(f"{'per panel':59s} {'moves':>5s} {'median ms':>9s} {'max ms':>7s}")
    for (nb, panel), ms in per_panel.items():
        if ms:
            lines.append(f"{nb[:24]:24s} {panel[:34]:34s} {len(ms):>5d} {_median(ms):9.0f} {max(ms):7.0f}")
        else:
            lines.append(f"{nb[:24]:24s} {panel[:34]:34s} {0:>5d} {'-':>9s} {'-':>7s}  (nothing moved)")
    all_ms = [x for r in rows for x in r["latencies_ms"]]
    if all_ms:
        panel_medians = [_median(v) for v in per_panel.values() if v]
        lines.append(f"all moves: n={len(all_ms)}  median {_median(all_ms):.0f} ms  max {max(all_ms):.0f} ms;"
                     f"  median of panel medians {_median(panel_medians):.0f} ms  (goal <= 150 ms)")
    for r in runs:
        how = "restart + run all" if r.get("mode", "run-all") == "run-all" else "restart + cell by cell"
        lines.append(f"{r['notebook']}: {how} {r['run_all_s']:.1f} s, {r['panels']} panel(s), "
                     f"{r['controls']} control(s) exercised")
        if r.get("live_frames"):
            lines.append("    figures that changed while a later cell ran (cell:figure -> distinct images): "
                         + ", ".join(f"{k} -> {n}" for k, n in r["live_frames"].items()))
        for note in r["notes"]:
            lines.append(f"    {note}")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    rows = config.stash.get(RESULTS_KEY, None)
    if not rows:
        return
    terminalreporter.section("browser: key press -> changed plot (JupyterLab + Chromium)")
    terminalreporter.write_line(format_table(rows))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "latency.json").write_text(json.dumps(rows, indent=1))
    (ARTIFACTS / "latency.txt").write_text(format_table(rows) + "\n")


def pytest_collection_modifyitems(session, config, items):
    """Run the browser suite after the unit and notebook tests (it is the slowest part)."""
    browser = [it for it in items if it.get_closest_marker("browser")]
    if browser:
        items[:] = [it for it in items if not it.get_closest_marker("browser")] + browser
