"""One Chinese word per concept (grpo_lab.terms): no Chinese text of the course uses a variant the
terms table rules out — the zh notebooks' markdown, README.zh.md and every Chinese run-time string."""
import pytest

from grpo_lab import roadmap, terms

from zh_texts import chinese_texts, runtime_strings

# a sentence per ruled-out variant that must be caught, and the same sentence with the chosen word
EXAMPLES = {
    "batch (token) mean": ("DAPO 用 token 平均（式 7）", "DAPO 用批次平均（式 7）"),
    "lecture notes": ("见种子文的算例", "见讲义的算例"),
    "random seed": ("32 个种子上取平均", "32 个随机种子上取平均"),
    "inner step": ("第一步内循环时 ρ ≡ 1", "第一个内层步 ρ ≡ 1"),
    "token": ("每个词元的推力", "每个 token 的推力"),
    "dual clip": ("dual clip 给坏 token 封顶", "双重裁剪给坏 token 封顶"),
    "partial credit": ("按部分得分排序", "按部分给分排序"),
    "overlong reward shaping": ("有超长惩罚时", "有 overlong 奖励整形时"),
    "informative (group)": ("有信息的组很少", "有信息量的组很少"),
    "score function": ("几乎没有 score", "得分函数几乎为零"),
    "padding": ("padding 到 T = 9", "填充到 T = 9"),
    "off-policy (stale) batch": ("在过时批次中", "在异策略批次中"),
}


def test_every_example_is_caught_and_its_fix_is_clean():
    assert {t.key for t in terms.TERMS if t.avoid} - {"group normalization", "importance ratio", "clipping",
                                                       "credit assignment"} == set(EXAMPLES)
    for key, (bad, good) in EXAMPLES.items():
        assert [k for k, _ in terms.violations(bad)] == [key], (key, terms.violations(bad))
        assert terms.violations(good) == [], (key, terms.violations(good))


def test_code_math_glosses_and_widget_labels_are_not_prose():
    assert terms.violations("`mode='token-mean'` 与 $\\text{score}$") == []
    assert terms.violations("得分函数（score function）为 …；**双重裁剪**（dual clip，verl 的 `clip_ratio_c`）") == []
    assert terms.violations("面板上的双重裁剪滑块 *dual clip c*；先选 'stale (off-policy)'") == []
    assert terms.violations("KL 的 k3 估计（对 token 平均）") == []            # the verb, not eq. (7)'s name
    assert [k for k, _ in terms.violations("* *seed 004* —— 讲义")] == ["lecture notes"]   # not a widget label


def test_unknown_term_is_a_clear_error():
    with pytest.raises(KeyError, match="key: no term 'nope'"):
        terms.zh("nope")


def test_the_glossary_takes_its_chinese_words_from_the_terms_table():
    table = roadmap.glossary_table()
    for key, row in table.iterrows():
        if row["中文"] != "—":
            assert row["中文"] == terms.zh(key), key
    assert table.loc["batch (token) mean", "中文"] == "批次平均"                # lecture notes 000 §4


def test_no_chinese_text_uses_a_ruled_out_variant():
    bad = [f"{where}: [{key}] …{snippet}…" for where, text in chinese_texts()
           for key, snippet in terms.violations(text)]
    assert not bad, "\n" + "\n".join(bad)


def test_no_ruled_out_variant_in_the_exercises():
    bad = [f"{where}: [{key}] …{snippet}…" for where, text in runtime_strings(only="grpo_lab/exercises")
           for key, snippet in terms.violations(text)]
    assert not bad, "\n" + "\n".join(bad)
