"""notebooks/zh stays in sync with notebooks/: code identical, every markdown cell translated
from the English text it records (grpo_lab.translations). Fix a failure with
`python -m grpo_lab translations sync --report` (see README, "Updating the Chinese edition")."""
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab import translations as T
from grpo_lab.translations_cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = T.english_notebooks(ROOT / "notebooks")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _skip_if_pending(path):
    """A notebook listed in translations.PENDING has no twin yet; once it has one, the entry must go."""
    if path.name in T.PENDING:
        assert not T.zh_path(path).exists(), f"{path.name} has a Chinese twin now: remove it from translations.PENDING"
        pytest.skip(f"Chinese twin pending: {T.PENDING[path.name]}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_notebook_in_sync(path):
    problems = [p for p in T.check(path) if not (T.BACKLOG and p.kind in T.BACKLOG_KINDS)]
    if path.name in T.PENDING:
        assert [p.kind for p in problems] == ["pending"], "\n".join(map(str, problems))
    _skip_if_pending(path)
    assert not problems, "\n" + "\n".join(map(str, problems))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_links_resolve_from_notebooks_zh(path):
    """Relative links in a translation resolve from notebooks/zh (other notebooks -> zh twins).
    A link to a notebook that the English folder does not have yet either is not a translation
    problem and is left to the English notebook's owner."""
    _skip_if_pending(path)
    zh = nbformat.read(T.zh_path(path), as_version=4)
    for k, cell in enumerate(zh.cells):
        if cell.cell_type != "markdown":
            continue
        for target in _LINK.findall(cell.source):
            target = target.split("#")[0]
            if re.match(r"[a-z]+:", target) or not target:
                continue
            if target.endswith(".ipynb") and "/" not in target and (not (path.parent / target).exists()
                                                                     or target in T.PENDING):
                continue                        # a twin still pending: the link is the translator's job
            assert (T.zh_path(path).parent / target).exists(), f"{T.zh_path(path).name} cell {k}: broken link {target}"


def test_every_english_notebook_has_a_twin_and_no_orphans():
    zh = {p.name for p in (ROOT / "notebooks" / "zh").glob("*.ipynb")}
    assert zh == {p.name for p in NOTEBOOKS} - set(T.PENDING)
    every = {p.name for p in T.english_notebooks(ROOT / "notebooks", pending=True)}
    assert set(T.PENDING) <= every, "translations.PENDING names a notebook that does not exist"


def test_a_pending_twin_is_reported_as_pending_not_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(T, "PENDING", {"99_new.ipynb": "a new notebook, translated later"})   # PENDING may be empty
    en = tmp_path / "notebooks" / next(iter(T.PENDING))
    other = tmp_path / "notebooks" / "03_group_advantage.ipynb"
    en.parent.mkdir(parents=True)
    for p in (en, other):
        shutil.copy(ROOT / "notebooks" / other.name, p)
    assert [p.kind for p in T.check(en)] == ["pending"] and "PENDING" in str(T.check(en)[0])
    assert [p.kind for p in T.check(other)] == ["missing"]


def test_pending_translations_are_real_notebooks_without_a_twin_yet():
    """A notebook waits in T.PENDING only while its twin is missing: drop the name once translated."""
    for name in T.PENDING:
        en = ROOT / "notebooks" / name
        assert en.exists(), name
        assert not T.zh_path(en).exists(), f"{name} is translated: remove it from grpo_lab.translations.PENDING"
    assert {p.name for p in T.english_notebooks(ROOT / "notebooks", pending=True)} - {p.name for p in NOTEBOOKS} \
        == set(T.PENDING)


# --- the check must fail on stale copies: deliberately broken twins in tmp_path -------------

@pytest.fixture
def pair(tmp_path):
    """A copy of notebooks/03 and its twin in tmp_path (notebooks/ layout)."""
    en = tmp_path / "notebooks" / "03_group_advantage.ipynb"
    en.parent.joinpath("zh").mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / en.name, en)
    shutil.copy(T.zh_path(ROOT / "notebooks" / en.name), T.zh_path(en))
    # the mechanism under test starts from a twin that is fully up to date: while T.BACKLOG holds
    # stale cells, mark the copy's translations as caught up with today's English text
    en_nb, zh_nb = (nbformat.read(p, as_version=4) for p in (en, T.zh_path(en)))
    by_id = {c.id: c for c in en_nb.cells}
    for z in zh_nb.cells:
        if z.cell_type == "markdown" and z.metadata.get("zh", {}).get("generated") is None:
            z.metadata["zh"] = {"source_sha": T.source_sha(by_id[z.id].source)}
            if not T._CJK.search(z.source):
                z.source = "（译文）" + z.source
    nbformat.write(zh_nb, T.zh_path(en))
    assert T.check(en) == []
    return en


