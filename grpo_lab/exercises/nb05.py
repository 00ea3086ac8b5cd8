"""Notebook 05 (length bias): eqs. (6) and (7) by hand and in code."""
from __future__ import annotations

import numpy as np
import torch

from grpo_lab import length_bias as lb
from grpo_lab import losses as L
from grpo_lab.exercises._kinds import Case, Compute, Implement, Known, Mistake, Option, Predict, random_label
from grpo_lab.exercises.solutions import seq_mean, token_mean
from grpo_lab.i18n import Text, tr

SEQ, TOK = "seq-mean-token-mean", "token-mean"
SEED_LENGTHS, SEED_REWARDS = [12, 12, 6, 24], [1, 1, 0, 0]      # the group of notebook 05 §1


def _agg(mode):
    return lambda values, mask: L.aggregate(values, mask, mode)


def _padding_in_denominator(mode):
    return lambda values, mask: L.aggregate(values * mask, torch.ones_like(mask), mode)


def _mask_in_denominator_only(mode):
    """The mask counts the tokens (the denominator) but the padding values are summed (the numerator)."""
    def f(values, mask):
        per_token = L.token_weights(mask, mode)                                  # 1/|y_i|/B or 1/Σ|y|, 0 on padding
        row_w = per_token.max(-1, keepdim=True).values                           # the weight of a real token, per row
        return (values * row_w).sum()
    return f


def _padding_values(mode):
    return lambda values, mask: L.aggregate(values, torch.ones_like(mask), mode)


def _agg_cases() -> list[Case]:
    cases = []
    rng = np.random.default_rng(505)

    def batch(lengths, T, label, pad=7.0):
        m = lb.response_mask(lengths, T)                                  # (B, T)
        v = torch.as_tensor(rng.normal(size=m.shape))
        v = torch.where(m > 0, v, torch.full_like(v, pad))               # padding holds junk
        cases.append(Case((v, m), label))

    batch([3, 9], 9, Text("lengths 3 and 9", "长度 3 和 9"))
    batch([12, 12, 6, 24], 24, Text("the lecture notes' lengths 12, 12, 6, 24", "讲义里的长度 12, 12, 6, 24"))
    batch([5, 5, 5], 8, Text("equal lengths 5, padded to 8", "等长 5，填充到 8"))
    batch([1, 4], 6, Text("a one-token response", "一条只有一个 token 的回答"))
    for k in range(5):
        B = int(rng.integers(2, 7))
        T = int(rng.integers(3, 12))
        batch(rng.integers(1, T + 1, size=B), T, random_label(k + 1), pad=float(rng.normal() * 10))
    return cases


PAD_DENOM = Text("Padding is counted: you divided by padded positions too (the padded length T, or B·T). Only tokens with "
                 "mask == 1 count.",
                 "把填充也算进去了：你连填充位置也一起除了（填充后的长度 T，或 B·T）。只有 mask == 1 的 token 才算。")
PAD_NUMERATOR = Text("Padding is counted in the sum: you used the mask to count the tokens (the denominator) but summed "
                     "the values at padding positions too (the numerator). Multiply by the mask (or select with it) "
                     "before you sum.",
                     "把填充算进了求和：你用 mask 数了 token 个数（分母），却把填充位置的值也加进了分子。"
                     "求和之前先乘上 mask（或用它筛选）。")
PAD_VALUES = Text("Padding is counted: the values at padding positions (mask == 0) went into your sum. Multiply by the mask "
                  "(or select with it) first.",
                  "把填充也算进去了：填充位置（mask == 0）的值进了你的求和。先乘上 mask（或用它筛选）。")


def _first_token_weights(mode):
    w = L.token_weights(lb.response_mask([3, 9]), mode)                  # (2, 9)
    return [float(w[0, 0]), float(w[1, 0])]


def _gw():
    return lb.group_weights(SEED_LENGTHS, SEED_REWARDS, schemes=("grpo",))


def _harder_key() -> str:
    short, long_ = np.abs(_gw().per_token[0, 2]), np.abs(_gw().per_token[0, 3])   # the 6- and 24-token wrong answers
    return "equal" if np.isclose(short, long_) else ("short" if short > long_ else "long")


def _harder_text() -> str:
    g = _gw()
    return tr(f"per token: the 6-token answer {-g.per_token[0, 2]:+.4f}, the 24-token one {-g.per_token[0, 3]:+.4f} "
              f"(×{g.per_token[0, 2] / g.per_token[0, 3]:.0f}); summed over each answer both get {-g.total[0, 2]:+.3f}: "
              "eq. (6) makes every *response* weigh the same, so a long wrong answer is penalised less per token.",
              f"每个 token：6 个 token 的回答 {-g.per_token[0, 2]:+.4f}，24 个 token 的 {-g.per_token[0, 3]:+.4f}"
              f"（×{g.per_token[0, 2] / g.per_token[0, 3]:.0f}）；按整条回答求和两者都是 {-g.total[0, 2]:+.3f}："
              "式 (6) 让每条*回答*等权，所以长的错误回答每个 token 受罚更轻。")


