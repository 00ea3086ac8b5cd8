"""KL estimators k1 / k2 / k3 (eq. 5) and the KL folded into the reward (seed 000 §3 form 2)."""
from __future__ import annotations

import torch

from grpo_lab import _checks
from grpo_lab.losses.common import (K3_LOG_RATIO_BOUND, Tensor, _check_2d, _check_finite_where, _check_mask,
                                    _float_tensor, _lengths, resolve_kind)

# ---------------------------------------------------------------------------------
# KL estimators, eq. (5)
# ---------------------------------------------------------------------------------
def kl_penalty(logp, ref_logp, kind="k3", *, mask=None) -> Tensor:
    """Per-token estimate of KL(π_θ‖π_ref) from the sampled token o ~ π_θ. Shape (B, T).

    With log r = logp − ref_logp = log(π_θ/π_ref) and u = exp(ref_logp − logp) = π_ref/π_θ:

    * ``"k1"`` = log r: unbiased, but negative for some samples (high variance).
    * ``"k2"`` = ½(log r)²: ≥ 0, biased (≈ KL only when π_θ ≈ π_ref).
    * ``"k3"`` = u − log u − 1, eq. (5): ≥ 0, 0 when the policies agree, unbiased since
      E_{π_θ}[u] = 1 (seed 000 §3 form 1). Computed as expm1(d) − d, d = log u, which is
      exact near d = 0; past d = ``K3_LOG_RATIO_BOUND`` (20) it continues along its tangent
      line, so it stays finite (and its gradient bounded) in fp32 at any log-ratio.

    Used as a *loss* (differentiated through logp with the samples held fixed) their
    expected gradients differ: E[∇k1] = E[∇log π_θ] = 0, E[∇k2] = ∇KL(π_θ‖π_ref), and
    E[∇k3] = ∇KL(π_ref‖π_θ), the reverse direction (see :mod:`grpo_lab.kl_toy`).
    ``mask`` (optional, (B, T)) zeroes padding positions. verl aliases kl/mse/low_var_kl are
    accepted (verl clamps low_var_kl to [−10, 10]; here only the linear continuation above).
    """
    kind = resolve_kind(kind)
    logp = _check_2d("logp", logp)
    ref_logp = _check_2d("ref_logp", ref_logp, like=logp)
    m = None if mask is None else _check_mask(mask, logp.shape, logp)
    every = torch.ones_like(logp) if m is None else m                    # no mask: every position counts
    _check_finite_where("logp", logp, every)
    _check_finite_where("ref_logp", ref_logp, every)
    return _kl(logp, ref_logp, kind, m)


def _kl(logp: Tensor, ref_logp: Tensor, kind: str, m: Tensor | None) -> Tensor:
    """k1/k2/k3 on validated inputs (see :func:`kl_penalty`)."""
    if m is not None:
        log_r = torch.where(m > 0, logp - ref_logp, torch.zeros_like(logp))
    else:
        log_r = logp - ref_logp                                          # (B, T) log(π_θ/π_ref)
    if kind == "k1":
        kl = log_r
    elif kind == "k2":
        kl = 0.5 * log_r**2
    else:
        d = -log_r                                                       # log u = ref_logp − logp
        # u − log u − 1, eq. (5), continued linearly (its tangent) past d = K3_LOG_RATIO_BOUND,
        # where e^d would overflow fp32 (d ≈ 88); inside the bound the extra term is exactly 0
        dc = d.clamp(max=K3_LOG_RATIO_BOUND)
        kl = torch.expm1(dc) - dc + torch.expm1(dc) * (d - dc)
    return kl if m is None else kl * m


# ---------------------------------------------------------------------------------
# KL-in-reward, seed 000 §3 form 2
# ---------------------------------------------------------------------------------
def kl_shaped_rewards(rewards, logp, ref_logp, mask, *, beta, kind="k1", reduce="sum") -> Tensor:
    """Sequence rewards with the KL folded in: r_i + Σ_t r'_{i,t}, r'_t = −β·log(π_θ/π_ref). Shape (B,).

    Seed 000 §3 form 2: the KL penalty becomes a per-token *reward* r'_t, summed (``reduce=
    "sum"``, the return of the token rewards; ``"mean"`` divides by |y_i|) into the
    sequence reward, which then goes through group normalisation (eq. 1) like any reward —
    a token-level signal folded into a sequence-level scalar. ``kind="k1"`` is the seed's
    log-ratio (the KL penalty of PPO-style RLHF and verl's default); k2/k3 are allowed.
    The result is detached: a reward carries no gradient, so β acts only through the
    advantages. Compare :func:`grpo_loss` with ``beta`` (form 1, KL-in-loss).
    """
    logp = _check_2d("logp", logp)
    m = _check_mask(mask, logp.shape, logp)
    r = _float_tensor("rewards", rewards, like=logp).to(logp.dtype)
    if r.ndim != 1 or r.shape[0] != logp.shape[0]:
        raise ValueError(f"rewards must have shape ({logp.shape[0]},), one per response; got {tuple(r.shape)}")
    if not bool(torch.isfinite(r).all()):
        raise ValueError("rewards must be finite")
    beta = _checks.in_range("beta", beta, 0.0)
    reduce = _checks.choice("reduce", reduce, ("sum", "mean"))
    with torch.no_grad():
        r_tok = -beta * kl_penalty(logp.detach(), ref_logp, kind, mask=m)  # (B, T) r'_{i,t}
        shaped = r_tok.sum(-1)                                           # (B,)
        if reduce == "mean":
            shaped = shaped / _lengths(m).clamp(min=1.0)
        return r + shaped
