"""Run a grpo_lab preset with TRL's GRPOTrainer: same task, same verifier, same starting weights.

The hand-off of notebook 07: what ``python -m grpo_lab train --preset NAME`` does on one
machine, carried to a framework that scales. Everything TRL needs comes from grpo_lab:

* the recipe — ``grpo_lab.lm.handoff.to_trl_kwargs(GRPOConfig.preset(NAME))``;
* the data — ``grpo_lab.lm.trl_compat.build_dataset`` (prompts ``a+b=``, answers in a column);
* the reward — ``grpo_lab.lm.trl_compat.reward_functions`` (the task's own verifier, plus
  DAPO's overlong shaping for the dapo preset);
* the model — the tiny Llama after the cached warm start, saved as a normal transformers
  folder (``--model DIR`` takes any local causal LM instead). Nothing is downloaded.

One process (CPU or one GPU)::

    python examples/train_with_trl.py --preset grpo --steps 50 --out runs/trl-grpo

Many GPUs (TRL splits each batch of P·G completions over the processes; P·G must divide)::

    python examples/train_with_trl.py --preset dapo --out runs/trl-dapo --prepare-only
    accelerate launch --num_processes 8 examples/train_with_trl.py --preset dapo --steps 500 \\
        --out runs/trl-dapo --model runs/trl-dapo/init_model

Output in ``--out``: ``trl_config.json`` (the kwargs passed), ``metrics.jsonl`` (TRL's log,
one line per step), ``eval.json`` (held-out accuracy before/after, computed with
grpo_lab's evaluator), ``final_model/``. Where TRL's conventions differ from the course
(sample std, no dynamic sampling, …) see ``grpo_lab.lm.handoff.DIFFERENCES``; the script
prints the ones that apply.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# The example's defaults for GRPOConfig fields (every other field keeps the preset's value).
DEFAULTS = dict(preset="grpo", steps=50, seed=0, device="auto", model=None, threads=None, progress=False)


def build_parser() -> argparse.ArgumentParser:
    """Every GRPOConfig field as a flag (the builder of ``python -m grpo_lab train``) plus the
    example's own: --out (TRL's output folder), --prepare-only, --no-eval."""
    from grpo_lab.lm.flags import add_config_flags

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder (metrics, eval, final model)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="only write OUT/init_model (run once before `accelerate launch`)")
    ap.add_argument("--no-eval", action="store_true", help="skip the held-out accuracy before/after")
    # --out is the example's (TRL's output folder), not GRPOConfig.out (grpo_lab's run folder)
    return add_config_flags(ap, exclude=("out",), defaults=DEFAULTS)


def parse(argv=None):
    return build_parser().parse_args(argv)


def make_config(args):
    """The GRPOConfig of the flags; a bad value exits with an error naming the flag."""
    from grpo_lab.lm.flags import config_from_args

    return config_from_args(build_parser(), args)


def main(argv=None) -> dict:
    args = parse(argv)
    out = Path(args.out)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    cfg = make_config(args)
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)
    from grpo_lab.lm.trl_compat import export_policy

    init_dir = out / "init_model"
    if args.model is None:
        if world > 1:
            raise SystemExit("with several processes, write the starting model first: run this script once with "
                             f"--prepare-only, then pass --model {init_dir}")
        export_policy(cfg, init_dir)
        print(f"starting model written to {init_dir}")
    if args.prepare_only:
        return {"init_model": str(init_dir)}

    warnings.filterwarnings("ignore", category=FutureWarning)   # transformers 5 renames a TRL default
    import trl

    from grpo_lab.lm.evaluation import evaluate
    from grpo_lab.lm.handoff import DIFFERENCES, to_trl_kwargs
    from grpo_lab.lm.model import load_model
    from grpo_lab.lm.tasks import AdditionTask
    from grpo_lab.lm.trl_compat import build_dataset, reward_functions

    model_dir = args.model or str(init_dir)
    model, tok = load_model(model_dir)
    task = AdditionTask(levels=cfg.levels, partial=cfg.partial_credit)
    kw = to_trl_kwargs(cfg, num_processes=world)
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        (out / "trl_config.json").write_text(json.dumps(kw, indent=1, sort_keys=True))
        for d in DIFFERENCES:
            if (d.topic.startswith("dynamic") and cfg.dynamic_sampling) or d.topic.startswith("std estimator"):
                print(f"note — {d.topic}: TRL: {d.trl}")
    eval_problems = task.heldout(cfg.eval_per_level, seed=1234)
    do_eval = not args.no_eval and rank == 0
    before = evaluate(model, tok, task, eval_problems, max_new=cfg.max_new) if do_eval else None

    dataset = build_dataset(task, cfg.prompts_per_step * max(cfg.steps, 1) + cfg.prompts_per_step, seed=cfg.seed)
    targs = trl.GRPOConfig(output_dir=str(out / "trl"), report_to=[], logging_steps=1, save_strategy="no",
                           gradient_checkpointing=False, disable_tqdm=rank != 0, **kw)
    trainer = trl.GRPOTrainer(model=model, processing_class=tok, args=targs, train_dataset=dataset,
                              reward_funcs=reward_functions(task, tok, overlong_buffer=cfg.overlong_buffer or None,
                                                            max_new=cfg.max_new))
    trainer.train()
    result = {"preset": cfg.preset, "steps": trainer.state.global_step, "processes": world}
    trainer.save_model(str(out / "final_model"))        # every rank: sharded (FSDP/DeepSpeed) models gather here
    if rank == 0:
        with open(out / "metrics.jsonl", "w") as f:
            for row in trainer.state.log_history:
                f.write(json.dumps(row) + "\n")
        tok.save_pretrained(str(out / "final_model"))
        if do_eval:
            policy = trainer.accelerator.unwrap_model(trainer.model)
            after = evaluate(policy, tok, task, eval_problems, max_new=cfg.max_new)
            result.update(acc_before=before["acc"], acc_after=after["acc"])
            (out / "eval.json").write_text(json.dumps({"before": before, "after": after}, indent=1))
        rewards = [r["reward"] for r in trainer.state.log_history if "reward" in r]
        if rewards:
            result.update(reward_first=rewards[0], reward_last=rewards[-1])
        print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
