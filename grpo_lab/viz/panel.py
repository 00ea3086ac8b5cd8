"""The widget-panel pattern every notebook uses: controls -> compute -> update artists.

A :class:`Panel` owns a dict of ipywidgets controls and one matplotlib figure whose
artists are created once in :meth:`Panel.build`. Moving a control calls :meth:`refresh`,
which runs the pure :meth:`compute` (returns numbers, no drawing) and then :meth:`draw`,
which only *updates* existing artists (``set_data``, bar heights, text). Nothing is
rebuilt. Artists that move are registered with :meth:`Panel.dynamic`; when no axis
limits changed, an update restores the cached static background (axes, ticks, labels:
text is the slow part of an Agg draw) and redraws only those artists (blitting), else
it asks for a full redraw. Measured: a full Agg draw of one axes costs ≈ 15–35 ms here,
a blit ≈ 2–5 ms.

Headless use (tests, benchmarks): ``panel.set(theta=0.3)`` changes controls and refreshes
once; ``panel.result`` holds the last computed numbers. In JupyterLab with
``%matplotlib widget`` (ipympl) ``panel.widget`` is the controls above the live canvas.
"""
from __future__ import annotations

import contextlib
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt

# JupyterLab's notebook column: wider figures scroll sideways (tests/test_viz_layout.py checks).
MAX_FIG_WIDTH_PX = 968


def fig_width_px(fig) -> float:
    """Width of ``fig`` in CSS pixels as the notebook shows it (inches × the figure's dpi)."""
    return float(fig.get_size_inches()[0] * fig.dpi)



