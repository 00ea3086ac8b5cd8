"""The GRPO loss, token by token (seed 000 §2–§4, eqs. (2)–(7); seed 004 §四).

Everything here is torch and works on a padded batch: ``B`` responses of at most ``T``
tokens, with a 0/1 response ``mask`` of shape ``(B, T)``. One response ``i`` has
``|y_i| = mask[i].sum()`` valid tokens. The pieces, in the order of the seed's six-step
recipe (seed 000 §5):

=====================================  ===============================================
:func:`token_ratio`                    ρ_{i,t} = π_θ / π_θold per token, eq. (4)
:func:`sequence_ratio`                 GSPO's s_i = exp(mean_t log ρ_{i,t}) (seed 004 §四)
:func:`broadcast_adv`                  Â_i (B,) copied onto every token (B, T), §1.2/§2.2
:func:`policy_loss_per_token`          −ℓ_{i,t}, the clipped term of eq. (3) as a loss
:func:`kl_penalty`                     k1 / k2 / k3 per token; k3 is eq. (5)
:func:`aggregate`                      eq. (6) seq-mean, eq. (7) token-mean, Dr. GRPO 1/C
:func:`grpo_loss`                      eq. (2) as a loss: aggregate(−ℓ + β·KL) + diagnostics
:func:`kl_shaped_rewards`              §3 form 2: r' = −β log(π/π_ref) folded into r_i
:func:`token_grad_weights`             ∂loss/∂log π(o_{i,t}) for every token, by autograd
=====================================  ===============================================

Sign convention. The seed writes an *objective* to maximise,
ℓ = min(ρ·Â, clip(ρ, 1−ε, 1+ε)·Â) (eq. 3). This module returns *losses* to minimise, i.e.
−ℓ, because that is what an optimiser and the LM trainer consume. Consequently a token of a
good response (Â > 0) has a *negative* gradient weight ∂loss/∂log π: gradient descent pushes
its log-probability up.

:func:`grpo_loss` is the one place the loss is computed; the LM trainer, the notebooks, the
figures and :func:`token_grad_weights` all call it.

Conventions of other libraries (described, not copied):

* TRL's ``GRPOConfig.loss_type`` names map onto :func:`aggregate` modes — ``"grpo"`` →
  ``"seq-mean-token-mean"`` (eq. 6), ``"bnpo"`` → ``"token-mean"`` over the local batch,
  ``"dapo"`` → ``"token-mean"`` over the whole (gradient-accumulated) batch, ``"dr_grpo"`` →
  ``"seq-mean-token-sum-norm"`` with ``max_len = max_completion_length``. All four are accepted
  here as aliases. "bnpo" and "dapo" differ in TRL only in *which* tokens are counted when the
  batch is split into micro-batches; on one batch they are the same number.
* verl names its ``loss_agg_mode`` exactly like the modes here. Its
  ``"seq-mean-token-sum-norm"`` (in the versions we read) divides the *total* by the padded
  response length T only, without the 1/B of Dr. GRPO's 1/(G·C); its value is therefore B
  times ours (same direction, B-fold step size). Here, as in TRL's ``dr_grpo``, the divisor
  is B'·max_len.
* verl calls k1/k2/k3 ``"kl"``/``"mse"``/``"low_var_kl"`` (and clamps the last one); these
  names are accepted as aliases; instead of verl's clamp, k3 continues along its tangent
  line past a log-ratio of 20 (see :func:`kl_penalty`).
* Dual clip (verl's ``clip_ratio_c``, default 3) bounds the loss of Â < 0 tokens whose ratio
  has run far above 1; TRL's GRPO trainer has no dual clip.
* With one optimiser step per batch (μ = 1 in the GRPO paper, TRL's default
  ``num_iterations=1``) old_logp equals logp numerically, ρ ≡ 1 and clipping never fires;
  only the gradient of ρ survives (see :func:`token_grad_weights`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from grpo_lab import _checks

Tensor = torch.Tensor

MODES = ("seq-mean-token-mean", "token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")
# TRL loss_type names -> aggregation mode (see the module docstring for where they differ).
MODE_ALIASES = {"grpo": "seq-mean-token-mean", "bnpo": "token-mean", "dapo": "token-mean",
                "dr_grpo": "seq-mean-token-sum-norm"}
KL_KINDS = ("k1", "k2", "k3")
# verl kl_penalty names -> estimator (verl clamps low_var_kl to [-10, 10]; we continue k3 linearly
# past K3_LOG_RATIO_BOUND instead, see _kl).
KL_ALIASES = {"kl": "k1", "mse": "k2", "low_var_kl": "k3"}
LEVELS = ("token", "sequence")
# Numerical safety (see _clip_log_ratio and _kl). Beyond the clip boundary the clipped branch
# of eq. (3) is a constant, so the log-ratio is clamped LOG_RATIO_MARGIN above that boundary
# before exp: the value and gradient are unchanged, and exp can no longer overflow to inf
# (whose gradient inf·0 is NaN). k3 = e^d − d − 1 (d = log π_ref/π_θ) is continued by its
# tangent line beyond d = K3_LOG_RATIO_BOUND (k3 there ≈ 4.9e8), so it stays finite in fp32.
LOG_RATIO_MARGIN = 1.0
K3_LOG_RATIO_BOUND = 20.0


# ---------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------
def _as_tensor(name: str, value, *, like: Tensor | None = None) -> Tensor:
    if isinstance(value, Tensor):
        t = value
    else:
        try:
            t = torch.as_tensor(value, dtype=like.dtype if like is not None else None)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{name} must be a tensor or array of numbers, got {type(value).__name__}") from None
    if like is not None and t.device != like.device:
        raise ValueError(f"{name} is on {t.device} but logp is on {like.device}")
    return t


def _float_tensor(name: str, value, *, like: Tensor | None = None) -> Tensor:
    t = _as_tensor(name, value, like=like)
    if not torch.is_floating_point(t):
        t = t.to(like.dtype if like is not None else torch.get_default_dtype())
    return t


def _check_mask(mask, shape, like: Tensor) -> Tensor:
    """The 0/1 response mask as a float tensor of logp's dtype; refuses anything else."""
    m = _as_tensor("mask", mask, like=like)
    if tuple(m.shape) != tuple(shape):
        raise ValueError(f"mask must have shape {tuple(shape)} (like logp), got {tuple(m.shape)}")
    if m.dtype != torch.bool:
        if torch.is_complex(m) or not bool(((m == 0) | (m == 1)).all()):
            raise ValueError("mask must be binary (0/1 or bool): 1 marks a response token, 0 padding")
    return m.to(like.dtype)


