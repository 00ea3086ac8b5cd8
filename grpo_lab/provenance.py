"""Where a cached data file came from, and which settings differ between the runs in it.

Every writer of ``grpo_lab/data/*`` (``scripts/make_*_runs.py``) stores :func:`code_version`
in the JSON beside its CSV, so a reader can tell which code made a file (issue 21: one cached
file once held runs of two code versions, and a check over their settings then depended on
how a pandas version counts missing columns). :func:`settings_that_differ` compares the
runs' settings as plain dictionaries, with no pandas in between.
"""
from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the libraries whose versions can change a cached number (recorded when they are importable)
LIBRARIES = ("torch", "numpy", "pandas", "transformers")


def git_commit(root: str | Path = ROOT) -> dict:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout at ``root`` (None outside git)."""
    def run(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    try:
        commit = run("rev-parse", "HEAD")
        dirty = bool(run("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


def code_version(root: str | Path = ROOT) -> dict:
    """The code that makes a cached file: grpo_lab's version, the git commit (and whether the
    tree had uncommitted changes), Python and the :data:`LIBRARIES` versions."""
    from grpo_lab import __version__

    out = {"grpo_lab": __version__, "git": git_commit(root), "python": platform.python_version()}
    for name in LIBRARIES:
        mod = sys.modules.get(name)
        if mod is None:
            try:
                mod = __import__(name)
            except ImportError:
                continue
        out[name] = getattr(mod, "__version__", None)
    return out


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def settings_that_differ(configs) -> dict:
    """Compare the settings dictionaries of several runs key by key.

    Returns ``{"differ": [...], "partial": [...]}``: ``differ`` lists the keys that every run
    records and whose values are not all equal (lists and tuples compare by their items);
    ``partial`` lists the keys only some runs record (a sign that the runs were made by
    different code versions). Plain dictionaries, so the answer does not depend on how a
    pandas version counts missing values.
    """
    configs = list(configs)
    if not configs or not all(isinstance(c, dict) for c in configs):
        raise TypeError(f"configs must be a non-empty sequence of dicts; got {configs!r:.200}")
    keys = sorted(set().union(*configs))
    partial = [k for k in keys if not all(k in c for c in configs)]
    differ = [k for k in keys if k not in partial and len({_canonical(c[k]) for c in configs}) > 1]
    return {"differ": differ, "partial": partial}
