"""The Chinese notebooks (``notebooks/zh/``), kept in sync with the English ones.

Layout of a Chinese notebook ``notebooks/zh/NAME.ipynb``:

* cell 0 is the *language cell*, a code cell tagged ``zh-language`` that calls
  ``grpo_lab.set_language("zh")`` (so the package's feedback, hints, "What you should see"
  text and metric definitions come out in Chinese). It is the only cell that the English
  notebook does not have.
* then, one for one and in the same order, the English notebook's cells:
  code cells are copied verbatim (source and metadata, outputs cleared, same cell id);
  markdown cells hold the translation, with the same cell id and
  ``metadata["zh"] = {"source_sha": sha256 of the English source it translates}``.
  A cell whose English text has not been translated yet holds the English text and
  ``metadata["zh"]["untranslated"] = True``.

:func:`sync` rewrites the Chinese notebooks from the English ones: it copies code cells,
keeps every translation (matched by cell id, then by identical English text, then by
position among the markdown cells), and inserts new English markdown cells flagged as
untranslated. A kept translation whose English cell changed keeps its old ``source_sha``,
so :func:`check` reports it as *stale* until someone re-translates it.

Markdown that the package writes itself in both languages (the Exercises and "Next" cells
of :mod:`grpo_lab.exercises`) is not translated by hand: :func:`sync` takes its Chinese text
from the same generator (``exercise_cells(NN, lang="zh")``), and ``metadata["zh"]["generated"]``
says so; :func:`check` reports such a cell when the generator's Chinese text has changed.
:func:`export_cells` / :func:`import_cells` move the cells that need work to a plain text
file and back (the translator edits text, not JSON).
"""
from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

LANG_TAG = "zh-language"
LANG_SOURCE = ('import grpo_lab\n'
               'grpo_lab.set_language("zh")   # 中文版：本包的反馈、提示、"应当看到什么"与指标说明均用中文')
_CJK = re.compile(r"[\u4e00-\u9fff]")
_MARK = re.compile(r"^<!-- zh-cell (?P<nb>\S+) (?P<id>\S+) sha=(?P<sha>[0-9a-f]{64}) -->$", re.M)


# English notebooks whose Chinese twin does not exist yet, with the reason. check() reports such a
# notebook as "pending" (not "missing") while the twin is absent; once the twin is written, the
# entry must go (tests/test_translations.py fails on a pending notebook that has a twin).
PENDING: dict[str, str] = {}

# The Chinese edition is translated last (issue 23, part 4): while this names the issue, markdown cells
# whose English changed ("stale") or is new ("untranslated") are the translator's backlog, listed by
# `python -m grpo_lab translations report`, and tests/test_translations.py tolerates those two kinds
# only (code cells, structure, the language cell and generated cells must still be in sync). Set it to
# None once the backlog is translated: the tests then require every cell to be fresh again.
BACKLOG: str | None = None
BACKLOG_KINDS = ("stale", "untranslated")


