"""Flags shared by bench_loop.py and bench_trl.py: one definition, so the two benchmarks
of the issue-6 comparison always describe the same configuration and start from the same
(cached) warm-started weights."""
from __future__ import annotations

import argparse


def comparison_parser(description: str) -> argparse.ArgumentParser:
    """The comparison configuration of issue 6 as defaults; each script adds its own flags."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", default=None, help="local causal-LM directory (default: the tiny warm-started Llama)")
    ap.add_argument("--G", type=int, default=8, help="responses per prompt (group size)")
    ap.add_argument("--prompts", type=int, default=8, help="prompts per step")
    ap.add_argument("--max-new", type=int, default=16, help="token budget per response")
    ap.add_argument("--beta", type=float, default=0.04, help="KL coefficient")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--preset", default="grpo", help="grpo, dr_grpo, dapo or gspo")
    ap.add_argument("--levels", default="2", help="comma-separated difficulty levels (2: a, b in 10..99)")
    ap.add_argument("--mu", type=int, default=1, help="policy updates per batch (TRL: num_iterations)")
    ap.add_argument("--device", default="cpu", help="auto, cpu or cuda")
    ap.add_argument("--warmstart-steps", type=int, default=1000,
                    help="cap on SFT steps of the (cached) warm start; it stops at 50%% probe accuracy")
    ap.add_argument("--seed", type=int, default=0)
    # real pretrained model (--model smollm2-135m): the chat task (grpo_lab.lm.chat_tasks)
    ap.add_argument("--chat-levels", default="1,3", help="chat-task levels for a model with a chat template")
    ap.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    ap.add_argument("--cpu-bf16", choices=("auto", "on", "off"), default="auto",
                    help="bf16 autocast on the CPU (auto: on for a pretrained model on a CPU with bf16 units); "
                         "TRL gets bf16=True when this resolves to on")
    # tiny-model size (ignored with --model)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--family", default="llama")
    return ap


def cpu_bf16(flag: str):
    """GRPOConfig.cpu_bf16 from the --cpu-bf16 flag."""
    return {"auto": None, "on": True, "off": False}[flag]
