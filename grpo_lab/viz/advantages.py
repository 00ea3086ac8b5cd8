"""Panels and figures for notebook 03: group advantages, degenerate groups, difficulty bias.

Lecture notes 000 §1 (eq. (1), edge cases, difficulty bias) and lecture notes 004 §三–四 (worked groups,
degenerate groups, the four remedies, Dr. GRPO's first fix). Every number drawn here comes
from :mod:`grpo_lab.advantages` and :mod:`grpo_lab.bias`.
"""
from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
from matplotlib.transforms import blended_transform_factory

from grpo_lab import advantages as adv_mod
from grpo_lab import bias, methods
from grpo_lab.i18n import tr
from grpo_lab.viz import register
from grpo_lab.viz.panel import Panel, ReadoutPanel, dropdown, slider


G_MAX = 8                    # the group editor has this many reward controls
STD_COLOR, NONE_COLOR = methods.colour("grpo"), methods.colour("dr_grpo")   # ÷ std (GRPO), none (Dr. GRPO)
SCALE_OPTIONS = [("GRPO: ÷ group std", "group"), ("Dr. GRPO: no std", "none")]
STD_OPTIONS = [("population (seeds)", "population"), ("sample (TRL, verl)", "sample")]
STATE_COLORS = {"all_wrong": methods.WRONG, "informative": methods.OTHER["informative"], "all_correct": methods.CORRECT}


def _log_slider(description, value, lo_exp, hi_exp):
    return widgets.FloatLogSlider(value=value, base=10, min=lo_exp, max=hi_exp, step=0.25,
                                  description=description, continuous_update=True, readout_format=".0e",
                                  style={"description_width": "initial"}, layout=widgets.Layout(width="300px"))


# ---------------------------------------------------------------------------------
# Panel 1: the group editor
# ---------------------------------------------------------------------------------
@dataclass
class GroupView:
    G: int
    rewards: np.ndarray      # (G,)
    adv: np.ndarray          # (G,)
    mean: float
    std: float               # the chosen std (population or sample) of the rewards
    denom: float             # std + ε (or 1 without scaling)
    degenerate: bool
    sum_abs: float           # Σ|Â_i|, the group's update weight


