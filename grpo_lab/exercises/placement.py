"""Where each exercise goes: predictions into the notebook body, the rest into the Exercises section.

A *predict* exercise is worth something only before the student has seen its answer, so it is
placed in the body, immediately **before the cell that reveals the answer** (the anchor),
identified by that cell's stable id (nbformat cell ids; the body's authors keep them). The
generator (:mod:`grpo_lab.exercises.notebooks`) inserts the exercise's cells there; by-hand
and implement exercises stay in the Exercises section at the end of their notebook.

Each entry lists candidates in order of preference: the first whose notebook exists in the
folder and holds the anchor cell wins. That is how a topic can move to a notebook that does
not exist yet: the KL exercises name ``04b_kl_penalty`` first (the KL part of 04, split off
with the same cell ids) and ``04_grpo_loss`` second, so they follow the cells wherever they
are. Exercise ids never change; the number ("Exercise 4b.2") is the exercise's place in the page
order of the notebook that shows it, so a student meets 4b.1, 4b.2, … in that order.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

KL_SPLIT = "04b_kl_penalty"     # the KL part of notebook 04 once it is split off (same cell ids)

# predict exercise id -> ((notebook stem, id of the body cell that reveals its answer), …) in order of preference
ANCHORS: dict[str, tuple[tuple[str, str], ...]] = {
    "roadmap.grpo_parent": (("00_roadmap", "0ee505cf"),),           # the family tree figure
    "roadmap.granularity": (("00_roadmap", "b73b791d"),),           # "## Symbols and their granularity"
    "bandit.same_mean": (("01_bandit_baselines", "8787e421"),),     # "## 3 · Same mean, different variance"
    "guess.sign_a9": (("02_advantage_guess_number", "9124ded0"),),  # "## 1 · Exact Q, V and A"
    "advantages.flip_one": (("03_group_advantage", "38f52761"),),   # "## 1 · The seed's worked groups"
    "loss.clip_gradient": (("04_grpo_loss", "249834e3"),),          # "## 2 · Clipping"
    "loss.clip_negative": (("04_grpo_loss", "249834e3"),),
    "credit.emergence": (("04_grpo_loss", "87effce3"),),            # the credit-emergence sweep
    "loss.first_step": (("04_grpo_loss", "9b865848"),),             # "## 4 · Two classic confusions"
    "kl.placement": ((KL_SPLIT, "99d3ef23"), ("04_grpo_loss", "99d3ef23")),   # "## 6 · KL-in-loss vs KL-in-reward"
    "length.push_harder": (("05_length_bias", "9b8ad71d"),),        # the push table of §1
    "lm.kl_sign": (("06_grpo_llm", "4110b7b4"),),                   # "## 3 · Train, watching it live" (KL column)
    "lm.broken_run": (("06_grpo_llm", "557f372d"),),                # "Three deliberately broken runs"
    "real.extract_answer": (("08_grpo_real_lm", "d8f04374"),),      # "## 2 · The verifier reads a free-text reply"
    "beyond.sapo_pushes": (("09_after_the_lecture", "c8ea00ce"),),   # the push curves of §1
    "beyond.clip_higher_mu1": (("09_after_the_lecture", "dd10f2de"),),   # TRL's defaults table (num_iterations row)
}

# exercises of the Exercises section that go to another notebook than their home one when it exists
SECTIONS: dict[str, tuple[str, ...]] = {
    "kl.k3": (KL_SPLIT,),
    "kl.k3_value": (KL_SPLIT,),
}

DEFAULT_FOLDER = Path(__file__).resolve().parents[2] / "notebooks"

_IDS: dict[tuple[str, float], frozenset] = {}


def cell_ids(path) -> frozenset:
    """The cell ids of a notebook (cached by path and modification time); empty if it does not exist."""
    path = Path(path)
    if not path.exists():
        return frozenset()
    key = (str(path.resolve()), path.stat().st_mtime)
    if key not in _IDS:
        _IDS[key] = frozenset(c.get("id") for c in nbformat.read(path, as_version=4).cells)
    return _IDS[key]


def cell_order(path) -> list:
    """The cell ids of a notebook in page order (empty if it does not exist)."""
    path = Path(path)
    return [c.get("id") for c in nbformat.read(path, as_version=4).cells] if path.exists() else []


def home_stem(notebook: str, folder) -> str | None:
    """The stem of notebook ``NN`` in ``folder`` (``03`` -> ``03_group_advantage``), None if absent."""
    hits = sorted(p.stem for p in Path(folder).glob(f"{notebook}_*.ipynb"))
    return hits[0] if hits else None


def anchor(exercise_id: str, folder=None) -> tuple[str, str] | None:
    """(notebook stem, anchor cell id) where a predict exercise is placed, or None (no anchor found: Exercises section)."""
    folder = Path(folder) if folder is not None else DEFAULT_FOLDER
    for stem, cell in ANCHORS.get(exercise_id, ()):
        if cell in cell_ids(folder / f"{stem}.ipynb"):
            return stem, cell
    return None


def section(exercise, folder=None) -> str | None:
    """The stem of the notebook whose Exercises section holds ``exercise`` (when it has no anchor)."""
    folder = Path(folder) if folder is not None else DEFAULT_FOLDER
    for stem in SECTIONS.get(exercise.id, ()):
        if (folder / f"{stem}.ipynb").exists():
            return stem
    return home_stem(exercise.notebook, folder)
