"""The tasks of :mod:`grpo_lab.lm.tasks` in the shapes TRL's ``GRPOTrainer`` consumes.

A student who outgrows one machine keeps the *same* task and the *same* verifier: this
module wraps them, it does not re-implement them.

* :func:`build_dataset` — ``n`` problems as a ``datasets.Dataset`` with a plain-text
  ``prompt`` column (``"a+b="``, no chat template) and the columns a reward function needs
  (``answer``, ``level``, ``a``, ``b``). TRL forwards every extra column to the reward
  functions as a keyword argument, one entry per completion (so keep
  ``remove_unused_columns=False``, TRL's default for GRPO).
* :class:`TaskReward` — step 2 of the recipe (seed 000 §5, "打分") as a TRL reward function
  ``(prompts, completions, **kwargs) -> list[float]``: the task's own verifier
  (0/1, or partial credit when the task says so) applied to each completion, the answer read
  from the ``answer`` column.
* :class:`OverlongReward` — DAPO's soft overlong punishment (the ≤ 0 shaping term of
  :func:`grpo_lab.lm.tasks.overlong_penalty`) as a second reward function; TRL sums reward
  functions (``reward_weights``) before the group advantage (优势) is formed, as our trainer
  adds the penalty to the task reward.

Where the two loops see a response differently:

* **Truncation.** Our rollout flags a response that reached the token budget without EOS as
  truncated, and the verifier gives it 0. TRL passes ``completion_ids`` (cut after the first
  EOS, EOS kept) to reward functions; :class:`TaskReward` calls a completion truncated when
  its last id is not EOS, the same rule TRL's ``mask_truncated_completions`` uses.
* **Text.** TRL decodes with ``skip_special_tokens=True``; we keep non-EOS special tokens so
  that a stray ``<pad>`` counts as wrong. For the character tokenizer the only difference is a
  completion such as ``"1<pad>2<eos>"``, which TRL reads as ``"12"``; when ``completion_ids``
  are available :class:`TaskReward` decodes them itself the way the core loop does.

``datasets`` is imported lazily (inside :func:`build_dataset`), so ``import grpo_lab.lm``
never needs it; it comes with the optional extra ``pip install -e .[trl]``.
"""
from __future__ import annotations

import numpy as np

from grpo_lab import _checks
from grpo_lab.lm.tasks import AdditionTask, Problem, overlong_penalty, partial_credit, verify

COLUMNS = ("prompt", "answer", "level", "a", "b")


def problem_rows(task: AdditionTask, n: int, seed: int = 0) -> list[dict]:
    """``n`` training problems of ``task`` as plain dicts (the rows of :func:`build_dataset`).

    Drawn with :meth:`AdditionTask.sample` and ``np.random.default_rng(seed)``, so held-out
    pairs never appear and the same seed gives the same rows.
    """
    if not isinstance(task, AdditionTask):
        raise TypeError(f"task must be an AdditionTask, got {type(task).__name__}")
    n = _checks.integer("n", n, low=1)
    seed = _checks.integer("seed", seed, low=0)
    return rows_for(task.sample(n, np.random.default_rng(seed)))


def rows_for(problems: list) -> list[dict]:
    """Addition problems as the rows of :func:`build_dataset` (``prompt, answer, level, a, b``)."""
    return [{"prompt": p.prompt, "answer": p.answer, "level": p.level, "a": p.a, "b": p.b} for p in problems]


def build_dataset(task: AdditionTask, n: int, seed: int = 0):
    """A ``datasets.Dataset`` of ``n`` problems with columns ``prompt, answer, level, a, b``.

    ``prompt`` is plain text (TRL's "standard" non-conversational format: the trainer
    tokenizes it with the model's tokenizer, which prepends BOS exactly as
    :func:`grpo_lab.lm.evaluation.encode_prompts` does). Requires the ``datasets`` package.
    """
    rows = problem_rows(task, n, seed)
    try:
        from datasets import Dataset
    except ImportError:   # pragma: no cover - depends on the environment
        raise ImportError("build_dataset needs the `datasets` package: pip install -e '.[trl]'") from None
    return Dataset.from_list(rows)


def _per_completion(name: str, values, n: int) -> list:
    if values is None:
        raise ValueError(f"the reward function needs the dataset column {name!r} "
                         f"(build the dataset with build_dataset, and keep remove_unused_columns=False)")
    values = list(values)
    if len(values) != n:
        raise ValueError(f"column {name!r} has {len(values)} entries for {n} completions")
    return values


