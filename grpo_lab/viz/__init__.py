"""Plot builders and widget panels.

``PANELS`` maps a short name to each panel class; the latency benchmark and the browser
tests iterate over it. Panel modules register themselves when imported here.
"""
from grpo_lab.viz.fonts import use_cjk_fallback
from grpo_lab.viz.panel import Panel

use_cjk_fallback()  # Chinese text in a figure renders (grpo_lab.viz.fonts); Latin text unchanged

PANELS: dict[str, type[Panel]] = {}


def register(name: str):
    """Add a panel class to :data:`PANELS`; attach its "What you should see" text from ``panel_guides``."""
    def deco(cls):
        from grpo_lab.viz.panel_guides import PANEL_GUIDES

        PANELS[name] = cls
        if cls.__dict__.get("what_to_see") is None:
            cls.what_to_see = PANEL_GUIDES.get(name)
        return cls
    return deco


def all_panels() -> dict[str, type[Panel]]:
    """Import every panel module and return the registry."""
    import importlib
    import pkgutil

    import grpo_lab.viz as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name not in ("panel", "fonts"):
            importlib.import_module(f"grpo_lab.viz.{mod.name}")
    return PANELS