def _check_2d(name: str, value, *, like: Tensor | None = None) -> Tensor:
    t = _float_tensor(name, value, like=like)
    if t.ndim != 2:
        raise ValueError(f"{name} must be 2-d of shape (B, T), got shape {tuple(t.shape)}")
    if like is not None and t.shape != like.shape:
        raise ValueError(f"{name} must have the shape of logp {tuple(like.shape)}, got {tuple(t.shape)}")
    return t


def _check_finite_where(name: str, t: Tensor, mask: Tensor) -> None:
    if not bool(torch.isfinite(t.detach()[mask > 0]).all()):
        raise ValueError(f"{name} must be finite at every response token (mask == 1)")


def _check_adv(adv, B: int, like: Tensor) -> Tensor:
    a = _float_tensor("adv", adv, like=like).to(like.dtype)
    if a.ndim != 1 or a.shape[0] != B:
        raise ValueError(f"adv must be one sequence-level advantage per response, shape ({B},); "
                         f"got shape {tuple(a.shape)}")
    if not bool(torch.isfinite(a.detach()).all()):
        raise ValueError("adv must be finite (no NaN or inf)")
    return a


def _check_eps(eps_low, eps_high) -> tuple[float, float]:
    eps_low = _checks.in_range("eps_low", eps_low, 0.0, 1.0)
    eps_high = eps_low if eps_high is None else _checks.in_range("eps_high", eps_high, 0.0)
    return eps_low, eps_high


def _check_dual_clip(dual_clip) -> float | None:
    if dual_clip is None:
        return None
    return _checks.in_range("dual_clip", dual_clip, 1.0, low_open=True)


