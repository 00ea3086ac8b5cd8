"""TRL 1.16's defaults beside the course's GRPO preset (notebook 09), generated from the hand-off.

:data:`TRL_DEFAULTS` is what ``trl.GRPOConfig()`` gives when a knob is not passed (checked
against the installed TRL by ``tests/test_handoff_beyond.py``); :func:`trl_defaults_table`
sets each beside the course's GRPO preset as :func:`grpo_lab.lm.handoff.to_trl_kwargs` spells
it, and says what the default changes and which notebook shows it. The GRPOConfig that
reproduces TRL's defaults (:func:`trl_default_config`) is translated by the same code, and the
table refuses to build if that translation stops giving TRL's defaults, so it cannot drift.
"""
from __future__ import annotations

from grpo_lab.i18n import Text
from grpo_lab.i18n_table import localized
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.handoff import TRL_BIAS_CORRECTION_KL_DEFAULT, to_trl_kwargs

# ---------------------------------------------------------------------------------
# TRL's defaults beside the course's GRPO preset
# ---------------------------------------------------------------------------------
# What trl.GRPOConfig() gives for the knobs of the recipe (TRL 1.16; tests read them from the installed TRL).
TRL_DEFAULTS = {"loss_type": "dapo", "beta": 0.0, "use_bias_correction_kl": TRL_BIAS_CORRECTION_KL_DEFAULT,
                "scale_rewards": "group", "importance_sampling_level": "token",
                "num_iterations": 1, "epsilon": 0.2, "epsilon_high": None,
                "vllm_importance_sampling_correction": True, "vllm_importance_sampling_mode": "sequence_mask",
                "vllm_importance_sampling_clip_max": 3.0}

# knob -> (what TRL's default changes relative to the course's GRPO preset, the notebook that shows it), both languages
_MEANING = {
    "loss_type": (Text("'dapo' = token-mean (eq. 7) over the whole batch instead of eq. (6)'s seq-mean: long responses "
                       "weigh more, no 1/|y_i| length bias",
                       "'dapo' = 式 (7) 的批次平均（整个批次一个分母），而不是式 (6) 的序列平均：长回复的分量更重，没有 1/|y_i| 的长度偏差"),
                  Text("05 (length bias), 07 (one batch, every method)", "05（长度偏差），07（一个批次，所有方法）")),
    "beta": (Text("no KL term and no reference model at all (the course's GRPO preset has β = 0.04, DeepSeekMath's value; "
                  "lecture notes 000 eq. (2) leaves β symbolic)",
                  "完全没有 KL 项，也没有参考模型（本课程的 GRPO 预设取 β = 0.04，即 DeepSeekMath 的取值；讲义 000 式 (2) 中 β 只是符号）"),
             Text("04 (the loss), 06 (KL column)", "04（损失），06（KL 一列）")),
    "use_bias_correction_kl": (Text("the KL term is multiplied by the ratio ρ, which eq. (2) does not do; it acts once "
                                    "β > 0 (the hand-off then passes False)",
                                    "KL 项乘上比率 ρ，式 (2) 没有这一步；β > 0 时才起作用（此时交接代码传入 False）"),
                               Text("04b (the KL penalty)", "04b（KL 惩罚）")),
    "scale_rewards": (Text("÷ group std as in eq. (1), but the sample std (÷ G−1), not the lecture notes' population std",
                           "与式 (1) 一样除以组标准差，但用的是样本标准差（÷ G−1），而不是讲义的总体标准差"),
                      Text("03 (group advantage)", "03（组优势）")),
    "importance_sampling_level": (Text("token ratio ρ_{i,t} (eq. 4), not GSPO's sequence ratio",
                                       "token 级比率 ρ_{i,t}（式 4），而不是 GSPO 的序列级比率"),
                                  Text("07 (GSPO)", "07（GSPO 的序列级比率）")),
    "num_iterations": (Text("μ = 1: π_θold = π_θ, ρ ≡ 1, the clip never fires; only ∇ρ survives",
                            "μ = 1：π_θold = π_θ，ρ ≡ 1，裁剪从不触发；只剩下 ∇ρ"),
                       Text("04 (inner steps), 09 (why clip-higher needs μ > 1 here)",
                            "04（内层步），09（为什么这里 clip-higher 需要 μ > 1）")),
    "epsilon": (Text("ε_low = 0.2, the course preset's ε (lecture notes 000 eq. (3) leaves ε symbolic)",
                     "ε_low = 0.2，即本课程预设的 ε（讲义 000 式 (3) 中 ε 只是符号）"),
                Text("04", "04")),
    "epsilon_high": (Text("None = ε_low: symmetric, no clip-higher unless you pass 0.28",
                          "None = ε_low：对称裁剪，除非传入 0.28，否则没有 clip-higher"),
                     Text("07, 09", "07，09")),
    "vllm_importance_sampling_correction": (Text("with vLLM, every token's loss is re-weighted by π_θold/π_vLLM: a "
                                                 "correction the lecture notes do not have",
                                                 "使用 vLLM 时，每个 token 的损失都乘上 π_θold/π_vLLM 重新加权：讲义里没有这种校正"),
                                            Text("09", "09")),
    "vllm_importance_sampling_mode": (Text("sequence-level MIS: a response whose ratio Π_t π_θold/π_vLLM leaves the "
                                           "bounds is dropped from the loss",
                                           "序列级 MIS：比率 Π_t π_θold/π_vLLM 超出边界的回复被整条从损失中去掉"),
                                      Text("09", "09")),
    "vllm_importance_sampling_clip_max": (Text("the MIS threshold C = 3", "MIS 的阈值 C = 3"), Text("09", "09")),
}
# the table's columns, English (what code reads) -> Chinese (what a student sees under set_language("zh"))
_COLUMNS_ZH = {"TRL default": "TRL 默认值", "course's GRPO": "本课程的 GRPO", "same as the course's GRPO?": "与本课程的 GRPO 相同？",
               "what the default changes": "默认值改变了什么", "notebook": "笔记本"}


