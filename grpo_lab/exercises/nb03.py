"""Notebook 03 (group advantages): eq. (1) by hand and in code, degenerate groups, difficulty bias."""
from __future__ import annotations

import numpy as np

from grpo_lab import advantages as A
from grpo_lab import bias
from grpo_lab.exercises._kinds import NUMBER, Case, Compute, Implement, Known, Mistake, Option, Predict, random_label
from grpo_lab.exercises.solutions import group_advantages
from grpo_lab.i18n import Text, tr

EPS = A.DEFAULT_EPS


# --- typical wrong versions of eq. (1), each built from grpo_lab.advantages ------------
def _eps_in_sqrt(r):
    r = np.asarray(r, dtype=float)
    centred = r - r.mean(axis=1, keepdims=True)                        # (N, G)
    return centred / np.sqrt(A.group_std(r) ** 2 + EPS)[:, None]


def _nan_on_degenerate(r):
    out = A.group_advantages(r).copy()
    out[A.degenerate_mask(r)] = np.nan
    return out


GROUP_MISTAKES = (
    Mistake("bessel_std", Text("You used the sample (Bessel, ÷(G − 1)) std — what torch.std and TRL compute. Eq. (1) "
                               "here uses the population std (÷G), as the lecture notes do: np.std's default, ddof=0.",
                               "你用的是样本标准差（Bessel 校正，÷(G − 1)）——torch.std 和 TRL 的做法。这里的式 (1) "
                               "和讲义一样用总体标准差（÷G）：np.std 的默认值 ddof=0。"),
            lambda r: A.group_advantages(r, std="sample")),
    Mistake("eps_left_out", Text("ε is left out: divide by std + 1e-4, not by the std alone (visible on groups with a "
                                 "tiny spread).",
                                 "漏掉了 ε：应除以 std + 1e-4，而不是只除以 std（在差异很小的组上看得出来）。"),
            lambda r: A.group_advantages(r, eps=0.0)),
    Mistake("eps_in_sqrt", Text("ε went inside the square root, √(var + ε). Eq. (1) here adds it to the std: std + ε.",
                                "ε 放进了根号里，√(var + ε)。这里的式 (1) 是加在标准差上：std + ε。"), _eps_in_sqrt),
    Mistake("nan_on_degenerate", Text("An all-equal group (退化组 degenerate group) gave NaN: 0/0. It must give exactly 0 — "
                                      "no gradient, and no NaN to poison the batch.",
                                      "全部相等的组（退化组）得到了 NaN：0/0。它必须恰好是 0——没有梯度，也不能让 NaN 污染整批。"),
            _nan_on_degenerate),
    Mistake("sign_flipped", Text("The sign is flipped: a reward above the group mean must get Â > 0.",
                                 "符号反了：高于组均值的奖励应当得到 Â > 0。"), lambda r: -A.group_advantages(r)),
    Mistake("no_std", Text("You subtracted the mean but did not divide by the std (that is Dr. GRPO's choice, not eq. (1)).",
                           "你减了均值，但没有除以标准差（那是 Dr. GRPO 的做法，不是式 (1)）。"),
            lambda r: A.group_advantages(r, scale="none")),
    Mistake("whole_batch", Text("You normalised over the whole batch. Each row is one group: mean and std per row "
                                "(axis=1, keepdims=True).",
                                "你对整批做了标准化。每一行是一组：均值和标准差要按行算（axis=1, keepdims=True）。"),
            lambda r: A.group_advantages(np.asarray(r, dtype=float).reshape(1, -1)).reshape(np.shape(r))),
    Mistake("wrong_axis", Text("You normalised the columns. Each *row* is a group of G responses to one prompt.",
                               "你按列做了标准化。每一*行*才是同一提示的 G 条回答。"),
            lambda r: np.zeros(np.shape(r)) if np.shape(r)[0] == 1 else A.group_advantages(np.asarray(r, dtype=float).T).T),
)