def resolve_mode(mode: str) -> str:
    """An aggregation mode name, TRL aliases (grpo/bnpo/dapo/dr_grpo) resolved."""
    if isinstance(mode, str) and mode in MODE_ALIASES:
        return MODE_ALIASES[mode]
    return _checks.choice("mode", mode, MODES + tuple(MODE_ALIASES))


def resolve_kind(kind: str) -> str:
    """A KL estimator name, verl aliases (kl/mse/low_var_kl) resolved."""
    if isinstance(kind, str) and kind in KL_ALIASES:
        return KL_ALIASES[kind]
    return _checks.choice("kind", kind, KL_KINDS + tuple(KL_ALIASES))


# ---------------------------------------------------------------------------------
# Ratios and the advantage broadcast
# ---------------------------------------------------------------------------------
def _log_ratio(logp: Tensor, old_logp: Tensor, m: Tensor) -> Tensor:
    # Padding positions may hold anything (even −inf): zero them before exp so that no
    # inf·0 = NaN can leak into the loss or its gradient.
    return torch.where(m > 0, logp - old_logp, torch.zeros_like(logp))   # (B, T)


def token_ratio(logp, old_logp, mask) -> Tensor:
    """ρ_{i,t} = π_θ(o_{i,t}|·)/π_θold(o_{i,t}|·) = exp(logp − old_logp), eq. (4). Shape (B, T).

    Equals 1 at padding positions (mask == 0).
    """
    logp = _check_2d("logp", logp)
    old_logp = _check_2d("old_logp", old_logp, like=logp)
    m = _check_mask(mask, logp.shape, logp)
    return torch.exp(_log_ratio(logp, old_logp, m))


def _lengths(m: Tensor) -> Tensor:
    return m.sum(-1)                                                     # (B,) |y_i|


def sequence_ratio(logp, old_logp, mask) -> Tensor:
    """GSPO's sequence ratio s_i = (π_θ(y_i)/π_θold(y_i))^{1/|y_i|} = exp(mean_t log ρ_{i,t}). Shape (B,).

    The geometric mean of the token ratios (seed 004 §四: importance sampling lifted from the
    token to the sequence). A response with no valid token gets s_i = 1.
    """
    logp = _check_2d("logp", logp)
    old_logp = _check_2d("old_logp", old_logp, like=logp)
    m = _check_mask(mask, logp.shape, logp)
    return _sequence_ratio(logp, old_logp, m)


def _mean_log_ratio(lr: Tensor, m: Tensor) -> Tensor:
    """mean_t log ρ_{i,t} over the valid tokens of each row, (B, T) -> (B,); 0 for an empty row."""
    return (lr * m).sum(-1) / _lengths(m).clamp(min=1.0)                # (B,) clamp: avoid 0/0


def _sequence_ratio(logp: Tensor, old_logp: Tensor, m: Tensor) -> Tensor:
    return torch.exp(_mean_log_ratio(_log_ratio(logp, old_logp, m), m))  # (B,)


def _gspo_token_ratio(lr: Tensor, m: Tensor, a: Tensor, eps_high: float, dual_clip) -> Tensor:
    """GSPO-token's s_{i,t} = sg[s_i] · π_θ(o_{i,t}) / sg[π_θ(o_{i,t})]. Shape (B, T).

    Its *value* is s_i on every token; its gradient is ∂s_{i,t}/∂log π(o_{i,t}) = s_i (and 0
    for the other tokens), i.e. each token is pushed with the sequence's ratio but only
    through its own log-probability. Plain s_i would give ∂s_i/∂log π(o_{i,t}) = s_i/|y_i|
    spread over all |y_i| tokens. After aggregation the two give the same gradient whenever
    every token of a row carries the same weight and the same Â — which is always the case
    here, since Â is sequence-level and every :func:`aggregate` mode weighs the tokens of a
    row equally (tests check this). The stop-gradient form keeps ``policy_loss_per_token``
    truly per-token. ``lr`` (B, T) is log ρ_{i,t}; mean_t log ρ is bounded by
    :func:`_clip_log_ratio` before exp.
    """
    s = torch.exp(_clip_log_ratio(_mean_log_ratio(lr, m), a, eps_high, dual_clip)).detach()  # (B,) sg[s_i]
    return s[:, None] * torch.exp(lr - lr.detach())                      # (B, T), value s_i