class Panel:
    """Base class: subclasses implement ``make_controls``, ``build``, ``compute``, ``draw``.

    ``bench_moves`` lists control settings the latency benchmark cycles through.
    """

    title: str = ""
    figsize: tuple[float, float] = (9.0, 3.6)
    bench_moves: list[dict[str, Any]] = []
    what_to_see = None      # a grpo_lab.viz.guide.WhatToSee, shown under the figure
    # control name -> predicate on the control values: while it is False the control cannot change
    # anything, so it is disabled (greyed out) rather than left to move nothing on a key press
    relevance: dict[str, Any] = {}

    def __init__(self, **initial: Any):
        self.controls: dict[str, widgets.ValueWidget] = self.make_controls()
        unknown = set(initial) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this panel has {sorted(self.controls)}")
        for name, value in initial.items():
            self.controls[name].value = value
        with plt.ioff():
            self.fig = plt.figure(figsize=self.figsize, layout="constrained")
        if self.title:
            self.fig.suptitle(self.title)
        self._dynamic: list = []
        self._background = None
        self._full_redraw = True
        self.build(self.fig)
        self.n_updates = 0
        self.n_full_draws = 0
        self.result: Any = None
        self._held = False
        self.fig.canvas.mpl_connect("draw_event", self._on_draw)
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.refresh()

    # -- to implement -------------------------------------------------------------
    def make_controls(self) -> dict[str, widgets.ValueWidget]:
        raise NotImplementedError

    def build(self, fig) -> None:
        """Create every axis and artist once."""
        raise NotImplementedError

    def compute(self, **values: Any) -> Any:
        """Pure: control values -> numbers (a dataclass or dict)."""
        raise NotImplementedError

    def draw(self, result: Any) -> None:
        """Update the artists made in :meth:`build` in place."""
        raise NotImplementedError

    # -- machinery ----------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        return {name: c.value for name, c in self.controls.items()}

    def dynamic(self, *artists):
        """Mark artists that :meth:`draw` updates; they are blitted over a cached background."""
        for artist in artists:
            artist.set_animated(True)
            self._dynamic.append(artist)
        return artists[0] if len(artists) == 1 else artists

    def request_full_redraw(self) -> None:
        """Call from :meth:`draw` when something static (ticks, titles) changed."""
        self._full_redraw = True

    def _limits(self):
        return [(ax.get_xlim(), ax.get_ylim()) for ax in self.fig.axes]

    def _update_relevance(self, values: dict[str, Any]) -> None:
        for name, matters in self.relevance.items():
            self.controls[name].disabled = not matters(values)

    def refresh(self) -> None:
        self._update_relevance(self.values())
        before = self._limits()
        self.result = self.compute(**self.values())
        self.draw(self.result)
        self.n_updates += 1
        if self._full_redraw or self._background is None or self._limits() != before:
            self._full_redraw = False
            self.fig.canvas.draw_idle()
        else:
            canvas = self.fig.canvas
            canvas.restore_region(self._background)
            for artist in self._dynamic:
                self.fig.draw_artist(artist)
            canvas.blit(self.fig.bbox)

    def savefig(self, path, **kwargs) -> None:
        """Save the figure with every artist drawn (animated artists included)."""
        self._saving = True
        for artist in self._dynamic:
            artist.set_animated(False)
        try:
            self.fig.savefig(path, **kwargs)
        finally:
            for artist in self._dynamic:
                artist.set_animated(True)
            self._saving = False
            self._full_redraw = True

    def _on_draw(self, _event) -> None:
        if getattr(self, "_saving", False):
            return
        # A full draw renders everything but the animated artists: cache that as the
        # background, then draw the animated ones on top. The first full draw fixes the
        # layout; later ones keep it (re-running constrained layout per move is slow).
        self.n_full_draws += 1
        self.fig.set_layout_engine("none")
        self._background = self.fig.canvas.copy_from_bbox(self.fig.bbox)
        for artist in self._dynamic:
            self.fig.draw_artist(artist)

    def _on_change(self, _change=None) -> None:
        if not self._held:
            self.refresh()

    @contextlib.contextmanager
    def hold(self):
        """Change several controls, refresh once at the end."""
        self._held = True
        try:
            yield self
        finally:
            self._held = False
        self.refresh()

    def set(self, **values: Any) -> "Panel":
        """Set controls by name (as a student's slider move would) and refresh once."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this panel has {sorted(self.controls)}")
        with self.hold():
            for name, value in values.items():
                self.controls[name].value = value
        return self

    @property
    def widget(self) -> widgets.Widget:
        """Controls above the figure. With ipympl the canvas is itself a widget."""
        canvas = self.fig.canvas
        if isinstance(canvas, widgets.DOMWidget):
            canvas.header_visible = False
            canvas.toolbar_position = "right"
            view = canvas
        else:  # inline backends: show a static snapshot (no live updates)
            view = widgets.Output()
            with view:
                from IPython.display import display

                display(self.fig)
        return widgets.VBox([widgets.HBox(list(self.controls.values()),
                                          layout=widgets.Layout(flex_flow="row wrap")), view])

    def view(self) -> widgets.Widget:
        """What a notebook cell shows: :attr:`widget` with the "What you should see" box under it."""
        if self.what_to_see is None:
            return self.widget
        return widgets.VBox([self.widget, self.what_to_see.widget()])

    def _ipython_display_(self):
        from IPython.display import display

        display(self.view())


class ReadoutPanel(Panel):
    """A Panel with an HTML readout line between the controls and the figure.

    Numbers that change on every move go there rather than into figure text: Agg renders
    text at ≈ 0.08 ms per character, so a four-line caption alone would cost ≈ 10 ms.
    """

    def __init__(self, **initial):
        self.readout = widgets.HTML()
        super().__init__(**initial)

    def _rows(self) -> list:
        return [widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))]

    @property
    def widget(self):
        view = super().widget.children[1]
        return widgets.VBox(self._rows() + [self.readout, view])


def slider(description: str, value, lo, hi, step, *, fmt: str | None = None, integer: bool = False):
    """A continuous-update slider with a readable label width."""
    cls = widgets.IntSlider if integer else widgets.FloatSlider
    kw = dict(value=value, min=lo, max=hi, step=step, description=description,
              continuous_update=True, style={"description_width": "initial"},
              layout=widgets.Layout(width="300px"))
    if fmt is not None:
        kw["readout_format"] = fmt
    return cls(**kw)


def dropdown(description: str, options, value=None):
    return widgets.Dropdown(options=options, value=value if value is not None else list(options)[0],
                            description=description, style={"description_width": "initial"})
