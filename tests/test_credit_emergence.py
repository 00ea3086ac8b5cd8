"""grpo_lab.credit_emergence: token credit emerges across samples (seed 000 §2.3)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import credit_emergence
from grpo_lab.credit_emergence import CreditConfig

FAST = dict(steps=80, seeds=8)


def test_start_is_the_initial_softmax():
    r = credit_emergence.run(CreditConfig(steps=1, seeds=2, temperature=0.5, init_gap=1.0, K=6))
    expect = np.exp(-2.0) / (np.exp(-2.0) + 5)              # logits −1/τ for the target, 0 for the others
    assert np.allclose(r.p_key[0], expect) and np.allclose(r.p_filler[0], expect)


def test_deterministic_in_the_seed():
    a, b = credit_emergence.run(CreditConfig(**FAST)), credit_emergence.run(CreditConfig(**FAST))
    assert np.array_equal(a.p_key, b.p_key) and np.array_equal(a.p_filler, b.p_filler)
    c = credit_emergence.run(CreditConfig(seed=1, **FAST))
    assert not np.array_equal(a.p_key, c.p_key)


def test_only_the_decisive_token_gains_credit():
    r = credit_emergence.run(CreditConfig(G=16, **FAST))
    assert r.key_gain > 0.5                                 # the decisive token rises ...
    assert abs(r.filler_change) < 0.01 and r.filler_spread < 0.02   # ... the same token elsewhere does not


def test_group_size_matters_at_low_temperature():
    res = credit_emergence.sweep(group_sizes=(2, 16), temperatures=(0.5,), steps=100, seeds=8)
    small, large = res[2, 0.5], res[16, 0.5]
    assert large.informative.mean() > 3 * small.informative.mean()
    assert large.key_gain > 0.5 > 0.1 > small.key_gain
    assert small.steps_to(0.5) is None and large.steps_to(0.5) is not None


def test_diversity_matters_for_a_fixed_group():
    res = credit_emergence.sweep(group_sizes=(4,), temperatures=(0.5, 2.0), steps=100, seeds=8)
    assert res[4, 2.0].steps_to(0.5) < 60 and res[4, 0.5].steps_to(0.5) is None


@given(G=st.sampled_from([2, 4, 8]), key=st.integers(0, 3), seed=st.integers(0, 5))
def test_degenerate_free_start_and_bounded_probabilities(G, key, seed):
    r = credit_emergence.run(CreditConfig(G=G, batch=16, T=4, key=key, steps=5, seeds=2, seed=seed))
    assert r.p_key.shape == (6, 2) and r.reward.shape == (5, 2) and r.informative.shape == (5,)
    assert np.all((r.p_key > 0) & (r.p_key < 1)) and np.all((0 <= r.informative) & (r.informative <= 1))


@pytest.mark.parametrize("kw, name", [(dict(G=3, batch=32), "batch"), (dict(G=1), "G"), (dict(key=9), "key"),
                                      (dict(temperature=0.0), "temperature"), (dict(lr=-1.0), "lr")])
def test_bad_input_names_the_argument(kw, name):
    with pytest.raises(ValueError, match=name):
        credit_emergence.run(CreditConfig(**kw))


def test_table_and_figure():
    from grpo_lab.viz.credit_emergence import credit_figure
    from grpo_lab.viz.panel import MAX_FIG_WIDTH_PX, fig_width_px

    res = credit_emergence.sweep(group_sizes=(2, 4), temperatures=(1.0,), steps=10, seeds=2)
    table = credit_emergence.sweep_table(res)
    assert list(table.index) == [(2, 1.0), (4, 1.0)]
    fig = credit_figure(res)
    assert len(fig.axes[0].lines) == 4 and fig_width_px(fig) <= MAX_FIG_WIDTH_PX


def test_all_success_without_baseline_locks_in_a_random_habit():
    r = credit_emergence.all_success(K=4, steps=150, seeds=32)
    assert np.allclose(r.entropy[0], np.log(4))
    assert r.entropy[-1].mean() < np.log(4) - 0.2           # the policy sharpens ...
    assert len(set(r.argmax.tolist())) >= 3                  # ... onto whichever action it happened to sample


def test_all_success_with_the_group_baseline_does_nothing():
    r = credit_emergence.all_success(K=4, baseline="group", steps=20, seeds=4)
    assert np.allclose(r.entropy, np.log(4), rtol=0, atol=1e-15)        # Â = 0: not one update
    assert np.all(r.p_max == 0.25)
    with pytest.raises(ValueError, match="baseline"):
        credit_emergence.all_success(baseline="mean")


def test_start_push_separates_the_two_factors_of_a_larger_group():
    """G = 16 vs 2 at the start: (G − 1)/G gives 1.875×, ÷ std the rest (τ = 1: 3.09× in all, τ = 0.5: 3.52×)."""
    push = lambda **kw: credit_emergence.start_push(CreditConfig(**kw))
    p = np.exp(-1.0) / (np.exp(-1.0) + 5)
    assert np.isclose(push(G=4, scale="none"), 3 * p * (1 - p) / (4 * 6))      # lr·(G − 1)p(1 − p)/(G·T)
    for tau, total in ((1.0, 3.09), (0.5, 3.52)):
        none = push(G=16, temperature=tau, scale="none") / push(G=2, temperature=tau, scale="none")
        full = push(G=16, temperature=tau) / push(G=2, temperature=tau)
        assert np.isclose(none, 1.875) and round(full, 2) == total
    assert np.isclose(push(G=16, scale="none", lr=2.0), push(G=2, scale="none", lr=2.0 * 1.875))


def test_with_equal_pushes_the_group_size_does_not_change_the_speed():
    runs = {G: credit_emergence.run(CreditConfig(G=G, scale="none", lr=2.0 * (1.875 if G == 2 else 1.0), steps=80))
            for G in (2, 16)}
    assert abs(runs[2].steps_to(0.5) - runs[16].steps_to(0.5)) <= 3
    with pytest.raises(ValueError, match="scale"):
        credit_emergence.run(CreditConfig(scale="batch"))
