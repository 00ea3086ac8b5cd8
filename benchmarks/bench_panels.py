"""Panel update latency: compute + draw on the Agg canvas, median over >= 50 updates.

    python benchmarks/bench_panels.py [--updates 60] [--only 'bandit.*']

Each panel cycles through its ``bench_moves`` (control settings a student would make);
one update = ``panel.set(**move)`` (compute, update artists, blit or full redraw).
Prints a table: median and 90th percentile in ms, and how many updates needed a full redraw.
Goal (issue 2): every panel's median <= 30 ms on the course machines.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import statistics
import time

os.environ.setdefault("MPLBACKEND", "Agg")


def bench(cls, updates: int) -> dict:
    import matplotlib.pyplot as plt

    panel = cls()
    panel.fig.canvas.draw()                      # first full draw: layout + background
    full0 = panel.n_full_draws
    moves = cls.bench_moves
    times = []
    for i in range(updates):
        t0 = time.perf_counter()
        panel.set(**moves[i % len(moves)])
        times.append((time.perf_counter() - t0) * 1e3)
    plt.close(panel.fig)
    times.sort()
    return {"median_ms": statistics.median(times), "p90_ms": times[int(0.9 * (len(times) - 1))],
            "full_redraws": panel.n_full_draws - full0, "updates": updates}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--updates", type=int, default=60, help="updates per panel (>= 50 for the report)")
    ap.add_argument("--only", default="*", help="glob over panel names, e.g. 'bandit.*'")
    args = ap.parse_args(argv)
    from grpo_lab.viz import all_panels

    rows = [(name, bench(cls, args.updates)) for name, cls in sorted(all_panels().items())
            if fnmatch.fnmatch(name, args.only)]
    print(f"{'panel':32s} {'median ms':>10s} {'p90 ms':>8s} {'full redraws':>13s}")
    for name, r in rows:
        flag = "" if r["median_ms"] <= 30 else "  (> 30 ms goal)"
        print(f"{name:32s} {r['median_ms']:10.1f} {r['p90_ms']:8.1f} {r['full_redraws']:>6d}/{r['updates']:<6d}{flag}")


if __name__ == "__main__":
    main()