def _edit(path, which, fn):
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == which and not T.is_language_cell(c)]
    fn(cells[1])
    nbformat.write(nb, path)
    return next(i for i, c in enumerate(nb.cells) if c is cells[1])


def test_changed_english_markdown_makes_its_translation_stale(pair):
    idx = _edit(pair, "markdown", lambda c: setattr(c, "source", c.source + "\n\nOne more sentence."))
    before = nbformat.read(T.zh_path(pair), as_version=4).cells[idx + 1].source
    problems = T.check(pair)
    assert [(p.kind, p.cell) for p in problems] == [("stale", idx + 1)]      # +1: the language cell
    msg = str(problems[0])
    heading = T._first_line(nbformat.read(pair, as_version=4).cells[idx].source)
    assert "03_group_advantage.ipynb" in msg and f"cell {idx + 1}" in msg and heading in msg
    # sync keeps the old translation (the translator edits it) and the cell stays stale
    T.sync(pair.parent)
    assert [p.kind for p in T.check(pair)] == ["stale"]
    assert nbformat.read(T.zh_path(pair), as_version=4).cells[idx + 1].source == before


def test_changed_code_cell_fails_until_sync(pair):
    idx = _edit(pair, "code", lambda c: setattr(c, "source", c.source + "\nassert True  # changed"))
    problems = T.check(pair)
    assert [(p.kind, p.cell) for p in problems] == [("code", idx + 1)]
    assert "03_group_advantage.ipynb" in str(problems[0])
    assert T.sync(pair.parent) == [T.zh_path(pair)]
    assert T.check(pair) == []
    assert T.sync(pair.parent) == []                                          # idempotent


def test_code_edited_in_the_chinese_notebook_is_caught(pair):
    _edit(T.zh_path(pair), "code", lambda c: setattr(c, "source", "print('不一样')"))
    assert [p.kind for p in T.check(pair)] == ["code"]


def test_inserted_english_cell_is_untranslated_and_others_keep_their_translation(pair):
    nb = nbformat.read(pair, as_version=4)
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("## A new English section"))
    nbformat.write(nb, pair)
    assert [p.kind for p in T.check(pair)] == ["structure"]                  # before sync: out of line
    T.sync(pair.parent)
    problems = T.check(pair)
    assert [(p.kind, p.cell, p.line) for p in problems] == [("untranslated", 4, "## A new English section")]
    zh = nbformat.read(T.zh_path(pair), as_version=4)
    assert zh.cells[4].source == "## A new English section" and zh.cells[4].metadata["zh"]["untranslated"]
    assert all(c.source == e.source for c, e in zip(zh.cells[1:], nb.cells) if c.cell_type == "code")


def test_translation_is_found_again_when_english_cell_ids_change(pair):
    nb = nbformat.read(pair, as_version=4)
    for k, c in enumerate(nb.cells):
        c.id = f"new{k}"
    nbformat.write(nb, pair)
    T.sync(pair.parent)
    assert T.check(pair) == []


