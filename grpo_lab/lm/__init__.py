"""A full GRPO loop on a tiny causal LM (seed 000 §5, the six-step recipe).

Modules: :mod:`~grpo_lab.lm.tokenizer` (character tokenizer), :mod:`~grpo_lab.lm.model`
(tiny Llama/Qwen2 or a local model), :mod:`~grpo_lab.lm.tasks` (verifiable addition),
:mod:`~grpo_lab.lm.warmstart` (SFT on demonstrations, cached), :mod:`~grpo_lab.lm.rollout`
(sampling and log-probs), :mod:`~grpo_lab.lm.evaluation` (scoring, held-out accuracy),
:mod:`~grpo_lab.lm.config` (:class:`GRPOConfig` and presets), :mod:`~grpo_lab.lm.trainer`
(:func:`train`) with :mod:`~grpo_lab.lm.sampling` (steps 1–2, dynamic sampling),
:mod:`~grpo_lab.lm.metrics` (the metric columns), :mod:`~grpo_lab.lm.checkpoint` (run folder,
lock, checkpoints) and :mod:`~grpo_lab.lm.guard` (divergence guard), :mod:`~grpo_lab.lm.cli`
(``python -m grpo_lab train``).
A real pretrained model: :mod:`~grpo_lab.lm.pretrained` (``--model smollm2-135m``, the GGUF →
safetensors cache), :mod:`~grpo_lab.lm.chat_tasks` (natural-language arithmetic in the chat
template; ``tasks.extract_answer``), :mod:`~grpo_lab.lm.microbatch` (gradient accumulation over
groups), :mod:`~grpo_lab.lm.real_runs` (the capstone experiment of notebook 08).

Imports are lazy so that ``import grpo_lab.lm`` stays cheap.
"""
from __future__ import annotations

__all__ = ["GRPOConfig", "train", "Trainer", "METRICS"]


def __getattr__(name):
    if name == "GRPOConfig":
        from grpo_lab.lm.config import GRPOConfig

        return GRPOConfig
    if name in ("train", "Trainer", "METRICS"):
        from grpo_lab.lm import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'grpo_lab.lm' has no attribute {name!r}")
