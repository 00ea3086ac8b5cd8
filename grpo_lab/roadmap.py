"""The course map: the family tree, the glossary and the symbol table (notebook 00).

Sources: lecture notes 004 (the family tree, L9 p.26-42 and its 2025 branches) and lecture
notes 000 §0.1 (the symbol table with each symbol's granularity) and §0.2 (GRPO vs PPO).
The rows o_{i,t}, π_θ, π_θold and π_ref of :data:`SYMBOLS` and the framework entries of
:data:`GLOSSARY` are the course's additions, not the lecture notes'.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from grpo_lab import methods as _methods
from grpo_lab import roadmap_zh as _ZH
from grpo_lab.i18n import Text
from grpo_lab.i18n_table import localized
from grpo_lab.terms import zh as _zh


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
           "still the only signal (no baseline), so it shares REINFORCE's two dead zones (lecture notes 004 §一)", "REINFORCE",
           short="sample → filter → fine-tune"),
    Method("baseline", "—", "L9 p.27-29", "Â = R − b(h), b independent of the action; "
           "depending on b it lowers the variance or raises it (notebook 01); the course's ladder none → constant → running mean → value model "
           "(L9 p.28's list is empty in the notes; reconstructed)", "REINFORCE", short="Â = R − b(h):\na good b lowers the variance"),
    Method("PPO", "2017", "Schulman et al.", "clipped importance ratio; a learned value model gives "
           "per-token advantages by GAE", "baseline", short="clipped ratio + value model (GAE)"),
    Method("RLOO", "2019/2024", "Kool et al.; Ahmadian et al.", "baseline = mean reward of the other G − 1 "
           "samples of the same prompt (unbiased)", "baseline", short="b = mean of the other G − 1"),
    Method("GRPO", "2024", "Shao et al., DeepSeekMath", "no value model: baseline = group mean (it contains the "
           "sample's own reward, which, before ÷σ, takes 1/G off the expected gradient; RLOO's leave-one-out mean does not), "
           "scale = group std (eq. 1), one factor per group (notebook 03); PPO's clipped term per token (eq. 3) "
           "with a k3 KL (eq. 5)", "PPO", short="b = group mean (bias 1/G), ÷ group std"),
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

# (term, Chinese, meaning, where in the course); the Chinese word is grpo_lab.terms' (one source)
GLOSSARY = (
    ("advantage", _zh("advantage"), "how much better an action was than expected, A = Q − V; estimated by Â = R − b", "01, 02"),
    ("baseline", _zh("baseline"), "a number b(h) subtracted from R that must not depend on the action; a good baseline lowers "
     "the variance of the gradient estimate, a bad one raises it", "01"),
    ("reward-to-go", _zh("reward-to-go"), "sum of rewards from step t on", "02"),
    ("group normalization", _zh("group normalization"), "Â_i = (r_i − mean)/std over the G answers to one prompt (eq. 1)", "03"),
    ("degenerate group", _zh("degenerate group"), "a group whose rewards are all equal: Â = 0, no gradient", "03, 06"),
    ("difficulty bias", _zh("difficulty bias"), "÷std inflates the updates of nearly-all-right/all-wrong prompts", "03"),
    ("importance ratio", _zh("importance ratio"), "ρ_{i,t} = π_θ(o_{i,t}|·)/π_old(o_{i,t}|·), the only per-token factor (eq. 4)", "04"),
    ("clipping", _zh("clipping"), "min(ρÂ, clip(ρ, 1−ε, 1+ε)Â) (eq. 3)", "04"),
    ("KL penalty (k3)", _zh("KL penalty (k3)"), "u − log u − 1 with u = π_ref/π_θ (eq. 5)",
     "04, 04b"),
    ("sequence mean", _zh("sequence mean"), "average tokens within each answer, then answers (eq. 6): answers weigh equally", "05"),
    ("batch (token) mean", _zh("batch (token) mean"), "divide by the batch's token count (eq. 7): tokens weigh equally", "05"),
    ("length bias", _zh("length bias"), "under eq. 6 a long wrong answer is penalised less per token, so wrong answers grow", "05"),
    ("credit assignment", _zh("credit assignment"), "which token made the answer good; GRPO leaves it to statistics across samples", "04, 07"),
    ("dynamic sampling", _zh("dynamic sampling"), "DAPO: resample until every group in the batch is informative", "03, 07"),
    # the frameworks students meet after this course (introduced once here; 04-09 use the names)
    ("TRL", "—", ("Hugging Face's RL library; its GRPOTrainer implements GRPO and several 2025 variants as options "
     "(loss_type 'dr_grpo' and 'dapo', GSPO's importance_sampling_level='sequence'); not DAPO's dynamic sampling"), "04, 07–09"),
    ("verl", "—", "ByteDance/Volcano Engine's RL framework for large runs (DAPO was released on it); "
     "configured by YAML keys such as actor.ppo_mini_batch_size", "04, 07–09"),
    ("vLLM", "—", "a fast inference engine; TRL and verl use it to generate the rollouts (the sampling step)", "07–09"),
    ("steps_per_generation", "—", "TRL: how many micro-batches (forward/backward passes) one batch of generated "
     "answers is split into; by default gradient_accumulation_steps, so one generation serves one optimizer step. "
     "What a larger value changes: 04 §6", "04, 06"),
    ("ppo_mini_batch_size", "—", "verl: the batch of prompts is split into mini-batches of this size, one optimizer "
     "step each (what that changes: 04 §6)", "04, 06"),
)

# lecture notes 000 §0.1: symbol, meaning, granularity (o_{i,t} is from eq. (4); the policies are the course's rows)
SYMBOLS = (
    ("x", "prompt", "—"),
    ("G", "group size: answers sampled per prompt", "—"),
    ("y_i, |y_i|", "the i-th answer and its number of tokens", "—"),
    ("r_i", "reward of answer i (verifier or reward model)", "sequence"),
    ("Â_i", "group-relative advantage, one scalar shared by the whole answer", "sequence"),
    ("ρ_{i,t}", "importance ratio at token t of answer i", "token"),
    ("ℓ_{i,t}", "value of the clipped term at token t of answer i", "token"),
    ("o_{i,t}", "the t-th token of answer i (o_{i,<t}: the tokens before it), eq. (4)", "token"),
    ("ε, β", "clip range; KL coefficient", "—"),
    ("π_θ", "the policy being trained (the language model with parameters θ)", "—"),
    ("π_θold", "the policy that sampled the group; fixed while the same samples are reused (ρ's denominator)", "—"),
    ("π_ref", "the reference policy of the KL penalty, usually the model before RL (eq. (2), (5))", "—"),
)

NOTEBOOKS = (
    ("00_roadmap", "Roadmap and family tree", "Where does each method sit, and what does each later notebook answer?"),
    ("01_bandit_baselines", "Baselines on the two-armed bandit", "Why subtract an expected reward? Why is it free?"),
    ("02_advantage_guess_number", "The advantage function", "How can a failed guess be a good action?"),
    ("03_group_advantage", "Group advantages", "What does GRPO's group baseline give each answer, and when does it give nothing?"),
    ("04_grpo_loss", "Anatomy of the GRPO loss", "Why a ratio and a clip at all? Ratio × advantage and clipping, token by token."),
    ("04b_kl_penalty", "The KL penalty: k1, k2, k3 and where to put it",
     "How is KL(π_θ‖π_ref) estimated from sampled tokens, and does it go into the loss or the reward?"),
    ("05_length_bias", "Sequence-mean vs token-mean", "Why do wrong answers grow longer under GRPO's 1/|y_i|?"),
    ("06_grpo_llm", "A full GRPO loop on a tiny LM", "Does it work end to end, and what do the metrics look like?"),
    ("07_family", "The 2025 branches side by side", "Dr. GRPO, DAPO, GSPO and RLOO on one frozen batch, and the hand-off to TRL/verl."),
    ("08_grpo_real_lm", "GRPO on a real pretrained model", "What changes when the model is a real pretrained LM?"),
    ("09_after_the_lecture", "Beyond the lecture notes: the 2025–26 GRPO family in TRL/verl, and the train/rollout mismatch",
     "What came after the lecture notes, and why do training and rollout disagree?"),
)

# The titles and questions are bilingual (grpo_lab.roadmap_zh has the Chinese): the "Next" links of
# grpo_lab.exercises and notebook 00's table show them in the language set by grpo_lab.set_language.
NOTEBOOKS = tuple((nb, Text(title, _ZH.NOTEBOOKS.get(nb, (title, q))[0]), Text(q, _ZH.NOTEBOOKS.get(nb, (title, q))[1]))
                  for nb, title, q in NOTEBOOKS)

# notebooks whose code uses PyTorch (the earlier ones need only NumPy)
TORCH_FROM = "04"


# The headline results as lecture notes 004 quote them (method, model, benchmark, result). Nothing else here:
# claims from the papers themselves go in PAPER_CLAIMS with their source.
HEADLINES = (
    ("GRPO", "DeepSeekMath 7B", "MATH", "51.7 %"),
    ("Dr. GRPO", "7B", "AIME 2024", "43.3 %"),
    ("DAPO", "Qwen2.5-32B", "AIME 2024", "50 points"),
    ("GSPO", "Qwen3", "—", "used to train Qwen3"),
    ("LongCat (DORA)", "—", "—", "asynchronous rollout/training: 3× faster"),
)

# What a paper says about itself that the lecture notes do not: (method, claim, source). Not reproduced here.
PAPER_CLAIMS = (
    ("Dr. GRPO", "43.3 % on AIME 2024 with a 7B base model, from \"a minimalist R1-Zero recipe\" (base model, "
     "template, data and Dr. GRPO together), not from the two fixes alone", "Liu et al. 2025, abstract"),
    ("GSPO", "stabilises RL training, notably of mixture-of-experts models", "Zheng et al. 2025, abstract"),
)

# The papers behind the tree (lecture notes 000's references plus the methods lecture notes 004 name).
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


HEADLINE_COLUMN = "result (as lecture notes 004 quote it)"


def _frame(rows, columns, zh_rows=None) -> "pd.DataFrame":
    """An English table (indexed by its first column) that shows its Chinese rows in Chinese mode."""
    en = pd.DataFrame(rows, columns=columns).set_index(columns[0])
    if zh_rows is None:
        zh_rows = rows
    return localized(en, lambda: pd.DataFrame(zh_rows, columns=[_ZH.COLUMNS.get(c, c) for c in columns])
                     .set_index(_ZH.COLUMNS.get(columns[0], columns[0])))


def headline_table() -> pd.DataFrame:
    return _frame(HEADLINES, ["method", "model", "benchmark", HEADLINE_COLUMN],
                  [(m, model, bench, _ZH.HEADLINE_RESULT[m]) for m, model, bench, _ in HEADLINES])


def paper_claims_table() -> pd.DataFrame:
    return _frame(PAPER_CLAIMS, ["method", "the paper's own claim", "source"],
                  [(m, _ZH.PAPER_CLAIM[m], src) for m, _, src in PAPER_CLAIMS])


def reference_table() -> pd.DataFrame:
    return _frame(REFERENCES, ["reference", "title"])


def family_table() -> pd.DataFrame:
    rows = [(m.name, m.year, m.source, m.parent or "—", m.changes) for m in FAMILY]
    return _frame(rows, ["method", "year", "source", "grows from", "what it changes"],
                  [r[:4] + (_ZH.FAMILY_CHANGES[r[0]],) for r in rows])


def glossary_table() -> pd.DataFrame:
    return _frame(GLOSSARY, ["term", "中文", "meaning", "notebooks"],
                  [(t, zh, _ZH.GLOSSARY_MEANING[t], nbs) for t, zh, _, nbs in GLOSSARY])


def symbol_table() -> pd.DataFrame:
    return _frame(SYMBOLS, ["symbol", "meaning", "granularity"],
                  [(s, _ZH.SYMBOL_MEANING[s], _ZH.GRANULARITY[g]) for s, _, g in SYMBOLS])


def method_table(rows=None, columns=None) -> pd.DataFrame:
    """:func:`grpo_lab.methods.table` (English data; ``rows``/``columns`` pick a part) that displays
    Chinese headers and 是/否 in Chinese mode. Select with the arguments: a ``.loc`` slice of the
    result is a plain, English frame."""
    frame = _methods.table(rows, columns)

    def zh_view() -> pd.DataFrame:
        out = frame.copy()
        for col in out.columns:
            if out[col].dtype == bool:
                out[col] = out[col].map({True: "是", False: "否"})
        out.index.name = _ZH.COLUMNS[frame.index.name]
        return out.rename(columns=lambda c: _ZH.COLUMNS.get(c, c))

    return localized(frame, zh_view)


def notebook_table() -> str:
    """Notebook 00's table of notebooks (Markdown, links relative to the notebooks folder), in the language set."""
    cols = ["notebook", "topic", "the question it answers", "code"]
    head = [str(Text(c, _ZH.COLUMNS[c])) for c in cols]
    rows = "\n".join(f"| [{nb}]({nb}.ipynb) | {title} | {question} | {'PyTorch' if nb >= TORCH_FROM else 'NumPy'} |"
                     for nb, title, question in NOTEBOOKS)
    return "| " + " | ".join(head) + " |\n| --- | --- | --- | --- |\n" + rows
