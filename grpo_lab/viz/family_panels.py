"""Panels and figures for notebook 07: the 2025 branches side by side (lecture notes 004 §三–四, 000 §2.3).

* :class:`FrozenBatchPanel` ("family.frozen_batch"): pick a frozen batch; bars of Â_i and
  of the total push on each answer for GRPO, Dr. GRPO, DAPO, GSPO and RLOO, and one heat map
  per variant of the per-token gradient weight −∂loss/∂log π(o_{i,t}) (from
  :func:`grpo_lab.family.score_batch`). Every batch has the same shape, so switching batches
  only changes bar heights, image data and texts.
* :class:`CreditPanel` ("family.credit"): λ and γ sliders; PPO's GAE per-token advantages on
  one answer next to GRPO's broadcast Â_i (:func:`grpo_lab.family.credit_assignment`).
"""
from __future__ import annotations

import functools
import html
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib as mpl
import numpy as np

from grpo_lab import family, methods
from grpo_lab.viz import register
from grpo_lab.viz.guide import see
from grpo_lab.viz.panel import Panel, dropdown, slider

VARIANT_COLORS = {v: methods.colour(v) for v in {**family.VARIANTS, **family.BEYOND_VARIANTS}}   # the registry's
PUSH_UNIT = 1e-3          # bars of the total push are drawn in units of 1e-3


# which variants a frozen-batch panel shows: notebook 07's (the lecture notes'), or notebook 09's
SHOWN = {"lecture": None, "beyond": ("GRPO", "DAPO", *family.BEYOND_VARIANTS)}


@functools.lru_cache(maxsize=None)
def _scores(batch: str, shown: str = "lecture") -> family.FamilyScores:
    """Named batches are frozen and scoring is deterministic: score each one once per session."""
    return family.score_batch(batch, SHOWN[shown])


def _limits(scores: list[family.FamilyScores]) -> tuple[float, float]:
    """Symmetric y-limits for Â and for the push bars that hold for every named batch."""
    adv = max(float(np.abs(s.responses["adv"]).max()) for s in scores)
    push = max(float(np.abs(s.responses["push"]).max()) for s in scores) / PUSH_UNIT
    return 1.1 * adv, 1.1 * push


# ---------------------------------------------------------------------------------
# Panel 1: one frozen batch, every variant
# ---------------------------------------------------------------------------------
def _bar_verts(x, heights, width, bottom=0.0, horizontal=False) -> np.ndarray:
    """Rectangles as polygons (n, 4, 2): one PolyCollection draws n bars far faster than n patches."""
    x = np.asarray(x, dtype=float)[:, None]
    h = np.asarray(heights, dtype=float)[:, None]
    lo, hi = x - width / 2, x + width / 2
    a = np.stack([np.hstack([lo, lo, hi, hi]), np.hstack([bottom + 0 * h, h, h, bottom + 0 * h])], axis=-1)
    return a[..., ::-1] if horizontal else a


def bar_heights(coll) -> np.ndarray:
    """Signed heights of the bars of a collection made by :func:`_bar_verts` (tests, notebooks)."""
    return np.array([p.vertices[1, 1] for p in coll.get_paths()])


def bar_widths(coll) -> np.ndarray:
    """Lengths of horizontal bars made by :func:`_bar_verts` with ``horizontal=True``."""
    return np.array([p.vertices[1, 0] for p in coll.get_paths()])


