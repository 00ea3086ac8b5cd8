"""One frozen batch scored by every method of the family (notebook 07, part a).

Seeds: 004 §三–四 (GRPO, Dr. GRPO, DAPO, GSPO; RLOO as the leave-one-out baseline) and
000 §0.2 (GRPO keeps PPO's clipped term and replaces only the advantage estimator).

A :class:`FrozenBatch` is N prompts × G answers
with rewards r (N, G), lengths |y_i|, and per-token log-probabilities under the current,
sampling (old) and reference policies, (B, T) with B = N·G and a 0/1 response mask. It is
synthetic and deterministic (:func:`synthetic_batch`, and the named batches of
:data:`BATCHES`, each built to make one difference visible). :func:`score_batch` scores the
same batch with every :class:`Variant` — a variant is only a choice among existing
functions, nothing is re-derived here:

==========  ====================  =========================  ========  ==============  ===========
variant     advantage (eq. 1)     aggregation                ratio     ε_low / ε_high  degenerate
==========  ====================  =========================  ========  ==============  ===========
GRPO        (r−mean)/std          seq-mean-token-mean (6)    token (4) 0.2 / 0.2       kept
Dr. GRPO    r − mean              Σ/(B·C), C = budget        token     0.2 / 0.2       kept
DAPO        (r−mean)/std          token-mean (7)             token     0.2 / 0.28      dropped
GSPO        (r−mean)/std          seq-mean-token-mean (6)    sequence  3e-4 / 4e-4     kept
RLOO        r − mean of others    seq-mean-token-mean (6)    token     0.2 / 0.2       kept
==========  ====================  =========================  ========  ==============  ===========

Advantages come from :func:`grpo_lab.advantages.group_advantages` /
:func:`~grpo_lab.advantages.rloo_advantages`; the loss and its diagnostics from
:func:`grpo_lab.losses.grpo_loss`; the per-token gradient weights from
:func:`grpo_lab.losses.token_grad_weights` (autograd through the same loss). DAPO's dynamic
sampling resamples until every group is informative; on a frozen batch the closest
equivalent is to drop the degenerate groups (退化组), which is what ``drop_degenerate`` does
(their rows get an all-zero mask, so they leave every denominator). DAPO's overlong reward
shaping changes rewards, not the loss, and lives in the LM loop's presets, not here. The
KL term is off (β = 0) by default for every variant so that only the four axes above
differ; ``score_batch(..., beta=0.04)`` adds the same k3 KL (eq. 5) to all of them.

Conventions named where they differ: the std is the seeds' population std (TRL and verl
use the sample std); the Dr. GRPO constant C is the batch's padded length T, the generation
budget (TRL uses ``max_completion_length``, verl ``loss_scale_factor`` or the response
length); GSPO's ε is the paper's order 1e-4 because s_i is a geometric mean.

The variants are derived from :mod:`grpo_lab.methods` (one record per method); the table
above is that registry's, restated for the reader. :data:`BEYOND_VARIANTS` holds the 2025
policy losses beyond the lecture notes (CISPO, SAPO, GMPO; notebook 09), scored by the same
:func:`score_batch` with their ``policy_loss``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from grpo_lab.i18n import Text
from grpo_lab import _checks, methods
from grpo_lab.advantages import ESTIMATORS, as_groups, degenerate_mask, group_advantages, rloo_advantages
from grpo_lab.losses import LEVELS, grpo_loss, resolve_mode, token_grad_weights

# ---------------------------------------------------------------------------------
# Variants: (advantage estimator, aggregation mode, ratio level, clip ε_low/ε_high)
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One member of the family, as a choice among the existing functions.

    ``estimator="grpo"`` calls ``group_advantages(r, scale=scale, std=std)``;
    ``"rloo"`` calls ``rloo_advantages(r)`` (scale/std unused). ``mode`` is an
    :func:`grpo_lab.losses.aggregate` mode; for ``"seq-mean-token-sum-norm"`` (Dr. GRPO) the
    constant C is the batch's padded length T. ``level`` is the importance-ratio level.
    ``drop_degenerate`` removes all-equal groups before the loss (DAPO's dynamic sampling on
    a frozen batch).
    """

    name: str
    estimator: str = "grpo"
    scale: str = "group"
    std: str = "population"
    mode: str = "seq-mean-token-mean"
    level: str = "token"
    eps_low: float = 0.2
    eps_high: float = 0.2
    drop_degenerate: bool = False
    note: str = ""
    policy_loss: str = "clip"        # beyond the lecture notes: cispo, sapo, gmpo (grpo_lab.losses.beyond)
    policy_kw: tuple = ()            # their parameters, ((name, value), …): cispo_cap, sapo_tau_pos, sapo_tau_neg

    def __post_init__(self):
        _checks.choice("estimator", self.estimator, ESTIMATORS)
        _checks.choice("level", self.level, LEVELS)
        object.__setattr__(self, "mode", resolve_mode(self.mode))
        _checks.in_range("eps_low", self.eps_low, 0.0, 1.0)
        _checks.in_range("eps_high", self.eps_high, 0.0)

    def advantages(self, rewards) -> np.ndarray:
        """Â for rewards (N, G), by the existing estimator. Shape (N, G)."""
        if self.estimator == "rloo":
            return rloo_advantages(rewards)
        return group_advantages(rewards, scale=self.scale, std=self.std)

    def describe(self) -> dict:
        adv = "r − mean of the other G−1" if self.estimator == "rloo" else {
            "group": f"(r − mean)/std ({self.std})", "batch": f"(r − mean)/batch std ({self.std})",
            "none": "r − mean"}[self.scale]
        return {"advantage": adv, "aggregation": self.mode, "ratio": self.level,
                "eps_low": self.eps_low, "eps_high": self.eps_high,
                "degenerate groups": "dropped" if self.drop_degenerate else "kept", "policy loss": self.policy_loss}

    def loss_kwargs(self) -> dict:
        """The policy-term arguments of :func:`grpo_lab.losses.grpo_loss` (``policy_loss`` and its parameters)."""
        return {"policy_loss": self.policy_loss, **dict(self.policy_kw)}


