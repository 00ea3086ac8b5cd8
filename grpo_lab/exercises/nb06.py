"""Notebook 06 (a GRPO loop on a tiny LM): the trainer's layout, degenerate groups, the KL column."""
from __future__ import annotations

import functools

import numpy as np
import torch

from grpo_lab import advantages as A
from grpo_lab import losses as L
from grpo_lab.exercises._kinds import NUMBER, Case, Compute, Implement, Known, Mistake, Option, Predict
from grpo_lab.exercises.solutions import step_loss
from grpo_lab.lm import broken_runs
from grpo_lab.i18n import Text, tr


def _step(logp, old_logp, rewards, mask, group_size, *, mode="seq-mean-token-mean", **adv_kwargs):
    adv = A.advantages_from_flat(np.asarray(rewards, dtype=float), group_size, **adv_kwargs)
    return L.grpo_loss(logp, old_logp, torch.as_tensor(adv, dtype=logp.dtype), mask, mode=mode).loss


def _interleaved(logp, old_logp, rewards, mask, group_size):
    r = np.asarray(rewards, dtype=float)
    adv = A.group_advantages(r.reshape(group_size, -1).T).T.reshape(-1)   # groups taken as every N-th response
    return L.grpo_loss(logp, old_logp, torch.as_tensor(adv), mask).loss


def _step_cases() -> list[Case]:
    rng = np.random.default_rng(606)
    cases = []
    for k, (N, G, T) in enumerate([(2, 4, 5), (3, 2, 6), (2, 8, 4), (4, 4, 7), (3, 4, 3)]):
        lengths = rng.integers(1, T + 1, size=N * G)
        mask = torch.as_tensor((np.arange(T)[None, :] < lengths[:, None]).astype(float))
        logp = torch.as_tensor(-rng.uniform(0.1, 3.0, (N * G, T)))
        old = logp + torch.as_tensor(rng.normal(0, 0.3 if k else 0.0, (N * G, T)))
        r = (rng.random(N * G) < 0.5).astype(float) if k % 2 == 0 else np.round(rng.random(N * G), 2)
        r[:G] = r[0]                                                     # the first prompt's group is degenerate
        cases.append(Case((logp, old, r, mask, G), Text(f"N={N} prompts × G={G}, T={T}" + (", ρ ≡ 1" if k == 0 else ""),
                                                          f"N={N} 个提示 × G={G}，T={T}" + ("，ρ ≡ 1" if k == 0 else ""))))
    return cases


def _variant(logp, old_logp, rewards, mask, group_size, *, eps="outside", pad="masked", clip="min", ratio="exp",
             beta=0.0):
    """The step loss with one typical slip (the defaults give the reference)."""
    r = torch.as_tensor(np.asarray(rewards, dtype=float), dtype=logp.dtype).reshape(-1, group_size)
    var = r.var(dim=1, unbiased=False, keepdim=True)
    den = {"outside": var.sqrt() + 1e-4, "missing": var.sqrt(), "inside": (var + 1e-4).sqrt()}[eps]
    adv = torch.where(var == 0, torch.zeros_like(r), (r - r.mean(1, keepdim=True)) / den).reshape(-1, 1)
    log_ratio = logp - old_logp
    rho = torch.exp(log_ratio) if ratio == "exp" else log_ratio
    per_token = {"min": -torch.minimum(rho * adv, rho.clamp(0.8, 1.2) * adv), "none": -rho * adv,
                 "clamp_only": -rho.clamp(0.8, 1.2) * adv}[clip]
    if beta:
        per_token = per_token + beta * (torch.exp(-log_ratio) + log_ratio - 1)     # k3 against old_logp
    m = mask.to(logp.dtype)
    if pad == "masked":
        return ((per_token * m).sum(-1) / m.sum(-1)).mean()
    if pad == "over_T":
        return ((per_token * m).sum(-1) / m.shape[-1]).mean()
    return per_token.mean(-1).mean()                                                 # padding tokens included


