"""Precompute notebook 07's short training runs per preset into grpo_lab/data/family_runs.csv.

Each run costs minutes on a laptop CPU, so notebook 07 loads this file by default (a flag
cell recomputes live). The runs call the public ``grpo_lab.lm.train`` through
:func:`grpo_lab.lm.preset_runs.run_presets`; nothing here re-implements the loop.

    python scripts/make_family_runs.py                     # the committed file (see DEFAULTS)
    python scripts/make_family_runs.py --jobs 2 --seeds 0,1,2 --steps 150
    python scripts/make_family_runs.py --out /tmp/runs.csv --lr 1e-3

On CPU a run is deterministic given the seed, the thread count (1 per job) and the library
versions; the JSON written next to the CSV records the command, each preset's GRPOConfig (the seed varies per
run) and the code version (grpo_lab.provenance.code_version: package version, git commit, libraries).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The settings of the committed file. μ = 2 so that ratios leave 1 and clipping can fire.
DEFAULTS = dict(steps=150, seeds="0,1,2", mu=2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default="grpo,dr_grpo,dapo,gspo")
    ap.add_argument("--seeds", default=DEFAULTS["seeds"], help="comma-separated seeds (default %(default)s)")
    ap.add_argument("--steps", type=int, default=DEFAULTS["steps"])
    ap.add_argument("--mu", type=int, default=DEFAULTS["mu"], help="policy updates per batch")
    ap.add_argument("--lr", type=float, default=None, help="learning rate (default: the preset's)")
    ap.add_argument("--levels", default=None, help="addition difficulty levels, e.g. 1,2 (default: the preset's)")
    ap.add_argument("--jobs", type=int, default=2, help="parallel processes (one thread each)")
    ap.add_argument("--out", default=None, help="CSV path (default: grpo_lab/data/family_runs.csv)")
    args = ap.parse_args(argv)

    from grpo_lab.lm import preset_runs
    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.provenance import code_version

    out = Path(args.out) if args.out else ROOT / "grpo_lab" / "data" / preset_runs.RUNS_FILE
    overrides = dict(steps=args.steps, mu=args.mu, threads=1)
    if args.lr is not None:
        overrides["lr"] = args.lr
    if args.levels is not None:
        overrides["levels"] = tuple(int(x) for x in args.levels.split(","))
    t0 = time.time()
    df = preset_runs.run_presets(args.presets.split(","), [int(s) for s in args.seeds.split(",")], jobs=args.jobs,
                                 **overrides)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False, float_format="%.6g")
    meta = {"command": "python scripts/make_family_runs.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "presets": args.presets.split(","), "seeds": args.seeds, "overrides": {k: list(v) if isinstance(v, tuple) else v for k, v in overrides.items()},
            "configs": {p: GRPOConfig.preset(p, **overrides).to_dict() for p in args.presets.split(",")},
            "seconds": round(time.time() - t0, 1), "code_version": code_version()}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {out} ({len(df)} rows) in {meta['seconds']} s")


if __name__ == "__main__":
    main()
