"""Every typical mistake of issue 13 is caught and named; unknown mistakes get "does not match".

The wrong implementations below are written the way a student would write them (numpy/torch
code), not taken from the checker's own list, so the tests show that real mistakes are
recognised. A second test hands in every mistake of the checker's list itself.
"""
import numpy as np
import pytest
import torch

from grpo_lab import exercises as ex
from grpo_lab.exercises import EXERCISES, Implement


# --- eq. (1) -----------------------------------------------------------------------------
def adv_bessel(rewards):
    r = np.asarray(rewards, dtype=float)
    adv = (r - r.mean(1, keepdims=True)) / (r.std(1, ddof=1, keepdims=True) + 1e-4)
    adv[np.all(r == r[:, :1], axis=1)] = 0.0
    return adv


def adv_torch_std(rewards):   # what TRL's code does: torch.std is Bessel-corrected
    r = torch.as_tensor(rewards, dtype=torch.float64)
    return (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)


def adv_no_eps_guarded(rewards):
    r = np.asarray(rewards, dtype=float)
    std = r.std(1, keepdims=True)
    return np.where(std > 0, (r - r.mean(1, keepdims=True)) / np.where(std > 0, std, 1.0), 0.0)


def adv_no_eps(rewards):
    r = np.asarray(rewards, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (r - r.mean(1, keepdims=True)) / r.std(1, keepdims=True)


def adv_eps_in_sqrt(rewards):
    r = np.asarray(rewards, dtype=float)
    return (r - r.mean(1, keepdims=True)) / np.sqrt(r.var(1, keepdims=True) + 1e-4)


def adv_nan_degenerate(rewards):   # adds ε only where the std is positive: 0/0 on all-equal groups
    r = np.asarray(rewards, dtype=float)
    std = r.std(1, keepdims=True)
    with np.errstate(invalid="ignore"):
        return (r - r.mean(1, keepdims=True)) / (std + 1e-4 * (std > 0))


def adv_sign(rewards):
    r = np.asarray(rewards, dtype=float)
    return (r.mean(1, keepdims=True) - r) / (r.std(1, keepdims=True) + 1e-4)


def adv_whole_batch(rewards):
    r = np.asarray(rewards, dtype=float)
    return (r - r.mean()) / (r.std() + 1e-4)


@pytest.mark.parametrize("fn, named", [
    (adv_bessel, {"bessel_std"}),
    (adv_torch_std, {"bessel_std"}),
    (adv_no_eps_guarded, {"eps_left_out"}),
    (adv_no_eps, {"eps_left_out", "nan_on_degenerate"}),   # both mistakes at once, both named
    (adv_eps_in_sqrt, {"eps_in_sqrt"}),
    (adv_nan_degenerate, {"nan_on_degenerate"}),
    (adv_sign, {"sign_flipped"}),
    (adv_whole_batch, {"whole_batch"}),
])
def test_group_advantage_mistakes_are_named(fn, named):
    fb = ex.check("advantages.group", fn)
    assert fb.status == "failed" and set(fb.mistakes) == named, fb.message
    assert "does not match" not in fb.message


def test_each_named_mistake_has_its_own_words():
    assert "Bessel" in ex.check("advantages.group", adv_bessel).message
    assert "ε is left out" in ex.check("advantages.group", adv_no_eps_guarded).message
    assert "square root" in ex.check("advantages.group", adv_eps_in_sqrt).message
    assert "NaN" in ex.check("advantages.group", adv_nan_degenerate).message


def test_step_loss_names_the_layout_the_std_and_the_aggregation():
    def step(logp, old_logp, rewards, mask, group_size, *, layout="flat", unbiased=False, agg="seq"):
        r = torch.as_tensor(rewards, dtype=logp.dtype)
        r = r.reshape(-1, group_size) if layout == "flat" else r.reshape(group_size, -1).T
        std = r.std(dim=1, unbiased=unbiased, keepdim=True)
        adv = torch.where(std == 0, torch.zeros_like(r), (r - r.mean(1, keepdim=True)) / (std + 1e-4))
        adv = (adv if layout == "flat" else adv.T).reshape(-1, 1)
        ratio = torch.exp(logp - old_logp)
        per_token = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
        if agg == "seq":
            return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()
        return (per_token * mask).sum() / mask.sum()

    assert ex.check("lm.step_loss", step).passed
    assert ex.check("lm.step_loss", lambda *a: step(*a, layout="interleaved")).mistakes == ("interleaved",)
    assert ex.check("lm.step_loss", lambda *a: step(*a, unbiased=True)).mistakes == ("bessel_std",)
    assert ex.check("lm.step_loss", lambda *a: step(*a, agg="token")).mistakes == ("token_mean",)


# --- eq. (3) -----------------------------------------------------------------------------
def _parts(logp, old_logp, adv, eps):
    ratio = torch.exp(logp - old_logp)
    return ratio, adv[:, None], ratio.clamp(1 - eps[0], 1 + eps[1])


def clip_objective(logp, old_logp, adv, mask, eps):        # sign flipped: the objective, not the loss
    ratio, A, clipped = _parts(logp, old_logp, adv, eps)
    return torch.minimum(ratio * A, clipped * A)


def clip_no_min(logp, old_logp, adv, mask, eps):
    ratio, A, clipped = _parts(logp, old_logp, adv, eps)
    return -(clipped * A)


def clip_upper_only(logp, old_logp, adv, mask, eps):
    ratio, A, _ = _parts(logp, old_logp, adv, eps)
    return -torch.minimum(ratio * A, ratio.clamp(max=1 + eps[1]) * A)


def clip_lower_only(logp, old_logp, adv, mask, eps):
    ratio, A, _ = _parts(logp, old_logp, adv, eps)
    return -torch.minimum(ratio * A, ratio.clamp(min=1 - eps[0]) * A)


def clip_swapped(logp, old_logp, adv, mask, eps):
    ratio, A, _ = _parts(logp, old_logp, adv, eps)
    return -torch.minimum(ratio * A, ratio.clamp(1 - eps[1], 1 + eps[0]) * A)


def clip_symmetric(logp, old_logp, adv, mask, eps):      # the notebook's one-ε code, copied
    ratio, A, _ = _parts(logp, old_logp, adv, eps)
    return -torch.minimum(ratio * A, ratio.clamp(1 - eps[0], 1 + eps[0]) * A)


def clip_no_broadcast(logp, old_logp, adv, mask, eps):   # forgot adv[:, None]
    ratio = torch.exp(logp - old_logp)
    return -torch.minimum(ratio * adv, ratio.clamp(1 - eps[0], 1 + eps[1]) * adv)


@pytest.mark.parametrize("fn, named", [
    (clip_objective, {"sign_flipped"}), (clip_no_min, {"min_left_out"}),
    (clip_upper_only, {"clip_upper_only"}), (clip_lower_only, {"clip_lower_only"}),
    (clip_swapped, {"eps_swapped"}), (clip_symmetric, {"symmetric_low"}),
])
def test_clipped_loss_mistakes_are_named(fn, named):
    fb = ex.check("loss.clipped", fn)
    assert fb.status == "failed" and set(fb.mistakes) == named, fb.message


def test_clipped_loss_masked_positions_are_ignored():
    def junk_on_padding(logp, old_logp, adv, mask, eps):
        ratio, A, clipped = _parts(logp, old_logp, adv, eps)
        return torch.where(mask > 0, -torch.minimum(ratio * A, clipped * A), torch.full_like(logp, 99.0))

    assert ex.check("loss.clipped", junk_on_padding).passed


def test_a_student_exception_is_reported_not_raised():
    fb = ex.check("loss.clipped", clip_no_broadcast)
    assert fb.status == "error" and "RuntimeError" in fb.message and "on input" in fb.message
    assert "Traceback" not in fb.message


# --- eq. (5) -----------------------------------------------------------------------------
def k3_grad_inverted(logp, ref_logp):
    u = torch.exp(logp - ref_logp)           # u = π_θ/π_ref
    return u - 1


def k3_grad_no_chain_rule(logp, ref_logp):
    u = torch.exp(ref_logp - logp)
    return 1 - 1 / u                         # ∂k3/∂u, not ∂k3/∂logp


def test_k3_gradient_mistakes_are_named():
    fb = ex.check("kl.k3", k3_grad_inverted)
    assert fb.mistakes == ("u_inverted",) and "π_ref/π_θ" in fb.message
    assert ex.check("kl.k3", k3_grad_no_chain_rule).mistakes == ("chain_rule_missing",)
    assert ex.check("kl.k3", lambda logp, ref_logp: torch.ones_like(logp)).mistakes == ("k1_grad",)


# --- eqs. (6) and (7) --------------------------------------------------------------------
def token_mean_code(values, mask):
    return (values * mask).sum() / mask.sum()


def seq_mean_code(values, mask):
    return ((values * mask).sum(-1) / mask.sum(-1)).mean()


def seq_mean_padding(values, mask):           # divides by the padded length T
    return (values * mask).mean(-1).mean()


def seq_mean_padding_values(values, mask):    # ignores the mask altogether
    return values.mean(-1).mean()


def token_mean_padding(values, mask):         # divides by B·T
    return (values * mask).mean()


@pytest.mark.parametrize("exercise_id, fn, named", [
    ("agg.seq_mean", token_mean_code, {"eq7_for_eq6"}),
    ("agg.token_mean", seq_mean_code, {"eq6_for_eq7"}),
    ("agg.seq_mean", seq_mean_padding, {"padding_in_denominator"}),
    ("agg.seq_mean", seq_mean_padding_values, {"padding_values"}),
    ("agg.token_mean", token_mean_padding, {"padding_in_denominator"}),
])
def test_aggregation_mistakes_are_named(exercise_id, fn, named):
    fb = ex.check(exercise_id, fn)
    assert fb.status == "failed" and set(fb.mistakes) == named, fb.message
    if "padding" in next(iter(named)):
        assert "Padding is counted" in fb.message


def test_dr_grpo_verl_convention_is_named():
    def verl(values, mask, max_len):
        return (values * mask).sum() / max_len

    assert ex.check("agg.dr_grpo", verl).mistakes == ("no_1_over_B",)


# --- the bandit and RLOO -------------------------------------------------------------------
def test_bandit_mistakes_are_named():
    import math

    def flipped(theta, action, reward, baseline):
        p = 1 / (1 + math.exp(-theta))
        return -(reward - baseline) * ((1 - p) if action == "A" else -p)

    def no_baseline(theta, action, reward, baseline):
        p = 1 / (1 + math.exp(-theta))
        return reward * ((1 - p) if action == "A" else -p)

    assert ex.check("bandit.reinforce", flipped).mistakes == ("sign_flipped",)
    assert ex.check("bandit.reinforce", no_baseline).mistakes == ("baseline_ignored",)


def test_rloo_including_itself_is_named():
    def grpo_mean(rewards):
        r = np.asarray(rewards, dtype=float)
        return r - r.mean(1, keepdims=True)

    assert ex.check("advantages.rloo", grpo_mean).mistakes == ("included_self",)


# --- the checker's own list, and what it does not know -------------------------------------
@pytest.mark.parametrize("exercise_id, key", [(i, m.key) for i, e in EXERCISES.items() if isinstance(e, Implement)
                                              for m in e.mistakes])
def test_every_listed_mistake_is_reachable_and_named(exercise_id, key):
    m = next(m for m in ex.get(exercise_id).mistakes if m.key == key)
    fb = ex.check(exercise_id, m.output)
    assert fb.status == "failed" and fb.mistakes[0] == key, (fb.mistakes, fb.message)
    assert str(m.message) in fb.message


def test_unrecognised_mistake_gets_does_not_match_with_input_expected_received():
    fb = ex.check("advantages.group", lambda rewards: 2 * adv_bessel(rewards) + 1)
    assert fb.status == "failed" and fb.mistakes == ()
    assert "does not match" in fb.message
    assert all(w in fb.message for w in ("input", "expected", "received", "lecture notes: 1,1,0,0"))


def test_wrong_shape_type_and_arity_get_clear_messages():
    assert "shape" in ex.check("advantages.group", lambda rewards: np.zeros(3)).message
    assert "returned str" in ex.check("kl.k3", lambda logp, ref_logp: "k3").message
    fb = ex.check("kl.k3", lambda logp: logp)
    assert fb.status == "failed" and "(logp, ref_logp)" in fb.message
    assert "expected a function" in ex.check("kl.k3", 3.0).message

    def raises(theta, action, reward, baseline):
        raise ValueError("nope")

    fb = ex.check("bandit.reinforce", raises)
    assert fb.status == "error" and "ValueError: nope" in fb.message


@pytest.mark.parametrize("exercise_id", ["kl.k3", "advantages.group", "loss.clipped", "agg.seq_mean", "lm.step_loss"])
def test_float32_arithmetic_is_named_not_a_formula_error(exercise_id):
    ref = ex.get(exercise_id).reference

    def in_float32(*args):
        args = [a.float() if isinstance(a, torch.Tensor) else
                np.asarray(a, dtype=np.float32) if isinstance(a, np.ndarray) else a for a in args]
        return ref(*args)

    fb = ex.check(exercise_id, in_float32)
    assert fb.passed or fb.mistakes == ("float32_precision",), fb.message
