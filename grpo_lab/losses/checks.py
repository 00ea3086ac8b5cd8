"""Input validation and the option names of :mod:`grpo_lab.losses` (importable from there).

Every helper raises a ``ValueError`` or ``TypeError`` whose message names the argument.
"""
from __future__ import annotations

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


def resolve_kind(kind: str, name: str = "kind") -> str:
    """A KL estimator name, verl aliases (kl/mse/low_var_kl) resolved; errors name the argument ``name``."""
    if isinstance(kind, str) and kind in KL_ALIASES:
        return KL_ALIASES[kind]
    return _checks.choice(name, kind, KL_KINDS + tuple(KL_ALIASES))
