"""Panels 4 and 5 of notebook 02: the policy-gradient estimators (total return vs reward-to-go,
three baselines) and REINFORCE training of θ (lecture notes 004 §一, L9 p.27–35).

Split from :mod:`grpo_lab.viz.guess_number` (panels 1–3: values, tree, Monte-Carlo), whose
colours and bar helpers these panels share.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.ticker import MaxNLocator

from grpo_lab import guess_number as gn
from grpo_lab import methods
from grpo_lab.viz import register
from grpo_lab.viz.guess_number import BASELINE_COLORS, BASELINE_LABELS, N_MAX, _rects
from grpo_lab.viz.panel import Panel, dropdown, slider

# ---------------------------------------------------------------------------------
# Panel 4: total return vs reward-to-go, and the baselines: bias ≈ 0, variance differs
# ---------------------------------------------------------------------------------
@lru_cache(maxsize=64)
def gradient_ylim(N: int, tries: int) -> tuple[float, float]:
    """Fixed y-range for ∂J/∂θ over the panel's θ and cost ranges (finite differences of exact J)."""
    theta = np.linspace(-2.0, 3.0, 51)
    h = 1e-4
    g = []
    for cost in (0.0, 0.3):
        up = gn.success_curve(N, tries, theta + h, cost=cost)
        down = gn.success_curve(N, tries, theta - h, cost=cost)
        g.append((up - down) / (2 * h))
    g = np.concatenate(g)
    top = 1.35 * max(float(g.max()), 1e-3)
    return (min(-0.25 * top, 1.35 * float(g.min())), top)