def variant_of(method) -> Variant:
    """The frozen-batch variant of a :mod:`grpo_lab.methods` record (name = its label).

    DAPO's dynamic sampling becomes ``drop_degenerate``; its overlong shaping changes rewards,
    not the loss, so it has no counterpart on a frozen batch; β stays 0 (see :func:`score_batch`).
    """
    m = methods.get(method)
    kw = {"cispo": (("cispo_cap", m.cispo_cap),),
          "sapo": (("sapo_tau_pos", m.sapo_tau_pos), ("sapo_tau_neg", m.sapo_tau_neg))}.get(m.policy_loss, ())
    return Variant(m.label, estimator=m.estimator, scale=m.adv_scale, std=m.adv_std, mode=m.agg,
                   level=m.ratio_level, eps_low=m.eps_low, eps_high=m.clip_high,
                   drop_degenerate=m.dynamic_sampling, note=f"{m.paper}: {m.summary}",
                   policy_loss=m.policy_loss, policy_kw=kw)


# every group method of the lecture notes (PPO's per-token GAE is part b, grpo_lab.credit)
VARIANTS: dict[str, Variant] = {v.name: v for v in (variant_of(m) for m in methods.METHODS.values()
                                                      if m.estimator in ESTIMATORS and m.lecture)}
# beyond the lecture notes (notebook 09): CISPO, SAPO, GMPO; score_batch accepts their names too
BEYOND_VARIANTS: dict[str, Variant] = {v.name: v for v in (variant_of(m) for m in methods.METHODS.values()
                                                             if m.estimator in ESTIMATORS and not m.lecture)}
_ALL = {**VARIANTS, **BEYOND_VARIANTS}


# ---------------------------------------------------------------------------------
# The frozen batch
# ---------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FrozenBatch:
    """N prompts × G answers, frozen. Sequence-level (N, G); token-level (B, T), B = N·G.

    Rows of the token arrays are laid out group after group (row b = k·G + i is answer i
    of prompt k). Padding positions (mask 0) hold 0 in every log-prob array.
    """

    name: str
    description: str
    rewards: np.ndarray     # (N, G) r_i
    lengths: np.ndarray     # (N, G) |y_i|, 1 ≤ |y_i| ≤ T
    mask: np.ndarray        # (B, T) 0/1
    logp: np.ndarray        # (B, T) log π_θ(o_{i,t}) now
    old_logp: np.ndarray    # (B, T) log π_θold(o_{i,t}) when sampled
    ref_logp: np.ndarray    # (B, T) log π_ref(o_{i,t})

    @property
    def N(self) -> int:
        return self.rewards.shape[0]

    @property
    def G(self) -> int:
        return self.rewards.shape[1]

    @property
    def B(self) -> int:
        return self.mask.shape[0]

    @property
    def T(self) -> int:
        return self.mask.shape[1]

    def responses(self) -> pd.DataFrame:
        """One row per answer: prompt, answer, row, reward, length."""
        k, i = np.divmod(np.arange(self.B), self.G)
        return pd.DataFrame({"prompt": k, "answer": i, "row": np.arange(self.B),
                             "reward": self.rewards.reshape(-1), "length": self.lengths.reshape(-1).astype(int)})


