"""Chinese text in a figure renders without "missing glyph" warnings (grpo_lab.viz.fonts).

CI installs Debian's fonts-noto-cjk (.ci/run); there a missing CJK font is a failure, on a
machine without one the rendering test is skipped.
"""
import os
import warnings

import matplotlib
import pytest

matplotlib.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402

from grpo_lab.viz import fonts  # noqa: E402  (importing grpo_lab.viz installs the fallback)

TEXT = "优势 基线 组内标准化 退化组 长度偏差 难度偏差 重要性比率 裁剪 后续回报"


def _glyph_warnings(family=None) -> list[str]:
    with matplotlib.rc_context({"font.family": family} if family else {}):
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.set_title(TEXT)
        ax.text(0.5, 0.5, f"Â = +1.73  {TEXT}")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.canvas.draw()
        plt.close(fig)
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


@pytest.fixture
def cjk_font():
    found = fonts.installed_cjk_fonts()
    if not found:
        if os.environ.get("CI"):
            pytest.fail("no CJK font (CI installs fonts-noto-cjk in .ci/run); Chinese figure text would be boxes")
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk)")
    return found[0]


def test_chinese_text_renders_without_missing_glyphs(cjk_font):
    assert cjk_font in matplotlib.rcParams["font.family"]
    assert _glyph_warnings() == []


def test_without_the_fallback_the_same_text_warns(cjk_font):
    """The check above can fail: DejaVu Sans alone has no CJK glyphs."""
    assert _glyph_warnings(["DejaVu Sans"])


def test_latin_text_keeps_dejavu_sans_first():
    """The fallback is appended: English figures render with the same font as before."""
    first = font_manager.fontManager._find_fonts_by_props(font_manager.FontProperties())[0]
    assert os.path.basename(first) == "DejaVuSans.ttf"
    assert matplotlib.rcParams["font.family"][0] == "sans-serif"


def test_fallback_is_idempotent():
    before = list(matplotlib.rcParams["font.family"])
    assert fonts.use_cjk_fallback() == before
