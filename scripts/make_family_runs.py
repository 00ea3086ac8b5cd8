"""Precompute the cached tiny-LM runs of notebooks 06 and 07 into grpo_lab/data/ (resumable).

Each run costs minutes on a laptop CPU, so the notebooks load these files by default (a flag
cell recomputes live). The run sets are :data:`grpo_lab.lm.preset_runs.RUN_SETS`:

* ``presets``  -> family_runs.csv: the four presets exactly as ``GRPOConfig.preset`` defines
  them (notebook 07 §3);
* ``controls`` -> family_controls.csv: the grpo preset with one change each — β = 0 (the
  control for the presets' different β), no ÷σ (Dr. GRPO's first fix alone), the KL folded
  into the reward (form 2 of lecture notes 000 §3); 100 steps (notebook 07 §3);
* ``sweep``    -> group_sweep_runs.csv: the grpo preset at G = 2, 4, 8, 16 and τ = 0.7, 1.3,
  40 steps, μ = 1 (notebook 06 §8);
* ``aggregation`` -> aggregation_runs.csv: notebook 06's eq. (6) vs eq. (7) runs (the grpo
  preset and the same with ``agg="token-mean"``), class size, 200 steps, μ = 1, with held-out
  accuracy before and after (notebook 06).

Runs go seed by seed across the sets (seed 0 of every set first).

Every run calls the public ``grpo_lab.lm.train`` through
:func:`grpo_lab.lm.preset_runs.run_one`; nothing here re-implements the loop. Each finished
run is written at once to ``--cache`` (one CSV + one JSON with its full config, the git
commit, the seconds and the library versions), so a killed invocation loses at most the run
in progress: run the same command again and it skips what is done. When every run of a set
is there, the set's file is (re)written; ``--merge-partial`` writes it from whatever is done.

    python scripts/make_family_runs.py                      # every set, seeds 0,1,2
    python scripts/make_family_runs.py --sets controls,sweep --merge-partial   # what made the cached files
    python scripts/make_family_runs.py --sets presets --jobs 2
    python scripts/make_family_runs.py --sets aggregation                 # notebook 06's eq. (6) vs eq. (7)

On CPU a run is deterministic given the seed, the thread count (1 per job) and the library
versions (the presets of the committed file were checked to reproduce step for step).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_SEEDS = "0,1,2"


def _git_commit() -> str | None:
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "grpo_lab"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head + ("+uncommitted changes in grpo_lab/" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def _slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in label.replace("τ", "tau"))


def _run_task(task):
    """Run one (set, label, preset, seed, overrides) and write it to the cache; returns its meta."""
    set_name, label, preset, seed, overrides, cache, commit = task
    import torch

    from grpo_lab.lm import preset_runs
    from grpo_lab.lm.config import GRPOConfig

    t0 = time.time()
    df = preset_runs.run_one(label, preset, seed, **overrides)
    cfg = GRPOConfig.preset(preset, seed=seed, **overrides)
    stem = Path(cache) / set_name / f"{_slug(label)}_seed{seed}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    meta = {"set": set_name, "run": label, "preset": preset, "seed": seed, "overrides": overrides,
            "config": json.loads(json.dumps(cfg.__dict__, default=list)), "git_commit": commit,
            "seconds": round(time.time() - t0, 1), "torch": torch.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    tmp = stem.with_suffix(".csv.tmp")
    df.to_csv(tmp, index=False, float_format="%.6g")
    stem.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp, stem.with_suffix(".csv"))            # the CSV appears last: its presence means "done"
    print(f"[{set_name}] {label} seed {seed}: {meta['seconds']} s", flush=True)
    return meta


def _merge(set_name, tasks, cache, out_dir, *, partial=False):
    import pandas as pd

    from grpo_lab.lm import preset_runs

    file, shared, _ = preset_runs.RUN_SETS[set_name]
    done, frames, metas = [], [], []
    for _, label, _, seed, _, _, _ in tasks:
        stem = Path(cache) / set_name / f"{_slug(label)}_seed{seed}"
        if stem.with_suffix(".csv").exists():
            frames.append(pd.read_csv(stem.with_suffix(".csv")))
            metas.append(json.loads(stem.with_suffix(".json").read_text()))
            done.append((label, seed))
    missing = [(t[1], t[3]) for t in tasks if (t[1], t[3]) not in done]
    if missing and not partial:
        print(f"[{set_name}] {len(missing)} run(s) not done yet: {missing}; not writing {file}")
        return
    if not frames:
        return
    out = Path(out_dir) / file
    pd.concat(frames, ignore_index=True).to_csv(out, index=False, float_format="%.6g")
    summary = {"command": "python scripts/make_family_runs.py --sets " + set_name, "set": set_name,
               "shared_overrides": shared, "missing": missing,
               "wall_seconds_summed": round(sum(m["seconds"] for m in metas), 1),   # wall clock, shared machine
               "runs": [{k: m[k] for k in ("run", "preset", "seed", "overrides", "git_commit", "seconds", "torch",
                                            "python", "finished", "config")} for m in metas]}
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out} ({len(frames)} runs{', PARTIAL' if missing else ''})")


def main(argv=None):
    from grpo_lab.lm import preset_runs

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(preset_runs.RUN_SETS),
                    help="comma-separated run sets, run in this order (default %(default)s)")
    ap.add_argument("--seeds", default=DEFAULT_SEEDS, help="comma-separated seeds (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes, one thread each (default 1)")
    ap.add_argument("--cache", default=str(ROOT / "runs" / "cached_runs"),
                    help="folder of the finished runs (resuming skips them; default %(default)s)")
    ap.add_argument("--out-dir", default=str(ROOT / "grpo_lab" / "data"), help="where the set files go")
    ap.add_argument("--merge-partial", action="store_true",
                    help="write each set's file from the runs done so far (its JSON lists the missing ones)")
    ap.add_argument("--merge-only", action="store_true", help="run nothing, only (re)write the set files")
    args = ap.parse_args(argv)

    sets = [s for s in args.sets.split(",") if s]
    for s in sets:
        if s not in preset_runs.RUN_SETS:
            ap.error(f"--sets: unknown set {s!r}; expected some of {', '.join(preset_runs.RUN_SETS)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        ap.error(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    if args.jobs < 1:
        ap.error(f"--jobs: expected an integer >= 1, got {args.jobs}")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    commit = _git_commit()            # the code is imported once, at the start: record that version
    plan = {}
    for s in sets:
        _, shared, runs = preset_runs.RUN_SETS[s]
        plan[s] = [(s, label, preset, seed, {**shared, **ov, "threads": 1}, args.cache, commit)
                   for seed in seeds for label, preset, ov in runs]
    # seed by seed (every set's runs for the first seed, then the next): an interrupted
    # invocation leaves whole seeds to compare, and each seed's warm start is trained once
    todo = [t for seed in seeds for s in sets for t in plan[s] if t[3] == seed
            and not (Path(args.cache) / s / f"{_slug(t[1])}_seed{t[3]}.csv").exists()]
    print(f"{sum(map(len, plan.values())) - len(todo)} run(s) already done, {len(todo)} to run", flush=True)
    if not args.merge_only and todo:
        if args.jobs == 1:
            for t in todo:
                try:
                    _run_task(t)
                except Exception as e:          # one failed run must not lose the others: report, go on
                    print(f"[{t[0]}] {t[1]} seed {t[3]} FAILED: {type(e).__name__}: {e}", flush=True)
        else:
            import multiprocessing as mp

            with mp.get_context("spawn").Pool(args.jobs) as pool:
                for _ in pool.imap_unordered(_run_task, todo):
                    pass
    for s in sets:
        _merge(s, plan[s], args.cache, args.out_dir, partial=args.merge_partial)


if __name__ == "__main__":
    main()
