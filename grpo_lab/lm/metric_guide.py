"""How to read a GRPO run's metrics, in the style of CleanRL's metric guide (notebooks 06, 07; docs/lm.md).

For every metric the trainer logs that a student should watch: its meaning (the trainer's own
bilingual definition, :data:`grpo_lab.lm.metrics.METRICS`, so there is one source), what a rise
or a fall means, the range of its end values over the cached healthy runs (computed from
``grpo_lab/data`` by :func:`end_ranges`: the ranges of one toy task, not bands for another), and
its red flags.

:func:`red_flags` turns the red flags into checks on a metrics DataFrame (one row per step);
:func:`diagnose` answers seed 004's closing three questions (组内奖励是不是全 0 或全 1？σ_R 是不是
小得在放大噪声？回答是不是越生成越长？) from the same metrics.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from grpo_lab.i18n import Text
from grpo_lab.i18n_table import localized


@dataclass(frozen=True)
class MetricGuide:
    metric: str
    watch: Text          # what a rise or a fall means (a direction, not a band: bands depend on the task)
    red_flag: Text


GUIDE = (
    MetricGuide("reward_mean",
                Text("rises from the warm start's sampled pass rate: the policy is learning; falls after a rise: collapse",
                     "从热启动的采样通过率起上升：策略在学习；先升后降：崩溃"),
                Text("flat at ≈ 0: nothing to learn from (no warm start); falling after a rise: collapse",
                     "一直约为 0：无从学习（没有热启动）；先升后降：崩溃")),
    MetricGuide("frac_all_wrong",
                Text("falls as the model learns; a warm start keeps it near 0 from the first step",
                     "随模型学会而下降；有热启动时从第一步起就接近 0"),
                Text("above 0.9: nearly every group all-wrong, no gradient — add demonstrations (a warm start) or easier prompts",
                     "高于 0.9：几乎每组全错，没有梯度——加示范（热启动）或换更容易的题")),
    MetricGuide("frac_all_correct",
                Text("rises as easy prompts saturate: those groups stop teaching", "随简单题饱和而上升：这些组不再提供信号"),
                Text("near 1: the task is mastered and the groups stop teaching — harder prompts or dynamic sampling",
                     "接近 1：题目已被掌握，组不再提供信号——换更难的题或用动态采样")),
    MetricGuide("frac_informative",
                Text("the share of groups with a gradient; falls as frac_all_correct rises", "带梯度的组所占比例；随 frac_all_correct 上升而下降"),
                Text("below 0.1: almost no group has a gradient (退化组)", "低于 0.1：几乎没有组有梯度（退化组）")),
    MetricGuide("group_reward_std",
                Text("falls with frac_informative (a degenerate group counts 0; a 0/1 group at most 0.5)",
                     "随 frac_informative 一起下降（退化组记 0；0/1 奖励的组最大 0.5）"),
                Text("non-zero in groups whose answers are all right or all wrong: the rewards are noisy, and ÷σ will "
                     "amplify the noise (compare adv_abs_mean)",
                     "答案全对或全错的组里仍不为 0：奖励带噪声，÷σ 会放大噪声（对照 adv_abs_mean）")),
    MetricGuide("adv_abs_mean",
                Text("follows frac_informative: under ÷σ each informative 0/1 group has a mean absolute advantage of "
                     "2√(p(1−p)), p = k/G (population std)",
                     "跟着 frac_informative 走：÷σ 下每个有信息量的 0/1 组的平均绝对优势为 2√(p(1−p))，p = k/G（总体标准差）"),
                Text("≈ 0.8 although most groups are degenerate: noise is getting unit-size advantages "
                     "(÷σ on noisy rewards; drop the ÷σ as Dr. GRPO does)",
                     "大多数组已退化却仍约 0.8：噪声拿到了单位大小的优势（噪声奖励上 ÷σ；像 Dr. GRPO 那样去掉 ÷σ）")),
    MetricGuide("entropy",
                Text("falls slowly as the policy sharpens", "随策略变尖锐而缓慢下降"),
                Text("≈ log(vocabulary) ≈ 2.9: the model is still random; a collapse together with a falling reward: "
                     "the learning rate is too high",
                     "约为 log(词表) ≈ 2.9：模型仍是随机的；与奖励一起崩塌：学习率过高")),
    MetricGuide("kl",
                Text("rises slowly from 0 as the policy leaves π_ref; how far depends on the learning rate, μ and the "
                     "method, not on β alone (notebook 07 compares the presets)",
                     "策略离开 π_ref 时从 0 缓慢上升；升多少取决于学习率、μ 和方法，而不只取决于 β（notebook 07 比较各预设）"),
                Text("above 1, or jumping tenfold within a few steps: the policy ran away from the reference "
                     "(learning rate too high, β too small)",
                     "高于 1，或几步之内跳升十倍：策略远离了参考模型（学习率过高、β 过小）")),
    MetricGuide("grad_norm",
                Text("the norm before clipping at max_grad_norm; falls when fewer groups carry a signal",
                     "max_grad_norm 裁剪之前的范数；带信号的组变少时下降"),
                Text("≈ 0 for many steps: no signal (degenerate batches); persistently ≫ 1 with a rising KL: unstable",
                     "许多步都约为 0：没有信号（退化批次）；持续 ≫ 1 且 KL 上升：不稳定")),
    MetricGuide("clip_frac_low",
                Text("exactly 0 at μ = 1 in this loop (ρ ≡ 1, notebook 04); rises with μ and the step size",
                     "本循环 μ = 1 时恰为 0（ρ ≡ 1，notebook 04）；随 μ 和步长上升"),
                Text("above 0 at μ = 1 here: sampler and trainer disagree; above 0.2 at μ > 1: steps too large",
                     "这里 μ = 1 却大于 0：采样器与训练器不一致；μ > 1 时高于 0.2：步子太大")),
    MetricGuide("len_incorrect",
                Text("flat: the answers are a few digits and EOS; a rise is the length bias", "平稳：答案是几个数字加 EOS；上升就是长度偏差"),
                Text("rising over training: the length bias (长度偏差) of eq. (6); len_mean near max_new: no EOS learned",
                     "训练中持续上升：式 (6) 的长度偏差；len_mean 接近 max_new：还没学会输出 EOS")),
)

END_WINDOW = 20


def healthy_cached_runs() -> pd.DataFrame:
    """Every cached run that is healthy by design, one row per (source, run, seed): the mean of each guide
    metric over the run's last :data:`END_WINDOW` steps. Sources: the healthy run of
    :mod:`grpo_lab.lm.broken_runs`, the four presets (150 steps, μ = 2) and this notebook's class-size
    runs, eq. (6) and eq. (7) (200 steps, μ = 1), from ``grpo_lab/data``."""
    from grpo_lab.lm import broken_runs, preset_runs

    frames = []
    b = broken_runs.load()
    frames.append(b[b["run"] == "healthy"].assign(source="broken_runs", seed=broken_runs.BASE.get("seed", 0)))
    for name in ("presets", "aggregation"):
        frames.append(preset_runs.load_run_set(name).assign(source=name))
    metrics = [g.metric for g in GUIDE]
    rows = []
    for df in frames:
        for (src, run, seed), d in df.groupby(["source", "run", "seed"]):
            tail = d.sort_values("step").tail(END_WINDOW)
            rows.append({"source": src, "run": run, "seed": seed,
                         **{m: float(tail[m].mean()) if m in tail else np.nan for m in metrics}})
    return pd.DataFrame(rows).set_index(["source", "run", "seed"])


def end_ranges() -> pd.DataFrame:
    """Per guide metric, the smallest and largest end value (mean of the last 20 steps) over
    :func:`healthy_cached_runs`: columns ``lo``, ``hi``, ``n`` (runs)."""
    ends = healthy_cached_runs()
    return pd.DataFrame({"lo": ends.min(), "hi": ends.max(), "n": ends.notna().sum()})


def outside_ranges(df: pd.DataFrame, *, margin: float = 0.1) -> list[str]:
    """The guide metrics whose end value in ``df`` lies outside the cached runs' end range,
    widened by ``margin`` of its width on each side ([] when the run looks like the cached ones)."""
    r = end_ranges()
    out = []
    for m, row in r.iterrows():
        if m in df and df[m].notna().any():
            v = _window(df, m, True, END_WINDOW)
            pad = margin * (row["hi"] - row["lo"]) + 1e-9
            if not row["lo"] - pad <= v <= row["hi"] + pad:
                out.append(m)
    return out


def _range_text(lo: float, hi: float) -> str:
    return f"{lo:.3g} – {hi:.3g}" if f"{lo:.3g}" != f"{hi:.3g}" else f"{lo:.3g}"


def guide_table(levels=(1, 2)) -> pd.DataFrame:
    """One row per metric: meaning (the trainer's definition), what a rise or fall means, the end range of the
    cached healthy runs (:func:`end_ranges`), red flags."""
    from grpo_lab.lm.trainer import metric_definitions

    defs = metric_definitions(levels)
    r = end_ranges()
    table = pd.DataFrame([{"metric": g.metric, "meaning": str(defs[g.metric]), "a rise / fall means": str(g.watch),
                           "cached healthy runs, end": _range_text(r.loc[g.metric, "lo"], r.loc[g.metric, "hi"]),
                           "red flags": str(g.red_flag)} for g in GUIDE]).set_index("metric")
    return localized(table, lambda: table.rename_axis("指标").rename(columns=dict(zip(table.columns, _GUIDE_ZH))))


def markdown_table() -> str:
    """The guide as docs/lm.md carries it (English): metric, what a rise / fall means, cached end range, red flags."""
    r = end_ranges()
    rows = [f"| `{g.metric}` | {g.watch.en} | {_range_text(r.loc[g.metric, 'lo'], r.loc[g.metric, 'hi'])} | "
            f"{g.red_flag.en} |" for g in GUIDE]
    return "\n".join(["| metric | a rise / fall means | cached healthy runs, end | red flags |",
                      "| --- | --- | --- | --- |", *rows])


_GUIDE_ZH = ("含义", "上升 / 下降意味着什么", "缓存的正常运行（结束时）", "危险信号")


def _window(df: pd.DataFrame, col: str, last: bool, n: int) -> float:
    s = df.sort_values("step")[col]
    return float((s.tail(n) if last else s.head(n)).mean())


def informative_by_correctness(df: pd.DataFrame) -> pd.Series:
    """Per step, the share of groups whose replies are not all correct nor all wrong.

    ``frac_informative`` counts groups whose *rewards* differ (what dynamic sampling and the gradient
    see). With noise on the rewards every group's rewards differ, so that column reads 1 exactly when
    ÷σ is turning noise into advantages; the verifier's verdicts say which groups had something to
    teach. Without ``frac_all_correct`` / ``frac_all_wrong`` columns, ``frac_informative`` is used.
    """
    if "frac_all_correct" in df and "frac_all_wrong" in df:
        return 1.0 - df["frac_all_correct"] - df["frac_all_wrong"]
    return df["frac_informative"]


def noise_amplification(df: pd.DataFrame, *, window: int = 20) -> float:
    """Mean |Â_i| per response of an informative group in the loss, over the last ``window`` steps.

    With 0/1 rewards and ÷σ it is at most 1 (|z| averages to ≤ 1 when the std is the population
    one); well above 1 means degenerate groups received advantages, i.e. ÷σ is amplifying noise.
    "Informative" is judged by the verifier (:func:`informative_by_correctness`), not by the
    rewards, which noise makes all different. ``adv_abs_mean`` averages over the responses *in the
    loss*: without dynamic sampling those are all groups (so divide by the informative share); with
    it, the degenerate groups were dropped before the loss (``n_groups`` sampled, ``n_groups_used``
    kept), so the share of informative groups in the loss is that share · ``n_groups / n_groups_used``,
    capped at 1.
    """
    share = informative_by_correctness(df)
    if "n_groups" in df and "n_groups_used" in df:
        share = (share * df["n_groups"] / df["n_groups_used"].clip(lower=1)).clip(upper=1.0)
    tail = df.assign(_share=share).sort_values("step").tail(window)
    return float(tail["adv_abs_mean"].mean() / max(tail["_share"].mean(), 0.01))


def red_flags(df: pd.DataFrame, *, max_new: int = 8, window: int = 20) -> list[str]:
    """The red flags a run's metrics raise (over its first/last ``window`` steps); [] for a healthy run."""
    if len(df) < 2:
        raise ValueError(f"df: need at least 2 steps of metrics, got {len(df)}")
    end = {c: _window(df, c, True, window) for c in df.columns if c not in ("run", "step") and
           pd.api.types.is_numeric_dtype(df[c])}
    flags = []
    if end.get("frac_all_wrong", 0) > 0.9:
        flags.append("no_signal")                      # every group all-wrong
    if end.get("frac_all_correct", 0) > 0.9:
        flags.append("saturated")                      # every group all-right
    if "adv_abs_mean" in df and "frac_informative" in df and noise_amplification(df, window=window) > 1.5:
        flags.append("noise_amplified")                # degenerate groups get advantages: ÷σ on noise
    if end.get("kl", 0) > 1.0:
        flags.append("ran_away")                       # far from the reference: lr too high / β too small
    if "reward_mean" in df and df.sort_values("step")["reward_mean"].rolling(window, min_periods=1).mean().max() \
            - end["reward_mean"] > 0.3:
        flags.append("collapsed")                      # the reward fell after rising
    if end.get("len_mean", 0) > 0.75 * max_new:
        flags.append("runs_to_budget")                 # no EOS learned
    if "len_incorrect" in df and end.get("len_incorrect", np.nan) - _window(df, "len_incorrect", False, window) > 1.0:
        flags.append("length_drift")                   # wrong answers grow: length bias
    return flags


QUESTIONS = (
    ("degenerate", Text("Are the group rewards all 0 or all 1 (degenerate groups)?", "组内奖励是不是全 0 或全 1，退化组？"),
     Text("skip them / dynamic sampling, more exploration, demonstrations, partial credit",
          "换实例 / 动态采样、扩探索、加示范、部分给分")),
    ("noise", Text("Is σ_R so small that ÷σ amplifies noise (Dr. GRPO's first fix)?",
                   "σ_R 是不是小得在放大噪声（Dr. GRPO 第一处）？"),
     Text("drop the ÷σ (adv_scale='none', Dr. GRPO) or scale by the batch std", "去掉 ÷σ（adv_scale='none'，Dr. GRPO）或改用批次标准差")),
    ("longer", Text("Are the answers getting longer and longer (the second fix)?", "回答是不是越生成越长（第二处）？"),
     Text("replace 1/|y_i| by a constant (Dr. GRPO) or use token-mean (DAPO)", "把 1/|y_i| 换成常数（Dr. GRPO）或改用批次平均（式 (7)，DAPO）")),
)


def diagnose(df: pd.DataFrame, *, window: int = 20) -> pd.DataFrame:
    """Lecture notes 004's three closing questions, answered from a run's metrics (one row per question).

    The table's labels and values are English (``answer`` is "yes"/"no", what code asserts on);
    under ``set_language("zh")`` it shows itself in Chinese (:mod:`grpo_lab.i18n_table`)."""
    end = lambda c: _window(df, c, True, window)      # noqa: E731
    start = lambda c: _window(df, c, False, window)   # noqa: E731
    degenerate = 1.0 - float(informative_by_correctness(df.sort_values("step").tail(window)).mean())
    amplification = noise_amplification(df, window=window)
    len_col = "len_incorrect" if "len_incorrect" in df and df["len_incorrect"].notna().sum() >= 2 else "len_mean"
    growth = end(len_col) - start(len_col)
    what = "frac_all_correct + frac_all_wrong" if "frac_all_wrong" in df else "1 − frac_informative"
    values = {"degenerate": (Text(f"{what} = {degenerate:.2f}", f"{what} = {degenerate:.2f}"), degenerate > 0.5),
              "noise": (Text(f"mean |Â| per informative response = {amplification:.2f} (÷σ on 0/1 rewards: ≲ 1)",
                             f"每条有信息量的回答的平均 |Â| = {amplification:.2f}（0/1 奖励上 ÷σ：≲ 1）"),
                        amplification > 1.5),
              "longer": (Text(f"{len_col}: {start(len_col):.2f} → {end(len_col):.2f} tokens",
                              f"{len_col}：{start(len_col):.2f} → {end(len_col):.2f} 个 token"), growth > 1.0)}
    rows = [(q, values[key][0], values[key][1], fix) for key, q, fix in QUESTIONS]
    table = pd.DataFrame([{"question": q.en, "measured": m.en, "answer": "yes" if yes else "no", "if yes": fix.en}
                          for q, m, yes, fix in rows])
    return localized(table, lambda: pd.DataFrame([{"问题": q.zh, "测得": m.zh, "结论": "是" if yes else "否",
                                                   "若是，怎么办": fix.zh} for q, m, yes, fix in rows]))
