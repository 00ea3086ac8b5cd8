"""Precompute notebook 06's deliberately broken runs into grpo_lab/data/broken_runs.csv.

Four short runs (``grpo_lab.lm.broken_runs.RUNS``: healthy, no warm start, ÷σ on noisy rewards,
learning rate too high), 100 steps each at notebook 06's class size, one thread, seed 0:
about 4 CPU-minutes in all. Run it in the background:

    OMP_NUM_THREADS=1 nohup python scripts/make_broken_runs.py > broken_runs.log 2>&1 &
    python scripts/make_broken_runs.py --runs healthy,lr_high --steps 50 --out /tmp/b.csv

The JSON written next to the CSV records the command, every run's GRPOConfig, the seconds and the code
version (grpo_lab.provenance.code_version: package version, git commit, library versions).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None):
    from grpo_lab.lm import broken_runs as br
    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.provenance import code_version

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default=",".join(r.name for r in br.RUNS), help="comma-separated run names")
    ap.add_argument("--steps", type=int, default=br.BASE["steps"])
    ap.add_argument("--out", default=None, help="CSV path (default: grpo_lab/data/broken_runs.csv)")
    args = ap.parse_args(argv)
    names = args.runs.split(",")
    unknown = set(names) - set(br.BY_NAME)
    if unknown:
        ap.error(f"--runs: unknown run(s) {sorted(unknown)}; choose from {sorted(br.BY_NAME)}")

    import torch

    torch.set_num_threads(1)
    out = Path(args.out) if args.out else br.DATA / br.RUNS_FILE
    t0, frames, seconds = time.time(), [], {}
    for name in names:
        t = time.time()
        frames.append(br.run_one(br.BY_NAME[name], steps=args.steps))
        seconds[name] = round(time.time() - t, 1)
        print(f"{name}: {seconds[name]} s", flush=True)
    import pandas as pd

    df = pd.concat(frames, ignore_index=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.6g")
    meta = {"command": "python scripts/make_broken_runs.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "base": {k: list(v) if isinstance(v, tuple) else v for k, v in {**br.BASE, "steps": args.steps}.items()},
            "runs": {r.name: {"overrides": r.overrides, "reward_noise": r.reward_noise} for r in br.RUNS if r.name in names},
            "eval_after": {n: f.attrs.get("eval_after") for n, f in zip(names, frames)},
            "configs": {n: GRPOConfig.preset("grpo", **{**br.BASE, "steps": args.steps, **br.BY_NAME[n].overrides}).to_dict()
                        for n in names},
            "seconds": seconds, "seconds_total": round(time.time() - t0, 1),
            "code_version": code_version()}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1, default=float) + "\n")
    print(f"wrote {out} ({len(df)} rows) in {meta['seconds_total']} s")


if __name__ == "__main__":
    main()
