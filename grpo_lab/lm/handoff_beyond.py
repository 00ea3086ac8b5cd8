"""Hand-off rows beyond the lecture notes (notebook 09).

:mod:`grpo_lab.lm.handoff` builds its TRL / verl arguments from rows; the rows of notebook 09's
knobs live here (the policy loss — CISPO, SAPO, GMPO —, the sampler/trainer correction TIS/MIS,
the induced sampler mismatch), with the row type :class:`Row` both modules share. TRL's
defaults beside the course's GRPO preset: :mod:`grpo_lab.lm.trl_defaults`.
"""
from __future__ import annotations

from dataclasses import dataclass

from grpo_lab.lm.config import GRPOConfig

ACTOR = "actor_rollout_ref.actor."
RC = "algorithm.rollout_correction."


@dataclass(frozen=True)
class Row:
    concept: str            # what the knob means, with the lecture notes' equation
    ours: dict              # grpo_lab field -> value
    trl: dict               # TRL GRPOConfig kwarg -> value ({} = nothing to pass)
    verl: dict              # verl dotted option -> value
    trl_note: str = ""      # shown in the table when trl is {} or needs a remark
    verl_note: str = ""
    trl_error: str = ""     # non-empty: TRL cannot express this setting (to_trl_kwargs raises)
    verl_error: str = ""


# policy_loss -> (TRL loss_type, the aggregation TRL's loss_type implies) and verl's loss_mode
TRL_POLICY_LOSS = {"cispo": ("cispo", "token-mean"), "sapo": ("sapo", "seq-mean-token-mean")}
VERL_POLICY_LOSS = {"clip": "vanilla", "cispo": "cispo", "sapo": "sapo", "gmpo": "geo_mean"}


def row_policy_loss(c: GRPOConfig) -> Row:
    """The per-token policy term: eq. (3)'s clip, or CISPO / SAPO / GMPO (beyond the lecture notes)."""
    concept = "per-token policy term (eq. 3 clip; CISPO, SAPO, GMPO beyond the lecture notes)"
    p = c.policy_loss
    if p == "clip":
        return Row(concept, {"policy_loss": "clip"}, {}, {},
                   trl_note="loss_type (aggregation row) picks the clipped loss",
                   verl_note="policy_loss.loss_mode set by the ratio-level row")
    if p == "cispo":
        ours = {"policy_loss": p, "cispo_cap": c.cispo_cap}
        loss_type, agg = TRL_POLICY_LOSS[p]
        return Row(concept, ours, {"loss_type": loss_type, "epsilon_high": c.cispo_cap},
                   {ACTOR + "policy_loss.loss_mode": VERL_POLICY_LOSS[p], ACTOR + "clip_ratio_high": c.cispo_cap - 1.0,
                    ACTOR + "clip_ratio_low": 1.0},
                   trl_note="TRL's epsilon_high IS the cap for cispo (not 1 + ε); no lower bound",
                   verl_note="verl clips the weight to [1 − clip_ratio_low, 1 + clip_ratio_high]; "
                             "clip_ratio_low = 1 puts the floor at 0 (none)",
                   trl_error="" if c.agg == agg else
                   f"TRL's loss_type='cispo' aggregates as {agg}; agg={c.agg!r} cannot be passed")
    if p == "sapo":
        ours = {"policy_loss": p, "sapo_tau_pos": c.sapo_tau_pos, "sapo_tau_neg": c.sapo_tau_neg}
        loss_type, agg = TRL_POLICY_LOSS[p]
        ok = c.agg == agg
        return Row(concept, ours, {"loss_type": loss_type, "sapo_temperature_pos": c.sapo_tau_pos,
                                   "sapo_temperature_neg": c.sapo_tau_neg},
                   {ACTOR + "policy_loss.loss_mode": VERL_POLICY_LOSS[p], ACTOR + "tau_pos": c.sapo_tau_pos,
                    ACTOR + "tau_neg": c.sapo_tau_neg},
                   trl_error="" if ok else f"TRL's loss_type='sapo' aggregates as eq. (6); agg={c.agg!r} cannot be passed",
                   verl_error="" if ok else f"verl's sapo always aggregates as eq. (6); agg={c.agg!r} cannot be passed")
    ok = c.agg == "seq-mean-token-mean"
    return Row(concept, {"policy_loss": p, "eps_low": c.eps_low, "eps_high": c.clip_high}, {},
               {ACTOR + "policy_loss.loss_mode": VERL_POLICY_LOSS[p]},
               verl_note="clip_ratio_low / clip_ratio_high are GMPO's log-space bounds",
               trl_error="TRL 1.16 has no GMPO loss (verl: policy_loss.loss_mode=geo_mean)",
               verl_error="" if ok else f"verl's geo_mean always averages over sequences; agg={c.agg!r} cannot be passed")


def row_rollout_is(c: GRPOConfig) -> Row:
    """TIS / MIS: the weight π_θold/π_sampler (TRL's vllm_importance_sampling_*, verl's rollout_correction)."""
    concept = "sampler/trainer correction π_θold/π_sampler: TIS (truncate) or MIS (mask)"
    ours = {"rollout_is": c.rollout_is, "rollout_is_max": c.rollout_is_max, "rollout_is_min": c.rollout_is_min}
    if c.rollout_is == "none":
        return Row(concept, {"rollout_is": "none"}, {"vllm_importance_sampling_correction": False}, {},
                   trl_note="TRL's default is on (sequence_mask, clip_max 3) whenever use_vllm=True",
                   verl_note="off by default (rollout_is: null)")
    trl = {"vllm_importance_sampling_correction": True, "vllm_importance_sampling_mode": c.rollout_is,
           "vllm_importance_sampling_clip_max": c.rollout_is_max, "vllm_importance_sampling_clip_min": c.rollout_is_min}
    verl, verl_err = {}, ""
    if c.rollout_is.endswith("truncate") and c.rollout_is_min is None and c.rollout_is_max is not None:
        verl = {RC + "rollout_is": c.rollout_is.split("_")[0], RC + "rollout_is_threshold": c.rollout_is_max}
    else:
        verl_err = (f"rollout_is={c.rollout_is!r} (with these bounds) has no exact verl switch: verl truncates above "
                    f"only (rollout_is + rollout_is_threshold) and masks by rejection sampling on log-ratio "
                    f"statistics (rollout_rs)")
    return Row(concept, ours, trl, verl, trl_note="applies only with use_vllm=True (the sampler is vLLM)",
               verl_error=verl_err)


def row_sampler(c: GRPOConfig) -> Row:
    """The induced mismatch of notebook 09: a sampler temperature or precision unlike the trainer's."""
    concept = "sampler unlike the trainer (an induced mismatch, notebook 09)"
    if c.sampler_temperature is None and not c.sampler_bf16:
        return Row(concept, {"sampler_temperature": None, "sampler_bf16": False}, {}, {},
                   trl_note="vLLM samples in bf16 by default", verl_note="the rollout engine samples in bf16 by default")
    ours = {"sampler_temperature": c.sampler_temperature, "sampler_bf16": c.sampler_bf16}
    err = "a sampler temperature unlike the trainer's is a teaching device; TRL and verl sample at `temperature`"
    return Row(concept, ours, {}, {}, trl_error=err if c.sampler_temperature is not None else "",
               verl_error=err if c.sampler_temperature is not None else "",
               trl_note="vLLM samples in bf16 by default", verl_note="the rollout engine samples in bf16 by default")


__all__ = ["Row", "row_policy_loss", "row_rollout_is", "row_sampler", "TRL_POLICY_LOSS", "VERL_POLICY_LOSS"]
