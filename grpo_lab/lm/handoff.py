"""Hand-off: the same experiment in TRL's ``GRPOConfig`` and in verl's option names.

A student who outgrows one machine should carry the *same* recipe to a framework that runs
on many GPUs. Three functions translate a :class:`grpo_lab.lm.config.GRPOConfig`:

* :func:`to_trl_kwargs` — keyword arguments for ``trl.GRPOConfig`` (names checked against
  TRL 1.16; TRL itself is never imported here, it is an optional extra);
* :func:`to_verl_overrides` — verl's dotted Hydra option names (``key=value`` on the
  ``verl.trainer.main_ppo`` command line; :func:`verl_command_line` renders them);
* :func:`mapping_table` — a ``pandas.DataFrame`` with every preset × both frameworks,
  one row per knob, built from the *same* rows as the two functions above, so the table a
  notebook shows cannot drift from the arguments a script passes.

:data:`DIFFERENCES` (and :func:`differences_table`) lists every place where the conventions
differ from the seeds or from each other — the std estimator of eq. (1), the ε of eq. (3),
Dr. GRPO's constant, the KL estimator of eq. (5), defaults that silently change the recipe.

Concept by concept (seed 000 eqs. (1)–(7); seed 004 §四 for the 2025 branches):

==========================  ==========================  =========================================
grpo_lab field              TRL ``GRPOConfig``          verl option
==========================  ==========================  =========================================
G (group size)              num_generations             actor_rollout_ref.rollout.n
prompts_per_step P          per_device_train_batch_size data.train_batch_size (prompts),
                            (completions: P·G / procs)  actor.ppo_mini_batch_size = P
max_new                     max_completion_length       data.max_response_length
adv_scale (eq. 1)           scale_rewards               algorithm.norm_adv_by_std_in_grpo
eps_low / eps_high (eq. 3)  epsilon / epsilon_high      actor.clip_ratio_low / clip_ratio_high
dual_clip                   delta                       actor.clip_ratio_c
ratio_level (eq. 4 / GSPO)  importance_sampling_level   actor.policy_loss.loss_mode (gspo)
agg (eqs. 6, 7, Dr. GRPO)   loss_type                   actor.loss_agg_mode
beta, kl_kind (eq. 5)       beta (k3 only)              actor.use_kl_loss, kl_loss_coef, kl_loss_type
mu                          num_iterations              actor.ppo_epochs
dynamic_sampling            (none)                      algorithm.filter_groups.* (DAPO recipe)
overlong_buffer             a reward function           reward.reward_kwargs.overlong_buffer_cfg.*
==========================  ==========================  =========================================

(``actor.`` abbreviates ``actor_rollout_ref.actor.``.) verl's names were checked against its
``ppo_trainer.yaml`` / ``core_algos.py`` and the DAPO recipe documentation; verl moves fast,
so check them against the release you install: ``tests/test_verl_config.py`` checks every
key against the trainer config shipped in the verl wheel (:data:`VERL_VERSION_CHECKED`).
"""
from __future__ import annotations

from dataclasses import dataclass

from grpo_lab import methods
from grpo_lab.losses import KL_ALIASES, MODES
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.handoff_beyond import VERL_POLICY_LOSS, Row, row_policy_loss, row_rollout_is, row_sampler

TRL_VERSION_CHECKED = "1.16.0"
# TRL 1.16's default of GRPOConfig.use_bias_correction_kl (tests/test_handoff.py reads it from the installed
# TRL's dataclass field): True multiplies the k3 term by the ratio ρ. The mapping passes False (eq. (2)).
TRL_BIAS_CORRECTION_KL_DEFAULT = True

