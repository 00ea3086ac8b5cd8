"""The update loop (steps 3–6, μ optimiser steps), with or without micro-batching.

:func:`learn` is the trainer's only update loop: :meth:`grpo_lab.lm.trainer.Trainer.learn`
validates the batch and calls it. Without micro-batching the batch is one chunk; with it,
the chunks below — the same code either way, and the same finiteness checks before every
optimiser step.

Micro-batching (gradient accumulation) so that a batch of P·G responses of T tokens fits.

``GRPOConfig.tokens_per_microbatch = N`` (0 = off) splits the batch into consecutive chunks
of whole *groups* (the G responses of one prompt stay together, so the shared prompt
forward of :mod:`grpo_lab.lm.rollout` still runs once per prompt), each holding at most N
tokens counted as G·(Lp + T) per group — prompt and response positions, the activations a
forward keeps for backward (at least one group per chunk). The policy forward, loss and
backward run chunk by chunk; gradients accumulate.

The result is the gradient of the *whole* batch's loss, not an average of per-chunk losses:
every aggregation of :func:`grpo_lab.losses.aggregate` is a normalised sum, so for disjoint
row chunks ``aggregate(v) = Σ_k w_k · aggregate(v_k)`` with ``w_k`` the chunk's share of the
normaliser (:func:`chunk_weight`): its share of response tokens for eq. (7) ``token-mean``,
its share of responses for the sequence-level modes (eq. 6 and Dr. GRPO's 1/(B·C)). TRL's
gradient accumulation divides each micro-batch by its own normaliser instead (for
``token-mean`` that weights micro-batches equally however many tokens they hold).
Advantages are computed over the whole batch first (they need whole groups anyway).

Memory on SmolLM2-135M: about 1.2 MB of stored activations per token in fp32 (30 layers),
so N = 4096 keeps a chunk under ~5 GB; the logits add (tokens × 49 152 vocab × 4 bytes).
"""
from __future__ import annotations

import numpy as np
import torch

from grpo_lab import _checks
from grpo_lab.losses import grpo_loss, resolve_mode
from grpo_lab.lm import mismatch
from grpo_lab.lm.guard import check_finite, guarded_step
from grpo_lab.lm.rollout import Rollout, token_logp


