"""GPU check for grpo_lab.lm (issue 6): bf16 loss vs CPU fp32 on a frozen batch, then loop speed.

One prepared script of a few minutes on a CUDA machine:

1. a Qwen2 config of ≈0.5B-parameter shape (hidden 896, 24 layers, 14 heads, 2 KV heads,
   MLP 4864; with the character tokenizer the embeddings are tiny, so ≈0.36B parameters),
   random init from a seed;
2. one frozen batch (P prompts × G responses of random tokens), the GRPO loss and its
   pieces on the CPU in fp32 and on CUDA with bf16 autocast; the relative differences are
   printed and checked against a bf16 tolerance;
3. ``Trainer.step`` timed on CUDA (G = 16, longer responses, β = 0.04, no warm start).

Prints one JSON line. ``--small`` shrinks everything so the script can be smoke-tested on
a CPU (``--device cpu --small``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny sizes (smoke test on a CPU)")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--G", type=int, default=16)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--tol", type=float, default=3e-2, help="max relative difference bf16 vs fp32")
    args = ap.parse_args(argv)
    import torch

    from grpo_lab.losses import grpo_loss
    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.lm.model import make_model, n_params
    from grpo_lab.lm.rollout import Rollout, token_logp
    from grpo_lab.lm.tokenizer import char_tokenizer
    from grpo_lab.lm.trainer import Trainer

    size = (dict(hidden=64, intermediate=128, layers=2, heads=4) if args.small else
            dict(hidden=896, intermediate=4864, layers=24, heads=14))
    kv = 2
    tok = char_tokenizer()
    model = make_model(tok, seed=0, arch="qwen2", kv_heads=kv, max_positions=256, **size)
    out = {"params": n_params(model), "device": args.device}

    # -- 1. frozen batch: loss on CPU fp32 vs device bf16 ---------------------------------
    g = torch.Generator().manual_seed(0)
    P, G, T = 4, 8, 24
    prompts = tok([f"{a}+{b}=" for a, b in torch.randint(10, 99, (P, 2), generator=g).tolist()],
                  return_tensors="pt", padding=True)
    resp = torch.randint(4, len(tok), (P * G, T), generator=g)
    lengths = torch.randint(4, T + 1, (P * G,), generator=g)
    mask = (torch.arange(T)[None] < lengths[:, None]).float()
    ro = Rollout(prompts["input_ids"], prompts["attention_mask"], G, resp, mask, lengths,
                 torch.zeros(P * G, dtype=torch.bool))
    adv = torch.randn(P * G, generator=g)

    def loss_on(device, amp):
        m = model.to(device)
        r = Rollout(*(x.to(device) if torch.is_tensor(x) else x for x in
                      (ro.prompt_ids, ro.prompt_mask, ro.G, ro.response_ids, ro.mask, ro.lengths, ro.truncated)))
        with torch.no_grad():
            lp = token_logp(m, r, amp=amp).logp
            ref = (lp - 0.05 * torch.randn(lp.shape, generator=torch.Generator().manual_seed(1)).to(device))
            o = grpo_loss(lp, lp - 0.01, adv.to(device), r.mask, ref_logp=ref, beta=0.04)
        return {"loss": float(o.loss), "pg_loss": float(o.pg_loss), "kl": float(o.kl),
                "logp_sum": float((lp * r.mask).sum())}

    cpu = loss_on("cpu", False)
    dev = loss_on(args.device, True)
    rel = {k: abs(dev[k] - cpu[k]) / max(abs(cpu[k]), 1e-6) for k in cpu}
    out.update(frozen_cpu_fp32=cpu, frozen_device_bf16=dev, rel_diff=rel,
               frozen_within_tol=all(v <= args.tol for v in rel.values()))
    model.to("cpu")

    # -- 2. the loop on the device ----------------------------------------------------
    cfg = GRPOConfig.preset("grpo", device=args.device, arch="qwen2", warmstart_steps=0, progress=False,
                            G=args.G, prompts_per_step=args.prompts, max_new=args.max_new, levels=(1, 2, 3),
                            threads=None if args.device != "cpu" else 1, kv_heads=kv,
                            steps=args.warmup + args.steps, **size)
    tr = Trainer(cfg)
    walls, rows = [], []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        row = tr.step()
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        if i >= args.warmup:
            walls.append(time.perf_counter() - t0)
            rows.append(row)
    out.update(loop_params=n_params(tr.policy), median_s_per_step=round(statistics.median(walls), 4),
               tokens_per_s=round(sum(r["n_tokens"] for r in rows) / sum(walls), 1),
               completions_per_s=round(sum(r["n_groups"] * cfg.G for r in rows) / sum(walls), 1),
               mean_response_len=round(statistics.mean(r["len_mean"] for r in rows), 2),
               phases_s={k: round(statistics.median(r[f"t_{k}"] for r in rows), 4)
                         for k in ("sample", "score", "ref", "policy", "backward")})
    if args.device.startswith("cuda"):
        out["peak_gpu_gb"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        out["gpu"] = torch.cuda.get_device_name()
    print(json.dumps(out))
    return 0 if out["frozen_within_tol"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
