"""Regenerate ``figures/`` deterministically from the same panels the notebooks use.

Every module in :mod:`grpo_lab.viz` may define ``FIGURES = {name: builder}``, where a
builder takes no argument and returns a :class:`~grpo_lab.viz.panel.Panel` or a matplotlib
``Figure``. ``python -m grpo_lab figures --out figures [--only PATTERN]`` writes
``NAME.png`` (and ``NAME.svg`` with ``--svg``) for each.
"""
from __future__ import annotations

import fnmatch
import importlib
import pkgutil
from pathlib import Path

import matplotlib

import grpo_lab.viz as viz


def collect() -> dict:
    """name -> builder, from every viz module's ``FIGURES``."""
    out = {}
    for mod in sorted(pkgutil.iter_modules(viz.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"grpo_lab.viz.{mod.name}")
        for name, builder in getattr(module, "FIGURES", {}).items():
            if name in out:
                raise ValueError(f"figure name {name!r} is defined twice")
            out[name] = builder
    return dict(sorted(out.items()))


def render(out_dir="figures", only: str | None = None, svg: bool = False, dpi: int = 110) -> list[Path]:
    """Build and save the figures whose names match ``only`` (a glob). Returns the paths."""
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    # Fixed metadata and hash salt so the files are byte-for-byte reproducible.
    matplotlib.rcParams["svg.hashsalt"] = "grpo_lab"
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    figures = collect()
    names = [n for n in figures if only is None or fnmatch.fnmatch(n, only)]
    if not names:
        raise ValueError(f"only={only!r} matches no figure; known: {', '.join(figures)}")
    for name in names:
        obj = figures[name]()
        fig = getattr(obj, "fig", obj)
        save = getattr(obj, "savefig", fig.savefig)
        for ext in ("png", "svg") if svg else ("png",):
            path = out / f"{name}.{ext}"
            save(path, dpi=dpi, metadata={"Software": None} if ext == "png" else {"Date": None})
            written.append(path)
        plt.close(fig)
    return written
