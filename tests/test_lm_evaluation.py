"""grpo_lab.lm.evaluation's capstone statistics (pass@k, intervals) and the chat task's held-out split."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab.lm.chat_tasks import HELDOUT_FRAC, ChatTask, problem_key
from grpo_lab.lm.evaluation import (bootstrap_ci, paired_difference, pass_at_k, ratio_ci, seed_difference, seed_interval,
                                    summarize_problems)


def brute_pass_at_k(n, c, k):
    """Share of the k-subsets of n samples (c of them correct) that hold a correct one."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_equals_brute_force_over_subsets(nck):
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(16, 64).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_pass_at_k_matches_binomial_formula_and_is_monotone(nc):
    n, c = nc
    vals = [pass_at_k(n, c, k) for k in (1, 2, 4, 8, 16)]
    for k, v in zip((1, 2, 4, 8, 16), vals):
        assert v == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert all(a <= b + 1e-15 for a, b in zip(vals, vals[1:]))     # more tries never hurt
    assert vals[0] == pytest.approx(c / n)                          # pass@1 is the plain success rate


def test_pass_at_k_vectorised_and_bad_input():
    got = pass_at_k(np.array([16, 16, 16]), np.array([0, 1, 16]), 4)
    assert got[0] == 0 and got[1] == pytest.approx(4 / 16) and got[2] == 1
    with pytest.raises(ValueError, match="k must be"):
        pass_at_k(8, 2, 16)
    with pytest.raises(ValueError, match="c <= n"):
        pass_at_k(8, 9, 1)


def test_bootstrap_interval_covers_the_mean_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    small, large = rng.random(50) < 0.3, rng.random(800) < 0.3
    m, lo, hi = bootstrap_ci(small)
    assert lo < m < hi and m == pytest.approx(small.mean())
    _, lo2, hi2 = bootstrap_ci(large)
    assert hi2 - lo2 < (hi - lo) / 2            # 16x the problems: about 1/4 the width
    # a binomial proportion's 95 % interval is about ±1.96·sqrt(p(1−p)/n)
    assert hi2 - lo2 == pytest.approx(2 * 1.96 * math.sqrt(0.3 * 0.7 / 800), rel=0.2)


def test_ratio_and_paired_difference_and_seed_interval():
    num, den = np.array([1, 2, 0, 3]), np.array([2, 2, 1, 4])
    assert ratio_ci(num, den)[0] == pytest.approx(6 / 9)
    before = np.zeros(100)
    after = np.r_[np.ones(30), np.zeros(70)]
    d, lo, hi = paired_difference(before, after)
    assert d == pytest.approx(0.3) and lo > 0.15 and hi < 0.45
    d, lo, hi = paired_difference(before, before)
    assert d == lo == hi == 0
    with pytest.raises(ValueError, match="same problems"):
        paired_difference(np.zeros(3), np.zeros(4))
    m, lo, hi = seed_interval([0.5, 0.6, 0.7])
    assert m == pytest.approx(0.6) and lo == pytest.approx(0.6 - 4.303 * 0.1 / math.sqrt(3), abs=1e-3)
    with pytest.raises(ValueError, match="at least 2"):
        seed_interval([0.5])


def test_seed_difference_is_the_prediction_interval_of_one_more_seed():
    d, lo, hi = seed_difference(0.9, [0.5, 0.6, 0.7])
    half = 4.303 * 0.1 * math.sqrt(1 + 1 / 3)                   # t_2 · s · √(1 + 1/n)
    assert d == pytest.approx(0.3) and lo == pytest.approx(0.3 - half, abs=1e-3) and hi == pytest.approx(0.3 + half, abs=1e-3)
    assert lo < 0 < hi                      # 0.3 above the mean is inside 3 seeds' spread of s = 0.1
    assert seed_difference(2.0, [0.5, 0.6, 0.7])[1] > 0
    # wider than the interval of the mean (seed_interval), by √(n + 1)
    m, mlo, mhi = seed_interval([0.5, 0.6, 0.7])
    assert (hi - lo) / (mhi - mlo) == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(ValueError, match="seed_values needs at least 2"):
        seed_difference(0.5, [0.5])
    with pytest.raises(ValueError, match="finite"):
        seed_difference(float("nan"), [0.5, 0.6])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=8), st.floats(0, 1))