STEP_MISTAKES = (
    Mistake("interleaved", Text("Your groups are the wrong responses: reshape(-1, group_size) puts prompt k's G responses "
                                "in row k; reshape(group_size, -1) mixes prompts.",
                                "你分组用错了回答：reshape(-1, group_size) 把第 k 个提示的 G 条回答放在第 k 行；"
                                "reshape(group_size, -1) 会把不同提示混在一起。"), _interleaved),
    Mistake("bessel_std", Text("Eq. (1) with the sample (Bessel) std — torch.std's default. Here: the population std "
                               "(unbiased=False / correction=0).",
                               "式 (1) 用了样本（Bessel）标准差——torch.std 的默认值。这里要总体标准差（unbiased=False / correction=0）。"),
            lambda *a: _step(*a, std="sample")),
    Mistake("whole_batch", Text("You normalised the rewards over the whole batch; eq. (1) works within each prompt's group.",
                                "你对整批奖励做了标准化；式 (1) 是在每个提示的组内做。"),
            lambda lp, olp, r, m, G: _step(lp, olp, r, m, len(np.asarray(r)))),
    Mistake("token_mean", Text("You aggregated with eq. (7), the token mean; the step uses eq. (6): per response, then over "
                               "responses.",
                               "你用式 (7)（批次平均）做了聚合；这一步用式 (6)：先在每条回答内平均，再对回答平均。"),
            lambda *a: _step(*a, mode="token-mean")),
    Mistake("no_std", Text("You subtracted the group mean but did not divide by the std (Dr. GRPO's advantage).",
                           "你减了组均值但没有除以标准差（Dr. GRPO 的优势）。"), lambda *a: _step(*a, scale="none")),
    Mistake("eps_missing", Text("ε is left out of eq. (1): divide by (std + 1e-4), not by the std alone (the 1e-4 is small, "
                                "but the check is exact).",
                                "式 (1) 里漏了 ε：要除以 (std + 1e-4)，而不是只除以 std（1e-4 很小，但检查是精确的）。"),
            lambda *a: _variant(*a, eps="missing")),
    Mistake("eps_in_sqrt", Text("ε went inside the square root: eq. (1) divides by std + ε, not by √(var + ε).",
                                "ε 放进了平方根里：式 (1) 除以 std + ε，而不是 √(var + ε)。"),
            lambda *a: _variant(*a, eps="inside")),
    Mistake("padding_counted", Text("Padding is counted: eq. (6) averages over each response's own |y_i| tokens (mask.sum(-1)), "
                                    "not over all T positions.",
                                    "把填充也算进去了：式 (6) 在每条回答自己的 |y_i| 个 token 上平均（mask.sum(-1)），而不是在全部 T 个位置上。"),
            lambda *a: _variant(*a, pad="over_T")),
    Mistake("padding_unmasked", Text("The padding positions are in the loss: multiply the per-token term by the mask before "
                                     "averaging over each response's |y_i| tokens.",
                                     "填充位置进入了损失：先把每个 token 的项乘以 mask，再在每条回答的 |y_i| 个 token 上平均。"),
            lambda *a: _variant(*a, pad="unmasked")),
    Mistake("no_clip", Text("No clipping: eq. (3) takes min(ρ·Â, clip(ρ, 1 − ε, 1 + ε)·Â) with ε = 0.2; you used ρ·Â alone.",
                            "没有裁剪：式 (3) 取 min(ρ·Â, clip(ρ, 1 − ε, 1 + ε)·Â)，ε = 0.2；你只用了 ρ·Â。"),
            lambda *a: _variant(*a, clip="none")),
    Mistake("clamp_without_min", Text("You clamped ρ but dropped the min: eq. (3) is min(ρ·Â, clip(ρ)·Â), so the clip "
                                      "only ever lowers the objective.",
                                      "你裁剪了 ρ，却去掉了 min：式 (3) 是 min(ρ·Â, clip(ρ)·Â)，裁剪只会让目标变小。"),
            lambda *a: _variant(*a, clip="clamp_only")),
    Mistake("exp_forgotten", Text("The exp is forgotten: ρ = exp(logp − old_logp); logp − old_logp is the log-ratio.",
                                  "漏了 exp：ρ = exp(logp − old_logp)；logp − old_logp 只是对数比率。"),
            lambda *a: _variant(*a, ratio="log")),
    Mistake("kl_left_in", Text("A KL term is left in: this step has β = 0, so the loss is the clipped term alone.",
                               "留下了 KL 项：这一步 β = 0，损失只有裁剪项。"),
            lambda *a: _variant(*a, beta=0.04)),
    Mistake("sign_flipped", Text("The sign is flipped: you returned the objective; the optimiser minimises the loss −ℓ.",
                                 "符号反了：你返回的是目标；优化器最小化的是损失 −ℓ。"), lambda *a: -_step(*a)),
)


BROKEN_SHOWN = ("reward_mean", "frac_all_correct", "frac_all_wrong", "entropy", "kl", "adv_abs_mean", "group_reward_std")
MYSTERY = "noisy_std"          # the broken run whose metrics the exercise shows (the subtle one: the reward looks healthy)


@functools.lru_cache(maxsize=None)
def _broken_summary():
    return broken_runs.summary(broken_runs.load())


BROKEN_HEAD = Text("| metric (mean of the last 20 steps) | healthy | mystery run |",
                   "| 指标（最后 20 步的平均） | 正常运行 | 待诊断的运行 |")


