"""Model answers of the ``implement`` exercises: what a student is asked to write.

These are the *readable* solutions an instructor hands out (``ex.solution(id)`` returns a
function's source, ``make solutions`` puts them into the notebooks). They are written the
way a student would write them, from numpy/torch primitives, so they are a worked answer,
not a second source of truth: the checker compares every answer — these included — with
the package's own functions (:mod:`grpo_lab.advantages`, :mod:`grpo_lab.losses`, …), and
the tests check that each of these passes its own checker.

Each docstring states the task (inputs, output, shapes) and becomes the stub's docstring
in the student notebook, so it describes *what*, not *how*.
"""
from __future__ import annotations

import math

import numpy as np
import torch


# --- notebook 01 -------------------------------------------------------------------
def reinforce_estimate(theta, action, reward, baseline):
    """One-sample REINFORCE estimate of dJ/dθ on the two-armed bandit, with a baseline b.

    π(A) = σ(θ), π(B) = 1 − σ(θ). Arguments: theta (float), action ("A" or "B"), reward (float),
    baseline (float). Returns a float: (R − b) times the score of the sampled action.
    """
    p = 1.0 / (1.0 + math.exp(-theta))            # π(A) = σ(θ)
    score = 1.0 - p if action == "A" else -p       # ∂/∂θ log π(action)
    return (reward - baseline) * score


# --- notebook 02 -------------------------------------------------------------------
def reward_to_go(rewards):
    """Reward-to-go (后续回报) of one episode: rewards (T,) -> (T,).

    rewards[t] is the reward received for the action at step t; entry t of the result is
    the return from step t on (no discount).
    """
    rewards = np.asarray(rewards, dtype=float)          # (T,)
    return np.cumsum(rewards[::-1])[::-1]               # G_t = r_t + r_{t+1} + … + r_{T-1}


# --- notebook 03 -------------------------------------------------------------------
def group_advantages(rewards):
    """Group advantages of eq. (1): rewards (N, G) -> advantages (N, G).

    Each row is one group (the G responses to one prompt). Population std, ε = 1e-4 added
    to the std in the denominator; a group whose rewards are all equal gets exactly 0.
    """
    rewards = np.asarray(rewards, dtype=float)                  # (N, G)
    mean = rewards.mean(axis=1, keepdims=True)                  # (N, 1)
    std = rewards.std(axis=1, keepdims=True)                    # (N, 1) population std: divide by G
    adv = (rewards - mean) / (std + 1e-4)                       # (N, G)
    adv[np.all(rewards == rewards[:, :1], axis=1)] = 0.0        # all equal: exactly 0, no gradient
    return adv


# --- notebook 04 -------------------------------------------------------------------
def clipped_loss(logp, old_logp, adv, mask, eps):
    """The per-token clipped surrogate *loss* (to minimise) of eq. (3) with clip-higher: -> Tensor (B, T).

    logp, old_logp, mask: (B, T) tensors; adv: (B,), one advantage per response, used on
    every token; eps = (eps_low, eps_high): the ratio is clipped to [1 − eps_low, 1 + eps_high]
    (DAPO's asymmetric range). Values at padding positions (mask == 0) are ignored.
    """
    eps_low, eps_high = eps
    ratio = torch.exp(logp - old_logp)                          # (B, T) ρ, eq. (4)
    A = adv[:, None]                                            # (B, 1): the same Â_i on every token
    unclipped = ratio * A                                       # (B, T)
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high) * A        # (B, T)
    return -torch.minimum(unclipped, clipped)                   # loss = −ℓ, ℓ of eq. (3)


def k3_grad(logp, ref_logp):
    """The gradient ∂k3/∂logp of the k3 estimate of eq. (5), per token, u = π_ref/π_θ: -> Tensor (B, T).

    logp = log π_θ and ref_logp = log π_ref of the sampled tokens, both (B, T). Entry (i, t)
    is the derivative of k3_{i,t} with respect to logp[i, t] (ref_logp held fixed), written
    out by hand — no autograd.
    """
    u = torch.exp(ref_logp - logp)                              # (B, T) u = π_ref/π_θ; ∂u/∂logp = −u
    return 1 - u                                                # ∂(u − log u − 1)/∂logp = −u + 1


# --- notebook 05 -------------------------------------------------------------------
def seq_mean(values, mask):
    """Eq. (6), the sequence mean: values (B, T), mask (B, T) -> scalar Tensor.

    mask is 1 on response tokens and 0 on padding (whatever values holds there). Every row
    has at least one token.
    """
    mask = mask.to(values.dtype)
    per_response = (values * mask).sum(-1) / mask.sum(-1)       # (B,) mean over each response's tokens
    return per_response.mean()                                  # then over the B responses


def token_mean(values, mask):
    """Eq. (7), the token (batch) mean: values (B, T), mask (B, T) -> scalar Tensor.

    mask is 1 on response tokens and 0 on padding (whatever values holds there).
    """
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum()                   # every token of the batch weighs the same


# --- notebook 06 -------------------------------------------------------------------
def step_loss(logp, old_logp, rewards, mask, group_size):
    """Steps 3–6 of one GRPO step on a flat batch: -> scalar Tensor, the loss to minimise.

    rewards (N·G,) laid out group after group (responses k·G … k·G + G − 1 answer prompt k);
    logp, old_logp, mask (N·G, T). Eq. (1) within each group (population std, ε = 1e-4,
    all-equal -> 0), the clipped term of eq. (3) with ε = 0.2, then eq. (6): the mean over
    each response's tokens, then over the responses. No KL term (β = 0).
    """
    r = torch.as_tensor(rewards, dtype=logp.dtype).reshape(-1, group_size)    # (N, G): row k = prompt k
    std = r.std(dim=1, unbiased=False, keepdim=True)                         # population std
    adv = (r - r.mean(dim=1, keepdim=True)) / (std + 1e-4)                   # eq. (1)
    adv = torch.where(std == 0, torch.zeros_like(adv), adv).reshape(-1, 1)   # (N·G, 1), all-equal -> 0
    ratio = torch.exp(logp - old_logp)                                       # (N·G, T)
    per_token = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)     # −ℓ of eq. (3)
    mask = mask.to(logp.dtype)
    return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()                # eq. (6)


# --- notebook 07 -------------------------------------------------------------------
def rloo_advantages(rewards):
    """RLOO advantages: each reward minus the mean of the *other* G − 1 rewards of its group.

    rewards (N, G) -> (N, G); G ≥ 2.
    """
    rewards = np.asarray(rewards, dtype=float)                  # (N, G)
    G = rewards.shape[1]
    others = (rewards.sum(axis=1, keepdims=True) - rewards) / (G - 1)   # (N, G) mean of the others
    return rewards - others


def dr_grpo_mean(values, mask, max_len):
    """Dr. GRPO's aggregation: values (B, T), mask (B, T), max_len C (int) -> scalar Tensor.

    Replaces eq. (6)'s 1/|y_i| by the constant 1/C (the generation budget, C ≥ T), then
    averages over the B responses. mask is 1 on response tokens, 0 on padding.
    """
    mask = mask.to(values.dtype)
    B = values.shape[0]
    return (values * mask).sum() / (B * max_len)                # Σ_i Σ_t v_{i,t} / (B·C)