def synthetic_batch(rewards, lengths, *, T: int | None = None, seed: int = 0, drift: float = 0.0,
                    noise: float = 0.0, outlier_rate: float = 0.0, outlier_size=(0.15, 0.6),
                    ref_shift: float = 0.05, name: str = "custom", description: str = "") -> FrozenBatch:
    """A deterministic synthetic batch for given rewards (N, G) and lengths (N, G).

    old_logp of each valid token is drawn uniformly from [−2.5, −0.3] (seeded by ``seed``).
    The current policy may have moved since sampling (μ > 1 optimiser steps on the batch, or
    a stale rollout): log ρ_{i,t} = drift·sign(r_i − mean) + noise·ε_{i,t} + o_{i,t}, where
    ε ~ N(0, 1) and o_{i,t} is an outlier: with probability ``outlier_rate`` a token's log
    ratio jumps by ±U(``outlier_size``) (a rare token whose probability changed a lot —
    real log-ratio distributions are heavy-tailed); logp is clamped to ≤ −0.01.
    ``drift = noise = outlier_rate = 0`` gives logp == old_logp exactly (on-policy, every
    ρ = 1). ref_logp = old_logp + ``ref_shift``·ε'. ``T`` (default: the longest answer) is
    the padded length and the Dr. GRPO budget C.
    """
    r, _ = as_groups(rewards)
    lens = _checks.finite_array("lengths", lengths, ndim=(1, 2))
    lens = lens[None, :] if lens.ndim == 1 else lens
    if lens.shape != r.shape:
        raise ValueError(f"lengths must have the shape of rewards {r.shape}, got {lens.shape}")
    if np.any(lens != np.round(lens)) or np.any(lens < 1):
        raise ValueError("lengths must be integers >= 1 (tokens per answer)")
    lens = lens.astype(int)
    T = int(lens.max()) if T is None else _checks.integer("T", T, low=1)
    if lens.max() > T:
        raise ValueError(f"T must be >= the longest answer ({int(lens.max())} tokens), got {T}")
    drift = _checks.in_range("drift", drift, 0.0)
    noise = _checks.in_range("noise", noise, 0.0)
    outlier_rate = _checks.in_range("outlier_rate", outlier_rate, 0.0, 1.0)
    size = _checks.finite_array("outlier_size", outlier_size, ndim=1)
    if size.shape != (2,) or not 0 <= size[0] <= size[1]:
        raise ValueError(f"outlier_size must be a pair (low, high) with 0 <= low <= high, got {outlier_size!r}")
    ref_shift = _checks.in_range("ref_shift", ref_shift, 0.0)
    seed = _checks.integer("seed", seed, low=0)
    rng = np.random.default_rng(seed)
    B = r.size
    mask = (np.arange(T)[None, :] < lens.reshape(-1, 1)).astype(float)        # (B, T)
    old = -rng.uniform(0.3, 2.5, size=(B, T))                                # (B, T)
    direction = np.sign(r - r.mean(axis=1, keepdims=True)).reshape(-1, 1)   # (B, 1)
    eps = rng.standard_normal((B, T))
    jump = (rng.random((B, T)) < outlier_rate) * rng.choice([-1.0, 1.0], size=(B, T)) \
        * rng.uniform(size[0], size[1], size=(B, T))                         # (B, T) outliers
    ref = old + ref_shift * rng.standard_normal((B, T))
    if drift == 0.0 and noise == 0.0 and outlier_rate == 0.0:
        logp = old.copy()
    else:
        logp = np.minimum(old + drift * direction + noise * eps + jump, -0.01)
    old, logp, ref = (np.where(mask > 0, a, 0.0) for a in (old, logp, ref))
    for a in (mask, logp, old, ref, r, lens):
        a.setflags(write=False)
    return FrozenBatch(name, description, r, lens, mask, logp, old, ref)


