"""μ inner optimisation steps on one batch: when the ratio leaves 1 and clipping starts.

The GRPO paper's μ (TRL ``num_iterations``, verl ``ppo_epochs``) is the number of passes over
one sampled batch; in this toy a pass is one optimiser step (one mini-batch), so μ counts the
inner steps. old_logp is recorded once, when the batch is sampled; the ratio ρ = π_θ/π_θold of
eq. (4) can only move away from 1 after θ has changed, i.e. from the second inner step on.
With one inner step the ratio is exactly 1, no token is ever clipped, and
the loss of eq. (6) at that step is −mean_i Â_i = 0 for group-normalised advantages — yet
its gradient Σ −Â_i/(G|y_i|)·∇log π is not zero (lecture notes 000 §2; the ratio's gradient
∇ρ = ρ∇log π survives even where ρ = 1).

The toy policy is a "tabular language model": a separate softmax over K tokens at each of T
positions, logits θ of shape (T, K). A response is T tokens sampled position by position;
its reward is 1 when the target token 0 appears at least ``need`` times, else 0. One group
of G responses is sampled, advantages come from :func:`advantages.group_advantages`, and
Adam takes μ steps on :func:`losses.grpo_loss` with old_logp fixed.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from grpo_lab import _checks, advantages, losses, methods
from grpo_lab._torch_threads import single_thread


@dataclass(frozen=True)
class InnerConfig:
    G: int = 8                 # responses in the group
    T: int = 8                 # tokens per response
    K: int = 6                 # vocabulary size
    mu: int = 6                # passes over the batch (μ); one optimiser step each here
    lr: float = 0.1            # Adam learning rate on the logits
    eps_low: float = 0.2
    eps_high: float | None = None
    need: int = 2              # reward 1 iff token 0 appears >= need times
    mode: str = "seq-mean-token-mean"
    seed: int = 0


@dataclass
class InnerResult:
    """One row per inner step k = 1..μ, measured *before* that step's update."""

    rewards: np.ndarray         # (G,)
    adv: np.ndarray             # (G,)
    loss: np.ndarray            # (μ,) the loss value the optimiser sees at step k
    grad_norm: np.ndarray       # (μ,) ‖∇_θ loss‖ at step k
    clip_frac: np.ndarray       # (μ,) fraction of tokens clipped (low + high)
    ratio_min: np.ndarray       # (μ,)
    ratio_max: np.ndarray       # (μ,)
    ratio: np.ndarray           # (μ, G, T) every token's ratio at step k
    weights: np.ndarray         # (μ, G, T) ∂loss/∂log π(o_{i,t}) at step k (autograd)
    clipped: np.ndarray         # (μ, G, T) bool: token in a zero-gradient clip region at step k

    def head(self, k: int) -> "InnerResult":
        """The first k inner steps (identical to a run with μ = k: later steps never affect earlier ones)."""
        k = _checks.integer("k", k, low=1, high=self.loss.size)
        return replace(self, **{f.name: getattr(self, f.name)[:k] for f in fields(self)
                                if f.name not in ("rewards", "adv")})

    @property
    def first_clip_step(self) -> int | None:
        """1-based inner step at which some token is first clipped (None if never)."""
        hit = np.flatnonzero(self.clip_frac > 0)
        return int(hit[0]) + 1 if hit.size else None


def sample_group(config: InnerConfig = InnerConfig()):
    """Initial logits θ (T, K), sampled tokens (G, T) and rewards (G,), deterministic in ``seed``.

    Draws again (next sub-seed) until the group is not degenerate (all-equal rewards give
    Â = 0 and nothing to show).
    """
    c = config
    G, T, K = (_checks.integer(n, v, low=2) for n, v in (("G", c.G), ("T", c.T), ("K", c.K)))
    need = _checks.integer("need", c.need, low=1, high=T)
    rng = np.random.default_rng(_checks.integer("seed", c.seed, low=0))
    theta = rng.normal(scale=0.3, size=(T, K))
    p = np.exp(theta) / np.exp(theta).sum(1, keepdims=True)            # (T, K)
    for _ in range(100):
        u = rng.random((G, T, 1))
        tokens = np.minimum((u > np.cumsum(p, 1)[None]).sum(-1), K - 1)  # (G, T)
        rewards = ((tokens == 0).sum(1) >= need).astype(float)           # (G,)
        if rewards.min() != rewards.max():
            return theta, tokens, rewards
    raise ValueError("could not draw a non-degenerate group; change need or T")  # pragma: no cover


def run(config: InnerConfig = InnerConfig()) -> InnerResult:
    """Sample one group, then take μ Adam steps on grpo_loss with old_logp fixed."""
    with single_thread():
        return _run(config)


@functools.lru_cache(maxsize=64)
def run_cached(config: InnerConfig) -> InnerResult:
    """:func:`run`, memoised on the (frozen, hashable) config. Treat the result as read-only."""
    return run(config)


def _run(config: InnerConfig) -> InnerResult:
    c = config
    mu = _checks.integer("mu", c.mu, low=1)
    lr = _checks.in_range("lr", c.lr, 0.0, low_open=True)
    theta0, tokens, rewards = sample_group(c)
    adv = torch.as_tensor(advantages.group_advantages(rewards))           # (G,) eq. (1)
    idx = torch.as_tensor(tokens)                                          # (G, T)
    theta = torch.tensor(theta0, requires_grad=True)                       # (T, K)
    mask = torch.ones(idx.shape, dtype=torch.float64)
    pos = torch.arange(c.T)

    def logp_of(th):                                                       # (G, T) log π(o_{i,t})
        return torch.log_softmax(th, -1)[pos[None, :], idx]

    old_logp = logp_of(theta).detach()                                     # recorded at sampling time
    opt = torch.optim.Adam([theta], lr=lr)
    rows = []
    eps_low, eps_high = c.eps_low, methods.resolve_eps_high(c.eps_low, c.eps_high)
    for _ in range(mu):
        logp = logp_of(theta)
        logp.retain_grad()                                                 # to read ∂loss/∂log π
        out = losses.grpo_loss(logp, old_logp, adv, mask, eps_low=eps_low,
                               eps_high=eps_high, mode=c.mode, max_len=c.T)
        opt.zero_grad()
        out.loss.backward()
        ratio, clipped = out.ratio, out.clipped                            # (G, T) eq. (4), zero-gradient tokens
        rows.append((float(out.loss.detach()), float(theta.grad.norm()),
                     float(out.clip_frac_low + out.clip_frac_high),
                     float(out.ratio_min), float(out.ratio_max), ratio.numpy(),
                     logp.grad.numpy().copy(), clipped.numpy()))
        opt.step()
    cols = list(zip(*rows))
    return InnerResult(rewards, adv.numpy(), *(np.array(col) for col in cols[:5]),
                       *(np.stack(col) for col in cols[5:]))