def broadcast_adv(adv, mask) -> Tensor:
    """Â_i copied onto every token of response i, zero on padding. (B,) -> (B, T).

    Seed 000 §1.2/§2.2: the advantage has no index t. The reward arrives once, after the
    whole response; group normalisation (eq. 1) is pure scalar arithmetic; so every token of
    a response is multiplied by the same Â_i — the model learns *that* the response was
    good, not *which* token made it good.
    """
    m = _as_tensor("mask", mask)
    if m.ndim != 2:
        raise ValueError(f"mask must be 2-d of shape (B, T), got shape {tuple(m.shape)}")
    a0 = _as_tensor("adv", adv)
    dtype = a0.dtype if torch.is_floating_point(a0) else torch.get_default_dtype()
    like = torch.zeros((), dtype=dtype, device=m.device)
    m = _check_mask(m, m.shape, like)
    a = _check_adv(adv, m.shape[0], like)
    A = a[:, None].expand_as(m)                                          # (B, T) the same Â_i on every t
    return torch.where(m > 0, A, torch.zeros_like(A))


# ---------------------------------------------------------------------------------
# The clipped term, eq. (3), as a loss
# ---------------------------------------------------------------------------------
@dataclass
class _Clipped:
    loss: Tensor        # (B, T) −ℓ, zero on padding
    ratio: Tensor       # (B, T) ρ (token) or s_i (sequence), 1 on padding; detached, unclamped
    low: Tensor         # (B, T) bool: Â < 0 and ρ < 1 − ε_low (clipped, zero gradient)
    high: Tensor        # (B, T) bool: Â > 0 and ρ > 1 + ε_high (clipped, zero gradient)
    dual: Tensor        # (B, T) bool: Â < 0 and the dual clip bound is active (zero gradient)


def _check_policy_inputs(logp, old_logp, adv, mask, eps_low, eps_high, dual_clip, level):
    """Validate once; returns (logp, old_logp, adv, mask as float, eps_low, eps_high, dual_clip, level)."""
    logp = _check_2d("logp", logp)
    old_logp = _check_2d("old_logp", old_logp, like=logp)
    m = _check_mask(mask, logp.shape, logp)
    a = _check_adv(adv, logp.shape[0], logp)
    eps_low, eps_high = _check_eps(eps_low, eps_high)
    dual_clip = _check_dual_clip(dual_clip)
    level = _checks.choice("level", level, LEVELS)
    _check_finite_where("logp", logp, m)
    _check_finite_where("old_logp", old_logp, m)
    # π_θold and Â are constants of the objective: ρ's gradient comes from logp alone, even
    # when the caller passes tensors that carry a graph (e.g. old_logp is logp itself)
    return logp, old_logp.detach(), a.detach(), m, eps_low, eps_high, dual_clip, level


def _clip_log_ratio(log_ratio: Tensor, a: Tensor, eps_high: float, dual_clip: float | None) -> Tensor:
    """log ρ clamped where its size no longer matters: LOG_RATIO_MARGIN above the boundary past
    which eq. (3) takes the constant clipped branch. Same shape as ``log_ratio`` ((B, T) or (B,)).

    Â ≥ 0: ρ > 1 + ε_high is clipped (Â > 0) or multiplied by 0 (Â = 0). Â < 0 with dual clip
    c: ρ > c is capped. Â < 0 without dual clip: −ρ·Â grows without bound, so nothing is
    clamped (an overflow there is a real divergence, which the LM trainer's guard stops).
    Below the bound the result is ``log_ratio`` itself, bit for bit, with gradient 1.
    """
    A = a if log_ratio.ndim == 1 else a[:, None]
    hi = math.log1p(eps_high) + LOG_RATIO_MARGIN
    bound = torch.where(A >= 0, torch.full_like(A, hi),
                        torch.full_like(A, math.inf if dual_clip is None else math.log(dual_clip) + LOG_RATIO_MARGIN))
    return torch.where(log_ratio > bound, bound.expand_as(log_ratio).to(log_ratio.dtype), log_ratio)


