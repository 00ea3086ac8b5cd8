"""Figure for notebook 04: token credit emerging across batches (:mod:`grpo_lab.credit_emergence`)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from grpo_lab.viz.guide import see

G_COLORS = {2: "tab:gray", 4: "tab:orange", 16: "tab:purple"}

CREDIT_WHAT_TO_SEE = see(
    "Nothing to move: read the three panels from low to high temperature.",
    "不用动任何控件：从低温到高温依次读三个面板。",
    "Solid lines: π(decisive token) at the position that decides the reward; dotted: the same token at the "
    "filler positions. One colour per group size G, the same number of responses (32) per step for every G.",
    "实线：决定奖励的位置上关键 token 的概率；点线：同一个 token 在无关位置上的概率。每种颜色一个组大小 G，各 G 每步的回答数相同。",
    "Every token of a rewarded response got the same Â, yet only the decisive token rises: its credit emerges "
    "across many groups. Small G at low temperature (few informative groups) barely learns.",
    "奖励回答中的每个 token 得到的 Â 都一样，但只有关键 token 上升：它的功劳是在大量组中涌现的。低温下的小 G（有信息量的组很少）几乎学不动。",
)


def credit_figure(results, *, figsize=(9.6, 3.3)):
    """One panel per temperature; per G the seed-mean π(target) at the decisive (—) and filler (⋯) positions."""
    temps = sorted({tau for _, tau in results})
    with plt.ioff():
        fig, axes = plt.subplots(1, len(temps), figsize=figsize, layout="constrained", sharey=True)
    axes = np.atleast_1d(axes)
    for ax, tau in zip(axes, temps):
        for (G, t), r in sorted(results.items()):
            if t != tau:
                continue
            x = np.arange(r.p_key.shape[0])
            c = G_COLORS.get(G, None)
            ax.plot(x, r.p_key.mean(1), color=c, lw=2, label=f"G = {G}: decisive")
            ax.plot(x, r.p_filler.mean(1), color=c, lw=1.2, ls=":", label=f"G = {G}: filler")
        ax.set_title(f"temperature τ = {tau:g}", fontsize=9)
        ax.set_xlabel("training step")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("π(target token)")
    axes[0].legend(fontsize=7, loc="center left")           # the empty early part of the low-τ panel
    return fig
