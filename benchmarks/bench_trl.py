"""Speed of one GRPO step of TRL's GRPOTrainer on the issue-6 comparison configuration.

The counterpart of ``benchmarks/bench_loop.py``: the same flags, the same starting weights
(the warm-started tiny model is built by ``grpo_lab.lm.trainer.Trainer`` and saved to a
temporary folder, or ``--model DIR``), the same task (prompts ``a+b=``, a, b in 10..99),
the same reward (the task's verifier through ``grpo_lab.lm.trl_compat``) and the same
recipe (``grpo_lab.lm.handoff.to_trl_kwargs``: G = 8, 8 prompts per step, at most 16 new
tokens, β = 0.04, μ = 1, constant lr), on one thread, fp32, no vLLM, no gradient
checkpointing. Prints one JSON line with bench_loop's fields:

* ``median_s_per_step`` / ``median_cpu_s_per_step`` — wall clock and process CPU time of
  one optimiser step (TRL's ``on_step_begin`` → ``on_step_end``: generation, scoring,
  reference forward, policy forward + loss, backward, optimiser step);
* ``completions_per_s``, ``tokens_per_s`` (completion tokens, EOS included, as in bench_loop);
* ``peak_rss_mb``;
* ``phases_s`` — medians per step of ``sample`` (``_generate``), ``score`` (reward
  functions), ``ref`` (reference log-probs, no grad), ``policy`` (``compute_loss``: forward
  with grad + loss) and ``backward`` (``accelerator.backward``), measured by wrapping those
  TRL methods on the trainer instance; ``policy_forward`` is the forward pass inside
  ``policy``; ``other`` is the rest of the step (advantages, optimiser, bookkeeping).

Run both back to back on a quiet machine for the comparison (TRL is an optional extra,
``pip install -e '.[trl]'``)::

    python benchmarks/bench_loop.py  --steps 30 --warmup 5
    python benchmarks/bench_trl.py   --steps 30 --warmup 5

Wrapping the methods adds a few microseconds per call; on a shared machine prefer the CPU
time, and re-measure final numbers on a quiet one.
"""
from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from pathlib import Path

from _flags import comparison_config, comparison_parser  # benchmarks/_flags.py: shared with bench_loop.py

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def parse(argv=None):
    ap = comparison_parser(__doc__.split("\n\n")[0])   # beta = 0: TRL loads no reference model
    return ap, ap.parse_args(argv)


class ChatReward:
    """TRL reward function for the chat task (conversational prompts): the same verifier as the
    core loop (:meth:`grpo_lab.lm.chat_tasks.ChatTask.reward` on the text before EOS; a
    completion without EOS is truncated and gets 0)."""

    __name__ = "chat_reward"

    def __init__(self, task, tok):
        self.task, self.tok = task, tok

    def __call__(self, prompts, completions, completion_ids=None, numbers=None, level=None, **kw):
        from grpo_lab.lm.chat_tasks import ChatProblem

        out = []
        for ids, nums, lv in zip(completion_ids, numbers, level):
            trunc = len(ids) == 0 or int(ids[-1]) != self.tok.eos_token_id
            text = self.tok.decode(list(ids) if trunc else list(ids)[:-1], skip_special_tokens=False).strip()
            out.append(self.task.reward(text, ChatProblem(tuple(nums), int(lv)), trunc))
        return out


def _key(row) -> tuple:
    """A problem's identity in a dataset row: its level and operands."""
    nums = row["numbers"] if "numbers" in row else (row["a"], row["b"])
    return int(row["level"]), tuple(int(x) for x in nums)