def _clipped(logp, old_logp, a, m, eps_low, eps_high, dual_clip, level) -> _Clipped:
    """The clipped term on validated inputs (see :func:`policy_loss_per_token`)."""
    lr = _log_ratio(logp, old_logp, m)                                   # (B, T) log ρ_{i,t}
    if level == "token":
        ratio = torch.exp(_clip_log_ratio(lr, a, eps_high, dual_clip))   # (B, T) ρ_{i,t}, eq. (4)
        reported = torch.exp(lr.detach())                                # the true ρ (may be inf)
    else:
        ratio = _gspo_token_ratio(lr, m, a, eps_high, dual_clip)         # (B, T) value s_i
        reported = torch.exp(_mean_log_ratio(lr.detach(), m))[:, None].expand_as(lr)   # the true s_i
    # Seed 000 §1.2/§2.2 ("the model does not know which token made it good"): the
    # sequence-level advantage Â_i (B,) is copied onto every token (B, T). The ratio is the
    # only factor of ℓ_{i,t} that depends on the position t.
    A = a[:, None].expand_as(ratio)                                      # (B, T)
    surr1 = ratio * A                                                    # ρ·Â
    surr2 = ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * A               # clip(ρ, 1−ε_low, 1+ε_high)·Â
    obj = torch.minimum(surr1, surr2)                                    # ℓ, eq. (3)
    dual = torch.zeros_like(m, dtype=torch.bool)
    if dual_clip is not None:
        # Dual clip, objective form: for Â < 0, ℓ ← max(ℓ, dual_clip·Â), a floor under the
        # objective (a cap −dual_clip·Â on the loss) once ρ > dual_clip.
        floor = dual_clip * A
        dual = (A < 0) & (obj < floor)
        obj = torch.where(A < 0, torch.maximum(obj, floor), obj)
    valid = m > 0
    loss = torch.where(valid, -obj, torch.zeros_like(obj))               # (B, T) loss = −ℓ
    r = reported
    low = valid & (A < 0) & (r < 1.0 - eps_low)
    high = valid & (A > 0) & (r > 1.0 + eps_high)
    return _Clipped(loss, r, low, high, dual & valid)


