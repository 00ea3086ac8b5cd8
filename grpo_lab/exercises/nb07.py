"""Notebook 07 (the 2025 branches): RLOO and Dr. GRPO, by hand and in code."""
from __future__ import annotations

import numpy as np
import torch

from grpo_lab import advantages as A
from grpo_lab import length_bias as lb
from grpo_lab import losses as L
from grpo_lab import methods
from grpo_lab.exercises._kinds import NUMBER, Case, Compute, Implement, Known, Mistake, Option, Predict, random_label
from grpo_lab.exercises.solutions import dr_grpo_mean, rloo_advantages
from grpo_lab.i18n import Text, tr

DR = methods.get("dr_grpo").agg          # "seq-mean-token-sum-norm", 1/(B·C)
# 7.1 and 7.2: a group of five that the notebook never prints (its frozen batches have G = 4)
HAND_GROUP = [1, 1, 0, 0, 0]


def _rloo_cases() -> list[Case]:
    fixed = [([[1, 0, 0, 0]], Text("lecture notes: 1,0,0,0", "讲义：1,0,0,0")),
             ([[1, 1, 0, 0]], Text("lecture notes: 1,1,0,0", "讲义：1,1,0,0")),
             ([[1, 1, 1, 1]], Text("all equal", "全部相等")), ([[1, 0], [0.3, 0.9]], "G=2"),
             ([[0.2, 0.5, 0.9, 0.1, 0.4]], Text("continuous rewards", "连续奖励"))]
    cases = [Case((np.array(r, dtype=float),), label) for r, label in fixed]
    rng = np.random.default_rng(707)
    for k in range(5):
        N, G = int(rng.integers(1, 5)), int(rng.integers(2, 9))
        cases.append(Case((np.round(rng.random((N, G)), 2),), random_label(k + 1, f"{N}×{G}")))
    return cases


def _dr_cases() -> list[Case]:
    rng = np.random.default_rng(708)
    cases = []
    for lengths, T, C, label in (([3, 9], 9, 16, Text("lengths 3 and 9, C=16", "长度 3 和 9，C=16")),
                                 ([12, 12, 6, 24], 24, 32, Text("the lecture notes' lengths, C=32", "讲义里的长度，C=32")),
                                 ([4, 4], 4, 4, Text("C equal to the longest", "C 等于最长的长度"))):
        m = lb.response_mask(lengths, T)
        v = torch.where(m > 0, torch.as_tensor(rng.normal(size=m.shape)), torch.full(m.shape, 5.0, dtype=torch.float64))
        cases.append(Case((v, m, C), label))
    for k in range(4):
        B, T = int(rng.integers(2, 6)), int(rng.integers(3, 10))
        m = lb.response_mask(rng.integers(1, T + 1, size=B), T)
        v = torch.where(m > 0, torch.as_tensor(rng.normal(size=m.shape)), torch.full(m.shape, -3.0, dtype=torch.float64))
        cases.append(Case((v, m, T + int(rng.integers(1, 9))), random_label(k + 1)))
    return cases


GSPO_RHO = (1.3, 0.8, 1.1, 1.0)


def _gspo_s() -> float:
    logp = torch.log(torch.tensor([GSPO_RHO], dtype=torch.float64))
    return float(L.sequence_ratio(logp, torch.zeros_like(logp), torch.ones_like(logp))[0])


def _dr(values, mask, max_len):
    return L.aggregate(values, mask, DR, max_len=max_len)


