"""``GRPOConfig``: every knob of the LM loop, documented, with the method presets.

``GRPOConfig.preset(name, **overrides)`` starts from the record ``name`` of
:mod:`grpo_lab.methods` (the one place a method's knobs are written down):

==========  =======================================================================
``grpo``    DeepSeekMath GRPO (seed 000): Â = (r − mean)/std (eq. 1, population std),
            token ratio (eq. 4) clipped at 1 ± 0.2 (eq. 3), seq-mean-token-mean
            aggregation (eq. 6), k3 KL in the loss with β = 0.04 (eq. 5, form 1).
``dr_grpo`` Dr. GRPO (seed 004 §四, first branch): no division by the std
            (``adv_scale="none"``) and the constant normaliser 1/C, C = ``max_new``
            (``"seq-mean-token-sum-norm"``) instead of 1/|y_i|; β = 0.
``dapo``    DAPO (seed 004 §四): clip-higher (ε_low 0.2, ε_high 0.28), dynamic sampling
            (drop 退化组 degenerate groups and resample), token-level mean (eq. 7), soft
            overlong reward shaping over the last ``overlong_buffer`` tokens; β = 0.
``gspo``    GSPO (seed 004 §四, third branch): the sequence-level ratio
            s_i = exp(mean_t log ρ_{i,t}) with a small clip range (3e-4 / 4e-4);
            β = 0.
``cispo``   beyond the lecture notes (notebook 09): CISPO, SAPO, GMPO — the
``sapo``    2025 policy losses of :mod:`grpo_lab.losses.beyond` (``policy_loss``).
``gmpo``
==========  =======================================================================

Every field can be overridden (``GRPOConfig.preset("dapo", beta=0.01)``) and carries its
help text in ``field(metadata={"help": ...})``; ``python -m grpo_lab train`` makes one flag
per field from it (:mod:`grpo_lab.lm.flags`). :meth:`GRPOConfig.validate` raises a
``ValueError`` naming the field for bad values. :meth:`GRPOConfig.loss_kwargs` and
:meth:`GRPOConfig.adv_kwargs` are the arguments of :func:`grpo_lab.losses.grpo_loss` and
:func:`grpo_lab.advantages.advantages_from_flat` for this config: no caller assembles them
by hand. The TRL / verl translation is :mod:`grpo_lab.lm.handoff` (which imports this
module, never the other way round).

This module imports only the core (:mod:`grpo_lab.methods`, :mod:`~grpo_lab.advantages`,
:mod:`~grpo_lab.losses`) and :mod:`grpo_lab.lm.tasks`: ``import grpo_lab.lm.config`` does
not load ``transformers``.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field, fields

from grpo_lab import _checks, methods
from grpo_lab.advantages import ESTIMATORS, SCALES, STDS
from grpo_lab.losses import KL_KINDS, LEVELS, MODES, POLICY_LOSSES, ROLLOUT_IS_MODES, check_policy_loss
from grpo_lab.lm.tasks import CHAT_LEVELS, LEVEL_RANGES, REWARD_MODES

DEVICES = ("auto", "cpu", "cuda")
TASKS = ("auto", "addition", "chat")
KL_FORMS = ("loss", "reward")
ARCHS = ("llama", "qwen2")      # tiny-model architectures (grpo_lab.lm.model builds them)


def lora_tiny_error(rank: int) -> str:
    """The error for ``--lora-rank`` > 0 on the tiny model (see :mod:`grpo_lab.lm.lora`)."""
    return (f"--lora-rank {rank}: LoRA needs a pretrained --model (e.g. smollm2-135m). The tiny model is built "
            f"from scratch and its input and output embeddings are one tied matrix, which LoRA's adapters would "
            f"leave frozen; train it with --lora-rank 0 (full fine-tuning)")


def _f(default, help: str, **meta):
    """A dataclass field with its help text (and CLI hints: ``flag``, ``choices``) in metadata."""
    return field(default=default, metadata={"help": help, **meta})


@dataclass
class GRPOConfig:
    """All settings of one GRPO run on the tiny LM (see the module docstring for presets)."""

    # -- run ---------------------------------------------------------------------------
    preset: str = _f("grpo", "recipe (a record of grpo_lab.methods): " + "; ".join(
        f"{n}: {methods.get(n).summary}" for n in methods.PRESETS), choices=methods.PRESETS)
    steps: int = _f(200, "GRPO steps (one batch of P·G responses each)")
    seed: int = _f(0, "seeds the model init, task sampling and the sampler")
    out: str | None = _f(None, "run folder: metrics.csv/jsonl, config.json, evaluations, checkpoints "
                               "(None = in memory only)")
    resume: bool = _f(False, "continue from the last checkpoint in --out (same seed and settings); "
                             "on CPU the result equals an uninterrupted run")
    checkpoint_every: int = _f(0, "save a checkpoint every N steps (0 = only at the end)")
    device: str = _f("auto", "auto = CUDA if available (bf16 autocast) else CPU (fp32)", choices=DEVICES)
    threads: int | None = _f(1, "torch CPU threads; 1 is fastest for the tiny model on a shared CPU "
                                "(more threads thrash when the cores are busy); none = torch's default")
    bf16: bool = _f(True, "bf16 autocast on CUDA (ignored on CPU, which runs fp32)")
    progress: bool = _f(True, "tqdm progress bar")
    cpu_bf16: bool | None = _f(None, "bf16 autocast on the CPU as well: none = on for a pretrained model when the "
                                     "CPU has bf16 units (AVX512-BF16/AMX; 4.4x faster matmuls measured on the "
                                     "course machine), off for the tiny model (which stays fp32, bit-identical)")
    checkpoint_seconds: float = _f(120.0, "also checkpoint once this many seconds have passed since the last "
                                          "checkpoint, so a killed run loses at most that much work (0 = only "
                                          "checkpoint_every and the end)")

    # -- model ---------------------------------------------------------------------------
    model: str | None = _f(None, "local causal-LM directory with its tokenizer; trust_remote_code stays off "
                                 "(none = a ~1M-parameter tiny model created from a config and warm-started "
                                 "by SFT)")
    arch: str = _f("llama", "tiny-model architecture (llama, or qwen2 with q/k/v biases)", choices=ARCHS)
    hidden: int = _f(128, "tiny model width")
    intermediate: int = _f(512, "tiny model MLP width")
    layers: int = _f(4, "tiny model depth")
    heads: int = _f(4, "tiny model attention heads")
    kv_heads: int | None = _f(None, "tiny model key/value heads (none = heads; fewer = grouped-query attention)")
    gradient_checkpointing: bool = _f(False, "recompute activations in backward instead of storing them (less "
                                             "memory, more time; for a real model with a large P·G·T)")
    lora_rank: int = _f(0, "LoRA rank r: low-rank adapters on every attention and MLP linear layer of a pretrained "
                           "--model, the rest frozen; checkpoints store only the adapters (0 = full fine-tuning; "
                           "grpo_lab.lm.lora)")
    lora_alpha: float | None = _f(None, "LoRA scale α (the update is (α/r)·B·A; none = 2·r)")
    hub: bool = _f(False, "allow --model to be a Hugging Face Hub id (org/name) and download it; off by default, "
                          "so nothing touches the network and a mistyped local path is an error")

    # -- task -----------------------------------------------------------------------------
    levels: tuple = _f((1, 2), "addition difficulty levels, comma-separated (1: 0-9, 2: 10-99, 3: 100-999)",
                       choices=tuple(LEVEL_RANGES))
    partial_credit: bool = _f(False, "reward = partial credit instead of 0/1 (seed 004 §三 remedy 4)")
    eval_per_level: int = _f(200, "held-out problems per level for the before/after accuracy")
    task: str = _f("auto", "auto (the chat task when the model's tokenizer has a chat template, else the "
                           "character task), addition (prompt a+b=) or chat (natural-language arithmetic, "
                           "grpo_lab.lm.chat_tasks)", choices=TASKS)
    chat_levels: tuple = _f((1, 3), "chat-task levels: 1 one-digit sum, 2 two-digit sum, 3 one-step word problem, "
                                    "4 two-step word problem (default 1,3: the base model gets about half right, "
                                    "so groups are informative)", choices=tuple(CHAT_LEVELS))
    reward_mode: str = _f("correct", "chat-task reward: correct (1 if the extracted answer is right and the reply "
                                     "finished) or correct_format (+ format_weight for a finished reply that "
                                     "states an answer)", choices=REWARD_MODES)
    format_weight: float = _f(0.2, "format bonus of reward_mode=correct_format")
    answer_tags: bool = _f(False, "chat prompts ask for the answer inside <answer></answer> (the format bonus "
                                  "then requires the tags)")
    chat_eval_per_level: int = _f(16, "held-out chat problems per level for the before/after accuracy (a real "
                                      "model is ~100x slower than the tiny one)")

    # -- warm start (SFT on demonstrations, seed 004 §三 remedy 3) -------------------------
    warmstart_steps: int = _f(1000, "cap on SFT warm-start steps (0 = no warm start; cached)")
    warmstart_target: float | None = _f(0.5, "stop the warm start once every level's probe accuracy reaches "
                                             "this (none = run all steps)")
    warmstart_lr: float = _f(3e-3, "SFT learning rate")
    warmstart_batch: int = _f(64, "SFT batch size (demonstrations per step)")
    cache_dir: str | None = _f(None, "warm-start cache (none = $GRPO_LAB_CACHE or ~/.cache/grpo_lab)")

    # -- step 1: sampling ----------------------------------------------------------------
    prompts_per_step: int = _f(32, "P: prompts per step (at least one per level)", flag="prompts")
    G: int = _f(8, "responses per prompt, the group size (>= 2)")
    max_new: int = _f(8, "token budget per response (EOS included); Dr. GRPO's constant C")
    temperature: float = _f(1.0, "sampling temperature τ (log-probs use the same τ)")

    # -- step 3: group advantages (eq. 1) ------------------------------------------------
    estimator: str = _f("grpo", "advantage: grpo (eq. 1 with adv_scale/adv_std), rloo (leave-one-out) or rft "
                                "(rejection-sampling fine-tuning: Â = r, i.e. 1 for a correct reply and 0 "
                                "otherwise, no negatives; the capstone's RFT baseline)", choices=ESTIMATORS)
    adv_scale: str = _f("group", "denominator of eq. (1): group (÷ group std), batch (÷ batch std), "
                                 "none (Dr. GRPO)", choices=SCALES)
    adv_std: str = _f("population", "std estimator: population (the seeds) or sample (Bessel, TRL/verl)",
                      choices=STDS)
    adv_eps: float = _f(1e-4, "ε added to the std in eq. (1)")

    # -- steps 4–6: the loss (eqs. 2–7) and the update -----------------------------------
    eps_low: float = _f(0.2, "clip range, low side: ρ >= 1 − eps_low (eq. 3)")
    eps_high: float | None = _f(None, "clip range, high side: ρ <= 1 + eps_high (none = eps_low; DAPO 0.28)")
    dual_clip: float | None = _f(None, "dual-clip bound c > 1 for Â < 0 (none = off)")
    ratio_level: str = _f("token", "importance ratio: token (eq. 4) or sequence (GSPO)", choices=LEVELS)
    agg: str = _f("seq-mean-token-mean", "aggregation: seq-mean-token-mean (eq. 6), token-mean (eq. 7), "
                                         "seq-mean-token-sum, seq-mean-token-sum-norm (Dr. GRPO 1/C)",
                  choices=MODES)
    beta: float = _f(0.04, "KL coefficient β (eq. 2)")
    kl_kind: str = _f("k3", "KL estimator: k1, k2, k3 (eq. 5)", choices=KL_KINDS)
    kl_form: str = _f("loss", "where the KL goes: loss (form 1, eq. 2) or reward (form 2, folded into r_i)",
                      choices=KL_FORMS)
    kl_metric: bool = _f(True, "log the KL column even when β = 0 (costs a reference forward)")
    mu: int = _f(1, "μ: policy updates per batch (inner iterations)")
    dedup: bool = _f(True, "run identical (prompt, response) pairs once (exact; saves compute)")
    lr: float = _f(1e-4, "AdamW learning rate for GRPO")
    lr_warmup: int = _f(10, "linear learning-rate warm-up over the first N steps (0 = none)")
    weight_decay: float = _f(0.0, "AdamW weight decay")
    max_grad_norm: float = _f(1.0, "gradient clipping by global norm (the grad_norm metric is before clipping)")
    tokens_per_microbatch: int = _f(0, "gradient accumulation: the policy/reference forwards run on whole groups "
                                       "of at most this many prompt+response tokens, so that P·G·T fits in "
                                       "memory; the gradient is exactly the whole batch's (0 = the whole batch "
                                       "at once; grpo_lab.lm.microbatch)")

    # -- beyond the lecture notes: 2025 policy losses, sampler/trainer mismatch (notebook 09) ----
    policy_loss: str = _f("clip", "per-token policy term: clip (eq. 3), cispo (capped detached weight), sapo (soft "
                                  "gate), gmpo (geometric mean, ε in log space); grpo_lab.losses.beyond",
                          choices=POLICY_LOSSES)
    cispo_cap: float = _f(5.0, "CISPO's largest importance weight (the weight itself, not 1 + ε; TRL epsilon_high)")
    sapo_tau_pos: float = _f(1.0, "SAPO gate temperature for Â > 0")
    sapo_tau_neg: float = _f(1.05, "SAPO gate temperature for Â ≤ 0")
    rollout_is: str = _f("none", "correct for a sampler that differs from the trainer with the weight "
                                 "π_θold/π_sampler: token_truncate (TIS), token_mask / sequence_mask (MIS), "
                                 "sequence_truncate, none (TRL's vllm_importance_sampling_mode)",
                         choices=ROLLOUT_IS_MODES)
    rollout_is_max: float | None = _f(3.0, "TIS cap / MIS upper threshold C on π_θold/π_sampler (TRL clip_max)")
    rollout_is_min: float | None = _f(None, "TIS floor / MIS lower threshold (none = no lower bound; TRL clip_min)")
    sampler_temperature: float | None = _f(None, "sample at this temperature while the loss uses `temperature` "
                                                 "(none = the same): an induced sampler/trainer mismatch")
    sampler_bf16: bool = _f(False, "sample from a bf16 copy of the policy on the CPU too (the loss stays fp32): "
                                   "the mismatch a bf16 inference engine adds")

    # -- DAPO extras ---------------------------------------------------------------------
    dynamic_sampling: bool = _f(False, "drop degenerate groups (all rewards equal), resample until P "
                                       "informative groups")
    max_sampling_rounds: int = _f(4, "cap on sampling rounds per step with dynamic sampling")
    overlong_buffer: int = _f(0, "soft overlong reward shaping over the last N tokens of the budget (0 = off)")

    # -----------------------------------------------------------------------------------
    # preset name -> the fields it sets: derived from the registry (grpo_lab.methods)
    PRESETS = {n: v for n, v in methods.preset_overrides().items() if n in methods.LECTURE}
    # beyond the lecture notes (notebook 09): CISPO, SAPO, GMPO; GRPOConfig.preset(name) accepts them too
    BEYOND_PRESETS = {n: v for n, v in methods.preset_overrides().items() if n not in methods.LECTURE}
    # Fields that may differ between an interrupted run and its resumption.
    RUNTIME_FIELDS = ("steps", "resume", "progress", "out", "device", "threads", "checkpoint_every",
                      "checkpoint_seconds", "hub")
    # Old names still accepted by from_dict (config.json of earlier runs).
    RENAMED = {"family": "arch"}

    @classmethod
    def _from_preset(cls, name: str, **overrides) -> "GRPOConfig":
        """The config of preset ``name`` ("grpo", "dr_grpo", "dapo", "gspo") with ``overrides``."""
        table = {**cls.PRESETS, **cls.BEYOND_PRESETS}
        if name not in table:
            raise ValueError(f"preset must be one of {', '.join(map(repr, table))}; got {name!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown GRPOConfig field(s) {unknown}")
        cfg = cls(preset=name, **{**table[name], **overrides})
        return cfg.validate()

    def replace(self, **changes) -> "GRPOConfig":
        return dataclasses.replace(self, **changes).validate()

    def validate(self) -> "GRPOConfig":
        """Check every field; returns self. Errors name the field."""
        c = _checks
        c.choice("preset", self.preset, (*self.PRESETS, *self.BEYOND_PRESETS))
        c.integer("steps", self.steps, low=0)
        c.integer("seed", self.seed, low=0)
        c.integer("checkpoint_every", self.checkpoint_every, low=0)
        c.in_range("checkpoint_seconds", self.checkpoint_seconds, 0.0)
        c.choice("device", self.device, DEVICES)
        if self.threads is not None:
            c.integer("threads", self.threads, low=1)
        c.choice("arch", self.arch, ARCHS)
        for name in ("hidden", "intermediate", "layers", "heads"):
            c.integer(name, getattr(self, name), low=1)
        if self.kv_heads is not None:
            c.integer("kv_heads", self.kv_heads, low=1)
        self.levels = tuple(int(c.choice("levels", int(lv), LEVEL_RANGES)) for lv in self.levels)
        if not self.levels:
            raise ValueError("levels must name at least one difficulty level (1, 2, 3)")
        c.integer("eval_per_level", self.eval_per_level, low=1)
        c.integer("lora_rank", self.lora_rank, low=0)
        if self.lora_alpha is not None:
            c.in_range("lora_alpha", self.lora_alpha, 0.0, low_open=True)
        if self.lora_rank and self.model is None:
            raise ValueError(lora_tiny_error(self.lora_rank))
        c.choice("task", self.task, TASKS)
        self.chat_levels = tuple(int(c.choice("chat_levels", int(lv), CHAT_LEVELS)) for lv in self.chat_levels)
        if not self.chat_levels:
            raise ValueError(f"chat_levels must name at least one level {sorted(CHAT_LEVELS)}")
        c.choice("reward_mode", self.reward_mode, REWARD_MODES)
        c.in_range("format_weight", self.format_weight, 0.0, 1.0)
        c.integer("chat_eval_per_level", self.chat_eval_per_level, low=1)
        c.integer("warmstart_steps", self.warmstart_steps, low=0)
        c.in_range("warmstart_lr", self.warmstart_lr, 0.0, low_open=True)
        c.integer("warmstart_batch", self.warmstart_batch, low=1)
        if self.warmstart_target is not None:
            c.in_range("warmstart_target", self.warmstart_target, 0.0, 1.0, low_open=True)
        c.integer("prompts_per_step", self.prompts_per_step)
        if self.prompts_per_step < len(self.levels):
            raise ValueError(f"prompts_per_step must be >= {len(self.levels)}, got {self.prompts_per_step}: every step "
                             f"draws at least one prompt per level (levels = {','.join(map(str, self.levels))}), so "
                             f"that every level's reward is measured at every step; use >= {len(self.levels)} "
                             f"prompts or fewer levels")
        if isinstance(self.G, bool) or not isinstance(self.G, int):
            raise TypeError(f"G must be an integer, got {self.G!r}")
        if self.G < 2:
            raise ValueError(f"G must be >= 2: a group of one response has no group baseline "
                             f"(its advantage is always 0); got G = {self.G}")
        c.integer("max_new", self.max_new, low=1)
        c.in_range("temperature", self.temperature, 0.0, low_open=True)
        c.choice("estimator", self.estimator, ESTIMATORS)
        c.choice("adv_scale", self.adv_scale, SCALES)
        c.choice("adv_std", self.adv_std, STDS)
        c.in_range("adv_eps", self.adv_eps, 0.0)
        c.in_range("eps_low", self.eps_low, 0.0, 1.0)
        if self.eps_high is not None:
            c.in_range("eps_high", self.eps_high, 0.0)
        if self.dual_clip is not None:
            c.in_range("dual_clip", self.dual_clip, 1.0, low_open=True)
        c.choice("ratio_level", self.ratio_level, LEVELS)
        c.choice("agg", self.agg, MODES)
        c.in_range("beta", self.beta, 0.0)
        c.choice("kl_kind", self.kl_kind, KL_KINDS)
        c.choice("kl_form", self.kl_form, KL_FORMS)
        c.integer("mu", self.mu, low=1)
        c.in_range("lr", self.lr, 0.0, low_open=True)
        c.integer("lr_warmup", self.lr_warmup, low=0)
        c.in_range("weight_decay", self.weight_decay, 0.0)
        c.in_range("max_grad_norm", self.max_grad_norm, 0.0, low_open=True)
        c.integer("tokens_per_microbatch", self.tokens_per_microbatch, low=0)
        c.integer("max_sampling_rounds", self.max_sampling_rounds, low=1)
        c.integer("overlong_buffer", self.overlong_buffer, low=0, high=self.max_new)
        self._check_beyond()
        return self

    def _check_beyond(self):
        """The fields of notebook 09 (policy loss, rollout correction, induced mismatch)."""
        c = _checks
        check_policy_loss(self.policy_loss, cispo_cap=self.cispo_cap, sapo_tau_pos=self.sapo_tau_pos,
                          sapo_tau_neg=self.sapo_tau_neg, level=self.ratio_level, dual_clip=self.dual_clip)
        c.choice("rollout_is", self.rollout_is, ROLLOUT_IS_MODES)
        if self.rollout_is_max is not None:
            c.in_range("rollout_is_max", self.rollout_is_max, 0.0, low_open=True)
        if self.rollout_is_min is not None:
            c.in_range("rollout_is_min", self.rollout_is_min, 0.0)
            if self.rollout_is_max is not None and self.rollout_is_min >= self.rollout_is_max:
                raise ValueError(f"rollout_is_min ({self.rollout_is_min}) must be < rollout_is_max "
                                 f"({self.rollout_is_max})")
        if self.sampler_temperature is not None:
            c.in_range("sampler_temperature", self.sampler_temperature, 0.0, low_open=True)
        if not isinstance(self.sampler_bf16, bool):
            raise TypeError(f"sampler_bf16 must be True or False, got {self.sampler_bf16!r}")

    @property
    def sample_temperature(self) -> float:
        """The temperature the sampler draws at (``sampler_temperature``, or ``temperature``)."""
        return self.temperature if self.sampler_temperature is None else self.sampler_temperature

    # -- the arguments of the core functions, from one place -------------------------
    @property
    def clip_high(self) -> float:
        """ε_high with the symmetric default resolved (:func:`grpo_lab.methods.resolve_eps_high`)."""
        return methods.resolve_eps_high(self.eps_low, self.eps_high)

    def adv_kwargs(self) -> dict:
        """Keyword arguments of :func:`grpo_lab.advantages.advantages_from_flat` for step 3:
        ``estimator``, ``scale``, ``std``, ``eps``."""
        return {"estimator": self.estimator, "scale": self.adv_scale, "std": self.adv_std, "eps": self.adv_eps}

    def loss_kwargs(self) -> dict:
        """Keyword arguments of :func:`grpo_lab.losses.grpo_loss` for steps 4–6 (all but the tensors).

        ``mode``, ``max_len`` (= ``max_new``, Dr. GRPO's C), ``eps_low``, ``eps_high``,
        ``dual_clip``, ``level``, ``kl_kind`` and ``beta`` — β is 0 when the KL is folded into
        the reward (``kl_form="reward"``), since it must not be counted twice. Pass
        ``ref_logp`` yourself (the reference log-probs, or None without a KL term).
        """
        return {"mode": self.agg, "max_len": self.max_new, "eps_low": self.eps_low, "eps_high": self.eps_high,
                "dual_clip": self.dual_clip, "level": self.ratio_level, "kl_kind": self.kl_kind,
                "beta": self.beta if self.kl_form == "loss" else 0.0, "policy_loss": self.policy_loss,
                "cispo_cap": self.cispo_cap, "sapo_tau_pos": self.sapo_tau_pos, "sapo_tau_neg": self.sapo_tau_neg}

    # -- serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d["levels"] = list(self.levels)
        d["chat_levels"] = list(self.chat_levels)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "GRPOConfig":
        known = {f.name for f in fields(cls)}
        d = {cls.RENAMED.get(k, k): v for k, v in d.items()}
        return cls(**{k: (tuple(v) if k in ("levels", "chat_levels") else v) for k, v in d.items() if k in known}).validate()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)


class _PresetAttr:
    """``GRPOConfig.preset(name, **overrides)`` on the class; the preset's name on an instance.

    The field ``preset`` (a string, saved in config.json) and the constructor
    ``GRPOConfig.preset(...)`` share one name (both are public); a plain classmethod would
    replace the field's default.
    """

    def __get__(self, obj, cls=None):
        if obj is None:
            return cls._from_preset
        return obj.__dict__["preset"]

    def __set__(self, obj, value):
        obj.__dict__["preset"] = value


GRPOConfig.preset = _PresetAttr()