# name -> (description (bilingual: the widget shows it in the language set), kwargs of synthetic_batch). N = 3 prompts, G = 4 answers, T = 16 for all,
# so a widget can switch between them without changing any axis.
T_BUDGET = 16
_SEED_REWARDS = [[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0]]
BATCH_SPECS = {
    "lecture-notes groups": (
        Text("lecture notes 004 §三's groups 1,1,0,0 and 1,0,0,0, with their mirror 1,1,1,0, on-policy (every ρ = 1)",
             "讲义 004 §三 的两个组 1,1,0,0 与 1,0,0,0，加上其镜像 1,1,1,0，同策略（每个 ρ = 1）"),
        dict(rewards=_SEED_REWARDS, lengths=[[6, 9, 12, 8], [7, 10, 14, 5], [8, 6, 11, 13]], seed=0)),
    "long wrong answers": (
        Text("correct answers short, wrong answers of very different lengths (4 vs 16 tokens), on-policy",
             "正确回答短，错误回答长度相差很大（4 与 16 个 token），同策略"),
        dict(rewards=[[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 1]],
             lengths=[[5, 6, 4, 16], [6, 16, 4, 16], [16, 5, 4, 5]], seed=1)),
    "degenerate groups": (
        Text("one all-correct, one all-wrong and one mixed group, on-policy",
             "一个全对组、一个全错组和一个有对有错的组，同策略"),
        dict(rewards=[[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0]],
             lengths=[[6, 8, 7, 9], [14, 12, 16, 15], [7, 12, 9, 10]], seed=2)),
    "stale (off-policy)": (
        Text("the lecture-notes groups after a few optimiser steps: most tokens' log-probs barely moved "
             "(noise 1e-4), but one token in ten jumped by 0.15-0.6 nats either way",
             "讲义的三个组经过几次优化器更新之后：大多数 token 的对数概率几乎没动（噪声 1e-4），"
             "但十个 token 中有一个上下跳动了 0.15–0.6 nats"),
        dict(rewards=_SEED_REWARDS, lengths=[[6, 9, 12, 8], [7, 10, 14, 5], [8, 6, 11, 13]], seed=8,
             noise=1e-4, outlier_rate=0.1)),
    "partial credit": (
        Text("continuous rewards: one group almost all equal (0.50 ± 0.02), one spread out, one 1,0,0,0",
             "连续奖励：一组几乎全相等（0.50 ± 0.02），一组分散，一组为 1,0,0,0"),
        dict(rewards=[[0.50, 0.52, 0.48, 0.51], [0.9, 0.2, 0.6, 0.1], [1, 0, 0, 0]],
             lengths=[[9, 11, 8, 10], [6, 13, 9, 15], [7, 12, 10, 9]], seed=4)),
}
BATCHES = tuple(BATCH_SPECS)


def make_batch(name: str = "lecture-notes groups") -> FrozenBatch:
    """One of the named frozen batches (:data:`BATCHES`), all of shape N = 3, G = 4, T = 16."""
    name = _checks.choice("name", name, BATCHES)
    description, kw = BATCH_SPECS[name]
    return synthetic_batch(T=T_BUDGET, name=name, description=description, **kw)


# ---------------------------------------------------------------------------------
# Scoring one batch with every variant
# ---------------------------------------------------------------------------------
@dataclass(eq=False)
class FamilyScores:
    """Result of :func:`score_batch`.

    ``responses``: long DataFrame, one row per (variant, answer): prompt, answer, row,
    reward, length, adv (Â_i), ratio (mean token ratio ρ, or GSPO's s_i), push (= −Σ_t
    w_{i,t}, the total push on the answer's log-probability: > 0 raises it), push_per_token
    (push / |y_i|), kept (False where dynamic sampling dropped the group).
    ``summary``: one row per variant: loss, pg_loss, kl, clip fractions, ratio stats and the
    variant's definition. ``weights``: variant -> (B, T) array of w_{i,t} =
    ∂loss/∂log π_θ(o_{i,t}) (token_grad_weights; 0 on padding).
    """

    batch: FrozenBatch
    responses: pd.DataFrame
    summary: pd.DataFrame
    weights: dict[str, np.ndarray] = field(default_factory=dict)

    def wide(self, column: str = "adv") -> pd.DataFrame:
        """``column`` side by side: rows (prompt, answer) with reward and length, one column per variant."""
        if column not in self.responses.columns:
            raise ValueError(f"column must be one of {list(self.responses.columns)}, got {column!r}")
        table = self.responses.pivot(index=["prompt", "answer"], columns="variant", values=column)
        table = table[list(self.summary.index)]
        info = self.batch.responses().set_index(["prompt", "answer"])[["reward", "length"]]
        table.columns.name = None
        return info.join(table)

    def push(self, variant: str) -> np.ndarray:
        """−w_{i,t} for ``variant``: per-token push, > 0 raises log π. Shape (B, T)."""
        variant = _checks.choice("variant", variant, tuple(self.weights))
        return -self.weights[variant]


