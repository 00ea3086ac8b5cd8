"""Panels and figures for notebook 05: sequence-mean vs token-mean and length bias (seed 000 §4).

* :class:`GroupWeightsPanel` — a group editor (length and reward of each of four responses)
  with bars of the per-token gradient weight under GRPO (eq. 6), DAPO (eq. 7), Dr. GRPO
  (1/C) and GSPO, and the whole push each response receives.
* :class:`DriftPanel` — the length-drift simulation of :func:`grpo_lab.length_bias.simulate_drift`,
  precomputed once per process: E|y| of wrong and right answers over training, a cursor,
  and the length distributions at the cursor step.

Bars and curves show the *push* −∂loss/∂log π: positive raises the token's probability.
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.transforms import blended_transform_factory

from grpo_lab.i18n import tr
from grpo_lab import length_bias as lb
from grpo_lab.viz import register
from grpo_lab.viz.panel import Panel, dropdown, slider

COLORS = {s: lb.colour(s) for s in lb.SCHEMES}      # the methods' colours (grpo_lab.methods)
LIMIT_LADDER = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
G_EDITOR = 4
MAX_SLIDER_LEN = 40


def _limit(value: float) -> float:
    """The smallest ladder value ≥ 1.15·value: symmetric y-limits that rarely change."""
    for lim in LIMIT_LADDER:
        if 1.15 * value <= lim:
            return lim
    return LIMIT_LADDER[-1]


# ---------------------------------------------------------------------------------
# Panel 1: group editor -> per-token gradient weights under each scheme
# ---------------------------------------------------------------------------------
@register("length_bias.group")
class GroupWeightsPanel(Panel):
    """Sliders for |y_i| and r_i of four responses; bars of the push per token and per response."""

    title = "Per-token gradient weight: a long wrong answer is penalised less per token under eq. (6)"
    figsize = (9.6, 4.2)
    bench_moves = [{"len4": 24}, {"len4": 30}, {"len3": 4}, {"r2": 0.0}, {"r2": 1.0},
                   {"off_policy": 0.2}, {"off_policy": 0.0}, {"len1": 20}, {"C": 64}, {"len3": 6}]

    def make_controls(self):
        c = {}
        for i, (L, r) in enumerate(zip(lb.TABLE_EXAMPLE["lengths"], lb.TABLE_EXAMPLE["rewards"]), 1):
            c[f"len{i}"] = slider(f"|y{i}|", L, 1, MAX_SLIDER_LEN, 1, integer=True)
            c[f"r{i}"] = slider(f"r{i}", float(r), 0.0, 1.0, 0.05, fmt=".2f")
        c["C"] = slider("C (Dr. GRPO budget)", MAX_SLIDER_LEN, MAX_SLIDER_LEN, 128, 8, integer=True)
        c["off_policy"] = slider("policy moved, σ(log ρ)", 0.0, 0.0, 0.5, 0.05, fmt=".2f")
        return c

    def compute(self, C, off_policy, **values):
        lengths = [values[f"len{i}"] for i in range(1, G_EDITOR + 1)]
        rewards = [values[f"r{i}"] for i in range(1, G_EDITOR + 1)]
        return lb.group_weights(lengths, rewards, schemes=lb.SHOWN, C=C, off_policy=off_policy)

    def build(self, fig):
        self.ax_tok, self.ax_tot = fig.subplots(1, 2)
        S = len(lb.SHOWN)
        width = 0.8 / S
        self.x = np.arange(G_EDITOR)
        self.offsets = (np.arange(S) - (S - 1) / 2) * width
        self.bars, self.tot_bars = {}, {}
        for k, s in enumerate(lb.SHOWN):
            xs = self.x + self.offsets[k]
            self.bars[s] = list(self.dynamic(*self.ax_tok.bar(xs, np.zeros(G_EDITOR), width, color=COLORS[s],
                                                              label=lb.SHORT[s])))
            self.tot_bars[s] = list(self.dynamic(*self.ax_tot.bar(xs, np.zeros(G_EDITOR), width, color=COLORS[s])))
        # min…max of the per-token push along each response (only > 0 width once ρ ≠ 1)
        self.spread = self.dynamic(LineCollection([], colors="k", linewidths=1.0))
        self.ax_tok.add_collection(self.spread)
        for ax in (self.ax_tok, self.ax_tot):
            ax.axhline(0, color="0.5", lw=0.8)
            ax.set_xlim(-0.6, G_EDITOR - 0.4)
            ax.set_xticks(self.x, [f"y{i + 1}" for i in self.x])
        self.ax_tok.set_ylabel("push per token  −∂loss/∂log π(o_i,t)")
        self.ax_tot.set_ylabel("push per response  Σ_t")
        self.ax_tok.set_title("per token (mean over the response)", fontsize=10)
        self.ax_tot.set_title("whole response", fontsize=10)
        self.ax_tok.legend(loc="upper right", fontsize=8, ncol=2)
        # Numbers go to an HTML readout under the figure: text is the slowest thing Agg draws.
        self.readout = widgets.HTML()
        self._lims = [None, None]

    @property
    def widget(self):
        """One response per row (its |y_i| beside its r_i), then C and the off-policy slider, the figure, the table."""
        view = super().widget.children[1]
        c = self.controls
        rows = [widgets.HBox([c[f"len{i}"], c[f"r{i}"]]) for i in range(1, G_EDITOR + 1)]
        rows.append(widgets.HBox([c["C"], c["off_policy"]]))
        return widgets.VBox([*rows, view, self.readout])

    def draw(self, r: lb.GroupWeights):
        push, lo, hi, tot = -r.per_token, -r.per_token_max, -r.per_token_min, -r.total   # (S, G)
        segs = []
        for k, s in enumerate(r.schemes):
            for i in range(G_EDITOR):
                self.bars[s][i].set_height(push[k, i])
                self.tot_bars[s][i].set_height(tot[k, i])
                segs.append([(self.x[i] + self.offsets[k], lo[k, i]), (self.x[i] + self.offsets[k], hi[k, i])])
        self.spread.set_segments(segs)
        for k, (ax, vals) in enumerate(((self.ax_tok, np.r_[lo.ravel(), hi.ravel()]), (self.ax_tot, tot))):
            lim = _limit(float(np.abs(vals).max()))
            # grow at once, shrink only when the bars use < 1/4 of the axis: few full redraws
            if self._lims[k] is None or lim > self._lims[k] or lim <= self._lims[k] / 4:
                self._lims[k] = lim
                ax.set_ylim(-lim, lim)
        self.readout.value = _group_html(r)


def _group_html(r: lb.GroupWeights) -> str:
    head = "".join(f"<th>y{i + 1}</th>" for i in range(r.lengths.size))
    rows = [f"<tr><td>|y|</td>{''.join(f'<td>{v}</td>' for v in r.lengths)}</tr>",
            f"<tr><td>r</td>{''.join(f'<td>{v:.2f}</td>' for v in r.rewards)}</tr>",
            f"<tr><td>Â</td>{''.join(f'<td>{v:+.2f}</td>' for v in r.adv)}</tr>"]
    for k, s in enumerate(r.schemes):
        rows.append(f"<tr><td>{lb.SHORT[s]} {tr('per token', '每 token')}</td>"
                    + "".join(f"<td>{-v:+.4f}</td>" for v in r.per_token[k]) + "</tr>")
    note = ""
    wrong = np.flatnonzero(r.adv < 0)
    if wrong.size >= 2 and r.lengths[wrong].min() != r.lengths[wrong].max():
        short, long_ = wrong[np.argmin(r.lengths[wrong])], wrong[np.argmax(r.lengths[wrong])]
        note = (tr(f"long/short wrong answer (|y| {r.lengths[long_]}/{r.lengths[short]}), push per token: ",
                   f"长 / 短错误回答（|y| {r.lengths[long_]}/{r.lengths[short]}），每个 token 的推力之比：")
                + ", ".join(f"{lb.SHORT[s]} ×{r.per_token[k, long_] / r.per_token[k, short]:.2f}"
                            for k, s in enumerate(r.schemes)))
    return (f"<table style='font-family:monospace;font-size:12px'><tr><th></th>{head}</tr>{''.join(rows)}</table>"
            f"<div style='font-size:12px'>{note}</div>")


# ---------------------------------------------------------------------------------
# Panel 2: length drift over training (precomputed)
# ---------------------------------------------------------------------------------
@register("length_bias.drift")
class DriftPanel(Panel):
    """E|y| of wrong (solid) and right (dashed) answers over training per scheme; pmf at the cursor.

    The simulation runs once per process and configuration (:func:`lb.simulate_drift` is
    cached); slider moves only index into it.
    """

    title = "Length drift of a toy policy: correctness fixed, length learned"
    POLICY_TITLES = {"by-correctness": "stop probability per branch: wrong answers can learn to ramble",
                     "shared": "one stop probability for right and wrong: no drift in expectation"}
    POLICY_TITLES_ZH = {"by-correctness": "每个分支一个停止概率：错误回答可以学会啰嗦",   # the readout's banner in Chinese mode
                        "shared": "对错共用一个停止概率：期望上没有漂移"}
    figsize = (9.6, 4.2)
    bench_moves = [{"step": 0}, {"step": 40}, {"step": 90}, {"step": 150}, {"seed": 1},
                   {"length_policy": "shared"}, {"step": 70}, {"length_policy": "by-correctness"}, {"seed": -1}]

    def __init__(self, config: lb.DriftConfig = lb.DriftConfig(), *, titled: bool = False, **initial):
        """``titled=True`` adds a static axes title naming the initial length policy (for saved
        figures; the live panel names it in its readout, so toggling needs no full redraw)."""
        self.titled = bool(titled)
        if not isinstance(config, lb.DriftConfig):
            raise TypeError(f"config must be a DriftConfig, got {type(config).__name__}")
        self.config = config.checked()
        self.runs = {pol: lb.simulate_all(self._cfg(pol)) for pol in lb.LENGTH_POLICIES}
        super().__init__(**initial)

    def _cfg(self, policy: str) -> lb.DriftConfig:
        from dataclasses import replace

        return replace(self.config, length_policy=policy)

    def make_controls(self):
        cfg = self.config
        return {"step": slider("training step", cfg.steps, 0, cfg.steps, 1, integer=True),
                "seed": widgets.Dropdown(options=[("mean over seeds", -1)] + [(f"seed {s}", s) for s in range(cfg.seeds)],
                                         value=-1, description="run", style={"description_width": "initial"}),
                "length_policy": dropdown("length policy", lb.LENGTH_POLICIES, "by-correctness")}

    def compute(self, step, seed, length_policy):
        res = self.runs[length_policy]
        pick = (lambda a: a.mean(0)) if seed == -1 else (lambda a: a[seed])
        out = {"step": step, "policy": length_policy, "curves": {}, "pmf": {}}
        for s, r in res.items():
            out["curves"][s] = (pick(r.len_wrong), pick(r.len_right))          # (steps + 1,) each
            p_w = r.p_wrong[:, step] if seed == -1 else r.p_wrong[seed, step]
            p_r = r.p_right[:, step] if seed == -1 else r.p_right[seed, step]
            out["pmf"][s] = (np.mean([lb.length_pmf(p, self.config.max_len) for p in np.atleast_1d(p_w)], 0),
                             np.mean([lb.length_pmf(p, self.config.max_len) for p in np.atleast_1d(p_r)], 0))
        return out

    def build(self, fig):
        self.ax, self.ax_pmf = fig.subplots(1, 2, width_ratios=[1.4, 1])
        cfg = self.config
        x = np.arange(cfg.steps + 1)
        self.wrong, self.right, self.pmf_wrong, self.pmf_right = {}, {}, {}, {}
        for s in lb.SHOWN:
            style = dict(color=COLORS[s], lw=1.8) if s != "gspo" else dict(color=COLORS[s], lw=1.2, ls=(0, (1, 2)))
            self.wrong[s] = self.dynamic(self.ax.plot(x, np.zeros_like(x, float), label=lb.SHORT[s], **style)[0])
            self.right[s] = self.dynamic(self.ax.plot(x, np.zeros_like(x, float), alpha=0.6,
                                                      **{**style, "ls": "--" if s != "gspo" else (0, (1, 2))})[0])
            ls = np.arange(cfg.max_len + 1)
            self.pmf_wrong[s] = self.dynamic(self.ax_pmf.step(ls, np.zeros(ls.size), where="mid", **style)[0])
            self.pmf_right[s] = self.dynamic(self.ax_pmf.step(ls, np.zeros(ls.size), where="mid", alpha=0.5,
                                                              **{**style, "ls": "--"})[0])
        self.cursor = self.dynamic(self.ax.axvline(cfg.steps, color="k", lw=0.8))
        self.ax.set_xlim(0, cfg.steps)
        self.ax.set_ylim(0, cfg.max_len + 1)
        self.ax.axhline(cfg.max_len, color="0.6", lw=0.8, ls=":")
        self.ax.set_xlabel("SGD step (one batch of groups each, μ = 1)")
        self.ax.set_ylabel("E|y|: wrong (solid), right (dashed)")
        # above the axes, not over the curves (tests/test_viz_layout.py checks every panel)
        self.ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=2, fontsize=8, frameon=False,
                       title="GSPO dotted (= GRPO on policy)", title_fontsize=7, borderaxespad=0.0)
        self.ax_pmf.set_xlim(1, cfg.max_len + 1)
        self.ax_pmf.set_ylim(0, 1)
        self.ax_pmf.set_xlabel("response length |y|")
        self.ax_pmf.set_ylabel("P(|y|) at the cursor")
        self.ax_pmf.set_title("wrong (solid), right (dashed)", fontsize=9)
        fig.get_layout_engine().set(wspace=0.06)      # room between the left plot and this y-label
        if self.titled:           # in the suptitle: the space above the left axes holds the legend
            fig.suptitle(f"{self.title}\n{self.POLICY_TITLES[self.controls['length_policy'].value]}")
        self.readout = widgets.HTML()

    @property
    def widget(self):
        return widgets.VBox([*super().widget.children, self.readout])

    def draw(self, r):
        step = r["step"]
        cells = []
        for s in lb.SHOWN:
            w, rt = r["curves"][s]
            self.wrong[s].set_ydata(w)
            self.right[s].set_ydata(rt)
            pw, pr = r["pmf"][s]
            self.pmf_wrong[s].set_ydata(pw)
            self.pmf_right[s].set_ydata(pr)
            cells.append(f"<td>{lb.SHORT[s]}: {w[step]:.1f} / {rt[step]:.1f}</td>")
        self.cursor.set_xdata([step, step])
        title = tr(self.POLICY_TITLES[r['policy']], self.POLICY_TITLES_ZH[r['policy']])
        self.readout.value = (f"<div style='font-size:12px'><b>{title}</b></div>"
                              f"<table style='font-size:12px'><tr><td>step {step}, E|y| "
                              f"{tr('wrong / right', '错误 / 正确')}:</td>"
                              f"{''.join(cells)}</tr></table>")


# ---------------------------------------------------------------------------------
# Figures for slides (`make figures`)
# ---------------------------------------------------------------------------------
def _label_responses(panel: GroupWeightsPanel) -> GroupWeightsPanel:
    """Static |y_i| and Â_i labels under the bars (for a saved figure; the live panel uses its readout)."""
    r = panel.result
    ax = panel.ax_tok
    tr = blended_transform_factory(ax.transData, ax.transAxes)
    for i in range(r.lengths.size):
        ax.text(i, 0.02, f"|y|={r.lengths[i]}\nÂ={r.adv[i]:+.2f}", transform=tr, ha="center", va="bottom",
                fontsize=8, family="monospace")
    return panel


def fig_group_weights():
    return _label_responses(GroupWeightsPanel())


def fig_drift():
    return DriftPanel(titled=True)


def fig_drift_shared():
    return DriftPanel(titled=True, length_policy="shared")


# name -> builder returning a Panel (or a Figure); collected by grpo_lab.figures
FIGURES = {"05_length_bias_weights": fig_group_weights, "05_length_bias_drift": fig_drift,
           "05_length_bias_drift_shared": fig_drift_shared}