def test_language_cell_is_required(pair):
    zh = nbformat.read(T.zh_path(pair), as_version=4)
    del zh.cells[0]
    nbformat.write(zh, T.zh_path(pair))
    assert [p.kind for p in T.check(pair)][:1] == ["language"]
    T.sync(pair.parent)
    assert T.check(pair) == []


def test_export_import_round_trip_and_report_cli(pair, capsys):
    _edit(pair, "markdown", lambda c: setattr(c, "source", c.source + "\nOne more sentence."))
    T.sync(pair.parent)
    folder = str(pair.parent)
    assert cli(["report", "--notebooks", folder]) == 1
    out = capsys.readouterr().out
    assert "re-translate" in out and "03_group_advantage.ipynb cell" in out
    text = T.export_cells(pair.parent)
    assert text.count("<!-- zh-cell ") == 1 and "One more sentence." in text and "old translation" in text
    marker = text.splitlines()[0]
    assert T.import_cells(marker + "\n## 1 · 讲义的算例（L9 p.38）\n再多一句。\n", pair.parent) == [marker.split()[2] + " " + marker.split()[3]]
    assert T.check(pair) == [] and cli(["report", "--notebooks", folder]) == 0
    with pytest.raises(ValueError, match="markers"):
        T.import_cells("no markers here", pair.parent)


def test_import_records_the_english_version_the_translator_saw(pair):
    """English edited between export and import: the new translation is stale at once."""
    text = T.export_cells(pair.parent, include_all=True)
    _edit(pair, "markdown", lambda c: setattr(c, "source", c.source + " (edited later)"))
    T.sync(pair.parent)
    T.import_cells(text.replace("# 03 · Group advantages", "# 03 · 组内优势"), pair.parent)
    assert [p.kind for p in T.check(pair)] == ["stale"]


def test_cli_rejects_a_missing_folder(capsys):
    with pytest.raises(SystemExit):
        cli(["report", "--notebooks", "/no/such/folder"])
    assert "--notebooks" in capsys.readouterr().err


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chinese_notebook_committed_without_outputs(path):
    from grpo_lab.notebook_tools import dirty_cells

    _skip_if_pending(path)
    assert dirty_cells(T.zh_path(path)) == [], f"{T.zh_path(path).name}: clear outputs with `make clean-notebooks`"


