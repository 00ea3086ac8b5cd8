"""LoRA as an option of the same trainer: ``GRPOConfig.lora_rank = r`` (0 = full fine-tuning).

With r > 0 the policy's linear layers of every block (attention q/k/v/o and the MLP
gate/up/down) get low-rank adapters ΔW = (α/r)·B·A (``peft``, the library TRL uses, with its
``LoraConfig``); everything else is frozen, the optimiser sees only the adapters, and a
checkpoint stores only them (``adapter_model.safetensors``, a few MB instead of the 2.1 GB of
a full-fine-tuning run folder with its AdamW state). The reference model π_ref is the frozen
base model, which the run folder does not store: it is rebuilt from ``--model`` on resume.

The GRPO update itself is unchanged: the same loss, the same single update loop
(:func:`grpo_lab.lm.microbatch.learn`); only which parameters move differs. "LoRA Without
Regret" (Schulman et al., Thinking Machines, 2025) reports that RL reaches full fine-tuning's
results at very small ranks, because a policy-gradient step carries little information per
episode. Notebook 08's lora8 run compares rank 8 with full fine-tuning on SmolLM2-135M; it changes
the learning rate too (2·10⁻⁴, 10× full fine-tuning's: the ratio that paper found best for its own
α = 32 set-up; here α = 2r = 16, not tuned), and "no detectable difference at n = … seeds" there is
not evidence that the two are equal (that would need an equivalence margin).

Errors name the flag: a negative rank, a rank above the model's hidden size (where the
"low-rank" factorisation is no longer low rank), and LoRA on the tiny model (built from
scratch, its input and output embeddings are one tied matrix that the adapters would leave
frozen while the warm start trains it: use full fine-tuning there).
"""
from __future__ import annotations

import importlib.util

from grpo_lab.lm.config import lora_tiny_error

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def check(cfg, model=None) -> None:
    """Raise a ValueError naming ``--lora-rank`` for a rank that cannot apply to this run/model."""
    r = cfg.lora_rank
    if not r:
        return
    if cfg.model is None:
        raise ValueError(lora_tiny_error(r))
    if importlib.util.find_spec("peft") is None:
        raise ValueError(f"--lora-rank {r} needs the 'peft' package: pip install peft (or pip install -e '.[real]')")
    if model is not None:
        hidden = int(model.config.hidden_size)
        if r > hidden:
            raise ValueError(f"--lora-rank {r} is larger than the model's hidden size {hidden}: a rank-{r} "
                             f"adapter of a {hidden}-wide layer is not low rank; use 1 … {hidden} (LoRA uses 1 … 64)")


def wrap(policy, cfg):
    """The policy with LoRA adapters of rank ``cfg.lora_rank`` on :data:`TARGETS` (the rest frozen)."""
    check(cfg, policy)
    from peft import get_peft_model

    return get_peft_model(policy, peft_config(cfg))


def peft_config(cfg):
    """The ``peft.LoraConfig`` of ``cfg`` (also what TRL's ``GRPOTrainer(peft_config=…)`` gets in the benchmark)."""
    from peft import LoraConfig

    return LoraConfig(r=cfg.lora_rank, lora_alpha=cfg.lora_alpha if cfg.lora_alpha is not None else 2 * cfg.lora_rank,
                      lora_dropout=0.0, target_modules=list(TARGETS), bias="none", task_type="CAUSAL_LM")


def is_lora(model) -> bool:
    return hasattr(model, "peft_config")


def adapted_layers(model) -> list:
    """(name, layer) of every adapted linear layer, named as in the merged plain model."""
    from peft.tuners.lora import LoraLayer

    return [(name, m) for name, m in model.get_base_model().named_modules() if isinstance(m, LoraLayer)]


def merged_weight(layer):
    """W + ΔW of one adapted layer: its frozen weight plus each active adapter's (α/r)·B·A (peft's delta)."""
    w = layer.get_base_layer().weight
    for name in layer.active_adapters:
        if name in layer.lora_A:
            w = w + layer.get_delta_weight(name).to(w.dtype)
    return w


def trainable(model):
    """The parameters the optimiser updates (the adapters under LoRA, else all)."""
    return [p for p in model.parameters() if p.requires_grad]


def load_state(model, state_dict) -> None:
    """Load a checkpoint's policy weights: adapters into a LoRA policy, a full state dict otherwise."""
    if is_lora(model):
        from peft import set_peft_model_state_dict

        res = set_peft_model_state_dict(model, state_dict)
        bad = [k for k in getattr(res, "unexpected_keys", []) if "lora_" in k]
        if bad:
            raise ValueError(f"the checkpoint's adapters do not fit this LoRA policy (unexpected keys {bad[:3]} …)")
    else:
        model.load_state_dict(state_dict)


def n_trainable(model) -> tuple[int, int]:
    """(trainable parameters, all parameters)."""
    return sum(p.numel() for p in trainable(model)), sum(p.numel() for p in model.parameters())


__all__ = ["TARGETS", "check", "wrap", "peft_config", "is_lora", "trainable", "load_state", "n_trainable"]
