"""Panels and figures for notebooks 04 (the clipped term, lecture notes 000 §2) and 04b (the KL term, §3, eq. (5)).

Every number drawn here comes from :mod:`grpo_lab.losses` (the same functions the LM
trainer calls), :mod:`grpo_lab.inner_steps` (μ inner steps of a tabular toy policy) and
:mod:`grpo_lab.kl_toy` (KL estimators on a categorical toy).
"""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib.colors as mcolors
import numpy as np

from grpo_lab import inner_steps, kl_toy, losses, methods
from grpo_lab.viz import register
from grpo_lab.viz.panel import Panel, dropdown, slider

KL_COLORS = {"k1": "tab:blue", "k2": "tab:orange", "k3": "tab:green"}
RHO_MAX = 5.0


def _dual(c: float):
    """Slider value -> dual_clip argument (values ≤ 1 switch it off)."""
    return None if c <= 1.0 else float(c)


def _set_span(rect, x0: float, x1: float) -> None:
    """Move an axvspan rectangle to [x0, x1] (clipped to the plotted ρ range)."""
    x0, x1 = max(0.0, x0), min(RHO_MAX, x1)
    rect.set_x(x0)
    rect.set_width(max(0.0, x1 - x0))


# ---------------------------------------------------------------------------------
# Panel 1: the clipped term and its gradient vs ρ, for Â > 0 and Â < 0
# ---------------------------------------------------------------------------------
@dataclass
class ClipView:
    rho: np.ndarray                 # (N,)
    obj: dict                       # sign -> (N,) ℓ(ρ)
    grad: dict                      # sign -> (N,) ∂ℓ/∂log π
    zero: dict                      # sign -> list of (lo, hi) zero-gradient intervals


@register("loss.clip")
class ClipPanel(Panel):
    """ℓ(ρ) = min(ρÂ, clip(ρ)Â) (eq. 3) and ∂ℓ/∂log π for Â = +1 and Â = −1; grey = zero gradient."""

    title = "The clipped term of eq. (3): objective (top) and gradient ∂ℓ/∂log π (bottom)"
    figsize = (9.6, 5.6)
    bench_moves = [{"eps_low": a, "eps_high": b, "dual_clip": c}
                   for a, b, c in [(0.2, 0.2, 1.0), (0.2, 0.28, 3.0), (0.1, 0.4, 2.0), (0.3, 0.3, 4.0)]]

    def make_controls(self):
        return {"eps_low": slider("ε_low", 0.2, 0.0, 0.9, 0.01, fmt=".2f"),
                "eps_high": slider("ε_high (clip-higher)", 0.2, 0.0, 1.0, 0.01, fmt=".2f"),
                "dual_clip": slider("dual clip c (1 = off)", 1.0, 1.0, 5.0, 0.1, fmt=".1f")}

    def compute(self, eps_low, eps_high, dual_clip):
        rho = np.linspace(0.01, RHO_MAX, 500)
        obj, grad, zero = {}, {}, {}
        for sign in (+1, -1):
            kw = dict(eps_low=eps_low, eps_high=eps_high, dual_clip=_dual(dual_clip))
            obj[sign], grad[sign] = losses.surrogate_curve(rho, float(sign), **kw)
            zero[sign] = losses.zero_grad_intervals(float(sign), **kw)
        return ClipView(rho, obj, grad, zero)

    def build(self, fig):
        axes = fig.subplots(2, 2, sharex=True)
        self.ax = {(+1, "obj"): axes[0, 0], (-1, "obj"): axes[0, 1],
                   (+1, "grad"): axes[1, 0], (-1, "grad"): axes[1, 1]}
        self.lines, self.spans = {}, {}
        rho = np.linspace(0.0, RHO_MAX, 2)
        for (sign, kind), ax in self.ax.items():
            ref = rho * sign if kind == "obj" else rho * sign
            ax.plot(rho, ref, ls=":", color="0.55", lw=1, label="unclipped ρ·Â" if kind == "obj" else "ρ·Â")
            color = methods.push_colour(sign)
            self.lines[sign, kind] = self.dynamic(ax.plot([], [], color=color, lw=2.2)[0])
            self.spans[sign, kind] = [self.dynamic(ax.axvspan(0, 0, color="0.5", alpha=0.25, lw=0))
                                      for _ in range(2)]
            ax.axvline(1.0, color="0.7", lw=0.8)
            ax.axhline(0.0, color="0.7", lw=0.8)
            ax.set_xlim(0, RHO_MAX)
        self.ax[+1, "obj"].set_ylim(-0.2, 2.2)
        self.ax[-1, "obj"].set_ylim(-RHO_MAX - 0.2, 0.2)
        self.ax[+1, "grad"].set_ylim(-0.2, 2.2)
        self.ax[-1, "grad"].set_ylim(-RHO_MAX - 0.2, 0.2)
        self.ax[+1, "obj"].set_title("Â = +1 (better than the group)")
        self.ax[-1, "obj"].set_title("Â = −1 (worse than the group)")
        self.ax[+1, "obj"].set_ylabel("objective ℓ (maximised)")
        self.ax[+1, "grad"].set_ylabel("∂ℓ/∂log π (0 = no push)")
        for sign in (+1, -1):
            self.ax[sign, "grad"].set_xlabel("ratio ρ = π_θ / π_θold")
        self.ax[+1, "obj"].legend(loc="upper left", fontsize=8)

    def draw(self, r: ClipView):
        for (sign, kind), line in self.lines.items():
            line.set_data(r.rho, r.obj[sign] if kind == "obj" else r.grad[sign])
            ivals = r.zero[sign] + [(0.0, 0.0)] * (2 - len(r.zero[sign]))
            for rect, (lo, hi) in zip(self.spans[sign, kind], ivals):
                _set_span(rect, lo, hi)