def _group_cases() -> list[Case]:
    fixed = [([[1, 1, 0, 0]], Text("lecture notes: 1,1,0,0", "讲义：1,1,0,0")),
             ([[1, 0, 0, 0]], Text("lecture notes: 1,0,0,0", "讲义：1,0,0,0")),
             ([[1, 1, 1, 0]], Text("lecture notes: 1,1,1,0", "讲义：1,1,1,0")),
             ([[1, 1, 1, 1]], Text("all equal: 1,1,1,1", "全部相等：1,1,1,1")),
             ([[0, 0, 0], [2, 2, 2]], Text("two all-equal groups", "两个全部相等的组")),
             ([[1, 1, 1, 1, 0]], "1,1,1,1,0"),
             ([[0.2, 0.21, 0.19, 0.2], [3, 7, 1, 9]], Text("a tiny and a wide spread", "一组差异极小，一组差异很大")),
             ([[0.5, 0.5, 0.5, 0.5], [1, 0, 1, 0]], Text("an all-equal group next to 1,0,1,0", "全部相等的组与 1,0,1,0 并列"))]
    cases = [Case((np.array(r, dtype=float),), label) for r, label in fixed]
    rng = np.random.default_rng(303)
    for k in range(6):
        N, G = int(rng.integers(2, 6)), int(rng.integers(2, 9))
        if k % 2:
            r = rng.normal(size=(N, G)) * 10.0 ** rng.uniform(-2, 0.7)
            r[0] = r[0, 0]                                   # one degenerate row
        else:
            r = (rng.random((N, G)) < rng.uniform(0.2, 0.8)).astype(float)
        cases.append(Case((r,), random_label(k + 1, f"{N}×{G}")))
    return cases


def _one_pass_rate(p: float):
    """A prompt mix in which every prompt has pass rate ``p`` (the spread of the logits is 0)."""
    return bias.PromptMix(mean_logit=float(np.log(p / (1 - p))), spread=0.0)


# --- predict: one reward of 1,1,1,1 flips ----------------------------------------------
FLIP_OPTIONS = {"a": (0.0, 0.0, 0.0, 0.0), "b": (0.58, 0.58, 0.58, -1.73), "c": (1.0, 1.0, 1.0, -1.0),
                "d": (0.25, 0.25, 0.25, -0.75)}


def _flip_key() -> str:
    adv = np.round(A.group_advantages([1, 1, 1, 0]), 2)
    (key,) = [k for k, v in FLIP_OPTIONS.items() if np.allclose(adv, v)]
    return key


def _flip_text() -> str:
    before, after = A.group_advantages([1, 1, 1, 1]), A.group_advantages([1, 1, 1, 0])
    return tr(f"1,1,1,1 -> {np.round(before, 2).tolist()} (degenerate: no gradient); 1,1,1,0 -> {np.round(after, 2).tolist()}: "
              "one slip on an easy prompt is punished hard, the three right answers get a small push.",
              f"1,1,1,1 -> {np.round(before, 2).tolist()}（退化组：没有梯度）；1,1,1,0 -> {np.round(after, 2).tolist()}："
              "简单题上的一次失误被重罚，三条对的回答只得到一点推力。")


def _fmt_opt(v) -> str:
    return ", ".join(f"{x:+.2f}" for x in v)