def _broken_table(head: str) -> str:
    s = _broken_summary()
    rows = "\n".join(f"| {m} | {s.loc['healthy', m]:.3f} | {s.loc[MYSTERY, m]:.3f} |" for m in BROKEN_SHOWN)
    return head + "\n| --- | --- | --- |\n" + rows


def _broken_key() -> str:
    """The broken run whose summary row is the mystery row (read from the data, not typed in)."""
    s = _broken_summary()
    (key,) = [r for r in s.index if r != "healthy" and np.allclose(s.loc[r], s.loc[MYSTERY])]
    return key


def _healthy_fracs() -> tuple[float, float]:
    """frac_all_correct and frac_all_wrong of the healthy run, rounded as the prompt shows them."""
    s = _broken_summary()
    return round(float(s.loc["healthy", "frac_all_correct"]), 3), round(float(s.loc["healthy", "frac_all_wrong"]), 3)


def _healthy_informative() -> float:
    """From the prompt's rounded numbers (the unrounded fractions give a result within the tolerance)."""
    correct, wrong = _healthy_fracs()
    return broken_runs.BASE["prompts_per_step"] * (1 - correct - wrong)


def _k3_min() -> float:
    g = torch.Generator().manual_seed(6)
    logp = -torch.rand(64, 32, generator=g, dtype=torch.float64) * 3
    ref = logp + torch.randn(64, 32, generator=g, dtype=torch.float64)
    return float(L.kl_penalty(logp, ref, "k3").min()), float((L.kl_penalty(logp, ref, "k1") < 0).double().mean())


