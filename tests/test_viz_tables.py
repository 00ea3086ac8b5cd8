"""grpo_lab.viz.tables.prose_table: every character shown, a caption, left-aligned, bad input named."""
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from grpo_lab.viz.tables import prose_table


def test_long_cells_are_not_truncated_and_the_caption_is_on_top():
    long = "algorithm.norm_adv_by_std_in_grpo=True, " * 8
    df = pd.DataFrame({"grpo": [long], "gspo": ["x"]}, index=["advantage denominator (eq. 1; Dr. GRPO drops it)"])
    html = prose_table(df, "verl options per preset").to_html()
    assert long.strip() in html and "…" not in html
    assert "<caption>verl options per preset</caption>" in html
    assert "caption-side: top" in html and "text-align: left" in html and "max-width: 15em" in html


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=120), min_size=1, max_size=5))
def test_every_cell_survives(cells):
    import html

    out = html.unescape(prose_table(pd.DataFrame({"a": cells}), "cap").to_html())
    for c in cells:
        assert c in out


def test_cells_are_escaped():
    out = prose_table(pd.DataFrame({"a": ["<b>x</b>"]}), "cap").to_html()
    assert "&lt;b&gt;x&lt;/b&gt;" in out and "<b>x</b>" not in out


@pytest.mark.parametrize("kw, msg", [(dict(caption=""), "caption"), (dict(caption="c", cell_width="wide"), "cell_width"),
                                     (dict(caption="c", header_width=12), "header_width")])
def test_bad_input_is_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        prose_table(pd.DataFrame({"a": [1]}), **kw)


def test_not_a_frame():
    with pytest.raises(TypeError, match="df"):
        prose_table([1, 2], "cap")