@register("advantages.group")
class GroupEditorPanel(ReadoutPanel):
    """G rewards (0/1 toggles or continuous sliders) -> Â_i bars, eq. (1); a banner for degenerate groups."""

    title = "Group advantage Â_i = (r_i − mean) / (std + ε)   (lecture notes 000 eq. (1))"
    figsize = (9.5, 3.6)
    # ε enters only through the ÷(std + ε); without the std (Dr. GRPO) it cannot change anything
    relevance = {"eps": lambda v: v["scale"] == "group"}
    bench_moves = [{"r1": True}, {"r1": False}, {"G": 6}, {"r0": False}, {"std": "sample"},
                   {"scale": "none"}, {"r0": True, "G": 4, "std": "population", "scale": "group"},
                   {"mode": "continuous"}, {"c2": 0.61}, {"eps": 1e-2}, {"mode": "binary", "eps": 1e-4}]

    def make_controls(self):
        c = {"G": slider("group size G", 4, 2, G_MAX, 1, integer=True),
             "mode": dropdown("rewards", ["binary", "continuous"]),
             "scale": dropdown("scale", SCALE_OPTIONS, "group"),
             "std": dropdown("std", STD_OPTIONS, "population"),
             "eps": _log_slider("ε", adv_mod.DEFAULT_EPS, -8, 0)}
        for i in range(G_MAX):
            c[f"r{i}"] = widgets.ToggleButton(value=(i == 0), description=f"r{i + 1} = {int(i == 0)}",
                                              layout=widgets.Layout(width="72px"))
        for i in range(G_MAX):
            c[f"c{i}"] = widgets.FloatSlider(value=round(0.2 + 0.1 * i, 2), min=0.0, max=1.0, step=0.01,
                                             orientation="vertical", description=f"r{i + 1}",
                                             continuous_update=True, readout_format=".2f",
                                             layout=widgets.Layout(height="130px", width="56px"))
        return c

    def rewards(self, values=None) -> np.ndarray:
        """The current group's rewards, shape (G,)."""
        v = self.values() if values is None else values
        key = "r" if v["mode"] == "binary" else "c"
        return np.array([float(v[f"{key}{i}"]) for i in range(v["G"])])

    def set_rewards(self, rewards) -> "GroupEditorPanel":
        """Show a given group: binary if every reward is 0 or 1, else continuous (G ≤ 8)."""
        r = adv_mod.as_groups(rewards)[0][0]
        if not 2 <= r.size <= G_MAX:
            raise ValueError(f"rewards: the editor shows 2 to {G_MAX} rewards, got {r.size}")
        binary = bool(np.all((r == 0) | (r == 1)))
        if not binary and np.any((r < 0) | (r > 1)):
            raise ValueError("rewards: continuous rewards must lie in [0, 1] for the editor")
        moves = {"G": r.size, "mode": "binary" if binary else "continuous"}
        moves.update({(f"r{i}" if binary else f"c{i}"): (bool(x) if binary else float(x)) for i, x in enumerate(r)})
        return self.set(**moves)

    def compute(self, **v):
        r = self.rewards(v)
        adv = adv_mod.group_advantages(r, scale=v["scale"], std=v["std"], eps=v["eps"])
        s = float(adv_mod.group_std(r, v["std"]))
        deg = bool(adv_mod.degenerate_mask(r))
        denom = adv_mod.advantage_denominator(r, scale=v["scale"], std=v["std"], eps=v["eps"])
        return GroupView(v["G"], r, adv, float(r.mean()), s, denom, deg, float(np.abs(adv).sum()))

    def build(self, fig):
        self.ax_r, self.ax_a = fig.subplots(1, 2, width_ratios=[1, 1.25])
        ax = self.ax_r
        self.r_bars = self.dynamic(*ax.bar(np.arange(G_MAX), np.zeros(G_MAX), width=0.7, color="0.55"))
        self.mean_line = self.dynamic(ax.plot([], [], color="k", lw=2, label="group mean (baseline)")[0])
        self.std_band = self.dynamic(ax.axhspan(0, 0, color="tab:purple", alpha=0.15, label="mean ± std"))
        ax.set_xlim(-0.5, G_MAX - 0.5)
        ax.set_ylim(-0.05, 1.5)
        ax.set_xticks([])
        ax.set_ylabel("reward r_i")
        # the denominator, to enough digits that every step of the ε slider shows (issue 24)
        self.denom_text = self.dynamic(ax.text(0.02, 0.97, "", transform=ax.transAxes, va="top", fontsize=8,
                                               family="monospace"))
        ax.set_title("rewards of one group", fontsize=10)
        ax.legend(loc="upper right", fontsize=7)
        ax = self.ax_a
        self.a_bars = self.dynamic(*ax.bar(np.arange(G_MAX), np.zeros(G_MAX), width=0.7))
        self.a_labels = self.dynamic(*[ax.text(i, 0, "", ha="center", fontsize=8) for i in range(G_MAX)])
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xlim(-0.5, G_MAX - 0.5)
        ax.set_ylim(-3.1, 3.1)
        ax.set_xticks([])
        ax.set_ylabel("advantage Â_i")
        ax.set_title("one scalar per response, shared by all its tokens", fontsize=10)
        self.slot_labels = {a: self.dynamic(*[a.text(i, -0.015, "", ha="center", va="top", fontsize=9, clip_on=False,
                                                      transform=blended_transform_factory(a.transData, a.transAxes))
                                               for i in range(G_MAX)])
                            for a in (self.ax_r, self.ax_a)}
        for a in (self.ax_r, self.ax_a):
            a.set_xlabel("response i", labelpad=14, fontsize=8)   # leaves room for the slot labels
        self.banner = self.dynamic(ax.text(0.5, 0.5, "DEGENERATE GROUP\nall rewards equal → Â = 0\nno gradient",
                                           transform=ax.transAxes, ha="center", va="center", fontsize=13,
                                           weight="bold", color="darkred",
                                           bbox=dict(boxstyle="round", fc="mistyrose", ec="darkred", alpha=0.95)))

    def _layout(self, G):
        """Bar centres and width that spread G bars over the fixed x range."""
        step = G_MAX / G
        return (np.arange(G) + 0.5) * step - 0.5, 0.7 * step

    def draw(self, res: GroupView):
        x, w = self._layout(res.G)
        for i in range(G_MAX):
            on = i < res.G
            for bar in (self.r_bars[i], self.a_bars[i]):
                bar.set_visible(on)
            self.a_labels[i].set_visible(on)
            if not on:
                continue
            r, a = res.rewards[i], res.adv[i]
            for bar in (self.r_bars[i], self.a_bars[i]):
                bar.set_x(x[i] - w / 2)
                bar.set_width(w)
            self.r_bars[i].set_height(r)
            self.a_bars[i].set_height(a)
            self.a_bars[i].set_color(methods.push_colour(a))
            self.a_labels[i].set_position((x[i], a + (0.08 if a >= 0 else -0.08)))
            self.a_labels[i].set_va("bottom" if a >= 0 else "top")
            self.a_labels[i].set_text(f"{a:+.2f}" if a != 0 else "0")
        self.mean_line.set_data([-0.5, G_MAX - 0.5], [res.mean, res.mean])
        self.std_band.set_y(res.mean - res.std)
        self.std_band.set_height(2 * res.std)
        for ax, name in ((self.ax_r, "r"), (self.ax_a, "Â")):   # slot labels are blitted texts, not ticks:
            for i, label in enumerate(self.slot_labels[ax]):     # changing G needs no full redraw
                label.set_visible(i < res.G)
                if i < res.G:
                    label.set_x(x[i])
                    label.set_text(f"{name}{i + 1}")
        self.banner.set_visible(res.degenerate)
        eps = self.controls["eps"].value
        self.denom_text.set_text(f"÷ (std + ε) = {res.std:.4f} + {eps:.1e}\n          = {res.denom:.6g}"
                                 if self.controls["scale"].value == "group" else "no ÷ std (Dr. GRPO): ε unused")
        rs = ", ".join(f"{v:g}" for v in res.rewards)
        As = ", ".join(f"{round(a, 3) + 0.0:+.3f}" for a in res.adv)       # + 0.0: no "-0.000"
        total = res.adv.sum()
        banner = ("<b style='color:darkred'>" + tr("degenerate group: all rewards equal, Â = 0 exactly, no gradient",
                                                   "退化组：奖励全部相等，Â 恰好为 0，没有梯度") + "</b>"
                  if res.degenerate else f"Σ|Â| = {res.sum_abs:.3f} ({tr('update weight', '更新权重')}), ΣÂ = "
                  + (tr("0 (to rounding)", "0（舍入误差内）") if abs(total) < 1e-9 else f"{total:+.3g}"))
        self.readout.value = (f"<tt>r = [{rs}] &nbsp; mean = {res.mean:.3f} &nbsp; std ({self.controls['std'].value}) = "
                              f"{res.std:.4f} &nbsp; denominator = {res.denom:.4g}<br>Â = [{As}]</tt><br>{banner}")
        self._sync_controls(res.G)

    def _sync_controls(self, G):
        binary = self.controls["mode"].value == "binary"
        for i in range(G_MAX):
            tb, sl = self.controls[f"r{i}"], self.controls[f"c{i}"]
            tb.description = f"r{i + 1} = {int(tb.value)}"
            tb.button_style = "success" if tb.value else ""
            tb.layout.display = "" if (binary and i < G) else "none"
            sl.layout.display = "" if (not binary and i < G) else "none"

    def _rows(self):
        c = self.controls
        return [widgets.HBox([c["G"], c["mode"]]), widgets.HBox([c["scale"], c["std"], c["eps"]]),
                widgets.HBox([c[f"r{i}"] for i in range(G_MAX)]), widgets.HBox([c[f"c{i}"] for i in range(G_MAX)])]


