"""KL estimators on a categorical toy where the exact KL is known (seed 000 §3, eq. (5)).

One "position" of a language model is a categorical distribution over K tokens:
π_θ = softmax(z) and π_ref = softmax(z_ref). The sampled token o ~ π_θ gives the three
per-token estimates of :func:`grpo_lab.losses.kl_penalty` (k1, k2, k3 with
u = π_ref(o)/π_θ(o)). Because K is small, every expectation is an exact sum over the K
tokens, so we can state without Monte-Carlo noise:

* E[k1] = E[k3] = KL(π_θ‖π_ref) (unbiased); E[k2] ≠ KL (biased; ≈ KL when π_θ ≈ π_ref).
* k3 ≥ 0 for every token, and k3 = 0 when u = 1; k1 is negative on tokens π_θ prefers less
  than π_ref, so its variance is larger.
* Differentiated as a loss with the samples held fixed (what KL-in-loss does),
  E[∇k1] = 0, E[∇k2] = ∇KL(π_θ‖π_ref), E[∇k3] = ∇KL(π_ref‖π_θ): k3's gradient follows
  the KL with the arguments swapped relative to eq. (2).

Naming: the two KLs are named here by their arguments, never "forward"/"reverse" alone,
because the literature disagrees (RLHF papers usually call KL(π_θ‖π_ref) — the one in
eq. (2) — the *reverse* KL). The ``direction`` argument of :func:`exact_kl` keeps its
historical values: ``"forward"`` = KL(π_θ‖π_ref), ``"reverse"`` = KL(π_ref‖π_θ).

The second half compares the two places the seed puts the KL (§3): form 1 adds β·k3 to every
token's loss (:func:`grpo_lab.losses.grpo_loss`), form 2 folds r'_t = −β·log(π_θ/π_ref) into
the sequence reward before group normalisation (:func:`grpo_lab.losses.kl_shaped_rewards`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from grpo_lab import _checks, advantages, losses

KINDS = ("k1", "k2", "k3")


# ---------------------------------------------------------------------------------
# The categorical pair
# ---------------------------------------------------------------------------------
def toy_logits(K: int = 8, shift: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(z, z_ref), shape (K,) each: z_ref ~ N(0, 1) and z = z_ref + shift·d for a fixed random unit d·√K.

    ``shift = 0`` gives π_θ = π_ref (every KL and every estimator exactly 0).
    """
    K = _checks.integer("K", K, low=2)
    shift = _checks.finite_float("shift", shift)
    rng = np.random.default_rng(_checks.integer("seed", seed, low=0))
    z_ref = rng.normal(size=K)
    d = rng.normal(size=K)
    d = d / np.linalg.norm(d) * np.sqrt(K)                   # unit scale per logit
    return z_ref + shift * d, z_ref


def _logits(name, z) -> torch.Tensor:
    return torch.as_tensor(_checks.finite_array(name, z, ndim=1, min_size=2), dtype=torch.float64)


def _pair(z, z_ref):
    z, z_ref = _logits("z", z), _logits("z_ref", z_ref)
    if z.shape != z_ref.shape:
        raise ValueError(f"z and z_ref must have the same length, got {tuple(z.shape)} and {tuple(z_ref.shape)}")
    return z, z_ref


def exact_kl(z, z_ref, direction: str = "forward") -> float:
    """KL(π_θ‖π_ref) (``"forward"``: eq. (2)'s KL, what eq. (5) estimates) or KL(π_ref‖π_θ) (``"reverse"``).

    The values name the argument order of this module only; RLHF papers usually call
    KL(π_θ‖π_ref) the *reverse* KL, so say "KL(π_θ‖π_ref)" rather than a direction.
    """
    z, z_ref = _pair(z, z_ref)
    direction = _checks.choice("direction", direction, ("forward", "reverse"))
    lp, lq = torch.log_softmax(z, -1), torch.log_softmax(z_ref, -1)
    if direction == "reverse":
        lp, lq = lq, lp
    return float((lp.exp() * (lp - lq)).sum())


def estimator_values(z, z_ref) -> dict[str, np.ndarray]:
    """k(o) for every token o and every kind, via :func:`losses.kl_penalty`. Each (K,)."""
    z, z_ref = _pair(z, z_ref)
    lp, lq = torch.log_softmax(z, -1)[None], torch.log_softmax(z_ref, -1)[None]   # (1, K)
    return {k: losses.kl_penalty(lp, lq, k)[0].numpy() for k in KINDS}


@dataclass(frozen=True)
class Moments:
    """Exact mean, variance and bias of a one-sample estimator under o ~ π_θ."""

    mean: float
    var: float
    bias: float     # mean − KL(π_θ‖π_ref)

    def rmse(self, n):
        """Root-mean-square error of the average of n independent samples: √(bias² + var/n).

        A float for a number ``n``, an array of the same shape for an array of sample counts.
        """
        out = np.sqrt(self.bias**2 + self.var / np.asarray(n, dtype=float))
        return float(out) if out.ndim == 0 else out


def estimator_moments(z, z_ref) -> dict[str, Moments]:
    """Exact moments of k1, k2, k3 (sums over the K tokens weighted by π_θ)."""
    p = torch.softmax(_pair(z, z_ref)[0], -1).numpy()
    kl = exact_kl(z, z_ref)
    out = {}
    for kind, v in estimator_values(z, z_ref).items():
        mean = float(p @ v)
        out[kind] = Moments(mean, float(p @ (v - mean) ** 2), mean - kl)
    return out