# ---------------------------------------------------------------------------------
# Panel 2: G × T heatmap of per-token gradient weights at inner step k
# ---------------------------------------------------------------------------------
PUSH_LIM = 0.03


@register("loss.token_weights")
class TokenWeightsPanel(Panel):
    """One group at one inner step: push −∂loss/∂log π per token, the ratio ρ_{i,t}, and Â_i."""

    title = "Per-token push −∂loss/∂log π = Â_i · ρ_{i,t} · (1/(G·T)), zero where clipped"
    figsize = (9.6, 4.3)
    bench_moves = [{"step": k, "eps": e} for k, e in [(1, 0.2), (3, 0.2), (5, 0.1), (8, 0.3)]]
    relevance = {"eps": lambda v: v["step"] > 1}     # at inner step 1 every ρ is 1: ε cannot clip anything

    def make_controls(self):
        return {"step": slider("inner step", 1, 1, 10, 1, integer=True),
                "eps": slider("ε", 0.2, 0.05, 0.5, 0.01, fmt=".2f"),
                "lr": slider("Adam lr", 0.05, 0.01, 0.3, 0.01, fmt=".2f"),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, step, eps, lr, seed):
        # the first k steps of a longer run are the k-step run: cache the longest, index it
        res = inner_steps.run_cached(inner_steps.InnerConfig(mu=10, eps_low=eps, lr=lr, seed=seed))
        k = step - 1
        return {"push": -res.weights[k], "ratio": res.ratio[k], "clipped": res.clipped[k],
                "adv": res.adv, "rewards": res.rewards, "step": step, "eps": eps,
                "clip_frac": res.clip_frac[k]}

    def build(self, fig):
        G, T = inner_steps.InnerConfig.G, inner_steps.InnerConfig.T
        gs = fig.add_gridspec(1, 3, width_ratios=[1.0, 1.0, 0.45])
        self.ax_w, self.ax_r, self.ax_a = (fig.add_subplot(gs[0, i]) for i in range(3))
        zeros = np.zeros((G, T))
        self.im_w = self.dynamic(self.ax_w.imshow(zeros, cmap=methods.PUSH_CMAP, vmin=-PUSH_LIM, vmax=PUSH_LIM,
                                                  aspect="auto", interpolation="nearest"))
        # the ratio's colours saturate at the clip band 1 ± ε, so the ε slider always recolours the map
        self.im_r = self.dynamic(self.ax_r.imshow(zeros + 1, cmap="PuOr_r", aspect="auto", interpolation="nearest",
                                                  norm=mcolors.TwoSlopeNorm(1.0, 0.8, 1.2)))
        self.clip_marks = self.dynamic(self.ax_r.plot([], [], "x", color="k", ms=6, mew=1.5)[0])
        self.clip_marks_w = self.dynamic(self.ax_w.plot([], [], "x", color="k", ms=6, mew=1.5)[0])
        fig.colorbar(self.im_w, ax=self.ax_w, label="push (+ raises log π)")
        fig.colorbar(self.im_r, ax=self.ax_r, label="ρ_{i,t} (ends of the bar: 1 ± ε)")
        self.ax_w.set_title("push −∂loss/∂log π(o_{i,t})", fontsize=10)
        self.ax_r.set_title("ratio ρ_{i,t} (the only t-dependent factor)", fontsize=10)
        for ax in (self.ax_w, self.ax_r):
            ax.set_xlabel("token position t   (× clipped: no gradient)")   # a key, not a legend over the cells
            ax.set_ylabel("response i")
        self.bars = self.dynamic(*self.ax_a.barh(np.arange(G), np.zeros(G), color="0.5"))
        self.ax_a.set_ylim(G - 0.5, -0.5)
        self.ax_a.set_xlim(-2.2, 2.2)
        self.ax_a.axvline(0, color="0.6", lw=0.8)
        self.ax_a.set_title("Â_i per response", fontsize=10)
        self.ax_a.set_yticks([])
        self.info = self.dynamic(self.ax_a.text(0.02, -0.2, "", transform=self.ax_a.transAxes, fontsize=8,
                                                family="monospace", va="top"))

    def draw(self, r):
        self.im_w.set_data(r["push"])
        self.im_r.set_data(r["ratio"])
        if self.im_r.norm.vmax != 1 + r["eps"]:                  # the band moved: the colour bar's ends too
            self.im_r.norm.vmin, self.im_r.norm.vmax = 1 - r["eps"], 1 + r["eps"]
            self.request_full_redraw()
        ii, tt = np.nonzero(r["clipped"])
        self.clip_marks.set_data(tt, ii)
        self.clip_marks_w.set_data(tt, ii)
        for bar, a in zip(self.bars, r["adv"]):
            bar.set_width(a)
            bar.set_color(methods.push_colour(a))
        self.info.set_text(f"clipped: {100 * r['clip_frac']:.0f}%")


