"""Why PPO (and so GRPO) has a ratio, an old policy and a clip: one stale batch, many steps.

Lecture notes 000 §2.1 take the clip "from PPO" without repeating its motivation; notebook 04
shows it on the smallest toy that has it. A one-token "response" from a softmax policy over
K tokens; token k earns reward 1 with a fixed, hidden probability ``q[k]``. One batch of G
tokens is sampled from π_θold and scored, advantages come from eq. (1), and then ``steps``
plain gradient steps are taken on :func:`grpo_lab.losses.grpo_loss` with that batch frozen —
the *inner steps*, whose ratio ρ of eq. (4) leaves 1 after the first — once with the clip and
once with it effectively off (ε_low = 1, ε_high = 1e9).

What is measured at every inner step, exactly (K terms, no sampling):

* ``J``: the true expected reward Σ_k π_θ(k) q[k];
* ``J_hat``: the batch's importance-weighted estimate of it, mean_i ρ_i r_i with
  ρ_i = π_θ(o_i)/π_θold(o_i) — unbiased for J(θ) when θ is chosen without looking at the batch;
  here θ is fitted to this very batch, so once it has moved far the estimate is biased upward
  and dominated by a few samples: it is only trustworthy while π_θ stays near π_θold;
* ``kl``: KL(π_θ‖π_θold) and the range of the ratios over the batch.

Plain SGD (not Adam), so the step size is the same in both runs; the numbers are this toy's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from grpo_lab import _checks, advantages, losses
from grpo_lab._torch_threads import single_thread

Q = (0.1, 0.3, 0.5, 0.7, 0.9)           # P(reward 1 | token k), hidden from the learner
Z_OLD = (1.0, 0.5, 0.0, -0.5, -1.0)     # π_θold's logits: the best token is the rarest
UNCLIPPED = (1.0, 1e9)                  # (ε_low, ε_high) that never clip: ρ ≥ 0 anyway


@dataclass
class StaleBatch:
    tokens: np.ndarray      # (G,) the sampled tokens
    rewards: np.ndarray     # (G,)
    adv: np.ndarray         # (G,) eq. (1), population std
    pi: np.ndarray          # (steps + 1, K) the policy before each inner step (row 0 = π_θold)
    J: np.ndarray           # (steps + 1,) true expected reward
    J_hat: np.ndarray       # (steps + 1,) the batch's importance-weighted estimate
    kl: np.ndarray          # (steps + 1,) KL(π_θ‖π_θold)
    rho_min: np.ndarray     # (steps + 1,)
    rho_max: np.ndarray     # (steps + 1,)


def softmax(z) -> np.ndarray:
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()


def sample_batch(G: int = 16, seed: int = 0, q=Q, z_old=Z_OLD):
    """Tokens (G,) from softmax(z_old) and their 0/1 rewards, deterministic in ``seed``."""
    G = _checks.integer("G", G, low=2)
    rng = np.random.default_rng(_checks.integer("seed", seed, low=0))
    tokens = rng.choice(len(q), size=G, p=softmax(z_old))
    rewards = (rng.random(G) < np.asarray(q)[tokens]).astype(float)
    return tokens, rewards


def run(eps=0.2, *, steps: int = 30, lr: float = 0.5, G: int = 16, seed: int = 0, q=Q, z_old=Z_OLD) -> StaleBatch:
    """``steps`` SGD steps on one frozen batch; ``eps`` = ε or a pair (ε_low, ε_high) (:data:`UNCLIPPED`: no clip)."""
    steps = _checks.integer("steps", steps, low=1)
    lr = _checks.in_range("lr", lr, 0.0, low_open=True)
    eps_low, eps_high = (eps, eps) if np.isscalar(eps) else eps
    q, z_old = np.asarray(q, dtype=float), np.asarray(z_old, dtype=float)
    if q.shape != z_old.shape or q.ndim != 1:
        raise ValueError(f"q and z_old must be 1-d and of equal length, got shapes {q.shape} and {z_old.shape}")
    tokens, rewards = sample_batch(G, seed, q, z_old)
    p_old = softmax(z_old)
    with single_thread():
        adv = torch.as_tensor(advantages.group_advantages(rewards), dtype=torch.float64)
        idx = torch.as_tensor(tokens)
        z = torch.tensor(z_old, dtype=torch.float64, requires_grad=True)
        old = torch.log(torch.as_tensor(p_old))[idx][:, None]
        mask = torch.ones(len(tokens), 1, dtype=torch.float64)
        pis = []
        for k in range(steps + 1):
            logp = torch.log_softmax(z, -1)
            pis.append(logp.exp().detach().numpy().copy())
            if k == steps:
                break
            out = losses.grpo_loss(logp[idx][:, None], old, adv, mask, eps_low=eps_low, eps_high=eps_high)
            z.grad = None
            out.loss.backward()
            with torch.no_grad():
                z -= lr * z.grad
    pi = np.array(pis)                                        # (steps + 1, K)
    rho = pi[:, tokens] / p_old[tokens]                       # (steps + 1, G)
    return StaleBatch(tokens, rewards, adv.numpy(), pi, pi @ q, (rho * rewards).mean(1),
                      (pi * np.log(pi / p_old)).sum(1), rho.min(1), rho.max(1))
