"""Panels and figures for notebook 01: baselines on the two-armed bandit (lecture notes 004 §二)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from grpo_lab import bandit, methods
from grpo_lab.viz import register
from grpo_lab.viz.panel import Panel, ReadoutPanel, slider

LADDER_COLORS = {**{k: methods.OTHER[k] for k in ("none", "constant", "running", "value", "optimal")},
                 "group": methods.colour("grpo"), "loo": methods.colour("rloo")}


# ---------------------------------------------------------------------------------
# Panel 1: the two possible gradient values, their mean and variance, exactly
# ---------------------------------------------------------------------------------
@dataclass
class GradientView:
    p: float
    g: np.ndarray          # (2,) estimate for arm A, arm B
    prob: np.ndarray       # (2,) π(A), π(B)
    mean: float
    var: float
    b_star: float
    b_grid: np.ndarray     # (K,) baselines for the variance curve
    var_grid: np.ndarray   # (K,) variance at each baseline


@register("bandit.gradient")
class GradientPanel(ReadoutPanel):
    """θ and b sliders; bars of ĝ(A), ĝ(B) (width ∝ probability); Var(b) with b* marked."""

    title = "One-sample REINFORCE estimate: same mean, different spread"
    bench_moves = [{"theta": t, "baseline": b} for t, b in [(-1.1, 0.0), (-1.1, 0.5), (0.3, 0.2), (1.2, 0.9)]]

    def make_controls(self):
        return {"theta": slider("θ", bandit.THETA0, -3.0, 3.0, 0.05, fmt=".2f"),
                "baseline": slider("baseline b", 0.0, -1.0, 2.0, 0.025, fmt=".3f")}

    def compute(self, theta, baseline):
        p = bandit.prob_a(theta)
        g = np.array([bandit.grad_estimate(theta, "A", 1.0, baseline),
                      bandit.grad_estimate(theta, "B", 0.0, baseline)])
        mean, var = bandit.estimator_stats(theta, baseline)
        b_grid = np.linspace(-1.0, 2.0, 121)
        var_grid = np.array([bandit.estimator_stats(theta, b)[1] for b in b_grid])
        return GradientView(p, g, np.array([p, 1 - p]), mean, var,
                            bandit.optimal_baseline(theta), b_grid, var_grid)

    def build(self, fig):
        self.ax_bar, self.ax_var = fig.subplots(1, 2)
        ax = self.ax_bar
        self.bars = ax.bar([0, 1], [0, 0], color=["tab:blue", "tab:blue"], width=0.6)
        self.dynamic(*self.bars)
        self.mean_line = self.dynamic(ax.axhline(0, color="k", lw=2, label="mean = p(1−p)"))
        self.band = self.dynamic(ax.axhspan(0, 0, color="k", alpha=0.12, label="mean ± std"))
        # value labels sit in a fixed strip at the top, clear of the bars, the mean line and the band
        self.bar_text = self.dynamic(*[ax.text(i, 1.17, "", ha="center", va="top", fontsize=9) for i in range(2)])
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_xticks([0, 1], ["sample A (R=1)", "sample B (R=0)"])
        ax.set_ylim(-1.2, 1.2)
        ax.set_ylabel("gradient estimate (R − b)·∂log π")
        ax.legend(loc="lower left", fontsize=8)
        ax = self.ax_var
        self.var_curve = self.dynamic(ax.plot([], [], color="tab:blue")[0])
        self.var_marker = self.dynamic(ax.plot([], [], "o", color="tab:blue", label="current b")[0])
        self.bstar_line = self.dynamic(ax.axvline(0, color="tab:green", ls="--", label="b* = 1 − p"))
        ax.set_xlim(-1.0, 2.0)
        ax.set_ylim(0, 0.6)
        ax.set_xlabel("baseline b")
        ax.set_ylabel("Var[ĝ]")
        ax.legend(loc="upper right", fontsize=8)

    def draw(self, r: GradientView):
        for bar, text, g, pr in zip(self.bars, self.bar_text, r.g, r.prob):
            bar.set_height(g)
            bar.set_color(methods.push_colour(g))          # blue: this sample pushes θ (and p) up
            bar.set_alpha(0.25 + 0.75 * pr)
            text.set_text(f"{g + 0.0:+.3f}\n(prob {pr:.2f})")          # + 0.0: no "-0.000"
        self.mean_line.set_ydata([r.mean, r.mean])
        sd = np.sqrt(r.var)
        self.band.set_y(r.mean - sd)
        self.band.set_height(2 * sd)
        self.readout.value = (f"<code>p = σ(θ) = {r.p:.3f} &nbsp; mean = {r.mean:.3f} &nbsp; var = {r.var:.4f}"
                              f" &nbsp; b* = {r.b_star:.3f}</code>")
        self.var_curve.set_data(r.b_grid, r.var_grid)
        self.var_marker.set_data([self.controls["baseline"].value], [r.var])
        self.bstar_line.set_xdata([r.b_star, r.b_star])


# ---------------------------------------------------------------------------------
# Panel 2: running means of sampled estimators converge to p(1 − p)
# ---------------------------------------------------------------------------------
RUNNING_BASELINES = {"no baseline": lambda th: 0.0, "b = 0.5": lambda th: 0.5,
                     "b* = 1 − p": bandit.optimal_baseline}


@register("bandit.running_mean")
class RunningMeanPanel(Panel):
    """Running means of three estimators over N samples (same samples for all)."""

    title = "Running mean of the estimate: every baseline converges to p(1 − p)"
    bench_moves = [{"n": n, "seed": s} for n, s in [(200, 0), (1000, 1), (2000, 2), (500, 3)]]

    def make_controls(self):
        return {"theta": slider("θ", bandit.THETA0, -3.0, 3.0, 0.05, fmt=".2f"),
                "n": slider("samples N", 1000, 10, 5000, 10, integer=True),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, theta, n, seed):
        curves = {name: bandit.running_mean(bandit.sample_estimates(theta, n, b(theta), seed=seed))
                  for name, b in RUNNING_BASELINES.items()}
        p = bandit.prob_a(theta)
        return {"curves": curves, "target": p * (1 - p), "n": n}

    def build(self, fig):
        ax = self.ax = fig.subplots()
        # b* has zero variance: its running mean *is* p(1 − p) from n = 1, so it is drawn wide and on top,
        # and the target as a thin dotted line that stays visible through it
        self.lines = {name: self.dynamic(ax.plot([], [], lw=lw, label=label, color=c, alpha=a, zorder=z)[0])
                      for name, label, c, lw, a, z in (
                          ("no baseline", "no baseline", "tab:gray", 1.5, 1.0, 2),
                          ("b = 0.5", "b = 0.5", "tab:blue", 1.5, 1.0, 2),
                          ("b* = 1 − p", "b* = 1 − p (zero variance: on the target at every n)", "tab:green", 5, 0.45, 3))}
        self.target = self.dynamic(ax.axhline(0, color="k", ls=":", lw=1.2, label="p(1 − p)", zorder=4))
        ax.set_xscale("log")
        ax.set_xlim(1, self.controls["n"].value)
        ax.set_xlabel("samples n")
        ax.set_ylabel("running mean of ĝ")
        ax.set_ylim(-0.1, 0.6)
        ax.legend(loc="upper right", fontsize=8)

    def draw(self, r):
        x = np.arange(1, r["n"] + 1)
        self.ax.set_xlim(1, r["n"])                  # the x-axis ends where the data end
        for name, line in self.lines.items():
            line.set_data(x, r["curves"][name])
        self.target.set_ydata([r["target"], r["target"]])


# ---------------------------------------------------------------------------------
# Panel 3: training curves of p for every rung of the ladder
# ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _ladder_curves(cfg: bandit.TrainConfig) -> dict:
    """Mean and spread of p over seeds per rung; memoised on the frozen config (a revisited slider value is free)."""
    return {rung: (p.mean(0), p.std(0)) for rung, p in bandit.train_ladder(cfg).items()}


@register("bandit.ladder")
class LadderPanel(Panel):
    """SGD on θ with each baseline, as small multiples: mean p over seeds (left) and its spread across seeds
    (right); top row the fixed or learned baselines, bottom row the group baselines, with no baseline
    (dashed grey) in both rows as the reference."""

    title = "Training p = σ(θ) with each rung of the baseline ladder (same samples for every rung)"
    figsize = (9.6, 6.0)
    bench_moves = [{"lr": lr, "G": G} for lr, G in [(0.5, 4), (1.0, 8), (0.3, 2), (0.8, 6)]]
    ROWS = (("baselines without a group", ("none", "constant", "running", "value", "optimal")),
            ("group baselines (G samples per step)", ("none", "group", "loo")))
    STYLE = {"none": dict(ls="--", lw=1.4), "constant": dict(ls="-", lw=1.6), "running": dict(ls="-.", lw=1.6),
             "value": dict(ls=":", lw=2.0), "optimal": dict(ls="-", lw=3.0, alpha=0.6),
             "group": dict(ls="-", lw=1.8), "loo": dict(ls="--", lw=1.8)}
    LABEL = {"none": "no baseline", "constant": "constant 0.5", "running": "running mean", "value": "learned value",
             "optimal": "optimal b* = 1 − p", "group": "group mean (GRPO)", "loo": "leave-one-out (RLOO)"}

    def make_controls(self):
        return {"lr": slider("learning rate", 0.5, 0.05, 2.0, 0.05, fmt=".2f"),
                "G": slider("samples per step G", 2, 2, 16, 1, integer=True),
                "steps": slider("steps", 60, 10, 200, 10, integer=True),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, lr, G, steps, seed):
        return _ladder_curves(bandit.TrainConfig(lr=lr, G=G, steps=steps, seeds=32, seed=seed))

    def build(self, fig):
        axes = fig.subplots(2, 2, sharex=True)
        self.axes = axes
        self.ax, self.ax_sd = axes[0]
        self.mean, self.sd = {}, {}
        self.lines = []                                   # (rung, mean line, spread line) for every drawn pair
        for (row_title, rungs), (ax_m, ax_s) in zip(self.ROWS, axes):
            for rung in rungs:
                kw = dict(color=LADDER_COLORS[rung], label=self.LABEL[rung], **self.STYLE[rung])
                lm = self.dynamic(ax_m.plot([], [], **kw)[0])
                ls = self.dynamic(ax_s.plot([], [], **kw)[0])
                self.lines.append((rung, lm, ls))
                self.mean.setdefault(rung, lm)
                self.sd.setdefault(rung, ls)
            ax_m.set_ylim(0, 1)
            ax_m.set_ylabel("mean p = π(A), 32 seeds")
            ax_m.set_title(row_title, fontsize=9, loc="left")
            ax_m.legend(loc="lower right", fontsize=7.5)
            ax_s.set_ylim(0, 0.3)
            ax_s.set_ylabel("std of p across seeds")
        for ax in axes[1]:
            ax.set_xlabel("SGD step")

    def draw(self, r):
        for rung, lm, ls in self.lines:
            mean, sd = r[rung]
            x = np.arange(mean.size)
            lm.set_data(x, mean)
            ls.set_data(x, sd)
        for ax in self.axes.flat:
            ax.set_xlim(0, mean.size - 1)


# ---------------------------------------------------------------------------------
# Figures for slides (`make figures`)
# ---------------------------------------------------------------------------------
def fig_gradient():
    return GradientPanel(theta=bandit.THETA0, baseline=0.5)


def fig_running_mean():
    return RunningMeanPanel(theta=bandit.THETA0, n=2000, seed=0)


def fig_ladder():
    return LadderPanel(lr=0.5, G=2, steps=60, seed=0)


# name -> builder returning a Panel (or a Figure); collected by grpo_lab.figures
FIGURES = {"01_bandit_gradient": fig_gradient, "01_bandit_running_mean": fig_running_mean,
           "01_bandit_ladder": fig_ladder}
