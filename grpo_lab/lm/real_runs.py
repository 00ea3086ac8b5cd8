"""Short GRPO runs on SmolLM2-135M-Instruct for notebook 08, and the cached copies it loads.

One run = :class:`~grpo_lab.lm.trainer.Trainer` steps on the chat task, with the held-out
greedy pass rate measured every ``eval_every`` steps and a fixed set of replies (with their
rewards r_i and advantages Â_i) sampled before and after. Runs differ only in the
aggregation (eq. 6, eq. 7 or Dr. GRPO's 1/C) and the seed, so the lengths can be compared.

``scripts/make_real_lm_runs.py`` writes them to ``grpo_lab/data/real_lm_runs.csv`` (one row
per step) and ``real_lm_runs.json`` (settings, library versions, pass rates, replies);
:func:`load_runs` reads them back.
"""
from __future__ import annotations

import json
import time
from importlib import resources

import numpy as np
import pandas as pd
import torch

from grpo_lab.advantages import advantages_from_flat
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.evaluation import encode_prompts, score
from grpo_lab.lm.rollout import sample

RUNS_FILE = "real_lm_runs"
# The aggregation compared (seed 000 §4): eq. (6) per-sequence mean, eq. (7) per-token mean,
# Dr. GRPO's constant 1/C. Everything else is shared. TODO(methods): colours from the registry.
AGGS = {"eq6": "seq-mean-token-mean", "eq7": "token-mean", "dr_grpo": "seq-mean-token-sum-norm"}
AGG_LABELS = {"eq6": "eq. (6) seq-mean", "eq7": "eq. (7) token-mean", "dr_grpo": "Dr. GRPO 1/C"}
# Settings of the cached runs (sized on a 2-core CPU: ~10 s a step, see docs/lm.md).
RUN_DEFAULTS = dict(model="smollm2-135m", chat_levels=(1, 3), prompts_per_step=4, G=4, max_new=40,
                    temperature=0.7, lr=3e-5, lr_warmup=0, beta=0.04, threads=1, progress=False,
                    chat_eval_per_level=8)


def run_config(agg: str = "eq6", seed: int = 0, **overrides) -> GRPOConfig:
    """The GRPOConfig of one cached run: :data:`RUN_DEFAULTS` with ``agg`` (a key of :data:`AGGS`)."""
    if agg not in AGGS:
        raise ValueError(f"agg must be one of {', '.join(map(repr, AGGS))}; got {agg!r}")
    return GRPOConfig.preset("grpo", **{**RUN_DEFAULTS, "agg": AGGS[agg], "seed": seed, **overrides})