class TaskReward:
    """A TRL reward function backed by the task's verifier (seed 000 §5, step 2).

    ``reward(prompts, completions, answer=[...], completion_ids=[...], **kwargs)`` returns one
    float per completion: the task's reward (:func:`~grpo_lab.lm.tasks.verify` 0/1, or
    :func:`~grpo_lab.lm.tasks.partial_credit` when ``task.partial``), 0 for a truncated one.

    Args:
        task: the :class:`AdditionTask` whose verifier scores completions.
        tokenizer: optional; when given (with an EOS token), truncation is read from
            ``completion_ids`` and the text is decoded from them as the core loop does.
            Without it, the text TRL decoded is used and nothing counts as truncated.
    """

    __name__ = "task_reward"      # TRL logs rewards under the function's name

    def __init__(self, task: AdditionTask, tokenizer=None):
        if not isinstance(task, AdditionTask):
            raise TypeError(f"task must be an AdditionTask, got {type(task).__name__}")
        self.task = task
        self.tokenizer = tokenizer
        self.eos_id = None if tokenizer is None else getattr(tokenizer, "eos_token_id", None)
        if tokenizer is not None and self.eos_id is None:
            raise ValueError("tokenizer has no EOS token (eos_token is None): truncation cannot be detected")

    def _texts_and_truncation(self, completions, completion_ids):
        n = len(completions)
        if self.eos_id is None or completion_ids is None:
            return [str(c).strip() for c in completions], [False] * n
        ids = _per_completion("completion_ids", completion_ids, n)
        truncated = [len(x) == 0 or int(x[-1]) != self.eos_id for x in ids]
        body = [list(x) if t else list(x)[:-1] for x, t in zip(ids, truncated)]   # drop the EOS itself
        texts = self.tokenizer.batch_decode(body, skip_special_tokens=False)
        return [t.strip() for t in texts], truncated

    def __call__(self, prompts, completions, **kwargs) -> list[float]:
        if completions is None or isinstance(completions, str):
            raise TypeError("completions must be a list of strings (one per completion)")
        completions = list(completions)
        if completions and not isinstance(completions[0], str):
            raise TypeError("completions must be plain strings; TaskReward expects the standard (non-chat) format")
        n = len(completions)
        texts, truncated = self._texts_and_truncation(completions, kwargs.get("completion_ids"))
        answers = [str(x) for x in _per_completion("answer", kwargs.get("answer"), n)]
        if all(k in kwargs and kwargs[k] is not None for k in ("a", "b", "level")):
            a, b, lv = (_per_completion(k, kwargs[k], n) for k in ("a", "b", "level"))
            probs = [Problem(int(x), int(y), int(z)) for x, y, z in zip(a, b, lv)]
            for p, ans in zip(probs, answers):
                if p.answer != ans:
                    raise ValueError(f"column 'answer' ({ans!r}) disagrees with a+b for {p.prompt!r}")
            return [self.task.reward(t, p, tr) for t, p, tr in zip(texts, probs, truncated)]
        fn = partial_credit if self.task.partial else verify
        return [fn(t, ans, tr) for t, ans, tr in zip(texts, answers, truncated)]


class OverlongReward:
    """DAPO's soft overlong punishment as a TRL reward function (added to :class:`TaskReward`).

    Uses :func:`grpo_lab.lm.tasks.overlong_penalty` on the completion length in tokens (EOS
    included, as in our rollout): 0 up to ``max_new − buffer``, then a linear ramp to −1 at
    ``max_new``. TRL ships an equivalent (``trl.rewards.get_soft_overlong_punishment``);
    this one keeps the course's definition as the single source.
    """

    __name__ = "overlong_reward"

    def __init__(self, max_new: int, buffer: int):
        self.max_new = _checks.integer("max_new", max_new, low=1)
        self.buffer = _checks.integer("buffer", buffer, low=1, high=self.max_new)

    def __call__(self, prompts, completions, completion_ids=None, **kwargs) -> list[float]:
        ids = _per_completion("completion_ids", completion_ids, len(list(completions)))
        lengths = np.array([len(x) for x in ids], dtype=float)
        return overlong_penalty(lengths, self.max_new, self.buffer).tolist()


def export_policy(config, path):
    """Write the starting policy of ``config`` — the tiny model after the (cached) warm start,
    or ``config.model`` — with its tokenizer to ``path``; returns the path.

    It is built by :class:`grpo_lab.lm.trainer.Trainer` itself, so a TRL run started from
    ``path`` starts from exactly the weights our loop starts from (same seed, same SFT).
    """
    from pathlib import Path

    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.lm.model import save_model
    from grpo_lab.lm.trainer import Trainer

    if not isinstance(config, GRPOConfig):
        raise TypeError(f"config must be a GRPOConfig, got {type(config).__name__}")
    tr = Trainer(config.replace(out=None, resume=False, progress=False, beta=0.0, kl_metric=False))
    return save_model(tr.policy, tr.tok, Path(path))


def reward_functions(task: AdditionTask, tokenizer=None, *, overlong_buffer: int | None = None,
                     max_new: int | None = None) -> list:
    """The reward functions for ``GRPOTrainer(reward_funcs=...)``: the task's verifier, plus
    DAPO's overlong shaping when ``overlong_buffer`` is given (then ``max_new`` is required)."""
    funcs = [TaskReward(task, tokenizer)]
    if overlong_buffer:
        if max_new is None:
            raise ValueError("max_new is required with overlong_buffer (the token budget the ramp ends at)")
        funcs.append(OverlongReward(max_new, overlong_buffer))
    return funcs


__all__ = ["build_dataset", "problem_rows", "TaskReward", "OverlongReward", "reward_functions", "export_policy",
           "COLUMNS"]