# ---------------------------------------------------------------------------------
# Panel 3: μ inner steps — when does the ratio leave 1 and clipping start?
# ---------------------------------------------------------------------------------
MU_MAX = 16


@register("loss.inner_steps")
class InnerStepsPanel(Panel):
    """μ Adam steps on one batch: ratio range and clipped fraction (left), loss and ‖∇‖ (right)."""

    title = "μ inner steps on one batch: ρ ≡ 1 and no clipping at step 1; clipping starts later"
    figsize = (9.6, 3.8)
    bench_moves = [{"mu": m, "lr": lr} for m, lr in [(1, 0.1), (4, 0.1), (8, 0.05), (16, 0.2)]]

    def make_controls(self):
        return {"mu": slider("μ (inner steps)", 6, 1, MU_MAX, 1, integer=True),
                "lr": slider("Adam lr", 0.1, 0.01, 0.3, 0.01, fmt=".2f"),
                "eps": slider("ε", 0.2, 0.05, 0.5, 0.01, fmt=".2f"),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, mu, lr, eps, seed):
        # the first μ steps of a MU_MAX-step run are the μ-step run: cache the long one, slice it
        full = inner_steps.run_cached(inner_steps.InnerConfig(mu=MU_MAX, lr=lr, eps_low=eps, seed=seed))
        return full.head(mu)

    def build(self, fig):
        self.ax_r, self.ax_l = fig.subplots(1, 2)
        ax = self.ax_r
        self.bars = self.dynamic(*ax.bar(np.arange(1, MU_MAX + 1), np.zeros(MU_MAX), color="tab:purple",
                                         alpha=0.35, label="fraction of tokens clipped"))
        self.rmax = self.dynamic(ax.plot([], [], "^-", color=methods.PUSH_UP, label="max ρ")[0])
        self.rmin = self.dynamic(ax.plot([], [], "v-", color=methods.PUSH_DOWN, label="min ρ")[0])
        self.hi = self.dynamic(ax.axhline(1.2, color=methods.PUSH_UP, ls="--", lw=1))
        self.lo = self.dynamic(ax.axhline(0.8, color=methods.PUSH_DOWN, ls="--", lw=1))
        ax.axhline(1.0, color="0.6", lw=0.8)
        ax.set_xlim(0.4, MU_MAX + 0.6)
        ax.set_ylim(0, 2.4)
        ax.set_xlabel("inner step")
        ax.set_ylabel("ratio ρ  /  clipped fraction")
        ax.legend(loc="upper left", fontsize=8)
        ax = self.ax_l
        self.loss = self.dynamic(ax.plot([], [], "o-", color="k", label="loss")[0])
        self.gn = self.dynamic(ax.plot([], [], "s-", color="tab:blue", label="‖∇_θ loss‖")[0])
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_xlim(0.4, MU_MAX + 0.6)
        ax.set_ylim(-0.25, 0.25)
        ax.set_xlabel("inner step")
        ax.legend(loc="lower left", fontsize=8)
        self.first = self.dynamic(self.ax_r.axvline(-1, color="tab:purple", ls=":", lw=1.5,
                                                    label="first clipping"))
        self.ax_r.legend(loc="upper left", fontsize=8)
        self.info = self.dynamic(ax.text(0.98, 0.97, "", transform=ax.transAxes, ha="right", va="top",
                                         fontsize=8, family="monospace"))

    def draw(self, r: inner_steps.InnerResult):
        mu = r.loss.size
        k = np.arange(1, mu + 1)
        for j, bar in enumerate(self.bars):
            bar.set_height(r.clip_frac[j] if j < mu else 0.0)
        self.rmax.set_data(k, r.ratio_max)
        self.rmin.set_data(k, r.ratio_min)
        eps = self.controls["eps"].value
        self.hi.set_ydata([1 + eps, 1 + eps])
        self.lo.set_ydata([1 - eps, 1 - eps])
        self.loss.set_data(k, r.loss)
        self.gn.set_data(k, r.grad_norm)
        first = r.first_clip_step
        self.first.set_xdata([first or -1, first or -1])
        self.info.set_text(f"step 1: loss {r.loss[0]:+.0e}")


