"""Beyond the lecture notes: the 2025 policy losses (CISPO, SAPO, GMPO) and the sampler/trainer correction.

The lecture notes stop at GSPO (004 §四). A student who opens TRL 1.16 or verl 0.9 meets
three more ways of turning the ratio ρ_{i,t} = π_θ/π_θold into a per-token loss, and the
importance weights that correct for a sampler that is not quite the trained policy. Each
is one function here, selected in :func:`grpo_lab.losses.grpo_loss` by ``policy_loss``
(``"clip"`` is eq. (3) of lecture notes 000, everything else is from the papers below):

===========  =============================================================================
``clip``     ℓ = min(ρÂ, clip(ρ, 1−ε_low, 1+ε_high)Â) — lecture notes 000 eq. (3).
``cispo``    CISPO (MiniMax-M1, arXiv:2506.13585): ℓ = sg[min(ρ, cap)]·Â·log π. The weight
             is capped *and detached*, so a capped token still gets the gradient
             cap·Â·∇log π instead of 0 (:func:`cispo_weight`).
``sapo``     SAPO (Qwen, arXiv:2511.20347): ℓ = f_τ(ρ)·Â with the soft gate
             f_τ(ρ) = σ(τ(ρ−1))·4/τ (τ_pos for Â > 0, τ_neg otherwise) instead of a hard
             clip: the gradient weight f'_τ(ρ)·ρ = 4ρ·σ(1−σ) is 1 at ρ = 1, stays below
             ρ (for ρ ≠ 1) and is never exactly 0; it is not monotone (τ = 1: 1.41 at ρ = 1.5,
             about 1.57 at ρ = 2, then it decays) (:func:`sapo_gate`).
``gmpo``     GMPO (arXiv:2507.20673): one ratio per response, the geometric mean of the
             token ratios, each token's log-ratio clipped to [−ε_low, ε_high] *in log
             space* on the side that matters for sign(Â): ℓ_i = Â_i·exp(mean_t log ρ̃_{i,t}).
===========  =============================================================================

Conventions, and where TRL 1.16 / verl 0.9.1 differ (read for the formulas, not copied):

* **CISPO's cap.** Here ``cispo_cap`` is the largest weight itself (TRL's
  ``epsilon_high`` when ``loss_type="cispo"``; TRL's docs recommend 5.0, after ScaleRL,
  arXiv:2510.13786; TRL has no lower bound). The MiniMax-M1 paper writes a two-sided clip of
  the weight and leaves the lower bound loose in practice.
  verl's ``cispo`` clips the weight to [1 − clip_ratio_low, 1 + clip_ratio_high] — a
  lower bound too, and ε in the 1 + ε sense. A cap below 1 is legal but shrinks even
  on-policy tokens (ρ = 1): almost surely ε written where 1 + ε was meant, so it warns.
  CISPO's *value* −sg[w]·Â·log π is not comparable with the clipped loss's value; only its
  gradient is meaningful. TRL aggregates it as a token mean (its ``dapo`` normaliser).
* **SAPO.** TRL and verl aggregate it like GRPO (seq-mean-token-mean, eq. 6). verl clamps
  log ρ to [−20, 20]; here it is clamped above at 20 only (the gate is flat there, value and
  gradient agree with TRL's unclamped formula in fp32).
* **GMPO** exists in verl (``policy_loss.loss_mode="geo_mean"``), not in TRL. verl divides
  by |y_i| + 1e-8 and averages over every row (empty ones included) whatever
  ``loss_agg_mode`` says; here GMPO is eq. (6)'s seq-mean over the non-empty rows, which is
  the same number when no row is empty. ε_low / ε_high are *log-space* bounds for GMPO
  (the paper's 0.4 means ρ ∈ [e^−0.4, e^0.4] = [0.67, 1.49]); verl reads them from
  ``clip_ratio_low`` / ``clip_ratio_high`` (0.2 unless set), so the paper's 0.4 must be passed.
* **Rollout correction** (:func:`rollout_is_weights`): TRL's
  ``vllm_importance_sampling_mode`` names (``token_truncate`` = TIS, ``token_mask`` /
  ``sequence_mask`` = MIS, …) with ``clip_max`` / ``clip_min``; the sequence modes use the
  *sum* of the token log-ratios (the product of the token ratios), as TRL does. The weight
  multiplies the policy term of each token before the KL term is added (TRL's order).
"""
from __future__ import annotations

import math
import warnings

import torch

from grpo_lab import _checks
from grpo_lab.losses.checks import _check_2d, _check_mask

Tensor = torch.Tensor

