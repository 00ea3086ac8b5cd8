"""Length bias (长度偏差): sequence-mean vs token-mean, token by token (seed 000 §4, eqs. (6)/(7)).

Seed 000 §4 and seed 004 §四. Every number here comes from :func:`grpo_lab.losses.grpo_loss`
by autograd (:func:`grpo_lab.losses.token_grad_weights`) and from
:func:`grpo_lab.advantages.group_advantages`; no loss or aggregation formula is repeated.

Per-token gradient weight. With one optimiser step per batch (μ = 1) the ratio is 1 and
w_{i,t} = ∂loss/∂log π(o_{i,t}) is, for a group of G responses with advantages Â_i:

=============  =============================================  ==========================
scheme         aggregation                                    w_{i,t}
=============  =============================================  ==========================
``grpo``       seq-mean-token-mean, eq. (6)                    −Â_i / (G·|y_i|)
``dapo``       token-mean, eq. (7) (DAPO's token-level PG)     −Â_i / Σ_j |y_j|
``dr_grpo``    seq-mean-token-sum-norm, 1/C (Dr. GRPO)         −Â_i / (G·C)
``gspo``       GSPO's sequence ratio s_i, seq-mean             −s_i·Â_i / (G·|y_i|)
``seq_sum``    seq-mean-token-sum (no normaliser)              −Â_i / G
=============  =============================================  ==========================

Only eq. (6) and GSPO carry 1/|y_i|: a wrong answer (Â_i < 0) twice as long has each token
pushed down half as hard, and the whole answer receives the same total push |Â_i|/G
whatever its length (every *response* weighs the same). Under eq. (7) every *token* weighs
the same, so a long answer's total push grows ∝ |y_i| (the seed's "long answers dominate
the gradient", §4.4). Under Dr. GRPO's constant C the per-token push is the same for every
length. GSPO's s_i = exp(mean_t log ρ_{i,t}) is a *mean* over the response, so ∂s_i/∂log π
carries 1/|y_i| again: on policy, GSPO weighs tokens exactly like eq. (6).

Length drift (:func:`simulate_drift`). A toy policy writes one answer token, right with a
fixed probability q (length never helps), then continues or stops at every later position
with a stop probability σ(s_c) that may depend on whether the answer is right (c = right /
wrong). Trained by :func:`grpo_lab.losses.grpo_loss` under each scheme from the same random
numbers, the wrong answers grow longer under eq. (6) and GSPO and do not under eq. (7) or
1/C. The condition, in words: a length parameter moves in expectation only if the per-token
weight of a response depends on its own length. For a geometric length with stop
probability p, ∂log P(L)/∂s = 1 − L·p has mean 0, so with weight 1/C (or a batch-wide
1/Σ|y|) the expected push on s is 0; with weight 1/L it is E[1/L] − p > 0 (Jensen:
E[1/L] > 1/E[L] ≈ p), multiplied by Â < 0 for wrong answers: their stop probability falls,
they get longer; right answers (Â > 0) get shorter. It needs the length policy to "know"
the answer is wrong (here: stop logits per branch; in an LM, the hidden state); if one stop
probability is shared by right and wrong answers, Σ_i Â_i = 0 cancels the effect in
expectation (``length_policy="shared"``).

Robustness (measured when this module was written, 150 steps, 8 seeds per setting): over
q ∈ {0.2, 0.5, 0.8}, G ∈ {4, 8}, 4 or 16 groups per batch, lr ∈ {0.3, 1}, p_stop0 ∈ {0.1,
0.3} and two base seeds, GRPO's (and GSPO's) wrong answers grew by +11 … +23 tokens on every
seed and its right answers shrank; Dr. GRPO's moved by at most 0.6 tokens and DAPO's by at
most 2.6 (DAPO's residual drift has GRPO's sign: the batch denominator Σ_j|y_j| contains the
response's own length; it shrinks as the batch grows). With a shared stop probability every
scheme random-walks by a few tokens, with no trend.

Conventions: TRL's ``loss_type`` "grpo"/"dapo"/"dr_grpo" and verl's ``loss_agg_mode`` map
onto these schemes (see :mod:`grpo_lab.losses`); GSPO as published averages the sequence
terms (seq-mean), which is what ``gspo`` uses. Dr. GRPO also drops the std of eq. (1); here
every scheme gets the *same* advantages so that only the aggregation differs (the std is
notebook 03's topic).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
import torch

from grpo_lab import _checks
from grpo_lab._torch_threads import single_thread  # tiny tensors: one thread is faster
from grpo_lab.advantages import STDS, group_advantages
from grpo_lab.losses import aggregate, policy_loss_per_token, token_grad_weights

# scheme -> keyword arguments of grpo_loss (aggregation mode and ratio level)
SCHEMES: dict[str, dict] = {
    "grpo": {"mode": "seq-mean-token-mean", "level": "token"},          # eq. (6)
    "dapo": {"mode": "token-mean", "level": "token"},                   # eq. (7)
    "dr_grpo": {"mode": "seq-mean-token-sum-norm", "level": "token"},   # 1/C
    "gspo": {"mode": "seq-mean-token-mean", "level": "sequence"},       # s_i, seq-mean
    "seq_sum": {"mode": "seq-mean-token-sum", "level": "token"},        # Σ_t, no normaliser
}
LABELS = {"grpo": "GRPO: seq-mean-token-mean, eq. (6)", "dapo": "DAPO: token-mean, eq. (7)",
          "dr_grpo": "Dr. GRPO: token-sum / C", "gspo": "GSPO: sequence ratio, seq-mean",
          "seq_sum": "seq-mean-token-sum"}
SHORT = {"grpo": "GRPO (6)", "dapo": "DAPO (7)", "dr_grpo": "Dr. GRPO 1/C", "gspo": "GSPO",
         "seq_sum": "token-sum"}
SHOWN = ("grpo", "dapo", "dr_grpo", "gspo")          # the four the panels and notebook show
LENGTH_POLICIES = ("by-correctness", "shared")


def _scheme(name: str) -> str:
    return _checks.choice("scheme", name, SCHEMES)


def _lengths(lengths) -> np.ndarray:
    arr = _checks.finite_array("lengths", lengths, ndim=1)
    if np.any(arr != np.round(arr)) or np.any(arr < 1):
        raise ValueError(f"lengths must be whole numbers >= 1 (tokens per response), got {arr.tolist()}")
    return arr.astype(int)


def response_mask(lengths, T: int | None = None) -> torch.Tensor:
    """0/1 mask of shape (G, T), row i with |y_i| leading ones; T defaults to max |y_i|."""
    L = _lengths(lengths)
    T = int(L.max()) if T is None else _checks.integer("T", T, low=int(L.max()))
    return (torch.arange(T)[None, :] < torch.as_tensor(L)[:, None]).to(torch.float64)  # (G, T)


# ---------------------------------------------------------------------------------
# (a) per-token gradient weights of one group, by autograd through grpo_loss
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupWeights:
    """Gradient weights of one group under several schemes (ratio 1 unless ``off_policy`` > 0).

    ``weights[k]`` is ∂loss/∂log π(o_{i,t}) (G, T) for scheme ``schemes[k]``; descent raises
    log π where it is negative. ``per_token`` is its mean over each response's tokens,
    ``total`` the sum (the whole push one response receives), both (S, G).
    """

    schemes: tuple[str, ...]
    lengths: np.ndarray      # (G,) |y_i|
    rewards: np.ndarray      # (G,) r_i
    adv: np.ndarray          # (G,) Â_i, eq. (1)
    C: int                   # Dr. GRPO's constant (generation budget)
    weights: np.ndarray      # (S, G, T) ∂loss/∂log π(o_{i,t}), 0 on padding
    per_token: np.ndarray    # (S, G) mean over the |y_i| tokens
    per_token_min: np.ndarray  # (S, G)
    per_token_max: np.ndarray  # (S, G)
    total: np.ndarray        # (S, G) Σ_t

    def frame(self) -> pd.DataFrame:
        """One row per (scheme, response): |y_i|, r_i, Â_i, per-token and total weight."""
        rows = []
        for k, s in enumerate(self.schemes):
            for i in range(self.lengths.size):
                rows.append({"scheme": s, "response": i + 1, "length": int(self.lengths[i]),
                             "reward": self.rewards[i], "adv": self.adv[i],
                             "per_token_weight": self.per_token[k, i], "total_weight": self.total[k, i]})
        return pd.DataFrame(rows)


def group_weights(lengths, rewards, *, schemes=SHOWN, C: int | None = None, off_policy: float = 0.0,
                  seed: int = 0, std: str = "population", eps_low: float = 0.2) -> GroupWeights:
    """Per-token gradient weights of one group of G responses under each scheme.

    Args:
        lengths: (G,) token counts |y_i| ≥ 1.
        rewards: (G,) rewards r_i; advantages by eq. (1) (``std`` as in
            :func:`grpo_lab.advantages.group_advantages`), the same for every scheme.
        schemes: names from :data:`SCHEMES`.
        C: Dr. GRPO's constant (``max_len`` of ``seq-mean-token-sum-norm``), ≥ max |y_i|;
            default max |y_i|.
        off_policy: 0 gives the first step of a batch (μ = 1, ρ ≡ 1). off_policy > 0 moves the
            policy off the sampling policy, log ρ_{i,t} = off_policy·z_{i,t}, z ~ N(0, 1) fixed by
            ``seed``: then the token ratio (and clipping, ``eps_low``) makes weights vary
            along a response under token-level schemes, while GSPO's s_i keeps them equal.
    """
    L = _lengths(lengths)
    r = _checks.finite_array("rewards", rewards, ndim=1)
    if r.shape != L.shape:
        raise ValueError(f"rewards must have one value per response, shape {L.shape}; got {r.shape}")
    if L.size < 2:
        raise ValueError(f"lengths: a group needs G >= 2 responses, got G = {L.size}")
    schemes = tuple(_scheme(s) for s in schemes)
    if not schemes:
        raise ValueError("schemes must name at least one scheme")
    T = int(L.max())
    C = T if C is None else _checks.integer("C", C, low=1)
    if C < T:
        raise ValueError(f"C must be >= the longest response ({T} tokens), got {C}")
    off_policy = _checks.in_range("off_policy", off_policy, 0.0)
    std = _checks.choice("std", std, STDS)
    adv = group_advantages(r, std=std)                                   # (G,) eq. (1)
    mask = response_mask(L)                                              # (G, T)
    old_logp = torch.full(mask.shape, -1.0, dtype=torch.float64)         # any value: only ρ matters
    z = torch.as_tensor(np.random.default_rng(seed).standard_normal(mask.shape))
    logp = old_logp + off_policy * z                                     # (G, T) log ρ = off_policy·z
    adv_t = torch.as_tensor(adv)
    with single_thread():
        W = np.stack([token_grad_weights(logp, old_logp, adv_t, mask, max_len=C, eps_low=eps_low,
                                         **SCHEMES[s]).numpy() for s in schemes])   # (S, G, T)
    m = mask.numpy().astype(bool)[None]                                  # (1, G, T)
    total = W.sum(-1)                                                    # (S, G)
    per_token = total / L[None, :]
    wmin = np.where(m, W, np.inf).min(-1)
    wmax = np.where(m, W, -np.inf).max(-1)
    return GroupWeights(schemes, L, r, adv, C, W, per_token, wmin, wmax, total)


# ---------------------------------------------------------------------------------
# (b) length drift: a toy policy that chooses its length
# ---------------------------------------------------------------------------------
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
# (c) seed 000 §4.4's table, from computed numbers
# ---------------------------------------------------------------------------------
TABLE_EXAMPLE = {"lengths": (12, 12, 6, 24), "rewards": (1, 1, 0, 0)}   # Â = +1, +1, −1, −1


def summary_numbers(lengths=TABLE_EXAMPLE["lengths"], rewards=TABLE_EXAMPLE["rewards"],
                    drift: dict[str, DriftResult] | None = None) -> dict:
    """The numbers behind the §4.4 table, for eq. (6) (``"seq"``) and eq. (7) (``"batch"``).

    From one group's autograd weights (:func:`group_weights`) and a drift simulation
    (``drift``: a dict scheme -> :class:`DriftResult` holding grpo, dapo, dr_grpo and gspo;
    default :func:`simulate_all` of the default config). Per column:

    * ``normaliser`` (G,): −Â_i / w_i, the number each response's advantage is divided by
      per token (G·|y_i| for eq. 6, Σ|y| for eq. 7);
    * ``total_push`` (G,): |Σ_t w_{i,t}|, the whole push one response receives;
    * ``per_token_long_over_short`` / ``total_long_over_short``: the longest over the
      shortest wrong answer;
    * ``longest_share``: the longest response's share of Σ_i |total push|;
    * ``wrong_drift``: change of wrong answers' E|y| over training, mean over seeds.
    """
    gw = group_weights(lengths, rewards, schemes=("grpo", "dapo"))
    drift = simulate_all() if drift is None else drift
    missing = {"grpo", "dapo", "dr_grpo", "gspo"} - set(drift)
    if missing:
        raise ValueError(f"drift must hold results for grpo, dapo, dr_grpo and gspo; missing {sorted(missing)}")
    L, adv = gw.lengths, gw.adv
    wrong = np.flatnonzero(adv < 0)
    if wrong.size < 2 or L[wrong].min() == L[wrong].max():
        raise ValueError("lengths/rewards: the table needs two wrong answers (Â < 0) of different lengths")
    if np.any(adv == 0):
        raise ValueError("rewards: every response needs Â != 0 for its normaliser to be defined")
    short, long_ = wrong[np.argmin(L[wrong])], wrong[np.argmax(L[wrong])]
    longest = int(np.argmax(L))
    out = {"example": {"lengths": L, "adv": adv, "G": int(L.size), "total_tokens": int(L.sum()),
                       "short_wrong_len": int(L[short]), "long_wrong_len": int(L[long_])},
           "steps": int(drift["grpo"].config.steps)}
    for key, k, scheme in (("seq", 0, "grpo"), ("batch", 1, "dapo")):
        w = gw.per_token[k]                                              # (G,) ∂loss/∂log π per token
        mass = np.abs(gw.total[k])                                       # (G,)
        out[key] = {
            "normaliser": -adv / w,                                      # (G,)
            "total_push": mass,
            "per_token_long_over_short": float(w[long_] / w[short]),
            "total_long_over_short": float(gw.total[k][long_] / gw.total[k][short]),
            "longest_share": float(mass[longest] / mass.sum()),
            "wrong_drift": float(drift[scheme].wrong_change.mean()),
        }
    out["gspo_wrong_drift"] = float(drift["gspo"].wrong_change.mean())
    out["dr_grpo_wrong_drift"] = float(drift["dr_grpo"].wrong_change.mean())
    return out


def summary_table(lengths=TABLE_EXAMPLE["lengths"], rewards=TABLE_EXAMPLE["rewards"],
                  drift: dict[str, DriftResult] | None = None) -> pd.DataFrame:
    """Seed 000 §4.4 (一张表总结) rebuilt from :func:`summary_numbers`: every cell is formatted, not typed.

    Columns 序列平均 (sequence mean, eq. 6) and 批次平均 (batch/token mean, eq. 7); rows
    as in the seed: denominator, what weighs equally, a long answer's gradient, side effect,
    fix. The example group defaults to lengths 12, 12, 6, 24 with rewards 1, 1, 0, 0.
    """
    n = summary_numbers(lengths, rewards, drift)
    s, b, ex = n["seq"], n["batch"], n["example"]
    G, short, long_ = ex["G"], ex["short_wrong_len"], ex["long_wrong_len"]
    own = ", ".join(f"{v:.0f}" for v in s["normaliser"] / G)
    rows = {
        "分母 denominator": (
            f"own length |y_i| (×G): {own}",
            f"batch total Σ|y| = {b['normaliser'].min():.0f}" + (" for every response" if np.ptp(b["normaliser"]) < 1e-9
                                                                  else f" … {b['normaliser'].max():.0f}")),
        "等权对象 equal weight": (
            "each response: total push " + " = ".join(f"{v:.3f}" for v in np.unique(s["total_push"].round(6))),
            f"each token: per-token push long/short wrong = {b['per_token_long_over_short']:.2f}"),
        "长回答的梯度 long answer's gradient": (
            f"diluted: per token ×{s['per_token_long_over_short']:.2f} (= {short}/{long_})",
            f"∝ token count: total ×{b['total_long_over_short']:.2f} (= {long_}/{short})"),
        "副作用 side effect": (
            f"length bias: wrong answers {s['wrong_drift']:+.1f} tokens in {n['steps']} steps",
            f"long answers dominate: longest carries {100 * b['longest_share']:.0f}% of the push "
            f"(seq-mean: {100 * s['longest_share']:.0f}%)"),
        "修复倾向 fix": (
            f"— (GSPO's sequence ratio keeps it: {n['gspo_wrong_drift']:+.1f})",
            f"DAPO's direction: {b['wrong_drift']:+.1f}; Dr. GRPO 1/C: {n['dr_grpo_wrong_drift']:+.1f}"),
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=["序列平均 seq-mean, eq. (6)", "批次平均 token-mean, eq. (7)"])


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