# ---------------------------------------------------------------------------------
# Panel 2: difficulty bias — weight vs pass rate, with and without std
# ---------------------------------------------------------------------------------
@dataclass
class DifficultyView:
    curves: bias.DifficultyCurves
    p: float
    relative: bool
    weight_std: float        # E Σ|Â| at the current p, GRPO
    weight_none: float       # E Σ|Â| at the current p, Dr. GRPO
    mc_std: tuple            # (mean, se) Monte-Carlo Σ|Â| at p, GRPO
    mc_none: tuple
    p_degenerate: float
    success_std: float
    success_none: float
    lone_success: float      # Â of 1 success among G (√(G − 1) with population std)


@register("advantages.difficulty")
class DifficultyPanel(ReadoutPanel):
    """Expected update weight per group vs pass rate p, with std (GRPO) and without (Dr. GRPO)."""

    title = "Difficulty bias: which pass rates get the update?"
    figsize = (9.6, 4.6)
    bench_moves = [{"p": p, "G": G} for p, G in [(0.25, 4), (0.1, 4), (0.05, 8), (0.5, 8), (0.9, 16), (0.3, 2)]]

    MC_GROUPS = 2000

    def make_controls(self):
        return {"p": slider("pass rate p", 0.25, 0.0, 1.0, 0.01, fmt=".2f"),
                "G": slider("group size G", 4, 2, 16, 1, integer=True),
                "std": dropdown("std", STD_OPTIONS, "population"),
                "relative": widgets.Checkbox(value=False, description="relative to p = 0.5")}

    def compute(self, p, G, std, relative):
        c = bias.difficulty_curves(G, std=std)
        kw = dict(std=std)
        mc_s = bias.update_weight_mc(p, G, self.MC_GROUPS, seed=0, scale="group", **kw)
        mc_n = bias.update_weight_mc(p, G, self.MC_GROUPS, seed=0, scale="none", **kw)
        return DifficultyView(c, p, relative, bias.expected_update_weight(p, G, **kw),
                              bias.expected_update_weight(p, G, scale="none", **kw), mc_s, mc_n,
                              adv_mod.p_degenerate(p, G), bias.success_advantage(p, G, **kw),
                              bias.success_advantage(p, G, scale="none", **kw),
                              bias.lone_success_advantage(G, **kw))

    def build(self, fig):
        self.ax_w, self.ax_a = fig.subplots(1, 2)
        ax = self.ax_w
        self.w_std = self.dynamic(ax.plot([], [], color=STD_COLOR, lw=2, label="GRPO (÷ std)")[0])
        self.w_none = self.dynamic(ax.plot([], [], color=NONE_COLOR, lw=2, label="Dr. GRPO (no std)")[0])
        self.w_info = self.dynamic(ax.plot([], [], color="0.5", ls="--", lw=1, label="P(informative) = 1 − p^G − (1−p)^G")[0])
        self.w_mark = self.dynamic(ax.plot([], [], "o", color="k", ms=6, zorder=5)[0])
        self.w_mc = self.dynamic(ax.plot([], [], "x", color="k", ms=8, mew=2, label="Monte-Carlo (2000 groups)", zorder=6)[0])
        self.vline_w = self.dynamic(ax.axvline(0.25, color="k", lw=0.8, alpha=0.5))
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.08)
        ax.set_xlabel("pass rate p of the prompt")
        ax.set_ylabel("E Σ|Â_i| / G")
        ax.set_title("update weight per response", fontsize=10)
        # legends sit above the axes: inside, the curves run through them at some p (issue 24)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.1), ncol=2, fontsize=7, frameon=False)
        ax = self.ax_a
        self.s_std = self.dynamic(ax.plot([], [], color=STD_COLOR, lw=2, label="correct, GRPO")[0])
        self.s_none = self.dynamic(ax.plot([], [], color=NONE_COLOR, lw=2, label="correct, Dr. GRPO")[0])
        self.f_std = self.dynamic(ax.plot([], [], color=STD_COLOR, lw=2, ls=":", label="wrong, GRPO")[0])
        self.f_none = self.dynamic(ax.plot([], [], color=NONE_COLOR, lw=2, ls=":", label="wrong, Dr. GRPO")[0])
        self.a_mark = self.dynamic(ax.plot([], [], "o", color="k", ms=6, zorder=5)[0])
        self.lone = self.dynamic(ax.axhline(np.sqrt(3), color=STD_COLOR, lw=0.8, ls="--"))
        self.vline_a = self.dynamic(ax.axvline(0.25, color="k", lw=0.8, alpha=0.5))
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_xlim(0, 1)
        ax.set_ylim(-4.2, 4.2)
        ax.set_xlabel("pass rate p of the prompt")
        ax.set_ylabel("E[Â | group informative]")
        ax.set_title("Â of a correct / a wrong response", fontsize=10)
        self.lone.set_label("lone success √(G − 1)")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.1), ncol=2, fontsize=7, frameon=False)

    def draw(self, r: DifficultyView):
        c, G = r.curves, r.curves.G
        ns = c.weight_std[50] if r.relative else G     # p-grid point 50 is p = 0.5
        nn = c.weight_none[50] if r.relative else G
        self.w_std.set_data(c.p, c.weight_std / ns)
        self.w_none.set_data(c.p, c.weight_none / nn)
        self.w_info.set_data(c.p, c.p_informative)
        self.w_mark.set_data([r.p, r.p], [r.weight_std / ns, r.weight_none / nn])
        self.w_mc.set_data([r.p, r.p], [r.mc_std[0] / ns, r.mc_none[0] / nn])
        self.vline_w.set_xdata([r.p, r.p])
        self.vline_a.set_xdata([r.p, r.p])
        self.s_std.set_data(c.p, c.success_std)
        self.s_none.set_data(c.p, c.success_none)
        self.f_std.set_data(c.p, c.failure_std)
        self.f_none.set_data(c.p, c.failure_none)
        self.a_mark.set_data([r.p, r.p], [r.success_std, r.success_none])
        self.lone.set_ydata([r.lone_success, r.lone_success])
        self.readout.value = (
            f"<tt>p = {r.p:.2f}, G = {G}: P(degenerate) = p^G + (1−p)^G = {r.p_degenerate:.3f}<br>"
            + tr("E Σ|Â| per group", "每组的 E Σ|Â|") + f": GRPO {r.weight_std:.3f} (Monte-Carlo {r.mc_std[0]:.3f} ± "
            f"{r.mc_std[1]:.3f}), Dr. GRPO {r.weight_none:.3f} (Monte-Carlo {r.mc_none[0]:.3f} ± {r.mc_none[1]:.3f})<br>"
            + tr(f"Â of a lone success among {G}: {r.lone_success:.2f}; of a success at this p: ",
                 f"{G} 个中唯一一次成功的 Â：{r.lone_success:.2f}；在这个 p 下一次成功的 Â：")
            + f"GRPO {r.success_std:+.2f}, Dr. GRPO {r.success_none:+.2f}</tt>")


