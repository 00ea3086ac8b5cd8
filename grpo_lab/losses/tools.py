"""Tools built on :func:`~grpo_lab.losses.grpo_loss` (all importable from :mod:`grpo_lab.losses`).

:func:`kl_shaped_rewards` (KL-in-reward, seed 000 §3 form 2), :func:`token_weights` and
:func:`token_grad_weights` (each token's aggregation weight and gradient weight, by autograd),
:func:`surrogate_curve` and :func:`zero_grad_intervals` (the clipped term as a function of ρ,
what the clipping pictures plot). They call the loss functions, never a second copy of a formula.
"""
from __future__ import annotations

import torch

from grpo_lab import _checks
from grpo_lab.losses.beyond import _rollout_inputs
from grpo_lab.losses.checks import _as_tensor, _check_2d, _check_dual_clip, _check_eps, _check_mask, _float_tensor
from grpo_lab.losses.core import _lengths, aggregate, grpo_loss, kl_penalty, policy_loss_per_token

Tensor = torch.Tensor


def token_weights(mask, mode="seq-mean-token-mean", *, max_len=None) -> Tensor:
    """The coefficient w_{i,t} with aggregate(v) = Σ w_{i,t} v_{i,t}. Shape (B, T), 0 on padding.

    Obtained by autograd through :func:`aggregate` (no second copy of the formulas).
    """
    m = _as_tensor("mask", mask)
    if m.ndim != 2:
        raise ValueError(f"mask must be 2-d of shape (B, T), got shape {tuple(m.shape)}")
    v = torch.zeros(m.shape, dtype=torch.float64 if not torch.is_floating_point(m) else m.dtype,
                    device=m.device, requires_grad=True)
    (g,) = torch.autograd.grad(aggregate(v, mask, mode, max_len=max_len), v)
    return g


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


# ---------------------------------------------------------------------------------
# What every picture shows: the gradient weight of each token
# ---------------------------------------------------------------------------------
def token_grad_weights(logp, old_logp, adv, mask, **loss_kwargs) -> Tensor:
    """∂loss/∂log π_θ(o_{i,t}) for every token, by autograd through :func:`grpo_loss`. Shape (B, T).

    The gradient of the loss with respect to θ is Σ_{i,t} w_{i,t}·∇_θ log π_θ(o_{i,t}), so
    w_{i,t} is "how hard, and in which direction, token t of response i is pushed";
    descent *raises* log π where w < 0. Unclipped, with the token ratio and no KL,
    w_{i,t} = −ρ_{i,t}·Â_i·c_{i,t} where c_{i,t} is the aggregation weight (1/(B'|y_i|)
    for eq. 6): the same Â on every token, the ratio the only position-dependent factor.
    Keyword arguments are those of :func:`grpo_loss`. Padding positions get 0.
    """
    lp = _check_2d("logp", logp).detach().clone().requires_grad_(True)
    out = grpo_loss(lp, old_logp, adv, mask, **loss_kwargs)
    (g,) = torch.autograd.grad(out.loss, lp)
    return g


# ---------------------------------------------------------------------------------
# The clipped term as a function of the ratio (what the clipping pictures plot)
# ---------------------------------------------------------------------------------
def surrogate_curve(ratio, adv, *, eps_low=0.2, eps_high=None, dual_clip=None):
    """ℓ(ρ) of eq. (3) for one token with advantage ``adv``, and its gradient ∂ℓ/∂log π.

    ``ratio``: 1-d array of ratios ρ > 0. Returns two float64 numpy arrays of that shape:
    the objective ℓ = −loss and the weight ∂ℓ/∂log π = ρ·∂ℓ/∂ρ, both computed by
    :func:`policy_loss_per_token` and autograd (ρ·Â where unclipped, exactly 0 where
    clipped). Gradient *ascent* on ℓ raises log π where the weight is positive.
    """
    rho = _checks.finite_array("ratio", ratio, ndim=1)
    if (rho <= 0).any():
        raise ValueError("ratio must be > 0 (a ratio of probabilities)")
    a = _checks.finite_float("adv", adv)
    logp = torch.log(torch.as_tensor(rho, dtype=torch.float64))[None, :].requires_grad_(True)  # (1, N)
    loss = policy_loss_per_token(logp, torch.zeros_like(logp), torch.tensor([a], dtype=torch.float64),
                                 torch.ones_like(logp), eps_low=eps_low, eps_high=eps_high,
                                 dual_clip=dual_clip)                                      # (1, N)
    (g,) = torch.autograd.grad(loss.sum(), logp)          # each token's loss depends on its own logp
    return (0.0 - loss[0]).detach().numpy(), (0.0 - g[0]).numpy()   # 0 − x: no −0.0 in printouts


def zero_grad_intervals(adv, *, eps_low=0.2, eps_high=None, dual_clip=None) -> list[tuple[float, float]]:
    """The ρ intervals where the clipped term has zero gradient, for a token with advantage ``adv``.

    Â > 0: [1 + ε_high, ∞) (the ratio already rose enough). Â < 0: [0, 1 − ε_low] (already
    fell enough) and, with dual clip c, [c, ∞). Â = 0: everywhere. Ends are ``math.inf``.
    """
    a = _checks.finite_float("adv", adv)
    eps_low, eps_high = _check_eps(eps_low, eps_high)
    c = _check_dual_clip(dual_clip)
    if a > 0:
        return [(1.0 + eps_high, float("inf"))]
    if a < 0:
        out = [(0.0, 1.0 - eps_low)]
        if c is not None:
            out.append((c, float("inf")))
        return out
    return [(0.0, float("inf"))]


# ---------------------------------------------------------------------------------
# Beyond the lecture notes: how far the sampler is from the trainer (notebook 09)
# ---------------------------------------------------------------------------------
def mismatch_stats(logp, sampler_logp, mask, *, eps_low=0.2, eps_high=None) -> dict[str, float]:
    """How far the sampler is from the trainer on the sampled tokens (floats; NaN without a valid token).

    With d = log π_train − log π_sampler per token: ``abs_logp`` mean |d|; ``kl`` the k3
    estimate of KL(π_sampler‖π_train) from tokens drawn by the sampler (eq. 5 of lecture
    notes 000 with u = π_train/π_sampler, computed by :func:`grpo_lab.losses.kl_penalty`);
    ``ratio_max`` / ``ratio_min`` the extreme token ratios π_train/π_sampler; ``clip_frac``
    the fraction of tokens whose ratio lies outside [1 − ε_low, 1 + ε_high] — what the clip
    would cut if the sampler's log-probs were used as π_θold.
    """
    eps_low, eps_high = _check_eps(eps_low, eps_high)
    d, m, valid = _rollout_inputs(logp, sampler_logp, mask)
    if not bool(valid.any()):
        return dict.fromkeys(("abs_logp", "kl", "ratio_max", "ratio_min", "clip_frac"), float("nan"))
    dv = d[valid]
    s = (logp.detach() - d)                                               # sampler log-probs (NaN-cleaned)
    kl = kl_penalty(s, logp.detach(), "k3", mask=m)[valid]                # u = π_train/π_sampler
    r = torch.exp(dv)
    return {"abs_logp": float(dv.abs().mean()), "kl": float(kl.mean()), "ratio_max": float(r.max()),
            "ratio_min": float(r.min()),
            "clip_frac": float(((r < 1 - eps_low) | (r > 1 + eps_high)).float().mean())}
