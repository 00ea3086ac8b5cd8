"""``python -m grpo_lab train``: run GRPO on the tiny LM (or a local model) from the shell."""
from __future__ import annotations

import argparse
import json
import sys

DESCRIPTION = """\
Train a small causal LM with GRPO on verifiable addition problems (seed 000 §5).
Writes OUT/metrics.csv and OUT/metrics.jsonl (one row per step), OUT/config.json,
OUT/eval_before.json / eval_after.json (held-out accuracy) and checkpoints under
OUT/checkpoints/. Runs offline on a CPU in minutes; uses CUDA when available.
"""

EPILOG = """\
examples:
  python -m grpo_lab train --preset grpo --steps 200 --out runs/grpo
  python -m grpo_lab train --preset dapo --steps 200 --out runs/dapo --device cpu --seed 1
  python -m grpo_lab train --preset grpo --steps 400 --out runs/grpo --resume   # continue a killed run
"""


def build_parser() -> argparse.ArgumentParser:
    from grpo_lab.lm.config import DEVICES, GRPOConfig

    ap = argparse.ArgumentParser(prog="python -m grpo_lab train", description=DESCRIPTION, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", required=True, choices=sorted(GRPOConfig.PRESETS),
                    help="recipe: grpo (DeepSeekMath: std-normalised Â, clip 0.2, seq-mean, k3 KL β=0.04), "
                         "dr_grpo (no std, constant normaliser), dapo (clip-higher, dynamic sampling, "
                         "token-mean, overlong shaping), gspo (sequence-level ratio)")
    ap.add_argument("--steps", type=int, required=True, help="number of GRPO steps (P·G responses each)")
    ap.add_argument("--out", required=True, help="run folder for metrics, evaluations and checkpoints")
    ap.add_argument("--model", default=None,
                    help="local causal-LM directory with its tokenizer (default: a ~1M-parameter Llama "
                         "created from a config and warm-started by SFT); trust_remote_code stays off")
    ap.add_argument("--hub", action="store_true",
                    help="allow --model to be a Hugging Face Hub id (org/name) and download it; without this flag "
                         "nothing touches the network and a missing local path is an error")
    ap.add_argument("--device", default="auto", choices=DEVICES,
                    help="auto = CUDA if available (bf16 autocast) else CPU (fp32)")
    ap.add_argument("--resume", action="store_true",
                    help="continue from the last checkpoint in --out (same seed and settings); "
                         "on CPU the result equals an uninterrupted run")
    ap.add_argument("--seed", type=int, default=0, help="seed for model init, prompts and sampling (default 0)")
    ap.add_argument("--G", type=int, default=None, help="responses per prompt, the group size (>= 2)")
    ap.add_argument("--prompts", type=int, default=None, help="prompts per step")
    ap.add_argument("--max-new", type=int, default=None, help="token budget per response (EOS included)")
    ap.add_argument("--beta", type=float, default=None, help="KL coefficient β (preset default otherwise)")
    ap.add_argument("--lr", type=float, default=None, help="GRPO learning rate")
    ap.add_argument("--mu", type=int, default=None, help="policy updates per batch (μ inner iterations)")
    ap.add_argument("--levels", default=None, help="difficulty levels, e.g. 1,2 (1: 0-9, 2: 10-99, 3: 100-999)")
    ap.add_argument("--warmstart-steps", type=int, default=None, help="SFT warm-start steps (0 = none; cached)")
    ap.add_argument("--warmstart-target", type=float, default=None,
                    help="stop the warm start once every level's probe accuracy reaches this (default 0.5)")
    ap.add_argument("--checkpoint-every", type=int, default=0, help="checkpoint interval in steps (0 = at the end)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default 1: fastest for the tiny model, robust on a busy CPU)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def main(argv=None) -> int:
    from grpo_lab.lm.config import GRPOConfig

    ap = build_parser()
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    overrides = {"steps": args.steps, "out": args.out, "model": args.model, "hub": args.hub, "device": args.device,
                 "resume": args.resume, "seed": args.seed, "checkpoint_every": args.checkpoint_every,
                 "progress": not args.no_progress}
    for flag, field in (("threads", "threads"), ("G", "G"), ("prompts", "prompts_per_step"), ("max_new", "max_new"), ("beta", "beta"),
                        ("lr", "lr"), ("mu", "mu"), ("warmstart_steps", "warmstart_steps"),
                        ("warmstart_target", "warmstart_target")):
        if getattr(args, flag) is not None:
            overrides[field] = getattr(args, flag)
    try:
        if args.levels is not None:
            overrides["levels"] = tuple(int(x) for x in args.levels.split(","))
        cfg = GRPOConfig.preset(args.preset, **overrides)
        from grpo_lab.lm.trainer import Trainer

        trainer = Trainer(cfg)
    except (ValueError, TypeError) as e:
        ap.error(str(e))
    from grpo_lab.lm.trainer import TrainingDiverged

    try:
        df = trainer.run()
    except (TrainingDiverged, ValueError, OSError) as e:   # one clear line, not a traceback
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 1
    before, after = df.attrs["eval_before"]["greedy"], df.attrs["eval_after"]["greedy"]
    print(json.dumps({"steps": int(trainer.step_count), "out": args.out,
                      "heldout_acc_before": round(before["acc"], 4), "heldout_acc_after": round(after["acc"], 4),
                      "last_reward_mean": round(float(df["reward_mean"].iloc[-1]), 4) if len(df) else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
