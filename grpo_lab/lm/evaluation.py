"""Step 2 of the recipe (seed 000 §5, "打分"): decode, verify, and held-out accuracy.

:func:`encode_prompts` turns problems into left-padded prompt tensors;
:func:`decode_responses` turns sampled token ids into the text before EOS;
:func:`score` applies the task's verifier; :func:`evaluate` measures held-out accuracy
(greedy by default) per difficulty level.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
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
