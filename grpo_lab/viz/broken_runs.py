"""Figure for notebook 06's metric guide: the cached broken runs next to a healthy one."""
from __future__ import annotations

import matplotlib.pyplot as plt

from grpo_lab.lm import broken_runs
from grpo_lab.viz.guide import see
from grpo_lab.viz.lm import smooth

RUN_COLORS = {"healthy": "k", "no_warm_start": "tab:gray", "noisy_std": "tab:orange", "lr_high": "tab:purple"}
PANELS = (("reward_mean", "reward (mean r_i)", "linear"), ("frac_all_wrong", "all-wrong groups (fraction)", "linear"),
          ("adv_abs_mean", "mean |Â_i|", "linear"), ("kl", "KL(π_θ‖π_ref)", "log"))

BROKEN_WHAT_TO_SEE = see(
    "Nothing to move: find, for each coloured run, the panel where it leaves the black (healthy) curve.",
    "不用动任何控件：为每条彩色曲线找出它偏离黑色（正常）曲线的那个面板。",
    "No warm start (grey): reward ≈ 0 and nearly every group all-wrong. ÷σ on noisy rewards (orange): the reward looks "
    "healthy but mean |Â| is three times too large. Learning rate too high (purple): KL explodes, the reward collapses.",
    "没有热启动（灰）：奖励约为 0，几乎每组全错。噪声奖励上 ÷σ（橙）：奖励看起来正常，但平均 |Â| 大了三倍。学习率过高（紫）：KL 爆炸，奖励崩溃。",
    "A run can look fine on the reward curve and still be broken: the orange run is caught only by mean |Â|.",
    "奖励曲线看起来没问题的运行也可能是坏的：橙色那条只有平均 |Â| 能看出来。",
)


def broken_runs_figure(df=None, *, window: int = 5, figsize=(9.6, 5.2)):
    """2 × 2 panels (reward, all-wrong share, mean |Â|, KL), one line per run of :data:`broken_runs.RUNS`."""
    df = broken_runs.load() if df is None else df
    with plt.ioff():
        fig, grid = plt.subplots(2, 2, figsize=figsize, layout="constrained", sharex=True)
    for ax, (col, title, yscale) in zip(grid.ravel(), PANELS):
        for run in broken_runs.RUNS:
            d = df[df["run"] == run.name].sort_values("step")
            if d.empty or col not in d:
                continue
            ax.plot(d["step"], smooth(d[col], window), color=RUN_COLORS.get(run.name), lw=1.6, label=str(run.label))
        ax.set_title(title, fontsize=9)
        ax.set_yscale(yscale)
        ax.grid(alpha=0.3)
    for ax in grid[1]:
        ax.set_xlabel("step")
    grid[0, 1].legend(fontsize=7, loc="center right")
    return fig
