"""Length drift: a toy policy that chooses its length, trained under each scheme (notebook 05).

See :mod:`grpo_lab.length_bias` for the argument; :func:`length_score_moments` is its proof
in numbers. Assumptions of the toy: correctness is one token with a fixed probability q
(length never helps), length is a per-token stop decision with one logit per branch.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import torch

from grpo_lab import _checks
from grpo_lab._torch_threads import single_thread  # tiny tensors: one thread is faster
from grpo_lab.advantages import group_advantages
from grpo_lab.length_bias.schemes import LENGTH_POLICIES, SCHEMES, SHOWN, _scheme
from grpo_lab.losses import aggregate, policy_loss_per_token

TOKEN_MEAN_OVER = ("batch", "group")   # the span of eq. (7)'s denominator in the drift toy


@dataclass(frozen=True)
class DriftConfig:
    """The toy of :func:`simulate_drift`. Defaults: drift is clear within 150 steps."""

    q: float = 0.5             # P(answer right); fixed, independent of length
    G: int = 8                 # group size
    n_groups: int = 16         # prompts (groups) per batch
    steps: int = 150           # optimiser steps (one per batch, μ = 1)
    lr: float = 1.0            # SGD step on the stop logits
    max_len: int = 32          # generation budget: answer + at most max_len − 1 more tokens; C of Dr. GRPO
    p_stop0: float = 0.1       # initial per-token stop probability (E|y| ≈ 9.3 at max_len 32)
    length_policy: str = "by-correctness"  # stop logit per branch (right/wrong) or "shared"
    token_mean_over: str = "batch"  # eq. (7)'s Σ|y|: all n_groups·G responses, or "group" (mean of per-group eq. (7))
    seeds: int = 4             # independent runs
    seed: int = 0              # base seed (the same random numbers for every scheme)

    def checked(self) -> "DriftConfig":
        _checks.in_range("q", self.q, 0.0, 1.0, low_open=True, high_open=True)
        _checks.integer("G", self.G, low=2)
        _checks.integer("n_groups", self.n_groups, low=1)
        _checks.integer("steps", self.steps, low=1)
        _checks.in_range("lr", self.lr, 0.0, low_open=True)
        _checks.integer("max_len", self.max_len, low=3)
        _checks.in_range("p_stop0", self.p_stop0, 0.0, 1.0, low_open=True, high_open=True)
        _checks.choice("length_policy", self.length_policy, LENGTH_POLICIES)
        _checks.choice("token_mean_over", self.token_mean_over, TOKEN_MEAN_OVER)
        _checks.integer("seeds", self.seeds, low=1)
        _checks.integer("seed", self.seed, low=0)
        return self


def expected_length(p_stop, max_len: int):
    """E|y| of the toy: 1 answer token + min(K, M) tokens, K ~ Geometric(p), M = max_len − 1.

    E[min(K, M)] = Σ_{k<M} P(K > k) = (1 − (1 − p)^M)/p. Same shape as ``p_stop``.
    """
    p = np.asarray(p_stop, dtype=float)
    M = _checks.integer("max_len", max_len, low=2) - 1
    if np.any((p <= 0) | (p > 1)):
        raise ValueError("p_stop must lie in (0, 1]")
    out = 1.0 + (1.0 - (1.0 - p) ** M) / p
    return float(out) if out.ndim == 0 else out


def length_pmf(p_stop: float, max_len: int) -> np.ndarray:
    """P(|y| = l) for l = 0 … max_len (entries 0 and 1 are 0). Shape (max_len + 1,).

    |y| = max_len collects the stop at the last decision and the cut at the budget.
    """
    p = _checks.in_range("p_stop", p_stop, 0.0, 1.0, low_open=True)
    M = _checks.integer("max_len", max_len, low=2) - 1
    out = np.zeros(M + 2)
    k = np.arange(1, M)                                                  # stopped after k ≤ M − 1 more
    out[k + 1] = (1 - p) ** (k - 1) * p
    out[M + 1] = (1 - p) ** (M - 1)                                      # reached the budget
    return out


@dataclass(frozen=True)
class DriftResult:
    """Curves of one scheme. Arrays are (seeds, steps + 1) unless stated; step 0 is the start."""

    scheme: str
    config: DriftConfig
    p_right: np.ndarray        # stop probability of right answers
    p_wrong: np.ndarray        # stop probability of wrong answers
    len_right: np.ndarray      # exact E|y| of right answers under the current policy
    len_wrong: np.ndarray      # exact E|y| of wrong answers
    sampled_right: np.ndarray  # (seeds, steps) mean |y| of the right answers sampled at each step
    sampled_wrong: np.ndarray  # (seeds, steps)

    @property
    def wrong_change(self) -> np.ndarray:
        """E|y| of wrong answers, end − start, per seed. Shape (seeds,)."""
        return self.len_wrong[:, -1] - self.len_wrong[:, 0]

    @property
    def right_change(self) -> np.ndarray:
        return self.len_right[:, -1] - self.len_right[:, 0]


def _draws(cfg: DriftConfig) -> tuple[np.ndarray, np.ndarray]:
    """Common random numbers (steps, seeds, B): correctness and length uniforms."""
    rng = np.random.default_rng(cfg.seed)
    B = cfg.n_groups * cfg.G
    u_right = rng.random((cfg.steps, cfg.seeds, B))
    u_len = 1.0 - rng.random((cfg.steps, cfg.seeds, B))                 # in (0, 1]
    return u_right, u_len


def toy_logp(stop_logit, right, lengths, stopped, *, q: float, max_len: int):
    """Token log-probabilities of toy responses and their mask. Returns (logp, mask), shape (..., max_len).

    Token 0 is the answer: log q if right, log(1 − q) if wrong (no parameter: length never
    changes correctness). Tokens 1 … |y| − 1 are "continue" decisions, log σ(−s), except the
    last, which is "stop", log σ(s), when ``stopped`` (else the response was cut at the
    budget). ``stop_logit`` (...,) torch, the logit s of each response (carries the gradient);
    ``right``, ``lengths``, ``stopped`` (...,) arrays of the same shape.
    """
    T = _checks.integer("max_len", max_len, low=2)
    L = torch.as_tensor(np.asarray(lengths))
    if L.shape != stop_logit.shape or np.shape(right) != tuple(L.shape) or np.shape(stopped) != tuple(L.shape):
        raise ValueError("stop_logit, right, lengths and stopped must have the same shape")
    if bool((L < 1).any()) or bool((L > T).any()):
        raise ValueError(f"lengths must lie in [1, max_len = {T}]")
    pos = torch.arange(T)                                                # (T,)
    shape = (*L.shape, T)
    mask = (pos < L[..., None]).to(torch.float64)                        # (..., T)
    log_cont = torch.nn.functional.logsigmoid(-stop_logit)[..., None].expand(shape)
    log_stop = torch.nn.functional.logsigmoid(stop_logit)[..., None].expand(shape)
    is_stop = (pos == (L - 1)[..., None]) & torch.as_tensor(np.asarray(stopped, bool))[..., None]
    logp = torch.where(is_stop, log_stop, log_cont)                      # (..., T)
    log_q = torch.tensor([np.log(q), np.log1p(-q)], dtype=torch.float64)
    ans = log_q[torch.as_tensor(np.where(np.asarray(right, bool), 0, 1))][..., None].expand(shape)
    logp = torch.where(pos == 0, ans, logp)                              # token 0: the answer
    return torch.where(mask > 0, logp, torch.zeros_like(logp)), mask


def _simulate(scheme: str, cfg: DriftConfig) -> DriftResult:
    with single_thread():
        return _simulate_1thread(scheme, cfg)


def _simulate_1thread(scheme: str, cfg: DriftConfig) -> DriftResult:
    S, N, G, T = cfg.seeds, cfg.n_groups, cfg.G, cfg.max_len
    B, M = N * G, T - 1
    n_par = 2 if cfg.length_policy == "by-correctness" else 1
    s0 = float(np.log(cfg.p_stop0 / (1 - cfg.p_stop0)))
    stop_logit = torch.full((S, n_par), s0, dtype=torch.float64, requires_grad=True)  # (S, 1|2)
    rows = torch.arange(S)[:, None]                                      # (S, 1)
    u_right, u_len = _draws(cfg)
    p_hist = np.empty((S, cfg.steps + 1, 2))
    samp = np.full((2, S, cfg.steps), np.nan)
    mode, level = SCHEMES[scheme]["mode"], SCHEMES[scheme]["level"]
    for step in range(cfg.steps + 1):
        p_now = torch.sigmoid(stop_logit.detach()).numpy()               # (S, 1|2)
        p_hist[:, step] = p_now if n_par == 2 else np.repeat(p_now, 2, axis=1)
        if step == cfg.steps:
            break
        right = u_right[step] < cfg.q                                    # (S, B)
        branch = np.where(right, 0, 1) if n_par == 2 else np.zeros((S, B), int)
        p_i = np.take_along_axis(p_now, branch, axis=1)                  # (S, B) stop prob of each response
        K = np.floor(np.log(u_len[step]) / np.log1p(-p_i)) + 1           # (S, B) Geometric(p) ≥ 1
        stopped = K <= M                                                 # the last token is a stop
        L = 1 + np.minimum(K, M).astype(int)                             # (S, B) |y_i|
        samp[0, :, step] = [L[s][right[s]].mean() if right[s].any() else np.nan for s in range(S)]
        samp[1, :, step] = [L[s][~right[s]].mean() if (~right[s]).any() else np.nan for s in range(S)]
        s_i = stop_logit[rows, torch.as_tensor(branch)]                  # (S, B) logit of each response
        logp, mask = toy_logp(s_i, right, L, stopped, q=cfg.q, max_len=T)  # (S, B, T) each
        rewards = right.reshape(S * N, G).astype(float)                  # (S·N, G)
        adv = torch.as_tensor(group_advantages(rewards).reshape(S, B))   # (S, B) eq. (1)
        # grpo_loss = aggregate(policy_loss_per_token(...)) with β = 0: the per-token loss of
        # all seeds in one call (rows are independent), then one aggregate per seed, so each
        # seed's batch has its own normaliser (eq. 6 / eq. 7 / 1/C) as a real run would.
        flat = (S * B, T)
        per_tok = policy_loss_per_token(logp.reshape(flat), logp.detach().reshape(flat), adv.reshape(-1),
                                        mask.reshape(flat), level=level).reshape(S, B, T)
        if mode == "token-mean" and cfg.token_mean_over == "group":      # eq. (7) within each group of G
            pt4, m4 = per_tok.reshape(S, N, G, T), mask.reshape(S, N, G, T)
            loss = sum(aggregate(pt4[s, n], m4[s, n], mode) for s in range(S) for n in range(N)) / N
        else:
            loss = sum(aggregate(per_tok[s], mask[s], mode, max_len=T) for s in range(S))
        (grad,) = torch.autograd.grad(loss, stop_logit)
        with torch.no_grad():
            stop_logit -= cfg.lr * grad                                  # plain SGD, one step per batch
    lens = expected_length(p_hist, T)                                    # (S, steps + 1, 2)
    return DriftResult(scheme, cfg, p_hist[..., 0], p_hist[..., 1], lens[..., 0], lens[..., 1],
                       samp[0], samp[1])


@lru_cache(maxsize=64)
def _cached(scheme: str, cfg: DriftConfig) -> DriftResult:
    res = _simulate(scheme, cfg)
    for name in ("p_right", "p_wrong", "len_right", "len_wrong", "sampled_right", "sampled_wrong"):
        getattr(res, name).setflags(write=False)
    return res


def simulate_drift(scheme: str = "grpo", config: DriftConfig = DriftConfig()) -> DriftResult:
    """Train the toy length policy with ``scheme`` (a key of :data:`SCHEMES`). Cached, read-only.

    Every step samples ``n_groups`` groups of G responses per seed, scores them (1 if the
    answer token is right), computes Â by eq. (1) and takes one SGD step on the stop
    logits through :func:`grpo_lab.losses.grpo_loss` (on policy: ρ ≡ 1, μ = 1). The
    random numbers are shared by all schemes, so step 0 samples are identical.
    """
    scheme = _scheme(scheme)
    if not isinstance(config, DriftConfig):
        raise TypeError(f"config must be a DriftConfig, got {type(config).__name__}")
    return _cached(scheme, config.checked())


def simulate_all(config: DriftConfig = DriftConfig(), schemes=SHOWN) -> dict[str, DriftResult]:
    """:func:`simulate_drift` for every scheme in ``schemes``, same seed."""
    return {s: simulate_drift(s, config) for s in schemes}


def drift_frame(results: dict[str, DriftResult]) -> pd.DataFrame:
    """Start/end E|y| of right and wrong answers per scheme (mean over seeds) and the worst seed."""
    rows = []
    for s, r in results.items():
        rows.append({"scheme": s, "wrong_start": r.len_wrong[:, 0].mean(), "wrong_end": r.len_wrong[:, -1].mean(),
                     "wrong_change_min": r.wrong_change.min(), "wrong_change_max": r.wrong_change.max(),
                     "right_start": r.len_right[:, 0].mean(), "right_end": r.len_right[:, -1].mean(),
                     "right_change_max": r.right_change.max()})
    return pd.DataFrame(rows).set_index("scheme")


# ---------------------------------------------------------------------------------
# Why: the score of the length distribution, with and without 1/|y|
# ---------------------------------------------------------------------------------
def length_score_moments(p_stop: float, max_len: int) -> dict[str, float]:
    """E[∂log P(|y|)/∂s] and E[(1/|y|)·∂log P(|y|)/∂s] for the toy's length, s = logit of p_stop.

    After the answer token the toy makes up to M = max_len − 1 stop/continue decisions.
    Stopping at decision k (|y| = k + 1) has k − 1 "continue" tokens and one "stop", so
    ∂log P/∂s = 1 − k·p; running through all M without stopping (|y| = max_len, cut at the
    budget) has −M·p. The first moment is exactly 0 (a score has mean 0): with a constant
    per-token weight (1/C) the length parameter gets no push in expectation. The
    1/|y|-weighted moment is > 0 (short answers have positive score and count more):
    multiplied by Â < 0 it lowers the stop logit of wrong answers — the length bias of
    eq. (6). Exact sums over the M + 1 outcomes.

    The step behind "> 0": every outcome's score is 1_stop − p·(|y| − 1), so
    E[score/|y|] = E[(1_stop + p)/|y|] − p (``"stop_plus_p_over_length_minus_p"``), and because
    E[score] = 0 it equals Cov(score, 1/|y|) (``"cov_score_inverse_length"``): both fall as |y|
    grows, so the covariance is positive.
    """
    p = _checks.in_range("p_stop", p_stop, 0.0, 1.0, low_open=True, high_open=True)
    M = _checks.integer("max_len", max_len, low=2) - 1
    k = np.arange(1, M + 1)
    prob = np.append((1 - p) ** (k - 1) * p, (1 - p) ** M)               # (M + 1,) stop at k, or cut
    length = np.append(k + 1, M + 1).astype(float)                       # (M + 1,) |y|
    score = np.append(1.0 - k * p, -M * p)                               # (M + 1,) ∂log P/∂s
    stopped = np.append(np.ones(M), 0.0)                                 # (M + 1,) 1_stop
    inv = 1.0 / length
    return {"mean_score": float(prob @ score),
            "stop_plus_p_over_length_minus_p": float(prob @ ((stopped + p) * inv) - p),
            "cov_score_inverse_length": float(prob @ (score * inv) - (prob @ score) * (prob @ inv)),
            "mean_score_over_length": float(prob @ (score / length)),
            "mean_inverse_length": float(prob @ (1.0 / length)),
            "inverse_mean_length": 1.0 / expected_length(p, max_len)}