def trl_default_config(**overrides) -> GRPOConfig:
    """The GRPOConfig whose TRL translation has TRL's defaults for the knobs of :data:`TRL_DEFAULTS`
    (token-mean, β = 0, so use_bias_correction_kl is not passed and TRL's True holds, group scaling,
    token ratio, μ = 1, ε 0.2, sequence_mask MIS with C = 3)."""
    base = dict(agg="token-mean", beta=0.0, adv_scale="group", ratio_level="token", mu=1, eps_low=0.2,
                eps_high=None, rollout_is="sequence_mask", rollout_is_max=3.0, rollout_is_min=None)
    return GRPOConfig.preset("grpo", **{**base, **overrides})


def trl_defaults_table():
    """A ``pandas.DataFrame``: per knob, TRL 1.16's default, the course's GRPO preset as the hand-off
    spells it (``to_trl_kwargs(GRPOConfig.preset("grpo"))``), what the default changes, the notebook.

    The "TRL default" column is the translation of :func:`trl_default_config` (so a mapping that
    stopped producing TRL's defaults would show here and fail the tests). The labels and values are
    English (code reads them); under ``set_language("zh")`` the table shows a Chinese view of the same
    rows (:func:`grpo_lab.i18n_table.localized`)."""
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
                     "what the default changes": what.en, "notebook": nb.en})
    table = pd.DataFrame(rows).set_index("TRL knob")

    def zh_view():
        view = table.copy()
        view["same as the course's GRPO?"] = view["same as the course's GRPO?"].map({True: "是", False: "否"})
        view["what the default changes"] = [_MEANING[k][0].zh for k in view.index]
        view["notebook"] = [_MEANING[k][1].zh for k in view.index]
        view = view.rename(columns=_COLUMNS_ZH)
        view.index.name = "TRL 参数"
        return view

    return localized(table, zh_view)


def _same(knob: str, a: dict, b: dict) -> bool:
    """a[knob] == b[knob], with epsilon_high=None read as epsilon (TRL's rule)."""
    def val(d):
        if knob == "use_bias_correction_kl" and knob not in d:   # the hand-off passes it only when β > 0:
            return TRL_DEFAULTS[knob]                            # not passed, TRL's default holds
        v = d.get(knob)
        return d.get("epsilon") if knob == "epsilon_high" and v is None else v
    return val(a) == val(b)


__all__ = ["TRL_DEFAULTS", "trl_default_config", "trl_defaults_table"]
