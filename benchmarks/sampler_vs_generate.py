"""Do grpo_lab's sampler and transformers' ``generate`` give replies of the same length?

A check, not a timing: the same SmolLM2-135M-Instruct, the same prompts (8 chat problems, levels 1
and 3, 4 of each), the same settings (τ = 0.7, no top-k/top-p, ≤ 40 new tokens, EOS =
``<|im_end|>``; fp32, or with ``--bf16`` each side as the benchmark's bf16 rows sample), G = 16
replies per prompt and ``--reps`` repeats with different seeds on each side. Prints one JSON line:
each side's mean reply length (EOS counted) and finish rate, and the mean over prompts of the
per-prompt difference (ours − generate) with a 95 % t interval over the prompts.

Why it exists: in ``bench_vs_trl.py --real`` TRL's replies were longer than ours in every run that
reported lengths, with different prompts and with the same ones (docs/lm.md, "Speed of a real-model
step"). This check asks whether the samplers themselves differ.

    python benchmarks/sampler_vs_generate.py --reps 3
    python benchmarks/sampler_vs_generate.py --reps 3 --bf16
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def main(argv=None) -> dict:
    import numpy as np
    import torch

    from grpo_lab.lm import pretrained
    from grpo_lab.lm.chat_tasks import ChatTask
    from grpo_lab.lm.evaluation import _t975, encode_prompts
    from grpo_lab.lm.rollout import Bf16Sampler, autocast, sample

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="repeats per side, each with its own seed")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bf16", action="store_true",
                    help="as the benchmark's bf16 rows sample: ours from the bf16 copy (Bf16Sampler) under CPU "
                         "autocast, generate under CPU bf16 autocast on the fp32 weights (as TRL with bf16=True)")
    args = ap.parse_args(argv)
    if args.reps < 1:
        raise SystemExit(f"--reps must be >= 1, got {args.reps}")
    torch.set_num_threads(args.threads)
    model, tok = pretrained.load("smollm2-135m")
    model.eval()
    problems = ChatTask(levels=(1, 3)).sample(8, np.random.default_rng(7), stratified=True)
    ids, mask = encode_prompts(tok, problems)
    P, G, T, tau, eos = len(problems), 16, 40, 0.7, tok.eos_token_id
    ours_model = Bf16Sampler(model).model if args.bf16 else model
    amp = "always" if args.bf16 else False
    lengths = {"grpo_lab": [], "generate": []}          # per repeat: (P, G) reply lengths
    finished = {"grpo_lab": [], "generate": []}
    for rep in range(args.reps):
        ro = sample(ours_model, ids, mask, G=G, max_new=T, temperature=tau, eos_id=eos, pad_id=tok.pad_token_id,
                    generator=torch.Generator().manual_seed(100 + rep), amp=amp)
        lengths["grpo_lab"].append(ro.lengths.numpy().reshape(P, G))
        finished["grpo_lab"].append((~ro.truncated).numpy().reshape(P, G))
        torch.manual_seed(200 + rep)
        with torch.no_grad(), autocast("cpu", amp):
            out = model.generate(input_ids=ids.repeat_interleave(G, 0), attention_mask=mask.repeat_interleave(G, 0),
                                 do_sample=True, temperature=tau, top_k=0, top_p=1.0, max_new_tokens=T,
                                 eos_token_id=eos, pad_token_id=tok.pad_token_id)
        rows = out[:, ids.shape[1]:].tolist()                                   # (P·G, ≤ T)
        lengths["generate"].append(np.array([r.index(eos) + 1 if eos in r else len(r) for r in rows]).reshape(P, G))
        finished["generate"].append(np.array([eos in r for r in rows]).reshape(P, G))
    per_prompt = {k: np.stack(v).astype(float).mean(axis=(0, 2)) for k, v in lengths.items()}   # (P,)
    d = per_prompt["grpo_lab"] - per_prompt["generate"]
    half = _t975(P - 1) * d.std(ddof=1) / np.sqrt(P)                 # t interval over the P prompts
    out = {"prompts": P, "replies_per_side": P * G * args.reps, "temperature": tau, "max_new": T,
           "precision": "bf16" if args.bf16 else "fp32",
           **{f"{k}_mean_len": round(float(np.mean(v)), 2) for k, v in lengths.items()},
           **{f"{k}_finish_rate": round(float(np.mean(v)), 3) for k, v in finished.items()},
           "diff_mean_len": round(float(d.mean()), 2),
           "diff_95ci": [round(float(d.mean() - half), 2), round(float(d.mean() + half), 2)],
           "per_prompt_mean_len": {k: [round(float(x), 1) for x in v] for k, v in per_prompt.items()}}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
