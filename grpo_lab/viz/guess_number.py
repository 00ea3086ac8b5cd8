"""Panels and figures for notebook 02: the advantage function on guess-the-number (lecture notes 004 §一).

Every panel reaches its state the way a student would: N (numbers 1..N), the tries in all,
a hint history such as ``"8 higher, 12 lower"`` (the lecture notes' state {9, 10, 11} with two tries
left when tries = 4) and the policy. A hint history that no number fits is shown as a
message in the figure instead of raising inside a widget callback.
"""
from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.ticker import MaxNLocator

from grpo_lab import guess_number as gn
from grpo_lab import methods
from grpo_lab.viz import register
from grpo_lab.viz.panel import Panel, dropdown, slider

POS, NEG, ZERO = methods.PUSH_UP, methods.PUSH_DOWN, methods.NEUTRAL   # A > 0 raises π(a|h)
SEED_HINT_TEXT = "8 higher, 12 lower"
N_MAX = 100
BASELINE_COLORS = {b: methods.OTHER[b] for b in ("none", "constant", "value")}
BASELINE_LABELS = {"none": "no baseline", "constant": "constant b", "value": "b = exact V(h_t)"}


def sign_color(a: float, tol: float = 1e-12) -> str:
    return POS if a > tol else NEG if a < -tol else ZERO


def fmt_set(cands) -> str:
    """{9, 10, 11} -> '{9..11}'; one number -> '{9}'; empty -> '∅'."""
    cands = tuple(cands)
    if not cands:
        return "∅"
    if len(cands) == 1:
        return f"{{{cands[0]}}}"
    if cands[-1] - cands[0] == len(cands) - 1:
        return f"{{{cands[0]}..{cands[-1]}}}"
    return "{" + ",".join(map(str, cands)) + "}"


def _rects(x: np.ndarray, h: np.ndarray, width: float = 0.8) -> np.ndarray:
    """Vertices of bars of height h centred on x. Shape (len(x), 4, 2)."""
    v = np.empty((x.size, 4, 2))
    v[:, [0, 1], 0] = (x - width / 2)[:, None]
    v[:, [2, 3], 0] = (x + width / 2)[:, None]
    v[:, [0, 3], 1] = 0.0
    v[:, [1, 2], 1] = h[:, None]
    return v


def bar_heights(collection: PolyCollection) -> np.ndarray:
    """Heights of the bars drawn by a PolyCollection made with :func:`_rects`."""
    return np.array([p.vertices[1, 1] for p in collection.get_paths()])


# ---------------------------------------------------------------------------------
# The state controls shared by the state panels, and the hint editor
# ---------------------------------------------------------------------------------
def state_controls(N=20, tries=4, hints=SEED_HINT_TEXT, policy="uniform", theta=1.0):
    return {"N": slider("N (numbers 1..N)", N, 2, N_MAX, 1, integer=True),
            "tries": slider("tries in all", tries, 1, 10, 1, integer=True),
            "hints": widgets.Text(value=hints, description="hints", continuous_update=False,
                                  placeholder="e.g. 8 higher, 12 lower",
                                  style={"description_width": "initial"}, layout=widgets.Layout(width="300px")),
            "policy": dropdown("policy π", gn.POLICIES, policy),
            "theta": slider("θ (softmax)", theta, -3.0, 5.0, 0.1, fmt=".1f")}


@dataclass
class StateView:
    """The state a student reached, or the reason none was reached."""

    error: str | None
    state: gn.State | None
    policy: gn.Policy | None


def resolve_state(N, tries, hints, policy, theta) -> StateView:
    try:
        state = gn.state_from_hints(N, tries, hints)
        pol = gn.make_policy(policy, theta if policy == "softmax" else None)
    except (ValueError, TypeError) as err:
        return StateView(str(err), None, None)
    return StateView(None, state, pol)


def _n_matters(values) -> bool:
    """N changes the state only while no hint bounds the secret from above (no 'lower' hint)."""
    try:
        return not any(word == "lower" for _, word in gn.parse_hints(values["hints"]))
    except ValueError:
        return True


HINT_RELEVANCE = {"theta": lambda v: v["policy"] == "softmax", "N": _n_matters}


