"""Notebook 00 (roadmap): two warm-up predictions about the map of the course."""
from __future__ import annotations

from grpo_lab import roadmap
from grpo_lab.exercises._kinds import Option, Predict
from grpo_lab.i18n import Text, tr


def _granularity() -> str:
    return roadmap.symbol_table().loc["Â_i", "granularity"]


def _grpo_parent() -> str:
    return roadmap.family_table().loc["GRPO", "grows from"].lower()


EXERCISES = (
    Predict(
        id="roadmap.grpo_parent", notebook="00", name="grpo_grows_from",
        title=Text("Which method does GRPO grow from?", "GRPO 是从哪个方法长出来的？"),
        prompt=Text(
            "GRPO keeps its parent's per-token loss term and replaces one of the parent's components by a group "
            "statistic. Which method of the family tree does it grow from? Answer `\"reinforce\"`, `\"ppo\"`, `\"rloo\"` or `\"dpo\"`.",
            "GRPO 保留了父方法逐 token 的损失项，又把父方法的一个部件换成了组内统计量。它在家谱上是从哪个方法长出来的？"
            "回答 `\"reinforce\"`、`\"ppo\"`、`\"rloo\"` 或 `\"dpo\"`。"),
        hints=(Text("Which of these methods has a clipped ratio and a separate learned value model?",
                    "这几个方法里，哪一个既有裁剪比率、又要单独训练一个价值模型？"),),
        options=(Option("reinforce", Text("REINFORCE", "REINFORCE"),
                        Text("REINFORCE has no clipped ratio; GRPO's clipping comes from its parent.",
                             "REINFORCE 没有裁剪比率；GRPO 的裁剪来自它的父方法。")),
                 Option("ppo", Text("PPO", "PPO")),
                 Option("rloo", Text("RLOO", "RLOO"),
                        Text("RLOO is a sibling: it also uses a group baseline, but leave-one-out and without clipping.",
                             "RLOO 是兄弟分支：同样用组内基线，但留一法、且没有裁剪。")),
                 Option("dpo", Text("DPO", "DPO"),
                        Text("DPO is off the tree: it does not sample or score at all.",
                             "DPO 不在这棵树上：它既不采样也不打分。"))),
        correct=_grpo_parent,
        explain=lambda: tr(f"GRPO grows from {_grpo_parent().upper()}: same clipped term per token (eq. 3), but the "
                           "value model is replaced by the group mean (and ÷ std).",
                           f"GRPO 从 {_grpo_parent().upper()} 长出来：逐 token 的裁剪项（式 3）不变，价值模型换成组均值（再 ÷ 标准差）。"),
    ),
    Predict(
        id="roadmap.granularity", notebook="00", name="adv_granularity",
        title=Text("Is Â_i per response or per token?", "Â_i 是每条回答一个，还是每个 token 一个？"),
        prompt=Text(
            "GRPO computes one advantage (优势) $\\hat A_i$ from the rewards of a group. Before you look at the "
            "symbol table below: is $\\hat A_i$ **sequence**-level (one number per response) or **token**-level "
            "(one number per token of the response)? Answer `\"sequence\"` or `\"token\"`.",
            "GRPO 从一组回答的奖励算出优势 $\\hat A_i$。先别往下看记号表：$\\hat A_i$ 是**序列级**（每条回答一个数，"
            "`\"sequence\"`）还是 **token 级**（回答里每个 token 一个数，`\"token\"`）？"),
        hints=(Text("Where does the reward come from, and when does it arrive: after each token, or after the whole "
                    "response has been written?",
                    "奖励从哪里来、什么时候给出：每写一个 token 给一次，还是整条回答写完才给？"),),
        options=(Option("sequence", Text("sequence-level", "序列级")),
                 Option("token", Text("token-level", "token 级"),
                        Text("The ratio ρ_{i,t} is per token, but the reward and the advantage are computed once per "
                             "response, from the whole group.",
                             "比率 ρ_{i,t} 才是逐 token 的；奖励和优势都是每条回答算一次，来自整组。"))),
        correct=_granularity,
        explain=lambda: tr(f"Â_i is {_granularity()}-level: one scalar, copied onto every token of response i; "
                           "only the ratio ρ_{i,t} varies along the response.",
                           "Â_i 是序列级的：一个标量，复制到第 i 条回答的每个 token 上；只有比率 ρ_{i,t} 随位置变化。"),
    ),
)