EXERCISES = (
    Predict(
        id="advantages.flip_one", notebook="03", name="flip_prediction",
        title=Text("One reward of 1,1,1,1 flips", "1,1,1,1 中翻转一个奖励"),
        prompt=Text(
            "A group has rewards 1, 1, 1, 1, so every Â is 0. Now the last response is wrong: 1, 1, 1, 0. Which "
            "advantages (population std: ÷G, not G − 1) do you expect? "
            + " · ".join(f"`\"{k}\"`: {_fmt_opt(v)}" for k, v in FLIP_OPTIONS.items())
            + ". Decide first; the reveal cell then shows the group editor at 1, 1, 1, 1 — flip the last reward yourself.",
            "一组的奖励是 1, 1, 1, 1，所以每个 Â 都是 0。现在最后一条答错了：1, 1, 1, 0。你预计优势（总体标准差：÷G，不是 G − 1）是哪一组？"
            + " · ".join(f"`\"{k}\"`：{_fmt_opt(v)}" for k, v in FLIP_OPTIONS.items())
            + "。先作答；揭晓单元随后显示停在 1, 1, 1, 1 的组编辑器——自己翻转最后一个奖励。"),
        hints=(Text("The advantages of a group always sum to 0, and here the std is √(q(1 − q)) with q the fraction of 1s.",
                    "一组的优势之和总是 0；这里标准差是 √(q(1 − q))，q 是 1 所占的比例。"),),
        options=(Option("a", Text(_fmt_opt(FLIP_OPTIONS["a"]), _fmt_opt(FLIP_OPTIONS["a"])),
                        Text("1,1,1,1 was degenerate; one flip makes the group informative again.",
                             "1,1,1,1 是退化组；翻转一个奖励就让这组重新有了信息。")),
                 Option("b", Text(_fmt_opt(FLIP_OPTIONS["b"]), _fmt_opt(FLIP_OPTIONS["b"]))),
                 Option("c", Text(_fmt_opt(FLIP_OPTIONS["c"]), _fmt_opt(FLIP_OPTIONS["c"])),
                        Text("±1 is what the balanced group 1,1,0,0 gets. Do these four values sum to 0?",
                             "±1 是均衡组 1,1,0,0 的结果。这四个数加起来是 0 吗？")),
                 Option("d", Text(_fmt_opt(FLIP_OPTIONS["d"]), _fmt_opt(FLIP_OPTIONS["d"])),
                        Text("That is r − mean without ÷ std (Dr. GRPO). Eq. (1) also divides by the std, here √(0.75·0.25).",
                             "那是不除以标准差的 r − mean（Dr. GRPO）。式 (1) 还要除以标准差，这里是 √(0.75·0.25)。"))),
        correct=_flip_key, explain=_flip_text,
        widget="from grpo_lab.viz.advantages import GroupEditorPanel\nGroupEditorPanel().set_rewards([1, 1, 1, 1])",   # neutral: flip one yourself
    ),
    Compute(
        id="advantages.hand_population", notebook="03", name="adv_11110_population", form="[Â_1, Â_2, Â_3, Â_4, Â_5]",
        title=Text("Â for 1,1,1,1,0 with the population std", "用总体标准差手算 1,1,1,1,0 的 Â"),
        prompt=Text("Compute by hand the advantages of eq. (1) for the rewards 1, 1, 1, 1, 0 with the **population** std "
                    "(÷G). Answer a list of five numbers (two decimals; ε can be ignored).",
                    "用**总体**标准差（÷G）手算奖励 1, 1, 1, 1, 0 的式 (1) 优势。回答五个数的列表（两位小数；ε 可忽略）。"),
        hints=(Text("Mean first; then the squared deviations, their mean, and its square root.",
                    "先算均值；再算离差平方、它们的平均值和平方根。"),
               Text("With q = 4/5 ones, the population std of 0/1 rewards is √(q(1 − q)).",
                    "当 1 的比例 q = 4/5 时，0/1 奖励的总体标准差是 √(q(1 − q))。")),
        value=lambda: A.group_advantages([1, 1, 1, 1, 0]),
        exact=lambda: A.group_advantages([1, 1, 1, 1, 0], eps=0.0),
        known=(Known("bessel_std", Text("Those use the sample std (÷(G − 1) = 4). This exercise asks for the population "
                                        "std (÷G = 5); the next one asks for the sample std.",
                                        "这些用的是样本标准差（÷(G − 1) = 4）。本题要总体标准差（÷G = 5）；下一题才要样本标准差。"),
                     lambda: A.group_advantages([1, 1, 1, 1, 0], std="sample")),
               Known("no_std", Text("You subtracted the mean but did not divide by the std.", "你减了均值，但没有除以标准差。"),
                     lambda: A.group_advantages([1, 1, 1, 1, 0], scale="none"))),
    ),
    Compute(
        id="advantages.hand_sample", notebook="03", name="adv_11110_sample", form="[Â_1, Â_2, Â_3, Â_4, Â_5]",
        title=Text("… and with the sample std", "……再用样本标准差"),
        prompt=Text("The same rewards 1, 1, 1, 1, 0 with the **sample** (Bessel) std, ÷(G − 1), as TRL computes it. "
                    "Five numbers, two decimals.",
                    "同样的奖励 1, 1, 1, 1, 0，改用**样本**（Bessel）标准差 ÷(G − 1)，也就是 TRL 的算法。五个数，两位小数。"),
        hints=(Text("Only the std changes: the sum of squared deviations is divided by 4 instead of 5.",
                    "只有标准差变了：离差平方和除以 4 而不是 5。"),),
        value=lambda: A.group_advantages([1, 1, 1, 1, 0], std="sample"),
        exact=lambda: A.group_advantages([1, 1, 1, 1, 0], std="sample", eps=0.0),
        known=(Known("population_std", Text("Those use the population std (÷G); here divide the squared deviations by G − 1.",
                                            "这些用的是总体标准差（÷G）；这里离差平方和要除以 G − 1。"),
                     lambda: A.group_advantages([1, 1, 1, 1, 0])),),
        explain=lambda: tr("Every |Â| shrinks by √((G − 1)/G) = √0.8.", "每个 |Â| 都缩小为 √((G − 1)/G) = √0.8 倍。"),
    ),
    Implement(
        id="advantages.group", notebook="03", name="group_advantages",
        signature="(rewards: np.ndarray (N, G)) -> np.ndarray (N, G)",
        title=Text("Implement eq. (1)", "实现式 (1)"),
        prompt=Text(
            "Write `group_advantages(rewards)` for N groups of G rewards (one group per row): eq. (1) with the "
            "population std and ε = 1e-4 added to the std; an all-equal group (退化组) must give exactly 0, not NaN. "
            "The checker tries the lecture notes' groups, all-equal groups, tiny and wide spreads and random batches.",
            "写出 `group_advantages(rewards)`，输入 N 组、每组 G 个奖励（每行一组）：式 (1)，总体标准差，ε = 1e-4 "
            "加在标准差上；全部相等的组（退化组）必须恰好得到 0，而不是 NaN。检查器会用讲义的组、退化组、"
            "差异极小和极大的组以及随机批次。"),
        hints=(Text("numpy reductions take axis=1 and keepdims=True, so that (N, G) − (N, 1) broadcasts.",
                    "numpy 的归约可以传 axis=1 和 keepdims=True，这样 (N, G) − (N, 1) 能正确广播。"),
               Text("Try your function on [[1, 1, 1, 1]] and on [[0.2, 0.21, 0.19, 0.2]] before you run the check.",
                    "运行检查之前，先在 [[1, 1, 1, 1]] 和 [[0.2, 0.21, 0.19, 0.2]] 上试试你的函数。")),
        reference=group_advantages, expected=A.group_advantages, cases=_group_cases, mistakes=GROUP_MISTAKES,
    ),
    Compute(
        id="advantages.lone_success", notebook="03", name="lone_success_adv", form=NUMBER,
        title=Text("A lone success in a group of 6", "6 个里唯一的一次成功"),
        prompt=Text("A hard prompt: of G = 6 responses exactly one is right (rewards 1, 0, 0, 0, 0, 0). What is the right "
                    "response's Â (population std)? One number, two decimals (then, on paper: what is it for any G?).",
                    "一道难题：G = 6 条回答里恰好一条对（奖励 1, 0, 0, 0, 0, 0）。这条对的回答的 Â（总体标准差）是多少？"
                    "一个数，两位小数（然后在纸上想一想：任意 G 时是多少？）。"),
        hints=(Text("mean = 1/6; the std of 0/1 rewards with a fraction q of ones is √(q(1 − q)).",
                    "均值 = 1/6；1 的比例为 q 的 0/1 奖励，标准差是 √(q(1 − q))。"),),
        value=lambda: bias.lone_success_advantage(6),
        exact=lambda: bias.lone_success_advantage(6, eps=0.0),
        known=(Known("failure_adv", Text("That is the Â of each of the five wrong responses; the question asks for the right one.",
                                         "这是五条错误回答各自的 Â；题目问的是那条对的。"),
                     lambda: A.group_advantages([1, 0, 0, 0, 0, 0])[1]),
               Known("no_std", Text("You subtracted the mean but did not divide by the std.", "你减了均值，但没有除以标准差。"),
                     lambda: 1 - 1 / 6),
               Known("sample_std", Text("That uses the sample std (÷(G − 1)); the question asks for the population std (÷G).",
                                        "这用的是样本标准差（÷(G − 1)）；题目要总体标准差（÷G）。"),
                     lambda: bias.lone_success_advantage(6, std="sample"))),
        explain=lambda: tr("√5 = 2.24, and for any G: √(G − 1) (with the sample std √((G − 1)²/G)). The rarer the "
                           "success, the larger its push — the difficulty bias (难度偏差) of ÷ std.",
                           "√5 = 2.24，任意 G 时为 √(G − 1)（样本标准差下为 √((G − 1)²/G)）。成功越罕见，推力越大——"
                           "这就是 ÷ std 带来的难度偏差。"),
    ),
    Compute(
        id="advantages.p_degenerate", notebook="03", name="p_no_gradient", form=NUMBER,
        title=Text("How often does a group give no gradient?", "一组有多大概率给不出梯度？"),
        prompt=Text("A prompt with pass rate p = 0.4 and groups of G = 3. What is the probability that the group is "
                    "degenerate (退化组, all rewards equal)? One number, two decimals.",
                    "一道通过率 p = 0.4 的题，每组 G = 3。这组是退化组（奖励全部相等）的概率是多少？一个数，两位小数。"),
        hints=(Text("There are two ways for three 0/1 rewards to be all equal.", "三个 0/1 奖励全部相等，有两种方式。"),),
        value=lambda: A.p_degenerate(0.4, 3),
        known=(Known("only_all_wrong", Text("You counted only the all-wrong groups; an all-correct group is degenerate too.",
                                            "你只算了全错的组；全对的组同样是退化组。"), lambda: A.p_all_wrong(0.4, 3)),
               Known("only_all_correct", Text("You counted only the all-correct groups; an all-wrong group is degenerate too.",
                                              "你只算了全对的组；全错的组同样是退化组。"), lambda: A.p_all_correct(0.4, 3)),
               Known("informative", Text("That is the probability that the group is *informative*; the question asks for the rest.",
                                         "这是该组*有信息量*的概率；题目问的是其余部分。"), lambda: 1 - A.p_degenerate(0.4, 3))),
    ),
    Compute(
        id="advantages.difficulty_weights", notebook="03", name="total_push_k1_k4", form=Text("[W for k = 1, W for k = 4]", "[k = 1 时的 W, k = 4 时的 W]"),
        title=Text("How much push does a group hand out?", "一组一共分出多少推力？"),
        prompt=Text("A group of G = 8 with 0/1 rewards hands out a total push W = Σ_i |Â_i| (eq. 1, population std, ε "
                    "ignored). Compute W for a hard prompt with **k = 1** correct answer and for a medium one with "
                    "**k = 4**. Answer `[W_1, W_4]`, two decimals.",
                    "一组 G = 8、奖励为 0/1 的回答，一共分出的推力是 W = Σ_i |Â_i|（式 1，总体标准差，忽略 ε）。分别算出"
                    "难题（**k = 1** 条正确）和中等题（**k = 4** 条正确）的 W。回答 `[W_1, W_4]`，两位小数。"),
        hints=(Text("With q = k/G, a correct answer gets √((1 − q)/q) and a wrong one −√(q/(1 − q)); count how many of each.",
                    "令 q = k/G，正确回答得到 √((1 − q)/q)，错误回答得到 −√(q/(1 − q))；再数一数各有几条。"),),
        value=lambda: [float(bias.weight_by_k(8)[1]), float(bias.weight_by_k(8)[4])],
        exact=lambda: [float(bias.weight_by_k(8, eps=0.0)[1]), float(bias.weight_by_k(8, eps=0.0)[4])],
        known=(Known("no_std", Text("Those are Σ|r − mean| without ÷ std (Dr. GRPO's advantages). Eq. (1) divides by the "
                                    "group's std, which is small for k = 1.",
                                    "这是不除以标准差的 Σ|r − mean|（Dr. GRPO 的优势）。式 (1) 还要除以组标准差，k = 1 时它很小。"),
                     lambda: [float(bias.weight_by_k(8, scale="none")[1]), float(bias.weight_by_k(8, scale="none")[4])]),
               Known("correct_only", Text("You added only the correct answers' Â; the wrong ones are pushed too (|Â| counts both).",
                                          "你只加了正确回答的 Â；错误回答也被推（|Â| 两者都算）。"),
                     lambda: [bias.lone_success_advantage(8), 4 * float(A.group_advantages([1] * 4 + [0] * 4)[0])])),
        explain=lambda: tr(f"W_1 = {bias.weight_by_k(8, eps=0.0)[1]:.2f} vs W_4 = {bias.weight_by_k(8, eps=0.0)[4]:.2f}: "
                           "÷ std shrinks the gap between hard and medium prompts (without it: "
                           f"{bias.weight_by_k(8, scale='none')[1]:.2f} vs {bias.weight_by_k(8, scale='none')[4]:.2f}), and "
                           "the lone success alone gets √7 — the difficulty bias (难度偏差) in one group.",
                           f"W_1 = {bias.weight_by_k(8, eps=0.0)[1]:.2f}，W_4 = {bias.weight_by_k(8, eps=0.0)[4]:.2f}："
                           "÷ std 缩小了难题与中等题之间的差距（不除时："
                           f"{bias.weight_by_k(8, scale='none')[1]:.2f} 对 {bias.weight_by_k(8, scale='none')[4]:.2f}），"
                           "而唯一的成功独得 √7——一组之内的难度偏差。"),
    ),
    Compute(
        id="advantages.dynamic_sampling_cost", notebook="03", name="groups_to_draw", form=NUMBER,
        title=Text("What does dynamic sampling cost?", "动态采样要花多少？"),
        prompt=Text("DAPO's dynamic sampling throws away degenerate groups (退化组) and keeps sampling until the batch "
                    "holds **16 informative** groups. Every prompt has pass rate p = 0.2 and G = 8. How many groups must "
                    "be generated on average? One number, two decimals.",
                    "DAPO 的动态采样丢掉退化组，一直采样直到这一批有 **16 个有信息量的**组。每个提示的通过率都是 p = 0.2，"
                    "G = 8。平均要生成多少组？一个数，两位小数。"),
        hints=(Text("First the probability that one group is informative: 1 − p^G − (1 − p)^G. Each group drawn is kept "
                    "with that probability.",
                    "先算一组有信息量的概率：1 − p^G − (1 − p)^G。每生成一组，它以这个概率被保留。"),
               Text("Waiting for 16 successes of probability f takes 16/f draws on average.",
                    "等到 16 次成功（每次概率 f）平均需要 16/f 次。")),
        value=lambda: 16 * bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8),
        known=(Known("multiplied", Text("You multiplied 16 by the informative fraction: that is how many of 16 groups "
                                        "*survive*. Dynamic sampling divides: it keeps drawing until 16 survive.",
                                        "你用 16 乘了有信息量的比例：那是 16 组里*留下*多少。动态采样是除：一直采到留下 16 组。"),
                     lambda: 16 / bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8)),
               Known("responses", Text("That counts responses (G per group); the question asks for groups.",
                                       "这是回答的条数（每组 G 条）；题目问的是组数。"),
                     lambda: 8 * 16 * bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8))),
        explain=lambda: tr(f"P(informative) = {1 / bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8):.3f}, so "
                           f"{16 * bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8):.2f} groups "
                           f"({8 * 16 * bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8):.0f} responses) for 16 kept: "
                           "cheap here, but the cost 1/P grows fast as p → 0 or 1.",
                           f"P(有信息量) = {1 / bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8):.3f}，所以保留 16 组要生成 "
                           f"{16 * bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8):.2f} 组"
                           f"（{8 * 16 * bias.dynamic_sampling_cost(_one_pass_rate(0.2), 8):.0f} 条回答）：这里不贵，"
                           "但 p → 0 或 1 时代价 1/P 增长很快。"),
    ),
)
