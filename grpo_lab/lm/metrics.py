"""The per-step metric columns of the LM loop: their definitions (bilingual) and computation.

:data:`METRICS` maps each column of the metrics DataFrame (and ``metrics.csv``) to a
one-line definition, written in English and Chinese with :class:`grpo_lab.i18n.Text`;
:func:`metric_definitions` evaluates them in the language selected by
:func:`grpo_lab.set_language`. :func:`sampling_metrics` computes the columns that come from
the sampled responses (steps 1–2); the loss columns come from
:meth:`grpo_lab.lm.trainer.Trainer.learn`.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np
import torch

from grpo_lab.advantages import degenerate_mask, degenerate_stats
from grpo_lab.i18n import Text

# One line per metric column (rendered in the docs and notebook 06).
METRICS = {
    "step": Text("GRPO step (1-based); one batch of P·G sampled responses",
                 "GRPO 步数（从 1 开始）；每步采样一批 P·G 个回答"),
    "reward_mean": Text("mean reward r_i over every response sampled this step (after shaping)",
                        "本步所有采样回答的平均奖励 r_i（奖励整形之后）"),
    "reward_std": Text("standard deviation of those rewards",
                       "这些奖励的标准差"),
    "group_reward_std": Text("mean over this step's groups of the within-group reward std (population); "
                             "0 when every group is degenerate, so no group carries a gradient",
                             "本步各组组内奖励标准差（总体标准差）的平均；所有组都是退化组时为 0，此时没有梯度"),
    "acc": Text("sampled pass rate: fraction of sampled responses (at the training temperature) that are exactly "
                "right — the rate GRPO optimises (not the greedy accuracy of an evaluation)",
                "采样通过率：采样回答（训练温度下）完全正确的比例——GRPO 优化的正是它（不是评测时的贪心准确率）"),
    "acc_L{level}": Text("the same accuracy restricted to prompts of difficulty level {level}",
                         "同一准确率，只统计难度等级 {level} 的提示"),
    "frac_all_correct": Text("fraction of groups whose G responses are all correct (退化组: Â = 0, no gradient)",
                             "G 个回答全部正确的组所占比例（退化组：Â = 0，没有梯度）"),
    "frac_all_wrong": Text("fraction of groups whose G responses are all wrong (退化组: Â = 0, no gradient)",
                           "G 个回答全部错误的组所占比例（退化组：Â = 0，没有梯度）"),
    "frac_informative": Text("fraction of groups whose rewards differ (the only groups that carry a gradient); "
                             "computed from the rewards the advantages see, as dynamic sampling decides (with "
                             "overlong shaping or partial credit an all-correct group can still be informative)",
                             "组内奖励不全相同的组所占比例（只有这些组带来梯度）；按优势所用的奖励计算，与动态采样的判断一致"
                             "（有 overlong 奖励整形或部分给分时，全部正确的组也可能带来梯度）"),
    "n_groups": Text("groups sampled this step (more than P when dynamic sampling resamples)",
                     "本步采样的组数（动态采样重采样时多于 P）"),
    "sampling_rounds": Text("sampling rounds this step (1 unless dynamic sampling resampled)",
                            "本步的采样轮数（除非动态采样重采样，否则为 1）"),
    "n_groups_used": Text("groups that entered the loss (P, or fewer if dynamic sampling ran out of rounds)",
                          "进入损失的组数（P；若动态采样用完轮数则更少）"),
    "len_mean": Text("mean response length |y_i| in tokens (EOS included)",
                     "回答的平均长度 |y_i|（以 token 计，含 EOS）"),
    "len_correct": Text("mean length of correct responses (NaN when the step has none; see n_correct)",
                        "正确回答的平均长度（本步没有时为 NaN；见 n_correct）"),
    "len_incorrect": Text("mean length of wrong, non-truncated responses (NaN when none; see n_incorrect)",
                          "错误且未截断的回答的平均长度（没有时为 NaN；见 n_incorrect）"),
    "len_truncated": Text("mean length of truncated responses, i.e. max_new (NaN when none; see n_truncated)",
                          "被截断回答的平均长度，即 max_new（没有时为 NaN；见 n_truncated）"),
    "n_correct": Text("number of correct responses this step", "本步正确回答的数量"),
    "n_incorrect": Text("number of wrong responses that ended with EOS", "以 EOS 结束的错误回答的数量"),
    "n_truncated": Text("number of responses that hit max_new without EOS (reward 0)",
                        "达到 max_new 仍未输出 EOS 的回答数量（奖励为 0）"),
    "frac_truncated": Text("fraction of responses truncated", "被截断回答的比例"),
    "kl": Text("KL(π_θ‖π_ref) estimate (kl_kind, eq. 5), aggregated like the loss, before the update "
               "(absent when β = 0 and kl_metric is off; NaN when no group entered the loss)",
               "KL(π_θ‖π_ref) 的估计（kl_kind，式 5），与损失同样聚合，在更新之前计算"
               "（β = 0 且 kl_metric 关闭时不出现；没有组进入损失时为 NaN）"),
    "loss": Text("the aggregated loss the optimiser minimised (first inner iteration)",
                 "优化器最小化的聚合损失（第一个内层步）"),
    "pg_loss": Text("its policy-gradient part, aggregate(−ℓ_{i,t}) (first inner iteration)",
                    "其中的策略梯度部分 aggregate(−ℓ_{i,t})（第一个内层步）"),
    "clip_frac_low": Text("fraction of response tokens with Â < 0 and ρ < 1 − ε_low (clipped: no gradient), mean over μ",
                          "Â < 0 且 ρ < 1 − ε_low 的回答 token 所占比例（被裁剪：没有梯度），对 μ 取平均"),
    "clip_frac_high": Text("fraction of response tokens with Â > 0 and ρ > 1 + ε_high (clipped: no gradient), mean over μ",
                           "Â > 0 且 ρ > 1 + ε_high 的回答 token 所占比例（被裁剪：没有梯度），对 μ 取平均"),
    "ratio_max": Text("largest importance ratio ρ (or GSPO's s_i) seen over the μ iterations",
                      "μ 次迭代中出现的最大重要性比率 ρ（或 GSPO 的 s_i）"),
    "entropy": Text("mean per-token entropy of the sampling distribution softmax(logits/τ), in nats "
                    "(NaN when no group entered the loss)",
                    "采样分布 softmax(logits/τ) 平均每个 token 的熵，单位 nat（没有组进入损失时为 NaN）"),
    "adv_abs_mean": Text("mean |Â_i| over the responses in the loss (0 for a batch of degenerate groups)",
                         "进入损失的回答的平均 |Â_i|（全是退化组的批次为 0）"),
    "mismatch_abs_logp": Text("mean |log π_trainer − log π_sampler| over the response tokens: how far the sampler's "
                              "log-probs (kept while sampling) are from the trainer's π_θold",
                              "回答的 token 上 |log π_trainer − log π_sampler| 的平均：采样器（采样时记录）与训练器 π_θold 的对数概率之差"),
    "mismatch_kl": Text("k3 estimate of KL(π_sampler‖π_trainer) from the sampled tokens (eq. 5 form)",
                        "用采样 token 对 KL(π_sampler‖π_trainer) 的 k3 估计（式 5 的形式）"),
    "mismatch_ratio_max": Text("largest token ratio π_trainer/π_sampler of the step",
                               "本步最大的 token 比率 π_trainer/π_sampler"),
    "mismatch_clip_frac": Text("fraction of tokens whose π_trainer/π_sampler lies outside [1 − ε_low, 1 + ε_high]: what "
                               "the clip would cut if the sampler's log-probs were used as π_θold",
                               "π_trainer/π_sampler 落在 [1 − ε_low, 1 + ε_high] 之外的 token 比例：若把采样器的对数概率当作 "
                               "π_θold，裁剪会切掉的部分"),
    "is_weight_mean": Text("mean TIS/MIS weight π_θold/π_sampler over the tokens (1 when rollout_is is none)",
                           "TIS/MIS 权重 π_θold/π_sampler 在 token 上的平均（rollout_is 为 none 时为 1）"),
    "is_masked_frac": Text("fraction of tokens the MIS correction removed (weight 0)",
                           "被 MIS 校正去掉（权重为 0）的 token 比例"),
    "grad_norm": Text("global L2 norm of the gradient before clipping (mean over μ)",
                      "裁剪前梯度的全局 L2 范数（对 μ 取平均）"),
    "lr": Text("learning rate used for this step", "本步使用的学习率"),
    "n_tokens": Text("response tokens generated this step (all sampling rounds)",
                     "本步生成的回答 token 数（所有采样轮）"),
    "seconds": Text("wall-clock seconds of the whole step", "整步实际耗时（秒）"),
    "tokens_per_s": Text("generated response tokens per second of the step", "本步每秒生成的回答 token 数"),
    "completions_per_s": Text("sampled responses per second of the step", "本步每秒采样的回答数"),
    "t_sample": Text("seconds spent sampling (generation with the KV cache)", "采样（带 KV 缓存的生成）所用秒数"),
    "t_score": Text("seconds spent decoding and verifying", "解码与验证所用秒数"),
    "t_ref": Text("seconds in the reference-model forward (0 when skipped)", "参考模型前向所用秒数（跳过时为 0）"),
    "t_policy": Text("seconds in the policy forward and the loss", "策略前向与损失计算所用秒数"),
    "t_backward": Text("seconds in backward, gradient clipping and the optimiser step",
                       "反向传播、梯度裁剪与优化器更新所用秒数"),
}
TIMING_COLUMNS = ("seconds", "tokens_per_s", "completions_per_s", "t_sample", "t_score", "t_ref",
                  "t_policy", "t_backward")
# Columns that are NaN exactly when their count column is 0.
CONDITIONAL_COLUMNS = {"len_correct": "n_correct", "len_incorrect": "n_incorrect", "len_truncated": "n_truncated",
                       "kl": "n_groups_used", "entropy": "n_groups_used",
                       **{c: "n_groups_used" for c in ("mismatch_abs_logp", "mismatch_kl", "mismatch_ratio_max",
                                                       "mismatch_clip_frac", "is_weight_mean", "is_masked_frac")}}


def metric_definitions(levels=(1, 2, 3)) -> dict[str, str]:
    """METRICS with the per-level entries expanded for ``levels``, in the selected language."""
    out = {}
    for k, v in METRICS.items():
        if "{level}" in k:
            for lv in levels:
                out[k.format(level=lv)] = v.format(level=lv)
        else:
            out[k] = str(v)
    return out


def metrics_markdown(levels=(1, 2)) -> str:
    """The metric definitions as a Markdown table (docs/lm.md embeds it; a test keeps them in sync)."""
    lines = ["| column | definition |", "| --- | --- |"]
    lines += [f"| `{k}` | {v} |" for k, v in metric_definitions(levels).items()]
    return "\n".join(lines)


class Timer:
    """Wall-clock (``t``) and process CPU time (``cpu``) per phase, summed over a step."""

    def __init__(self, device):
        self.t: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.cuda = device.type == "cuda"

    @contextmanager
    def __call__(self, name):
        if self.cuda:
            torch.cuda.synchronize()
        t0, c0 = time.perf_counter(), time.process_time()
        yield
        if self.cuda:
            torch.cuda.synchronize()
        self.t[name] = self.t.get(name, 0.0) + time.perf_counter() - t0
        self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0


def _mean_or_nan(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else float("nan")


def group_reward_std(rewards: np.ndarray, G: int) -> float:
    """Mean over groups of the within-group population std of the rewards; ``rewards`` (N·G,)."""
    return float(np.asarray(rewards, dtype=float).reshape(-1, G).std(axis=1).mean())


def sampling_metrics(rounds, G: int, levels, n_tokens: int) -> dict:
    """The columns of steps 1–2 from every sampling round of a step (:class:`~grpo_lab.lm.sampling.SampledRound`)."""
    lengths = np.concatenate([r.rollout.lengths.cpu().numpy() for r in rounds]).astype(float)
    trunc = np.concatenate([r.rollout.truncated.cpu().numpy() for r in rounds])
    correct = np.concatenate([r.scored.correct for r in rounds])
    lvls = np.concatenate([r.scored.levels for r in rounds])
    rewards = np.concatenate([r.rewards for r in rounds])
    deg = degenerate_stats(correct.astype(float).reshape(-1, G))                 # by correctness
    informative = ~degenerate_mask(rewards.reshape(-1, G))                      # (N,) by reward, as dynamic sampling
    wrong = ~correct & ~trunc
    row = {"reward_mean": float(rewards.mean()), "reward_std": float(rewards.std()),
           "group_reward_std": group_reward_std(rewards, G), "acc": float(correct.mean())}
    for lv in levels:
        row[f"acc_L{lv}"] = _mean_or_nan(correct[lvls == lv].astype(float))
    row.update(frac_all_correct=deg.all_correct, frac_all_wrong=deg.all_wrong,
               frac_informative=float(informative.mean()),
               n_groups=int(correct.size // G), sampling_rounds=len(rounds),
               len_mean=float(lengths.mean()), len_correct=_mean_or_nan(lengths[correct]),
               len_incorrect=_mean_or_nan(lengths[wrong]), len_truncated=_mean_or_nan(lengths[trunc]),
               n_correct=int(correct.sum()), n_incorrect=int(wrong.sum()), n_truncated=int(trunc.sum()),
               frac_truncated=float(trunc.mean()), n_tokens=int(n_tokens))
    return row
