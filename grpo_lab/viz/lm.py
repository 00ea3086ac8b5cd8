"""Live and after-the-fact plots for notebook 06 (a full GRPO loop on a tiny LM, seed 000 §5).

:class:`TrainingMonitor` is a trainer callback: it owns one figure whose lines are created
once and updated in place (``set_data``) every ``every`` steps while the run is going;
axis limits are fixed up front (x: the planned steps; y: [0, 1] for rates, [0, max_new]
for lengths) so an update never forces a relayout. :func:`compare_runs` draws two or more
finished runs side by side (e.g. eq. (6) vs eq. (7) aggregation).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grpo_lab.i18n import tr
from grpo_lab import methods
from grpo_lab.viz.guide import see

MONITOR_WHAT_TO_SEE = see(
    "Nothing to move: watch the four panels while the training cell runs.",
    "不用动任何控件：训练单元运行时观察四个面板。",
    "Every few steps: reward and per-level accuracy rise; the all-correct share climbs as easy prompts "
    "saturate; lengths settle; KL to the reference grows slowly while the entropy falls.",
    "每隔几步重绘：奖励与各难度的准确率上升；简单题饱和后全对组占比上升；长度趋于稳定；"
    "与参考模型的 KL 缓慢增长，熵下降。",
    "A rising all-correct share means fewer groups with a gradient (退化组). A KL that jumps or an entropy "
    "that collapses to ~0 in a few steps is a red flag (see the metric guide below).",
    "全对组占比上升意味着有梯度的组变少（退化组）。KL 突然跳升、或熵在几步内塌到 ~0，都是危险信号（见下方的指标指南）。",
)
COMPARE_WHAT_TO_SEE = see(
    "Nothing to move: compare the two colours panel by panel.",
    "不用动任何控件：逐个面板比较两种颜色。",
    "Reward, the lengths of correct (solid) and incorrect (dashed) responses, and the degenerate-group shares "
    "of the eq. (6) and eq. (7) runs, from the same first batch.",
    "式 (6) 与式 (7) 两次运行（第一批完全相同）的奖励、正确（实线）与错误（虚线）回答的长度、以及退化组占比。",
    "The curves overlap within noise: answers of 2–4 tokens leave the length bias (长度偏差) little room; notebook 05 "
    "shows where it bites.",
    "曲线在噪声范围内重合：2–4 个 token 的回答让长度偏差几乎没有施展空间；它在哪里起作用见 notebook 05。",
)

# difficulty levels: neither a method nor a push (grpo_lab.methods reserves those colours)
LEVEL_COLORS = {1: "goldenrod", 2: "teal", 3: "0.25"}


def smooth(values, window: int = 5) -> np.ndarray:
    """Trailing rolling mean (NaN-aware: steps without data are skipped, not zero-filled)."""
    return pd.Series(values, dtype=float).rolling(window, min_periods=1).mean().to_numpy()


class TrainingMonitor:
    """Four live panels: reward/accuracy, degenerate groups, lengths, KL and entropy.

    Use ``Trainer(cfg, callback=monitor)`` or ``train(cfg, callback=monitor)``; display
    the monitor in a notebook cell (with ``%matplotlib widget`` its canvas is a widget).
    """

    def __init__(self, steps: int, levels=(1, 2), max_new: int = 8, *, every: int = 5, window: int = 5,
                 title: str = "GRPO on a tiny LM — live"):
        self.steps, self.levels, self.every, self.window = int(steps), tuple(levels), int(every), int(window)
        self.rows: list[dict] = []
        self.n_draws = 0
        with plt.ioff():
            self.fig, grid = plt.subplots(2, 2, figsize=(9.6, 5.4), layout="constrained")
        self.fig.suptitle(title, fontsize=10)
        axes = grid.ravel()
        ax_r, ax_d, ax_l, ax_k = self.axes = axes
        x_hi = max(self.steps, 1)
        for ax in axes:
            ax.set_xlim(0, x_hi)
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
        self.lines: dict[str, plt.Line2D] = {}
        self.lines["reward_mean"], = ax_r.plot([], [], color="k", lw=2, label="reward")
        for lv in self.levels:
            self.lines[f"acc_L{lv}"], = ax_r.plot([], [], color=LEVEL_COLORS.get(lv, None), lw=1.2,
                                                  label=f"acc level {lv}")
        ax_r.set_ylim(0, 1.02)
        ax_r.set_title("reward, accuracy (sampled)", fontsize=9)
        self.lines["frac_all_correct"], = ax_d.plot([], [], color=methods.CORRECT, label="all correct")
        self.lines["frac_all_wrong"], = ax_d.plot([], [], color=methods.WRONG, label="all wrong")
        ax_d.set_ylim(0, 1.02)
        ax_d.set_title("degenerate groups (fraction)", fontsize=9)
        self.lines["len_correct"], = ax_l.plot([], [], color=methods.CORRECT, label="correct")
        self.lines["len_incorrect"], = ax_l.plot([], [], color=methods.WRONG, label="incorrect")
        self.lines["len_mean"], = ax_l.plot([], [], color="k", lw=1, ls=":", label="all")
        ax_l.set_ylim(0, max_new + 0.5)
        ax_l.set_title("response length (tokens, EOS incl.)", fontsize=9)
        self.lines["kl"], = ax_k.plot([], [], color="tab:purple", label="KL(π‖π_ref)")
        self.lines["entropy"], = ax_k.plot([], [], color="tab:blue", label="entropy / token")
        self.k_top = 0.5
        ax_k.set_ylim(0, self.k_top)
        ax_k.set_title("KL, entropy (nats)", fontsize=9)
        for ax in axes:
            ax.legend(fontsize=7, loc="best")

    # a trainer callback
    def __call__(self, trainer, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) % self.every == 0 or row["step"] >= self.steps:
            self.update()

    def update(self, df: pd.DataFrame | None = None) -> None:
        """Redraw every line from the rows seen so far (or from ``df``)."""
        if df is not None:
            self.rows = df.to_dict("records")
        if not self.rows:
            return
        data = pd.DataFrame(self.rows)
        x = data["step"].to_numpy()
        for name, line in self.lines.items():
            if name in data:
                line.set_data(x, smooth(data[name].to_numpy(), self.window))
        top = np.nanmax([data[c].max() for c in ("kl", "entropy") if c in data] + [0.0])
        if np.isfinite(top) and top > self.k_top:       # grow in doublings: few relayouts
            while self.k_top < top:
                self.k_top *= 2
            self.axes[3].set_ylim(0, self.k_top)
        self.n_draws += 1
        # draw(), not draw_idle(): the monitor updates while the training cell still runs,
        # and with ipympl draw_idle() only asks the browser to request a redraw, which the
        # busy kernel cannot answer before the cell ends (tests/browser checks this).
        self.fig.canvas.draw()

    def _ipython_display_(self):
        from IPython.display import display

        canvas = self.fig.canvas
        import ipywidgets as widgets

        if isinstance(canvas, widgets.DOMWidget):
            canvas.header_visible = False
            display(widgets.VBox([canvas, MONITOR_WHAT_TO_SEE.widget()]))
        else:
            display(self.fig)
            display(MONITOR_WHAT_TO_SEE)


def compare_runs(runs: dict[str, pd.DataFrame], *, window: int = 10, max_new: int | None = None):
    """Side-by-side curves of finished runs: reward, length of correct/incorrect, degenerate groups."""
    with plt.ioff():   # shown once, by whoever displays it (ipympl would also auto-display it)
        fig, axes = plt.subplots(1, 3, figsize=(9.6, 3.4), layout="constrained")
    # the runs compared are a method's recipe (eq. 6 = GRPO's aggregation, eq. 7 = DAPO's …): method colours
    colors = [methods.colour(n) for n in ("grpo", "dapo", "dr_grpo", "gspo")]
    for (name, df), c in zip(runs.items(), colors):
        x = df["step"].to_numpy()
        axes[0].plot(x, smooth(df["reward_mean"], window), color=c, label=name)
        axes[1].plot(x, smooth(df["len_correct"], window), color=c, label=f"{name}: correct")
        axes[1].plot(x, smooth(df["len_incorrect"], window), color=c, ls="--", label=f"{name}: incorrect")
        axes[2].plot(x, smooth(df["frac_all_correct"], window), color=c, label=f"{name}: all correct")
        axes[2].plot(x, smooth(df["frac_all_wrong"], window), color=c, ls="--", label=f"{name}: all wrong")
    axes[0].set_title("reward (rolling mean)", fontsize=9)
    axes[1].set_title("response length: correct (—) / incorrect (--)", fontsize=9)
    axes[2].set_title("degenerate groups (fraction)", fontsize=9)
    if max_new:
        axes[1].set_ylim(0, max_new + 0.5)
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def step_anatomy_figure():
    """One group of notebook 06 taken apart: rewards, Â_i (eq. 1) and each token's gradient weight.

    Prompt ``3+4=``, G = 4 responses ``7``, ``8``, ``12``, ``6`` (EOS shown as ⏎), rewards
    1, 0, 0, 0 → Â = +1.73, −0.58, −0.58, −0.58 (population std, as in the seeds). Right:
    ∂loss/∂log π(o_{i,t}) for every token under eq. (6) and eq. (7) — the same sign on every
    token of a response (the broadcast of Â_i), a size that depends on the aggregation.
    """
    import torch

    from grpo_lab.advantages import advantages_from_flat
    from grpo_lab.losses import token_grad_weights

    texts = ["7", "8", "12", "6"]
    rewards = np.array([1.0, 0.0, 0.0, 0.0])
    adv = advantages_from_flat(rewards, 4)
    tokens = [list(t) + ["⏎"] for t in texts]
    T = max(map(len, tokens))
    mask = torch.zeros(4, T)
    for i, tk in enumerate(tokens):
        mask[i, :len(tk)] = 1
    logp = torch.full((4, T), -0.5)
    a = torch.as_tensor(adv, dtype=torch.float32)
    w6 = token_grad_weights(logp, logp, a, mask, mode="seq-mean-token-mean").numpy()
    w7 = token_grad_weights(logp, logp, a, mask, mode="token-mean").numpy()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.0), layout="constrained",
                             gridspec_kw={"width_ratios": [1.1, 1, 1]})
    y = np.arange(4)
    axes[0].barh(y, adv, color=[methods.push_colour(v) for v in adv])
    for i, (r, v) in enumerate(zip(rewards, adv)):
        axes[0].text(v, i, f" r={r:.0f}, Â={v:+.2f}", va="center", ha="left" if v > 0 else "right", fontsize=8)
    axes[0].set_yticks(y, [f"3+4={t}" for t in texts])
    axes[0].invert_yaxis()
    axes[0].set_xlim(-2.6, 2.6)
    axes[0].axvline(0, color="k", lw=0.8)
    axes[0].set_title("step 3: Â_i, one number per response (eq. 1)", fontsize=9)
    lim = float(np.abs(np.concatenate([w6, w7])).max())
    for ax, w, name in ((axes[1], w6, "eq. (6) seq-mean"), (axes[2], w7, "eq. (7) token-mean")):
        ax.imshow(np.where(mask.numpy() > 0, w, np.nan), cmap=methods.WEIGHT_CMAP, vmin=-lim, vmax=lim, aspect="auto")
        for i, tk in enumerate(tokens):
            for t, ch in enumerate(tk):
                ax.text(t, i, f"{ch}\n{w[i, t]:+.3f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(w[i, t]) > 0.6 * lim else "black")
        ax.set_yticks(y, [""] * 4)
        ax.set_xticks(range(T), [f"t={t + 1}" for t in range(T)])
        ax.set_title(f"{name}: ∂loss/∂log π (< 0: pushed up)", fontsize=9)
    return fig


FIGURES = {"06_grpo_llm_step": step_anatomy_figure}


class SampleLog:
    """A trainer callback: every ``every`` steps, a few of that step's replies with r_i, Â_i and the push per token.

    Reads ``trainer.last_samples`` (one row per sampled response: group, prompt, response, reward,
    adv, length, truncated). The push on each token of response i is −∂loss/∂log π(o_{i,t}) on
    policy (ρ = 1), i.e. Â_i times the aggregation weight of :func:`grpo_lab.losses.token_weights`
    (eq. 6: Â_i/(B·|y_i|), the same on every token of the reply). Chain it with the live monitor:
    ``Trainer(cfg, callback=SampleLog(then=monitor))``. ``frames`` keeps every printed table.
    """

    def __init__(self, every: int = 50, n: int = 4, *, then=None, show: bool = True):
        self.every, self.n, self.then, self.show = int(every), int(n), then, show
        self.frames: dict[int, pd.DataFrame] = {}

    def __call__(self, trainer, row: dict) -> None:
        if self.then is not None:
            self.then(trainer, row)
        samples = getattr(trainer, "last_samples", None)
        if samples is None or row["step"] % self.every:
            return
        frame = self.table(samples, trainer.cfg.agg, max_len=trainer.cfg.max_new)
        self.frames[int(row["step"])] = frame
        if self.show:
            print(tr(f"step {row['step']}: {len(samples)} replies, showing {len(frame)} (the first informative groups)",
                     f"第 {row['step']} 步：{len(samples)} 条回复，显示其中 {len(frame)} 条（最先出现的有信息量的组）"))
            print(frame.to_string(index=False))

    def table(self, samples: pd.DataFrame, mode: str, *, max_len: int | None = None) -> pd.DataFrame:
        """The first groups with a non-zero Â (up to ``n`` replies), with the per-token push."""
        import torch

        from grpo_lab.losses import token_weights

        s = samples[samples["adv"].notna()].reset_index(drop=True)                 # the replies in the loss
        lengths = s["length"].to_numpy()
        mask = torch.as_tensor(np.arange(max(int(lengths.max()), 1))[None, :] < lengths[:, None], dtype=torch.float64)
        w = token_weights(mask, mode, max_len=max_len).numpy()                       # (B, T)
        push = s["adv"].to_numpy() * w.sum(1) / np.maximum(lengths, 1)              # per token, mean over the reply
        out = s.assign(push_per_token=push)
        live = out.groupby("group")["adv"].transform(lambda a: (a != 0).any())
        out = out[live].head(self.n) if live.any() else out.head(self.n)
        return out[["group", "prompt", "response", "reward", "adv", "length", "push_per_token"]].round(4)

