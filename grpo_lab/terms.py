"""The Chinese edition's terms: one Chinese word per concept, and the variants it rules out.

The lecture notes' own word wins where they have one (批次平均 for eq. (7), 部分给分, 有信息量,
overlong 奖励整形, 填充 …); elsewhere the course chose one. :data:`TERMS` is the one source:
:data:`grpo_lab.roadmap.GLOSSARY` takes its Chinese column from it, and
``tests/test_terms.py`` scans the Chinese notebooks' markdown, ``README.zh.md`` and every
Chinese run-time string (the ``zh`` half of ``tr``/``Text``/``see``) with :func:`violations`.

A variant is matched in prose only: code spans (`` `…` ``), fenced code, math (``$…$``) and
quoted widget labels (``*dual clip c*``, ``'stale (off-policy)'``: the widgets stay English) are
removed first, and so is an English gloss right after the Chinese word
(「得分函数（score function）」 is the way to introduce a term, not a variant).
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    key: str                      # the English term (as the glossary and the English notebooks write it)
    zh: str                       # the one Chinese word
    avoid: tuple[str, ...]        # regular expressions of the ruled-out variants (matched in prose)
    source: str = ""              # where the Chinese word comes from
    in_labels: bool = False       # also a variant inside a quoted label (no widget is named after it)


TERMS = (
    # the glossary of notebook 00 (grpo_lab.roadmap.GLOSSARY takes its Chinese column from here)
    Term("advantage", "优势", (), "lecture notes 004 §一 (优势函数)"),
    Term("baseline", "基线", (), "lecture notes 004 §一"),
    Term("reward-to-go", "后续回报", (), "lecture notes 004 §二"),
    Term("group normalization", "组内标准化", (r"组标准化", r"组内归一化"), "lecture notes 000 §1"),
    Term("degenerate group", "退化组", (), "lecture notes 004 §三"),
    Term("difficulty bias", "难度偏差", (), "lecture notes 000 §1.3"),
    Term("importance ratio", "重要性比率", (r"重要性权重比",), "lecture notes 000 §2"),
    Term("clipping", "裁剪", (r"截断比率",), "lecture notes 000 §2 (裁剪项)"),
    Term("KL penalty (k3)", "KL 惩罚", (), "lecture notes 000 §3"),
    Term("sequence mean", "序列平均", (), "lecture notes 000 §4 (eq. (6))"),
    Term("length bias", "长度偏差", (), "lecture notes 000 §4.3"),
    Term("credit assignment", "信用分配", (r"功劳分配",), "lecture notes 004 §二, 000 §2.3"),
    Term("dynamic sampling", "动态采样", (), "lecture notes 004 §四"),
    # terms the review of the Chinese edition found spelt several ways
    Term("batch (token) mean", "批次平均", (r"(?<![对在按])(?<![对在按] )token\s*级?\s*平均", r"token-mean", r"词元平均"),
         "lecture notes 000 §4 (eq. (7)); 「对 token 取平均」 is the verb, not the name"),
    Term("lecture notes", "讲义", (r"种子文档?", r"\b[Ss]eed\s*00[04]\b"),
         "the lecture-note documents 000 and 004 (讲义 000 §2.3); 种子 is a random seed", in_labels=True),
    Term("random seed", "随机种子", (r"(?<!随机)种子(?!文)", r"\b[Ss]eeds?\b(?!\s*00[04])"),
         "an RNG seed; 「随机种子 0」, 「3 个随机种子」"),
    Term("inner step", "内层步", (r"内循环", r"内层迭代"),
         "one optimizer step on the same sampled batch (μ of them per batch)"),
    Term("token", "token", (r"词元", r"令牌"), "lecture notes 000 (token 级, 每个 token)"),
    Term("dual clip", "双重裁剪", (r"\bdual[ -]?clip\b", r"双裁剪"), "verl's clip_ratio_c"),
    Term("partial credit", "部分给分", (r"部分得分", r"\bpartial credit\b"), "lecture notes 004 §三"),
    Term("overlong reward shaping", "overlong 奖励整形", (r"超长惩罚", r"超长奖励", r"overlong(?!\s*奖励整形)"),
         "lecture notes 004 §四 (DAPO's four pieces)"),
    Term("informative (group)", "有信息量", (r"有信息(?!量)",), "lecture notes 004 §三 (更有信息量的奖励)"),
    Term("score function", "得分函数", (r"score\s*函数", r"评分函数", r"(?<![\\{])\bscore\b"),
         "∂ log π / ∂θ"),
    Term("padding", "填充", (r"\bpadding\b", r"补齐"), "padding positions of a (B, T) batch (mask = 0)"),
    Term("off-policy (stale) batch", "异策略批次", (r"过时批次", r"陈旧批次"),
         "a batch sampled by an older policy (π_θ ≠ π_θold); 同策略 / 异策略 for on- / off-policy"),
)

_CODE = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$", re.S)
# a widget label quoted in the text (*dual clip c*, 'stale (off-policy)'): labels stay English by design
_LABEL = re.compile(r"(?<![*\w])\*(?!\*)[ -)+-~]+?\*(?![*\w])|'[ -&(-~]+?'")


def by_key(key: str) -> Term:
    """The :class:`Term` whose English term is ``key``; a KeyError naming the known keys otherwise."""
    for t in TERMS:
        if t.key == key:
            return t
    raise KeyError(f"key: no term {key!r}; known: {[t.key for t in TERMS]}")


def zh(key: str) -> str:
    """The Chinese word for the English term ``key`` (e.g. ``zh("batch (token) mean") == "批次平均"``)."""
    return by_key(key).zh


def prose(text: str, labels: bool = False) -> str:
    """``text`` without code spans, fenced code, math and (unless ``labels``) quoted widget labels
    (ASCII-only text in single ``*…*`` or ``'…'``): what a variant is matched in."""
    text = _CODE.sub(" ", text)
    return text if labels else _LABEL.sub(" ", text)


def violations(text: str) -> list[tuple[str, str]]:
    """``[(term key, offending text)]`` for every ruled-out variant in the prose of ``text``."""
    found = []
    for t in TERMS:
        own = re.sub(re.escape(t.zh) + r"\**\s*[（(][^）)]*[）)]", t.zh, prose(text, labels=t.in_labels))   # 得分函数（score function）
        for pattern in t.avoid:
            for m in re.finditer(pattern, own):
                found.append((t.key, own[max(0, m.start() - 12):m.end() + 12].replace("\n", " ")))
    return found
