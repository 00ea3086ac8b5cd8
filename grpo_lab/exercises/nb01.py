"""Notebook 01 (bandit baselines): the lecture notes' two-armed bandit, by hand and in code."""
from __future__ import annotations

import numpy as np

from grpo_lab import bandit
from grpo_lab.exercises._kinds import INTEGER, NUMBER, Case, Compute, Implement, Known, Mistake, Option, Predict, random_label
from grpo_lab.exercises.solutions import reinforce_estimate
from grpo_lab.i18n import Text, tr

TH = bandit.THETA0


def _grads(b):
    return [bandit.grad_estimate(TH, "A", 1.0, b), bandit.grad_estimate(TH, "B", 0.0, b)]


def _reinforce_cases() -> list[Case]:
    cases = [Case((TH, "A", 1.0, 0.0), Text("lecture notes: θ=−1.1, arm A, no baseline", "讲义：θ=−1.1，A 臂，无基线")),
             Case((TH, "B", 0.0, 0.0), Text("lecture notes: θ=−1.1, arm B, no baseline", "讲义：θ=−1.1，B 臂，无基线")),
             Case((TH, "A", 1.0, 0.5), Text("lecture notes: arm A, b=0.5", "讲义：A 臂，b=0.5")),
             Case((TH, "B", 0.0, 0.5), Text("lecture notes: arm B, b=0.5", "讲义：B 臂，b=0.5")),
             Case((0.0, "B", 0.0, 0.25), Text("θ=0, arm B, b=0.25", "θ=0，B 臂，b=0.25"))]
    rng = np.random.default_rng(101)
    for k in range(8):
        cases.append(Case((float(rng.uniform(-3, 3)), str(rng.choice(["A", "B"])), float(rng.uniform(-1, 2)),
                           float(rng.uniform(-1, 1))), random_label(k + 1)))
    return cases


def _score_b_sign(theta, action, reward, baseline):
    g = bandit.grad_estimate(theta, action, reward, baseline)
    return g if action == "A" else -g


def _prob_not_score(theta, action, reward, baseline):
    p = bandit.prob_a(theta)
    return (reward - baseline) * (p if action == "A" else 1.0 - p)


def _smallest_group(fraction: float) -> int:
    """The smallest G whose group-mean baseline keeps at least ``fraction`` of the true gradient."""
    true = bandit.estimator_stats(TH, 0.0)[0]
    return next(G for G in range(2, 10_000) if bandit.group_baseline_stats(TH, G)[0] / true >= fraction - 1e-12)


def _same_mean_key() -> str:
    m0, _ = bandit.estimator_stats(TH, 0.0)
    m5, _ = bandit.estimator_stats(TH, 0.5)
    return "unchanged" if np.isclose(m0, m5, rtol=0, atol=1e-12) else ("larger" if m5 > m0 else "smaller")


def _same_mean_text() -> str:
    (m0, v0), (m5, v5) = bandit.estimator_stats(TH, 0.0), bandit.estimator_stats(TH, 0.5)
    return tr(f"mean {m0:.4f} with b = 0 and {m5:.4f} with b = 0.5 (E[b·∇log π] = 0); the variance changes: "
              f"{v0:.4f} → {v5:.4f}.",
              f"b = 0 时均值 {m0:.4f}，b = 0.5 时 {m5:.4f}（E[b·∇log π] = 0）；变的是方差：{v0:.4f} → {v5:.4f}。")


