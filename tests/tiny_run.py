"""The tiny-LM run settings and fixtures shared by the trainer and reliability tests.

Import the fixtures by name (``from tiny_run import TINY, cache, cfg``): pytest finds them in the
importing module.
"""
import pytest

from grpo_lab.lm.config import GRPOConfig

TINY = dict(hidden=32, intermediate=64, layers=1, heads=2, levels=(1, 2), G=4, prompts_per_step=2, max_new=5,
            warmstart_steps=20, eval_per_level=8, progress=False, threads=1)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One warm-start cache per test module (the warm start is built once, then reused)."""
    return str(tmp_path_factory.mktemp("warmstart_cache"))


@pytest.fixture
def cfg(cache):
    return GRPOConfig.preset("grpo", cache_dir=cache, **TINY)