@register("family.frozen_batch")
class FrozenBatchPanel(Panel):
    """Dropdown of frozen batches; Â, push per answer and per-token push heat maps for 5 variants.

    Artists: ``len_bars`` (answer lengths, coloured by reward), ``adv_bars[v]`` and
    ``push_bars[v]`` (one PolyCollection of B bars per variant; read them with
    :func:`bar_heights`), ``meshes[v]`` (B × T per-token push / max |push|, padding masked).
    ``desc_html`` (the batch's description) and ``info_html`` (loss and clipped-token fraction
    per variant) are HTML widgets shown with the canvas.
    """

    title = "One frozen batch, every variant: advantages, push per answer, push per token"
    figsize = (9.6, 5.8)      # with the dropdown and the two HTML rows, under ~780 px of notebook
    bench_moves = [{"batch": b} for b in family.BATCHES]

    def make_controls(self):
        return {"batch": dropdown("frozen batch", list(family.BATCHES), "lecture-notes groups")}

    shown = "lecture"     # SHOWN key: the variants this panel scores

    def compute(self, batch):
        return _scores(batch, self.shown)

    def build(self, fig):
        from matplotlib.collections import PolyCollection

        all_scores = [_scores(b, self.shown) for b in family.BATCHES]
        self.adv_lim, self.push_lim = _limits(all_scores)
        first = all_scores[0]
        self.variants = list(first.summary.index)
        B, T, G = first.batch.B, first.batch.T, first.batch.G
        self.x = x = np.arange(B)
        outer = fig.add_gridspec(2, 1, height_ratios=[1.0, 1.05])
        top = outer[0].subgridspec(1, 15)
        bottom = outer[1].subgridspec(1, len(self.variants))    # own columns: no gaps from the top labels
        self.ax_len = fig.add_subplot(top[0, 0:3])
        self.ax_adv = fig.add_subplot(top[0, 3:9])
        self.ax_push = fig.add_subplot(top[0, 9:15])
        labels = [f"{k + 1}·{i + 1}" for k, i in zip(*np.divmod(x, G))]
        self.reward_cmap = mpl.colormaps["RdYlGn"]

        ax = self.ax_len
        self.len_bars = self.dynamic(ax.add_collection(PolyCollection(
            _bar_verts(x, np.zeros(B), 0.8, horizontal=True), edgecolors="none")))
        ax.set_ylim(B - 0.5, -0.5)
        ax.set_xlim(0, T)
        ax.set_yticks(x, labels, fontsize=7)
        ax.set_xlabel("|y_i| tokens (green r=1 … red r=0)", fontsize=8)
        ax.set_ylabel("prompt·answer")
        for k in range(1, B // G):
            ax.axhline(k * G - 0.5, color="0.3", lw=0.8)

        self.width = width = 0.8 / len(self.variants)
        self.offsets = {v: (j - (len(self.variants) - 1) / 2) * width for j, v in enumerate(self.variants)}
        self.adv_bars, self.push_bars = {}, {}
        for ax, store, lim, ylabel in ((self.ax_adv, self.adv_bars, self.adv_lim, "advantage Â_i"),
                                       (self.ax_push, self.push_bars, self.push_lim,
                                        r"push per answer $\sum_t -w_{i,t}$ (×1e-3)")):
            for j, v in enumerate(self.variants):
                coll = PolyCollection(_bar_verts(x + self.offsets[v], np.zeros(B), width),
                                      facecolors=VARIANT_COLORS.get(v, f"C{j}"), edgecolors="none", label=v)
                store[v] = self.dynamic(ax.add_collection(coll))
            ax.axhline(0, color="0.3", lw=0.8)
            for k in range(1, B // G):
                ax.axvline(k * G - 0.5, color="0.6", lw=0.8, ls=":")
            ax.set_xlim(-0.6, B - 0.4)
            ax.set_ylim(-lim, lim)
            ax.set_xticks(x, labels, fontsize=7)
            ax.set_ylabel(ylabel, fontsize=8)
        # above the bar axes, not inside them (inside, it covered the ±1.73 bars)
        self.ax_adv.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=7, ncol=len(self.variants),
                           frameon=False, borderaxespad=0.2, handlelength=1.0, columnspacing=0.8)
        # Text is the slow part of a draw (≈ 15 ms per multi-line block on Agg), so the batch's
        # description and the loss/clip table live in HTML widgets next to the canvas.
        self.desc_html = widgets.HTML()
        self.info_html = widgets.HTML()

        cmap = mpl.colormaps[methods.PUSH_CMAP].with_extremes(bad="0.92")
        self.meshes, heat_axes = {}, []
        for j, v in enumerate(self.variants):
            ax = fig.add_subplot(bottom[0, j])
            heat_axes.append(ax)
            mesh = ax.pcolormesh(np.arange(T + 1) - 0.5, np.arange(B + 1) - 0.5,
                                 np.ma.masked_all((B, T)), cmap=cmap, vmin=-1, vmax=1)
            self.meshes[v] = self.dynamic(mesh)
            ax.set_ylim(B - 0.5, -0.5)
            ax.set_title(v, fontsize=10, color=VARIANT_COLORS.get(v, "k"))
            ax.set_xlabel("token t", fontsize=8)
            ax.set_yticks(x, labels if j == 0 else [""] * B, fontsize=6)
            ax.tick_params(axis="x", labelsize=7)
            for k in range(1, B // G):
                ax.axhline(k * G - 0.5, color="0.3", lw=0.6)
        fig.colorbar(mpl.cm.ScalarMappable(norm=mpl.colors.Normalize(-1, 1), cmap=cmap), ax=heat_axes,
                     fraction=0.03, pad=0.01, label="push per token / its variant's max |push|")

    def draw(self, s: family.FamilyScores):
        batch = s.batch
        r = batch.rewards.reshape(-1)
        r_lo, r_hi = float(min(r.min(), 0.0)), float(max(r.max(), 1.0))
        self.len_bars.set_verts(_bar_verts(self.x, batch.lengths.reshape(-1), 0.8, horizontal=True))
        self.len_bars.set_facecolors(self.reward_cmap((r - r_lo) / (r_hi - r_lo)))
        df = s.responses
        for v in self.variants:
            rows = df[df["variant"] == v]
            xv = self.x + self.offsets[v]
            self.adv_bars[v].set_verts(_bar_verts(xv, rows["adv"].to_numpy(), self.width))
            self.push_bars[v].set_verts(_bar_verts(xv, rows["push"].to_numpy() / PUSH_UNIT, self.width))
            push = s.push(v)                                                   # (B, T)
            scale = float(np.abs(push).max())
            norm = push / scale if scale > 0 else push
            self.meshes[v].set_array(np.ma.masked_where(batch.mask == 0, norm))
        self.desc_html.value = f"<b>{html.escape(batch.name)}</b>: {html.escape(str(batch.description))}"
        S = s.summary
        cells = "".join(f"<th style='padding:0 8px'>{html.escape(v)}</th>" for v in self.variants)
        rows = [("loss", [f"{S.loc[v, 'loss']:+.4f}" for v in self.variants]),
                ("clipped tokens", [f"{S.loc[v, 'clip_frac_low'] + S.loc[v, 'clip_frac_high']:.1%}"
                                    for v in self.variants])]
        body = "".join(f"<tr><td>{name}</td>" + "".join(f"<td style='padding:0 8px'>{x}</td>" for x in xs) + "</tr>"
                       for name, xs in rows)
        self.info_html.value = f"<table><tr><th></th>{cells}</tr>{body}</table>"

    @property
    def widget(self):
        """Controls and the batch description above the canvas, the loss/clip table below it."""
        base = super().widget
        return widgets.VBox([base.children[0], self.desc_html, base.children[1], self.info_html])


@register("family.frozen_batch_beyond")
class BeyondBatchPanel(FrozenBatchPanel):
    """The same panel for notebook 09: GRPO and DAPO beside CISPO, SAPO and GMPO (beyond the lecture notes)."""

    title = "One frozen batch: GRPO and DAPO beside CISPO, SAPO, GMPO (beyond the lecture notes)"
    shown = "beyond"


# ---------------------------------------------------------------------------------
# Panel 2: GAE's per-token advantages vs GRPO's broadcast scalar
# ---------------------------------------------------------------------------------
@dataclass
class CreditView:
    ca: family.CreditAssignment
    key_share: float       # fraction of Σ_t A_t that lands on the decisive token
    total: float           # Σ_t A_t


@register("family.credit")
class CreditPanel(Panel):
    """λ and γ sliders: GAE A_t per token (bars) vs GRPO's Â_i on every token (line)."""

    title = "Credit assignment on one answer: PPO's GAE (per token) vs GRPO's broadcast Â_i (lecture notes 000 §2.3)"
    figsize = (9.6, 4.6)
    bench_moves = [{"lam": lam, "gamma": g} for lam, g in [(0.95, 1.0), (0.0, 1.0), (1.0, 1.0), (0.5, 0.9)]]

    def make_controls(self):
        return {"lam": slider("λ (GAE)", 0.95, 0.0, 1.0, 0.05, fmt=".2f"),
                "gamma": slider("γ (discount)", 1.0, 0.8, 1.0, 0.01, fmt=".2f")}

    def compute(self, lam, gamma):
        ca = family.credit_assignment(self.seq, gamma=gamma, lam=lam)
        total = float(ca.gae.sum())
        share = float(ca.gae[self.seq.key] / total) if total != 0 else 0.0
        return CreditView(ca, share, total)

    def build(self, fig):
        self.seq = family.toy_sequence()
        T = len(self.seq.tokens)
        x = np.arange(T)
        self.ax_v, self.ax_a = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.6]})
        ax = self.ax_v
        ax.step(x, self.seq.values, where="mid", color="tab:purple", label="toy critic V(o_<t)")
        ax.plot(x, self.seq.rewards, "o", color="k", label="reward r_t (verifier, last token)")
        ax.axvspan(self.seq.key - 0.5, self.seq.key + 0.5, color="gold", alpha=0.3, label="decisive token")
        ax.set_xticks(x, self.seq.tokens, rotation=45, fontsize=8)
        ax.set_ylim(-0.05, 1.1)
        ax.set_xlim(-0.5, T - 0.5)
        ax.legend(loc="upper left", fontsize=7)
        ax.set_title("one correct answer to a hard prompt (group 1,0,0,0)", fontsize=9)

        ax = self.ax_a
        ax.axvspan(self.seq.key - 0.5, self.seq.key + 0.5, color="gold", alpha=0.3)
        self.bars = self.dynamic(*ax.bar(x, np.zeros(T), width=0.6, color=methods.colour("ppo"), label="GAE A_t (γ, λ)"))
        self.td_line = self.dynamic(ax.plot(x, np.zeros(T), "v", color="tab:cyan", ms=6,
                                            label="λ = 0: TD error δ_t")[0])
        self.mc_line = self.dynamic(ax.plot(x, np.zeros(T), "_", color="navy", ms=14, mew=2,
                                            label="λ = 1: return-to-go − V_t")[0])
        self.grpo_line = self.dynamic(ax.step(x, np.zeros(T), where="mid", color=methods.colour("grpo"), lw=2.2,
                                              label="GRPO Â_i = +1.73 on every token")[0])
        self.base_line = self.dynamic(ax.step(x, np.zeros(T), where="mid", color=methods.colour("dr_grpo"), lw=1.5, ls="--",
                                              label="r_i − mean = 0.75 (Dr. GRPO) on every token")[0])
        self.info = self.dynamic(ax.text(0.01, 0.85, "", transform=ax.transAxes, ha="left", va="top",
                                         fontsize=8, family="monospace"))
        self.info.set_in_layout(False)
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xticks(x, self.seq.tokens, rotation=45, fontsize=8)
        ax.set_xlim(-0.5, T - 0.5)
        ax.set_ylim(-0.1, 1.95)
        ax.set_ylabel("advantage of token t")
        ax.legend(loc="upper right", bbox_to_anchor=(1.0, 0.87), fontsize=7)   # between the Â line and the bars

    def draw(self, r: CreditView):
        ca = r.ca
        for bar, a in zip(self.bars, ca.gae):
            bar.set_height(a)
        x = np.arange(ca.gae.size)
        self.td_line.set_data(x, ca.td)
        self.mc_line.set_data(x, ca.mc)
        self.grpo_line.set_data(x, ca.grpo)
        self.base_line.set_data(x, ca.mean_baseline)
        self.info.set_text(f"γ = {ca.gamma:.2f}  λ = {ca.lam:.2f}\nΣ_t A_t = {r.total:.3f}\n"
                           f"share on ' ÷' = {r.key_share:.0%}\nGRPO share = {1 / ca.gae.size:.0%}")