def chat_dataset(problems):
    """A conversational dataset (TRL applies the tokenizer's chat template, as our loop does)."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": p.messages(), "answer": p.answer, "numbers": list(p.numbers),
                               "level": p.level} for p in problems])


class _PhaseTimer:
    """Wall time of named TRL methods, summed per optimiser step."""

    def __init__(self, sync):
        self.sync = sync
        self.cur = defaultdict(float)

    def wrap(self, obj, attr, name_fn):
        fn = getattr(obj, attr)

        def timed(*a, **kw):
            self.sync()
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.sync()
                self.cur[name_fn()] += time.perf_counter() - t0

        setattr(obj, attr, timed)


def main(argv=None) -> dict:
    ap, args = parse(argv)
    import torch

    torch.set_num_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    import trl
    from transformers import PrinterCallback, TrainerCallback
    from transformers.utils import logging as hf_logging

    from grpo_lab.lm.handoff import to_trl_kwargs
    from grpo_lab.lm.model import load_model
    from grpo_lab.lm import pretrained
    from grpo_lab.lm.chat_tasks import ChatTask, task_for
    from grpo_lab.lm.rollout import amp_mode
    from datasets import Dataset

    from grpo_lab.lm.sampling import first_round_problems
    from grpo_lab.lm.trl_compat import export_policy, reward_functions, rows_for

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    n_steps = args.warmup + args.steps
    cfg = comparison_config(ap, args)
    tmp = tempfile.TemporaryDirectory(prefix="bench_trl-")
    if cfg.model:                               # a short name or a local folder, loaded as our loop does
        model, tok = pretrained.load(cfg.model)
    else:
        model, tok = load_model(str(export_policy(cfg, Path(tmp.name) / "policy")))   # fp32, sdpa
    task, _ = task_for(cfg, tok)
    # the prompts our trainer asks at steps 1, 2, … in the same order (TRL's shuffling is off below),
    # so both sides answer the same questions step for step (and two steps more, in case TRL reads ahead)
    problems = first_round_problems(task, cfg, n_steps + 2)
    chat = isinstance(task, ChatTask)
    if chat:
        dataset, rewards = chat_dataset(problems), [ChatReward(task, tok)]
    else:
        dataset = Dataset.from_list(rows_for(problems))
        rewards = reward_functions(task, tok, overlong_buffer=cfg.overlong_buffer or None, max_new=cfg.max_new)
    kw = to_trl_kwargs(cfg)
    bf16 = amp_mode(cfg.bf16, cfg.cpu_bf16, cfg.device, pretrained=cfg.model is not None) == "always"
    if bf16:                                    # the same CPU bf16 autocast as our loop
        kw["bf16"] = True
    targs = trl.GRPOConfig(
        output_dir=str(Path(tmp.name) / "out"), report_to=[], save_strategy="no", logging_steps=10**9,
        disable_tqdm=True, gradient_checkpointing=False, dataloader_num_workers=0, use_vllm=False,
        shuffle_dataset=False, **kw)
    peft_config = None
    if cfg.lora_rank:                           # the same adapters as grpo_lab.lm.lora (TRL takes a peft_config)
        from grpo_lab.lm.lora import peft_config as lora_config

        peft_config = lora_config(cfg)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=rewards, peft_config=peft_config,
                              args=targs, train_dataset=dataset, processing_class=tok)

    cuda = trainer.accelerator.device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    pt = _PhaseTimer(sync)
    pt.wrap(trainer, "_generate", lambda: "sample")
    pt.wrap(trainer, "_calculate_rewards", lambda: "score")
    pt.wrap(trainer, "_get_per_token_logps_and_entropies",
            lambda: "policy_in_loss" if torch.is_grad_enabled() else "ref")
    pt.wrap(trainer, "compute_loss", lambda: "policy")
    pt.wrap(trainer.accelerator, "backward", lambda: "backward")
    n_tok = []
    gen = trainer._generate

    def counting_generate(*a, **k):
        out = gen(*a, **k)
        n_tok.append(sum(len(x) for x in out[1]))          # completion ids, EOS included
        return out

    trainer._generate = counting_generate
    steps, rewards_seen = [], []
    calc = trainer._calculate_rewards

    asked = []                                         # the problems TRL's steps answered, in order

    def recording_rewards(*a, **k):
        r = calc(*a, **k)
        rewards_seen.append(float(r[:, 0].mean()))
        inputs = k.get("inputs", a[0] if a else [])
        asked.extend(_key(row) for row in inputs[::cfg.G])   # one row per group of G completions
        return r

    trainer._calculate_rewards = recording_rewards

    class Clock(TrainerCallback):
        def on_step_begin(self, a, state, control, **k):
            pt.cur.clear()
            n_tok.clear()
            sync()
            self.w0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, a, state, control, **k):
            sync()
            w, c = time.perf_counter() - self.w0, time.process_time() - self.c0
            steps.append({"wall": w, "cpu": c, "tokens": sum(n_tok), "threads": torch.get_num_threads(),
                          **dict(pt.cur)})

    trainer.add_callback(Clock())
    trainer.remove_callback(PrinterCallback)          # keep stdout to the one JSON line
    trainer.train()
    timed = steps[args.warmup:]
    if not timed:
        raise SystemExit("no timed steps: increase --steps")
    med = statistics.median
    walls = [s["wall"] for s in timed]
    B = cfg.prompts_per_step * cfg.G
    phases = {k: round(med(s.get(k, 0.0) for s in timed), 5) for k in ("sample", "score", "ref", "policy", "backward")}
    phases["policy_forward"] = round(med(s.get("policy_in_loss", 0.0) for s in timed), 5)   # part of "policy"
    phases["other"] = round(med(s["wall"] - sum(s.get(k, 0.0) for k in ("sample", "score", "ref", "policy",
                                                                        "backward")) for s in timed), 5)
    out = {
        "framework": f"trl {trl.__version__}",
        "config": {"model": cfg.model or f"tiny-{cfg.arch}-{cfg.hidden}x{cfg.layers}", "G": cfg.G,
                   "prompts": cfg.prompts_per_step, "max_new": cfg.max_new, "beta": cfg.beta, "threads": cfg.threads,
                   "threads_seen": timed[-1]["threads"], "preset": cfg.preset, "mu": cfg.mu,
                   "levels": ",".join(map(str, task.levels)),                   # the task's own levels
                   "device": str(trainer.accelerator.device), "params": sum(p.numel() for p in model.parameters()),
                   "loss_type": kw["loss_type"], "bf16": targs.bf16, "gradient_checkpointing": False,
                   "task": "chat" if chat else "addition", "temperature": cfg.temperature},
        "steps": len(timed),
        "median_s_per_step": round(med(walls), 5),
        "median_cpu_s_per_step": round(med(s["cpu"] for s in timed), 5),
        "completions_per_s": round(B * len(timed) / sum(walls), 2),
        "tokens_per_s": round(sum(s["tokens"] for s in timed) / sum(walls), 2),
        "mean_response_len": round(statistics.mean(s["tokens"] for s in timed) / B, 3),
        "reward_mean": round(statistics.mean(rewards_seen[args.warmup:]), 4),
        # True when every step answered the prompts grpo_lab's trainer asks at that step
        "same_prompts_as_grpo_lab": bool(asked) and asked == [_key(row) for row in dataset][:len(asked)],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "phases_s": phases,
    }
    if cuda:
        out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(out))
    tmp.cleanup()
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
