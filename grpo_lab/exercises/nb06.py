"""Notebook 06 (a GRPO loop on a tiny LM): the trainer's layout, degenerate groups, the KL column."""
from __future__ import annotations

import numpy as np
import torch

from grpo_lab import advantages as A
from grpo_lab import losses as L
from grpo_lab.exercises._kinds import Case, Compute, Implement, Known, Mistake, Option, Predict
from grpo_lab.exercises.nb03 import GROUP_MISTAKES
from grpo_lab.exercises.solutions import flat_advantages
from grpo_lab.i18n import Text, tr


def _flat(group_fn):
    """A (N, G) -> (N, G) function applied to a flat batch laid out group after group."""
    return lambda rewards, group_size: group_fn(np.asarray(rewards, dtype=float).reshape(-1, group_size)).reshape(-1)


def _interleaved(rewards, group_size):
    r = np.asarray(rewards, dtype=float)
    return A.group_advantages(r.reshape(group_size, -1).T).T.reshape(-1)   # groups taken as every N-th response


def _flat_cases() -> list[Case]:
    cases = [Case((np.array([1., 0., 0., 0., 1., 1., 1., 1.]), 4), "two prompts, G=4: 1,0,0,0 and 1,1,1,1"),
             Case((np.array([1., 1., 0., 0., 0., 1.]), 2), "three prompts, G=2"),
             Case((np.array([0., 0., 1., 0., 0., 0., 0., 0., 1., 1., 0., 1.]), 4), "three prompts, G=4")]
    rng = np.random.default_rng(606)
    for k in range(5):
        N, G = int(rng.integers(2, 6)), int(rng.choice([2, 4, 8]))
        r = (rng.random(N * G) < 0.5).astype(float) if k % 2 else np.round(rng.random(N * G), 2)
        r[:G] = r[0]                                                     # the first prompt's group is degenerate
        cases.append(Case((r, G), f"random #{k + 1} (N={N}, G={G})"))
    return cases


FLAT_MISTAKES = (
    Mistake("interleaved", Text("Your groups are the wrong responses: reshape(-1, group_size) puts prompt k's G responses "
                                "in row k; reshape(group_size, -1) mixes prompts.",
                                "你分组用错了回答：reshape(-1, group_size) 把第 k 个提示的 G 条回答放在第 k 行；"
                                "reshape(group_size, -1) 会把不同提示混在一起。"), _interleaved),
) + tuple(Mistake(m.key, m.message, _flat(m.output)) for m in GROUP_MISTAKES)


def _k3_min() -> float:
    g = torch.Generator().manual_seed(6)
    logp = -torch.rand(64, 32, generator=g, dtype=torch.float64) * 3
    ref = logp + torch.randn(64, 32, generator=g, dtype=torch.float64)
    return float(L.kl_penalty(logp, ref, "k3").min()), float((L.kl_penalty(logp, ref, "k1") < 0).double().mean())