EXERCISES = (
    Predict(
        id="bandit.same_mean", notebook="01", name="mean_when_b_rises",
        title=Text("Does a baseline change the expected gradient?", "基线会改变梯度的期望吗？"),
        prompt=Text(
            "Going from b = 0 to b = 0.5, does the **expected** gradient E[ĝ] get `\"larger\"`, `\"smaller\"` "
            "or stay `\"unchanged\"`? Commit to an answer, then run the reveal cell.",
            "从 b = 0 换到 b = 0.5，梯度的**期望** E[ĝ] 会变大（`\"larger\"`）、变小（`\"smaller\"`）还是不变"
            "（`\"unchanged\"`）？先作答，再运行揭晓单元。"),
        hints=(Text("Write E[b·∂log π(a)] as a sum over the two arms, weighted by π(a). What is Σ_a ∂π(a)/∂θ?",
                    "把 E[b·∂log π(a)] 写成两个臂按 π(a) 加权的和。Σ_a ∂π(a)/∂θ 等于多少？"),),
        options=(Option("larger", Text("larger", "变大"),
                        Text("Sample B now pushes too, but sample A pushes less; weigh both by their probability.",
                             "现在 B 样本也在推，但 A 样本推得少了；按各自的概率加权看看。")),
                 Option("smaller", Text("smaller", "变小"),
                        Text("A's estimate shrinks, but B's becomes positive; weigh both by their probability.",
                             "A 的估计变小了，但 B 的变成了正数；按各自的概率加权看看。")),
                 Option("unchanged", Text("unchanged", "不变"))),
        correct=_same_mean_key, explain=_same_mean_text,
    ),
    Compute(
        id="bandit.grad_b025", notebook="01", name="grads_b025", form="[g_A, g_B]",
        title=Text("The bandit gradients at b = 0.25, by hand", "手算 b = 0.25 时的 bandit 梯度"),
        prompt=Text(
            "θ = −1.1, so p = π(A) ≈ 0.25. With a constant baseline (基线) **b = 0.25**, compute by hand the "
            "one-sample estimate ĝ = (R − b)·∂/∂θ log π(a) when the sample is arm A (R = 1) and when it is arm B "
            "(R = 0). Answer `[g_A, g_B]` to two decimals (p = 0.25 is fine).",
            "θ = −1.1，所以 p = π(A) ≈ 0.25。取常数基线 **b = 0.25**，手算单样本估计 ĝ = (R − b)·∂/∂θ log π(a)："
            "采到 A 臂（R = 1）和采到 B 臂（R = 0）各是多少？回答 `[g_A, g_B]`，保留两位小数（用 p = 0.25 即可）。"),
        hints=(Text("First write down ∂/∂θ log σ(θ) and ∂/∂θ log(1 − σ(θ)) in terms of p. The notebook's b = 0.5 "
                    "case is a template.",
                    "先把 ∂/∂θ log σ(θ) 和 ∂/∂θ log(1 − σ(θ)) 用 p 表示出来。笔记本里 b = 0.5 的那一节可以照着做。"),
               Text("For arm B both factors are negative. What is the sign of their product?",
                    "对 B 臂，两个因子都是负的。它们的乘积是什么符号？")),
        value=lambda: _grads(0.25),
        known=(Known("baseline_ignored", Text("Those are the numbers without a baseline (b = 0). Subtract b = 0.25 from R first.",
                                              "这是没有基线（b = 0）时的数。先从 R 里减去 b = 0.25。"), lambda: _grads(0.0)),
               Known("seed_b05", Text("Those are the lecture notes' numbers for b = 0.5; this exercise uses b = 0.25.",
                                      "这是讲义里 b = 0.5 的数；本题用的是 b = 0.25。"), lambda: _grads(0.5)),
               Known("score_b_sign", Text("The sign of g_B is off: ∂/∂θ log π(B) = −p and R − b = −0.25 are both "
                                          "negative, so g_B > 0 — a failure now pushes θ too.",
                                          "g_B 的符号错了：∂/∂θ log π(B) = −p 与 R − b = −0.25 都是负的，所以 g_B > 0——失败也在推动 θ。"),
                     lambda: [_grads(0.25)[0], -_grads(0.25)[1]])),
        explain=lambda: tr("Both samples now push θ up; their mean is still p(1 − p).",
                           "现在两个样本都把 θ 往上推；它们的期望仍是 p(1 − p)。"),
    ),
    Compute(
        id="bandit.optimal_b", notebook="01", name="b_star", form=NUMBER,
        title=Text("The variance-minimising baseline at another θ", "另一个 θ 处方差最小的基线"),
        prompt=Text(
            "The notebook found b* at θ = −1.1. Training has moved on: now **θ = +0.4**. Which constant b makes the "
            "variance of ĝ **zero** here? Answer one number (two decimals; σ(0.4) ≈ 0.599).",
            "笔记本在 θ = −1.1 处求出了 b*。训练继续之后，现在 **θ = +0.4**。这里取哪个常数 b 能让 ĝ 的方差变成**零**？"
            "回答一个数（两位小数；σ(0.4) ≈ 0.599）。"),
        hints=(Text("The variance is zero when both arms give the same ĝ. Set g_A(b) = g_B(b) and solve for b.",
                    "两个臂给出同一个 ĝ 时方差为零。令 g_A(b) = g_B(b)，解出 b。"),
               Text("Which of p and 1 − p is smaller now, and is b* above or below 0.5?",
                    "现在 p 和 1 − p 哪个更小？b* 在 0.5 之上还是之下？")),
        value=lambda: bandit.optimal_baseline(0.4),
        known=(Known("p_not_1_minus_p", Text("That is p = π(A). Check: with this b, do both arms give the same estimate?",
                                             "这是 p = π(A)。验算一下：用这个 b，两个臂给出的估计相同吗？"),
                     lambda: bandit.prob_a(0.4)),
               Known("old_theta", Text("That is b* at the notebook's θ = −1.1; at θ = +0.4 the policy prefers arm A.",
                                       "这是笔记本里 θ = −1.1 处的 b*；在 θ = +0.4 处策略更偏向 A 臂。"),
                     lambda: bandit.optimal_baseline(TH)),
               Known("seed_b05", Text("b = 0.5 is the lecture notes' example, not the optimum: its variance is not zero.",
                                      "b = 0.5 只是讲义的例子，不是最优：它的方差不为零。"), lambda: 0.5)),
        explain=lambda: tr(f"b* = 1 − p = {bandit.optimal_baseline(0.4):.3f}; variance at b*: "
                           f"{bandit.estimator_stats(0.4, bandit.optimal_baseline(0.4))[1]:.1e}. b* tracks the policy: "
                           "a fixed b is optimal only at one θ.",
                           f"b* = 1 − p = {bandit.optimal_baseline(0.4):.3f}；b* 处的方差："
                           f"{bandit.estimator_stats(0.4, bandit.optimal_baseline(0.4))[1]:.1e}。b* 随策略变化："
                           "固定的 b 只在一个 θ 处最优。"),
    ),
    Implement(
        id="bandit.reinforce", notebook="01", name="reinforce_estimate",
        signature='(theta: float, action: "A" or "B", reward: float, baseline: float) -> float',
        title=Text("Implement the one-sample REINFORCE estimate", "实现单样本 REINFORCE 估计"),
        prompt=Text(
            "Write `reinforce_estimate(theta, action, reward, baseline)`: the one-sample REINFORCE estimate "
            "(R − b)·∂/∂θ log π(action) of the bandit, π(A) = σ(θ). The checker tries the lecture notes' numbers and "
            "random θ, arms, rewards and baselines.",
            "写出 `reinforce_estimate(theta, action, reward, baseline)`：bandit 的单样本 REINFORCE 估计 "
            "(R − b)·∂/∂θ log π(action)，π(A) = σ(θ)。检查器会用讲义的数，以及随机的 θ、臂、奖励和基线。"),
        hints=(Text("You need σ(θ) (math.exp is enough) and the derivative of log π for each arm, in terms of p.",
                    "你需要 σ(θ)（用 math.exp 就够）以及每个臂的 log π 对 θ 的导数（用 p 表示）。"),
               Text("Check with the notebook: θ = −1.1, arm A, R = 1, b = 0 must give ≈ +0.75.",
                    "用笔记本验算：θ = −1.1、A 臂、R = 1、b = 0 应得到约 +0.75。")),
        reference=reinforce_estimate, expected=bandit.grad_estimate, cases=_reinforce_cases,
        mistakes=(
            Mistake("sign_flipped", Text("The sign is flipped: (R − b)·∂log π points *up* the objective; you returned its negative.",
                                         "符号反了：(R − b)·∂log π 指向目标函数增大的方向；你返回的是它的相反数。"),
                    lambda *a: -bandit.grad_estimate(*a)),
            Mistake("baseline_ignored", Text("The baseline is ignored: your result does not change with b. Use R − b, not R.",
                                             "基线被忽略了：你的结果不随 b 变化。要用 R − b，而不是 R。"),
                    lambda th, a, r, b: bandit.grad_estimate(th, a, r, 0.0)),
            Mistake("score_b_sign", Text("Arm B's score has the wrong sign: ∂/∂θ log(1 − σ(θ)) = −p, not +p.",
                                         "B 臂的得分函数符号错了：∂/∂θ log(1 − σ(θ)) = −p，不是 +p。"), _score_b_sign),
            Mistake("prob_not_score", Text("You multiplied by a probability instead of the derivative of log π: "
                                           "∂/∂θ log σ(θ) = 1 − p for A and −p for B.",
                                           "你乘的是一个概率，而不是 log π 的导数：A 为 1 − p，B 为 −p。"), _prob_not_score),
        ),
    ),
    Compute(
        id="bandit.group_bias", notebook="01", name="smallest_G", form=INTEGER,
        title=Text("How large a group keeps 97 % of the expected gradient?", "组要多大，梯度的期望才能保留真梯度的 97 %？"),
        prompt=Text(
            "Take b = the mean reward of the G samples of the step, the sample's own reward included (GRPO). The "
            "notebook showed that the expected estimate is then a fraction of the true gradient p(1 − p). What is the "
            "**smallest G** for which that fraction is at least **0.97**? One integer.",
            "取 b = 本步 G 个样本的平均奖励，包括这个样本自己（GRPO 的做法）。笔记本说明了此时估计的期望是真梯度 "
            "p(1 − p) 的某个比例。这个比例至少为 **0.97** 的**最小 G** 是多少？回答一个整数。"),
        hints=(Text("Write the fraction as a function of G, set it ≥ 0.97 and solve for G; round up.",
                    "把这个比例写成 G 的函数，令它 ≥ 0.97，解出 G，向上取整。"),),
        value=lambda: _smallest_group(0.97), atol=0.01,
        known=(Known("rounded_down", Text("At that G the fraction is still just below 0.97: round G *up*.",
                                          "在这个 G 处比例还略低于 0.97：G 要向*上*取整。"),
                     lambda: _smallest_group(0.97) - 1),
               Known("one_over_G", Text("That solves 1/G = 0.03 for the *bias* 1/G ≤ 0.03 without rounding up; the "
                                        "smallest integer G with (G − 1)/G ≥ 0.97 is one more.",
                                        "这是由 1/G = 0.03 直接解出的，没有向上取整；满足 (G − 1)/G ≥ 0.97 的最小整数 G 还要再加一。"),
                     lambda: 1 / 0.03)),
        explain=lambda: tr("(G − 1)/G ≥ 0.97 ⇔ G ≥ 33.3: the group-mean baseline's bias shrinks only like 1/G; the "
                           "leave-one-out mean (RLOO) has none at any G.",
                           "(G − 1)/G ≥ 0.97 ⇔ G ≥ 33.3：组均值基线的偏差只按 1/G 缩小；留一法均值（RLOO）在任何 G 下都没有偏差。"),
    ),
)