EXERCISES = (
    Implement(
        id="lm.step_loss", notebook="06", name="step_loss",
        signature="(logp, old_logp, rewards, mask, group_size) -> scalar Tensor",
        title=Text("Steps 3–6 of the loop: from rewards to the loss", "循环的第 3–6 步：从奖励到损失"),
        prompt=Text("The trainer's `step` samples, scores, then turns a flat reward vector into one scalar loss. Write "
                    "`step_loss(logp, old_logp, rewards, mask, group_size)` from torch operations (not `grpo_lab`): eq. (1) "
                    "within each prompt's group — responses k·G … k·G + G − 1 answer prompt k, population std, ε = 1e-4, "
                    "all-equal -> 0 — then the clipped term of eq. (3) with ε = 0.2 on every token, then eq. (6). No KL. "
                    "`logp`, `old_logp`, `mask` are (N·G, T), `rewards` is (N·G,) numpy. The checker also backpropagates.",
                    "训练器的 `step` 采样、打分，然后把扁平的奖励向量变成一个标量损失。用 torch 运算（不用 `grpo_lab`）写出 "
                    "`step_loss(logp, old_logp, rewards, mask, group_size)`：先在每个提示的组内做式 (1)——第 k·G … k·G + G − 1 "
                    "条回答属于提示 k，总体标准差，ε = 1e-4，全相等 -> 0——再对每个 token 做式 (3) 的裁剪项（ε = 0.2），最后做式 (6)。"
                    "没有 KL。`logp`、`old_logp`、`mask` 是 (N·G, T)，`rewards` 是 (N·G,) 的 numpy 数组。检查器还会做反向传播。"),
        hints=(Text("Three stages, each a few lines you wrote in notebooks 03, 04 and 05: reshape the rewards to (N, G), "
                    "normalise, reshape to (N·G, 1) to broadcast over the tokens.",
                    "三个阶段，每个都是你在 03、04、05 写过的几行：把奖励 reshape 成 (N, G)，标准化，再 reshape 成 (N·G, 1) 以便在 token 上广播。"),
               Text("torch.std uses the sample std by default: pass unbiased=False.",
                    "torch.std 默认是样本标准差：传 unbiased=False。")),
        reference=step_loss, expected=_step, cases=_step_cases, mistakes=STEP_MISTAKES, grad_wrt=(0,),
    ),
    Compute(
        id="lm.groups_with_gradient", notebook="06", name="groups_with_signal", form=NUMBER,
        title=Text("Read the metric table: how many groups teach?", "读指标表：有多少组在教？"),
        prompt=Text(f"A healthy run of the trainer (32 prompts per step) logs, averaged over its last 20 steps, "
                    f"frac_all_correct = {_healthy_fracs()[0]:.3f} and "
                    f"frac_all_wrong = {_healthy_fracs()[1]:.3f}. How many of the 32 groups "
                    "of a step carry a gradient, on average? One number, two decimals.",
                    f"训练器的一次正常运行（每步 32 个提示）在最后 20 步平均记录到 frac_all_correct = "
                    f"{_healthy_fracs()[0]:.3f}，frac_all_wrong = "
                    f"{_healthy_fracs()[1]:.3f}。一步的 32 组里平均有多少组带来梯度？一个数，两位小数。"),
        hints=(Text("Which groups have Â = 0 for every response? Both fractions count them.",
                    "哪些组的每条回答 Â 都是 0？两个比例数的都是它们。"),),
        value=_healthy_informative, atol=0.025,
        known=(Known("one_kind", Text("You removed only one kind of degenerate group; all-correct and all-wrong groups both "
                                      "give no gradient.",
                                      "你只去掉了一种退化组；全对和全错的组都没有梯度。"),
                     lambda: 32 * (1 - _healthy_fracs()[0])),
               Known("degenerate", Text("That is the number of groups *without* a gradient.", "这是*没有*梯度的组数。"),
                     lambda: 32 - _healthy_informative())),
        explain=lambda: tr("In this run about two thirds of a step's groups are all correct and teach nothing: the gradient "
                           "comes from about a third of the batch (last 20 steps of one seed).",
                           "在这次运行中，一步里约三分之二的组全对、什么也教不了：梯度只来自约三分之一的批次（一个随机种子的最后 20 步）。"),
    ),
    Compute(
        id="lm.informative_groups", notebook="06", name="n_informative", form=NUMBER,
        title=Text("How many groups carry a signal?", "有多少组带来信号？"),
        prompt=Text("A batch of 16 prompts, every prompt with pass rate p = 0.5, groups of G = 4. How many groups do you "
                    "expect to be informative (not degenerate)? One number.",
                    "一批 16 个提示，每个提示的通过率都是 p = 0.5，每组 G = 4。预计有多少组是有信息量的（不是退化组）？一个数。"),
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
    Predict(
        id="lm.broken_run", notebook="06", name="what_broke",
        title=Text("Name what went wrong from the metric table", "从指标表说出哪里出了问题"),
        prompt=Text("One of §7's broken runs, beside the healthy one (same seed and size, 100 steps):\n\n" + _broken_table(BROKEN_HEAD.en)
                    + "\n\nWhat was changed: `\"no_warm_start\"` (no SFT warm start), `\"noisy_std\"` (÷σ on rewards "
                    "with a little noise) or `\"lr_high\"` (learning rate 30× too high)? Decide before the cached runs are "
                    "shown below.",
                    "§7 中一个出了问题的运行，和正常运行并排（同样的随机种子和规模，100 步）：\n\n" + _broken_table(BROKEN_HEAD.zh)
                    + "\n\n改动的是什么：`\"no_warm_start\"`（没有 SFT 热启动）、`\"noisy_std\"`（对带一点噪声的奖励 ÷σ）"
                    "还是 `\"lr_high\"`（学习率高 30 倍）？在下面显示缓存的运行之前先作答。"),
        hints=(Text("Reward and accuracy look healthy. Which columns are not, and what do they measure: the size of Â, and "
                    "the spread of the rewards inside a group?",
                    "奖励和准确率看起来正常。哪几列不正常？它们量的是什么：Â 的大小，以及组内奖励的差异？"),),
        options=(Option("no_warm_start", Text("no warm start", "没有热启动"),
                        Text("Without a warm start nearly every group is all wrong (frac_all_wrong ≈ 1) and the reward "
                             "stays ≈ 0; here the reward is healthy.",
                             "没有热启动时几乎每组全错（frac_all_wrong ≈ 1），奖励一直约为 0；这里奖励是正常的。")),
                 Option("noisy_std", Text("÷σ on noisy rewards", "噪声奖励上 ÷σ")),
                 Option("lr_high", Text("learning rate too high", "学习率太高"),
                        Text("A learning rate far too high shows as a KL to π_ref that explodes and a reward that "
                             "collapses; here both are normal.",
                             "学习率太高表现为到 π_ref 的 KL 暴涨、奖励崩溃；这里两者都正常。"))),
        correct=_broken_key,
        explain=lambda: tr(f"The mystery run is {_broken_key()}: its mean |Â| is {_broken_summary().loc[MYSTERY, 'adv_abs_mean']:.2f} "
                           f"against {_broken_summary().loc['healthy', 'adv_abs_mean']:.2f} at the same reward — ÷σ blows "
                           "noise in all-correct groups up to unit advantages (notebook 03 §6). The table below shows all four runs.",
                           f"待诊断的运行是 {_broken_key()}：同样的奖励下它的平均 |Â| 是 {_broken_summary().loc[MYSTERY, 'adv_abs_mean']:.2f}，"
                           f"正常运行是 {_broken_summary().loc['healthy', 'adv_abs_mean']:.2f}——÷σ 把全对组里的噪声放大成单位大小的优势"
                           "（笔记本 03 §6）。下面的表格显示全部四个运行。"),
    ),
)