# ---------------------------------------------------------------------------------
# Static figure: the cached short training runs per preset
# ---------------------------------------------------------------------------------
PRESET_COLORS = {p: methods.colour(p) for p in methods.PRESETS}
RUN_PANELS = (("reward_mean", "reward (mean over the step's answers)"),
              ("len_incorrect", "length of wrong answers |y_i| (tokens)"),
              ("degenerate", "degenerate groups (of those sampled)"),
              ("n_groups", "groups sampled per step"),
              ("clip_frac", "clipped tokens (low + high)"),
              ("kl", "KL(π_θ‖π_ref) (k3)"))


# What the cached runs show, per seed over the last 50 steps (notebook 07's check cell asserts them on the data)
RUNS_DAPO_GROUPS = 4                                              # groups sampled per step, × P
# clipped tokens per seed, in % of tokens: (lowest, highest, decimals they are rounded to)
RUNS_CLIP_RANGES = {"gspo": (9, 13, 0), "token-level": (0.1, 0.3, 1)}
RUNS_CLIP_GSPO, RUNS_CLIP_TOKEN = (f"{lo:g}–{hi:g} %" for lo, hi, _ in RUNS_CLIP_RANGES.values())


RUNS_WHAT_TO_SEE = see(
    "Nothing to move: read the six panels from top left, one colour per preset.",
    "不用动任何控件：从左上角开始读六个面板，每种颜色一个预设。",
    "Reward, lengths, the degenerate-group share, groups sampled per step, clipped fraction and KL over 150 steps "
    "(mean over seeds, band ± one standard error).",
    "150 步内的奖励、长度、退化组占比、每步采样的组数、裁剪比例和 KL（各随机种子平均，阴影为 ±1 个标准误）。",
    f"DAPO samples about {RUNS_DAPO_GROUPS}× as many groups per step to stay informative; GSPO clips "
    f"{RUNS_CLIP_GSPO} of the tokens per seed, the token-level presets {RUNS_CLIP_TOKEN}. The reward curves "
    "differ less between presets than between seeds.",
    f"DAPO 每步要采样约 {RUNS_DAPO_GROUPS} 倍的组才能保持有信息量；GSPO 每个随机种子裁剪 {RUNS_CLIP_GSPO} 的 token，"
    f"token 级预设只裁剪 {RUNS_CLIP_TOKEN}。各预设之间奖励曲线的差别小于随机种子之间的差别。",
)