def policy_loss_per_token(logp, old_logp, adv, mask, *, eps_low=0.2, eps_high=None,
                          dual_clip=None, level="token") -> Tensor:
    """The clipped term of eq. (3) as a per-token loss −ℓ_{i,t}. Shape (B, T), 0 on padding.

    ℓ_{i,t} = min(ρ_{i,t}·Â_i, clip(ρ_{i,t}, 1 − eps_low, 1 + eps_high)·Â_i)

    Args:
        logp: (B, T) log π_θ(o_{i,t}|x, o_{i,<t}) of the sampled tokens, with gradient.
        old_logp: (B, T) the same under π_θold (the sampling policy); treated as constant.
        adv: (B,) sequence-level advantages Â_i (eq. 1), broadcast onto every token.
        mask: (B, T) 1 for response tokens, 0 for padding (bool or 0/1 numbers).
        eps_low, eps_high: clip range [1 − eps_low, 1 + eps_high]. ``eps_high=None`` means
            eps_high = eps_low (the seed's symmetric ε); DAPO's clip-higher uses a larger
            eps_high (e.g. 0.28) so that rare tokens of good answers can grow.
        dual_clip: c > 1 or None. For Â < 0 the objective becomes max(ℓ, c·Â), i.e. the
            loss is capped at −c·Â: a negative-advantage token whose ratio has exploded
            (ρ > c) stops receiving an ever larger push (verl's ``clip_ratio_c``).
        level: ``"token"`` uses ρ_{i,t} (eq. 4); ``"sequence"`` uses GSPO's s_i =
            exp(mean_t(logp − old_logp)) on every token of response i, in GSPO-token's
            stop-gradient form s_{i,t} = sg[s_i]·π_θ(o_{i,t})/sg[π_θ(o_{i,t})] (value s_i,
            gradient s_i through the token's own log π; identical to plain s_i after any
            :func:`aggregate` mode since Â is per sequence). GSPO uses a much smaller ε
            (order 1e-3) because s_i is a geometric mean.

    Clipping zeroes the gradient where the min picks the constant clipped branch: Â > 0 and
    ρ > 1 + eps_high, or Â < 0 and ρ < 1 − eps_low (and, with dual clip, Â < 0 and ρ > c).
    """
    return _clipped(*_check_policy_inputs(logp, old_logp, adv, mask, eps_low, eps_high, dual_clip, level)).loss


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
# Aggregation, eqs. (6) and (7)
# ---------------------------------------------------------------------------------
def aggregate(values, mask, mode="seq-mean-token-mean", *, max_len=None) -> Tensor:
    """Reduce per-token values (B, T) to the scalar the optimiser sees. Returns a 0-d tensor.

    =============================  =============================================  ==========
    mode                           formula (|y_i| valid tokens, B' valid rows)     weight/token
    =============================  =============================================  ==========
    ``seq-mean-token-mean``        (1/B')·Σ_i (1/|y_i|)·Σ_t v_{i,t}  — eq. (6)      1/(B'|y_i|)
    ``token-mean``                 Σ_i Σ_t v_{i,t} / Σ_i |y_i|       — eq. (7)      1/Σ|y|
    ``seq-mean-token-sum``         (1/B')·Σ_i Σ_t v_{i,t}                           1/B'
    ``seq-mean-token-sum-norm``    Σ_i Σ_t v_{i,t} / (B'·max_len)    — Dr. GRPO     1/(B'·C)
    =============================  =============================================  ==========

    eq. (6) (GRPO) makes every *response* weigh the same, so a long response's tokens are
    diluted by 1/|y_i| — the length bias of seed 000 §4.3. eq. (7) (DAPO's token-level PG)
    makes every *token* weigh the same. Dr. GRPO replaces 1/|y_i| by a global constant
    1/C, C = ``max_len`` the generation budget (seed 004 §四), required for that mode and
    ≥ the longest response.

    Rows with no valid token do not count as sequences (B' excludes them); if no token is
    valid at all the result is 0 (still connected to the graph), never NaN. TRL names
    grpo/bnpo/dapo/dr_grpo are accepted (see the module docstring); note TRL's dr_grpo
    divides by the full batch size, padding rows included.
    """
    mode = resolve_mode(mode)
    v = _check_2d("values", values)
    m = _check_mask(mask, v.shape, v)
    _check_finite_where("values", v, m)
    return _aggregate(v, m, mode, _check_max_len(max_len, mode, m))


def _check_max_len(max_len, mode: str, m: Tensor) -> int | None:
    """max_len validated for ``mode`` (required and ≥ the longest response for the Dr. GRPO mode)."""
    if mode != "seq-mean-token-sum-norm":
        return None if max_len is None else _checks.integer("max_len", max_len, low=1)
    if max_len is None:
        raise ValueError("mode 'seq-mean-token-sum-norm' (Dr. GRPO, TRL 'dr_grpo') needs max_len, "
                         "the constant C (generation budget) that replaces 1/|y_i|")
    C = _checks.integer("max_len", max_len, low=1)
    longest = int(_lengths(m).max().item()) if m.numel() else 0
    if C < longest:
        raise ValueError(f"max_len must be >= the longest response ({longest} tokens), got {C}")
    return C