EXERCISES = (
    Compute(
        id="family.dr_grpo_by_hand", notebook="07", name="dr_grpo_11000", form="[Â_1, …, Â_5]",
        title=Text("Dr. GRPO's advantages for 1,1,0,0,0", "Dr. GRPO 对 1,1,0,0,0 的优势"),
        prompt=Text("Dr. GRPO drops the ÷ std of eq. (1). Compute its advantages for the rewards 1, 1, 0, 0, 0 (G = 5). "
                    "Five numbers, two decimals.",
                    "Dr. GRPO 去掉了式 (1) 里的 ÷ std。算出它对奖励 1, 1, 0, 0, 0（G = 5）的优势。五个数，两位小数。"),
        hints=(Text("Only the baseline is left: the group mean.", "只剩下基线：组均值。"),),
        value=lambda: A.group_advantages(HAND_GROUP, scale=methods.get("dr_grpo").adv_scale),
        known=(Known("grpo", Text("Those are GRPO's advantages, with ÷ std. Dr. GRPO keeps only r − mean.",
                                  "这是 GRPO 的优势，带 ÷ std。Dr. GRPO 只保留 r − mean。"),
                     lambda: A.group_advantages(HAND_GROUP)),
               Known("rloo", Text("Those are RLOO's: the mean of the *other* rewards. Dr. GRPO subtracts the mean of all G.",
                                  "这是 RLOO 的：减去*其他*奖励的均值。Dr. GRPO 减去全部 G 个的均值。"),
                     lambda: A.rloo_advantages(HAND_GROUP))),
        explain=lambda: tr("Each success gets +0.60 instead of GRPO's +1.22: without ÷ std the scale of Â is the reward's own.",
                           "每个成功得到 +0.60，而不是 GRPO 的 +1.22：去掉 ÷ std 后，Â 的尺度就是奖励本身的尺度。"),
    ),
    Compute(
        id="family.rloo_by_hand", notebook="07", name="rloo_11000", form="[Â_1, …, Â_5]",
        title=Text("RLOO's advantages for 1,1,0,0,0", "RLOO 对 1,1,0,0,0 的优势"),
        prompt=Text("RLOO subtracts from each reward the mean of the **other** G − 1 rewards of its group. Compute its "
                    "advantages for 1, 1, 0, 0, 0 (G = 5). Five numbers, two decimals.",
                    "RLOO 从每个奖励里减去同组**其他** G − 1 个奖励的均值。算出它对 1, 1, 0, 0, 0（G = 5）的优势。五个数，两位小数。"),
        hints=(Text("For the first response the others are 1, 0, 0, 0; for the third they are 1, 1, 0, 0.",
                    "对第一条回答，其他的是 1, 0, 0, 0；对第三条，其他的是 1, 1, 0, 0。"),),
        value=lambda: A.rloo_advantages(HAND_GROUP),
        known=(Known("included_self", Text("You included each reward in its own baseline (the mean of all G): that is Dr. GRPO's.",
                                           "你把每个奖励算进了它自己的基线（全部 G 个的均值）：那是 Dr. GRPO 的。"),
                     lambda: A.group_advantages(HAND_GROUP, scale="none")),),
        explain=lambda: tr("RLOO = G/(G − 1)·(r − mean): Dr. GRPO's advantages scaled by 5/4, with a baseline that does "
                           "not contain the reward it is subtracted from.",
                           "RLOO = G/(G − 1)·(r − mean)：Dr. GRPO 的优势乘以 5/4，而且基线里不含被减去它的那个奖励。"),
    ),
    Implement(
        id="advantages.rloo", notebook="07", name="rloo_advantages",
        signature="(rewards: np.ndarray (N, G)) -> np.ndarray (N, G)",
        title=Text("Implement RLOO's leave-one-out advantages", "实现 RLOO 的留一法优势"),
        prompt=Text("Write `rloo_advantages(rewards)` for N groups of G ≥ 2 rewards (one per row): r_i minus the mean of the "
                    "other G − 1 rewards of the same row.",
                    "写出 `rloo_advantages(rewards)`，输入 N 组、每组 G ≥ 2 个奖励（每行一组）：r_i 减去同一行其他 G − 1 个奖励的均值。"),
        hints=(Text("The sum of the others is the row sum minus r_i — no loop needed.", "其他奖励之和就是行和减去 r_i——不需要循环。"),),
        reference=rloo_advantages, expected=A.rloo_advantages, cases=_rloo_cases,
        mistakes=(
            Mistake("included_self", Text("You included r_i in its own baseline (the mean of all G). RLOO leaves it out, which "
                                          "is what makes it unbiased.",
                                          "你把 r_i 算进了它自己的基线（全部 G 个的均值）。RLOO 把它排除在外，这正是它无偏的原因。"),
                    lambda r: A.group_advantages(r, scale="none")),
            Mistake("divided_by_std", Text("You divided by the group std as well; RLOO does not rescale.",
                                           "你还除以了组标准差；RLOO 不做缩放。"), lambda r: A.group_advantages(r)),
            Mistake("divided_by_G", Text("The mean of the others divides their sum by G − 1, not by G.",
                                         "其他奖励的均值是它们的和除以 G − 1，不是 G。"),
                    lambda r: np.asarray(r, dtype=float) - (np.sum(r, axis=1, keepdims=True) - r) / np.shape(r)[1]),
            Mistake("sign_flipped", Text("The sign is flipped: a reward above the others' mean must get a positive advantage.",
                                         "符号反了：高于其他奖励均值的奖励应得到正的优势。"), lambda r: -A.rloo_advantages(r)),
        ),
    ),
    Implement(
        id="agg.dr_grpo", notebook="07", name="dr_grpo_mean",
        signature="(values (B, T), mask (B, T), max_len: int) -> scalar Tensor",
        title=Text("Implement Dr. GRPO's constant normaliser", "实现 Dr. GRPO 的常数归一化"),
        prompt=Text("Write `dr_grpo_mean(values, mask, max_len)`: eq. (6) with 1/|y_i| replaced by the constant 1/C, "
                    "C = `max_len` (the generation budget, ≥ T), averaged over the B responses. Padding (mask == 0) may "
                    "hold anything.",
                    "写出 `dr_grpo_mean(values, mask, max_len)`：把式 (6) 里的 1/|y_i| 换成常数 1/C，C = `max_len`"
                    "（生成预算，≥ T），再对 B 条回答平均。填充位置（mask == 0）上的值可以是任意数。"),
        hints=(Text("Every valid token gets the same weight. Which two numbers multiply to the denominator?",
                    "每个有效 token 的权重相同。分母是哪两个数的乘积？"),),
        reference=dr_grpo_mean, expected=_dr, cases=_dr_cases, grad_wrt=(0,),
        mistakes=(
            Mistake("eq6", Text("That is eq. (6): each response divided by its own length. Dr. GRPO divides by the constant C.",
                                "这是式 (6)：每条回答除以自己的长度。Dr. GRPO 除以常数 C。"),
                    lambda v, m, C: L.aggregate(v, m, "seq-mean-token-mean")),
            Mistake("eq7", Text("That is eq. (7): the batch's token count as denominator. Dr. GRPO uses B·C.",
                                "这是式 (7)：以全批 token 数为分母。Dr. GRPO 用 B·C。"), lambda v, m, C: L.aggregate(v, m, "token-mean")),
            Mistake("no_1_over_B", Text("You divided by C but not by B: the total over the batch / C is what verl's "
                                        "seq-mean-token-sum-norm computes, B times Dr. GRPO's 1/(B·C).",
                                        "你除了 C 却没除以 B：整批总和 / C 是 verl 的 seq-mean-token-sum-norm 的算法，"
                                        "是 Dr. GRPO 的 1/(B·C) 的 B 倍。"),
                    lambda v, m, C: _dr(v, m, C) * v.shape[0]),
            Mistake("padded_length", Text("You divided by the padded length T instead of max_len = C.",
                                          "你除以的是填充后的长度 T，而不是 max_len = C。"),
                    lambda v, m, C: _dr(v, m, v.shape[1])),
            Mistake("padding_values", Text("The values at padding positions went into your sum; multiply by the mask first.",
                                           "填充位置的值进了你的求和；先乘上 mask。"),
                    lambda v, m, C: _dr(v, torch.ones_like(m), C)),
        ),
    ),
    Compute(
        id="family.gspo_ratio", notebook="07", name="gspo_s", form=NUMBER,
        title=Text("GSPO's sequence ratio, by hand", "手算 GSPO 的序列比率"),
        prompt=Text("GSPO replaces the per-token ratios of a response by one sequence ratio "
                    "$s_i=\\exp\\big(\\tfrac1{|y_i|}\\sum_t\\log\\rho_{i,t}\\big)$. A 4-token response has per-token ratios "
                    "ρ = 1.3, 0.8, 1.1, 1.0. Compute s_i (three decimals).",
                    "GSPO 把一条回答的逐 token 比率换成一个序列比率 "
                    "$s_i=\\exp\\big(\\tfrac1{|y_i|}\\sum_t\\log\\rho_{i,t}\\big)$。一条 4 个 token 的回答，逐 token 比率为 "
                    "ρ = 1.3, 0.8, 1.1, 1.0。算出 s_i（三位小数）。"),
        hints=(Text("exp of a mean of logs is a geometric mean: the |y_i|-th root of the product.",
                    "对数平均再取 exp 就是几何平均：乘积开 |y_i| 次方。"),),
        value=_gspo_s, atol=0.002,
        known=(Known("arithmetic_mean", Text("That is the arithmetic mean of the ratios; GSPO averages their *logs* (a "
                                             "geometric mean).",
                                             "这是比率的算术平均；GSPO 平均的是它们的*对数*（几何平均）。"),
                     lambda: float(np.mean(GSPO_RHO))),
               Known("product", Text("That is the product π_θ(y)/π_old(y), without the 1/|y_i| power: the sequence ratio "
                                     "of a long response would explode.",
                                     "这是乘积 π_θ(y)/π_old(y)，没有 1/|y_i| 次方：长回答的序列比率会爆炸。"),
                     lambda: float(np.prod(GSPO_RHO)))),
        explain=lambda: tr(f"s = {_gspo_s():.4f}: inside [0.8, 1.2], so with ε = 0.2 this response is not clipped, "
                           "although under eq. (3) the token at ρ = 1.3 would be (if Â > 0). With GSPO's own ε "
                           "(3e-4 / 4e-4) the whole response would be clipped when Â > 0: GSPO clips whole responses.",
                           f"s = {_gspo_s():.4f}：在 [0.8, 1.2] 之内，所以 ε = 0.2 时这条回答不被裁剪，"
                           "尽管在式 (3) 下 ρ = 1.3 的那个 token 会被裁剪（若 Â > 0）。用 GSPO 自己的 ε（3e-4 / 4e-4）时，"
                           "Â > 0 的这条回答会被整条裁剪：GSPO 裁剪的是整条回答。"),
    ),
)