# ---------------------------------------------------------------------------------
# Panel 3: noise amplification with continuous rewards (lecture notes 000 §1.3)
# ---------------------------------------------------------------------------------
@register("advantages.noise")
class NoisePanel(ReadoutPanel):
    """RMS advantage of a group whose rewards differ only by noise of size η, vs η, for the chosen ε."""

    title = "ε prevents 0/0, not noise amplification (lecture notes 000 §1.3)"
    figsize = (9.0, 3.6)
    bench_moves = [{"eps": e, "G": G} for e, G in [(1e-4, 8), (1e-6, 8), (1e-2, 4), (1e-3, 16), (1e-8, 2)]]
    SIGMA = np.logspace(-9, 0, 37)

    def make_controls(self):
        return {"eps": _log_slider("ε", adv_mod.DEFAULT_EPS, -8, 0),
                "G": slider("group size G", 8, 2, 16, 1, integer=True),
                "std": dropdown("std", STD_OPTIONS, "population")}

    def compute(self, eps, G, std):
        kw = dict(eps=eps, std=std, n_groups=200, seed=0)
        return {"grpo": bias.noise_amplification(self.SIGMA, G, scale="group", **kw),
                "none": bias.noise_amplification(self.SIGMA, G, scale="none", **kw)}

    def build(self, fig):
        ax = self.ax = fig.subplots()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(self.SIGMA[0] / 3, self.SIGMA[-1] * 3)   # room for the end ticks' labels inside the figure
        ax.set_ylim(1e-9, 5)
        self.l_std = self.dynamic(ax.plot([], [], color=STD_COLOR, lw=2, label="GRPO: (r − mean)/(std + ε)")[0])
        self.l_approx = self.dynamic(ax.plot([], [], color=STD_COLOR, lw=1, ls=":", label="E[σ_R] / (E[σ_R] + ε)")[0])
        self.l_none = self.dynamic(ax.plot([], [], color=NONE_COLOR, lw=2, label="Dr. GRPO: r − mean")[0])
        self.signal = self.dynamic(ax.axhline(1, color=STD_COLOR, ls="--", lw=1, label="a real 1-of-G group (GRPO)"))
        self.cross = self.dynamic(ax.axvline(1e-4, color="k", lw=0.8, alpha=0.6, label="η where E σ_R = ε"))
        ax.set_xlabel("reward noise η (all responses equally good)")
        ax.set_ylabel("RMS advantage in the group")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)

    def draw(self, r):
        g, n = r["grpo"], r["none"]
        self.l_std.set_data(g.sigma, np.maximum(g.rms_adv, 1e-12))
        self.l_approx.set_data(g.sigma, np.maximum(g.rms_approx, 1e-12))
        self.l_none.set_data(n.sigma, np.maximum(n.rms_adv, 1e-12))
        self.signal.set_ydata([g.signal_rms, g.signal_rms])
        self.cross.set_xdata([g.crossover, g.crossover])
        i = int(np.searchsorted(g.sigma, 100 * g.crossover))
        at = f"at η = {g.sigma[i]:.0e}: GRPO RMS Â = {g.rms_adv[i]:.2f}, Dr. GRPO {n.rms_adv[i]:.1e}" if i < g.sigma.size else ""
        self.readout.value = (f"<tt>ε = {self.controls['eps'].value:.0e}: the typical group std σ_R reaches ε at "
                              f"noise η ≈ {g.crossover:.1e}; {at}</tt>")


