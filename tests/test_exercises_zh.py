"""The exercises speak Chinese in Chinese mode (issue 23 §3): under ``set_language("zh")``, a sample
that covers every exercise — its check with wrong answers (each option, each known value, each listed
mistake, a value the checker does not know, a raising function …) and with the right one, its hints,
its reveal, the text of its answer cell, and the errors of ``ex.case``, ``ex.reveal``, ``ex.hint`` and
an unknown id — has no English prose. The detector is ``tests/test_zh_mode.py``'s (runs of English
words outside code, math, quoted widget labels and names); the answer forms and the checker's own
phrases are held to a stricter one (no two English words in a row).
"""
from __future__ import annotations

import re
import tokenize

import ast
import copy
import inspect
import io

import numpy as np
import pytest
import torch

from grpo_lab import exercises as ex
from grpo_lab import set_language, terms
from grpo_lab.exercises import EXERCISES, Compute, Implement, Predict
from grpo_lab.exercises import notebooks as gen

from test_zh_mode import english_runs

IDS = list(EXERCISES)
CJK = re.compile(r"[\u4e00-\u9fff]")
# two English words in a row ("a number", "of shape"), for the short phrases where one run is too many
_PAIR = re.compile(r"(?<![\w.])(?:a|[A-Za-z]{2,})(?:-[A-Za-z]+)*[ ,]+[A-Za-z]{2,}(?![\w(])")


def english_pairs(text: str) -> list[str]:
    return _PAIR.findall(terms.prose(str(text)))


@pytest.fixture
def zh():
    set_language("zh")
    yield
    set_language("en")


def _raises(*args):
    raise ValueError("boom")


def _wrong_implementations(e: Implement):
    """Each listed mistake, one the checker does not know, None, a raising function, a stub, a non-function."""
    yield from (m.output for m in e.mistakes)
    yield lambda *args: np.asarray(e.expected(*args), dtype=float) * 2 + 1
    yield lambda *args: None
    yield lambda *args: np.zeros(3)
    yield lambda *args: "text"
    yield _raises

    def stub(*args):
        raise NotImplementedError

    yield stub
    yield lambda x: x
    yield 3.0
    if isinstance(e.cases()[0].args[0], (np.ndarray, torch.Tensor)):
        def in_place(first, *rest):
            out = e.reference(copy.deepcopy(first), *rest)
            with torch.no_grad():
                first[...] = 0
            return out

        yield in_place
    if e.grad_wrt:
        yield lambda *args: e.reference(*[a.detach() if isinstance(a, torch.Tensor) else a for a in args])
    yield lambda *args: e.reference(*[a.float() if isinstance(a, torch.Tensor) else
                                      a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in args])


def _wrong_values(e: Compute):
    sol = np.asarray(ex.solution(e.id), dtype=float)
    off = sol.copy().reshape(-1)
    off[-1] += 0.37
    yield from (k.value() for k in e.known)
    yield off.reshape(sol.shape).tolist()
    yield [0.0] * (sol.size + 1)
    yield "x"
    yield [float("nan")] * sol.size
    if e.atol < 0.005:
        yield (sol + 0.004).tolist()


def sample(exercise_id: str):
    """``(what, text)`` of everything a student can see of one exercise, in the current language."""
    e = ex.get(exercise_id)
    right = e.reference if isinstance(e, Implement) else ex.solution(exercise_id)
    wrong = (_wrong_implementations(e) if isinstance(e, Implement) else _wrong_values(e) if isinstance(e, Compute)
             else [*(k for k in e.keys() if k != right), "maybe", 7])
    for k, answer in enumerate([None, right, *wrong]):
        fb = ex.check(exercise_id, answer)
        yield f"check #{k} ({fb.status})", str(fb)
    for n in range(1, len(e.hints) + 1):
        yield f"hint {n}", str(ex.hint(exercise_id, n))
    if isinstance(e, Predict):
        yield "reveal", str(ex.reveal(exercise_id))
        yield "reveal html", ex.reveal(exercise_id)._repr_html_()
    for c in gen._exercise_block(e, "student", None, "1.1"):
        if c.cell_type == "markdown":
            yield f"cell {c.id}", c.source
        elif "answer" in c.metadata["tags"]:       # code, shared with the English twin: its Chinese half
            comments, docs = code_prose(c.source)
            yield f"cell {c.id}", "\n".join(chinese_half(t) for t in comments)
            if isinstance(e, Implement):
                zh_doc = inspect.cleandoc(e.reference.zh_doc)
                assert zh_doc in docs[0], (e.id, docs)
                yield f"cell {c.id} docstring", zh_doc
    for call in (lambda: ex.case(exercise_id, 10_000), lambda: ex.reveal(exercise_id), lambda: ex.hint(exercise_id, 9)):
        try:
            call()
        except (KeyError, ValueError) as err:
            yield "error", str(err)


def chinese_half(comment: str) -> str:
    """The Chinese half of a bilingual comment ("# your answer: a number · 你的答案：一个数")."""
    assert " · " in comment and CJK.search(comment.split(" · ", 1)[1]), comment
    return comment.split(" · ", 1)[1]


