"""Steps 1–2 of the recipe (seed 000 §5, 采样 and 打分) for one GRPO step, with DAPO's dynamic sampling.

:func:`sample_step` draws P prompts, samples G responses each and scores them — one
*sampling round*, a :class:`SampledRound`. Without dynamic sampling that is the whole
step. With it, the groups whose G rewards are all equal (退化组 degenerate groups, Â = 0,
no gradient) are dropped and further rounds are drawn until P informative groups are
kept or ``max_sampling_rounds`` is reached. :meth:`StepSample.batch` assembles the
groups that enter the loss (at most P, round after round).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from grpo_lab.advantages import degenerate_mask
from grpo_lab.lm.evaluation import Scored, encode_prompts, score
from grpo_lab.lm.rollout import Rollout, sample
from grpo_lab.lm.tasks import Problem, overlong_penalty


@dataclass
class SampledRound:
    """One sampling round: P prompts × G responses, scored."""

    rollout: Rollout            # B = P·G responses, group after group
    problems: list[Problem]     # the P prompts
    scored: Scored              # the verifier's texts, rewards, correctness, levels (B,)
    rewards: np.ndarray         # (B,) rewards r_i after shaping (DAPO's overlong penalty)
    keep: np.ndarray            # indices of the groups offered to the loss (all P, or the informative ones)


@dataclass
class StepSample:
    """Every sampling round of one step, and the token count they generated."""

    rounds: list[SampledRound]
    n_tokens: int

    def batch(self, P: int, G: int, pad_id: int):
        """(batch, rewards (B,), used): the first ≤ P kept groups, concatenated; batch is None when none."""
        parts, rew_parts, used = [], [], 0
        for r in self.rounds:
            idx = r.keep[:P - used]
            if idx.size == 0:
                continue
            parts.append(r.rollout.select_groups(idx) if idx.size < r.rollout.B // G else r.rollout)
            rew_parts.append(r.rewards.reshape(-1, G)[idx].reshape(-1))
            used += idx.size
        if not used:
            return None, np.zeros(0), 0
        return Rollout.concat(parts, pad_id), np.concatenate(rew_parts), used

    def used_mask(self, P: int, G: int) -> np.ndarray:
        """(N·G,) bool over every sampled response: did it enter the loss (same order as :meth:`batch`)."""
        masks, used = [], 0
        for r in self.rounds:
            m = np.zeros(r.rollout.B // G, dtype=bool)
            idx = r.keep[:P - used]
            m[idx] = True
            used += idx.size
            masks.append(np.repeat(m, G))
        return np.concatenate(masks)

    def samples_frame(self, P: int, G: int, adv) -> pd.DataFrame:
        """One row per sampled response: group, prompt, response, reward, adv, length, truncated.

        ``group`` counts groups over the step's rounds; ``adv`` (the Â_i of the responses in
        the loss, in :meth:`batch` order) is NaN for responses dynamic sampling dropped.
        """
        used = self.used_mask(P, G)
        adv_all = np.full(used.size, np.nan)
        adv_all[used] = np.asarray(adv, dtype=float)
        prompts, texts, rewards, lengths, trunc = [], [], [], [], []
        for r in self.rounds:
            prompts += [r.problems[i // G].prompt for i in range(r.rollout.B)]
            texts += list(r.scored.texts)
            rewards.append(r.rewards)
            lengths.append(r.rollout.lengths.cpu().numpy())
            trunc.append(r.rollout.truncated.cpu().numpy())
        return pd.DataFrame({"group": np.arange(used.size) // G, "prompt": prompts, "response": texts,
                             "reward": np.concatenate(rewards), "adv": adv_all,
                             "length": np.concatenate(lengths).astype(int),
                             "truncated": np.concatenate(trunc).astype(bool)})


def step_rngs(seed: int, step: int, device="cpu"):
    """(numpy rng, torch generator) of GRPO step ``step`` (1-based): a pure function of (seed, step),
    so resuming needs no RNG state. The rng draws the step's problems, the generator its samples."""
    rng = np.random.default_rng([seed, step, 17])
    gen = torch.Generator(device=device).manual_seed(int(rng.integers(2**62)))
    return rng, gen


def draw_problems(task, P: int, rng) -> list[Problem]:
    """The P prompts of one sampling round (every level at every step: stratified)."""
    return task.sample(P, rng, stratified=True)


def first_round_problems(task, cfg, steps: int) -> list[Problem]:
    """The prompts of the first sampling round of steps 1 … ``steps``, in order: what the trainer
    asks at those steps without dynamic sampling (``benchmarks/bench_trl.py`` gives TRL the same)."""
    return [p for step in range(1, steps + 1)
            for p in draw_problems(task, cfg.prompts_per_step, step_rngs(cfg.seed, step)[0])]


def sample_step(policy, tok, task, cfg, rng, gen, timer, device, amp: bool) -> StepSample:
    """Steps 1–2 for one GRPO step: sampling rounds until the loss has its groups (see the module docstring)."""
    P, G = cfg.prompts_per_step, cfg.G
    rounds, n_tokens, n_kept = [], 0, 0
    while True:
        problems = draw_problems(task, P, rng)
        ids, pmask = encode_prompts(tok, problems, device)
        policy.eval()
        with timer("sample"):
            ro = sample(policy, ids, pmask, G=G, max_new=cfg.max_new, temperature=cfg.sample_temperature,
                        eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, generator=gen, amp=amp)
        policy.train()
        with timer("score"):
            sc = score(task, tok, ro, problems)
            rewards = sc.rewards.copy()                                     # (P·G,)
            if cfg.overlong_buffer:                                         # DAPO soft overlong shaping
                rewards = rewards + overlong_penalty(ro.lengths.cpu().numpy(), cfg.max_new, cfg.overlong_buffer)
        n_tokens += ro.n_tokens
        if not cfg.dynamic_sampling:
            rounds.append(SampledRound(ro, problems, sc, rewards, np.arange(P)))
            break
        R = rewards.reshape(P, G)                                           # (P, G)
        informative = np.flatnonzero(~degenerate_mask(R))
        rounds.append(SampledRound(ro, problems, sc, rewards, informative))
        n_kept += informative.size
        if n_kept >= P or len(rounds) >= cfg.max_sampling_rounds:
            break
    return StepSample(rounds, n_tokens)
