"""PPO vs GRPO credit assignment (notebook 07, part b; seed 000 §0.2, §2.3).

:func:`gae` computes PPO's
generalized advantage estimate per token from per-token rewards and a value function,
A_t = Σ_l (γλ)^l δ_{t+l} with δ_t = r_t + γ V_{t+1} − V_t. Its limits: λ = 1 gives the
discounted return-to-go minus V_t (Monte-Carlo, 后续回报 reward-to-go), λ = 0 the one-step
TD error δ_t. :func:`toy_sequence` is one correct answer whose toy critic jumps at the
decisive token; :func:`credit_assignment` puts GAE's per-token advantages next to GRPO's
Â_i, the one number copied onto every token.

Assumption of the toy: the critic's values are written by hand (a learned value model is
what PPO adds and GRPO removes); rewards are the verifier's 0/1 on the last token.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_lab import _checks
from grpo_lab.advantages import group_advantages

def _rewards_values(rewards, values, last_value):
    r = _checks.finite_array("rewards", rewards, ndim=(1, 2))
    V = _checks.finite_array("values", values, ndim=(1, 2))
    if V.shape != r.shape:
        raise ValueError(f"values must have the shape of rewards {r.shape} (V(s_t) before each token), "
                         f"got {V.shape}")
    last = _checks.finite_array("last_value", last_value, ndim=None)
    if last.ndim > 0 and last.shape != r.shape[:-1]:
        raise ValueError(f"last_value must be a number or have shape {r.shape[:-1]}, got {last.shape}")
    return r, V, np.broadcast_to(last, r.shape[:-1]).astype(float)


def td_errors(rewards, values, gamma: float = 1.0, *, last_value=0.0) -> np.ndarray:
    """δ_t = r_t + γ·V_{t+1} − V_t, with V_T = ``last_value`` (0: the answer ended). Shape like rewards (…, T)."""
    gamma = _checks.in_range("gamma", gamma, 0.0, 1.0)
    r, V, last = _rewards_values(rewards, values, last_value)
    V_next = np.concatenate([V[..., 1:], last[..., None]], axis=-1)            # (…, T) V_{t+1}
    return r + gamma * V_next - V


def discounted_returns(rewards, gamma: float = 1.0, *, last_value=0.0) -> np.ndarray:
    """Discounted reward-to-go (后续回报) G_t = Σ_k γ^k r_{t+k} + γ^{T−t}·last_value. Shape like rewards."""
    gamma = _checks.in_range("gamma", gamma, 0.0, 1.0)
    r, _, last = _rewards_values(rewards, np.zeros_like(np.asarray(rewards, dtype=float)), last_value)
    out = np.empty_like(r)
    running = last.copy()
    for t in range(r.shape[-1] - 1, -1, -1):
        running = r[..., t] + gamma * running
        out[..., t] = running
    return out


def gae(rewards, values, gamma: float = 1.0, lam: float = 0.95, *, last_value=0.0) -> np.ndarray:
    """PPO's generalized advantage estimate per token, A_t = Σ_{l≥0} (γλ)^l δ_{t+l}. Shape like rewards.

    ``rewards`` (T,) or (B, T): per-token rewards r_t (in LLM RL usually 0 except the
    verifier's reward on the last token, minus a per-token KL if it is folded into the
    reward, seed 000 §3 form 2); ``values`` the same shape, V_t = V(state before token t);
    ``last_value`` V_T after the last token (0 for a finished answer). Computed by the
    backward recursion A_t = δ_t + γλ·A_{t+1}. Limits: λ = 1 → discounted return-to-go
    minus V_t (Monte-Carlo); λ = 0 → δ_t (TD error). The advantage depends on t: credit is
    assigned *inside* one sequence, which is exactly what GRPO gives up (seed 000 §2.3).
    """
    lam = _checks.in_range("lam", lam, 0.0, 1.0)
    delta = td_errors(rewards, values, gamma, last_value=last_value)           # (…, T)
    gamma = float(gamma)
    adv = np.empty_like(delta)
    running = np.zeros(delta.shape[:-1])
    for t in range(delta.shape[-1] - 1, -1, -1):
        running = delta[..., t] + gamma * lam * running
        adv[..., t] = running
    return adv


@dataclass(frozen=True)
class ToySequence:
    """One correct answer of T tokens with a toy critic (seed 000 §2.3).

    ``values[t]`` = V(prompt, o_<t): the critic's probability of ending correct before token
    t is written; it starts at the prompt's pass rate and jumps at the decisive token.
    ``rewards`` is 0 except the verifier's reward on the last token. ``group`` are the
    rewards of the G answers sampled for the same prompt (this answer first).
    """

    tokens: tuple[str, ...]
    rewards: np.ndarray     # (T,)
    values: np.ndarray      # (T,)
    key: int                # index of the decisive token
    group: np.ndarray       # (G,) group rewards, this answer is group[0]


def toy_sequence() -> ToySequence:
    """"We need 12 ÷ 4. That is 3": a hard prompt (pass rate 1/4) answered correctly.

    The critic's V starts at 0.25 = the group's mean reward, jumps to 0.8 once " ÷" (the
    right operation) is written, and reaches 0.95 before <eos>; the answer's group is the
    seed's hard prompt 1,0,0,0, so GRPO gives it Â = +1.73 (population std) on every token.
    """
    tokens = ("We", " need", " 12", " ÷", " 4", ".", " That", " is", " 3", "<eos>")
    values = np.array([0.25, 0.25, 0.25, 0.30, 0.80, 0.80, 0.80, 0.80, 0.85, 0.95])
    rewards = np.zeros(len(tokens))
    rewards[-1] = 1.0
    for a in (values, rewards):
        a.setflags(write=False)
    group = np.array([1.0, 0.0, 0.0, 0.0])
    group.setflags(write=False)
    return ToySequence(tokens, rewards, values, tokens.index(" ÷"), group)


@dataclass(frozen=True)
class CreditAssignment:
    """Per-token advantages of one answer under PPO (GAE) and GRPO. Every array (T,)."""

    gamma: float
    lam: float
    gae: np.ndarray          # GAE(γ, λ)
    td: np.ndarray           # λ = 0: δ_t
    mc: np.ndarray           # λ = 1: G_t − V_t
    grpo: np.ndarray         # Â_i (eq. 1, population std) copied onto every token
    mean_baseline: np.ndarray  # r_i − mean(group) copied onto every token (Dr. GRPO's Â)


def credit_assignment(seq: ToySequence | None = None, gamma: float = 1.0, lam: float = 0.95) -> CreditAssignment:
    """GAE's per-token advantages on ``seq`` next to GRPO's broadcast sequence-level Â.

    The GRPO side calls :func:`grpo_lab.advantages.group_advantages` on ``seq.group`` and
    broadcasts this answer's Â over its T tokens (as :func:`grpo_lab.losses.broadcast_adv`
    does in the loss).
    """
    seq = toy_sequence() if seq is None else seq
    T = len(seq.tokens)
    a = gae(seq.rewards, seq.values, gamma, lam)
    td = gae(seq.rewards, seq.values, gamma, 0.0)
    mc = gae(seq.rewards, seq.values, gamma, 1.0)
    adv = group_advantages(seq.group)[0]
    base = group_advantages(seq.group, scale="none")[0]
    return CreditAssignment(float(gamma), float(lam), a, td, mc, np.full(T, adv), np.full(T, base))


__all__ = ["td_errors", "discounted_returns", "gae", "ToySequence", "toy_sequence", "CreditAssignment",
           "credit_assignment"]