@register("guess.rtg")
class VariancePanel(Panel):
    """Six policy-gradient estimators on the same episodes: mean ± 2 SE vs exact, and variance."""

    title = "Policy-gradient estimators: every baseline and return is unbiased; variances differ"
    figsize = (9.6, 4.0)
    bench_moves = [{"cost": c, "theta": t} for c, t in [(0.1, 0.5), (0.0, 0.5), (0.2, 0.0), (0.1, 1.0), (0.05, -0.5), (0.3, 0.5)]]

    def make_controls(self):
        return {"N": slider("N", 20, 3, 50, 1, integer=True),
                "tries": slider("tries", 5, 1, 8, 1, integer=True),
                "theta": slider("θ (softmax)", 0.5, -2.0, 3.0, 0.1, fmt=".1f"),
                "cost": slider("cost per guess", 0.1, 0.0, 0.3, 0.01, fmt=".2f"),
                "constant": slider("constant b", 0.5, -0.5, 1.0, 0.05, fmt=".2f"),
                "n": slider("episodes", 2000, 100, 5000, 100, integer=True),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def _shape(self):
        return self.controls["N"].value, self.controls["tries"].value

    def compute(self, N, tries, theta, cost, constant, n, seed):
        return gn.estimator_stats(N, tries, theta, n, cost=cost, constant=constant, seed=seed)

    def build(self, fig):
        self.ax_mean, self.ax_var = fig.subplots(1, 2)
        # one pair per baseline: total return R(τ) (left), reward-to-go R_t (right)
        self.x = np.array([gn.BASELINES.index(b) + (0.0 if ret == "total" else 0.4) for ret, b in gn.PG_ESTIMATORS])
        colors = [BASELINE_COLORS[b] for _, b in gn.PG_ESTIMATORS]
        ax = self.ax_mean
        self.exact = self.dynamic(ax.axhline(0, color="k", lw=1.2, label="exact ∂J/∂θ (by DP)"))
        self.err_bars = self.dynamic(ax.add_collection(LineCollection([], colors=colors, lw=2)))
        self.dots = self.dynamic(ax.scatter(self.x, np.zeros(self.x.size), c=colors, s=25, zorder=3,
                                            label="mean of ĝ ± 2 SE"))
        ax.set_xlim(-0.4, 2.8)
        ax.set_ylabel("policy gradient ∂J/∂θ")
        ax.set_title("mean over the episodes vs the exact gradient", fontsize=9)
        ax.legend(loc="lower right", fontsize=8)
        self.info = self.dynamic(ax.text(0.02, 0.97, "", transform=ax.transAxes, va="top", fontsize=8,
                                         family="monospace"))
        ax = self.ax_var
        self.v_bars = self.dynamic(ax.add_collection(PolyCollection([], facecolors=colors)))
        ax.axhline(1, color="k", lw=0.8, ls=":")
        ax.set_ylim(0, 1.6)
        ax.set_xlim(-0.4, 2.8)
        ax.set_ylabel("Var[ĝ] / Var[plain REINFORCE]")
        ax.set_title("variance relative to total return, no baseline", fontsize=9)
        self.v_text = [self.dynamic(ax.text(x, 0, "", ha="center", va="bottom", fontsize=7.5)) for x in self.x]
        for a in (self.ax_mean, self.ax_var):
            a.set_xticks([0.2, 1.2, 2.2], [BASELINE_LABELS[b] for b in gn.BASELINES], fontsize=8)
        ax.text(0.02, 0.97, "left bar of each pair: total return R(τ)\nright bar: reward-to-go R_t",
                transform=ax.transAxes, va="top", fontsize=8)
        self._ylim = None

    def draw(self, r: gn.EstimatorStats):
        lo, hi = r.mean - 2 * r.se, r.mean + 2 * r.se
        self.exact.set_ydata([r.exact, r.exact])
        self.err_bars.set_segments(np.stack([np.stack([self.x, lo], 1), np.stack([self.x, hi], 1)], 1))
        self.dots.set_offsets(np.stack([self.x, r.mean], 1))
        ylim = gradient_ylim(*self._shape())
        if ylim != self._ylim:             # depends on N and tries only: few full redraws
            self._ylim = ylim
            self.ax_mean.set_ylim(*ylim)
        ratio = r.var / r.var[0] if r.var[0] > 0 else np.ones_like(r.var)
        self.v_bars.set_verts(_rects(self.x, np.minimum(ratio, 1.55), 0.36))
        for t, x, q in zip(self.v_text, self.x, ratio):
            t.set_position((x, min(q, 1.55) + 0.01))
            t.set_text(f"{q:.2f}")
        z = np.abs(r.bias) / np.maximum(r.se, 1e-300)
        self.info.set_text(f"exact ∂J/∂θ = {r.exact:+.4f}, n = {r.n}\nlargest |bias|/SE = {z.max():.1f}")


# ---------------------------------------------------------------------------------
# Panel 5: REINFORCE training of θ from uniform toward bisection
# ---------------------------------------------------------------------------------
MAP_TRIES = 3   # the advantage map shows states with three tries left (with 2, Q is 3/m for any policy)


@lru_cache(maxsize=256)
def _train_runs(cfg: gn.TrainConfig, returns: str) -> dict:
    """:func:`gn.train_estimators` for every baseline, memoised on the frozen config (treat as read-only)."""
    return gn.train_estimators(cfg, [(returns, b) for b in gn.BASELINES])


@register("guess.train")
class TrainPanel(Panel):
    """Mean and spread of J(θ_t) over seeds for each baseline; A map of the learned policy."""

    title = "REINFORCE on θ: uniform (θ = 0) toward bisection; the baseline cuts the spread"
    figsize = (9.6, 4.0)
    bench_moves = [{"lr": lr, "batch": b} for lr, b in [(1.0, 4), (0.5, 4), (1.5, 2), (1.0, 8), (0.8, 3), (1.2, 4)]]

    def make_controls(self):
        return {"N": slider("N", 20, 4, 40, 1, integer=True),
                "tries": slider("tries", 5, 2, 7, 1, integer=True),
                "lr": slider("learning rate", 1.0, 0.1, 2.0, 0.1, fmt=".1f"),
                "batch": slider("episodes per step", 4, 1, 16, 1, integer=True),
                "steps": slider("steps", 40, 10, 100, 10, integer=True),
                "cost": slider("cost per guess", 0.0, 0.0, 0.2, 0.05, fmt=".2f"),
                "returns": dropdown("returns", gn.RETURNS, "to-go"),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    # at cost 0 every reward arrives at the end, so the total return equals the reward-to-go
    relevance = {"returns": lambda v: v["cost"] > 0}

    def compute(self, N, tries, lr, batch, steps, cost, returns, seed):
        cfg = gn.TrainConfig(N=N, tries=tries, lr=lr, batch=batch, steps=steps, seeds=16, seed=seed, cost=cost)
        runs = _train_runs(cfg, returns)
        best = gn.success_probability(N, tries, "bisection")
        theta_learned = float(runs[(returns, "value")].theta[:, -1].mean())
        amap = gn.advantage_map("softmax", N, MAP_TRIES, theta=theta_learned)
        return {"runs": {b: runs[(returns, b)] for b in gn.BASELINES}, "best": best,
                "theta": theta_learned, "map": amap, "N": N, "steps": steps}

    def build(self, fig):
        self.ax_j, self.ax_sd, self.ax_map = fig.subplots(1, 3, width_ratios=[1.2, 1, 1])
        self.mean, self.sd = {}, {}
        for b, c in BASELINE_COLORS.items():
            self.mean[b] = self.dynamic(self.ax_j.plot([], [], color=c, lw=1.6, label=BASELINE_LABELS[b])[0])
            self.sd[b] = self.dynamic(self.ax_sd.plot([], [], color=c, lw=1.6)[0])
        self.best = self.dynamic(self.ax_j.axhline(1, color="k", ls="--", lw=1, label="bisection"))
        self.ax_j.set_ylim(0, 1.02)
        self.ax_j.set_xlabel("step")
        self.ax_j.set_ylabel("exact success prob. J(θ_t), mean of 16 seeds")
        self.ax_j.legend(loc="lower right", fontsize=7.5)
        self.ax_sd.set_ylim(0, 0.35)
        self.ax_sd.set_xlabel("step")
        self.ax_sd.set_ylabel("std of J(θ_t) across seeds")
        ax = self.ax_map
        self.image = self.dynamic(ax.imshow(np.zeros((N_MAX, N_MAX)), cmap=methods.PUSH_CMAP, vmin=-0.3, vmax=0.3,
                                            origin="lower", extent=(-0.5, 39.5, 0.5, 40.5), aspect="auto",
                                            interpolation="nearest"))
        fig.colorbar(self.image, ax=ax, shrink=0.8, label="A(h, a)")
        ax.set_xlabel("rank of the guess among the candidates")
        ax.set_ylabel("candidates m")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"A(h, a) under the learned policy,\nstates with m candidates and {MAP_TRIES} tries left", fontsize=9)
        self.map_theta = self.dynamic(ax.text(0.97, 0.04, "", transform=ax.transAxes, ha="right", fontsize=8.5))
        self._lims = None

    def draw(self, r):
        x = np.arange(r["steps"] + 1)
        for b, run in r["runs"].items():
            self.mean[b].set_data(x, run.J.mean(0))
            self.sd[b].set_data(x, run.J.std(0))
        self.best.set_ydata([r["best"], r["best"]])
        N = r["N"]
        self.image.set_data(r["map"])
        lims = (r["steps"], N)
        if lims != self._lims:
            self._lims = lims
            for ax in (self.ax_j, self.ax_sd):
                ax.set_xlim(0, r["steps"])
            self.image.set_extent((-0.5, N - 0.5, 0.5, N + 0.5))
            self.ax_map.set_xlim(-0.5, N - 0.5)
            self.ax_map.set_ylim(0.5, N + 0.5)
        self.map_theta.set_text(f"learned θ = {r['theta']:.2f}")


def fig_rtg():
    return VariancePanel(N=20, tries=5, theta=0.5, cost=0.1, n=5000, seed=0)


def fig_train():
    return TrainPanel(N=20, tries=5, lr=1.0, batch=4, steps=60, seed=0)


FIGURES = {"02_guess_rtg": fig_rtg, "02_guess_train": fig_train}
