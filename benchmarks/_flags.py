"""Flags shared by bench_loop.py and bench_trl.py: one definition, so the two benchmarks
of the issue-6 comparison always describe the same configuration and start from the same
(cached) warm-started weights.

The configuration flags are generated from :class:`grpo_lab.lm.config.GRPOConfig`
(:func:`grpo_lab.lm.flags.add_config_flags`, the builder ``python -m grpo_lab train`` uses);
this module only sets the comparison's defaults and adds the timing flags.
"""
from __future__ import annotations

import argparse

# The comparison configuration of issue 6 (GRPOConfig field -> default).
# lr_warmup = 0: TRL's warm-up runs one step behind ours (its first step gets lr 0, ours lr/N;
# handoff's lr row), so with a warm-up the timed steps would sample from policies at different
# points. Without a warm-up both take the same lr at every step (docs/lm.md, "Speed").
DEFAULTS = dict(preset="grpo", G=8, prompts_per_step=8, max_new=16, beta=0.04, threads=1, levels=(2,), mu=1,
                device="cpu", warmstart_steps=1000, seed=0, progress=False, kl_metric=False, lr_warmup=0)


def comparison_parser(description: str) -> argparse.ArgumentParser:
    """Every GRPOConfig field as a flag (comparison defaults), plus --steps (timed) and --warmup."""
    from grpo_lab.lm.flags import add_config_flags

    ap = argparse.ArgumentParser(description=description)
    add_config_flags(ap, exclude=("steps",), defaults=DEFAULTS)
    ap.add_argument("--steps", type=int, default=20, help="timed steps (the run has --warmup more)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    return ap


def comparison_config(ap: argparse.ArgumentParser, args: argparse.Namespace, **fixed):
    """The GRPOConfig of the comparison: warmup + timed steps; no warm start for a local --model."""
    from grpo_lab.lm.flags import config_from_args

    if getattr(args, "model", None) is not None:
        fixed.setdefault("warmstart_steps", 0)
    return config_from_args(ap, args, steps=args.warmup + args.steps, **fixed)
