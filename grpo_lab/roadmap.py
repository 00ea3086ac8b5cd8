"""The course map: the family tree, the glossary and the symbol table (notebook 00).

Sources: seed 004 (the family tree, L9 p.26-42 and its 2025 branches) and seed 000 §0.1
(the symbol table with each symbol's granularity) and §0.2 (GRPO vs PPO).
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Method:
    name: str
    year: str
    source: str
    changes: str          # what it changes relative to its parent
    parent: str | None    # None for the root; "off-tree" methods have parent None too
    short: str = ""       # one line for the tree figure
    on_tree: bool = True


FAMILY = (
    Method("REINFORCE", "1992", "Williams", "return R(τ) is the only signal: all-fail groups give no gradient, "
           "all-success groups push every action up, bad habits included (L9 p.26)", None,
           short="Â = R: failures teach nothing"),
    Method("ReST", "2023", "Gulcehre et al.", "sample, filter by reward, fine-tune on what passed: the reward is "
           "still the only signal, so it shares REINFORCE's two dead zones (seed 004 §一)", "REINFORCE",
           short="sample → filter → fine-tune"),
    Method("baseline", "—", "L9 p.27-29", "Â = R − b(h): same expected gradient, lower variance; "
           "the ladder none → constant → running mean → value model (L9 p.28)", "REINFORCE", short="Â = R − b(h): same mean, lower variance"),
    Method("PPO", "2017", "Schulman et al.", "clipped importance ratio; a learned value model gives "
           "per-token advantages by GAE", "baseline", short="clipped ratio + value model (GAE)"),
    Method("RLOO", "2019/2024", "Kool et al.; Ahmadian et al.", "baseline = mean reward of the other G − 1 "
           "samples of the same prompt (unbiased)", "baseline", short="b = mean of the other G − 1"),
    Method("GRPO", "2024", "Shao et al., DeepSeekMath", "no value model: baseline = group mean (unbiased up to "
           "(G − 1)/G; RLOO removes it), scale = group std (eq. 1); PPO's clipped term per token (eq. 3) with "
           "a k3 KL (eq. 5)", "PPO", short="b = group mean (bias (G−1)/G), ÷ group std"),
    Method("Dr. GRPO", "2025", "Liu et al.", "drop the ÷σ_R (difficulty bias) and replace 1/|y_i| by a "
           "constant 1/C (length bias)", "GRPO", short="no ÷σ_R, 1/C not 1/|y_i|"),
    Method("DAPO", "2025", "Yu et al., ByteDance Seed", "clip-higher (ε_high > ε_low), dynamic sampling, "
           "token-level mean (eq. 7), overlong reward shaping", "GRPO", short="clip-higher, dynamic sampling,\ntoken-mean, overlong shaping"),
    Method("GSPO", "2025", "Zheng et al., Qwen", "sequence-level importance ratio "
           "s_i = (π_θ(y_i)/π_old(y_i))^{1/|y_i|} instead of per-token ρ_{i,t}", "GRPO", short="sequence-level ratio"),
    Method("DPO", "2023", "Rafailov et al.", "off the tree: no sampling and no reward model; an implicit RL "
           "objective on preference pairs", None,
           short="no sampling, no reward model", on_tree=False),
)

# (term, Chinese, meaning, where in the course)
GLOSSARY = (
    ("advantage", "优势", "how much better an action was than expected, A = Q − V; estimated by Â = R − b", "01, 02"),
    ("baseline", "基线", "the expected return subtracted from R; must not depend on the action", "01"),
    ("reward-to-go", "后续回报", "sum of rewards from step t on; earlier rewards only add noise", "02"),
    ("group normalization", "组内标准化", "Â_i = (r_i − mean)/std over the G answers to one prompt (eq. 1)", "03"),
    ("degenerate group", "退化组", "a group whose rewards are all equal: Â = 0, no gradient", "03, 06"),
    ("difficulty bias", "难度偏差", "÷std inflates the updates of nearly-all-right/all-wrong prompts", "03"),
    ("importance ratio", "重要性比率", "ρ_{i,t} = π_θ(o_{i,t}|·)/π_old(o_{i,t}|·), the only per-token factor (eq. 4)", "04"),
    ("clipping", "裁剪", "min(ρÂ, clip(ρ, 1−ε, 1+ε)Â): one-sided — the gradient stops only once ρ has left "
     "[1−ε, 1+ε] in the direction Â pushes it (ρ > 1+ε with Â > 0, ρ < 1−ε with Â < 0) (eq. 3)", "04"),
    ("KL penalty (k3)", "KL 惩罚", "u − log u − 1 with u = π_ref/π_θ: unbiased, never negative (eq. 5)", "04"),
    ("sequence mean", "序列平均", "average tokens within each answer, then answers (eq. 6): answers weigh equally", "05"),
    ("batch (token) mean", "批次平均", "divide by the batch's token count (eq. 7): tokens weigh equally", "05"),
    ("length bias", "长度偏差", "under eq. 6 a long wrong answer is penalised less per token, so wrong answers grow", "05"),
    ("credit assignment", "信用分配", "which token made the answer good; GRPO leaves it to statistics across samples", "04, 07"),
    ("dynamic sampling", "动态采样", "DAPO: resample until every group in the batch is informative", "03, 07"),
)

# seed 000 §0.1: symbol, meaning, granularity
SYMBOLS = (
    ("x", "prompt", "—"),
    ("G", "group size: answers sampled per prompt", "—"),
    ("y_i, |y_i|", "the i-th answer and its number of tokens", "—"),
    ("r_i", "reward of answer i (verifier or reward model)", "sequence"),
    ("Â_i", "group-relative advantage, one scalar shared by the whole answer", "sequence"),
    ("ρ_{i,t}", "importance ratio at token t of answer i", "token"),
    ("ℓ_{i,t}", "value of the clipped term at token t of answer i", "token"),
    ("ε, β", "clip range; KL coefficient", "—"),
)

NOTEBOOKS = (
    ("00_roadmap", "Roadmap and family tree", "Where does each method sit, and what does each later notebook answer?"),
    ("01_bandit_baselines", "Baselines on the two-armed bandit", "Why subtract an expected reward? Why is it free?"),
    ("02_advantage_guess_number", "The advantage function", "How can a failed guess be a good action?"),
    ("03_group_advantage", "Group advantages", "What does GRPO's group baseline give each answer, and when does it give nothing?"),
    ("04_grpo_loss", "Anatomy of the GRPO loss", "Ratio × advantage, clipping and KL estimators, token by token."),
    ("05_length_bias", "Sequence-mean vs token-mean", "Why do wrong answers grow longer under GRPO's 1/|y_i|?"),
    ("06_grpo_llm", "A full GRPO loop on a tiny LM", "Does it work end to end, and what do the metrics look like?"),
    ("07_family", "The 2025 branches side by side", "Dr. GRPO, DAPO, GSPO and RLOO on one frozen batch, and the hand-off to TRL/verl."),
    ("08_grpo_real_lm", "GRPO on a real pretrained model", "Does the recipe carry over to SmolLM2-135M, and where does the length bias show?"),
    ("09_after_the_lecture", "Beyond the lecture notes", "CISPO, SAPO, GMPO, TRL's defaults, and what a sampler that is not the trainer does."),
)


# The headline results as seed 004 quotes them (method, model, benchmark, result).
HEADLINES = (
    ("GRPO", "DeepSeekMath 7B", "MATH", "51.7 %"),
    ("Dr. GRPO", "7B", "AIME 2024", "43.3 %"),
    ("DAPO", "Qwen2.5-32B", "AIME 2024", "50 points"),
    ("GSPO", "Qwen3", "—", "used to train Qwen3"),
    ("LongCat (DORA)", "—", "—", "asynchronous rollout/training: 3× faster"),
)

# The papers behind the tree (seed 000's references plus the methods seed 004 names).
REFERENCES = (
    ("Williams 1992", "Simple statistical gradient-following algorithms for connectionist reinforcement learning. Machine Learning 8."),
    ("Schulman et al. 2017", "Proximal Policy Optimization Algorithms. arXiv:1707.06347."),
    ("Kool et al. 2019", "Buy 4 REINFORCE Samples, Get a Baseline for Free! ICLR 2019 workshop."),
    ("Rafailov et al. 2023", "Direct Preference Optimization. arXiv:2305.18290."),
    ("Gulcehre et al. 2023", "Reinforced Self-Training (ReST) for Language Modeling. arXiv:2308.08998."),
    ("Shao et al. 2024", "DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language Models. arXiv:2402.03300."),
    ("Ahmadian et al. 2024", "Back to Basics: Revisiting REINFORCE-Style Optimization for Learning from Human Feedback. arXiv:2402.14740."),
    ("DeepSeek-AI 2025", "DeepSeek-R1: Incentivizing Reasoning Capability in LLMs via Reinforcement Learning. arXiv:2501.12948."),
    ("Liu et al. 2025", "Understanding R1-Zero-Like Training: A Critical Perspective (Dr. GRPO). arXiv:2503.20783."),
    ("Yu et al. 2025", "DAPO: An Open-Source LLM Reinforcement Learning System at Scale. arXiv:2503.14476."),
    ("Zheng et al. 2025", "Group Sequence Policy Optimization (GSPO). arXiv:2507.18071."),
)


def headline_table() -> pd.DataFrame:
    return pd.DataFrame(HEADLINES, columns=["method", "model", "benchmark", "result (as seed 004 quotes it)"]).set_index("method")


def reference_table() -> pd.DataFrame:
    return pd.DataFrame(REFERENCES, columns=["reference", "title"]).set_index("reference")


def family_table() -> pd.DataFrame:
    return pd.DataFrame([(m.name, m.year, m.source, m.parent or "—", m.changes) for m in FAMILY],
                        columns=["method", "year", "source", "grows from", "what it changes"]).set_index("method")


def glossary_table() -> pd.DataFrame:
    return pd.DataFrame(GLOSSARY, columns=["term", "中文", "meaning", "notebooks"]).set_index("term")


def symbol_table() -> pd.DataFrame:
    return pd.DataFrame(SYMBOLS, columns=["symbol", "meaning", "granularity"]).set_index("symbol")