POLICY_LOSSES = ("clip", "cispo", "sapo", "gmpo")
ROLLOUT_IS_MODES = ("none", "token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
# log ρ above this is clamped before exp in SAPO (the gate's gradient there is 0 in fp32)
SAPO_LOG_RATIO_BOUND = 20.0


# ---------------------------------------------------------------------------------
# Validation (errors and warnings name the argument)
# ---------------------------------------------------------------------------------
def check_policy_loss(policy_loss="clip", *, cispo_cap=5.0, sapo_tau_pos=1.0, sapo_tau_neg=1.05,
                      level="token", dual_clip=None, warn: bool = True) -> tuple[str, float, float, float]:
    """(policy_loss, cispo_cap, sapo_tau_pos, sapo_tau_neg), validated.

    τ ≤ 0 and cap ≤ 0 are errors; a CISPO cap below 1 warns (see the module docstring). The
    2025 losses are token-level and have no dual clip: ``level="sequence"`` or ``dual_clip``
    with them is an error naming the argument.
    """
    name = _checks.choice("policy_loss", policy_loss, POLICY_LOSSES)
    cap = _checks.finite_float("cispo_cap", cispo_cap)
    if cap <= 0:
        raise ValueError(f"cispo_cap must be > 0 (the largest CISPO weight, e.g. 5.0), got {cap!r}")
    taus = []
    for arg, tau in (("sapo_tau_pos", sapo_tau_pos), ("sapo_tau_neg", sapo_tau_neg)):
        tau = _checks.finite_float(arg, tau)
        if tau <= 0:
            raise ValueError(f"{arg} must be > 0 (the SAPO gate σ(τ(ρ−1))·4/τ divides by τ), got {tau!r}")
        taus.append(tau)
    if name != "clip":
        if level != "token":
            raise ValueError(f"level must be 'token' with policy_loss={name!r} (only the clipped loss has GSPO's "
                             f"sequence level; GMPO forms its own geometric mean), got level={level!r}")
        if dual_clip is not None:
            raise ValueError(f"dual_clip must be None with policy_loss={name!r} (the dual clip belongs to the "
                             f"clipped loss), got {dual_clip!r}")
    if warn and name == "cispo" and cap < 1.0:
        warnings.warn(f"cispo_cap = {cap:g} < 1 caps even on-policy tokens (ρ = 1) at weight {cap:g}: did you mean "
                      f"1 + {cap:g}? (CISPO's cap is the weight itself; TRL recommends 5.0)", UserWarning, stacklevel=3)
    return name, cap, taus[0], taus[1]


# ---------------------------------------------------------------------------------
# The per-token pieces, on numbers (what the exercises and panels compute by hand)
# ---------------------------------------------------------------------------------
def cispo_weight(ratio, cap=5.0) -> Tensor:
    """CISPO's importance weight min(ρ, cap) (detached in the loss). Same shape as ``ratio``."""
    r = torch.as_tensor(ratio, dtype=torch.get_default_dtype()) if not isinstance(ratio, Tensor) else ratio
    _, cap, _, _ = check_policy_loss("cispo", cispo_cap=cap)
    return r.clamp(max=cap)


def sapo_gate(ratio, tau) -> Tensor:
    """SAPO's soft gate f_τ(ρ) = σ(τ(ρ − 1))·4/τ. Same shape as ``ratio``; f_τ(1) = 2/τ, f'_τ(1) = 1."""
    r = torch.as_tensor(ratio, dtype=torch.get_default_dtype()) if not isinstance(ratio, Tensor) else ratio
    _, _, tau, _ = check_policy_loss("sapo", sapo_tau_pos=tau)
    return torch.sigmoid(tau * (r - 1.0)) * 4.0 / tau


# ---------------------------------------------------------------------------------
# The terms on validated inputs (called by grpo_lab.losses.core._clipped)
# ---------------------------------------------------------------------------------
def cispo_terms(lr: Tensor, logp: Tensor, A: Tensor, valid: Tensor, cap: float):
    """(loss, ratio, capped) for CISPO; all (B, T). ``lr`` log ρ (0 on padding), ``A`` Â on every token."""
    w = torch.exp(lr.clamp(max=math.log(cap))).detach()                 # (B, T) sg[min(ρ, cap)], no overflow
    loss = torch.where(valid, -w * A * logp, torch.zeros_like(logp))     # (B, T) −sg[w]·Â·log π
    ratio = torch.exp(lr.detach())                                       # (B, T) the true ρ
    capped = valid & (A > 0) & (ratio > cap)                             # TRL's cispo_clip_ratio
    return loss, ratio, capped


def sapo_terms(lr: Tensor, A: Tensor, valid: Tensor, tau_pos: float, tau_neg: float):
    """(loss, ratio) for SAPO; (B, T). τ_pos where Â > 0, τ_neg where Â ≤ 0 (TRL's and verl's split)."""
    tau = torch.where(A > 0, torch.full_like(A, tau_pos), torch.full_like(A, tau_neg))   # (B, T)
    rho = torch.exp(lr.clamp(max=SAPO_LOG_RATIO_BOUND))                  # (B, T)
    gate = torch.sigmoid(tau * (rho - 1.0)) * 4.0 / tau                  # (B, T) f_τ(ρ)
    loss = torch.where(valid, -gate * A, torch.zeros_like(A))
    return loss, torch.exp(lr.detach())


def gmpo_terms(lr: Tensor, A: Tensor, m: Tensor, eps_low: float, eps_high: float):
    """(loss, ratio, low, high) for GMPO; (B, T). The loss of row i, −Â_i·s_i, sits on every token of row i.

    s_i = exp(mean_t sgn(Â)·min(sgn(Â)·log ρ, sgn(Â)·clamp(log ρ, −ε_low, ε_high))): the clip
    binds on the side where the objective would keep growing (log ρ > ε_high for Â > 0,
    < −ε_low for Â < 0), where that token's gradient is 0. With seq-mean-token-mean (eq. 6)
    the aggregate is −mean_i Â_i·s_i, GMPO's objective.
    """
    valid = m > 0
    sgn = torch.sign(A)                                                  # (B, T)
    lrc = lr.clamp(-eps_low, eps_high)
    lr_min = sgn * torch.minimum(sgn * lr, sgn * lrc)                    # (B, T) clipped on the binding side
    n = m.sum(-1).clamp(min=1.0)                                         # (B,)
    s = torch.exp((lr_min * m).sum(-1) / n)                              # (B,) geometric mean of clipped ρ
    loss = torch.where(valid, -A * s[:, None], torch.zeros_like(A))      # (B, T)
    high = valid & (A > 0) & (lr.detach() > eps_high)
    low = valid & (A < 0) & (lr.detach() < -eps_low)
    return loss, torch.exp(lr.detach()), low, high


# ---------------------------------------------------------------------------------
# The sampler is not the trained policy: measure it, correct it
# ---------------------------------------------------------------------------------
def _rollout_inputs(logp, sampler_logp, mask):
    logp = _check_2d("logp", logp).detach()
    s = _check_2d("sampler_logp", sampler_logp, like=logp).detach()
    m = _check_mask(mask, logp.shape, logp)
    valid = m > 0
    d = torch.where(valid, logp - s, torch.zeros_like(logp))             # (B, T) log π_train − log π_sampler
    return torch.nan_to_num(d, nan=0.0), m, valid                        # NaN (unavailable) → ratio 1, as TRL


def rollout_is_weights(logp, sampler_logp, mask, mode="token_truncate", *, clip_max=3.0, clip_min=None) -> Tensor:
    """Importance weights π_θold/π_sampler for the tokens a different sampler drew. Shape (B, T), detached.

    ``logp``: (B, T) the trainer's log π_θold of the sampled tokens; ``sampler_logp``: the
    sampler's log-probs of the same tokens (recorded while sampling). Modes (TRL's names):

    * ``token_truncate`` (TIS): w_{i,t} = clamp(π_θold/π_sampler, clip_min, clip_max);
    * ``token_mask`` (MIS): w = ratio where clip_min ≤ ratio ≤ clip_max, else 0;
    * ``sequence_truncate`` / ``sequence_mask``: the same on the sequence ratio
      Π_t π_θold/π_sampler (sum of log-ratios), copied onto every token of the response;
    * ``none``: 1 everywhere.

    0 on padding. ``clip_max`` / ``clip_min`` may be None (no bound on that side).
    """
    mode = _checks.choice("mode", mode, ROLLOUT_IS_MODES)
    lo = None if clip_min is None else _checks.in_range("clip_min", clip_min, 0.0)
    hi = None if clip_max is None else _checks.in_range("clip_max", clip_max, 0.0, low_open=True)
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(f"clip_min must be < clip_max, got clip_min={lo!r}, clip_max={hi!r}")
    d, m, valid = _rollout_inputs(logp, sampler_logp, mask)
    if mode == "none":
        return m.clone()
    if mode.startswith("sequence"):
        d = d.sum(-1, keepdim=True).expand_as(d)                          # (B, T) log of the sequence ratio
    r = torch.exp(d)                                                      # may be inf: clamped or masked below
    if mode.endswith("truncate"):
        r = r.clamp(min=lo, max=hi)
    else:
        bad = torch.zeros_like(valid)
        if lo is not None:
            bad |= r < lo
        if hi is not None:
            bad |= r > hi
        r = r.masked_fill(bad, 0.0)
    return torch.where(valid, r, torch.zeros_like(r))


__all__ = ["POLICY_LOSSES", "ROLLOUT_IS_MODES", "check_policy_loss", "cispo_weight", "sapo_gate",
           "rollout_is_weights"]
