"""grpo_lab.stale_batch: notebook 04 §0's toy (why a ratio, π_θold and a clip)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab import stale_batch as sb


def test_first_row_is_the_sampling_policy_and_the_estimate_is_the_batch_mean():
    r = sb.run(0.2, steps=3)
    assert np.allclose(r.pi[0], sb.softmax(sb.Z_OLD))
    assert np.isclose(r.rho_min[0], 1.0) and np.isclose(r.rho_max[0], 1.0) and abs(r.kl[0]) < 1e-15
    assert np.isclose(r.J_hat[0], r.rewards.mean())                  # ρ ≡ 1: Ĵ is the plain mean reward
    assert np.isclose(r.J[0], sb.softmax(sb.Z_OLD) @ np.array(sb.Q))
    assert r.pi.shape == (4, 5) and np.allclose(r.pi.sum(1), 1)


@pytest.mark.parametrize("seed", range(4))
def test_the_clip_keeps_the_policy_near_pi_old_and_no_clip_does_not(seed):
    free, clip = sb.run(sb.UNCLIPPED, seed=seed), sb.run(0.2, seed=seed)
    assert np.array_equal(free.tokens, clip.tokens) and np.array_equal(free.rewards, clip.rewards)   # same batch
    assert clip.kl[-1] < 0.1 < 0.4 < free.kl[-1]
    assert free.rho_max[-1] > 1.5 * clip.rho_max[-1]


def test_one_inner_step_is_the_same_with_and_without_the_clip():
    # at θ = θ_old every ρ = 1: the clip cannot act on the first inner step (notebook 04 §4(b))
    free, clip = sb.run(sb.UNCLIPPED, steps=1), sb.run(0.2, steps=1)
    assert np.allclose(free.pi, clip.pi, atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=5, max_size=5), st.lists(st.floats(0, 1), min_size=5, max_size=5))
def test_importance_weights_turn_old_samples_into_expectations_under_the_new_policy(z_new, f):
    p_old, p_new, f = sb.softmax(sb.Z_OLD), sb.softmax(z_new), np.array(f)
    assert np.isclose((p_old * (p_new / p_old) * f).sum(), (p_new * f).sum())


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="steps"):
        sb.run(0.2, steps=0)
    with pytest.raises(ValueError, match="lr"):
        sb.run(0.2, lr=-1)
    with pytest.raises(ValueError, match="G"):
        sb.run(0.2, G=1)
    with pytest.raises(ValueError, match="q and z_old"):
        sb.run(0.2, q=(0.1, 0.9), z_old=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="eps_low"):
        sb.run(1.5)
