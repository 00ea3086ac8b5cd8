"""The sampler is not the trainer: measure the difference, and correct for it (beyond the lecture notes, notebook 09).

The responses of a step come from a *sampler* — the policy itself (fp32 on the CPU), or its bf16
copy (:class:`grpo_lab.lm.rollout.Bf16Sampler`, as vLLM samples in bf16), or, to induce a
mismatch on purpose, the policy at another temperature (``GRPOConfig.sampler_temperature``).
The sampler's log-probs of the drawn tokens are kept while sampling (``Rollout.sampler_logp``);
the trainer recomputes them (π_θold, the ``old_logp`` of the loss). This module compares the two
(:func:`metrics`, logged every step) and builds the correction of ``GRPOConfig.rollout_is``
(:func:`weights`: TIS / MIS, TRL's ``vllm_importance_sampling_mode``), which multiplies each
token's policy term in :func:`grpo_lab.losses.grpo_loss`. The formulas are
:func:`grpo_lab.losses.mismatch_stats` and :func:`grpo_lab.losses.rollout_is_weights`.
"""
from __future__ import annotations

import torch

from grpo_lab.losses import mismatch_stats, rollout_is_weights

COLUMNS = ("mismatch_abs_logp", "mismatch_kl", "mismatch_ratio_max", "mismatch_clip_frac", "is_weight_mean",
           "is_masked_frac")


def weights(cfg, old_logp: torch.Tensor, batch) -> torch.Tensor | None:
    """(B, T) weights π_θold/π_sampler under ``cfg.rollout_is`` (None when off or without sampler log-probs)."""
    if cfg.rollout_is == "none" or batch.sampler_logp is None:
        return None
    return rollout_is_weights(old_logp, batch.sampler_logp, batch.mask, cfg.rollout_is, clip_max=cfg.rollout_is_max,
                              clip_min=cfg.rollout_is_min)


def metrics(cfg, old_logp: torch.Tensor, batch, w: torch.Tensor | None) -> dict[str, float]:
    """The mismatch columns of one step (:data:`COLUMNS`; NaN without sampler log-probs)."""
    if batch.sampler_logp is None:
        return empty()
    s = mismatch_stats(old_logp, batch.sampler_logp, batch.mask, eps_low=cfg.eps_low, eps_high=cfg.eps_high)
    valid = batch.mask > 0
    wv = None if w is None else w[valid]
    return {"mismatch_abs_logp": s["abs_logp"], "mismatch_kl": s["kl"], "mismatch_ratio_max": s["ratio_max"],
            "mismatch_clip_frac": s["clip_frac"],
            "is_weight_mean": 1.0 if wv is None else float(wv.mean()),
            "is_masked_frac": 0.0 if wv is None else float((wv == 0).float().mean())}


def empty() -> dict[str, float]:
    """The columns of a step with nothing in the loss (NaN)."""
    return dict.fromkeys(COLUMNS, float("nan"))


__all__ = ["COLUMNS", "weights", "metrics", "empty"]