def source_sha(source: str) -> str:
    """sha256 of an English cell's source: what a translation records it translates."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def zh_path(en_path) -> Path:
    """``notebooks/NAME.ipynb`` -> ``notebooks/zh/NAME.ipynb``."""
    en_path = Path(en_path)
    return en_path.parent / "zh" / en_path.name


def english_notebooks(folder, *, pending: bool = False) -> list[Path]:
    """Every English notebook of the course (``folder/*.ipynb``), sorted; without the :data:`PENDING`
    ones unless ``pending``."""
    paths = sorted(Path(folder).glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks in {folder!s} (expected notebooks/NAME.ipynb)")
    return paths if pending else [p for p in paths if p.name not in PENDING]


def is_language_cell(cell) -> bool:
    return cell.cell_type == "code" and LANG_TAG in cell.get("metadata", {}).get("tags", [])


def language_cell():
    cell = nbformat.v4.new_code_cell(LANG_SOURCE, metadata={"tags": [LANG_TAG]})
    cell.id = LANG_TAG
    return cell


def _first_line(source: str) -> str:
    line = next((ln for ln in source.splitlines() if ln.strip()), "")
    return line[:70] + ("…" if len(line) > 70 else "")


def _code_copy(cell):
    out = copy.deepcopy(cell)
    out.outputs, out.execution_count = [], None
    return out


def _untranslated(cell):
    out = copy.deepcopy(cell)
    out.metadata["zh"] = {"source_sha": source_sha(cell.source), "untranslated": True}
    return out


def _kept(en_cell, zh_cell):
    """The translation ``zh_cell`` placed at ``en_cell``'s position (its sha stays as it was)."""
    out = copy.deepcopy(zh_cell)
    out.id = en_cell.id
    if "zh" not in out.metadata:  # a hand-made cell without a record: treat as untranslated
        out.metadata["zh"] = {"source_sha": "", "untranslated": True}
    return out


def _match(en_md, zh_md):
    """Pair each English markdown cell with a previous translation (or None)."""
    by_id = {c.id: c for c in zh_md if "id" in c}
    used, pairs = set(), [None] * len(en_md)
    for k, c in enumerate(en_md):                              # 1. same cell id
        z = by_id.get(c.get("id"))
        if z is not None:
            pairs[k] = z
            used.add(id(z))
    by_sha = {}
    for z in zh_md:
        if id(z) not in used:
            by_sha.setdefault(z.metadata.get("zh", {}).get("source_sha"), z)
    for k, c in enumerate(en_md):                              # 2. same English text (moved)
        z = by_sha.get(source_sha(c.source)) if pairs[k] is None else None
        if z is not None and id(z) not in used:
            pairs[k] = z
            used.add(id(z))
    for k, c in enumerate(en_md):                              # 3. same markdown position
        if pairs[k] is None and k < len(zh_md) and id(zh_md[k]) not in used:
            pairs[k] = zh_md[k]
            used.add(id(zh_md[k]))
    return pairs


GENERATOR = "grpo_lab.exercises"


def generated_translations(en_path) -> dict[str, tuple[str, str]]:
    """``{cell id: (English, Chinese)}`` of the markdown cells :mod:`grpo_lab.exercises` writes
    at the end of ``en_path`` (empty for a notebook without exercises)."""
    from grpo_lab.exercises import notebooks as gen

    try:
        nn = gen.notebook_number(en_path)
    except ValueError:
        return {}
    pairs = [{c.id: c.source for c in gen.exercise_cells(nn, lang=lang) if c.cell_type == "markdown"}
             for lang in ("en", "zh")]
    return {i: (en, pairs[1][i]) for i, en in pairs[0].items() if i in pairs[1]}


def _generated(cell, zh_source):
    out = copy.deepcopy(cell)
    out.source = zh_source
    out.metadata["zh"] = {"source_sha": source_sha(cell.source), "generated": GENERATOR}
    return out


def synced(en_nb, zh_nb=None, name="NAME.ipynb", generated=None, stale="keep"):
    """The Chinese notebook that :func:`sync` writes for ``en_nb`` (``zh_nb``: the old one;
    ``generated``: :func:`generated_translations` of the English notebook). ``stale="english"``
    replaces a translation whose English cell changed by the new English text, flagged untranslated
    (a student then reads the current lesson in English rather than an outdated one in Chinese);
    ``"keep"`` keeps it, reported stale."""
    if stale not in ("keep", "english"):
        raise ValueError(f"stale must be 'keep' or 'english', got {stale!r}")
    generated = generated or {}
    old = [c for c in (zh_nb.cells if zh_nb is not None else []) if not is_language_cell(c)]
    en_md = [c for c in en_nb.cells if c.cell_type == "markdown"]
    pairs = dict(zip(map(id, en_md), _match(en_md, [c for c in old if c.cell_type == "markdown"])))
    cells = [language_cell()]
    for c in en_nb.cells:
        if c.cell_type != "markdown":
            cells.append(_code_copy(c))
        elif generated.get(c.get("id"), (None,))[0] == c.source:
            cells.append(_generated(c, generated[c.id][1]))
        elif pairs[id(c)] is None:
            cells.append(_untranslated(c))
        elif stale == "english" and pairs[id(c)].metadata.get("zh", {}).get("source_sha") != source_sha(c.source):
            cells.append(_untranslated(c))
        else:
            cells.append(_kept(c, pairs[id(c)]))
    out = copy.deepcopy(en_nb)
    out.cells = cells
    out.metadata["zh"] = {"translation_of": f"../{name}"}
    return out


@dataclass(frozen=True)
class Problem:
    """One cell of a Chinese notebook that is out of date; ``kind`` says how."""

    notebook: str      # e.g. "notebooks/zh/03_group_advantage.ipynb"
    cell: int          # index in the Chinese notebook (the language cell is 0)
    kind: str          # "missing", "pending" (listed in PENDING), "language", "structure", "code", "stale", "untranslated", "generated"
    line: str          # first line of the English cell concerned

    def __str__(self) -> str:
        what = {"missing": "no Chinese notebook: run `python -m grpo_lab translations sync`",
                "pending": "no Chinese notebook yet (translations.PENDING says why)",
                "language": "cell 0 must be the tagged language cell (set_language(\"zh\"))",
                "structure": "cells do not line up with the English notebook: run sync",
                "code": "code cell differs from the English one: run sync",
                "stale": "English cell changed since this translation was written: re-translate",
                "untranslated": "not translated yet",
                "generated": f"Chinese text differs from what {GENERATOR} writes: run sync"}[self.kind]
        return f"{self.notebook} cell {self.cell}: {what}  [{self.line}]"


def check(en_path, zh_file=None) -> list[Problem]:
    """Every reason the Chinese twin of ``en_path`` is out of date (empty: in sync)."""
    en_path = Path(en_path)
    zh_file = Path(zh_file) if zh_file is not None else zh_path(en_path)
    name = str(zh_file)
    if not zh_file.exists():
        return [Problem(name, 0, "pending" if en_path.name in PENDING else "missing", en_path.name)]
    en = nbformat.read(en_path, as_version=4)
    zh = nbformat.read(zh_file, as_version=4)
    generated = generated_translations(en_path)
    problems = []
    if not zh.cells or not is_language_cell(zh.cells[0]) or zh.cells[0].source != LANG_SOURCE:
        problems.append(Problem(name, 0, "language", _first_line(zh.cells[0].source) if zh.cells else ""))
    body = zh.cells[1:] if zh.cells and is_language_cell(zh.cells[0]) else zh.cells
    for k, e in enumerate(en.cells):
        idx = k + (len(zh.cells) - len(body))
        line = _first_line(e.source)
        z = body[k] if k < len(body) else None
        if z is None or z.cell_type != e.cell_type:
            problems.append(Problem(name, idx, "structure", line))
            break
        if e.cell_type != "markdown":
            if z.source != e.source or z.metadata != e.metadata:
                problems.append(Problem(name, idx, "code", line))
            continue
        rec = z.metadata.get("zh", {})
        if rec.get("untranslated") or not _CJK.search(z.source):
            problems.append(Problem(name, idx, "untranslated", line))
        elif rec.get("source_sha") != source_sha(e.source):
            problems.append(Problem(name, idx, "stale", line))
        elif rec.get("generated") and generated.get(e.id, (None,))[0] == e.source \
                and generated[e.id][1] != z.source:                  # the generator's Chinese moved on
            problems.append(Problem(name, idx, "generated", line))
    else:
        if len(body) > len(en.cells):
            problems.append(Problem(name, len(zh.cells) - 1, "structure", "(extra cells at the end)"))
    return problems


def sync(folder="notebooks", stale="keep") -> list[Path]:
    """Write ``folder/zh/NAME.ipynb`` for every ``folder/NAME.ipynb``; the files that changed
    (``stale``: see :func:`synced`)."""
    changed = []
    for en_path in english_notebooks(folder):
        out_path = zh_path(en_path)
        en = nbformat.read(en_path, as_version=4)
        old = nbformat.read(out_path, as_version=4) if out_path.exists() else None
        new = synced(en, old, en_path.name, generated_translations(en_path), stale=stale)
        if old is None or nbformat.writes(new) != nbformat.writes(old):
            out_path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(new, out_path)
            changed.append(out_path)
    return changed


def report(folder="notebooks") -> list[Problem]:
    """Every problem of every Chinese notebook under ``folder/zh``."""
    return [p for en_path in english_notebooks(folder) for p in check(en_path)]


def export_cells(folder="notebooks", only=None, include_all=False) -> str:
    """The markdown cells that need (re-)translation, as text for a translator.

    Each cell is preceded by a marker ``<!-- zh-cell NAME ID sha=... -->`` naming the English
    version it was exported from; replace the text under each marker by its translation
    and give the file to :func:`import_cells`. Stale cells show the current English text
    followed by the old translation in an HTML comment. ``include_all`` exports every cell.
    """
    parts = []
    for en_path in english_notebooks(folder):
        if only and en_path.stem not in only:
            continue
        en = nbformat.read(en_path, as_version=4)
        zh_file = zh_path(en_path)
        zh = {c.id: c for c in nbformat.read(zh_file, as_version=4).cells} if zh_file.exists() else {}
        for e in en.cells:
            if e.cell_type != "markdown":
                continue
            z = zh.get(e.id)
            rec = z.metadata.get("zh", {}) if z is not None else {}
            fresh = z is not None and not rec.get("untranslated") and rec.get("source_sha") == source_sha(e.source)
            if fresh and not include_all:
                continue
            text = e.source
            if z is not None and not rec.get("untranslated"):
                text += "\n<!-- old translation:\n" + z.source.replace("-->", "--&gt;") + "\n-->"
            parts.append(f"<!-- zh-cell {en_path.stem} {e.id} sha={source_sha(e.source)} -->\n{text}\n")
    return "\n".join(parts)


def import_cells(text: str, folder="notebooks") -> list[str]:
    """Write the translations in ``text`` (the format of :func:`export_cells`) into the notebooks.

    Each translation records the sha from its marker, i.e. the English version the
    translator saw; if the English cell changed meanwhile, :func:`check` says stale.
    Returns ``"NAME ID"`` for every cell written.
    """
    marks = list(_MARK.finditer(text))
    if not marks:
        raise ValueError("text has no '<!-- zh-cell NAME ID sha=... -->' markers (see export_cells)")
    by_nb: dict[str, dict[str, tuple[str, str]]] = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        body = text[m.end():nxt.start() if nxt else len(text)]
        body = re.sub(r"\n?<!-- old translation:.*?-->", "", body, flags=re.S).strip("\n")
        if not _CJK.search(body):
            continue                       # still English: leave the cell flagged untranslated
        by_nb.setdefault(m["nb"], {})[m["id"]] = (body, m["sha"])
    done = []
    for name, cells in by_nb.items():
        path = Path(folder) / "zh" / f"{name}.ipynb"
        if not path.exists():
            raise FileNotFoundError(f"{path}: run `python -m grpo_lab translations sync` first")
        nb = nbformat.read(path, as_version=4)
        for c in nb.cells:
            if c.cell_type == "markdown" and c.id in cells:
                c.source, sha = cells.pop(c.id)
                c.metadata["zh"] = {"source_sha": sha}
                done.append(f"{name} {c.id}")
        if cells:
            raise ValueError(f"{path}: no markdown cells with ids {sorted(cells)} (run sync, then export again)")
        nbformat.write(nb, path)
    return done
