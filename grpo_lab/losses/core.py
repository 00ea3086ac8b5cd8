"""The loss itself: ratios, the clipped term, KL estimators, aggregation and :func:`grpo_loss`.

See :mod:`grpo_lab.losses` for the equations, the sign convention and where other libraries differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch

from grpo_lab import _checks
from grpo_lab.losses import beyond
from grpo_lab.losses.checks import (KL_ALIASES, KL_KINDS, LEVELS, MODE_ALIASES, MODES, _as_tensor,  # noqa: F401
                                   _check_2d, _check_adv, _check_dual_clip, _check_eps, _check_finite_where,
                                   _check_mask, _float_tensor, resolve_kind, resolve_mode)

Tensor = torch.Tensor

# Numerical safety (see _clip_log_ratio and _kl). Beyond the clip boundary the clipped branch
# of eq. (3) is a constant, so the log-ratio is clamped LOG_RATIO_MARGIN above that boundary
# before exp: the value and gradient are unchanged, and exp can no longer overflow to inf
# (whose gradient inf·0 is NaN). k3 = e^d − d − 1 (d = log π_ref/π_θ) is continued by its
# tangent line beyond d = K3_LOG_RATIO_BOUND (k3 there ≈ 4.9e8), so it stays finite in fp32.
LOG_RATIO_MARGIN = 1.0
K3_LOG_RATIO_BOUND = 20.0

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
    zero_grad: Tensor | None = None   # (B, T) bool: the zero-gradient tokens when not low | high | dual (CISPO, SAPO)


def _check_policy_inputs(logp, old_logp, adv, mask, eps_low, eps_high, dual_clip, level, policy=None):
    """Validate once; returns (logp, old_logp, adv, mask as float, eps_low, eps_high, dual_clip, level, policy).

    ``policy`` is a dict of :func:`grpo_lab.losses.beyond.check_policy_loss`'s arguments (None: the
    clipped loss of eq. 3); it comes back as the validated tuple (policy_loss, cap, τ_pos, τ_neg).
    """
    policy = beyond.check_policy_loss(**(policy or {}), level=level, dual_clip=dual_clip)
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
    return logp, old_logp.detach(), a.detach(), m, eps_low, eps_high, dual_clip, level, policy


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


def _clipped(logp, old_logp, a, m, eps_low, eps_high, dual_clip, level, policy=("clip",)) -> _Clipped:
    """The clipped term on validated inputs (see :func:`policy_loss_per_token`); the 2025 losses
    of :mod:`grpo_lab.losses.beyond` when ``policy[0]`` is not ``"clip"``."""
    lr = _log_ratio(logp, old_logp, m)                                   # (B, T) log ρ_{i,t}
    if policy[0] != "clip":
        return _beyond(lr, logp, a, m, eps_low, eps_high, policy)
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


def _beyond(lr, logp, a, m, eps_low, eps_high, policy) -> _Clipped:
    """CISPO / SAPO / GMPO (:mod:`grpo_lab.losses.beyond`) as a :class:`_Clipped`."""
    name, cap, tau_pos, tau_neg = policy
    valid = m > 0
    A = torch.where(valid, a[:, None].expand_as(lr), torch.zeros_like(lr))   # (B, T) Â_i on every token
    none = torch.zeros_like(valid)
    if name == "cispo":      # a capped token keeps its gradient: "high" counts capped weights, none is zero-grad
        loss, ratio, capped = beyond.cispo_terms(lr, logp, A, valid, cap)
        return _Clipped(loss, ratio, none, capped, none, zero_grad=none)
    if name == "sapo":       # a soft gate: no token is ever cut off
        loss, ratio = beyond.sapo_terms(lr, A, valid, tau_pos, tau_neg)
        return _Clipped(loss, ratio, none, none, none, zero_grad=none)
    loss, ratio, low, high = beyond.gmpo_terms(lr, A, m, eps_low, eps_high)
    return _Clipped(loss, ratio, low, high, none)


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
        # u − log u − 1, eq. (5), continued along its tangent line past d = K3_LOG_RATIO_BOUND,
        # where e^d would soon overflow fp32 (d ≈ 88). The exp branch only ever sees d ≤ the bound
        # (no inf·0 = NaN in its gradient); below the bound value and gradient are the plain formula's.
        D = K3_LOG_RATIO_BOUND
        dc = d.clamp(max=D)
        kl = torch.where(d > D, (math.expm1(D) - D) + math.expm1(D) * (d - D), torch.expm1(dc) - dc)
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
    ratio: Tensor           # (B, T) ρ_{i,t} (or s_i on every token of i), 1 on padding (detached)
    clipped: Tensor         # (B, T) bool: the token is in a zero-gradient region (low, high or dual clip)

    TOKEN_FIELDS = ("per_token", "ratio", "clipped")

    def to_dict(self) -> dict[str, float]:
        """Scalar fields as python floats (for a metrics DataFrame)."""
        return {f.name: float(getattr(self, f.name).detach()) for f in fields(self) if f.name not in self.TOKEN_FIELDS}


def grpo_loss(logp, old_logp, adv, mask, *, ref_logp=None, beta=0.0, kl_kind="k3",
              mode="seq-mean-token-mean", max_len=None, eps_low=0.2, eps_high=None,
              dual_clip=None, level="token", policy_loss="clip", cispo_cap=5.0, sapo_tau_pos=1.0,
              sapo_tau_neg=1.05, is_weight=None) -> LossOutput:
    """Eq. (2) as a loss: aggregate(−ℓ_{i,t} + β·KL_{i,t}, mode) plus diagnostics.

    This is KL-in-loss (seed 000 §3 form 1): the per-token KL estimate (``kl_kind``, k3 by
    default, eq. 5) is added to each token's loss *before* aggregation, as in the GRPO paper
    and TRL, so it is weighted exactly like the clipped term. For KL-in-reward (form 2) use
    :func:`kl_shaped_rewards` on the rewards and call this with ``beta=0``.
    ``ref_logp`` (B, T) is required when beta > 0. Arguments otherwise as in
    :func:`policy_loss_per_token` and :func:`aggregate`.

    Beyond the lecture notes (:mod:`grpo_lab.losses.beyond`): ``policy_loss`` picks the
    per-token term — ``"clip"`` (eq. 3), ``"cispo"`` (weight capped at ``cispo_cap``,
    detached), ``"sapo"`` (soft gate with ``sapo_tau_pos`` / ``sapo_tau_neg``), ``"gmpo"``
    (geometric mean, ε as log-space bounds). ``is_weight`` (B, T), e.g. from
    :func:`~grpo_lab.losses.beyond.rollout_is_weights` (TIS/MIS), multiplies each token's
    policy term before the KL is added; it is treated as a constant. For CISPO,
    ``clip_frac_high`` counts capped weights (their tokens still have a gradient) and
    ``clipped`` is all False; for SAPO both are 0/False.
    """
    args = _check_policy_inputs(logp, old_logp, adv, mask, eps_low, eps_high, dual_clip, level,
                                dict(policy_loss=policy_loss, cispo_cap=cispo_cap, sapo_tau_pos=sapo_tau_pos,
                                     sapo_tau_neg=sapo_tau_neg))
    logp_t, m = args[0], args[3]
    beta = _checks.in_range("beta", beta, 0.0)
    mode = resolve_mode(mode)
    kl_kind = resolve_kind(kl_kind, "kl_kind")
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
    pg_tok = c.loss
    if is_weight is not None:                                            # TIS / MIS: π_θold/π_sampler
        w = _check_2d("is_weight", is_weight, like=logp_t).detach()
        _check_finite_where("is_weight", w, m)
        pg_tok = torch.where(m > 0, c.loss * w, torch.zeros_like(c.loss))
    per_token = pg_tok + beta * kl_tok if beta > 0 else pg_tok           # (B, T)
    loss = _aggregate(per_token, m, mode, C)
    with torch.no_grad():
        pg = _aggregate(pg_tok, m, mode, C)
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
            per_token=per_token.detach(), ratio=c.ratio.detach(),
            clipped=c.low | c.high | c.dual if c.zero_grad is None else c.zero_grad)
    return out
