"""Step 2 of the recipe (seed 000 §5, "打分"): decode, verify, and held-out accuracy.

:func:`encode_prompts` turns problems into left-padded prompt tensors;
:func:`decode_responses` turns sampled token ids into the text before EOS;
:func:`score` applies the task's verifier; :func:`evaluate` measures held-out accuracy
(greedy by default) per difficulty level.

The capstone's evaluation (notebook 08, issue 20): :func:`evaluate_problems` gives one row
per held-out problem (greedy reply; counts of n sampled replies: correct c, finished f);
:func:`pass_at_k` is the unbiased estimator; :func:`summarize_problems` turns a table into
values with 95 % bootstrap intervals over problems, :func:`paired_difference` compares two
tables on the same problems, :func:`seed_interval` is the spread over seeds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from grpo_lab.lm.rollout import Rollout, sample
from grpo_lab.lm.tasks import AdditionTask, Problem


def encode_prompts(tok, problems: list[Problem], device="cpu"):
    """(prompt_ids (P, Lp), prompt_mask (P, Lp)) — left-padded, BOS first if the tokenizer adds one.

    Chat problems (:class:`~grpo_lab.lm.chat_tasks.ChatProblem`) are rendered with the
    tokenizer's chat template (which already holds its special tokens).
    """
    chat = bool(problems) and hasattr(problems[0], "messages")
    texts = [p.prompt for p in problems] if not chat else \
        [tok.apply_chat_template(p.messages(), tokenize=False, add_generation_prompt=True) for p in problems]
    enc = tok(texts, padding=True, return_tensors="pt", add_special_tokens=not chat)
    return enc["input_ids"].to(device), enc["attention_mask"].to(device)


def encode_answers(tok, problems: list[Problem]) -> list[list[int]]:
    """Target token ids of each correct response: the answer's tokens then EOS."""
    ids = tok([p.answer for p in problems], add_special_tokens=False)["input_ids"]
    return [list(x) + [tok.eos_token_id] for x in ids]


def decode_responses(tok, ro: Rollout) -> list[str]:
    """Text of each response before EOS (special tokens other than EOS kept, so they count as wrong)."""
    ids = ro.response_ids.cpu().numpy()
    n = (ro.lengths - (~ro.truncated).long()).cpu().numpy()     # drop the EOS itself
    return [s.strip() for s in tok.batch_decode([row[:k].tolist() for row, k in zip(ids, n)],
                                                 skip_special_tokens=False)]


@dataclass
class Scored:
    texts: list[str]
    rewards: np.ndarray     # (B,) task reward (0/1 or partial credit)
    correct: np.ndarray     # (B,) bool, exact answer
    levels: np.ndarray      # (B,) difficulty level of each response's prompt