# ---------------------------------------------------------------------------------
# Panel 4: KL estimators on a categorical toy — values, Monte-Carlo bias and variance
# ---------------------------------------------------------------------------------
N_MAX = 256
REPS = 300


@register("kl.estimators")
class KLEstimatorPanel(Panel):
    """k1/k2/k3 per token; n-sample Monte-Carlo estimates vs the exact KL; RMSE vs n."""

    title = "KL(π_θ‖π_ref) from samples: k1, k2, k3 (eq. 5) on a categorical toy with exact KL"
    figsize = (9.6, 4.3)
    bench_moves = [{"shift": s, "n": n} for s, n in [(1.0, 16), (0.5, 64), (2.0, 4), (1.5, 128)]]

    def make_controls(self):
        return {"shift": slider("distance π_θ ↔ π_ref", 1.5, 0.0, 2.5, 0.05, fmt=".2f"),
                "n": slider("samples n", 16, 1, N_MAX, 1, integer=True),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, shift, n, seed):
        z, z_ref = kl_toy.toy_logits(8, shift, 0)
        p = np.exp(z - z.max())
        return {"values": kl_toy.estimator_values(z, z_ref), "p": p / p.sum(),
                "moments": kl_toy.estimator_moments(z, z_ref), "kl": kl_toy.exact_kl(z, z_ref),
                "mc": kl_toy.mc_means(z, z_ref, n, REPS, seed), "n": n}

    def build(self, fig):
        self.ax_v, self.ax_mc, self.ax_e = fig.subplots(1, 3)
        K = 8
        x = np.arange(K)
        self.vbars = {}
        for j, kind in enumerate(kl_toy.KINDS):
            self.vbars[kind] = self.dynamic(*self.ax_v.bar(x + (j - 1) * 0.27, np.zeros(K), width=0.27,
                                                           color=KL_COLORS[kind], label=kind))
        self.pline = self.dynamic(self.ax_v.plot([], [], "k.--", lw=0.8, label="π_θ(o)")[0])
        self.ax_v.axhline(0, color="0.6", lw=0.8)
        self.ax_v.set_ylim(-3.0, 4.0)
        self.ax_v.set_xlabel("token o")
        self.ax_v.set_title("one-sample value k(o)", fontsize=10)
        self.ax_v.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=7, ncol=4, frameon=False)   # under the axes: the bars reach the top
        rng = np.random.default_rng(0)
        self.jitter = {kind: j + rng.uniform(-0.25, 0.25, REPS) for j, kind in enumerate(kl_toy.KINDS)}
        self.pts = {kind: self.dynamic(self.ax_mc.scatter(self.jitter[kind], np.zeros(REPS), s=4, alpha=0.35,
                                                          color=KL_COLORS[kind])) for kind in kl_toy.KINDS}
        self.err = {kind: self.dynamic(self.ax_mc.plot([], [], "k_-", ms=14, mew=2)[0]) for kind in kl_toy.KINDS}
        self.kl_line = self.dynamic(self.ax_mc.axhline(0, color="k", ls="--", lw=1.2, label="exact KL"))
        self.ax_mc.set_xticks(range(3), kl_toy.KINDS)
        self.ax_mc.set_xlim(-0.6, 2.6)
        self.ax_mc.set_ylim(-0.6, 1.2)
        self.ax_mc.set_title(f"{REPS} estimates, each a mean of n samples", fontsize=10)
        self.ax_mc.legend(loc="upper right", fontsize=7)
        self.ns = np.logspace(0, 5, 120)                  # exact curves reach past the slider

        self.rmse = {kind: self.dynamic(self.ax_e.plot([], [], color=KL_COLORS[kind], label=kind)[0])
                     for kind in kl_toy.KINDS}
        self.rmse_now = self.dynamic(self.ax_e.axvline(16, color="0.4", lw=1))
        self.ax_e.set_xscale("log")
        self.ax_e.set_yscale("log")
        self.ax_e.set_xlim(1, 1e5)
        self.ax_e.set_ylim(1e-4, 3.0)
        self.ax_e.set_xlabel("samples n")
        self.ax_e.set_title("RMSE = √(bias² + var/n)\nexact; k2: a bias floor", fontsize=9)
        self.ax_e.legend(loc="lower left", fontsize=7)
        self.info = self.dynamic(self.ax_e.text(0.98, 0.97, "", transform=self.ax_e.transAxes, ha="right",
                                                va="top", fontsize=7, family="monospace"))

    def draw(self, r):
        for kind in kl_toy.KINDS:
            for bar, v in zip(self.vbars[kind], r["values"][kind]):
                bar.set_height(v)
            est = r["mc"][kind]
            self.pts[kind].set_offsets(np.column_stack([self.jitter[kind], est]))
            j = kl_toy.KINDS.index(kind)
            m, sd = est.mean(), est.std()
            self.err[kind].set_data([j, j, j], [m - sd, m, m + sd])
            mo = r["moments"][kind]
            self.rmse[kind].set_data(self.ns, mo.rmse(self.ns) + 1e-300)
        self.pline.set_data(np.arange(r["p"].size), r["p"])
        self.kl_line.set_ydata([r["kl"], r["kl"]])
        self.rmse_now.set_xdata([r["n"], r["n"]])
        self.info.set_text(f"KL = {r['kl']:.4f}")