def code_prose(source: str) -> tuple[list[str], list[str]]:
    """What a student reads in a code cell: its comments, and its docstrings (an implement stub's task)."""
    comments = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    docs = [ast.get_docstring(n) or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    return comments, docs


@pytest.mark.parametrize("exercise_id", IDS)
def test_every_exercise_speaks_chinese_in_chinese_mode(zh, exercise_id):
    seen = list(sample(exercise_id))
    bad = [(what, english_runs(text)) for what, text in seen if english_runs(text)]
    assert not bad, bad
    assert all(CJK.search(text) for what, text in seen if what.startswith(("check", "hint", "reveal", "error"))), seen


def test_every_chinese_string_of_the_exercises_package():
    """The messages the sample may not reach (a timeout, a wrong gradient …): the Chinese half of every
    tr()/Text() call in grpo_lab/exercises has no English prose and Chinese punctuation."""
    from zh_texts import runtime_strings

    texts = list(runtime_strings(only="grpo_lab/exercises"))
    assert len(texts) > 300
    bad = [(where, english_runs(t), [m.group() for m in _PUNCT.finditer(t)]) for where, t in texts
           if english_runs(t) or _PUNCT.search(t)]
    assert not bad, bad


def test_unknown_ids_and_wrong_arguments_are_chinese(zh):
    for call in (lambda: ex.check("no.such", 1), lambda: ex.case("guess.sign_a9", 0),
                 lambda: ex.reveal("advantages.group"), lambda: ex.case("advantages.group", -1)):
        with pytest.raises((KeyError, ValueError)) as info:
            call()
        assert CJK.search(str(info.value)) and not english_pairs(str(info.value)), str(info.value)


# Chinese punctuation in Chinese text: no ASCII colon/semicolon right after a Chinese character, no space after
# 。，；： (「对。 现在」), and a status head that does not repeat itself (「还不对 — 还不对：」)
_PUNCT = re.compile(r"[\u4e00-\u9fff）」][:;,?!](?=[ \n]|$)|[。；：，、！？][ \t]+(?=\S)|[ \t][。；：，、！？]|还不对\s*—\s*还不对")


@pytest.mark.parametrize("exercise_id", IDS)
def test_chinese_punctuation_in_every_message(zh, exercise_id):
    bad = [(what, m.group()) for what, text in sample(exercise_id) if "answer" not in what
           for m in _PUNCT.finditer(text)]
    assert not bad, bad


def test_the_detectors_catch_what_the_review_found():
    assert english_runs("全部 14 个输入都正确（two all-equal groups）")
    assert english_pairs("需要的形式是 a number") and english_pairs("<Tensor of shape (4, 7)>")
    assert _PUNCT.search("对。 现在") and _PUNCT.search("下一篇: ") and _PUNCT.search("✗ x：还不对 — 还不对：第 1 个")
    assert not english_pairs("`clipped_loss(logp, old_logp)` 与 Dr. GRPO") and not _PUNCT.search("对。现在")


def test_every_case_label_has_its_chinese():
    """A label with words is a Text (both languages in one record); a plain str label holds symbols only."""
    for e in EXERCISES.values():
        if not isinstance(e, Implement):
            continue
        for case in e.cases():
            label = case.label
            if isinstance(label, str):
                assert not re.search(r"[A-Za-z]{3,}", label.replace("ref", "")), (e.id, label)
            else:
                assert CJK.search(label.zh) and not english_runs(label.zh) and label.en != label.zh, (e.id, label)


def test_labels_follow_the_language(zh):
    fb = ex.check("advantages.group", lambda rewards: np.asarray(rewards, dtype=float) * 0 + 7)
    assert "「讲义：1,1,0,0」" in fb.message and "<ndarray" not in fb.message
    assert "「全部相等：1,1,1,1」" in str(ex.check("advantages.group", ex.get("advantages.group").reference))
    set_language("en")
    assert "lecture notes: 1,1,0,0" in ex.check("advantages.group", lambda rewards: np.asarray(rewards) * 0 + 7).message


def test_answer_cells_say_it_in_both_languages(zh):
    """An answer cell is code, copied verbatim into the Chinese twin (grpo_lab.translations): its comment and
    an implement stub's docstring hold both languages, whatever the language when it is written."""
    assert ex.get("advantages.lone_success").stub_code().endswith("# your answer: a number · 你的答案：一个数")
    assert ex.get("length.weights_seq").stub_code().endswith("你的答案：[长度 3 的 c, 长度 9 的 c]")
    assert ex.get("guess.sign_a9").stub_code().endswith("# your prediction · 你的预测 ∈ {'positive', 'zero', 'negative'}")
    stub = ex.get("agg.seq_mean").stub_code()
    assert "Eq. (6), the sequence mean" in stub and "式 (6)，序列平均" in stub
    assert stub.endswith("raise NotImplementedError  # your code here · 在这里写你的代码")
    assert ast.parse(stub) and ex.get("agg.seq_mean").nbgrader_code().startswith(stub.split("    raise")[0])
    stubs = {i: e.stub_code() for i, e in EXERCISES.items()}
    set_language("en")
    assert stubs == {i: e.stub_code() for i, e in EXERCISES.items()}
    assert all(getattr(e.reference, "zh_doc", None) for e in EXERCISES.values() if isinstance(e, Implement))


def test_shapes_in_chinese(zh):
    assert "形状" in ex.check("loss.clipped", lambda *args: torch.zeros(3)).message
    fb = ex.check("loss.clipped", lambda logp, old_logp, adv, mask, eps: 1 / 0)
    assert "<Tensor，形状 (4, 7)>" in fb.message and "of shape" not in fb.message


@pytest.mark.parametrize("nn", sorted({e.notebook for e in EXERCISES.values()}))
def test_generated_cells_of_every_chinese_notebook(nn):
    """The Exercises intro, the prompts and the "Next" link that write-notebooks puts into notebooks/zh."""
    cells = gen.exercise_cells(nn, lang="zh")
    md = [c.source for c in cells if c.cell_type == "markdown"]
    assert md and not [(s[:60], english_runs(s)) for s in md if english_runs(s)]
    assert not [s[:60] for s in md if _PUNCT.search(s)]
    intro = [s for s in md if s.startswith("## 练习")]
    assert not intro or "点明是哪种常见错误" in intro[0]