EXERCISES = (
    Implement(
        id="lm.flat_advantages", notebook="06", name="flat_advantages",
        signature="(rewards: np.ndarray (N·G,), group_size: int) -> np.ndarray (N·G,)",
        title=Text("Advantages for the trainer's flat batch", "为训练器的扁平批次计算优势"),
        prompt=Text("The trainer samples G responses for each of N prompts and keeps their rewards in one flat vector, "
                    "prompt after prompt (responses k·G … k·G + G − 1 answer prompt k, as in TRL). Write "
                    "`flat_advantages(rewards, group_size)`: eq. (1) within each prompt's group (population std, "
                    "ε = 1e-4, all-equal -> 0). You may reuse your notebook-03 function or `grpo_lab.advantages`.",
                    "训练器为 N 个提示各采样 G 条回答，把奖励按提示顺序存成一个扁平向量（第 k·G … k·G + G − 1 条回答"
                    "属于提示 k，与 TRL 相同）。写出 `flat_advantages(rewards, group_size)`：在每个提示的组内做式 (1)"
                    "（总体标准差，ε = 1e-4，全相等 -> 0）。可以复用你在 03 写的函数或 `grpo_lab.advantages`。"),
        hints=(Text("One reshape to (N, G), one call of eq. (1), one reshape back. Which order of the two axes matches "
                    "the layout?",
                    "一次 reshape 到 (N, G)，一次式 (1)，再 reshape 回去。哪种轴的顺序符合这个排布？"),),
        reference=flat_advantages, expected=A.advantages_from_flat, cases=_flat_cases, mistakes=FLAT_MISTAKES,
    ),
    Predict(
        id="lm.all_correct_group", notebook="06", name="all_correct_push",
        title=Text("What does an all-correct group teach?", "全对的一组能教会什么？"),
        prompt=Text("All 8 sampled answers to an easy prompt are correct. How much does this group contribute to the "
                    "policy gradient: `\"most\"` of the batch's push, `\"some\"`, or `\"none\"`?",
                    "一道简单题采样的 8 条回答全对。这组对策略梯度的贡献是：整批推力的大部分（`\"most\"`）、一部分"
                    "（`\"some\"`），还是没有（`\"none\"`）？"),
        hints=(Text("Compute the group's advantages first. What multiplies every token's gradient?",
                    "先算这组的优势。每个 token 的梯度乘的是什么？"),),
        options=(Option("most", Text("most", "大部分"),
                        Text("Being right is not enough: GRPO rewards being better than the group's other answers.",
                             "光答对还不够：GRPO 奖励的是比同组其他回答更好。")),
                 Option("some", Text("some", "一部分"),
                        Text("With ε in the denominator there is not even a small push: the numerator is exactly 0.",
                             "分母有 ε，但连一点推力也没有：分子恰好是 0。")),
                 Option("none", Text("none", "没有"))),
        correct=lambda: "none" if not A.group_advantages(np.ones(8)).any() else "some",
        explain=lambda: tr(f"Â = {A.group_advantages(np.ones(8)).tolist()}: a degenerate group (退化组) has no gradient; "
                           "the metric frac_all_correct counts them.",
                           f"Â = {A.group_advantages(np.ones(8)).tolist()}：退化组没有梯度；指标 frac_all_correct 统计的就是它们。"),
    ),
    Compute(
        id="lm.informative_groups", notebook="06", name="n_informative", form="a number",
        title=Text("How many groups carry a signal?", "有多少组带来信号？"),
        prompt=Text("A batch of 16 prompts, every prompt with pass rate p = 0.5, groups of G = 4. How many groups do you "
                    "expect to be informative (not degenerate)? One number.",
                    "一批 16 个提示，每个提示的通过率都是 p = 0.5，每组 G = 4。预计有多少组是有信息的（不是退化组）？一个数。"),
        hints=(Text("Per group: 1 − P(all right) − P(all wrong). Then multiply by the number of prompts.",
                    "每组：1 − P(全对) − P(全错)。再乘以提示数。"),),
        value=lambda: A.expected_informative(0.5, 4, 16), atol=0.05,
        known=(Known("one_kind", Text("You subtracted only one kind of degenerate group; all-right and all-wrong both give no signal.",
                                      "你只减去了一种退化组；全对和全错都没有信号。"),
                     lambda: 16 * (1 - A.p_all_wrong(0.5, 4))),
               Known("degenerate_count", Text("That is the expected number of *degenerate* groups.", "这是退化组的期望个数。"),
                     lambda: 16 - A.expected_informative(0.5, 4, 16))),
    ),
    Predict(
        id="lm.kl_sign", notebook="06", name="kl_can_be_negative",
        title=Text("Can the KL column go negative?", "KL 这一列会变成负数吗？"),
        prompt=Text("The trainer logs the k3 estimate of KL(π_θ‖π_ref), averaged over tokens. Can a single token's k3 be "
                    "negative? Answer `\"yes\"` or `\"no\"`.",
                    "训练器记录的是 KL(π_θ‖π_ref) 的 k3 估计（对 token 平均）。单个 token 的 k3 会是负数吗？回答 `\"yes\"` 或 `\"no\"`。"),
        hints=(Text("Look at f(u) = u − log u − 1 for u > 0: where is its minimum, and what is its value there?",
                    "看 f(u) = u − log u − 1（u > 0）：最小值在哪里，是多少？"),),
        options=(Option("yes", Text("yes", "会"),
                        Text("That is true of k1 = log(π_θ/π_ref), not of k3.", "那是 k1 = log(π_θ/π_ref) 的性质，不是 k3 的。")),
                 Option("no", Text("no", "不会"))),
        correct=lambda: "no" if _k3_min()[0] >= 0 else "yes",
        explain=lambda: tr(f"On a random 64×32 batch the smallest k3 is {_k3_min()[0]:.2e} ≥ 0, while k1 is negative on "
                           f"{100 * _k3_min()[1]:.0f}% of the tokens.",
                           f"在一个随机的 64×32 批次上，k3 的最小值是 {_k3_min()[0]:.2e} ≥ 0，而 k1 在 {100 * _k3_min()[1]:.0f}% 的 token 上为负。"),
    ),
)
