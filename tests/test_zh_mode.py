"""Chinese mode shows Chinese: under ``set_language("zh")`` the package's prose — notebook 00's tables,
the metric guide's diagnoses and table, the panels' "What you should see" text, the widgets' prose
banners, the "Next" titles — has no run of English words. Code identifiers (``frac_informative``),
symbols, names (GRPO, Monte-Carlo, Qwen3) and quoted widget labels (English by design) are allowed.
The checks, hints and reveals of ``grpo_lab/exercises`` are tested the same way in ``tests/test_exercises_zh.py``."""
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest

from grpo_lab import roadmap, roadmap_zh, set_language, terms
from grpo_lab.exercises import notebooks as gen
from grpo_lab.lm import broken_runs, metric_guide
from grpo_lab.viz.panel_guides import PANEL_GUIDES

matplotlib.use("Agg")

# three or more English words in a row, hyphenated words included ("on-policy", "no gradient here")
_RUN = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?:-[A-Za-z]+)*(?:[ ,]+[A-Za-z]{2,}(?:-[A-Za-z]+)*){2,}(?![\w(])")
_TAGS = re.compile(r"<[^>]+>|&nbsp;")
NAMES = ("Dr. GRPO", "Hugging Face", "Monte-Carlo", "et al.")


def english_runs(text: str) -> list[str]:
    """The runs of English words in ``text`` outside code, math, HTML tags, quoted labels and names."""
    text = terms.prose(_TAGS.sub(" ", str(text)))
    for name in NAMES:
        text = text.replace(name, " ")
    return _RUN.findall(text)


def test_the_detector_finds_english_prose_and_spares_names_code_and_labels():
    assert english_runs("输入 two all-equal groups 时") == ["two all-equal groups"]
    assert english_runs("需要的形式是 a number") == []                       # two words: below the threshold
    assert english_runs("degenerate group: all rewards equal") != []
    assert english_runs("`frac_informative` 与 Dr. GRPO、Monte-Carlo、'stale (off-policy)'、*dual clip c*") == []
    assert english_runs("<b style='color:darkred'>退化组</b>") == []


@pytest.fixture
def zh():
    set_language("zh")
    yield
    set_language("en")


NAME_COLUMNS = ("出处", "source")       # authors and organisations ("Yu et al., ByteDance Seed"): names, not prose


def _cells(frame: pd.DataFrame) -> list[str]:
    body = frame.drop(columns=[c for c in NAME_COLUMNS if c in frame.columns])
    return [str(x) for x in [*frame.columns, frame.index.name, *frame.index, *body.to_numpy().ravel()]]


ROADMAP_TABLES = ("family_table", "glossary_table", "symbol_table", "headline_table", "paper_claims_table")


@pytest.mark.parametrize("name", ROADMAP_TABLES)
def test_notebook_00_tables_are_chinese_and_keep_their_english_keys(zh, name):
    table = getattr(roadmap, name)()
    shown = table.shown()
    bad = [c for c in _cells(shown) if english_runs(c)]
    assert not bad, f"{name}: English prose in Chinese mode: {bad}"
    assert re.search(r"[\u4e00-\u9fff]", table._repr_html_()) and table.shape == shown.shape
    assert list(table.columns) == list(getattr(roadmap, name)().columns)          # code reads the English labels


def test_the_code_of_notebook_00_still_reads_english_labels_in_chinese_mode(zh):
    assert roadmap.family_table().loc["GRPO", "grows from"] == "PPO"
    assert roadmap.symbol_table().loc["Â_i", "granularity"] == "sequence"
    assert roadmap.symbol_table().shown().loc["Â_i", "粒度"] == "序列级"
    assert roadmap.headline_table().loc["DAPO", roadmap.HEADLINE_COLUMN] == "50 points"
    assert roadmap.headline_table().shown().loc["DAPO"].iloc[-1] == "50 分"          # lecture notes 004: 拿 50 分


def test_every_roadmap_row_has_its_chinese():
    assert set(roadmap_zh.FAMILY_CHANGES) == {m.name for m in roadmap.FAMILY}
    assert set(roadmap_zh.GLOSSARY_MEANING) == {g[0] for g in roadmap.GLOSSARY}
    assert set(roadmap_zh.SYMBOL_MEANING) == {s[0] for s in roadmap.SYMBOLS}
    assert set(roadmap_zh.NOTEBOOKS) == {n for n, _, _ in roadmap.NOTEBOOKS}
    assert set(roadmap_zh.HEADLINE_RESULT) == {h[0] for h in roadmap.HEADLINES}
    assert set(roadmap_zh.PAPER_CLAIM) == {c[0] for c in roadmap.PAPER_CLAIMS}


def test_notebook_table_and_next_links_are_chinese(zh):
    md = roadmap.notebook_table()
    assert md.startswith("| 笔记本 | 主题 | 它回答的问题 | 代码 |")
    assert not [line for line in md.splitlines() if english_runs(line.split("|", 2)[-1])], md
    set_language("en")
    assert "| notebook | topic |" in roadmap.notebook_table()
    nxt = [c.source for c in gen.exercise_cells("03", lang="zh") if c.id.startswith("nav-")]
    assert nxt and not english_runs(nxt[0].split("—")[-1]), nxt
    assert [c.source for c in gen.exercise_cells("03", lang="en") if c.id.startswith("nav-")] == \
        ["**Next:** [04_grpo_loss](04_grpo_loss.ipynb) — Anatomy of the GRPO loss"]


@pytest.fixture(scope="module")
def runs():
    return broken_runs.load()


def test_diagnoses_are_chinese_and_keep_yes_no(zh, runs):
    drift = pd.DataFrame({"step": np.arange(40), "frac_informative": 0.5, "adv_abs_mean": 0.4,
                          "len_incorrect": np.linspace(3, 8, 40)})
    frames = [metric_guide.diagnose(d) for _, d in runs.groupby("run")] + [metric_guide.diagnose(drift)]
    for d in frames:
        assert set(d["answer"]) <= {"yes", "no"}                                     # what the notebooks assert on
        shown = d.shown()
        assert list(shown.columns) == ["问题", "测得", "结论", "若是，怎么办"] and set(shown["结论"]) <= {"是", "否"}
        assert not [c for c in _cells(shown) if english_runs(c)], shown.to_string()
    assert metric_guide.diagnose(drift)["answer"].tolist() == ["no", "no", "yes"]


def test_guide_table_is_chinese(zh):
    shown = metric_guide.guide_table().shown()
    assert list(shown.columns) == ["含义", "上升 / 下降意味着什么", "缓存的正常运行（结束时）", "危险信号"] and shown.index.name == "指标"
    assert not [c for c in _cells(shown) if english_runs(c)]


@pytest.mark.parametrize("key", sorted(PANEL_GUIDES))
def test_what_you_should_see_is_chinese(zh, key):
    text = " ".join(f"{k} {v}" for k, v in PANEL_GUIDES[key].lines())
    assert not english_runs(text), (key, english_runs(text))


def test_widget_banners_follow_the_language(zh):
    from grpo_lab.viz.advantages import DifficultyPanel, GroupEditorPanel, RemediesPanel
    from grpo_lab.viz.family_panels import FrozenBatchPanel
    from grpo_lab.viz.length_bias import DriftPanel, GroupWeightsPanel

    degenerate = GroupEditorPanel(G=4, r0=True, r1=True, r2=True, r3=True)
    assert "退化组" in degenerate.readout.value
    weights = GroupWeightsPanel()
    panels = [degenerate, GroupEditorPanel(), DifficultyPanel(), FrozenBatchPanel(), DriftPanel(), RemediesPanel(), weights]
    for p in panels:
        html = " ".join(w.value for w in (getattr(p, "readout", None), getattr(p, "desc_html", None)) if w is not None)
        assert re.search(r"[\u4e00-\u9fff]", html), type(p).__name__
        assert not english_runs(html), (type(p).__name__, english_runs(html))
    set_language("en")
    d = DifficultyPanel()
    assert "lone success" in d.readout.value
    assert "长 / 短错误回答" in weights.readout.value                # the default group has two wrong answers
