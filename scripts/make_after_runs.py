"""Precompute notebook 09's cached runs on the tiny LM (beyond the lecture notes).

Two experiments, each run a call of the public ``grpo_lab.lm.train`` (nothing re-implements the loop):

* ``mismatch`` — the sampler/trainer mismatch. First a measurement without training: one
  batch from the warm-started policy, sampled by the fp32 policy itself, by its bf16 copy, and
  at a hotter sampler temperature, with the mismatch statistics of each
  (``grpo_lab/data/after_mismatch.csv``). Then short runs per condition × seed: no mismatch,
  an induced mismatch (sampler temperature ``--hot``) uncorrected, with TIS and with MIS.
* ``entropy`` — runs with μ inner updates: ε_high 0.2 vs 0.28 (DAPO's clip-higher) and CISPO,
  entropy per step; ``entropy_long`` the same at the presets' learning rate (1e-4), 2.5 times longer.

Runs go to ``grpo_lab/data/after_runs.csv`` (one row per step, keyed by experiment, condition,
seed). The script is resumable: a (experiment, condition, seed) already in the file is skipped,
and each finished run is appended at once. The JSON next to the CSV records the command, the
settings of every condition, the git commit and the library versions.

    nice -n 10 python scripts/make_after_runs.py                 # both experiments, 3 seeds
    nice -n 10 python scripts/make_after_runs.py --only entropy --seeds 0,1,2,3
    nice -n 10 python scripts/make_after_runs.py --real --seeds 0,1      # SmolLM2-135M, measurement only
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DATA = ROOT / "grpo_lab" / "data"
RUNS, MEASURE, REAL = DATA / "after_runs.csv", DATA / "after_mismatch.csv", DATA / "after_mismatch_real.csv"
# shared by every run: the tiny LM at a reduced batch so that a run costs about a minute
BASE = dict(prompts_per_step=8, G=8, max_new=8, eval_per_level=25, threads=1, progress=False, beta=0.0,
            kl_metric=False, dynamic_sampling=False, overlong_buffer=0, lr=5e-4, lr_warmup=5)
HOT = 1.5
MISMATCH = {   # condition -> (preset, overrides); μ = 1 as TRL's default
    "no mismatch": ("dapo", dict(steps=30, mu=1)),
    f"sampler τ={HOT}": ("dapo", dict(steps=30, mu=1, sampler_temperature=HOT)),
    f"sampler τ={HOT} + TIS": ("dapo", dict(steps=30, mu=1, sampler_temperature=HOT, rollout_is="token_truncate",
                                           rollout_is_max=2.0)),
    f"sampler τ={HOT} + MIS": ("dapo", dict(steps=30, mu=1, sampler_temperature=HOT, rollout_is="token_mask",
                                           rollout_is_max=2.0, rollout_is_min=0.5)),
}
ENTROPY = {    # μ = 4 so that ρ leaves 1 and the clip (or CISPO's cap) can act
    "ε_high=0.2": ("dapo", dict(steps=40, mu=4, eps_high=0.2)),
    "ε_high=0.28": ("dapo", dict(steps=40, mu=4, eps_high=0.28)),
    "CISPO": ("cispo", dict(steps=40, mu=4)),
}
ENTROPY_LONG = {  # the same at the presets' learning rate, 2.5 times longer
    c: (p, {**o, "steps": 100, "lr": 1e-4}) for c, (p, o) in ENTROPY.items()}
EXPERIMENTS = {"mismatch": MISMATCH, "entropy": ENTROPY, "entropy_long": ENTROPY_LONG}
COLUMNS = ("step", "reward_mean", "acc", "entropy", "loss", "clip_frac_low", "clip_frac_high", "ratio_max",
           "grad_norm", "mismatch_abs_logp", "mismatch_kl", "mismatch_ratio_max", "mismatch_clip_frac",
           "is_weight_mean", "is_masked_frac", "len_mean")


def config(preset: str, over: dict, seed: int):
    from grpo_lab.lm.config import GRPOConfig

    return GRPOConfig.preset(preset, seed=seed, **{**BASE, **over})


def one_run(args):
    experiment, condition, preset, over, seed = args
    from grpo_lab.lm.trainer import train

    df = train(config(preset, over, seed))
    ev = df.attrs["eval_after"]
    out = df[[c for c in COLUMNS if c in df.columns]].copy()
    out.insert(0, "seed", seed)
    out.insert(0, "condition", condition)
    out.insert(0, "experiment", experiment)
    out["eval_greedy_acc"] = ev["greedy"]["acc"]
    out["eval_sampled_acc"] = ev["sampled"]["acc"]
    out["eval_before_greedy_acc"] = df.attrs["eval_before"]["greedy"]["acc"]
    return out


def measure(seeds) -> "pd.DataFrame":  # noqa: F821
    """One batch per seed from the warm-started policy, three samplers, the mismatch statistics of each."""
    import numpy as np
    import pandas as pd
    import torch

    from grpo_lab.losses import mismatch_stats
    from grpo_lab.lm.rollout import Bf16Sampler, token_logp
    from grpo_lab.lm.sampling import sample_step
    from grpo_lab.lm.metrics import Timer
    from grpo_lab.lm.trainer import Trainer

    rows = []
    for seed in seeds:
        tr = Trainer(config("dapo", dict(steps=0, prompts_per_step=32), seed))
        samplers = {"fp32 policy (samples for itself)": (tr.policy, None),
                    "bf16 copy": (Bf16Sampler(tr.policy).sync(tr.policy), None),
                    f"fp32, sampler τ={HOT}": (tr.policy, HOT)}
        for name, (model, temp) in samplers.items():
            cfg = tr.cfg.replace(sampler_temperature=temp)
            rng, gen = tr._rngs(1)
            drawn = sample_step(model, tr.tok, tr.task, cfg, rng, gen, Timer(tr.device), tr.device, tr.amp)
            batch, _, _ = drawn.batch(cfg.prompts_per_step, cfg.G, tr.tok.pad_token_id)
            with torch.no_grad():
                old = token_logp(tr.policy, batch, temperature=cfg.temperature, amp=tr.amp).logp
            s = mismatch_stats(old, batch.sampler_logp, batch.mask, eps_low=cfg.eps_low, eps_high=cfg.eps_high)
            d = (old - batch.sampler_logp)[batch.mask > 0]
            rows.append({"seed": seed, "sampler": name, "n_tokens": int(batch.mask.sum()),
                         "max_abs_logp": float(d.abs().max()), **s,
                         "q99_abs_logp": float(np.quantile(d.abs().numpy(), 0.99))})
        tr.close()
    return pd.DataFrame(rows)


def measure_real(seeds) -> "pd.DataFrame":  # noqa: F821
    """SmolLM2-135M as the real-model runs use it (grpo_lab.lm.real_runs): one batch per seed from its bf16
    sampler copy, compared with the trainer's log-probs under bf16 autocast (what the loss uses on this CPU)
    and in fp32."""
    import pandas as pd
    import torch

    from grpo_lab.losses import mismatch_stats
    from grpo_lab.lm.metrics import Timer
    from grpo_lab.lm.real_runs import run_config
    from grpo_lab.lm.rollout import token_logp
    from grpo_lab.lm.sampling import sample_step
    from grpo_lab.lm.trainer import Trainer

    rows = []
    for seed in seeds:
        tr = Trainer(run_config("eq6", seed, beta=0.0, kl_metric=False, steps=0))
        sampler = tr.policy if tr._sampler is None else tr._sampler.sync(tr.policy)
        rng, gen = tr._rngs(1)
        drawn = sample_step(sampler, tr.tok, tr.task, tr.cfg, rng, gen, Timer(tr.device), tr.device, tr.amp)
        batch, _, _ = drawn.batch(tr.cfg.prompts_per_step, tr.cfg.G, tr.tok.pad_token_id)
        for name, amp in (("trainer bf16 autocast (the loss's)", tr.amp), ("trainer fp32", False)):
            with torch.no_grad():
                old = token_logp(tr.policy, batch, temperature=tr.cfg.temperature, amp=amp).logp
            st = mismatch_stats(old, batch.sampler_logp, batch.mask, eps_low=0.2, eps_high=0.2)
            rows.append({"seed": seed, "model": "smollm2-135m", "sampler": "bf16 copy" if tr._sampler else "policy",
                         "trainer": name, "amp": str(tr.amp), "n_tokens": int(batch.mask.sum()), **st})
        tr.close()
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=tuple(EXPERIMENTS), default=None)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes (one thread each)")
    ap.add_argument("--real", action="store_true", help="only measure SmolLM2-135M's bf16 mismatch (no training)")
    args = ap.parse_args(argv)
    if args.real:
        df = measure_real([int(s) for s in args.seeds.split(",")])
        df.to_csv(REAL, index=False, float_format="%.6g")
        print(df.to_string())
        return
    import pandas as pd
    import torch
    from make_family_runs import _git_commit      # scripts/ is on sys.path when this file runs as a script

    def git_commit_short():
        return str(_git_commit())[:10]

    seeds = [int(s) for s in args.seeds.split(",")]
    t0 = time.time()
    if args.only in (None, "mismatch") and not MEASURE.exists():
        measure(seeds).to_csv(MEASURE, index=False, float_format="%.6g")
        print(f"wrote {MEASURE}", flush=True)
    done = set()
    if RUNS.exists():
        old = pd.read_csv(RUNS)
        done = set(zip(old.experiment, old.condition, old.seed))
    todo = [(e, c, p, o, s) for e, conds in EXPERIMENTS.items() if args.only in (None, e)
            for c, (p, o) in conds.items() for s in seeds if (e, c, s) not in done]
    print(f"{len(todo)} runs to do ({len(done)} cached)", flush=True)

    def save(df):
        df.to_csv(RUNS, mode="a", header=not RUNS.exists(), index=False, float_format="%.6g")
        print(f"  {df.experiment.iloc[0]} / {df.condition.iloc[0]} / seed {df.seed.iloc[0]} "
              f"({time.time() - t0:.0f} s)", flush=True)

    if args.jobs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs) as ex:
            for df in ex.map(one_run, todo):
                save(df)
    else:
        for t in todo:
            save(one_run(t))
    command = "python scripts/make_after_runs.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta_path = RUNS.with_suffix(".json")
    before = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    invocations = before.get("invocations", [before["command"]] if "command" in before else [])
    meta = {"command": command, "invocations": invocations + [f"{command}  # {git_commit_short()}"],
            "base": BASE, "hot_sampler_temperature": HOT,
            "conditions": {e: {c: {"preset": p, **o} for c, (p, o) in conds.items()} for e, conds in EXPERIMENTS.items()},
            "seeds": seeds, "git_commit": _git_commit(), "seconds_last_invocation": round(time.time() - t0, 1),
            "torch": torch.__version__, "python": platform.python_version()}
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
