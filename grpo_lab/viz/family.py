"""The family tree figure (notebook 00, slides): drawn from :data:`grpo_lab.roadmap.FAMILY`."""
from __future__ import annotations

import matplotlib.pyplot as plt

from grpo_lab.roadmap import FAMILY

# (x, y) of each box; the tree grows downward
POSITIONS = {"REINFORCE": (0.5, 0.92), "ReST": (0.15, 0.74), "baseline": (0.5, 0.74), "PPO": (0.3, 0.55), "RLOO": (0.78, 0.55),
             "GRPO": (0.3, 0.36), "Dr. GRPO": (0.1, 0.12), "DAPO": (0.38, 0.12), "GSPO": (0.66, 0.12),
             "DPO": (0.9, 0.9)}
COLORS = {"2025": "#fde2c8", "off": "#e8e8e8", "default": "#d7e8f7"}


def family_tree(figsize=(9.6, 6.2)):
    """Boxes with each method's name, year and one-line change; arrows parent → child."""
    with plt.ioff():
        fig, ax = plt.subplots(figsize=figsize)
    ax.set_axis_off()
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    for m in FAMILY:
        x, y = POSITIONS[m.name]
        color = COLORS["off"] if not m.on_tree else COLORS["2025"] if m.year == "2025" else COLORS["default"]
        ax.text(x, y, f"{m.name}  ({m.year})\n{m.short}", ha="center", va="center", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.4", fc=color, ec="0.4"), zorder=3)
        if m.parent:
            px, py = POSITIONS[m.parent]
            ax.annotate("", xy=(x, y + 0.05), xytext=(px, py - 0.045),
                        arrowprops=dict(arrowstyle="->", color="0.35", lw=1.2), zorder=1)
    ax.text(0.9, 0.83, "off the tree", ha="center", fontsize=8, style="italic", color="0.4")
    ax.set_title("The GRPO family tree (lecture notes 004): ReST and the baseline branch grow from REINFORCE",
                 fontsize=10)
    return fig


FIGURES = {"00_family_tree": family_tree}
