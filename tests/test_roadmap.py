"""The course map (notebook 00) stays consistent with the repository."""
from pathlib import Path

import pytest

from grpo_lab import roadmap
from grpo_lab.viz.family import POSITIONS, family_tree

ROOT = Path(__file__).resolve().parents[1]


def test_every_parent_is_a_method_and_every_method_is_placed():
    names = {m.name for m in roadmap.FAMILY}
    assert all(m.parent in names for m in roadmap.FAMILY if m.parent)
    assert set(POSITIONS) == names
    roots = [m.name for m in roadmap.FAMILY if m.parent is None and m.on_tree]
    assert roots == ["REINFORCE"]


@pytest.mark.parametrize("nb", [n for n, _, _ in roadmap.NOTEBOOKS])
def test_listed_notebooks_exist(nb):
    assert (ROOT / "notebooks" / f"{nb}.ipynb").exists()


def test_tables_and_tree():
    assert roadmap.symbol_table().loc["Â_i", "granularity"] == "sequence"
    assert roadmap.symbol_table().loc["ρ_{i,t}", "granularity"] == "token"
    assert roadmap.glossary_table().loc["advantage", "中文"] == "优势"
    fig = family_tree()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(any(t.startswith(m.name + " ") for t in texts) for m in roadmap.FAMILY) == len(roadmap.FAMILY)


def test_roadmap_lists_every_notebook_and_where_pytorch_starts():
    names = [n for n, _, _ in roadmap.NOTEBOOKS]
    assert names == sorted(names) and names[0] == "00_roadmap" and names[-1] == "09_after_the_lecture"
    assert {"04b_kl_penalty", "08_grpo_real_lm"} <= set(names)
    assert [n for n in names if n >= roadmap.TORCH_FROM][0].startswith("04")
    assert all(not n.startswith(("00", "01", "02", "03")) for n in names if n >= roadmap.TORCH_FROM)


def test_symbols_and_frameworks_are_defined_once():
    sym = roadmap.symbol_table()
    assert sym.loc["o_{i,t}", "granularity"] == "token"
    assert {"π_θ", "π_θold", "π_ref"} <= set(sym.index)
    g = roadmap.glossary_table()
    assert {"TRL", "verl", "vLLM", "steps_per_generation", "ppo_mini_batch_size"} <= set(g.index)
    assert len(set(g.index)) == len(g)                                   # one entry per term


def test_no_general_truths_the_course_contradicts():
    """Issue 24 item 7/8: a baseline lowers the variance only if it is good; ReST is not the baseline branch."""
    g = roadmap.glossary_table()
    assert "raises" in g.loc["baseline", "meaning"] and "only add noise" not in g.loc["reward-to-go", "meaning"]
    assert "ReST" not in {m.parent for m in roadmap.FAMILY}
    title = family_tree().axes[0].get_title()
    assert "every branch" not in title and "baseline branch" in title
    assert roadmap.headline_table().loc["GSPO", roadmap.HEADLINE_COLUMN] == "used to train Qwen3"
    assert "mixture-of-experts" in roadmap.paper_claims_table().loc["GSPO", "the paper's own claim"]