# ---------------------------------------------------------------------------------
# Panel 4: a batch of prompts and the four remedies (lecture notes 004 §三)
# ---------------------------------------------------------------------------------
@register("advantages.remedies")
class RemediesPanel(ReadoutPanel):
    """K prompts with a difficulty mix: degenerate fraction and update weight under each remedy."""

    title = "Degenerate groups in a batch, and the four remedies (lecture notes 004, L9 p.41)"
    figsize = (9.6, 4.8)
    bench_moves = [{"difficulty": d, "G": G} for d, G in [(-1.5, 8), (-3.0, 8), (0.0, 4), (2.0, 16), (-1.0, 2)]] + \
                  [{"temperature": 3.0}, {"sft_shift": 5.0}, {"seed": 3}]
    # No slider for the amount of partial credit: with ÷σ an all-wrong group's Â does not depend on it
    # (eq. (1) is scale invariant) and the bars moved by < 0.01 over 0.1–0.9 (notebook 03 §8).
    PARTIAL = bias.RemedyConfig().partial

    def make_controls(self):
        return {"K": slider("prompts K", 128, 16, 256, 16, integer=True),
                "G": slider("group size G", 8, 2, 16, 1, integer=True),
                "difficulty": slider("mean logit of p", -1.5, -4.0, 4.0, 0.1, fmt=".1f"),
                "spread": slider("spread of logits", 2.5, 0.0, 4.0, 0.1, fmt=".1f"),
                "temperature": slider("explore: T", 2.0, 1.0, 5.0, 0.1, fmt=".1f"),
                "sft_shift": slider("demos: SFT logit lift", 3.0, 0.0, 6.0, 0.25, fmt=".2f"),
                "scale": dropdown("scale", SCALE_OPTIONS, "group"),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, K, G, difficulty, spread, temperature, sft_shift, scale, seed):
        mix = bias.PromptMix(difficulty, spread)
        cfg = bias.RemedyConfig(temperature=temperature, sft_shift=sft_shift, partial=self.PARTIAL)
        out = bias.simulate_remedies(K, G, mix, cfg, scale=scale, seed=seed)
        f = bias.informative_fraction(mix, G)
        return {"outcomes": out, "analytic_informative": f, "analytic_cost": 1.0 / max(f, 1e-12)}

    def build(self, fig):
        self.ax_p, self.ax_f, self.ax_w = fig.subplots(1, 3, width_ratios=[0.8, 1.2, 1.0])
        ax = self.ax_p
        self.p_lines = {name: self.dynamic(ax.plot([], [], lw=1.8, label=bias.REMEDY_LABELS[name], color=col)[0])
                        for name, col in (("none", "0.3"), ("explore", "tab:purple"), ("demos", "tab:brown"))}
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("prompts, sorted (fraction of batch)")
        ax.set_ylabel("pass rate p")
        ax.set_title("difficulty mix", fontsize=10)
        y = np.arange(len(bias.REMEDIES))[::-1]
        self.rows = dict(zip(bias.REMEDIES, y))
        ax = self.ax_f
        self.f_bars = {}
        for state, col in STATE_COLORS.items():
            self.f_bars[state] = self.dynamic(*ax.barh(y, np.zeros(len(y)), color=col, height=0.6,
                                                        label=state.replace("_", " ")))
        self.f_text = self.dynamic(*[ax.text(0.5, yy, "", ha="center", va="center", fontsize=8, color="w",
                                             weight="bold") for yy in y])
        ax.set_yticks(y, [bias.REMEDY_LABELS[n] for n in bias.REMEDIES], fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_xlabel("fraction of the K groups")
        ax.set_title("all wrong / informative / all correct", fontsize=10)
        ax = self.ax_w
        self.w_batch = self.dynamic(*ax.barh(y + 0.17, np.zeros(len(y)), height=0.32, color="tab:blue",
                                             label="per response in the batch"))
        self.w_gen = self.dynamic(*ax.barh(y - 0.17, np.zeros(len(y)), height=0.32, color="tab:cyan",
                                           label="per response generated"))
        self.w_text = self.dynamic(*[ax.text(0, yy + 0.17, "", ha="left", va="center", fontsize=8) for yy in y])
        ax.set_yticks(y, [""] * len(y))
        ax.set_xlim(0, 1.3)
        ax.set_xlabel("update weight Σ|Â| / responses")
        ax.set_title("total update weight", fontsize=10)
        # one legend for the three axes, under them: inside an axes it covered the curves (issue 24)
        handles = [self.p_lines[n] for n in self.p_lines] + [self.f_bars[s][0] for s in STATE_COLORS] + \
                  [self.w_batch[0], self.w_gen[0]]
        labels = [bias.REMEDY_LABELS[n] for n in self.p_lines] + [s.replace("_", " ") for s in STATE_COLORS] + \
                 ["update weight per response in the batch", "… per response generated"]
        fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=7, frameon=False)

    def draw(self, r):
        out = r["outcomes"]
        for name, line in self.p_lines.items():
            p = np.sort(out[name].p)
            line.set_data((np.arange(p.size) + 0.5) / p.size, p)
        for i, name in enumerate(bias.REMEDIES):
            o = out[name]
            left = 0.0
            for state in STATE_COLORS:
                frac = o.informative if state == "informative" else getattr(o, state)
                bar = self.f_bars[state][i]
                bar.set_x(left)
                bar.set_width(frac)
                left += frac
            self.f_text[i].set_position((o.all_wrong + o.informative / 2, self.rows[name]))
            self.f_text[i].set_text(f"{o.informative:.0%}" if o.informative >= 0.12 else "")
            self.w_batch[i].set_width(min(o.weight_per_response, 1.15))
            self.w_gen[i].set_width(min(o.weight / o.responses, 1.15))
            self.w_text[i].set_position((min(o.weight_per_response, 1.15) + 0.02, self.rows[name] + 0.17))
            self.w_text[i].set_text(f"×{o.cost:.2f} cost" if name == "dynamic" else "")
        rows = "".join(f"<tr><td>{o.label}</td><td>{o.informative:.0%}</td><td>{o.all_wrong:.0%}</td>"
                       f"<td>{o.all_correct:.0%}</td><td>{o.weight:.1f}</td><td>{o.responses}</td></tr>"
                       for o in out.values())
        head = "".join(f"<th>{h}</th>" for h in (tr("remedy", "补救"), tr("informative", "有信息量"),
                                                   tr("all wrong", "全错"), tr("all correct", "全对"), "Σ|Â|",
                                                   tr("responses", "回答数")))
        self.readout.value = (f"<table><tr>{head}</tr>{rows}</table>"
                              + tr(f"analytic P(informative) of the mix: {r['analytic_informative']:.3f}; "
                                   f"dynamic sampling needs ≈ {r['analytic_cost']:.2f}× the responses on average",
                                   f"这批提示的解析 P(有信息量)：{r['analytic_informative']:.3f}；"
                                   f"动态采样平均需要约 {r['analytic_cost']:.2f} 倍的回答数"))


