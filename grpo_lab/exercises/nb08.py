"""Notebook 08 (GRPO on a real instruct model): the verifier, a pass@k curve, degenerate groups in real batches."""
from __future__ import annotations

import functools
from math import comb

import numpy as np

from grpo_lab.exercises._kinds import NUMBER, Compute, Known, Option, Predict
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


PROBE, G_PROBE = "probe_t0.7", 4


@functools.lru_cache(maxsize=None)
def _probe():
    """(n, c) per problem of the base model's probe: 16 sampled replies per held-out problem at τ = 0.7."""
    d = real_runs.load()["evals"][PROBE]
    return tuple(zip(d["n"].astype(int), d["c"].astype(int)))


def _degenerate_share(with_replacement: bool = False) -> float:
    """Mean over problems of P(a group of G_PROBE of the problem's replies has all rewards equal)."""
    out = []
    for n, c in _probe():
        if with_replacement:
            p = c / n
            out.append((1 - p) ** G_PROBE + p ** G_PROBE)
        else:                                      # G of the n replies, drawn without replacement
            out.append((comb(n - c, G_PROBE) + comb(c, G_PROBE)) / comb(n, G_PROBE))
    return float(np.mean(out))


def _never_solved() -> float:
    return float(np.mean([c == 0 for _, c in _probe()]))


EXERCISES = (
    Predict(
        id="real.extract_answer", notebook="08", name="extracted",
        title=Text("What does the verifier read from this reply?", "验证器从这条回复里读出什么？"),
        prompt=Text("The reply below changes its mind after a `####` line:\n\n```\n" + TRICKY + "\n```\n\n"
                    "What does `extract_answer` return: `\"42\"`, `\"43\"` or nothing (`\"none\"`)? Decide before the "
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
        id="real.pass_at_k", notebook="08", name="pass_at_4", form=NUMBER,
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
        id="real.degenerate_groups", notebook="08", name="frac_degenerate", form=NUMBER,
        title=Text("Degenerate groups in a real batch", "真实批次里的退化组"),
        prompt=Text("The probe table of §5 (`real_runs.load()[\"evals\"][\"probe_t0.7\"]`) holds, for each of 48 held-out "
                    "problems, `n` = 16 sampled replies of the untrained model at τ = 0.7 and `c`, how many were right. "
                    "Suppose a GRPO step drew a group of G = 4 of a problem's 16 replies at random (without replacement). "
                    "Averaged over the 48 problems, what fraction of such groups is degenerate (退化组: all four rewards "
                    "equal, no gradient)? Two decimals.",
                    "§5 的探测表（`real_runs.load()[\"evals\"][\"probe_t0.7\"]`）对 48 道留出题各记录了未训练模型在 "
                    "τ = 0.7 下的 `n` = 16 条采样回复，以及其中答对的条数 `c`。假设一步 GRPO 从某题的 16 条回复里随机（不放回）"
                    "抽 G = 4 条组成一组。对 48 道题取平均，这样的组有多大比例是退化组（四个奖励全部相等，没有梯度）？两位小数。"),
        hints=(Text("A group is degenerate when all 4 are wrong or all 4 are right: C(n − c, 4)/C(n, 4) + C(c, 4)/C(n, 4) "
                    "for one problem; then average over the problems.",
                    "4 条全错或 4 条全对时该组退化：单题为 C(n − c, 4)/C(n, 4) + C(c, 4)/C(n, 4)；再对所有题取平均。"),),
        value=_degenerate_share,
        known=(Known("never_solved", Text("That is the share of problems never solved in 16 samples; a problem solved "
                                          "once or twice still gives mostly all-wrong groups of 4.",
                                          "这是 16 次采样中从未答对的题所占比例；答对一两次的题，抽出的 4 条组也大多全错。"),
                     _never_solved),
               Known("with_replacement", Text("You drew the 4 replies with replacement ((1 − p)^4 + p^4 with p = c/n); the "
                                              "group is 4 of the 16 replies, drawn without replacement.",
                                              "你按有放回抽样算了（(1 − p)^4 + p^4，p = c/n）；这一组是从 16 条里不放回地抽 4 条。"),
                     lambda: _degenerate_share(with_replacement=True))),
        explain=lambda: tr(f"{_degenerate_share():.3f}: about three groups in four give the untrained model no gradient at "
                           f"G = 4 ({_never_solved():.0%} of the problems were never solved in 16 samples). This is why the "
                           "capstone chooses τ, G and the level from measurement: a group only teaches when it holds both "
                           "a right and a wrong reply.",
                           f"{_degenerate_share():.3f}：G = 4 时约四分之三的组对未训练模型没有梯度（{_never_solved():.0%} 的题在 16 次"
                           "采样中从未答对）。这就是为什么本章的实验要靠测量来选 τ、G 和难度级别：一组里既有对的也有错的回复，才能学到东西。"),
    ),
)