# Our aggregation modes (grpo_lab.losses.MODES) in each framework, derived from the registry:
# TRL's loss_type is named after the method whose aggregation it is (grpo: eq. 6, dapo: eq. 7
# over the whole batch's tokens, dr_grpo: Σ / (B · max_completion_length)); losses.MODE_ALIASES
# reads those names back (tests/test_methods.py checks the two agree).
TRL_LOSS_TYPE = {methods.get(n).agg: n for n in ("grpo", "dapo", "dr_grpo")}
VERL_LOSS_AGG = {m: m for m in MODES}                     # verl's loss_agg_mode uses our names
VERL_KL_TYPE = {kind: name for name, kind in KL_ALIASES.items()}   # k1 kl, k2 mse, k3 low_var_kl
ACTOR = "actor_rollout_ref.actor."
# verl 0.9's DAPO reward manager reads reward.reward_kwargs.overlong_buffer_cfg (not declared in the
# trainer config, hence the "+" of a Hydra addition) and reward.reward_kwargs.max_resp_len
OVERLONG = "reward.reward_kwargs.overlong_buffer_cfg."
VERL_VERSION_CHECKED = "0.9.1"     # tests/test_verl_config.py reads its trainer config from the wheel
ROLLOUT = "actor_rollout_ref.rollout."

_NOT_IN_TRL = "TRL's GRPOTrainer"


_Row = Row     # the row type, shared with grpo_lab.lm.handoff_beyond (the rows beyond the lecture notes)


def _check(config) -> GRPOConfig:
    if not isinstance(config, GRPOConfig):
        raise TypeError(f"config must be a grpo_lab.lm.GRPOConfig (e.g. GRPOConfig.preset('grpo')), "
                        f"got {type(config).__name__}")
    return config.validate()