# ---------------------------------------------------------------------------------
# Figures for slides (`make figures`)
# ---------------------------------------------------------------------------------
def push_by_k_figure(G: int = 10, *, figsize=(7.6, 3.4)):
    """Bars: the push Σ_i |Â_i| a group with k of G correct hands out, relative to the medium group,
    with ÷σ (GRPO) and without (Dr. GRPO). The difficulty bias is the gap at the ends (k = 1, G − 1)."""
    import matplotlib.pyplot as plt

    k = np.arange(1, G)
    w_std, w_none = (bias.weight_by_k(G, scale=sc, eps=0.0)[1:G] for sc in ("group", "none"))
    w_std, w_none = w_std / w_std.max(), w_none / w_none.max()
    with plt.ioff():
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    ax.bar(k - 0.2, w_std, 0.4, color=STD_COLOR, label=tr("GRPO (÷ group std)", "GRPO（÷ 组标准差）"))
    ax.bar(k + 0.2, w_none, 0.4, color=NONE_COLOR, label=tr("Dr. GRPO (no std)", "Dr. GRPO（不除标准差）"))
    for x in (1, G - 1):
        ax.annotate(f"×{w_std[x - 1] / w_none[x - 1]:.2f}", (x, w_std[x - 1]), xytext=(0, 4),
                    textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(k)
    ax.set_xlabel(tr(f"k = number of correct responses in a group of G = {G}", f"k = G = {G} 条回答中正确的条数"))
    ax.set_ylabel(tr("push Σ|Â_i|, relative to the medium group", "推力 Σ|Â_i|，相对中等难度的组"))
    ax.set_ylim(0, 1.35)
    ax.set_title(tr("Difficulty bias: ÷σ keeps more push on nearly-all-wrong and nearly-all-right groups",
                    "难度偏差：÷σ 给几乎全错、几乎全对的组保留更多推力"), fontsize=9)
    ax.legend(loc="upper center", ncol=2, fontsize=8, frameon=False)      # above the bars, not over them
    return fig


# name -> builder returning a Panel (or a Figure); collected by grpo_lab.figures
FIGURES = {"03_group_1000": lambda: GroupEditorPanel().set_rewards([1, 0, 0, 0]),
           "03_group_degenerate": lambda: GroupEditorPanel().set_rewards([1, 1, 1, 1]),
           "03_group_sample_std": lambda: GroupEditorPanel(std="sample").set_rewards([1, 1, 0, 0]),
           "03_difficulty": lambda: DifficultyPanel(p=0.1, G=8),
           "03_difficulty_relative": lambda: DifficultyPanel(p=0.1, G=8, relative=True),
           "03_push_by_k": push_by_k_figure,
           "03_noise": lambda: NoisePanel(eps=1e-4, G=8), "03_remedies": lambda: RemediesPanel()}