EXERCISES = (
    Predict(
        id="length.push_harder", notebook="05", name="pushed_harder",
        title=Text("Which wrong answer is pushed harder under eq. (6)?", "式 (6) 下哪条错误回答被压得更狠？"),
        prompt=Text("The group of §1: rewards 1, 1, 0, 0, lengths 12, 12, 6, 24, so both wrong answers have Â = −1. Under "
                    "eq. (6), is **each token** of the `\"short\"` (6-token) or of the `\"long\"` (24-token) wrong answer "
                    "pushed down harder, or are they `\"equal\"`? Decide first; the reveal cell then shows the panel with equal "
                    "lengths — set the wrong answers to 6 and 24 tokens yourself.",
                    "§1 的那组：奖励 1, 1, 0, 0，长度 12, 12, 6, 24，所以两条错误回答的 Â 都是 −1。在式 (6) 下，"
                    "是短的（`\"short\"`，6 个 token）还是长的（`\"long\"`，24 个 token）错误回答的**每个 token** 被往下压"
                    "得更狠，还是一样（`\"equal\"`）？先作答；揭晓单元随后显示长度相等的面板——自己把两条错误回答设成 6 和 24 个 token。"),
        hints=(Text("Eq. (6) first averages over the tokens of each response. How much of Â_i does one token of a "
                    "24-token response receive?",
                    "式 (6) 先在每条回答内部对 token 求平均。24 个 token 的回答里，一个 token 分到 Â_i 的多少？"),),
        options=(Option("short", Text("the short one", "短的")),
                 Option("long", Text("the long one", "长的"),
                        Text("The long answer gets more tokens pushed, but each of them gets less: Â_i is divided by |y_i|.",
                             "长回答被推的 token 更多，但每个分到的更少：Â_i 被 |y_i| 除了。")),
                 Option("equal", Text("equal", "一样"),
                        Text("Equal per-token pushes are eq. (7)'s property (or Dr. GRPO's 1/C), not eq. (6)'s.",
                             "每个 token 推力相同是式 (7)（或 Dr. GRPO 的 1/C）的性质，不是式 (6) 的。"))),
        correct=_harder_key, explain=_harder_text,
        widget="from grpo_lab.viz.length_bias import GroupWeightsPanel\nGroupWeightsPanel(len3=12, len4=12)",   # neutral: equal lengths
    ),
    Compute(
        id="length.weights_seq", notebook="05", name="weights_eq6", form=Text("[c for length 3, c for length 9]", "[长度 3 的 c, 长度 9 的 c]"),
        title=Text("Aggregation coefficients for lengths 3 and 9 under eq. (6)", "式 (6) 下长度 3 和 9 的聚合系数"),
        prompt=Text("A batch of B = 2 responses of 3 and 9 tokens. Under eq. (6) the loss is $\\sum_{i,t} c_{i,t}\\,v_{i,t}$: "
                    "$c_{i,t}$ is the **aggregation coefficient** of token t (how much of the batch loss it carries; the "
                    "notebook's per-token weight $w$ also contains −Â, $c$ does not). What is c for one token of each "
                    "response? Answer `[c_3, c_9]`, three decimals.",
                    "一批 B = 2 条回答，长度分别为 3 和 9 个 token。在式 (6) 下损失是 $\\sum_{i,t} c_{i,t}\\,v_{i,t}$："
                    "$c_{i,t}$ 是 token t 的**聚合系数**（它在整批损失里占多少；笔记本里每个 token 的权重 $w$ 还包含 −Â，"
                    "$c$ 不包含）。每条回答里一个 token 的 c 是多少？回答 `[c_3, c_9]`，三位小数。"),
        hints=(Text("Write eq. (6) for B = 2 and read off the factor c in front of one v_{i,t}.",
                    "把 B = 2 时的式 (6) 写出来，读出某个 v_{i,t} 前面的系数。"),),
        value=lambda: _first_token_weights(SEQ), atol=0.002,
        known=(Known("no_1_over_B", Text("You divided by |y_i| but not by the number of responses B = 2.",
                                         "你除了 |y_i|，但没有除以回答数 B = 2。"),
                     lambda: [2 * w for w in _first_token_weights(SEQ)]),
               Known("eq7_for_eq6", Text("Those are eq. (7)'s weights (÷ the batch's token count). Eq. (6) divides by each "
                                         "response's own length, then by B.",
                                         "这是式 (7) 的权重（÷ 全批 token 数）。式 (6) 先除以每条回答自己的长度，再除以 B。"),
                     lambda: _first_token_weights(TOK))),
    ),
    Compute(
        id="length.weights_token", notebook="05", name="weights_eq7", form=Text("[c for length 3, c for length 9]", "[长度 3 的 c, 长度 9 的 c]"),
        title=Text("… and under eq. (7)", "……以及式 (7) 下"),
        prompt=Text("The same two responses (3 and 9 tokens, padded to T = 9) under eq. (7): the aggregation coefficient c "
                    "of one token of each. Answer `[c_3, c_9]`, three decimals.",
                    "同样两条回答（3 和 9 个 token，填充到 T = 9），在式 (7) 下：各自一个 token 的聚合系数 c。"
                    "回答 `[c_3, c_9]`，三位小数。"),
        hints=(Text("Eq. (7) has one denominator for the whole batch. Which tokens does it count?",
                    "式 (7) 对整批只有一个分母。它数的是哪些 token？"),),
        value=lambda: _first_token_weights(TOK), atol=0.002,
        known=(Known("eq6_for_eq7", Text("Those are eq. (6)'s weights. Eq. (7) divides every token by the same number.",
                                         "这是式 (6) 的权重。式 (7) 给每个 token 除以同一个数。"),
                     lambda: _first_token_weights(SEQ)),
               Known("padding_counted", Text("You divided by B·T = 18, counting the 6 padding positions. Eq. (7) divides by "
                                             "the real tokens, Σ|y_i| = 12.",
                                             "你除以了 B·T = 18，把 6 个填充位置也数进去了。式 (7) 除以真实 token 数 Σ|y_i| = 12。"),
                     lambda: [1 / 18, 1 / 18])),
        explain=lambda: tr("Every token weighs the same, so the 9-token response carries 3× the total coefficient of the "
                           "3-token one (3× the total push when the two have the same |Â|).",
                           "每个 token 等权，所以 9 个 token 的回答的总系数是 3 个 token 的 3 倍（两者 |Â| 相同时，总推力也是 3 倍）。"),
    ),
    Implement(
        id="agg.seq_mean", notebook="05", name="seq_mean",
        signature="(values (B, T), mask (B, T)) -> scalar Tensor",
        title=Text("Implement eq. (6), the sequence mean", "实现式 (6)，序列平均"),
        prompt=Text("Write `seq_mean(values, mask)`: eq. (6), the mean over each response's own tokens, then over the B "
                    "responses. `mask` is 1 on response tokens and 0 on padding; padding positions may hold anything.",
                    "写出 `seq_mean(values, mask)`：式 (6)，先在每条回答自己的 token 上求平均，再对 B 条回答求平均。"
                    "`mask` 在回答 token 上为 1、填充位置上为 0；填充位置的值可以是任意数。"),
        hints=(Text("values * mask zeroes the padding; mask.sum(-1) counts each response's tokens.",
                    "values * mask 会把填充位置置零；mask.sum(-1) 数出每条回答的 token 数。"),),
        reference=seq_mean, expected=_agg(SEQ), cases=_agg_cases, grad_wrt=(0,),
        mistakes=(
            Mistake("eq7_for_eq6", Text("That is eq. (7), the token mean (one denominator for the whole batch). Eq. (6) "
                                        "divides each response by its own length first.",
                                        "这是式 (7)，批次平均（整批一个分母）。式 (6) 先让每条回答除以自己的长度。"), _agg(TOK)),
            Mistake("padding_in_denominator", PAD_DENOM, _padding_in_denominator(SEQ)),
            Mistake("padding_values", PAD_VALUES, _padding_values(SEQ)),
            Mistake("mask_in_denominator_only", PAD_NUMERATOR, _mask_in_denominator_only(SEQ)),
            Mistake("token_sum", Text("You summed over each response's tokens instead of averaging them.",
                                      "你对每条回答的 token 求了和，而不是求平均。"), _agg("seq-mean-token-sum")),
        ),
    ),
    Implement(
        id="agg.token_mean", notebook="05", name="token_mean",
        signature="(values (B, T), mask (B, T)) -> scalar Tensor",
        title=Text("Implement eq. (7), the token mean", "实现式 (7)，批次平均"),
        prompt=Text("Write `token_mean(values, mask)`: eq. (7), the sum over all response tokens of the batch divided by "
                    "their number. Padding positions (mask == 0) may hold anything.",
                    "写出 `token_mean(values, mask)`：式 (7)，全批所有回答 token 之和除以它们的个数。"
                    "填充位置（mask == 0）的值可以是任意数。"),
        hints=(Text("One sum on top, one count below, both over the whole batch.", "分子一个和、分母一个计数，都是对整批。"),),
        reference=token_mean, expected=_agg(TOK), cases=_agg_cases, grad_wrt=(0,),
        mistakes=(
            Mistake("eq6_for_eq7", Text("That is eq. (6), the sequence mean (each response divided by its own length). "
                                        "Eq. (7) has one denominator for the whole batch.",
                                        "这是式 (6)，序列平均（每条回答除以自己的长度）。式 (7) 整批只有一个分母。"), _agg(SEQ)),
            Mistake("padding_in_denominator", PAD_DENOM, _padding_in_denominator(TOK)),
            Mistake("padding_values", PAD_VALUES, _padding_values(TOK)),
            Mistake("mask_in_denominator_only", PAD_NUMERATOR, _mask_in_denominator_only(TOK)),
            Mistake("divided_by_B", Text("You divided the token sum by the number of responses B, not by the number of tokens.",
                                         "你用回答数 B 去除 token 之和，而不是用 token 数。"), _agg("seq-mean-token-sum")),
        ),
    ),
)