def runs_figure(df=None, *, smooth: int = 10):
    """Curves of the per-preset runs (default: the cached ``grpo_lab/data/family_runs.csv``).

    Each line is the mean over seeds of a centred rolling mean over ``smooth`` steps; the
    band is ± one standard error across seeds (when there are several).
    """
    import matplotlib.pyplot as plt

    from grpo_lab.lm.preset_runs import load_family_runs

    df = load_family_runs() if df is None else df
    df = df.assign(degenerate=1.0 - df["frac_informative"],
                   clip_frac=df["clip_frac_low"] + df["clip_frac_high"])
    with plt.ioff():
        fig, axes = plt.subplots(2, 3, figsize=(9.6, 5.8), layout="constrained")
    for ax, (col, label) in zip(axes.flat, RUN_PANELS):
        if col not in df.columns or df[col].isna().all():
            ax.set_visible(False)
            continue
        for preset, g in df.groupby("preset", sort=False):
            curves = g.pivot(index="step", columns="seed", values=col)
            curves = curves.rolling(smooth, min_periods=1, center=True).mean()
            mean = curves.mean(axis=1)
            c = PRESET_COLORS.get(preset)
            ax.plot(mean.index, mean.to_numpy(), color=c, label=preset, lw=1.6)
            if curves.shape[1] > 1:
                sem = curves.std(axis=1, ddof=1) / np.sqrt(curves.shape[1])
                ax.fill_between(mean.index, mean - sem, mean + sem, color=c, alpha=0.2, lw=0)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("GRPO step")
    axes.flat[0].legend(fontsize=8)
    n_seeds = df.groupby("preset")["seed"].nunique().min()
    fig.suptitle(f"Short runs of each preset on the addition task (mean of {n_seeds} seed(s), "
                 f"rolling mean over {smooth} steps)")
    return fig


# ---------------------------------------------------------------------------------
# Figures for slides (`make figures`)
# ---------------------------------------------------------------------------------
def _frozen_figure(batch: str) -> FrozenBatchPanel:
    panel = FrozenBatchPanel(batch=batch)
    panel.fig.suptitle(f"{panel.title} — batch: {batch}")
    panel.fig.set_layout_engine("constrained")                 # lay out again around the longer title
    return panel


def fig_frozen_batch():
    return _frozen_figure("lecture-notes groups")


def fig_frozen_batch_long_wrong():
    return _frozen_figure("long wrong answers")


def fig_frozen_batch_stale():
    return _frozen_figure("stale (off-policy)")


def fig_credit():
    return CreditPanel(lam=0.95, gamma=1.0)


def fig_preset_runs():
    return runs_figure()


FIGURES = {"07_frozen_batch": fig_frozen_batch, "07_frozen_batch_long_wrong": fig_frozen_batch_long_wrong,
           "07_frozen_batch_stale": fig_frozen_batch_stale, "07_gae_vs_grpo": fig_credit,
           "07_preset_runs": fig_preset_runs}
