"""Every bilingual string of the package (``tr(en, zh)`` / ``Text(en, zh)``) has a real Chinese
side with the same placeholders, so switching ``set_language("zh")`` never drops a number or
raises KeyError at ``.format`` time. The strings are read from the source (AST), wherever
they are defined."""
import ast
import re
import string
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted((ROOT / "grpo_lab").rglob("*.py"))
_CJK = re.compile(r"[\u4e00-\u9fff]")


def _fields(node):
    """The placeholders of a string literal ({name} fields) or of an f-string (its expressions)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return sorted(f for _, f, _, _ in string.Formatter().parse(node.value) if f is not None)
    if isinstance(node, ast.JoinedStr):
        return sorted(ast.unparse(v.value) for v in node.values if isinstance(v, ast.FormattedValue))
    return None


def _text(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


# callables whose positional arguments are (English, Chinese) pairs; `see` is the six-string
# shorthand of the "What you should see" box (grpo_lab.viz.guide)
PAIRED = {"tr": 2, "Text": 2, "see": 6}


def bilingual_calls():
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if PAIRED.get(name) != len(node.args) or not all(_text(a) is not None for a in node.args):
                continue
            for k in range(0, len(node.args), 2):
                yield f"{path.relative_to(ROOT)}:{node.args[k].lineno}", node.args[k], node.args[k + 1]


CALLS = list(bilingual_calls())


def test_the_scan_finds_the_strings_and_catches_a_bad_one(tmp_path):
    assert CALLS, "no tr()/Text() calls found in grpo_lab/"
    bad = ast.parse('tr("{n} steps", "步")\nText(f"{x} ok", f"{y} 好")\nText("three words", "three words!")')
    calls = [n for n in ast.walk(bad) if isinstance(n, ast.Call)]
    assert [_fields(a) for a in calls[0].args] == [["n"], []]            # a dropped {n}
    assert [_fields(a) for a in calls[1].args] == [["x"], ["y"]]         # a renamed f-string value
    assert not _CJK.search(_text(calls[2].args[1]))                      # an untranslated side


@pytest.mark.parametrize("where,en,zh", CALLS, ids=[c[0] for c in CALLS])
def test_chinese_side_is_chinese_with_the_same_placeholders(where, en, zh):
    en_text, zh_text = _text(en), _text(zh)
    if re.search(r"[A-Za-z]{3}", en_text) and zh_text != en_text:   # words, not a symbol or a name ("PPO")
        assert _CJK.search(zh_text), f"{where}: the Chinese side has no Chinese: {zh_text!r}"
    if type(en) is type(zh):                  # both plain strings (.format fields) or both f-strings
        assert _fields(en) == _fields(zh), f"{where}: placeholders differ: {_fields(en)} vs {_fields(zh)}"
