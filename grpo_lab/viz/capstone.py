"""Notebook 08's figures: pass@k per run, and the training curves, each split so that every line can be told apart.

One colour per method (:data:`METHOD_COLORS`), one marker and line style per seed; the GRPO seeds
appear in every panel, as lines or as a grey band (their range), so each other run is read against
them; legends sit below the axes, never over the data.
"""
from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from grpo_lab.i18n import tr
from grpo_lab.viz.lm import smooth

METHOD_COLORS = {"before": "black", "prompt_only": "0.55", "grpo": "tab:blue", "rft": "tab:orange",
                 "lora8": "tab:green", "dr_grpo": "tab:purple", "eq7": "tab:brown", "no_std": "tab:red"}
SEED_STYLE = {0: ("o", "-"), 1: ("s", "--"), 2: ("^", ":")}
SEEDED = ("grpo", "rft")             # methods with several seeds: their own panel


def method_of(name: str) -> str:
    """``"rft"`` for ``"rft_s2"``; a run without a seed suffix is its own method (``"before"``)."""
    return name.rsplit("_s", 1)[0] if "_s" in name and name.rsplit("_s", 1)[1].isdigit() else name


def seed_of(name: str) -> int:
    tail = name.rsplit("_s", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def style(name: str) -> dict:
    """Matplotlib keywords of run ``name``: its method's colour, its seed's marker and line style."""
    m = method_of(name)
    marker, ls = SEED_STYLE.get(seed_of(name), ("o", "-"))
    if m in ("before", "prompt_only"):
        marker, ls = ("D", "-") if m == "before" else ("v", "--")
    return dict(color=METHOD_COLORS.get(m, "tab:gray"), marker=marker, linestyle=ls)


def _figure(figsize) -> Figure:
    """A figure outside pyplot's list (with its own Agg canvas): shown once, as the cell's value."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _panels(names) -> list[list[str]]:
    """The runs of each panel: [GRPO and RFT seeds], [the one-seed variants]."""
    seeded = [n for n in names if method_of(n) in SEEDED]
    single = [n for n in names if method_of(n) not in SEEDED and method_of(n) not in ("before", "prompt_only")]
    return [p for p in (seeded, single) if p]


def _band(ax, x, values, label):
    lo, hi = np.min(values, axis=0), np.max(values, axis=0)
    ax.fill_between(x, lo, hi, color=METHOD_COLORS["grpo"], alpha=0.15, lw=0, label=label)


def _legend_below(ax, ncol=3):
    ax.legend(fontsize=7, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)


def passk_figure(curves: dict, *, figsize=(11, 4.6)):
    """pass@k with 95 % bars per run. ``curves``: {run: DataFrame with k, value, lo, hi} (``real_runs.passk_curve``).

    Left: the base model, prompt-only, and the GRPO and RFT seeds. Right: the base model and each
    one-seed variant against the GRPO seeds' range (band). The bars are each run's own interval over
    problems; runs are dodged sideways so that no two bars overlap."""
    names = list(curves)
    panels = _panels(names)
    base = [n for n in ("before", "prompt_only") if n in curves]
    fig = _figure(figsize)
    axes = fig.subplots(1, max(1, len(panels)), sharey=True, squeeze=False)
    axes = axes[0]
    grpo = [n for n in names if method_of(n) == "grpo"]
    titles = [tr("GRPO and RFT, three seeds each", "GRPO 与 RFT，各三个随机种子"),
              tr("one-seed variants against the GRPO seeds' range", "单随机种子变体，对照 GRPO 各随机种子的范围")]
    for j, ax in enumerate(axes):
        runs = [*base, *(panels[j] if j < len(panels) else [])]
        if j == 1 and len(grpo) >= 2:
            ks = curves[grpo[0]]["k"].to_numpy(float)
            _band(ax, ks, [curves[g]["value"].to_numpy() for g in grpo], tr("GRPO seeds (range)", "GRPO 各随机种子（范围）"))
        for i, n in enumerate(runs):
            c = curves[n]
            dodge = 2 ** ((i - (len(runs) - 1) / 2) * 0.035)       # multiplicative: the k axis is logarithmic
            x = c["k"].to_numpy(float) * dodge
            ax.errorbar(x, c["value"], yerr=[c["value"] - c["lo"], c["hi"] - c["value"]], capsize=2, ms=4,
                        lw=1.3, elinewidth=0.8, label=n, **style(n))
        ks = list(curves[names[0]]["k"])
        ax.set(xscale="log", xticks=ks, xticklabels=[str(k) for k in ks], xlabel="k", ylim=(0, 1),
               title=titles[j] if len(panels) > 1 or j == 0 else "")
        ax.minorticks_off()
        ax.grid(alpha=0.3)
        _legend_below(ax, ncol=4)
    axes[0].set_ylabel(tr("pass@k (200 held-out problems, 95 % bars)", "pass@k（200 道留出题，95 % 区间）"))
    return fig


def training_figure(steps: dict, *, window: int = 3, figsize=(11, 5.6)):
    """Training reward (rolling mean of ``window`` steps) and mean reply length per step, one column per
    group of runs: the GRPO seeds, the RFT seeds, the one-seed variants. Every column but the first
    shows the GRPO seeds' range as a band. ``steps``: {run: DataFrame with step, reward_mean, len_mean}."""
    names = list(steps)
    groups = [[n for n in names if method_of(n) == m] for m in SEEDED]
    groups.append([n for n in names if method_of(n) not in SEEDED])
    groups = [g for g in groups if g]
    fig = _figure(figsize)
    grid = fig.subplots(2, len(groups), sharex=True, sharey="row", squeeze=False)
    grpo = [n for n in names if method_of(n) == "grpo"]
    rows = (("reward_mean", tr("training reward (rolling mean of 3)", "训练奖励（3 步滑动平均）"), window),
            ("len_mean", tr("mean reply length (tokens)", "平均回复长度（token）"), 1))
    for j, group in enumerate(groups):
        for i, (col, ylabel, w) in enumerate(rows):
            ax = grid[i, j]
            if grpo and group != grpo:
                frames = [steps[g].sort_values("step") for g in grpo]
                x = frames[0]["step"].to_numpy()
                _band(ax, x, [smooth(f[col], w) for f in frames], tr("GRPO seeds (range)", "GRPO 各随机种子（范围）"))
            for n in group:
                st = steps[n].sort_values("step")
                ax.plot(st["step"], smooth(st[col], w), ms=3, lw=1.4, label=n, **style(n))
            ax.grid(alpha=0.3)
            if j == 0:
                ax.set_ylabel(ylabel)
            if i == 1:
                ax.set_xlabel(tr("step", "步"))
        m = {method_of(n) for n in group}
        title = (tr("GRPO, three seeds", "GRPO，三个随机种子") if m == {"grpo"} else
                 tr("RFT, three seeds", "RFT，三个随机种子") if m == {"rft"} else
                 tr("one-seed variants", "单随机种子变体"))
        grid[0, j].set_title(title, fontsize=10)
        _legend_below(grid[1, j], ncol=2)
    return fig


__all__ = ["METHOD_COLORS", "SEED_STYLE", "method_of", "seed_of", "style", "passk_figure", "training_figure"]
