"""Notebook 02 (guess-the-number): the advantage A = Q − V in the lecture notes' state {9, 10, 11}."""
from __future__ import annotations

import numpy as np

from grpo_lab import guess_number as gn
from grpo_lab.credit import discounted_returns
from grpo_lab.exercises._kinds import NUMBER, Case, Compute, Implement, Known, Mistake, Option, Predict, random_label
from grpo_lab.exercises.solutions import reward_to_go
from grpo_lab.i18n import Text, tr

STATE = ({9, 10, 11}, 2)     # the lecture notes' state: candidates {9, 10, 11}, two tries left


def _av():
    return gn.action_values(*STATE)


def _av4():
    return gn.action_values({1, 2, 3, 4}, 2)


def _sign(x: float) -> str:
    return "zero" if abs(x) < 1e-12 else ("positive" if x > 0 else "negative")


def _returns_to_go(rewards):
    return discounted_returns(np.asarray(rewards, dtype=float), 1.0)


def _rtg_cases() -> list[Case]:
    cases = [Case((np.array([0.0, 0.0, 1.0]),), Text("success at the last of 3 guesses", "第 3 次猜中（最后一次）")),
             Case((np.array([-0.1, -0.1, 0.9]),), Text("cost variant: −0.1 per guess, +1 on success",
                                                       "带代价的变体：每猜一次 −0.1，猜中 +1")),
             Case((np.array([1.0]),), Text("one guess, right at once", "只猜一次，一次猜中"))]
    rng = np.random.default_rng(202)
    for k in range(6):
        cases.append(Case((np.round(rng.normal(size=int(rng.integers(2, 9))), 3),), random_label(k + 1)))
    return cases