# ---------------------------------------------------------------------------------
# Panel 5: what the KL estimators' gradients estimate
# ---------------------------------------------------------------------------------
@register("kl.gradients")
class KLGradientPanel(Panel):
    """E[∇_z k] for k1, k2, k3 (samples held fixed) vs the true ∇KL in both directions."""

    title = "Differentiated in the loss: E∇k1 = 0, E∇k2 = ∇KL(π_θ‖π_ref), E∇k3 = ∇KL(π_ref‖π_θ)"
    figsize = (9.6, 3.6)
    bench_moves = [{"shift": s} for s in (0.5, 1.0, 1.5, 2.0)]

    def make_controls(self):
        return {"shift": slider("distance π_θ ↔ π_ref", 1.5, 0.0, 2.5, 0.05, fmt=".2f"),
                "seed": slider("seed", 0, 0, 20, 1, integer=True)}

    def compute(self, shift, seed):
        z, z_ref = kl_toy.toy_logits(8, shift, seed)
        return kl_toy.expected_grads(z, z_ref)

    def build(self, fig):
        ax = self.ax = fig.subplots()
        K = 8
        x = np.arange(K)
        self.bars = {kind: self.dynamic(*ax.bar(x + (j - 1) * 0.27, np.zeros(K), width=0.27,
                                                color=KL_COLORS[kind], label=f"E[∇{kind}]"))
                     for j, kind in enumerate(kl_toy.KINDS)}
        self.fwd = self.dynamic(ax.plot([], [], "D", mfc="none", mec="tab:orange", ms=9, mew=1.6,
                                        label="∇KL(π_θ‖π_ref)")[0])
        self.rev = self.dynamic(ax.plot([], [], "o", mfc="none", mec="tab:green", ms=11, mew=1.6,
                                        label="∇KL(π_ref‖π_θ)")[0])
        ax.axhline(0, color="0.6", lw=0.8)
        ax.set_ylim(-0.4, 0.4)
        ax.set_xlim(-0.6, K - 0.4)
        ax.set_xlabel("logit z_o")
        ax.set_ylabel("expected gradient")
        ax.legend(loc="upper right", fontsize=8, ncol=2)

    def draw(self, g):
        x = np.arange(g["k1"].size)
        for j, kind in enumerate(kl_toy.KINDS):
            for bar, v in zip(self.bars[kind], g[kind]):
                bar.set_height(v)
        self.fwd.set_data(x + 0.0, g["∇KL(π‖ref)"])
        self.rev.set_data(x + 0.27, g["∇KL(ref‖π)"])