def replies(trainer, problems, *, G: int | None = None, seed: int = 0) -> pd.DataFrame:
    """G sampled replies per problem from the trainer's current policy, with r_i and Â_i (eq. 1)."""
    cfg, tok = trainer.cfg, trainer.tok
    G = G or cfg.G
    ids, pm = encode_prompts(tok, problems, trainer.device)
    model = trainer.policy if trainer._sampler is None else trainer._sampler.sync(trainer.policy)
    was = model.training
    model.eval()
    ro = sample(model, ids, pm, G=G, max_new=cfg.max_new, temperature=cfg.temperature, eos_id=tok.eos_token_id,
                pad_id=tok.pad_token_id, generator=torch.Generator(device=trainer.device).manual_seed(seed),
                amp=trainer.amp)
    model.train(was)
    sc = score(trainer.task, tok, ro, problems)
    adv = advantages_from_flat(sc.rewards, G, scale=cfg.adv_scale, std=cfg.adv_std, eps=cfg.adv_eps)
    return pd.DataFrame({"group": np.repeat(np.arange(len(problems)), G),
                         "prompt": [problems[i // G].prompt for i in range(ro.B)],
                         "answer": [problems[i // G].answer for i in range(ro.B)],
                         "reply": sc.texts, "reward": sc.rewards, "adv": np.asarray(adv, dtype=float),
                         "length": ro.lengths.cpu().numpy(), "truncated": ro.truncated.cpu().numpy()})


def pass_rate(trainer) -> dict:
    """Held-out greedy accuracy (overall and per level), truncation rate and mean length."""
    return trainer.evaluate()


def run_one(agg: str, seed: int, steps: int, *, eval_every: int = 5, n_replies: int = 2, log=None,
            **overrides) -> dict:
    """Train one run; returns {"settings", "rows", "evals", "replies_before", "replies_after", "seconds"}."""
    from grpo_lab.lm.trainer import Trainer

    cfg = run_config(agg, seed, steps=steps, **overrides)
    t0 = time.perf_counter()
    tr = Trainer(cfg)
    shown = tr.eval_problems[:: max(1, len(tr.eval_problems) // n_replies)][:n_replies]
    before = replies(tr, shown, seed=seed)
    evals = [{"step": 0, **pass_rate(tr)}]
    for s in range(1, steps + 1):
        row = tr.step()
        if log:
            log(f"{agg} seed {seed} step {s}: reward {row['reward_mean']:.3f} len {row['len_mean']:.1f} "
                f"trunc {row['frac_truncated']:.2f} {row['seconds']:.1f}s")
        if s % eval_every == 0 or s == steps:
            evals.append({"step": s, **pass_rate(tr)})
    after = replies(tr, shown, seed=seed)
    return {"settings": {"agg": agg, "seed": seed, "config": cfg.to_dict()},
            "rows": [{"agg": agg, "seed": seed, **r} for r in tr.rows],
            "evals": [{"agg": agg, "seed": seed, **e} for e in evals],
            "replies_before": before.assign(agg=agg, seed=seed).to_dict("records"),
            "replies_after": after.assign(agg=agg, seed=seed).to_dict("records"),
            "seconds": time.perf_counter() - t0}


def load_runs(path=None) -> dict:
    """The cached runs: {"steps": DataFrame (one row per step), "evals": DataFrame,
    "replies_before"/"replies_after": DataFrame, "meta": dict (settings, versions, command)}."""
    if path is None:
        base = resources.files("grpo_lab") / "data"
        csv, js = base / f"{RUNS_FILE}.csv", base / f"{RUNS_FILE}.json"
    else:
        from pathlib import Path

        csv, js = Path(path).with_suffix(".csv"), Path(path).with_suffix(".json")
    meta = json.loads(js.read_text())
    with csv.open() as f:
        steps = pd.read_csv(f)
    return {"steps": steps, "evals": pd.DataFrame(meta.pop("evals")),
            "replies_before": pd.DataFrame(meta.pop("replies_before")),
            "replies_after": pd.DataFrame(meta.pop("replies_after")), "meta": meta}


def summarize(runs: dict, *, first: int = 4, last: int = 4) -> pd.DataFrame:
    """One row per (agg, seed): held-out pass rate before → after, and reward, lengths,
    truncation and KL averaged over the ``first`` and the ``last`` steps."""
    steps, evals = runs["steps"], runs["evals"]
    rows = []
    for (agg, seed), d in steps.groupby(["agg", "seed"], sort=False):
        d = d.sort_values("step")
        e = evals[(evals["agg"] == agg) & (evals["seed"] == seed)].sort_values("step")
        head, tail = d.head(first), d.tail(last)
        row = {"agg": agg, "seed": seed, "pass_before": e["acc"].iloc[0], "pass_after": e["acc"].iloc[-1],
               "trunc_eval_before": e["frac_truncated"].iloc[0], "trunc_eval_after": e["frac_truncated"].iloc[-1]}
        for col in ("reward_mean", "len_mean", "len_correct", "len_incorrect", "frac_truncated", "frac_informative"):
            row[f"{col}_first"] = head[col].mean()
            row[f"{col}_last"] = tail[col].mean()
        row["kl_last"] = tail["kl"].mean()
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["summarize", "AGGS", "AGG_LABELS", "RUN_DEFAULTS", "run_config", "replies", "pass_rate", "run_one", "load_runs"]