def _rows(c: GRPOConfig, num_processes: int = 1) -> list[_Row]:
    """Every knob of the recipe, in both frameworks. The single source of the mapping."""
    eps_high = c.clip_high
    B = c.prompts_per_step * c.G
    rows = [
        _Row("group size G (eq. 1)", {"G": c.G}, {"num_generations": c.G}, {ROLLOUT + "n": c.G}),
        _Row("batch per step: P prompts × G responses",
             {"prompts_per_step": c.prompts_per_step},
             {"per_device_train_batch_size": B // num_processes, "gradient_accumulation_steps": 1},
             {"data.train_batch_size": c.prompts_per_step, ACTOR + "ppo_mini_batch_size": c.prompts_per_step},
             trl_note=f"counts completions per process (P·G / {num_processes} processes)",
             verl_note="counts prompts; verl multiplies by rollout.n; mini-batch = batch: one update per epoch",
             trl_error="" if B % num_processes == 0 else
             f"P·G = {B} completions cannot be split evenly over num_processes = {num_processes}"),
        _Row("token budget per response (EOS included)", {"max_new": c.max_new},
             {"max_completion_length": c.max_new}, {"data.max_response_length": c.max_new}),
        _Row("sampling temperature τ (log-probs use the same τ)", {"temperature": c.temperature},
             {"temperature": c.temperature}, {ROLLOUT + "temperature": c.temperature}),
        _row_scale(c),
        _Row("std estimator in eq. (1)", {"adv_std": c.adv_std}, {}, {},
             trl_note="fixed: sample std (Bessel, ÷ G−1)", verl_note="fixed: sample std (torch.std, ÷ G−1)"),
        _Row("ε added to the std in eq. (1)", {"adv_eps": c.adv_eps}, {}, {},
             trl_note="fixed: 1e-4", verl_note="fixed: 1e-6"),
        *_rows_eps(c, eps_high),
        _row_dual_clip(c),
        _Row("importance ratio level (eq. 4 token / GSPO sequence)", {"ratio_level": c.ratio_level},
             {"importance_sampling_level": c.ratio_level},
             {ACTOR + "policy_loss.loss_mode": "gspo" if c.ratio_level == "sequence" else "vanilla"}
             if c.policy_loss == "clip" else {},
             verl_note="" if c.policy_loss == "clip" else "loss_mode set by the policy-term row"),
        _row_agg(c),
        row_policy_loss(c),
        row_rollout_is(c),
        row_sampler(c),
        *_rows_kl(c),
        *_rows_capstone(c),
        _Row("μ: policy updates per batch", {"mu": c.mu}, {"num_iterations": c.mu}, {ACTOR + "ppo_epochs": c.mu}),
        _row_lr(c),
        _Row("weight decay", {"weight_decay": c.weight_decay}, {"weight_decay": c.weight_decay},
             {ACTOR + "optim.weight_decay": c.weight_decay}, verl_note="verl's default is 0.01"),
        _Row("gradient clipping (global norm)", {"max_grad_norm": c.max_grad_norm},
             {"max_grad_norm": c.max_grad_norm}, {ACTOR + "grad_clip": c.max_grad_norm}),
        _Row("truncated responses stay in the loss (reward 0)", {}, {"mask_truncated_completions": False}, {},
             verl_note="verl keeps them by default"),
        _row_dynamic(c),
        _row_overlong(c),
        _row_device(c),
        _Row("steps and seed", {"steps": c.steps, "seed": c.seed},
             {"max_steps": c.steps, "seed": c.seed} if c.steps > 0 else {"seed": c.seed},
             {"trainer.total_training_steps": c.steps} if c.steps > 0 else {}),
    ]
    return rows


def _rows_eps(c: GRPOConfig, eps_high: float) -> list[_Row]:
    lo, hi = "clip range, low side: ρ ≥ 1 − ε_low (eq. 3)", "clip range, high side: ρ ≤ 1 + ε_high (DAPO clip-higher)"
    if c.policy_loss == "cispo":          # CISPO has a cap on the weight instead (policy-term row)
        note = "unused by CISPO: its cap is in the policy-term row"
        return [_Row(lo, {"eps_low": c.eps_low}, {}, {}, trl_note=note, verl_note=note),
                _Row(hi, {"eps_high": c.eps_high}, {}, {}, trl_note=note, verl_note=note)]
    return [_Row(lo, {"eps_low": c.eps_low}, {"epsilon": c.eps_low},
                 {ACTOR + "clip_ratio_low": c.eps_low, ACTOR + "clip_ratio": c.eps_low}),
            _Row(hi, {"eps_high": c.eps_high}, {"epsilon_high": eps_high}, {ACTOR + "clip_ratio_high": eps_high},
                 trl_note="None in TRL also means = epsilon; passed explicitly")]


def _row_lr(c: GRPOConfig) -> _Row:
    concept = "learning rate (AdamW): linear warm-up over lr_warmup steps, then constant"
    ours = {"lr": c.lr, "lr_warmup": c.lr_warmup}
    if not c.lr_warmup:
        return _Row(concept, ours, {"learning_rate": c.lr, "lr_scheduler_type": "constant"},
                    {ACTOR + "optim.lr": c.lr},
                    trl_note="TrainingArguments would decay it linearly to 0 by default")
    shift = "one step later: step k (from 0) gets k/N of the lr, ours (k+1)/N"
    return _Row(concept, ours,
                {"learning_rate": c.lr, "lr_scheduler_type": "constant_with_warmup", "warmup_steps": c.lr_warmup},
                {ACTOR + "optim.lr": c.lr, ACTOR + "optim.lr_warmup_steps": c.lr_warmup},
                trl_note=f"the warm-up runs {shift}", verl_note=f"warm-up from 0 like TRL's ({shift})")


def _row_device(c: GRPOConfig) -> _Row:
    import torch

    concept = "device and precision (fp32 on CPU, bf16 autocast on CUDA)"
    ours = {"device": c.device, "bf16": c.bf16}
    cuda = c.device == "cuda" or (c.device == "auto" and torch.cuda.is_available())
    if c.device == "cpu":
        return _Row(concept, ours, {"use_cpu": True, "bf16": False}, {},
                    trl_note="TRL's bf16 default is True", verl_note="verl needs GPUs")
    return _Row(concept, ours, {"bf16": bool(c.bf16 and cuda)}, {},
                trl_note="device='auto' resolved when translated" if c.device == "auto" else "",
                verl_note="GPUs only; FSDP mixed precision (bf16 compute, fp32 parameters) by default")


def _row_scale(c: GRPOConfig) -> _Row:
    ours = {"adv_scale": c.adv_scale}
    concept = "advantage denominator (eq. 1; Dr. GRPO drops it)"
    if c.adv_scale == "batch":
        return _Row(concept, ours, {"scale_rewards": "batch"}, {},
                    verl_error="adv_scale='batch' (std of the whole batch) has no switch in verl's grpo estimator")
    return _Row(concept, ours, {"scale_rewards": c.adv_scale},
                {"algorithm.adv_estimator": "grpo", "algorithm.norm_adv_by_std_in_grpo": c.adv_scale == "group"})


def _rows_capstone(c: GRPOConfig) -> list[_Row]:
    """The advantage estimator and LoRA: rows only when they differ from GRPO / full fine-tuning."""
    rows = []
    if c.estimator != "grpo":
        verl = {"algorithm.adv_estimator": "rloo"} if c.estimator == "rloo" else {}
        rows.append(_Row("advantage estimator (grpo: eq. 1)", {"estimator": c.estimator}, {}, verl,
                         trl_error=f"estimator={c.estimator!r} has no switch in TRL's GRPOTrainer (group advantages only)",
                         verl_error="" if verl else f"estimator={c.estimator!r} (Â = r, the RFT baseline) has no verl "
                                                    f"adv_estimator"))
    if c.lora_rank:
        rows.append(_Row("LoRA rank (0 = full fine-tuning)", {"lora_rank": c.lora_rank}, {},
                         {"actor_rollout_ref.model.lora_rank": c.lora_rank},
                         trl_note="not a GRPOConfig field: pass GRPOTrainer(peft_config=grpo_lab.lm.lora.peft_config(cfg))"))
    return rows


def _row_dual_clip(c: GRPOConfig) -> _Row:
    concept = "dual clip: loss of Â < 0 tokens capped at −c·Â"
    if c.dual_clip is None:
        return _Row(concept, {"dual_clip": None}, {}, {},
                    trl_note="off by default (delta=None)",
                    verl_note="always on in verl's vanilla loss (clip_ratio_c default 3.0); binds only if ρ > 3")
    eps_high = c.clip_high
    err = ""
    if c.dual_clip <= 1.0 + eps_high:
        err = f"TRL's delta equals a dual clip only when delta > 1 + epsilon_high; got dual_clip = {c.dual_clip}"
    return _Row(concept, {"dual_clip": c.dual_clip}, {"delta": c.dual_clip}, {ACTOR + "clip_ratio_c": c.dual_clip},
                trl_note="delta caps ρ before the min: for Â < 0 the same value and gradient as a dual clip",
                trl_error=err)


def _row_agg(c: GRPOConfig) -> _Row:
    concept = "aggregation over tokens (eq. 6 / eq. 7 / Dr. GRPO constant)"
    ours = {"agg": c.agg}
    verl = {ACTOR + "loss_agg_mode": VERL_LOSS_AGG[c.agg]}
    if c.policy_loss != "clip":
        return _Row(concept, ours, {}, verl, trl_note="loss_type set by the policy-term row")
    if c.agg not in TRL_LOSS_TYPE:
        return _Row(concept, ours, {}, verl,
                    trl_error=f"agg={c.agg!r} (per-sequence token sums, no normaliser) has no TRL loss_type")
    note = {"seq-mean-token-sum-norm": f"TRL's constant: B · max_completion_length = B · {c.max_new}",
            "token-mean": "'dapo' counts the tokens of the whole generation batch over all processes",
            "seq-mean-token-mean": "TRL's default loss_type is 'dapo', so it is passed explicitly"}[c.agg]
    vnote = {"seq-mean-token-sum-norm": "verl's constant: the padded response length (loss_mask.shape[-1])",
             "token-mean": "verl's default", "seq-mean-token-mean": ""}[c.agg]
    return _Row(concept, ours, {"loss_type": TRL_LOSS_TYPE[c.agg]}, verl, trl_note=note, verl_note=vnote)


def _rows_kl(c: GRPOConfig) -> list[_Row]:
    ours = {"beta": c.beta, "kl_kind": c.kl_kind, "kl_form": c.kl_form}
    concept = "KL to the reference policy: β and estimator (eq. 5)"
    if c.beta == 0.0:
        return [_Row(concept, ours, {"beta": 0.0}, {ACTOR + "use_kl_loss": False, "algorithm.use_kl_in_reward": False},
                     trl_note="β = 0: TRL loads no reference model")]
    trl_err = ""
    if c.kl_form != "loss":
        trl_err = "kl_form='reward' (KL folded into the reward) does not exist in TRL's GRPOTrainer; use 'loss'"
    elif c.kl_kind != "k3":
        trl_err = f"TRL's GRPOTrainer always uses k3 (eq. 5); kl_kind={c.kl_kind!r} cannot be passed"
    trl = {"beta": c.beta, "use_bias_correction_kl": False}
    if c.kl_form == "loss":
        verl = {ACTOR + "use_kl_loss": True, ACTOR + "kl_loss_coef": c.beta,
                ACTOR + "kl_loss_type": VERL_KL_TYPE[c.kl_kind], "algorithm.use_kl_in_reward": False}
    else:
        verl = {ACTOR + "use_kl_loss": False, "algorithm.use_kl_in_reward": True,
                "algorithm.kl_penalty": VERL_KL_TYPE[c.kl_kind], "algorithm.kl_ctrl.type": "fixed",
                "algorithm.kl_ctrl.kl_coef": c.beta}
    return [_Row(concept, ours, trl, verl, trl_error=trl_err,
                 trl_note=f"k3 always; use_bias_correction_kl=False keeps eq. (2)'s unweighted KL term "
                          f"(TRL's default is {TRL_BIAS_CORRECTION_KL_DEFAULT})",
                 verl_note="low_var_kl is k3 clamped to [−10, 10]" if c.kl_kind == "k3" else "")]


def _row_dynamic(c: GRPOConfig) -> _Row:
    concept = "dynamic sampling: drop 退化组 degenerate groups, resample (DAPO)"
    ours = {"dynamic_sampling": c.dynamic_sampling, "max_sampling_rounds": c.max_sampling_rounds}
    if not c.dynamic_sampling:
        return _Row(concept, {"dynamic_sampling": False}, {}, {},
                    trl_note="not available", verl_note="off unless the DAPO recipe's filter_groups is enabled")
    return _Row(concept, ours, {}, {"algorithm.filter_groups.enable": True, "algorithm.filter_groups.metric": "acc",
                                    "algorithm.filter_groups.max_num_gen_batches": c.max_sampling_rounds},
                trl_note="no equivalent: degenerate groups stay in the batch with Â = 0",
                verl_note="read by the DAPO recipe's trainer (recipe/dapo)")


def _row_overlong(c: GRPOConfig) -> _Row:
    concept = "soft overlong reward shaping over the last N tokens (DAPO)"
    if not c.overlong_buffer:
        return _Row(concept, {"overlong_buffer": 0}, {}, {}, trl_note="off", verl_note="off")
    return _Row(concept, {"overlong_buffer": c.overlong_buffer}, {},
                {"reward.reward_manager.name": "dapo",
                 f"+{OVERLONG}enable": True, f"+{OVERLONG}len": c.overlong_buffer,
                 f"+{OVERLONG}penalty_factor": 1.0, "+reward.reward_kwargs.max_resp_len": c.max_new},
                verl_note="'+' adds keys verl's config does not declare (Hydra); read by the dapo reward manager",
                trl_note=f"a second reward function: trl_compat.OverlongReward(max_new={c.max_new}, "
                         f"buffer={c.overlong_buffer})")


# ---------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------
def to_trl_kwargs(config: GRPOConfig, *, num_processes: int = 1) -> dict:
    """Keyword arguments for ``trl.GRPOConfig`` that describe the same recipe (TRL not imported).

    ``trl.GRPOConfig(output_dir=..., **to_trl_kwargs(cfg))`` gives TRL's version of the run;
    add compute settings yourself (``bf16``, ``gradient_checkpointing``, ``use_vllm``,
    ``report_to``). ``num_processes`` is the number of processes ``accelerate launch`` starts:
    TRL counts the batch per process, so P·G must divide evenly.

    Raises ``ValueError`` naming the field when the config uses something TRL's
    GRPOTrainer cannot express (KL in the reward, a KL estimator other than k3,
    ``agg="seq-mean-token-sum"``). What TRL does differently but can still run —
    the sample std, a fixed ε in eq. (1), no dynamic sampling, the overlong shaping as a
    reward function — is listed in :data:`DIFFERENCES`.
    """
    c = _check(config)
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"num_processes must be a positive integer, got {num_processes!r}")
    out = {}
    for row in _rows(c, num_processes):
        if row.trl_error:
            raise ValueError(f"{', '.join(row.ours) or row.concept}: {row.trl_error}")
        out.update(row.trl)
    return out