# ---------------------------------------------------------------------------------
# Panel 6: KL-in-loss vs KL-in-reward
# ---------------------------------------------------------------------------------
REWARD_PATTERNS = {"mixed (1,0,0,1,0,1)": [1, 0, 0, 1, 0, 1], "all correct (degenerate)": [1] * 6,
                   "one correct (1,0,0,0,0,0)": [1, 0, 0, 0, 0, 0]}
PLACE_LIM = 0.03     # colour limit of the push heatmaps
DIFF_LIM = 0.006     # starting colour limit of "what the KL changed"; each form then gets its own (see draw)
DRIFT_TOKEN = (0, 4)  # (row, position) of the drifted token in kl_toy.toy_log_ratio(6, 12, ...)


def diff_limit(d) -> float:
    """A symmetric colour limit that shows ``d``: its largest |value| (a fixed small one when d ≡ 0)."""
    m = float(np.abs(d).max())
    return m if m > 1e-12 else DIFF_LIM


@register("kl.placement")
class KLPlacementPanel(Panel):
    """Token push under KL-in-loss (β·k3 per token) vs KL-in-reward (−β·log ratio folded into r_i)."""

    title = "Where the KL goes (lecture notes 000 §3): per token in the loss (form 1) or in the reward (form 2)"
    figsize = (9.6, 6.4)
    bench_moves = [{"beta": b, "pattern": p} for b, p in
                   [(0.05, "mixed (1,0,0,1,0,1)"), (0.2, "mixed (1,0,0,1,0,1)"),
                    (0.05, "all correct (degenerate)"), (0.5, "one correct (1,0,0,0,0,0)")]]

    def make_controls(self):
        return {"beta": slider("β", 0.1, 0.0, 1.0, 0.01, fmt=".2f"),
                "drift": slider("drift of token (0, 4) [nats]", 1.5, 0.0, 3.0, 0.05, fmt=".2f"),
                "pattern": dropdown("rewards", list(REWARD_PATTERNS))}

    def compute(self, beta, drift, pattern):
        log_ratio, mask = kl_toy.toy_log_ratio(6, 12, drift, 0)
        return kl_toy.kl_placement(np.array(REWARD_PATTERNS[pattern], float), log_ratio, mask, beta)

    def build(self, fig):
        gs = fig.add_gridspec(2, 3, width_ratios=[1.0, 1.0, 0.5])
        self.ax = {(f, row): fig.add_subplot(gs[row, f - 1]) for f in (1, 2) for row in (0, 1)}
        self.ax_a = fig.add_subplot(gs[:, 2])
        zeros = np.zeros((6, 12))
        self.im = {}
        for (f, row), ax in self.ax.items():
            lim = PLACE_LIM if row == 0 else DIFF_LIM
            cmap = methods.PUSH_CMAP if row == 0 else "PiYG"
            self.im[f, row] = self.dynamic(ax.imshow(zeros, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto",
                                                     interpolation="nearest"))
            ax.plot([DRIFT_TOKEN[1]], [DRIFT_TOKEN[0]], "s", mfc="none", mec="k", ms=11)
            ax.set_yticks(range(6))
            if row == 1:
                ax.set_xlabel("token position t")
            else:
                ax.set_xticks([])
        self.ax[1, 0].set_title("form 1, KL-in-loss: push", fontsize=10)
        self.ax[2, 0].set_title("form 2, KL-in-reward: push", fontsize=10)
        self.ax[1, 1].set_title("form 1: change caused by the KL\n(its own colour scale)", fontsize=9)
        self.ax[2, 1].set_title("form 2: change caused by the KL\n(its own colour scale)", fontsize=9)
        self.ax[1, 0].set_ylabel("response i")
        self.ax[1, 1].set_ylabel("response i")
        fig.colorbar(self.im[2, 0], ax=self.ax[2, 0], label="−∂loss/∂log π")
        fig.colorbar(self.im[1, 1], ax=self.ax[1, 1], label="vs β = 0")
        fig.colorbar(self.im[2, 1], ax=self.ax[2, 1], label="vs β = 0")
        y = np.arange(6)
        self.b0 = self.dynamic(*self.ax_a.barh(y - 0.27, np.zeros(6), height=0.27, color="0.6",
                                               label="task reward only (form 1)"))
        self.b2 = self.dynamic(*self.ax_a.barh(y + 0.0, np.zeros(6), height=0.27, color=methods.OTHER["kl_shaped"],
                                               label="KL-shaped reward (form 2)"))
        self.ax_a.set_ylim(5.6, -0.6)
        self.ax_a.set_xlim(-2.5, 2.5)
        self.ax_a.axvline(0, color="0.6", lw=0.8)
        self.ax_a.set_yticks(range(6))
        self.ax_a.legend(loc="lower center", fontsize=7, bbox_to_anchor=(0.5, -0.22))
        self.ax_a.set_title("group advantages Â_i", fontsize=10)

    def draw(self, p: kl_toy.Placement):
        self.im[1, 0].set_data(-p.w_loss)
        self.im[2, 0].set_data(-p.w_reward)
        # the two forms change the push by amounts of different sizes (one token vs every token of every
        # row): a shared colour scale would leave one of them blank, so each gets its own symmetric scale
        for f, w in ((1, p.w_loss), (2, p.w_reward)):
            d = -(w - p.w_no_kl)
            self.im[f, 1].set_data(d)
            lim = diff_limit(d)
            if self.im[f, 1].norm.vmax != lim:
                self.im[f, 1].norm.vmin, self.im[f, 1].norm.vmax = -lim, lim
                self.request_full_redraw()
        for bar, a in zip(self.b0, p.adv_loss):
            bar.set_width(a)
        for bar, a in zip(self.b2, p.adv_reward):
            bar.set_width(a)


# ---------------------------------------------------------------------------------
# Figures for slides (`make figures`)
# ---------------------------------------------------------------------------------
def fig_clip():
    return ClipPanel(eps_low=0.2, eps_high=0.28, dual_clip=3.0)


def fig_token_weights():
    return TokenWeightsPanel(step=5, eps=0.2, lr=0.05, seed=0)


def fig_inner_steps():
    return InnerStepsPanel(mu=8, lr=0.1, eps=0.2, seed=0)


def fig_kl_estimators():
    return KLEstimatorPanel(shift=1.5, n=16, seed=0)


def fig_kl_gradients():
    return KLGradientPanel(shift=1.5, seed=0)


def fig_kl_placement():
    return KLPlacementPanel(beta=0.1, drift=1.5, pattern="mixed (1,0,0,1,0,1)")


# name -> builder returning a Panel; collected by grpo_lab.figures
FIGURES = {"04_loss_clip": fig_clip, "04_loss_token_weights": fig_token_weights,
           "04_loss_inner_steps": fig_inner_steps, "04_kl_estimators": fig_kl_estimators,
           "04_kl_gradients": fig_kl_gradients, "04_kl_placement": fig_kl_placement}
