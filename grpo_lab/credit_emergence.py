"""Token credit emerges across samples (seed 000 §2.3): a tabular toy trained over many batches.

GRPO gives every token of a response the same Â_i, so inside one response the decisive
token and its filler neighbours are treated alike (模型不知道是哪个 token 导致了好结果).
Credit for the decisive token can only come from statistics over many groups: it appears
more often in rewarded responses than in unrewarded ones, so its pushes add up across
updates, while a filler token is as likely in good responses as in bad ones and its pushes
cancel in expectation. How fast that happens depends on the group size G and on the
diversity of the samples (the temperature) — the seed's "统计要够多，涌现才可靠".

The toy (an assumption, not a language model): the "tabular LM" of notebook 04
(:mod:`grpo_lab.inner_steps`), a separate softmax over K tokens at each of T positions,
logits θ of shape (T, K), sampled at temperature τ (π = softmax(θ/τ)). The reward is 1 iff
the ``target`` token sits at the decisive position ``key``; no other position matters. Each
step samples ``batch`` responses to the one prompt as ``batch // G`` groups, takes Â from
:func:`advantages.group_advantages` (eq. 1) and one SGD step on :func:`losses.grpo_loss`
(μ = 1, eq. 6). The same budget of responses per step for every G, so a larger G means
fewer, larger groups. Independent seeds are stacked into one batch (their parameters do
not interact; the loss's 1/(S·B) is undone by multiplying the learning rate by S).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from grpo_lab import _checks, advantages, losses
from grpo_lab._torch_threads import single_thread


@dataclass(frozen=True)
class CreditConfig:
    G: int = 4                 # responses per group
    batch: int = 32            # responses per step (batch // G groups of the one prompt)
    T: int = 6                 # tokens per response
    K: int = 6                 # vocabulary size
    key: int = 2               # the decisive position
    target: int = 0            # reward 1 iff token `target` is at position `key`
    temperature: float = 1.0   # sampling temperature τ; log π is taken at the same τ (as TRL does)
    # lr is multiplied by τ² so that the step on the sampling logits θ/τ is the same for every τ:
    # the temperature then changes only how diverse the samples are (an assumption of the toy)
    init_gap: float = 1.0      # the target starts this many logits below the others, at every position
    lr: float = 1.0            # SGD on the logits
    scale: str = "group"       # eq. (1)'s denominator: "group" (÷ the group's std, GRPO) or "none" (Â = r − mean)
    steps: int = 150
    seeds: int = 16
    seed: int = 0


@dataclass
class CreditResult:
    config: CreditConfig
    p_key: np.ndarray          # (steps + 1, S) π(target) at the decisive position, per seed
    p_filler: np.ndarray       # (steps + 1, S) π(target) averaged over the filler positions
    reward: np.ndarray         # (steps, S) mean reward of the sampled responses
    informative: np.ndarray    # (steps,) fraction of groups that are not degenerate (all seeds)

    @property
    def key_gain(self) -> float:
        """Mean over seeds of the rise of π(target) at the decisive position."""
        return float((self.p_key[-1] - self.p_key[0]).mean())

    def steps_to(self, level: float = 0.5) -> int | None:
        """First step at which the seed-mean π(target) at the decisive position reaches ``level`` (None: never)."""
        hit = np.flatnonzero(self.p_key.mean(1) >= level)
        return int(hit[0]) if hit.size else None

    @property
    def filler_spread(self) -> float:
        """Spread across seeds (std) of the change at the filler positions: a random walk, no trend."""
        return float((self.p_filler[-1] - self.p_filler[0]).std())

    @property
    def filler_change(self) -> float:
        """Mean over seeds of the change of π(target) at the filler positions (≈ 0: no credit)."""
        return float((self.p_filler[-1] - self.p_filler[0]).mean())


def run(config: CreditConfig = CreditConfig()) -> CreditResult:
    """Train the toy for ``steps`` batches, all seeds at once; deterministic in ``seed``."""
    with single_thread():
        return _run(config)


def _run(c: CreditConfig) -> CreditResult:
    G = _checks.integer("G", c.G, low=2)
    batch = _checks.integer("batch", c.batch, low=G)
    if batch % G:
        raise ValueError(f"batch must be a multiple of G = {G}, got {batch}")
    T, K = _checks.integer("T", c.T, low=2), _checks.integer("K", c.K, low=2)
    key = _checks.integer("key", c.key, low=0, high=T - 1)
    target = _checks.integer("target", c.target, low=0, high=K - 1)
    tau = _checks.in_range("temperature", c.temperature, 0.0, low_open=True)
    lr = _checks.in_range("lr", c.lr, 0.0, low_open=True)
    steps, S = _checks.integer("steps", c.steps, low=1), _checks.integer("seeds", c.seeds, low=1)
    scale = _checks.choice("scale", c.scale, ("group", "none"))
    gen = torch.Generator().manual_seed(_checks.integer("seed", c.seed, low=0))
    theta = torch.zeros(S, T, K, dtype=torch.float64)                       # (S, T, K) logits
    theta[:, :, target] = -c.init_gap
    theta.requires_grad_(True)
    filler = [t for t in range(T) if t != key]
    pos = torch.arange(T)
    mask = torch.ones(S * batch, T, dtype=torch.float64)                    # (S·B, T) equal lengths
    p_key, p_filler, reward, informative = [], [], [], []

    def record(th):
        p = torch.softmax(th.detach() / tau, -1)[..., target]              # (S, T)
        p_key.append(p[:, key].numpy().copy())
        p_filler.append(p[:, filler].mean(1).numpy().copy())

    record(theta)
    for _ in range(steps):
        with torch.no_grad():
            probs = torch.softmax(theta / tau, -1)                         # (S, T, K)
            flat = probs[:, None].expand(S, batch, T, K).reshape(-1, K)
            tokens = torch.multinomial(flat, 1, generator=gen).view(S, batch, T)   # (S, B, T)
        r = (tokens[..., key] == target).double()                          # (S, B) sequence-level
        groups = r.view(S * batch // G, G).numpy()                         # (S·N, G)
        adv = torch.as_tensor(advantages.group_advantages(groups, scale=scale)).reshape(-1)   # (S·B,) eq. (1)
        logp_all = torch.log_softmax(theta / tau, -1)                       # (S, T, K)
        logp = logp_all[torch.arange(S)[:, None, None], pos[None, None, :], tokens]   # (S, B, T)
        logp = logp.reshape(S * batch, T)
        out = losses.grpo_loss(logp, logp.detach(), adv, mask, mode="seq-mean-token-mean")
        grad, = torch.autograd.grad(out.loss, theta)
        with torch.no_grad():
            theta -= lr * tau ** 2 * S * grad                               # each seed: its own loss's gradient
        reward.append(r.mean(1).numpy())
        informative.append(float(np.mean(groups.min(1) != groups.max(1))))
        record(theta)
    return CreditResult(c, np.array(p_key), np.array(p_filler), np.array(reward), np.array(informative))


def start_push(config: CreditConfig = CreditConfig()) -> float:
    """Expected change of the decisive token's sampling logit θ[key, target]/τ in the first step (exact).

    At the start every position has the same π(target) = p, a response is rewarded with probability p,
    and a group holds m ~ Binomial(G, p) rewarded responses. With one SGD step on eq. (6), the expected
    change is lr · E[Σ_{rewarded i} Â_i] / (G · T) (the τ² of the learning rate cancels the two 1/τ).
    Without ÷ std (``scale="none"``) E[Σ Â_i] = (G − 1)·p(1 − p): the push grows with G only by the
    factor (G − 1)/G; ÷ std adds a second, G-dependent factor (a rare hit in a large group has a
    small group std).
    """
    import math

    c = config
    G = _checks.integer("G", c.G, low=2)
    scale = _checks.choice("scale", c.scale, ("group", "none"))
    z = np.zeros(c.K)
    z[c.target] = -c.init_gap
    p = float(np.exp(z / c.temperature)[c.target] / np.exp(z / c.temperature).sum())
    total = 0.0
    for m in range(1, G):                          # m = 0 or G: a degenerate group, Â = 0
        r = np.array([1.0] * m + [0.0] * (G - m))
        total += math.comb(G, m) * p ** m * (1 - p) ** (G - m) * advantages.group_advantages(r, scale=scale)[:m].sum()
    return c.lr * total / (G * c.T)


def sweep(group_sizes=(2, 4, 16), temperatures=(0.5, 1.0, 2.0), **overrides) -> dict[tuple[int, float], CreditResult]:
    """:func:`run` for every (G, τ), the same seeds and the same number of responses per step."""
    return {(G, tau): run(CreditConfig(G=G, temperature=tau, **overrides))
            for G in group_sizes for tau in temperatures}


def sweep_table(results: dict[tuple[int, float], CreditResult]):
    """One row per (G, τ): rise of π(target) at the decisive position and at the filler positions."""
    import pandas as pd

    rows = [{"G": G, "temperature": tau, "p_key start": r.p_key[0].mean(), "p_key end": r.p_key[-1].mean(),
             "key gain": r.key_gain, "filler change": r.filler_change, "filler spread": r.filler_spread,
             "steps to p_key ≥ 0.5": r.steps_to(0.5), "informative groups": r.informative.mean()}
            for (G, tau), r in results.items()]
    return pd.DataFrame(rows).set_index(["G", "temperature"])


# ---------------------------------------------------------------------------------
# REINFORCE's second dead zone (seed 004 §一): an all-success batch pushes every sampled action up
# ---------------------------------------------------------------------------------
@dataclass
class AllSuccessResult:
    entropy: np.ndarray        # (steps + 1, S) entropy of π in nats, per seed
    p_max: np.ndarray          # (steps + 1, S) probability of the most likely action
    argmax: np.ndarray         # (S,) which action each seed ended up preferring


def all_success(K: int = 4, *, baseline: str = "none", batch: int = 8, steps: int = 200, lr: float = 0.5,
                seeds: int = 32, seed: int = 0) -> AllSuccessResult:
    """REINFORCE on one softmax over K equally good actions where *every* sample succeeds (R = 1).

    ``baseline="none"`` uses Â = R = 1: each sampled action's log-probability is pushed up,
    so the policy sharpens onto whatever it happened to sample — a habit locked in by chance,
    not by merit. ``baseline="group"`` uses Â = R − mean(R) = 0 (a degenerate group): no update.
    SGD on :func:`torch.log_softmax` by autograd; all seeds at once (independent parameters).
    """
    K, batch = _checks.integer("K", K, low=2), _checks.integer("batch", batch, low=1)
    steps, S = _checks.integer("steps", steps, low=1), _checks.integer("seeds", seeds, low=1)
    lr = _checks.in_range("lr", lr, 0.0, low_open=True)
    baseline = _checks.choice("baseline", baseline, ("none", "group"))
    gen = torch.Generator().manual_seed(_checks.integer("seed", seed, low=0))
    theta = torch.zeros(S, K, dtype=torch.float64, requires_grad=True)     # uniform start
    ent, pmax = [], []

    def record():
        p = torch.softmax(theta.detach(), -1)
        ent.append((-(p * p.log()).sum(-1)).numpy())
        pmax.append(p.max(-1).values.numpy())

    record()
    with single_thread():
        for _ in range(steps):
            with torch.no_grad():
                a = torch.multinomial(torch.softmax(theta, -1), batch, replacement=True, generator=gen)  # (S, batch)
            r = torch.ones(S, batch, dtype=torch.float64)                       # every sample succeeds
            adv = r if baseline == "none" else r - r.mean(1, keepdim=True)      # Â = R or R − group mean
            logp = torch.log_softmax(theta, -1).gather(1, a)                    # (S, batch)
            loss = -(adv * logp).mean(1).sum()                                  # REINFORCE, per seed
            grad, = torch.autograd.grad(loss, theta)
            with torch.no_grad():
                theta -= lr * grad
            record()
    return AllSuccessResult(np.array(ent), np.array(pmax), torch.softmax(theta.detach(), -1).argmax(-1).numpy())