def score(task: AdditionTask, tok, ro: Rollout, problems: list[Problem]) -> Scored:
    """Rewards r_i for every response (B = P·G, group after group)."""
    texts = decode_responses(tok, ro)
    trunc = ro.truncated.cpu().numpy()
    probs = [problems[i // ro.G] for i in range(ro.B)]
    rewards = np.array([task.reward(t, p, bool(tr)) for t, p, tr in zip(texts, probs, trunc)], dtype=float)
    correct = np.array([task.correct(t, p, bool(tr)) for t, p, tr in zip(texts, probs, trunc)], dtype=bool)
    return Scored(texts, rewards, correct, np.array([p.level for p in probs]))


def evaluate(model, tok, task: AdditionTask, problems: list[Problem], *, max_new=16, temperature=0.0,
             G=1, batch=512, seed=0, device=None, amp=True) -> dict:
    """Accuracy on ``problems`` (greedy unless ``temperature`` > 0), overall and per level.

    Returns ``{"acc": …, "acc_L1": …, …, "len_mean": …, "frac_truncated": …, "n": …}``.
    """
    device = device or next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    was_training = model.training
    model.eval()
    correct, levels, lengths, trunc = [], [], [], []
    for k in range(0, len(problems), batch):
        chunk = problems[k:k + batch]
        ids, mask = encode_prompts(tok, chunk, device)
        ro = sample(model, ids, mask, G=G, max_new=max_new, temperature=temperature,
                    eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, generator=gen, amp=amp)
        sc = score(task, tok, ro, chunk)
        correct.append(sc.correct)
        levels.append(sc.levels)
        lengths.append(ro.lengths.cpu().numpy())
        trunc.append(ro.truncated.cpu().numpy())
    model.train(was_training)
    c, lv = np.concatenate(correct), np.concatenate(levels)
    out = {"acc": float(c.mean()), "n": int(c.size)}
    for level in task.levels:
        sel = lv == level
        out[f"acc_L{level}"] = float(c[sel].mean()) if sel.any() else 0.0
    out["len_mean"] = float(np.concatenate(lengths).mean())
    out["frac_truncated"] = float(np.concatenate(trunc).mean())
    return out


# ---------------------------------------------------------------------------------------------
# The capstone's evaluation: per-problem counts, pass@k, intervals (issue 20)
# ---------------------------------------------------------------------------------------------
PASS_KS = (1, 2, 4, 8, 16)


def pass_at_k(n, c, k: int):
    """Unbiased pass@k from ``n`` samples of which ``c`` are correct: 1 − C(n−c, k)/C(n, k).

    The probability that at least one of k samples drawn *without replacement* from the n is
    correct (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"). Computed
    as 1 − ∏_{i=n−c+1}^{n} (1 − k/i), which never forms a large binomial. Vectorised over
    ``n`` and ``c`` (arrays of the same shape); ``k`` must not exceed any ``n``.
    """
    n, c = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64)
    if np.any(c < 0) or np.any(c > n):
        raise ValueError("pass_at_k: need 0 <= c <= n for every problem")
    if k < 1 or np.any(n < k):
        raise ValueError(f"pass_at_k: k must be in 1..n (n = {int(n.min()) if n.size else 0}); got k = {k}")
    out = np.ones(np.broadcast(n, c).shape, dtype=float)
    flat_n, flat_c, flat_o = np.broadcast_to(n, out.shape).ravel(), np.broadcast_to(c, out.shape).ravel(), out.ravel()
    for j, (nn, cc) in enumerate(zip(flat_n, flat_c)):
        if nn - cc >= k:
            flat_o[j] = 1.0 - float(np.prod(1.0 - k / np.arange(nn - cc + 1, nn + 1)))
    return out if out.ndim else float(out)


def generate_for(model, tok, problems, *, n_samples: int, temperature: float, max_new: int, batch_rows=256,
                 seed=0, amp=False):
    """``n_samples`` replies per problem (greedy when ``temperature`` = 0), batched over prompts.

    Returns (texts (P·n,), correct (P·n,) bool, finished (P·n,) bool, lengths (P·n,)), group
    after group. The sampler's randomness is one generator seeded by ``seed``, so the result
    does not depend on anything but (model, problems, settings, seed, batch_rows).
    """
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    per = max(1, batch_rows // n_samples)
    texts, correct, finished, lengths = [], [], [], []
    task_like = _Verifier()
    was = model.training
    model.eval()
    for k in range(0, len(problems), per):
        chunk = problems[k:k + per]
        ids, mask = encode_prompts(tok, chunk, device)
        ro = sample(model, ids, mask, G=n_samples, max_new=max_new, temperature=temperature,
                    eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, generator=gen, amp=amp)
        sc = score(task_like, tok, ro, chunk)
        texts += sc.texts
        correct.append(sc.correct)
        finished.append(~ro.truncated.cpu().numpy())
        lengths.append(ro.lengths.cpu().numpy())
    model.train(was)
    return texts, np.concatenate(correct), np.concatenate(finished), np.concatenate(lengths)


class _Verifier:
    """The chat task's scoring, without a task object (correct = finished and the right number)."""

    def reward(self, text, problem, truncated):
        return float(self.correct(text, problem, truncated))

    def correct(self, text, problem, truncated):
        from grpo_lab.lm.tasks import extract_answer
        return not truncated and extract_answer(text) == problem.answer


def evaluate_problems(model, tok, problems, *, n_samples=16, temperature=1.0, max_new=96, batch_rows=256,
                      seed=0, amp=False, keep_chars=160) -> pd.DataFrame:
    """One row per problem: greedy correctness/finish/length/reply and the counts of ``n_samples``
    sampled replies at ``temperature`` (``n``, ``c`` correct, ``f`` finished, ``len_mean``).

    ``max_new`` is the *evaluation* budget (independent of the training budget). A reply is
    correct only when it finished (EOS within the budget) and its extracted answer is right;
    finishing is counted apart, so accuracy given finished = c / f. Replies are cut to
    ``keep_chars`` characters (the table is kept with the data).
    """
    g_txt, g_ok, g_fin, g_len = generate_for(model, tok, problems, n_samples=1, temperature=0.0, max_new=max_new,
                                             batch_rows=batch_rows, seed=seed, amp=amp)
    rows = [{"level": p.level, "numbers": "/".join(map(str, p.numbers)), "answer": p.answer, "prompt": p.prompt,
             "greedy_correct": bool(g_ok[i]), "greedy_finished": bool(g_fin[i]), "greedy_len": int(g_len[i]),
             "greedy_reply": g_txt[i][:keep_chars]} for i, p in enumerate(problems)]
    if n_samples:
        _, s_ok, s_fin, s_len = generate_for(model, tok, problems, n_samples=n_samples, temperature=temperature,
                                             max_new=max_new, batch_rows=batch_rows, seed=seed + 1, amp=amp)
        s_ok, s_fin, s_len = (x.reshape(len(problems), n_samples) for x in (s_ok, s_fin, s_len))
        for i, r in enumerate(rows):
            r.update(n=n_samples, c=int(s_ok[i].sum()), f=int(s_fin[i].sum()), len_mean=float(s_len[i].mean()))
    return pd.DataFrame(rows)


def _boot_index(n_problems: int, n_boot: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_problems, size=(n_boot, n_problems))


def bootstrap_ci(values, *, n_boot=2000, seed=0, level=0.95) -> tuple[float, float, float]:
    """(mean, low, high): the mean of per-problem ``values`` and its percentile bootstrap
    interval over problems (problems resampled with replacement)."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size == 0:
        raise ValueError("bootstrap_ci: values must be a non-empty 1-d array (one value per problem)")
    means = v[_boot_index(v.size, n_boot, seed)].mean(1)
    a = (1 - level) / 2
    return float(v.mean()), float(np.quantile(means, a)), float(np.quantile(means, 1 - a))


def ratio_ci(num, den, *, n_boot=2000, seed=0, level=0.95) -> tuple[float, float, float]:
    """(Σnum/Σden, low, high) with the bootstrap over problems (e.g. accuracy given finished = Σc/Σf)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    idx = _boot_index(num.size, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num[idx].sum(1) / den[idx].sum(1)
        point = num.sum() / den.sum() if den.sum() else float("nan")
    r = r[np.isfinite(r)]
    a = (1 - level) / 2
    if r.size == 0:
        return float(point), float("nan"), float("nan")
    return float(point), float(np.quantile(r, a)), float(np.quantile(r, 1 - a))


# Student t quantile t_{0.975, df} for df = 1 … 10 (scipy is not a dependency); 1.96 beyond
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def _t975(df: int) -> float:
    """The two-sided 95 % Student-t quantile for ``df`` degrees of freedom (1.96 beyond the table)."""
    return _T975[df - 1] if df - 1 < len(_T975) else 1.96


def seed_interval(values) -> tuple[float, float, float]:
    """(mean, low, high) over runs (seeds): the 95 % Student-t interval mean ± t_{n−1} · s/√n
    (needs ≥ 2 values; with 3 seeds t = 4.303, so the interval is wide by construction)."""
    v = np.asarray(values, dtype=float)
    if v.size < 2:
        raise ValueError(f"seed_interval needs at least 2 runs; got {v.size}")
    t = _t975(v.size - 1)
    half = t * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def seed_difference(value: float, seed_values) -> tuple[float, float, float]:
    """(d, low, high): one run's ``value`` minus the mean of another method's seeds, with the 95 %
    interval d ± t_{n−1} · s · √(1 + 1/n) (s and n from ``seed_values``; needs ≥ 2 of them).

    This is the interval a run *of that same method* with a new seed would fall in (a prediction
    interval, the two-sample t with one run on one side, assuming equal seed spread), so a
    difference is detectable only when it exceeds the seeds' own spread — a paired bootstrap over
    problems between two single runs cannot see that spread. With 3 seeds t = 4.303."""
    v = np.asarray(seed_values, dtype=float)
    if v.size < 2:
        raise ValueError(f"seed_values needs at least 2 runs (seeds); got {v.size}")
    if not np.isfinite(value) or not np.isfinite(v).all():
        raise ValueError(f"value and seed_values must be finite; got {value} and {v.tolist()}")
    t = _t975(v.size - 1)
    d = float(value - v.mean())
    half = float(t * v.std(ddof=1) * np.sqrt(1 + 1 / v.size))
    return d, d - half, d + half


def two_sample_seeds(a_values, b_values) -> tuple[float, float, float]:
    """(d, low, high): mean(b) − mean(a) over two methods' seeds (each ≥ 2), with the pooled
    two-sample Student-t 95 % interval d ± t_{na+nb−2} · s_p · √(1/na + 1/nb) (equal seed spread
    assumed). With 3 seeds each t = 2.776."""
    a, b = np.asarray(a_values, dtype=float), np.asarray(b_values, dtype=float)
    if a.size < 2 or b.size < 2:
        raise ValueError(f"a_values and b_values need at least 2 runs (seeds) each; got {a.size} and {b.size}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError(f"a_values and b_values must be finite; got {a.tolist()} and {b.tolist()}")
    df = a.size + b.size - 2
    sp = np.sqrt(((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / df)
    t = _t975(df)
    d = float(b.mean() - a.mean())
    half = float(t * sp * np.sqrt(1 / a.size + 1 / b.size))
    return d, d - half, d + half


def summarize_problems(df, *, ks=PASS_KS, n_boot=2000, seed=0) -> dict:
    """{metric: (value, low, high)} for one evaluation table of :func:`evaluate_problems`, 95 %
    bootstrap over problems: greedy accuracy / finish rate / accuracy given finished, pass@k,
    sampled finish rate, sampled accuracy given finished, share never solved, mean length."""
    out = {"n_problems": int(len(df)),
           "greedy_acc": bootstrap_ci(df["greedy_correct"], n_boot=n_boot, seed=seed),
           "greedy_finish": bootstrap_ci(df["greedy_finished"], n_boot=n_boot, seed=seed),
           "greedy_acc_given_finished": ratio_ci(df["greedy_correct"], df["greedy_finished"], n_boot=n_boot,
                                                 seed=seed)}
    if "c" in df:
        for k in ks:
            if k <= int(df["n"].min()):
                out[f"pass@{k}"] = bootstrap_ci(pass_at_k(df["n"], df["c"], k), n_boot=n_boot, seed=seed)
        out["sample_finish"] = ratio_ci(df["f"], df["n"], n_boot=n_boot, seed=seed)
        out["sample_acc_given_finished"] = ratio_ci(df["c"], df["f"], n_boot=n_boot, seed=seed)
        out["never_solved"] = bootstrap_ci(df["c"] == 0, n_boot=n_boot, seed=seed)
        out["sample_len"] = bootstrap_ci(df["len_mean"], n_boot=n_boot, seed=seed)
    return out


def paired_difference(before, after, *, n_boot=2000, seed=0) -> tuple[float, float, float]:
    """(mean of after − before, low, high): per-problem paired values on the *same* problems,
    bootstrap over problems. An interval that holds 0 is "no detectable difference"."""
    b, a = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    if b.shape != a.shape:
        raise ValueError(f"paired_difference: before and after must be on the same problems ({b.shape} vs {a.shape})")
    return bootstrap_ci(a - b, n_boot=n_boot, seed=seed)