def mc_means(z, z_ref, n: int, reps: int = 400, seed: int = 0) -> dict[str, np.ndarray]:
    """``reps`` independent Monte-Carlo estimates, each the average of n samples o ~ π_θ. Each (reps,).

    All three estimators see the same samples (common random numbers).
    """
    n = _checks.integer("n", n, low=1)
    reps = _checks.integer("reps", reps, low=1)
    p = torch.softmax(_pair(z, z_ref)[0], -1).numpy()
    rng = np.random.default_rng(_checks.integer("seed", seed, low=0))
    cdf = np.cumsum(p)
    idx = np.minimum(np.searchsorted(cdf, rng.random((reps, n))), p.size - 1)  # (reps, n) tokens
    return {kind: v[idx].mean(1) for kind, v in estimator_values(z, z_ref).items()}


def expected_grads(z, z_ref) -> dict[str, np.ndarray]:
    """Exact expected gradients w.r.t. the logits z, each (K,).

    For each kind: E_{o~π_θ}[∇_z k(o)] with the samples held fixed (the gradient a KL-in-loss
    term actually contributes), i.e. Σ_o sg[π_θ(o)]·∇_z k(o). Also the true gradients
    ``"∇KL(π‖ref)"`` and ``"∇KL(ref‖π)"`` for comparison. All by autograd.
    """
    z0, z_ref = _pair(z, z_ref)
    lq = torch.log_softmax(z_ref, -1)
    out = {}
    for kind in KINDS:
        z = z0.clone().requires_grad_(True)
        lp = torch.log_softmax(z, -1)
        k = losses.kl_penalty(lp[None], lq[None], kind)[0]                  # (K,)
        (out[kind],) = torch.autograd.grad((lp.exp().detach() * k).sum(), z)
    for name, fwd in (("∇KL(π‖ref)", True), ("∇KL(ref‖π)", False)):
        z = z0.clone().requires_grad_(True)
        lp = torch.log_softmax(z, -1)
        kl = (lp.exp() * (lp - lq)).sum() if fwd else (lq.exp() * (lq - lp)).sum()
        (out[name],) = torch.autograd.grad(kl, z)
    return {k: v.numpy() for k, v in out.items()}


# ---------------------------------------------------------------------------------
# KL-in-loss (form 1) vs KL-in-reward (form 2)
# ---------------------------------------------------------------------------------
@dataclass
class Placement:
    """Token gradient weights ∂loss/∂log π (G, T) under the two KL placements of seed 000 §3."""

    adv_loss: np.ndarray          # (G,) Â from the task rewards alone (form 1)
    adv_reward: np.ndarray        # (G,) Â from the KL-shaped rewards (form 2)
    shaped_rewards: np.ndarray    # (G,) r_i − β Σ_t log(π/π_ref)
    w_loss: np.ndarray            # (G, T) form 1: aggregate(−ℓ + β·k3)
    w_reward: np.ndarray          # (G, T) form 2: aggregate(−ℓ) with Â from shaped rewards
    w_no_kl: np.ndarray           # (G, T) β = 0, for reference
    mask: np.ndarray              # (G, T)


def toy_log_ratio(G: int = 6, T: int = 12, drift: float = 1.0, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(log π_θ/π_ref (G, T), mask (G, T)): small random log-ratios, plus one token of response 0
    that has drifted by ``drift`` nats, and random lengths between T/2 and T."""
    G = _checks.integer("G", G, low=2)
    T = _checks.integer("T", T, low=2)
    rng = np.random.default_rng(_checks.integer("seed", seed, low=0))
    log_ratio = rng.normal(scale=0.05, size=(G, T))
    log_ratio[0, T // 3] += _checks.finite_float("drift", drift)
    lengths = rng.integers(T // 2, T + 1, size=G)
    lengths[0] = T
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    return log_ratio * mask, mask


def kl_placement(rewards, log_ratio, mask, beta: float, *, mode: str = "seq-mean-token-mean",
                 max_len: int | None = None) -> Placement:
    """Compare the KL's two forms on one group at the first inner step (old_logp = logp).

    ``log_ratio`` (G, T) is log π_θ/π_ref per token. Form 1 (KL-in-loss): Â from the task
    rewards, loss aggregate(−ℓ + β·k3). Form 2 (KL-in-reward): r_i' = r_i − β Σ_t log_ratio,
    Â from r' by group normalisation (eq. 1, :func:`advantages.group_advantages`), loss
    aggregate(−ℓ). Returns every token's gradient weight under both.
    """
    r = _checks.finite_array("rewards", rewards, ndim=1)
    lr = torch.as_tensor(_checks.finite_array("log_ratio", log_ratio, ndim=2), dtype=torch.float64)
    m = torch.as_tensor(np.asarray(mask, dtype=float))
    if lr.shape[0] != r.size:
        raise ValueError(f"rewards must have one entry per row of log_ratio ({lr.shape[0]}), got {r.size}")
    beta = _checks.in_range("beta", beta, 0.0)
    logp = torch.full(lr.shape, -1.0, dtype=torch.float64)          # any value: μ = 1, ρ ≡ 1
    ref = logp - lr
    adv1 = advantages.group_advantages(r)                             # (G,)
    kw = dict(mode=mode, max_len=max_len if max_len is not None else lr.shape[1])
    w_loss = losses.token_grad_weights(logp, logp, adv1, m, ref_logp=ref, beta=beta, kl_kind="k3", **kw)
    shaped = losses.kl_shaped_rewards(r, logp, ref, m, beta=beta, kind="k1").numpy()
    adv2 = advantages.group_advantages(shaped)
    w_reward = losses.token_grad_weights(logp, logp, adv2, m, **kw)
    w0 = losses.token_grad_weights(logp, logp, adv1, m, **kw)
    return Placement(adv1, adv2, shaped, w_loss.numpy(), w_reward.numpy(), w0.numpy(), m.numpy())