class HintEditorMixin:
    """Adds an editor row (guess, "add: higher", "add: lower", undo, clear) that rewrites the hints text.

    θ is disabled unless the policy is softmax, and N while a 'lower' hint bounds the secret
    from above (both then change nothing).
    """

    relevance = HINT_RELEVANCE

    def add_hint(self, guess: int, answer: str) -> None:
        answer = gn.parse_hints([(int(guess), answer)])[0][1]
        text = self.controls["hints"].value.strip()
        self.controls["hints"].value = f"{text}, {guess} {answer}" if text else f"{guess} {answer}"

    def undo_hint(self) -> None:
        items = [h for h in self.controls["hints"].value.split(",") if h.strip()]
        self.controls["hints"].value = ",".join(items[:-1]).strip()

    def clear_hints(self) -> None:
        self.controls["hints"].value = ""

    def hint_editor(self) -> widgets.Widget:
        # one press adds the hint: an answer picked without "add" would change nothing on screen (issue 24)
        guess = widgets.BoundedIntText(value=10, min=1, max=N_MAX, description="guess",
                                       layout=widgets.Layout(width="150px"))
        higher, lower = (widgets.Button(description=f"add: {word}", tooltip=tip, layout=widgets.Layout(width="110px"))
                         for word, tip in (("higher", "the host says the secret is higher (the guess was too small)"),
                                           ("lower", "the host says the secret is lower (the guess was too big)")))
        undo, clear = (widgets.Button(description=d, layout=widgets.Layout(width="80px")) for d in ("undo", "clear"))
        higher.on_click(lambda _b: self.add_hint(guess.value, "higher"))
        lower.on_click(lambda _b: self.add_hint(guess.value, "lower"))
        undo.on_click(lambda _b: self.undo_hint())
        clear.on_click(lambda _b: self.clear_hints())
        return widgets.HBox([guess, higher, lower, undo, clear])

    @property
    def widget(self) -> widgets.Widget:
        base = Panel.widget.fget(self)
        return widgets.VBox([self.hint_editor(), base])


# ---------------------------------------------------------------------------------
# Panel 1: Q, V and A of every guess in the current state
# ---------------------------------------------------------------------------------
@dataclass
class ValuesView:
    error: str | None
    state: gn.State | None
    policy: gn.Policy | None
    numbers: np.ndarray   # (m,) the candidates
    q: np.ndarray         # (m,)
    a: np.ndarray         # (m,)
    pi: np.ndarray        # (m,)
    v: float


LABEL_MAX = 7   # value labels are written on bars when m <= LABEL_MAX (text is the slow part of a draw)
A_LIM = 0.6     # |A| <= 0.6 in nearly every state; taller bars are clipped, their labels stay readable


