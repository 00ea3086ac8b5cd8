"""LoRA vs full fine-tuning on SmolLM2-135M-Instruct: seconds per step, peak memory, run-folder size.

Each mode runs in a fresh process (peak RSS is per process), the same settings and seed:

    python benchmarks/bench_lora.py                      # ranks 0 (full) and 8, 3 steps, P = 4, G = 4
    python benchmarks/bench_lora.py --ranks 0,1,8,32 --steps 5 -- --max-new 64

Prints one JSON line: per rank, the median CPU and wall seconds of the timed steps, the peak RSS,
the trainable parameters and the bytes the run folder holds after a checkpoint (full fine-tuning
stores the model, its AdamW state and the reference copy; LoRA only the adapters and their state).
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one(rank: int, steps: int, extra: list[str]) -> dict:
    sys.path.insert(0, str(ROOT))
    import torch

    from grpo_lab.lm import lora
    from grpo_lab.lm.config import GRPOConfig
    import argparse as _ap

    from grpo_lab.lm.flags import add_config_flags, overrides
    from grpo_lab.lm.trainer import Trainer

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as d:
        over = dict(model="smollm2-135m", chat_levels=(2, 3), prompts_per_step=4, G=4, max_new=40, temperature=0.7,
                    lr=2e-4 if rank else 2e-5, lr_warmup=0, progress=False, threads=1, chat_eval_per_level=1,
                    lora_rank=rank, out=str(Path(d) / "run"), checkpoint_seconds=0.0)
        fp = add_config_flags(_ap.ArgumentParser())
        over.update(overrides(fp.parse_args(extra), fp))
        tr = Trainer(GRPOConfig.preset("grpo", **over))
        tr.step()                                                  # warm-up, untimed
        wall, cpu = [], []
        for _ in range(steps):
            t, c = time.perf_counter(), time.process_time()
            tr.step()
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        tr.save_checkpoint()
        tr.close()
        size = sum(f.stat().st_size for f in (Path(d) / "run").rglob("*") if f.is_file())
        trainable, total = lora.n_trainable(tr.policy)
    return {"lora_rank": rank, "median_wall_s": statistics.median(wall), "median_cpu_s": statistics.median(cpu),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "run_folder_mb": size / 1e6,
            "trainable_params": trainable, "all_params": total}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="0,8", help="LoRA ranks to compare (0 = full fine-tuning)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per rank")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("extra", nargs="*", help="GRPOConfig flags for every run (after --)")
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(one(args.child, args.steps, args.extra)))
        return
    out = []
    for r in (int(x) for x in args.ranks.split(",")):
        res = subprocess.run([sys.executable, __file__, "--child", str(r), "--steps", str(args.steps), "--", *args.extra],
                             capture_output=True, text=True, check=False)
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
        if res.returncode or not lines:
            raise SystemExit(f"rank {r} failed:\n{res.stderr[-3000:]}")
        out.append(json.loads(lines[-1]))
    print(json.dumps({"runs": out}))


if __name__ == "__main__":
    main(sys.argv[1:])
