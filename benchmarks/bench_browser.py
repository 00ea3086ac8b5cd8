"""Key press -> changed plot in a real browser: JupyterLab + headless Chromium, every widget notebook.

    python benchmarks/bench_browser.py [--only '03*']

Runs the browser suite (tests/browser, needs Debian's `chromium` and the `playwright`
package) and prints its table: for every control of every panel, the time from the key
press in the page to the first animation frame whose canvas pixels differ (kernel
round trip, compute, draw, PNG, websocket, canvas paint). Goal: median <= 150 ms.
Per-move Python-side numbers (compute + draw on Agg) are in bench_panels.py.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="*", help="glob over notebook names, e.g. '0[1-3]*'")
    args = ap.parse_args(argv)
    table = ROOT / "test-artifacts" / "browser" / "latency.txt"
    table.unlink(missing_ok=True)
    env = dict(os.environ, BROWSER_NOTEBOOKS=args.only)
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/browser", "-q", "-rs", "-m", "browser"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not table.exists():
        print(proc.stdout[-6000:], proc.stderr[-2000:], sep="\n")
    if table.exists():
        print(table.read_text(), end="")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
