"""Notebook 08 (GRPO on a real instruct model): the verifier, a pass@k curve, degenerate groups in real batches."""
from __future__ import annotations

import functools
from math import comb

import numpy as np

from grpo_lab import advantages as A
from grpo_lab.exercises._kinds import Compute, Known, Option, Predict
from grpo_lab.i18n import Text, tr
from grpo_lab.lm import real_runs
from grpo_lab.lm.tasks import extract_answer

TRICKY = "First I add 27 + 15 = 42.\n#### 42\nActually, wait: the answer is 43."
EXTRACT_OPTIONS = {"42": "42", "43": "43", "none": None}


def _extract_key() -> str:
    got = extract_answer(TRICKY)
    (key,) = [k for k, v in EXTRACT_OPTIONS.items() if v == got]
    return key


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 − C(n − c, k)/C(n, k) (Chen et al., 2021)."""
    return 1.0 - comb(n - c, k) / comb(n, k)


N_SAMPLES, N_CORRECT = 8, 2


@functools.lru_cache(maxsize=None)
def _degenerate_fractions() -> tuple[float, float]:
    """Fraction of degenerate groups in the cached replies before and after training (all runs, all prompts)."""
    runs = real_runs.load_runs()
    out = []
    for key in ("replies_before", "replies_after"):
        d = runs[key]
        groups = [g["reward"].to_numpy() for _, g in d.groupby(["agg", "seed", "group"])]
        out.append(float(np.mean([A.degenerate_mask(r[None, :])[0] for r in groups])))
    return tuple(out)


def _all_wrong_after() -> float:
    d = real_runs.load_runs()["replies_after"]
    return float(np.mean([(g["reward"] == 0).all() for _, g in d.groupby(["agg", "seed", "group"])]))


EXERCISES = (
    Predict(
        id="real.extract_answer", notebook="08", name="extracted",
        title=Text("What does the verifier read from this reply?", "验证器从这条回复里读出什么？"),
        prompt=Text("The reply below changes its mind after a `####` line:\n\n```\n" + TRICKY + "\n```\n\n"
                    "What does `extract_answer` return: `\"42\"`, `\"43\"` or nothing (`\"none\"`)? Commit before the "
                    "verifier's rule is shown.",
                    "下面这条回复在 `####` 行之后又改了主意：\n\n```\n" + TRICKY + "\n```\n\n"
                    "`extract_answer` 返回什么：`\"42\"`、`\"43\"`，还是什么都没有（`\"none\"`）？在显示验证器的规则之前先作答。"),
        hints=(Text("Does the verifier read the last number of the reply, or does a marker such as `####` take precedence?",
                    "验证器读的是回复里的最后一个数，还是 `####` 这样的标记优先？"),),
        options=(Option("42", Text("42", "42")),
                 Option("43", Text("43", "43"),
                        Text("The last number wins only when the reply has no marker; a `####` line, `<answer>` or "
                             "`\\boxed{}` is read first.",
                             "只有回复里没有标记时才取最后一个数；`####` 行、`<answer>` 或 `\\boxed{}` 优先。")),
                 Option("none", Text("nothing", "什么都没有"),
                        Text("Both candidates are numbers the rule can read.", "两个候选都是规则能读出的数。"))),
        correct=_extract_key,
        explain=lambda: tr(f"extract_answer returns {extract_answer(TRICKY)!r}: the last marker wins, whatever follows. A "
                           "reward built on this rule pays for the `####` line, not for the final sentence.",
                           f"extract_answer 返回 {extract_answer(TRICKY)!r}：以最后一个标记为准，不管后面写了什么。"
                           "基于这条规则的奖励看的是 `####` 行，而不是最后一句话。"),
    ),
    Compute(
        id="real.pass_at_k", notebook="08", name="pass_at_4", form="a number",
        title=Text("Read a pass@k curve", "读 pass@k 曲线"),
        prompt=Text(f"A held-out prompt was answered n = {N_SAMPLES} times and c = {N_CORRECT} replies were right. The "
                    "unbiased estimate pass@k = 1 − C(n − c, k)/C(n, k) is the chance that at least one of k replies drawn "
                    f"from these n is right. The curve reads pass@1 = {pass_at_k(N_SAMPLES, N_CORRECT, 1):.3f}, "
                    f"pass@2 = {pass_at_k(N_SAMPLES, N_CORRECT, 2):.3f}, pass@4 = ?, pass@8 = "
                    f"{pass_at_k(N_SAMPLES, N_CORRECT, 8):.3f}. Compute pass@4 (three decimals).",
                    f"一道留出题被回答了 n = {N_SAMPLES} 次，其中 c = {N_CORRECT} 条正确。无偏估计 pass@k = 1 − C(n − c, k)/C(n, k) "
                    "是从这 n 条里抽 k 条、至少一条正确的概率。曲线上 pass@1 = "
                    f"{pass_at_k(N_SAMPLES, N_CORRECT, 1):.3f}，pass@2 = {pass_at_k(N_SAMPLES, N_CORRECT, 2):.3f}，pass@4 = ?，"
                    f"pass@8 = {pass_at_k(N_SAMPLES, N_CORRECT, 8):.3f}。算出 pass@4（三位小数）。"),
        hints=(Text("C(n − c, k)/C(n, k) is the chance that all k replies drawn come from the n − c wrong ones.",
                    "C(n − c, k)/C(n, k) 是抽出的 k 条全部来自 n − c 条错误回复的概率。"),),
        value=lambda: pass_at_k(N_SAMPLES, N_CORRECT, 4), atol=0.002,
        known=(Known("iid", Text("That is 1 − (1 − c/n)^k, drawing *with* replacement; pass@k draws k distinct replies "
                                 "from the n, without replacement.",
                                 "这是有放回抽样的 1 − (1 − c/n)^k；pass@k 是从 n 条里无放回地抽 k 条不同的回复。"),
                     lambda: 1 - (1 - N_CORRECT / N_SAMPLES) ** 4),
               Known("linear", Text("pass@k is not k × pass@1: two right replies can be drawn together.",
                                    "pass@k 不是 k × pass@1：两条正确回复可能被同时抽到。"),
                     lambda: min(1.0, 4 * pass_at_k(N_SAMPLES, N_CORRECT, 1)))),
        explain=lambda: tr(f"pass@4 = 1 − C(6, 4)/C(8, 4) = {pass_at_k(N_SAMPLES, N_CORRECT, 4):.3f}. A curve that rises "
                           "fast while pass@1 is low says the model *can* answer and only needs to answer right more often: "
                           "the situation in which a group of G replies holds a success to learn from.",
                           f"pass@4 = 1 − C(6, 4)/C(8, 4) = {pass_at_k(N_SAMPLES, N_CORRECT, 4):.3f}。pass@1 很低而曲线上升很快，"
                           "说明模型*能*答对，只是需要更常答对：这正是一组 G 条回复里有成功可学的情形。"),
    ),
    Compute(
        id="real.degenerate_groups", notebook="08", name="frac_degenerate", form="[before, after]",
        title=Text("Degenerate groups in a real batch", "真实批次里的退化组"),
        prompt=Text("The cached runs keep the replies to 2 held-out prompts, G = 4 each, before and after training, for 3 "
                    "aggregations × 3 seeds: `runs[\"replies_before\"]` and `runs[\"replies_after\"]` (columns `agg`, `seed`, "
                    "`group`, `reward`, …), 18 groups each. What fraction of the groups is degenerate (退化组: all rewards "
                    "equal, no gradient), before and after? Answer `[before, after]`, two decimals (compute them from the "
                    "tables with pandas).",
                    "缓存的运行保存了训练前后对 2 道留出题的回复（每题 G = 4），共 3 种聚合 × 3 个随机种子："
                    "`runs[\"replies_before\"]` 和 `runs[\"replies_after\"]`（列 `agg`、`seed`、`group`、`reward` 等），各 18 组。"
                    "训练前后各有多大比例的组是退化组（奖励全部相等，没有梯度）？回答 `[before, after]`，两位小数"
                    "（用 pandas 从表里算）。"),
        hints=(Text("groupby([\"agg\", \"seed\", \"group\"]) gives the 18 groups; a group is degenerate when its reward has "
                    "one unique value.",
                    "groupby([\"agg\", \"seed\", \"group\"]) 给出 18 个组；一组奖励只有一个不同的值时就是退化组。"),),
        value=lambda: list(_degenerate_fractions()),
        known=(Known("all_wrong_only", Text("After training you counted only the all-wrong groups; all-correct groups are "
                                            "degenerate too — and after training they are the common kind.",
                                            "训练后你只数了全错的组；全对的组同样是退化组——而且训练后它们才是常见的那种。"),
                     lambda: [_degenerate_fractions()[0], _all_wrong_after()]),),
        explain=lambda: tr(f"before {_degenerate_fractions()[0]:.2f}, after {_degenerate_fractions()[1]:.2f} (18 groups each, "
                           "so no detectable difference at this n): before training the degenerate groups are all wrong, "
                           "after training mostly all right. Either way a GRPO step learns nothing from them.",
                           f"训练前 {_degenerate_fractions()[0]:.2f}，训练后 {_degenerate_fractions()[1]:.2f}（各 18 组，"
                           "这个样本量下看不出差异）：训练前的退化组是全错，训练后大多是全对。无论哪种，GRPO 都从中学不到东西。"),
    ),
)