@register("guess.values")
class ValuesPanel(HintEditorMixin, Panel):
    """Bars of Q(h, a) with V(h) and π(a|h) (top) and of A(h, a) coloured by sign (bottom)."""

    title = "Q, V and the advantage A = Q − V of every guess in the current state"
    figsize = (9.5, 5.2)
    bench_moves = [{"hints": h, "policy": p} for h, p in
                   [("8 higher, 12 lower", "uniform"), ("8 higher", "bisection"), ("5 higher, 15 lower", "softmax"),
                    ("8 higher, 12 lower", "bisection"), ("", "uniform"), ("3 higher", "softmax")]]

    def make_controls(self):
        return state_controls()

    def compute(self, N, tries, hints, policy, theta) -> ValuesView:
        sv = resolve_state(N, tries, hints, policy, theta)
        if sv.error:
            return ValuesView(sv.error, None, None, np.zeros(0, int), np.zeros(0), np.zeros(0), np.zeros(0), 0.0)
        av = gn.action_values(sv.state.candidates, sv.state.tries_left, sv.policy)
        pi = gn.policy_probs(sv.state.candidates, sv.policy)
        nums = np.array(sv.state.candidates)
        return ValuesView(None, sv.state, sv.policy, nums, np.array([av[c].q for c in nums]),
                          np.array([av[c].a for c in nums]), np.array([pi[c] for c in nums]),
                          av[int(nums[0])].v)

    def build(self, fig):
        self.ax_q, self.ax_a = fig.subplots(2, 1, sharex=True)
        ax = self.ax_q
        self.shade = [self.dynamic(ax.axvspan(0, 0, color="0.92", zorder=0)) for _ in range(2)] + \
                     [self.dynamic(self.ax_a.axvspan(0, 0, color="0.92", zorder=0)) for _ in range(2)]
        self.q_bars = self.dynamic(ax.add_collection(PolyCollection([], facecolors="tab:blue", alpha=0.75,
                                                                    label="Q(h, a)")))
        self.v_line = self.dynamic(ax.plot([], [], color="k", lw=2, label="V(h) = Σ π(a|h) Q(h, a)")[0])
        self.pi_dots = self.dynamic(ax.plot([], [], "o", color="tab:orange", ms=4, label="π(a|h)")[0])
        ax.set_ylim(0, 1.12)
        ax.set_ylabel("expected return")
        ax.legend(loc="upper right", fontsize=8, ncol=3)
        self.info = self.dynamic(ax.text(0.01, 0.97, "", transform=ax.transAxes, va="top", fontsize=9,
                                         family="monospace"))
        self.q_text = [self.dynamic(ax.text(0, 0, "", ha="center", va="bottom", fontsize=8)) for _ in range(LABEL_MAX)]
        ax = self.ax_a
        self.a_bars = self.dynamic(ax.add_collection(PolyCollection([], alpha=0.85)))
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_ylim(-A_LIM, A_LIM)   # fixed: a limit change would force a slow full redraw
        self.a_text = [self.dynamic(ax.text(0, 0, "", ha="center", fontsize=8)) for _ in range(LABEL_MAX)]
        ax.set_ylabel("advantage A(h, a)")
        ax.set_xlabel("guess a (grey: ruled out by the hints)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        self._n = None

    def draw(self, r: ValuesView):
        N = self.controls["N"].value
        if N != self._n:
            self._n = N
            self.ax_a.set_xlim(0.5, N + 0.5)
            self.request_full_redraw()
        if r.error:
            self.info.set_text("✗ " + r.error)
            self.info.set_color("tab:red")
            for coll in (self.q_bars, self.a_bars):
                coll.set_verts([])
            self.v_line.set_data([], [])
            self.pi_dots.set_data([], [])
            for t in self.q_text + self.a_text:
                t.set_text("")
            return
        x = r.numbers.astype(float)
        self.q_bars.set_verts(_rects(x, r.q))
        self.a_bars.set_verts(_rects(x, r.a))
        self.a_bars.set_facecolors([sign_color(a) for a in r.a])
        lo, hi = x[0] - 0.5, x[-1] + 0.5
        self.v_line.set_data([lo, hi], [r.v, r.v])
        self.pi_dots.set_data(x, r.pi)
        for span, (a, b) in zip(self.shade, [(0.5, lo), (hi, N + 0.5)] * 2):
            span.set_x(a)
            span.set_width(max(b - a, 0.0))
        label = r.state.m <= LABEL_MAX
        for i in range(LABEL_MAX):
            show = label and i < r.state.m
            self.q_text[i].set_text(f"{r.q[i]:.3f}" if show else "")
            self.a_text[i].set_text(f"{r.a[i]:+.3f}" if show else "")
            if show:
                self.q_text[i].set_position((x[i], r.q[i] + 0.01))
                self.a_text[i].set_position((x[i], np.clip(r.a[i], -A_LIM, A_LIM)))
                self.a_text[i].set_va("bottom" if r.a[i] >= 0 else "top")
        self.info.set_color("k")
        self.info.set_text(f"state h: {fmt_set(r.state.candidates)} (m = {r.state.m}), "
                           f"{r.state.tries_left} tries left, π = {r.policy}\n"
                           f"V(h) = {r.v:.4f}   best guess: {int(r.numbers[np.argmax(r.q)])}")


# ---------------------------------------------------------------------------------
# Panel 2: the one-step tree
# ---------------------------------------------------------------------------------
TREE_COLS = 5   # text is the slow part of a draw: at most 5 columns


def tree_columns(m: int, cols: int = TREE_COLS) -> np.ndarray:
    """Ranks shown in the tree: all when m <= cols, else both ends, the middle and evenly between."""
    if m <= cols:
        return np.arange(m)
    ranks = set(np.round(np.linspace(0, m - 1, cols)).astype(int))
    ranks.add((m - 1) // 2)
    ranks = sorted(ranks)
    while len(ranks) > cols:   # drop the one nearest to a neighbour, never the ends or the median
        gaps = [(ranks[i + 1] - ranks[i - 1], i) for i in range(1, len(ranks) - 1) if ranks[i] != (m - 1) // 2]
        ranks.pop(min(gaps)[1])
    return np.array(ranks)


@register("guess.tree")
class TreePanel(HintEditorMixin, Panel):
    """Root state -> each guess (Q, A; edge width ∝ π) -> the state each wrong answer leaves."""

    title = "What each guess leads to: one step of the game tree"
    figsize = (9.6, 4.2)
    bench_moves = ValuesPanel.bench_moves

    def make_controls(self):
        return state_controls()

    def compute(self, N, tries, hints, policy, theta):
        sv = resolve_state(N, tries, hints, policy, theta)
        if sv.error:
            return {"error": sv.error}
        branches = gn.one_step_tree(sv.state.candidates, sv.state.tries_left, sv.policy)
        shown = tree_columns(sv.state.m)
        return {"error": None, "state": sv.state, "policy": sv.policy, "v": branches[0].q - branches[0].a,
                "branches": [branches[i] for i in shown], "m": sv.state.m}

    def build(self, fig):
        ax = self.ax = fig.subplots()
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        box = dict(boxstyle="round,pad=0.35", fc="white", ec="0.3")
        self.edges = self.dynamic(ax.add_collection(LineCollection([], colors="0.55")))
        self.root = self.dynamic(ax.text(0.5, 0.92, "", ha="center", va="center", fontsize=9.5, bbox=dict(box)))
        self.nodes = [self.dynamic(ax.text(0, 0.6, "", ha="center", va="center", fontsize=9, bbox=dict(box)))
                      for _ in range(TREE_COLS)]
        self.leaves = [self.dynamic(ax.text(0, 0.3, "", ha="center", va="center", fontsize=8.5))
                       for _ in range(TREE_COLS)]
        ax.text(0.0, 0.0, "Top: the state h (candidates, tries left) and V(h). Middle: each guess a and Q(h, a), green "
                "where A = Q − V > 0, red where A < 0;\nedge width ∝ π(a|h). Bottom: a guess is correct with "
                "p = 1/m (reward 1); the answer ↓ 'lower' / ↑ 'higher' leaves that set, one try fewer: its value V.",
                fontsize=8, color="0.25")

    def draw(self, r):
        if r["error"]:
            self.root.set_text("✗ " + r["error"])
            self.root.get_bbox_patch().set_edgecolor("tab:red")
            for t in self.nodes + self.leaves:
                t.set_visible(False)
            self.edges.set_segments([])
            return
        s, k = r["state"], r["state"].tries_left
        self.root.get_bbox_patch().set_edgecolor("0.3")
        more = f" ({len(r['branches'])} of {r['m']} guesses shown)" if r["m"] > len(r["branches"]) else ""
        self.root.set_text(f"{fmt_set(s.candidates)}, {k} tries: V = {r['v']:.3f}{more}")
        cols = len(r["branches"])
        xs = (np.arange(cols) + 0.5) / cols
        segs, widths = [], []
        for i in range(TREE_COLS):
            node, leaf = self.nodes[i], self.leaves[i]
            node.set_visible(i < cols)
            leaf.set_visible(i < cols)
            if i >= cols:
                continue
            b, x = r["branches"][i], xs[i]
            node.set_x(x)
            leaf.set_x(x)
            node.set_text(f"{b.guess}: Q {b.q:.2f}")
            node.get_bbox_patch().set_facecolor({POS: "#d6e6f5", NEG: "#f8d8d8", ZERO: "#eeeeee"}[sign_color(b.a)])
            leaf.set_text(f"↓{fmt_set(b.lower)}" + (f": {b.v_lower:.2f}" if b.lower else "") +
                          f"\n↑{fmt_set(b.higher)}" + (f": {b.v_higher:.2f}" if b.higher else ""))
            segs += [[(0.5, 0.87), (x, 0.68)], [(x, 0.52), (x, 0.38)]]
            widths += [0.5 + 6 * b.pi, 1.0]
        self.edges.set_segments(segs)
        self.edges.set_linewidths(widths)


# ---------------------------------------------------------------------------------
# Panel 3: Monte-Carlo estimates vs exact values
# ---------------------------------------------------------------------------------
N_SAMPLES_MAX = 2000


@register("guess.mc")
class MonteCarloPanel(HintEditorMixin, Panel):
    """Exact A (bars) vs Â from n rollouts per guess (dots ± 2 SE); max error vs n (right)."""

    title = "Monte-Carlo Â = Q̂ − V̂ from n rollouts per guess converges to the exact A"
    figsize = (9.6, 4.0)
    bench_moves = [{"n": n, "seed": s} for n, s in [(50, 0), (200, 1), (1000, 2), (2000, 3), (100, 4), (500, 5)]]

    def make_controls(self):
        c = state_controls()
        c["n"] = slider("rollouts per guess n", 200, 1, N_SAMPLES_MAX, 1, integer=True)
        c["seed"] = slider("seed", 0, 0, 20, 1, integer=True)
        return c

    def compute(self, N, tries, hints, policy, theta, n, seed):
        sv = resolve_state(N, tries, hints, policy, theta)
        if sv.error:
            return {"error": sv.error}
        mc = gn.mc_action_values(sv.state.candidates, sv.state.tries_left, sv.policy, n, seed=seed)
        return {"error": None, "mc": mc, "err": mc.running_error(), "state": sv.state}

    def build(self, fig):
        self.ax, self.ax_err = fig.subplots(1, 2, width_ratios=[1.4, 1])
        ax = self.ax
        self.a_bars = self.dynamic(ax.add_collection(PolyCollection([], alpha=0.45)))
        self.err_bars = self.dynamic(ax.add_collection(LineCollection([], colors="k", lw=1.2)))
        self.a_dots = self.dynamic(ax.plot([], [], "o", color="k", ms=4, label="Â (Monte-Carlo) ± 2 SE")[0])
        ax.axhline(0, color="0.4", lw=0.8)
        ax.set_ylabel("advantage")
        ax.set_xlabel("guess a")
        ax.legend(loc="upper right", fontsize=8)
        self.info = self.dynamic(ax.text(0.01, 0.97, "", transform=ax.transAxes, va="top", fontsize=8.5,
                                         family="monospace"))
        ax = self.ax_err
        self.err_line = self.dynamic(ax.plot([], [], color="tab:purple", lw=1.2, label="max_a |Â − A|")[0])
        self.ref_line = self.dynamic(ax.plot([], [], "--", color="0.4", lw=1, label="∝ 1/√n")[0])
        self.n_marker = self.dynamic(ax.plot([], [], "o", color="tab:purple")[0])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(1, N_SAMPLES_MAX)
        ax.set_ylim(1e-3, 2)
        ax.set_xlabel("rollouts per guess n")
        ax.legend(loc="lower left", fontsize=8)          # the error falls from the upper left
        self._view = None

    def draw(self, r):
        if r["error"]:
            self.info.set_text("✗ " + r["error"])
            for coll in (self.a_bars, self.err_bars):
                coll.set_verts([]) if isinstance(coll, PolyCollection) else coll.set_segments([])
            for line in (self.a_dots, self.err_line, self.ref_line, self.n_marker):
                line.set_data([], [])
            return
        mc = r["mc"]
        x = np.array(mc.candidates, float)
        self.a_bars.set_verts(_rects(x, mc.a))
        self.a_bars.set_facecolors([sign_color(a) for a in mc.a])
        se_a = 2 * mc.se_q                      # ±2 SE of Q̂ (V̂ adds a little more)
        self.err_bars.set_segments(np.stack([np.stack([x, mc.a_hat - se_a], 1), np.stack([x, mc.a_hat + se_a], 1)], 1))
        self.a_dots.set_data(x, mc.a_hat)
        view = (x[0] - 0.6, x[-1] + 0.6,
                next(l for l in (0.25, 0.5, 1.0, 2.0) if max(np.abs(mc.a).max(), np.abs(mc.a_hat).max()) * 1.2 <= l or l == 2.0))
        if view != self._view:
            self._view = view
            self.ax.set_xlim(view[0], view[1])
            self.ax.set_ylim(-view[2], view[2])
        n = np.arange(1, mc.n + 1)
        err = np.maximum(r["err"], 1e-4)
        self.err_line.set_data(n, err)
        c = float(np.sqrt(np.maximum(mc.q * (1 - mc.q), 0.0)).max()) or 0.5
        self.ref_line.set_data([1, N_SAMPLES_MAX], [2 * c, 2 * c / np.sqrt(N_SAMPLES_MAX)])
        self.n_marker.set_data([mc.n], [err[-1]])
        self.info.set_text(f"{fmt_set(mc.candidates)}, {r['state'].tries_left} tries, n = {mc.n}\n"
                           f"V = {mc.v:.3f}   V̂ = {mc.v_hat:.3f}\nmax |Â − A| = {r['err'][-1]:.3f}")


# ---------------------------------------------------------------------------------
# Figures for slides (`make figures`)
# ---------------------------------------------------------------------------------
def fig_values():
    return ValuesPanel(N=20, tries=4, hints=SEED_HINT_TEXT, policy="uniform")


def fig_tree():
    return TreePanel(N=20, tries=4, hints=SEED_HINT_TEXT, policy="uniform")


def fig_mc():
    return MonteCarloPanel(N=20, tries=4, hints="5 higher, 15 lower", policy="uniform", n=500, seed=0)


# panels 4 and 5 (the estimators and training) live in grpo_lab.viz.guess_number_training
FIGURES = {"02_guess_values": fig_values, "02_guess_tree": fig_tree, "02_guess_mc": fig_mc}