def test_seed_difference_holds_zero_for_a_run_at_the_seed_mean(vals, shift):
    m = float(np.mean(vals))
    d, lo, hi = seed_difference(m, vals)
    assert abs(d) < 1e-9 and lo <= 0 <= hi
    d2, lo2, hi2 = seed_difference(m + shift, vals)
    assert hi2 - lo2 == pytest.approx(hi - lo) and d2 == pytest.approx(shift)


def test_summarize_problems_reports_finishing_apart():
    df = pd.DataFrame({"greedy_correct": [True, False, False, False], "greedy_finished": [True, True, False, False],
                       "n": 16, "c": [16, 4, 0, 0], "f": [16, 8, 4, 0], "len_mean": [10.0, 20, 90, 96]})
    s = summarize_problems(df, n_boot=200)
    assert s["greedy_acc"][0] == 0.25 and s["greedy_finish"][0] == 0.5
    assert s["greedy_acc_given_finished"][0] == 0.5
    assert s["pass@1"][0] == pytest.approx((1 + 0.25) / 4)
    assert s["sample_finish"][0] == pytest.approx(28 / 64)
    assert s["sample_acc_given_finished"][0] == pytest.approx(20 / 28)
    assert s["never_solved"][0] == 0.5


# -- the held-out split ---------------------------------------------------------------------
DISTINCT_HELDOUT = {1: 19, 2: 411, 3: 76, 4: 702}     # the table in grpo_lab.lm.chat_tasks


def test_heldout_counts_per_level_match_the_documented_table():
    task = ChatTask(levels=(1, 2, 3, 4))
    assert {lv: task.n_heldout(lv) for lv in (1, 2, 3, 4)} == DISTINCT_HELDOUT
    assert task.heldout_frac == HELDOUT_FRAC


def test_capstone_eval_set_is_200_distinct_problems_disjoint_from_training():
    task = ChatTask(levels=(2, 3))
    held = task.heldout({2: 128, 3: 72})
    keys = {(p.level, problem_key(p.numbers)) for p in held}
    assert len(held) == 200 and len(keys) == 200
    train = {(p.level, problem_key(p.numbers)) for p in task.sample(20000, np.random.default_rng(3))}
    assert not train & keys
    assert len({k for k in train if k[0] == 3}) == 190 - 76       # every level-3 training tuple is drawn
    assert task.heldout({2: 128, 3: 72}) == held                  # a fixed set


def test_asking_for_more_heldout_problems_than_a_level_has_names_the_count():
    with pytest.raises(ValueError, match="level 3 holds out 76"):
        ChatTask(levels=(3,)).heldout(77)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 3, 4]), st.integers(0, 2**32 - 1))
def test_training_draws_are_never_held_out(level, seed):
    task = ChatTask(levels=(level,))
    for p in task.sample(20, np.random.default_rng(seed)):
        assert not task.is_heldout(p.numbers, level)
        assert not task.is_heldout(p.numbers[1::-1] + p.numbers[2:], level)   # nor its swapped twin


def test_two_sample_seeds_is_the_pooled_t_interval():
    from grpo_lab.lm.evaluation import two_sample_seeds

    d, lo, hi = two_sample_seeds([0.5, 0.6, 0.7], [0.7, 0.8, 0.9])
    half = 2.776 * 0.1 * math.sqrt(2 / 3)                        # t_4 · s_p · √(1/3 + 1/3), s_p = 0.1
    assert d == pytest.approx(0.2) and lo == pytest.approx(0.2 - half, abs=1e-3) and hi == pytest.approx(0.2 + half, abs=1e-3)
    assert lo < 0 < hi                                          # 0.2 apart, s = 0.1, 3 seeds each: not detectable
    assert two_sample_seeds([0.5, 0.51, 0.52], [0.7, 0.71, 0.72])[1] > 0
    # tighter than one run of B against A's seeds (seed_difference), for the same spread
    _, l1, h1 = seed_difference(0.8, [0.5, 0.6, 0.7])
    assert hi - lo < (h1 - l1) / 2
    with pytest.raises(ValueError, match="at least 2 runs"):
        two_sample_seeds([0.5], [0.6, 0.7])
