"""TRL 1.16's defaults beside the course's GRPO preset (notebook 09), generated from the hand-off.

:data:`TRL_DEFAULTS` is what ``trl.GRPOConfig()`` gives when a knob is not passed (checked
against the installed TRL by ``tests/test_handoff_beyond.py``); :func:`trl_defaults_table`
sets each beside the course's GRPO preset as :func:`grpo_lab.lm.handoff.to_trl_kwargs` spells
it, and says what the default changes and which notebook shows it. The GRPOConfig that
reproduces TRL's defaults (:func:`trl_default_config`) is translated by the same code, and the
table refuses to build if that translation stops giving TRL's defaults, so it cannot drift.
"""
from __future__ import annotations

from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.handoff import to_trl_kwargs

# ---------------------------------------------------------------------------------
# TRL's defaults beside the course's GRPO preset
# ---------------------------------------------------------------------------------
# What trl.GRPOConfig() gives for the knobs of the recipe (TRL 1.16; tests read them from the installed TRL).
TRL_DEFAULTS = {"loss_type": "dapo", "beta": 0.0, "scale_rewards": "group", "importance_sampling_level": "token",
                "num_iterations": 1, "epsilon": 0.2, "epsilon_high": None,
                "vllm_importance_sampling_correction": True, "vllm_importance_sampling_mode": "sequence_mask",
                "vllm_importance_sampling_clip_max": 3.0}

# knob -> (what TRL's default changes relative to the course's GRPO preset, the notebook that shows it)
_MEANING = {
    "loss_type": ("'dapo' = token-mean (eq. 7) over the whole batch instead of eq. (6)'s seq-mean: long responses "
                  "weigh more, no 1/|y_i| length bias", "05 (length bias), 07 (one batch, every method)"),
    "beta": ("no KL term and no reference model at all (the course's GRPO preset has β = 0.04, DeepSeekMath's value; "
             "lecture notes 000 eq. (2) leaves β symbolic)",
             "04 (the loss), 06 (KL column)"),
    "scale_rewards": ("÷ group std as in eq. (1), but the sample std (÷ G−1), not the lecture notes' population std",
                      "03 (group advantage)"),
    "importance_sampling_level": ("token ratio ρ_{i,t} (eq. 4), not GSPO's sequence ratio", "07 (GSPO)"),
    "num_iterations": ("μ = 1: π_θold = π_θ, ρ ≡ 1, the clip never fires; only ∇ρ survives",
                       "04 (inner steps), 09 (why clip-higher needs μ > 1 here)"),
    "epsilon": ("ε_low = 0.2, the course preset's ε (lecture notes 000 eq. (3) leaves ε symbolic)", "04"),
    "epsilon_high": ("None = ε_low: symmetric, no clip-higher unless you pass 0.28", "07, 09"),
    "vllm_importance_sampling_correction": ("with vLLM, every token's loss is re-weighted by π_θold/π_vLLM: a "
                                            "correction the lecture notes do not have", "09"),
    "vllm_importance_sampling_mode": ("sequence-level MIS: a response whose ratio Π_t π_θold/π_vLLM leaves the "
                                      "bounds is dropped from the loss", "09"),
    "vllm_importance_sampling_clip_max": ("the MIS threshold C = 3", "09"),
}


def trl_default_config(**overrides) -> GRPOConfig:
    """The GRPOConfig whose TRL translation has TRL's defaults for the knobs of :data:`TRL_DEFAULTS`
    (token-mean, β = 0, group scaling, token ratio, μ = 1, ε 0.2, sequence_mask MIS with C = 3)."""
    base = dict(agg="token-mean", beta=0.0, adv_scale="group", ratio_level="token", mu=1, eps_low=0.2,
                eps_high=None, rollout_is="sequence_mask", rollout_is_max=3.0, rollout_is_min=None)
    return GRPOConfig.preset("grpo", **{**base, **overrides})


def trl_defaults_table():
    """A ``pandas.DataFrame``: per knob, TRL 1.16's default, the course's GRPO preset as the hand-off
    spells it (``to_trl_kwargs(GRPOConfig.preset("grpo"))``), what the default changes, the notebook.

    The "TRL default" column is the translation of :func:`trl_default_config` (so a mapping that
    stopped producing TRL's defaults would show here and fail the tests)."""
    import pandas as pd

    lecture = to_trl_kwargs(GRPOConfig.preset("grpo"))
    default = to_trl_kwargs(trl_default_config())
    rows = []
    for knob, value in TRL_DEFAULTS.items():
        if not _same(knob, default, TRL_DEFAULTS):
            raise AssertionError(f"trl_default_config() no longer translates to TRL's default {knob}={value!r} "
                                 f"(got {default.get(knob)!r}): the hand-off and this table disagree")
        what, nb = _MEANING[knob]
        rows.append({"TRL knob": knob, "TRL default": value, "course's GRPO": lecture.get(knob, "—"),
                     "same as the course's GRPO?": _same(knob, lecture, TRL_DEFAULTS),
                     "what the default changes": what, "notebook": nb})
    return pd.DataFrame(rows).set_index("TRL knob")


def _same(knob: str, a: dict, b: dict) -> bool:
    """a[knob] == b[knob], with epsilon_high=None read as epsilon (TRL's rule)."""
    def val(d):
        v = d.get(knob)
        return d.get("epsilon") if knob == "epsilon_high" and v is None else v
    return val(a) == val(b)


__all__ = ["TRL_DEFAULTS", "trl_default_config", "trl_defaults_table"]