def _aggregate(v: Tensor, m: Tensor, mode: str, C: int | None) -> Tensor:
    """:func:`aggregate` on validated inputs (mode resolved, C checked)."""
    vm = torch.where(m > 0, v, torch.zeros_like(v))                      # (B, T) padding -> 0
    n_tok = _lengths(m)                                                  # (B,) |y_i|
    row_valid = n_tok > 0                                                # (B,)
    n_rows = row_valid.sum().clamp(min=1).to(v.dtype)                    # B'
    if mode == "seq-mean-token-sum-norm":
        return vm.sum() / (n_rows * C)                                   # Dr. GRPO: 1/(B'·C)
    if mode == "token-mean":
        return vm.sum() / n_tok.sum().clamp(min=1.0)                     # eq. (7)
    row_sum = vm.sum(-1)                                                 # (B,) Σ_t v_{i,t}
    if mode == "seq-mean-token-mean":
        row = row_sum / n_tok.clamp(min=1.0)                             # (B,) eq. (6) inner mean
    else:  # seq-mean-token-sum
        row = row_sum
    return torch.where(row_valid, row, torch.zeros_like(row)).sum() / n_rows


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
# The whole loss, eq. (2), with diagnostics
# ---------------------------------------------------------------------------------
@dataclass
class LossOutput:
    """Result of :func:`grpo_loss`. ``loss`` has a graph; every other field is detached.

    clip_frac_low / clip_frac_high / dual_clip_frac: fraction of valid tokens in each
    zero-gradient region of the clipped term; ratio_*: over valid tokens (s_i for
    level="sequence"); kl: the KL estimate aggregated with the same mode (0 if no ref_logp).
    """

    loss: Tensor            # () aggregate(−ℓ + β·KL) — what the optimiser minimises
    pg_loss: Tensor         # () aggregate(−ℓ)
    kl: Tensor              # () aggregate(KL estimate)
    clip_frac_low: Tensor   # ()
    clip_frac_high: Tensor  # ()
    dual_clip_frac: Tensor  # ()
    ratio_mean: Tensor      # ()
    ratio_min: Tensor       # ()
    ratio_max: Tensor       # ()
    per_token: Tensor       # (B, T) −ℓ + β·KL, 0 on padding (detached)

    def to_dict(self) -> dict[str, float]:
        """Scalar fields as python floats (for a metrics DataFrame)."""
        return {f.name: float(getattr(self, f.name).detach()) for f in fields(self) if f.name != "per_token"}


def grpo_loss(logp, old_logp, adv, mask, *, ref_logp=None, beta=0.0, kl_kind="k3",
              mode="seq-mean-token-mean", max_len=None, eps_low=0.2, eps_high=None,
              dual_clip=None, level="token") -> LossOutput:
    """Eq. (2) as a loss: aggregate(−ℓ_{i,t} + β·KL_{i,t}, mode) plus diagnostics.

    This is KL-in-loss (seed 000 §3 form 1): the per-token KL estimate (``kl_kind``, k3 by
    default, eq. 5) is added to each token's loss *before* aggregation, as in the GRPO paper
    and TRL, so it is weighted exactly like the clipped term. For KL-in-reward (form 2) use
    :func:`kl_shaped_rewards` on the rewards and call this with ``beta=0``.
    ``ref_logp`` (B, T) is required when beta > 0. Arguments otherwise as in
    :func:`policy_loss_per_token` and :func:`aggregate`.
    """
    args = _check_policy_inputs(logp, old_logp, adv, mask, eps_low, eps_high, dual_clip, level)
    logp_t, m = args[0], args[3]
    beta = _checks.in_range("beta", beta, 0.0)
    mode = resolve_mode(mode)
    kl_kind = resolve_kind(kl_kind)
    C = _check_max_len(max_len, mode, m)
    if ref_logp is None and beta > 0:
        raise ValueError("ref_logp is required when beta > 0 (the KL term needs π_ref)")
    if ref_logp is not None:
        ref_logp = _check_2d("ref_logp", ref_logp, like=logp_t)
        _check_finite_where("ref_logp", ref_logp, m)
    c = _clipped(*args)
    if ref_logp is None:
        kl_tok = torch.zeros_like(c.loss)
    else:
        kl_tok = _kl(logp_t, ref_logp, kl_kind, m)                       # (B, T) 0 on padding
    per_token = c.loss + beta * kl_tok if beta > 0 else c.loss           # (B, T)
    loss = _aggregate(per_token, m, mode, C)
    with torch.no_grad():
        pg = _aggregate(c.loss, m, mode, C)
        kl = _aggregate(kl_tok, m, mode, C)
        valid = m > 0
        n = valid.sum().clamp(min=1).to(logp_t.dtype)
        r = c.ratio.detach()[valid]
        one = torch.ones((), dtype=logp_t.dtype, device=logp_t.device)
        out = LossOutput(
            loss=loss, pg_loss=pg, kl=kl,
            clip_frac_low=c.low.sum() / n, clip_frac_high=c.high.sum() / n,
            dual_clip_frac=c.dual.sum() / n,
            ratio_mean=r.mean() if r.numel() else one,
            ratio_min=r.min() if r.numel() else one,
            ratio_max=r.max() if r.numel() else one,
            per_token=per_token.detach())
    return out


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