def group_chunks(batch: Rollout, tokens_per_microbatch: int) -> list[np.ndarray] | None:
    """Consecutive chunks of group indices, each ≤ N tokens (≥ 1 group); None when one chunk suffices."""
    n = _checks.integer("tokens_per_microbatch", tokens_per_microbatch, low=0)
    P = batch.prompt_ids.shape[0]
    per_group = batch.G * (batch.prompt_ids.shape[1] + batch.response_ids.shape[1])
    if n == 0 or per_group * P <= n:
        return None
    k = max(1, n // per_group)
    return [np.arange(i, min(i + k, P)) for i in range(0, P, k)]


def rows_of(groups: np.ndarray, G: int) -> np.ndarray:
    """Response rows of ``groups`` (responses k·G … k·G+G−1 answer prompt k)."""
    return (groups[:, None] * G + np.arange(G)[None, :]).reshape(-1)


def chunk_weight(mask_k: torch.Tensor, mask: torch.Tensor, mode: str) -> float:
    """w_k with aggregate(v, mask) = Σ_k w_k · aggregate(v_k, mask_k) for disjoint row chunks."""
    mode = resolve_mode(mode)
    if mode == "token-mean":
        return float(mask_k.double().sum()) / max(float(mask.double().sum()), 1.0)
    return int((mask_k.sum(-1) > 0).sum()) / max(int((mask.sum(-1) > 0).sum()), 1)


def logp_no_grad(model, batch: Rollout, chunks, **kw) -> torch.Tensor:
    """(B, T) log-probs of the sampled tokens, chunk by chunk, without a graph (reference / π_θold)."""
    with torch.inference_mode():
        if chunks is None:
            return token_logp(model, batch, **kw).logp.clone()
        out = torch.empty(batch.response_ids.shape, dtype=torch.float32, device=batch.response_ids.device)
        for groups in chunks:
            rows = torch.as_tensor(rows_of(groups, batch.G), device=out.device)
            out[rows] = token_logp(model, batch.select_groups(groups), **kw).logp.float()
    return out.clone()


def one_chunk(batch: Rollout) -> list[np.ndarray]:
    """The whole batch as a single chunk (no micro-batching)."""
    return [np.arange(batch.prompt_ids.shape[0])]


def accumulate(policy, batch: Rollout, chunks, adv, old_logp, ref_logp, cfg, *, beta: float, amp, entropy: bool,
               timer, guard):
    """One pass of forward + loss + backward over the chunks; gradients accumulate in ``policy``.

    ``old_logp`` None means "π_θold is the current policy" (the first inner iteration): each
    chunk's own ``logp.detach()`` is used and returned. ``guard(what, value)`` raises when a
    value is not finite; it is called on every chunk's log-probs of its own samples (first
    iteration) and on every chunk's loss, *before* that chunk's backward — so one chunk or
    many, the same quantities are checked before the optimiser step. Returns (metrics dict,
    old_logp (B, T), entropy (B, T) or None). Metrics combine the chunks exactly as one batch
    would (loss-like values by :func:`chunk_weight`, fractions by token share, the max of
    maxima); with one chunk every weight is exactly 1.
    """
    B, T = batch.response_ids.shape
    dev = batch.response_ids.device
    old_all = torch.empty((B, T), device=dev) if old_logp is None else old_logp
    ent_all = torch.zeros((B, T), device=dev) if entropy else None
    m = {"loss": 0.0, "pg_loss": 0.0, "kl": 0.0, "clip_frac_low": 0.0, "clip_frac_high": 0.0, "ratio_max": 1.0}
    n_tok = batch.mask.sum().clamp(min=1)
    whole = len(chunks) == 1
    for groups in chunks:
        rows_np = rows_of(groups, batch.G)
        rows = torch.as_tensor(rows_np, device=dev)
        sub = batch if whole else batch.select_groups(groups)
        with timer("policy"):
            tl = token_logp(policy, sub, temperature=cfg.temperature, entropy=entropy, amp=amp, dedup=cfg.dedup)
            old = tl.logp.detach() if old_logp is None else old_logp[rows]
            if old_logp is None:
                guard("the policy's log-probabilities of its own samples are not finite (its weights have "
                      "blown up)", old[sub.mask > 0])
                old_all[rows] = old.float()
            if entropy:
                ent_all[rows] = tl.entropy.float()
            ref = None if ref_logp is None else ref_logp[rows]
            # Step 4: ρ_{i,t} = exp(logp − old_logp), eq. (4); ℓ_{i,t} = min(ρÂ, clip(ρ)Â), eq. (3), the same
            #         sequence-level Â_i on every token of response i
            # Step 5: aggregate — eq. (6), eq. (7) or Dr. GRPO's 1/C;  Step 6: + β·KL per token (k3, eq. 5)
            out = grpo_loss(tl.logp, old, adv[rows], sub.mask, ref_logp=ref,
                             is_weight=mismatch.weights(cfg, old, sub), **{**cfg.loss_kwargs(), "beta": beta})
            w = chunk_weight(sub.mask, batch.mask, cfg.agg)
        guard(f"the loss is {float(out.loss.detach())} (the update was skipped)", out.loss.detach())
        with timer("backward"):
            (out.loss * w).backward()
        share = float(sub.mask.sum() / n_tok)
        m["loss"] += w * float(out.loss.detach())
        m["pg_loss"] += w * float(out.pg_loss)
        m["kl"] += w * float(out.kl)
        m["clip_frac_low"] += share * float(out.clip_frac_low)
        m["clip_frac_high"] += share * float(out.clip_frac_high)
        m["ratio_max"] = max(m["ratio_max"], float(out.ratio_max))
    return m, old_all, ent_all


def learn(trainer, batch: Rollout, rewards_t, chunks, timer) -> dict:
    """Steps 3–6 and μ optimiser steps on a scored batch: the one update loop of the trainer.

    ``chunks`` None = the whole batch at once; else gradient accumulation over the chunks of
    :func:`group_chunks`. Either way the same code runs (one chunk or several), and the same
    quantities are checked before every optimiser step (log-probs, loss, gradient norm).
    ``t_policy`` holds the forwards and loss, ``t_backward`` the backward passes, the clipping
    and the optimiser step.
    """
    from grpo_lab.advantages import advantages_from_flat
    from grpo_lab.losses import kl_shaped_rewards

    cfg, policy = trainer.cfg, trainer.policy
    chunks = one_chunk(batch) if chunks is None else chunks
    step = trainer.step_count + 1

    def guard(what, value):
        check_finite(step, cfg, trainer._last_ckpt_step, what, value)

    kw = dict(temperature=cfg.temperature, amp=trainer.amp, dedup=cfg.dedup)
    ref_logp = old_logp = None
    if trainer.ref is not None:
        with timer("ref"):
            ref_logp = logp_no_grad(trainer.ref, batch, chunks, **kw)                  # (B, T)
    if cfg.kl_form == "reward" and ref_logp is not None and cfg.beta > 0:
        with timer("policy"):                          # form 2 needs π_θold's log-probs before step 3
            old_logp = logp_no_grad(policy, batch, chunks, **kw)
        # KL form 2 (seed 000 §3): r_i ← r_i − β Σ_t log(π_θ/π_ref), before step 3
        rewards_t = kl_shaped_rewards(rewards_t, old_logp, ref_logp, batch.mask, beta=cfg.beta, kind=cfg.kl_kind)
    # ---- Step 3 (组内标准化): Â_i = (r_i − mean)/(std + ε), eq. (1), one scalar per response
    adv = advantages_from_flat(rewards_t, cfg.G, **cfg.adv_kwargs())                       # (B,)
    beta = cfg.loss_kwargs()["beta"]                   # 0 for kl_form="reward" (already in the rewards)
    first, ent, lows, highs, gnorms, rmax = None, None, [], [], [], 1.0
    for it in range(cfg.mu):
        trainer.opt.zero_grad(set_to_none=True)
        m, old, e = accumulate(policy, batch, chunks, adv, old_logp, ref_logp, cfg, beta=beta, amp=trainer.amp,
                               entropy=it == 0, timer=timer,
                               guard=lambda what, v, it=it: guard(f"{what} (inner iteration {it + 1})", v))
        with timer("backward"):
            gn = torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            guarded_step(trainer.opt, gn, step, cfg, trainer._last_ckpt_step, it)
        if it == 0:
            first, ent, old_logp = m, e, old
        lows.append(m["clip_frac_low"])
        highs.append(m["clip_frac_high"])
        gnorms.append(float(gn))
        rmax = max(rmax, m["ratio_max"])
    trainer.last_adv = adv.detach().cpu().numpy()          # (B,) for Trainer.last_samples
    return {"kl": first["kl"], "loss": first["loss"], "pg_loss": first["pg_loss"],
            "clip_frac_low": float(np.mean(lows)), "clip_frac_high": float(np.mean(highs)), "ratio_max": rmax,
            "grad_norm": float(np.mean(gnorms)), "entropy": float((ent * batch.mask).sum() / batch.mask.sum()),
            "adv_abs_mean": float(adv.abs().mean()),
            **mismatch.metrics(cfg, old_logp, batch, mismatch.weights(cfg, old_logp, batch))}


__all__ = ["group_chunks", "one_chunk", "rows_of", "chunk_weight", "logp_no_grad", "accumulate", "learn"]