def to_verl_overrides(config: GRPOConfig) -> dict:
    """verl's Hydra overrides (dotted option name -> value) for the same recipe.

    Pass them as ``key=value`` on the ``python -m verl.trainer.main_ppo`` command line
    (:func:`verl_command_line`), or with the DAPO recipe's entry point when
    ``dynamic_sampling`` / ``overlong_buffer`` are on. Raises ``ValueError`` naming the
    field for settings verl's GRPO path cannot express (``adv_scale="batch"``).
    """
    c = _check(config)
    out = {}
    for row in _rows(c):
        if row.verl_error:
            raise ValueError(f"{', '.join(row.ours) or row.concept}: {row.verl_error}")
        out.update(row.verl)
    return out


def _fmt_value(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def verl_command_line(config: GRPOConfig) -> list[str]:
    """``key=value`` strings for verl's command line (model, data paths and hardware not included)."""
    return [f"{k}={_fmt_value(v)}" for k, v in to_verl_overrides(config).items()]


def _cell(d: dict, note: str, error: str) -> str:
    if error:
        return f"✗ {error}"
    text = ", ".join(f"{k.removeprefix(ACTOR).removeprefix('actor_rollout_ref.')}={v!r}" for k, v in d.items())
    if note:
        return f"{text} ({note})" if text else f"— ({note})"
    return text or "—"


def mapping_table(presets=None, **overrides):
    """A ``pandas.DataFrame``: every preset × both frameworks, one row per knob.

    Columns: ``preset, concept, grpo_lab, TRL, verl``. Each cell shows ``name=value``;
    ``—`` means nothing needs passing (the framework's default or fixed behaviour, explained
    in parentheses), ``✗`` that the framework cannot express the setting. verl names drop
    the ``actor_rollout_ref.actor.`` / ``actor_rollout_ref.`` prefixes for width.
    ``overrides`` are applied to every preset (e.g. ``max_new=16``).
    """
    import pandas as pd

    names = list(GRPOConfig.PRESETS) if presets is None else [presets] if isinstance(presets, str) else list(presets)
    records = []
    for name in names:
        c = GRPOConfig.preset(name, **overrides)
        for row in _rows(c):
            records.append({"preset": name, "concept": row.concept,
                            "grpo_lab": ", ".join(f"{k}={v!r}" for k, v in row.ours.items()) or "—",
                            "TRL": _cell(row.trl, row.trl_note, row.trl_error),
                            "verl": _cell(row.verl, row.verl_note, row.verl_error)})
    return pd.DataFrame.from_records(records, columns=["preset", "concept", "grpo_lab", "TRL", "verl"])


# ---------------------------------------------------------------------------------
# Where the conventions differ
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    topic: str
    grpo_lab: str       # the seeds' / this course's convention
    trl: str            # TRL 1.16
    verl: str
    effect: str         # what changes in a run, if anything


DIFFERENCES: list[Difference] = [
    Difference("std estimator in eq. (1)",
               "population std, ÷ G (the seeds: rewards 1,1,0,0 → ±1); adv_std='sample' switches",
               "sample std, ÷ (G−1), not configurable (1,1,0,0 → ±0.866)",
               "torch.std, sample std, ÷ (G−1), not configurable",
               "every Â is smaller by √((G−1)/G) (0.935 for G = 8); signs, zeros of 退化组 degenerate "
               "groups and the clip decisions are unchanged, but the policy term's weight relative to β·KL drops"),
    Difference("ε added to the std in eq. (1)", "adv_eps = 1e-4 (configurable)", "1e-4, fixed", "1e-6, fixed",
               "only matters for groups whose std is tiny (partial-credit rewards)"),
    Difference("clip ε of eq. (3): names and placement",
               "eps_low, eps_high (None = symmetric eps_low)",
               "epsilon is the LOW side; epsilon_high the high side (None = epsilon)",
               "clip_ratio (symmetric), clip_ratio_low / clip_ratio_high override each side",
               "a DAPO config needs epsilon=0.2, epsilon_high=0.28 in TRL, clip_ratio_high=0.28 in verl"),
    Difference("Dr. GRPO's constant C (1/C instead of 1/|y_i|)",
               "C = max_new, dividing Σ_i Σ_t by B·C (agg='seq-mean-token-sum-norm')",
               "loss_type='dr_grpo' divides by B · max_completion_length (the same when max_completion_length = max_new)",
               "loss_agg_mode='seq-mean-token-sum-norm' divides by the padded response length of the batch "
               "(loss_mask.shape[-1]); how the batch size enters has changed between verl releases",
               "the loss scale (hence the effective learning rate) differs unless the responses are padded to "
               "max_response_length; the gradient direction is the same"),
    Difference("token-mean (eq. 7): over which tokens",
               "all valid tokens of the step's P·G responses",
               "'dapo': tokens of the whole generation batch over all processes; 'bnpo': the local micro-batch",
               "'token-mean' over the (mini/micro) batch it is computing",
               "identical on one process without gradient accumulation; differs once a batch is split"),
    Difference("default aggregation",
               "each preset sets agg (grpo: seq-mean-token-mean, eq. 6)",
               "loss_type defaults to 'dapo' (token-mean), not eq. (6)",
               "loss_agg_mode defaults to 'token-mean'",
               "a config that omits it silently runs DAPO's aggregation; the mapping always passes it"),
    Difference("KL estimator and its defaults (eq. 5)",
               "kl_kind k1/k2/k3 (default k3), β = 0.04 in the grpo preset, 0 in the others",
               "always k3; beta defaults to 0.0; use_bias_correction_kl defaults to "
               f"{TRL_BIAS_CORRECTION_KL_DEFAULT}, which multiplies the KL term by the ratio ρ — the mapping passes "
               "False to keep eq. (2)",
               "kl_loss_type 'kl' (k1), 'mse' (k2 = ½Δ²), 'low_var_kl' (k3, default, clamped to [−10, 10]); "
               "use_kl_loss defaults to False, kl_loss_coef to 0.001",
               "with the bias correction TRL's KL gradient differs even on-policy (ρ = 1 but ∂ρ ≠ 0)"),
    Difference("where the KL goes",
               "kl_form='loss' (form 1, eq. 2) or 'reward' (form 2, folded into r_i)",
               "in the loss only",
               "use_kl_loss (loss) or algorithm.use_kl_in_reward with algorithm.kl_penalty (reward)",
               "kl_form='reward' cannot be handed to TRL (to_trl_kwargs raises)"),
    Difference("dual clip",
               "dual_clip=None (off) in every preset",
               "no dual clip; delta (two-sided clipping) caps ρ at δ before the min — for Â < 0 the same value "
               "and gradient as a dual clip with c = δ > 1 + ε_high, no effect for Â > 0",
               "always applied to Â < 0 tokens with clip_ratio_c (default 3.0, must be > 1)",
               "none at μ = 1 (ρ ≡ 1); with μ > 1 verl caps exploding negative-advantage ratios at 3"),
    Difference("GSPO (sequence-level ratio)",
               "ratio_level='sequence': s_i = exp(mean_t log ρ_{i,t}) in GSPO-token's stop-gradient form",
               "importance_sampling_level='sequence' uses s_i directly; TRL recommends loss_type='grpo' with it",
               "policy_loss.loss_mode='gspo' (GSPO-token form, log-ratio clamped at 10); some releases force "
               "seq-mean-token-mean whatever loss_agg_mode says",
               "the same gradient after aggregation (Â is per sequence); ε must be ~1e-4, not 0.2"),
    Difference("dynamic sampling (DAPO)",
               "dynamic_sampling: resample until P informative groups (at most max_sampling_rounds)",
               "not available in GRPOTrainer: degenerate groups stay with Â = 0 (frac_reward_zero_std logs them)",
               "algorithm.filter_groups.{enable, metric, max_num_gen_batches} with data.gen_batch_size, "
               "in the DAPO recipe's trainer",
               "a TRL run of the dapo preset has fewer informative groups per step"),
    Difference("overlong reward shaping (DAPO)",
               "overlong_buffer: linear penalty to −1 over the last N tokens, added to r_i",
               "a reward function (trl_compat.OverlongReward, or trl.rewards.get_soft_overlong_punishment); "
               "TRL sums reward functions before eq. (1)",
               "+reward.reward_kwargs.overlong_buffer_cfg.{enable, len, penalty_factor} and max_resp_len, with "
               "reward.reward_manager.name=dapo (verl 0.9; earlier releases: reward_model.overlong_buffer.*)",
               "the same ramp; configured in a different place"),
    Difference("batch-size units",
               "prompts_per_step P and G; a step is one batch of P·G responses",
               "per_device_train_batch_size counts completions per process (P·G / processes); "
               "generation_batch_size = one optimiser step by default",
               "data.train_batch_size and ppo_mini_batch_size count prompts; × rollout.n internally",
               "a wrong unit changes the number of policy updates per batch"),
    Difference("learning-rate schedule (warm-up) and weight decay",
               "linear warm-up over lr_warmup steps (step s gets s/N of lr), then constant; weight_decay = 0",
               "TrainingArguments decay lr linearly to 0 by default (the mapping passes 'constant' or "
               "'constant_with_warmup'); its warm-up starts at 0 (step k from 0 gets k/N): one step behind ours",
               "constant after optim.lr_warmup_steps (also from 0); optim.weight_decay defaults to 0.01",
               "late steps learn less in TRL unless the schedule is passed; the warm-up shift matters only "
               "in the first N steps"),
    Difference("precision and memory defaults",
               "fp32 on CPU, bf16 autocast on CUDA",
               "bf16=True unless fp16, gradient_checkpointing=True in TRL 1.x",
               "bf16 by default; FSDP/Megatron sharding",
               "set bf16=False, gradient_checkpointing=False for an exact CPU comparison"),
]


def differences_table():
    """:data:`DIFFERENCES` as a ``pandas.DataFrame`` (columns topic, grpo_lab, TRL, verl, effect)."""
    import pandas as pd

    return pd.DataFrame([{"topic": d.topic, "grpo_lab": d.grpo_lab, "TRL": d.trl, "verl": d.verl, "effect": d.effect}
                         for d in DIFFERENCES])


__all__ = ["to_trl_kwargs", "to_verl_overrides", "verl_command_line", "mapping_table", "differences_table",
           "DIFFERENCES", "Difference", "TRL_LOSS_TYPE", "VERL_LOSS_AGG", "VERL_KL_TYPE", "TRL_VERSION_CHECKED",
           "VERL_VERSION_CHECKED", "VERL_POLICY_LOSS", "Row"]
