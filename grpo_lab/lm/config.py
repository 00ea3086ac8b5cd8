"""``GRPOConfig``: every knob of the LM loop, documented, with the 2025 presets.

``GRPOConfig.preset(name, **overrides)`` starts from one of

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
==========  =======================================================================

Every field can be overridden (``GRPOConfig.preset("dapo", beta=0.01)``).
:meth:`GRPOConfig.validate` raises a ``ValueError`` naming the field for bad values.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field, fields

from grpo_lab import _checks
from grpo_lab.advantages import SCALES, STDS
from grpo_lab.losses import KL_KINDS, LEVELS, MODES
from grpo_lab.lm.model import FAMILIES
from grpo_lab.lm.tasks import LEVEL_RANGES

DEVICES = ("auto", "cpu", "cuda")
KL_FORMS = ("loss", "reward")


@dataclass
class GRPOConfig:
    """All settings of one GRPO run on the tiny LM (see the module docstring for presets)."""

    # -- run ---------------------------------------------------------------------------
    preset: str = "grpo"            # name of the preset this config started from (informative)
    steps: int = 200                # GRPO steps (one batch of P·G responses each)
    seed: int = 0                   # seeds the model init, task sampling and the sampler
    out: str | None = None          # run folder: metrics.csv/jsonl, checkpoints; None = in memory only
    resume: bool = False            # continue from the last checkpoint in ``out``
    checkpoint_every: int = 0       # save a checkpoint every N steps (0 = only at the end)
    device: str = "auto"            # "auto" (cuda if available), "cpu" or "cuda"
    threads: int | None = 1         # torch CPU threads; 1 is fastest for the tiny model on a shared CPU
                                    # (more threads thrash when the cores are busy); None = torch's default
    bf16: bool = True               # bf16 autocast on CUDA (ignored on CPU, which runs fp32)
    progress: bool = True           # tqdm.auto progress bar
    checkpoint_seconds: float = field(default=120.0, metadata={
        "help": "also checkpoint once this many seconds have passed since the last checkpoint, so a killed "
                "run loses at most that much work (0 = only checkpoint_every and the end)"})

    # -- model ---------------------------------------------------------------------------
    model: str | None = None        # local causal-LM directory (+ tokenizer); None = tiny random model
    family: str = "llama"           # tiny model family: "llama" or "qwen2"
    hidden: int = 128               # tiny model width
    intermediate: int = 512         # tiny model MLP width
    layers: int = 4                 # tiny model depth
    heads: int = 4                  # tiny model attention heads
    kv_heads: int | None = None     # tiny model key/value heads (None = heads; fewer = grouped-query attention)
    hub: bool = field(default=False, metadata={
        "help": "allow `model` to be a Hugging Face Hub id (org/name) and download it; off by default, "
                "so nothing touches the network and a mistyped local path is an error"})

    # -- task -----------------------------------------------------------------------------
    levels: tuple = (1, 2)          # addition difficulty levels (1: 0–9, 2: 10–99, 3: 100–999)
    partial_credit: bool = False    # reward = partial credit instead of 0/1 (seed 004 §三 remedy 4)
    eval_per_level: int = 200       # held-out problems per level for before/after accuracy

    # -- warm start (SFT on demonstrations, seed 004 §三 remedy 3) -------------------------
    warmstart_steps: int = 1000     # cap on SFT steps before the anneal (0 = no warm start)
    warmstart_target: float | None = 0.5  # stop once every level's probe accuracy reaches this (None = all steps)
    warmstart_lr: float = 3e-3
    warmstart_batch: int = 64
    cache_dir: str | None = None    # warm-start cache (None = $GRPO_LAB_CACHE or ~/.cache/grpo_lab)

    # -- step 1: sampling ----------------------------------------------------------------
    prompts_per_step: int = 32      # P prompts per step
    G: int = 8                      # responses per prompt (group size), >= 2
    max_new: int = 8                # token budget per response (EOS included)
    temperature: float = 1.0        # sampling temperature (log-probs use the same τ)

    # -- step 3: group advantages (eq. 1) ------------------------------------------------
    adv_scale: str = "group"        # "group" (÷ group std), "batch", "none" (Dr. GRPO)
    adv_std: str = "population"     # "population" (the seeds) or "sample" (Bessel, TRL/verl)
    adv_eps: float = 1e-4           # added to the std

    # -- steps 4–6: the loss (eqs. 2–7) and the update -----------------------------------
    eps_low: float = 0.2            # clip range low side, ρ >= 1 − eps_low
    eps_high: float | None = None   # clip range high side (None = eps_low; DAPO 0.28)
    dual_clip: float | None = None  # dual-clip bound c > 1 for Â < 0 (None = off)
    ratio_level: str = "token"      # "token" (eq. 4) or "sequence" (GSPO)
    agg: str = "seq-mean-token-mean"  # aggregation: eq. (6), "token-mean" eq. (7), Dr. GRPO …
    beta: float = 0.04              # KL coefficient β
    kl_kind: str = "k3"             # KL estimator: k1, k2, k3 (eq. 5)
    kl_form: str = "loss"           # "loss" (form 1, KL term in the loss) or "reward" (form 2)
    kl_metric: bool = True          # compute the KL column even when β = 0 (costs a reference forward)
    mu: int = 1                     # μ: policy updates per batch (inner iterations)
    dedup: bool = True              # run identical (prompt, response) pairs once (exact; saves compute)
    lr: float = 1e-4                # AdamW learning rate for GRPO
    lr_warmup: int = 10             # linear learning-rate warm-up over the first N steps (0 = none)
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0      # gradient clipping (the grad_norm metric is before clipping)

    # -- DAPO extras ---------------------------------------------------------------------
    dynamic_sampling: bool = False  # drop degenerate groups, resample until P informative groups
    max_sampling_rounds: int = 4    # cap on sampling rounds per step with dynamic sampling
    overlong_buffer: int = 0        # soft overlong shaping over the last N tokens (0 = off)

    # -----------------------------------------------------------------------------------
    PRESETS = {
        "grpo": {},
        "dr_grpo": {"adv_scale": "none", "agg": "seq-mean-token-sum-norm", "beta": 0.0},
        "dapo": {"eps_low": 0.2, "eps_high": 0.28, "dynamic_sampling": True, "agg": "token-mean",
                 "overlong_buffer": 2, "beta": 0.0},
        "gspo": {"ratio_level": "sequence", "eps_low": 3e-4, "eps_high": 4e-4, "beta": 0.0},
    }

    @classmethod
    def preset(cls, name: str, **overrides) -> "GRPOConfig":
        """The config of preset ``name`` ("grpo", "dr_grpo", "dapo", "gspo") with ``overrides``."""
        if name not in cls.PRESETS:
            raise ValueError(f"preset must be one of {', '.join(map(repr, cls.PRESETS))}; got {name!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown GRPOConfig field(s) {unknown}")
        cfg = cls(preset=name, **{**cls.PRESETS[name], **overrides})
        return cfg.validate()

    def replace(self, **changes) -> "GRPOConfig":
        return dataclasses.replace(self, **changes).validate()

    def validate(self) -> "GRPOConfig":
        """Check every field; returns self. Errors name the field."""
        c = _checks
        c.choice("preset", self.preset, self.PRESETS)
        c.integer("steps", self.steps, low=0)
        c.integer("seed", self.seed, low=0)
        c.integer("checkpoint_every", self.checkpoint_every, low=0)
        c.in_range("checkpoint_seconds", self.checkpoint_seconds, 0.0)
        c.choice("device", self.device, DEVICES)
        if self.threads is not None:
            c.integer("threads", self.threads, low=1)
        c.choice("family", self.family, FAMILIES)
        for name in ("hidden", "intermediate", "layers", "heads"):
            c.integer(name, getattr(self, name), low=1)
        if self.kv_heads is not None:
            c.integer("kv_heads", self.kv_heads, low=1)
        self.levels = tuple(int(c.choice("levels", int(lv), LEVEL_RANGES)) for lv in self.levels)
        if not self.levels:
            raise ValueError("levels must name at least one difficulty level (1, 2, 3)")
        c.integer("eval_per_level", self.eval_per_level, low=1)
        c.integer("warmstart_steps", self.warmstart_steps, low=0)
        c.in_range("warmstart_lr", self.warmstart_lr, 0.0, low_open=True)
        c.integer("warmstart_batch", self.warmstart_batch, low=1)
        if self.warmstart_target is not None:
            c.in_range("warmstart_target", self.warmstart_target, 0.0, 1.0, low_open=True)
        c.integer("prompts_per_step", self.prompts_per_step, low=len(self.levels))
        if isinstance(self.G, bool) or not isinstance(self.G, int):
            raise TypeError(f"G must be an integer, got {self.G!r}")
        if self.G < 2:
            raise ValueError(f"G must be >= 2: a group of one response has no group baseline "
                             f"(its advantage is always 0); got G = {self.G}")
        c.integer("max_new", self.max_new, low=1)
        c.in_range("temperature", self.temperature, 0.0, low_open=True)
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
        c.integer("max_sampling_rounds", self.max_sampling_rounds, low=1)
        c.integer("overlong_buffer", self.overlong_buffer, low=0, high=self.max_new)
        return self

    # -- serialisation ---------------------------------------------------------------
    def to_dict(self) -> dict:
        d = asdict(self)
        d["levels"] = list(self.levels)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "GRPOConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: (tuple(v) if k == "levels" else v) for k, v in d.items() if k in known}).validate()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    # Fields that may differ between an interrupted run and its resumption.
    RUNTIME_FIELDS = ("steps", "resume", "progress", "out", "device", "threads", "checkpoint_every",
                      "checkpoint_seconds", "hub")

    def to_trl(self, num_processes: int = 1) -> dict:
        """Keyword arguments for ``trl.GRPOConfig`` describing the same recipe (not a TRL object).

        Delegates to :func:`grpo_lab.lm.handoff.to_trl_kwargs`, the one mapping (checked
        against TRL 1.16 in ``tests/test_trl_handoff.py``); see
        :func:`grpo_lab.lm.handoff.differences_table` for where the conventions differ.
        """
        from grpo_lab.lm.handoff import to_trl_kwargs

        return to_trl_kwargs(self, num_processes=num_processes)