def _as_variant(v) -> Variant:
    if isinstance(v, Variant):
        return v
    if isinstance(v, str):
        return _ALL[_checks.choice("variants", v, tuple(_ALL))]
    raise TypeError(f"variants must hold Variant objects or names in {tuple(_ALL)}, got {v!r}")


def score_batch(batch: FrozenBatch | str, variants=None, *, beta: float = 0.0,
                kl_kind: str = "k3") -> FamilyScores:
    """Score one frozen batch with every variant (default: all of :data:`VARIANTS`).

    For each variant: Â (N, G) by its estimator (eq. 1 or leave-one-out), flattened to (B,);
    rows of dropped degenerate groups masked out (DAPO); then :func:`grpo_lab.losses.grpo_loss`
    for the loss and diagnostics and :func:`grpo_lab.losses.token_grad_weights` for
    w_{i,t} — both with the variant's aggregation mode, ratio level and ε_low/ε_high. ``beta``
    (same for all, default 0) adds β·KL (``kl_kind``, k3 = eq. 5) against ref_logp.
    """
    if isinstance(batch, str):
        batch = make_batch(batch)
    if not isinstance(batch, FrozenBatch):
        raise TypeError(f"batch must be a FrozenBatch or one of {BATCHES}, got {type(batch).__name__}")
    if variants is None:
        variants = list(VARIANTS.values())
    elif isinstance(variants, (str, Variant)):
        variants = [variants]
    variants = [_as_variant(v) for v in variants]
    if not variants:
        raise ValueError("variants must name at least one variant")
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise ValueError(f"variants must have distinct names, got {names}")
    beta = _checks.in_range("beta", beta, 0.0)

    f64 = dict(dtype=torch.float64)
    logp = torch.tensor(batch.logp, **f64)
    old = torch.tensor(batch.old_logp, **f64)
    ref = torch.tensor(batch.ref_logp, **f64)
    base = batch.responses()
    degenerate = np.repeat(np.atleast_1d(degenerate_mask(batch.rewards)), batch.G)    # (B,)
    frames, rows, weights = [], [], {}
    for v in variants:
        adv = v.advantages(batch.rewards).reshape(-1)                        # (B,) Â_i
        kept = ~degenerate if v.drop_degenerate else np.ones(batch.B, dtype=bool)
        mask = torch.tensor(batch.mask * kept[:, None], **f64)            # (B, T)
        kw = dict(mode=v.mode, level=v.level, eps_low=v.eps_low, eps_high=v.eps_high,
                  max_len=batch.T if v.mode == "seq-mean-token-sum-norm" else None, **v.loss_kwargs())
        if beta > 0:
            kw.update(ref_logp=ref, beta=beta, kl_kind=kl_kind)
        adv_t = torch.as_tensor(adv, **f64)
        out = grpo_loss(logp, old, adv_t, mask, **kw)
        w = token_grad_weights(logp, old, adv_t, mask, **kw).numpy()        # (B, T)
        weights[v.name] = w
        # GSPO's s_i, or the mean token ratio ρ over the answer: out.ratio is (B, T) (s_i on every token)
        ratio = (out.ratio.numpy() * batch.mask).sum(1) / batch.lengths.reshape(-1)   # (B,)
        push = -w.sum(1)                                                     # (B,)
        frames.append(base.assign(variant=v.name, adv=adv, ratio=ratio, push=push,
                                  push_per_token=push / batch.lengths.reshape(-1), kept=kept))
        d = out.to_dict()
        d.update(variant=v.name, **v.describe())
        rows.append(d)
    responses = pd.concat(frames, ignore_index=True)
    responses = responses[["variant", "prompt", "answer", "row", "reward", "length", "adv", "ratio",
                           "push", "push_per_token", "kept"]]
    summary = pd.DataFrame(rows).set_index("variant")
    return FamilyScores(batch, responses, summary, weights)


__all__ = ["Variant", "VARIANTS", "BEYOND_VARIANTS", "variant_of", "FrozenBatch", "synthetic_batch", "BATCHES", "BATCH_SPECS",
           "make_batch", "FamilyScores", "score_batch"]
