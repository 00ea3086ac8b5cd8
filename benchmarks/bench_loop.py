"""Speed of one GRPO step of grpo_lab.lm (sampling, scoring, reference, policy, backward).

Prints one JSON line: median seconds per step (wall clock and process CPU time),
completions/s, tokens/s, peak RSS and the median time of each phase. The comparison
configuration of issue 6 is the default: the tiny Llama (hidden 128, MLP 512, 4 layers,
4 heads, tied embeddings, fp32, character tokenizer), prompts ``a+b=`` with a, b in
10..99 (level 2), G = 8, 8 prompts per step, at most 16 new tokens, β = 0.04, 1 thread,
one policy update per batch (μ = 1), starting from the cached warm start.

    python benchmarks/bench_loop.py                      # the comparison config
    python benchmarks/bench_loop.py --model DIR --G 16   # any local causal LM

On a shared machine the wall clock is inflated by other processes; ``median_cpu_s_per_step``
(CPU time of this process; with one thread ≈ the compute cost) is the steadier figure.
Re-measure final numbers on a quiet machine.
"""
from __future__ import annotations

import json
import resource
import statistics
import sys
import time

from _flags import comparison_config, comparison_parser  # benchmarks/_flags.py: shared with bench_trl.py


def parse(argv=None):
    """Every GRPOConfig field is a flag (--kl-metric, --no-dedup: TRL's behaviour, …); see _flags.py."""
    ap = comparison_parser(__doc__.split("\n\n")[0])
    return ap, ap.parse_args(argv)


def main(argv=None) -> dict:
    ap, args = parse(argv)
    import torch

    torch.set_num_threads(args.threads)
    from grpo_lab.lm.trainer import Trainer

    # beta = 0 skips the reference forward unless --kl-metric asks for the KL column
    cfg = comparison_config(ap, args, kl_metric=args.kl_metric or args.beta > 0)
    tr = Trainer(cfg)
    walls, cpus, rows, phase_cpu = [], [], [], []
    for i in range(args.warmup + args.steps):
        c0, w0 = time.process_time(), time.perf_counter()
        row = tr.step()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if i >= args.warmup:
            walls.append(w)
            cpus.append(c)
            rows.append(row)
            phase_cpu.append(tr.last_cpu_times)
    med = statistics.median
    s = med(walls)
    comps = [r["n_groups"] * cfg.G for r in rows]
    toks = [r["n_tokens"] for r in rows]
    out = {
        "config": {"model": cfg.model or f"tiny-{cfg.arch}-{cfg.hidden}x{cfg.layers}", "G": cfg.G,
                   "prompts": cfg.prompts_per_step, "max_new": cfg.max_new, "beta": cfg.beta, "threads": cfg.threads,
                   "preset": cfg.preset, "mu": cfg.mu, "dedup": cfg.dedup,
                   "levels": ",".join(map(str, tr.task.levels)),                 # the task's own levels
                   "device": str(tr.device), "task": type(tr.task).__name__, "amp": tr.amp,
                   "temperature": cfg.temperature,
                   "params": sum(p.numel() for p in tr.policy.parameters())},
        "steps": args.steps,
        "median_s_per_step": round(s, 5),
        "median_cpu_s_per_step": round(med(cpus), 5),
        "completions_per_s": round(sum(comps) / sum(walls), 2),
        "tokens_per_s": round(sum(toks) / sum(walls), 2),
        "mean_response_len": round(statistics.mean(r["len_mean"] for r in rows), 3),
        "reward_mean": round(statistics.mean(r["reward_mean"] for r in rows), 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "phases_s": {k: round(med(r[f"t_{k}"] for r in rows), 5)
                     for k in ("sample", "score", "ref", "policy", "backward")},
        "phases_cpu_s": {k: round(med(p.get(k, 0.0) for p in phase_cpu), 5)
                         for k in ("sample", "score", "ref", "policy", "backward")},
    }
    if tr.device.type == "cuda":
        out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