EXERCISES = (
    Predict(
        id="guess.sign_a9", notebook="02", name="sign_of_a9",
        title=Text("The sign of A(9)", "A(9) 的符号"),
        prompt=Text(
            "The lecture notes' state: candidates {9, 10, 11}, two tries left, the uniform policy. Guessing 9 can win at "
            "once. Is the advantage A(9) = Q(9) − V `\"positive\"`, `\"zero\"` or `\"negative\"`? Decide first; "
            "the reveal cell below shows the values panel.",
            "讲义里的状态：候选 {9, 10, 11}，还剩两次机会，均匀策略。猜 9 有可能一次就中。优势 A(9) = Q(9) − V "
            "是正（`\"positive\"`）、零（`\"zero\"`）还是负（`\"negative\"`）？先作答；下面的揭晓单元会显示数值面板。"),
        hints=(Text("If 9 is wrong, how many candidates are left, and how many tries? Compare with what happens "
                    "after a wrong 10.",
                    "如果 9 猜错，还剩几个候选、几次机会？和猜 10 猜错之后的情形比一比。"),),
        options=(Option("positive", Text("positive", "正"),
                        Text("Winning at once has probability 1/3 for every guess here; what differs is the state a "
                             "wrong guess leaves behind.",
                             "在这里每个猜法一次猜中的概率都是 1/3；不同的是猜错后留下的状态。")),
                 Option("zero", Text("zero", "零"),
                        Text("A = 0 would make 9 exactly as good as the policy's average guess. Is it?",
                             "A = 0 意味着猜 9 恰好和策略的平均水平一样好。是这样吗？")),
                 Option("negative", Text("negative", "负"))),
        correct=lambda: _sign(_av()[9].a),
        explain=lambda: tr(f"Q(9) = {_av()[9].q:.3f}, V = {_av()[9].v:.3f}, so A(9) = {_av()[9].a:+.3f}: a wrong 9 "
                           "leaves two candidates for one try, a wrong 10 leaves one.",
                           f"Q(9) = {_av()[9].q:.3f}，V = {_av()[9].v:.3f}，所以 A(9) = {_av()[9].a:+.3f}："
                           "猜 9 猜错会剩两个候选、一次机会，猜 10 猜错只剩一个。"),
        widget=('from grpo_lab.viz.guess_number import ValuesPanel\n'
                'ValuesPanel(N=20, tries=4, hints="8 higher, 12 lower", policy="uniform")'),
    ),
    Compute(
        id="guess.q_v", notebook="02", name="q2_and_v", form="[Q(2), V]",
        title=Text("Q and V in a new state, by hand", "在新状态下手算 Q 和 V"),
        prompt=Text(
            "A state the notebook does not print: candidates **{1, 2, 3, 4}**, **two** tries left, the uniform policy "
            "(guess uniformly among the candidates, now and on the last try), reward 1 for finding the secret. Compute "
            "Q(2) and V = Σ_a π(a)·Q(a) by hand. Answer `[Q(2), V]` (two decimals).",
            "一个笔记本里没有打印的状态：候选 **{1, 2, 3, 4}**，还剩**两次**机会，均匀策略（现在和最后一次都在候选中"
            "均匀地猜），猜中奖励 1。手算 Q(2) 和 V = Σ_a π(a)·Q(a)。回答 `[Q(2), V]`（两位小数）。"),
        hints=(Text("Q(2): with probability 1/4 the secret is 2; otherwise the host says lower (one candidate left) or "
                    "higher (two candidates left) and the last try guesses uniformly.",
                    "Q(2)：秘密数以 1/4 的概率就是 2；否则主持人说偏小（剩一个候选）或偏大（剩两个候选），最后一次均匀地猜。"),
               Text("By symmetry Q(1) = Q(4) and Q(2) = Q(3); V is their average.",
                    "由对称性 Q(1) = Q(4)，Q(2) = Q(3)；V 是它们的平均。")),
        value=lambda: [_av4()[2].q, _av4()[2].v],
        known=(Known("v_is_max", Text("V^π is the *average* of Q under the policy, not the best Q.",
                                      "V^π 是 Q 在策略下的*平均*，不是最大的 Q。"), lambda: [_av4()[2].q, max(x.q for x in _av4().values())]),
               Known("seed_state", Text("Those are Q(10) and V of the notebook's state {9, 10, 11}; this state has four candidates.",
                                        "这是笔记本里状态 {9, 10, 11} 的 Q(10) 和 V；本题的状态有四个候选。"),
                     lambda: [_av()[10].q, _av()[10].v])),
    ),
    Compute(
        id="guess.a1", notebook="02", name="a1", form=NUMBER,
        title=Text("A(1) in the new state", "新状态下的 A(1)"),
        prompt=Text("Same state {1, 2, 3, 4}, two tries, uniform policy. What is the advantage of guessing the end "
                    "candidate 1, A(1) = Q(1) − V? One number (two decimals).",
                    "同一状态 {1, 2, 3, 4}，两次机会，均匀策略。猜端点候选 1 的优势 A(1) = Q(1) − V 是多少？一个数（两位小数）。"),
        hints=(Text("If 1 is wrong, how many candidates are left for the last try? Compare with a wrong 2.",
                    "如果 1 猜错，最后一次还剩几个候选？和猜 2 猜错比一比。"),),
        value=lambda: _av4()[1].a,
        known=(Known("a2", Text("That is A(2) = A(3). The end candidates have the other sign.",
                                "这是 A(2) = A(3)。端点候选的符号相反。"), lambda: _av4()[2].a),
               Known("seed_a9", Text("That is A(9) of the notebook's three-candidate state.", "这是笔记本里三候选状态的 A(9)。"),
                     lambda: _av()[9].a)),
        explain=lambda: tr("As at {9, 10, 11}: a guess at the edge splits the candidates worst, so it is a bad action "
                           "even when it happens to win.",
                           "和 {9, 10, 11} 一样：猜端点把候选分得最差，所以即使碰巧猜中，它也是个坏动作。"),
    ),
    Implement(
        id="guess.reward_to_go", notebook="02", name="reward_to_go",
        signature="(rewards: np.ndarray (T,)) -> np.ndarray (T,)",
        title=Text("Implement the reward-to-go", "实现后续回报"),
        prompt=Text(
            "Write `reward_to_go(rewards)`: entry t is the sum of the rewards from step t to the end of the episode "
            "(后续回报, L9 p.35), where `rewards[t]` is the reward for the action at step t.",
            "写出 `reward_to_go(rewards)`：第 t 项是从第 t 步到回合结束的奖励之和（后续回报，L9 p.35），"
            "其中 `rewards[t]` 是第 t 步动作得到的奖励。"),
        hints=(Text("Loop backwards from the last step, keeping a running sum; or find a numpy one-liner with a "
                    "reversed array.",
                    "从最后一步往回循环，维护一个累加和；或者用反转数组找一个 numpy 的一行写法。"),
               Text("Test on [0, 0, 1]: every step should get 1.", "用 [0, 0, 1] 测试：每一步都应得到 1。")),
        reference=reward_to_go, expected=_returns_to_go, cases=_rtg_cases,
        mistakes=(
            Mistake("total_return", Text("Every step got the total return R(τ). Rewards *before* step t do not depend on a_t: "
                                         "drop them.",
                                         "每一步都用了总回报 R(τ)。第 t 步之前的奖励与 a_t 无关：去掉它们。"),
                    lambda r: np.full(len(r), float(np.sum(r)))),
            Mistake("starts_after_t", Text("Your sum starts at t + 1 and leaves out rewards[t]. Here rewards[t] is the reward *of* "
                                           "action t, so it belongs to its reward-to-go (the lecture notes' t' > t indexes rewards "
                                           "one step later).",
                                           "你的和从 t + 1 开始，漏掉了 rewards[t]。这里 rewards[t] 就是动作 t 得到的奖励，"
                                           "应当算进去（讲义写 t' > t 是因为它的奖励下标晚一步）。"),
                    lambda r: _returns_to_go(r) - np.asarray(r, dtype=float)),
            Mistake("past_sum", Text("You summed the *past* rewards (a cumulative sum from the start). The reward-to-go sums "
                                     "the future ones.",
                                     "你累加的是*过去*的奖励（从头开始的累积和）。后续回报累加的是未来的奖励。"),
                    lambda r: np.cumsum(np.asarray(r, dtype=float))),
        ),
    ),
)