def test_readme_zh_is_linked_from_the_top_of_readme_and_its_links_resolve():
    assert "(README.zh.md)" in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[0]
    text = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    targets = [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:|#", t)]
    assert [t for t in targets if not (ROOT / t).exists()] == []
    for path in NOTEBOOKS:                      # every notebook, and its Chinese twin (once it has one)
        if path.name not in T.PENDING:
            assert f"(notebooks/zh/{path.name})" in text, path.name


# --- property: whatever the English side does, sync keeps what is still valid ---------------

_EDITS = st.lists(st.tuples(st.sampled_from(["insert_md", "insert_code", "delete", "edit", "keep"]),
                            st.integers(0, 30)), max_size=8)


def _toy_pair():
    cells = []
    for k in range(6):
        cells.append(nbformat.v4.new_markdown_cell(f"## Section {k}"))
        cells.append(nbformat.v4.new_code_cell(f"x{k} = {k}"))
    en = nbformat.v4.new_notebook(cells=cells)
    zh = T.synced(en)
    for e, c in zip(en.cells, zh.cells[1:]):
        if c.cell_type == "markdown":
            c.source = e.source.replace("Section", "第") + " 节"
            c.metadata["zh"] = {"source_sha": T.source_sha(e.source)}
    return en, zh


@settings(max_examples=60, deadline=None)
@given(edits=_EDITS)
def test_sync_keeps_every_valid_translation_and_flags_the_rest(edits):
    en, zh = _toy_pair()
    translated = {c.id: c.source for c in zh.cells if c.cell_type == "markdown"}
    fresh = set(translated)                   # English cells whose translation is still valid
    for n, (op, pos) in enumerate(edits):
        pos %= len(en.cells) + 1
        if op == "insert_md":
            en.cells.insert(pos, nbformat.v4.new_markdown_cell(f"New text {n}"))
        elif op == "insert_code":
            en.cells.insert(pos, nbformat.v4.new_code_cell(f"y{n} = {n}"))
        elif op in ("delete", "edit") and pos < len(en.cells):
            if op == "delete":
                del en.cells[pos]
            else:
                en.cells[pos].source += f" (edited {n})"
                fresh.discard(en.cells[pos].id)
    new = T.synced(en, zh)
    assert T.is_language_cell(new.cells[0]) and len(new.cells) == len(en.cells) + 1
    for e, z in zip(en.cells, new.cells[1:]):
        assert z.cell_type == e.cell_type and z.id == e.id
        if e.cell_type == "code":
            assert z.source == e.source
        elif e.id in fresh:                    # untouched: the translation survives, in sync
            assert z.source == translated[e.id] and z.metadata["zh"]["source_sha"] == T.source_sha(e.source)
        else:                                  # new or edited: never silently "in sync"
            rec = z.metadata["zh"]
            assert rec.get("untranslated") or rec["source_sha"] != T.source_sha(e.source)


def test_generated_cells_take_the_generators_chinese_and_follow_its_changes(pair, monkeypatch):
    """Exercise/Next cells come from grpo_lab.exercises in both languages, not from a translator."""
    nb = nbformat.read(pair, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("**Next:** [04_grpo_loss](04_grpo_loss.ipynb)"))
    nb.cells[-1].id = "test-generated"
    nbformat.write(nb, pair)
    zh_text = {"test-generated": "**下一篇:** [04_grpo_loss](04_grpo_loss.ipynb)"}
    monkeypatch.setattr(T, "generated_translations",
                        lambda path: {"test-generated": (nb.cells[-1].source, zh_text["test-generated"])})
    T.sync(pair.parent)
    assert T.check(pair) == []
    last = nbformat.read(T.zh_path(pair), as_version=4).cells[-1]
    assert last.source == zh_text["test-generated"] and last.metadata["zh"]["generated"] == T.GENERATOR
    zh_text["test-generated"] = "**下一篇：** [04_grpo_loss](04_grpo_loss.ipynb)"       # the generator's Chinese changed
    assert [p.kind for p in T.check(pair)] == ["generated"]
    T.sync(pair.parent)
    assert T.check(pair) == []
    # a generator whose English no longer matches the notebook's is ignored: the cell keeps the
    # translation of its (unchanged) English text
    monkeypatch.setattr(T, "generated_translations", lambda path: {"test-generated": ("something else", "别的")})
    assert T.check(pair) == []
    T.sync(pair.parent)
    assert T.check(pair) == [] and nbformat.read(T.zh_path(pair), as_version=4).cells[-1].source == zh_text["test-generated"]


def test_sync_can_replace_a_stale_translation_by_the_new_english(tmp_path):
    """stale="english": a student reads the current English text, flagged untranslated, instead of a
    translation of text that has changed; "keep" keeps the translation and check() calls it stale."""
    en = nbformat.v4.new_notebook()
    en.cells = [nbformat.v4.new_markdown_cell("new English", id="a1"), nbformat.v4.new_markdown_cell("same", id="b2")]
    old = T.synced(en, None)
    for cell in old.cells[1:]:
        cell.source, cell.metadata["zh"] = "旧的中文", {"source_sha": T.source_sha("old English")}
    old.cells[2].metadata["zh"]["source_sha"] = T.source_sha("same")
    kept = T.synced(en, old, stale="keep")
    assert [c.source for c in kept.cells[1:]] == ["旧的中文", "旧的中文"]
    replaced = T.synced(en, old, stale="english")
    assert [c.source for c in replaced.cells[1:]] == ["new English", "旧的中文"]
    assert replaced.cells[1].metadata["zh"] == {"source_sha": T.source_sha("new English"), "untranslated": True}
    with pytest.raises(ValueError, match="stale"):
        T.synced(en, old, stale="drop")
