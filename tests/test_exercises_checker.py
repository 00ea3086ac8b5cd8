"""The nine checker defects of issue 19, one test each (every one of them failed before the fix).

1 gradients (loss exercises must return a differentiable torch.Tensor with the right gradient),
2 in-place changes to the input, 3 never a raw traceback, 4 a time limit, 5 a None return named,
6 the mask used in the denominator only, 7 "right to 2 decimals, give 3", 8 ε-free solutions,
9 option text accepted for every predict exercise.
"""
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab import exercises as ex
from grpo_lab.exercises import EXERCISES, Compute, Implement, Predict
from grpo_lab.exercises import _safety


def _clip_parts(logp, old_logp, adv, eps):
    ratio = torch.exp(logp - old_logp)
    return ratio, adv[:, None]


# --- 1. gradients ------------------------------------------------------------------------
def clip_ratio_detached(logp, old_logp, adv, mask, eps):      # exact values, no gradient inside the clip range
    ratio, A = _clip_parts(logp, old_logp, adv, eps)
    return -torch.minimum(ratio.detach() * A, ratio.clamp(1 - eps[0], 1 + eps[1]).detach() * A + 0 * ratio)


def clip_ratio_detached_unclipped(logp, old_logp, adv, mask, eps):
    ratio, A = _clip_parts(logp, old_logp, adv, eps)
    return -torch.minimum(ratio.detach() * A, ratio.clamp(1 - eps[0], 1 + eps[1]) * A)


def clip_numpy(logp, old_logp, adv, mask, eps):
    r = np.exp(logp.numpy() - old_logp.numpy())
    A = adv.numpy()[:, None]
    return -np.minimum(r * A, np.clip(r, 1 - eps[0], 1 + eps[1]) * A)


def clip_no_grad(logp, old_logp, adv, mask, eps):
    with torch.no_grad():
        ratio, A = _clip_parts(logp, old_logp, adv, eps)
        return -torch.minimum(ratio * A, ratio.clamp(1 - eps[0], 1 + eps[1]) * A)


def clip_detached(logp, old_logp, adv, mask, eps):
    ratio, A = _clip_parts(logp, old_logp, adv, eps)
    return (-torch.minimum(ratio * A, ratio.clamp(1 - eps[0], 1 + eps[1]) * A)).detach()


def seq_mean_item(values, mask):
    return ((values * mask).sum(-1) / mask.sum(-1)).mean().item()


def dr_grpo_numpy(values, mask, max_len):
    v, m = values.numpy(), mask.numpy()
    return (v * m).sum() / (v.shape[0] * max_len)


@pytest.mark.parametrize("exercise_id, fn", [
    ("loss.clipped", clip_numpy), ("loss.clipped", clip_no_grad), ("loss.clipped", clip_detached),
    ("agg.seq_mean", seq_mean_item), ("agg.dr_grpo", dr_grpo_numpy),
])
def test_a_loss_without_gradient_is_named(exercise_id, fn):
    fb = ex.check(exercise_id, fn)
    assert fb.status == "failed" and fb.mistakes == ("no_gradient",), fb.message
    assert "your loss has no gradient" in fb.message


@pytest.mark.parametrize("fn", [clip_ratio_detached_unclipped, clip_ratio_detached])
def test_no_gradient_through_rho_inside_the_clip_range_is_named(fn):
    fb = ex.check("loss.clipped", fn)
    assert fb.status == "failed" and fb.mistakes == ("rho_detached",), fb.message
    assert "no gradient flows through ρ inside the clip range" in fb.message


def test_a_loss_with_the_wrong_gradient_but_right_values_is_caught():
    def seq_mean_half_detached(values, mask):          # right value, half the gradient
        v = 0.5 * values + 0.5 * values.detach()
        return ((v * mask).sum(-1) / mask.sum(-1)).mean()

    fb = ex.check("agg.seq_mean", seq_mean_half_detached)
    assert fb.status == "failed" and fb.mistakes == ("gradient_wrong",) and "gradient" in fb.message


# --- 2. in-place changes to the input ------------------------------------------------------
def test_in_place_change_of_the_input_is_named():
    def adv_in_place(rewards):
        r = np.asarray(rewards, dtype=float)
        r -= r.mean(1, keepdims=True)                   # changes the caller's array
        std = np.sqrt((r ** 2).mean(1, keepdims=True))
        out = r / (std + 1e-4)
        out[std[:, 0] == 0] = 0.0
        return out

    def agg_in_place(values, mask):
        values[mask == 0] = 0                           # changes the caller's tensor
        return (values.sum(-1) / mask.sum(-1)).mean()

    for exercise_id, fn, arg in (("advantages.group", adv_in_place, "rewards"), ("agg.seq_mean", agg_in_place, "values")):
        fb = ex.check(exercise_id, fn)
        assert fb.status == "failed" and fb.mistakes == ("in_place",), fb.message
        assert f"changed its input `{arg}` in place" in fb.message


# --- 3. never a raw traceback ------------------------------------------------------------
@pytest.mark.parametrize("exercise_id", [i for i, e in EXERCISES.items() if isinstance(e, Predict)])
def test_predict_check_takes_arrays_and_tensors(exercise_id):
    for answer in (np.array([1, 2]), torch.tensor([1.0, 2.0], requires_grad=True), [1, 2], 3.5, (x for x in "ab")):
        fb = ex.check(exercise_id, answer)
        assert fb.status == "failed" and "answer with one of" in fb.message


def test_results_holding_tensors_that_require_grad_are_read():
    t = torch.tensor(0.5, requires_grad=True)
    fb = ex.check("advantages.hand_population", [t, t, t, t, t * -4])
    assert fb.passed, fb.message
    fb = ex.check("advantages.group", lambda rewards: [torch.tensor(1.0, requires_grad=True)])
    assert fb.status == "failed" and "shape" in fb.message


# --- 4. a time limit ---------------------------------------------------------------------
def test_an_infinite_loop_is_stopped_and_reported():
    def forever(rewards):
        while True:
            try:
                pass
            except Exception:                             # a student's broad except must not swallow it
                pass

    old = _safety.TIMEOUT_S
    _safety.TIMEOUT_S = 0.3
    try:
        t0 = time.perf_counter()
        fb = ex.check("advantages.group", forever)
        assert time.perf_counter() - t0 < 5
    finally:
        _safety.TIMEOUT_S = old
    assert fb.status == "error" and fb.mistakes == ("timeout",)
    assert "did not finish within 0.3 s" in fb.message and "on input" in fb.message
    assert ex.check("advantages.group", ex.get("advantages.group").reference).passed   # the alarm is gone


# --- 5. None returned ----------------------------------------------------------------------
@pytest.mark.parametrize("exercise_id", [i for i, e in EXERCISES.items() if isinstance(e, Implement)])
def test_returning_none_is_named(exercise_id):
    fb = ex.check(exercise_id, lambda *args: None)
    assert fb.status == "failed" and fb.mistakes == ("returned_none",)
    assert "returned None" in fb.message and "return" in fb.message


# --- 6. the mask in the denominator only ---------------------------------------------------
@pytest.mark.parametrize("exercise_id, fn", [
    ("agg.seq_mean", lambda values, mask: (values.sum(-1) / mask.sum(-1)).mean()),
    ("agg.token_mean", lambda values, mask: values.sum() / mask.sum()),
])
def test_mask_used_only_in_the_denominator_is_named(exercise_id, fn):
    fb = ex.check(exercise_id, fn)
    assert fb.status == "failed" and fb.mistakes == ("mask_in_denominator_only",), fb.message
    assert "Padding is counted" in fb.message


# --- 7. right to two decimals --------------------------------------------------------------
@pytest.mark.parametrize("exercise_id", [i for i, e in EXERCISES.items() if isinstance(e, Compute) and e.atol < 0.01])
def test_two_decimal_answer_to_a_three_decimal_exercise_says_give_3(exercise_id):
    two = np.round(np.asarray(ex.get(exercise_id).value(), dtype=float), 2)
    fb = ex.check(exercise_id, two.tolist())
    assert fb.status == "failed" and fb.mistakes == ("two_decimals",), fb.message
    assert "right to 2 decimals, give 3" in fb.message


def test_the_issue_two_decimal_examples():
    assert ex.check("kl.k3_value", 0.19).mistakes == ("two_decimals",)
    assert ex.check("length.weights_seq", [0.17, 0.06]).mistakes == ("two_decimals",)


# --- 8. ε-free solutions -------------------------------------------------------------------
def test_solutions_show_the_epsilon_free_values():
    assert ex.solution("advantages.hand_population") == [0.5, 0.5, 0.5, 0.5, -2.0]
    assert ex.solution("advantages.lone_success") == round(5 ** 0.5, 4)
    for i, e in EXERCISES.items():
        if isinstance(e, Compute):
            assert ex.check(i, ex.solution(i)).passed, i


# --- 9. option text ------------------------------------------------------------------------
@pytest.mark.parametrize("exercise_id", [i for i, e in EXERCISES.items() if isinstance(e, Predict)])
def test_option_text_is_accepted_for_every_predict_exercise(exercise_id):
    e = ex.get(exercise_id)
    right = ex.solution(exercise_id)
    text = next(o.text for o in e.options if o.key == right)
    assert ex.check(exercise_id, text.en).passed
    assert ex.check(exercise_id, f" {text.en.upper()} ").passed
    assert ex.check(exercise_id, text.zh).passed
    for o in e.options:
        if o.key != right:
            assert ex.check(exercise_id, o.text.en).mistakes == (f"option:{o.key}",)


def test_the_issue_option_text_examples():
    assert ex.check("length.push_harder", "the short one").passed
    assert ex.check("roadmap.granularity", "sequence-level").passed
    assert ex.check("loss.clip_gradient", "no gradient").passed


# --- the property: check never raises ------------------------------------------------------
def _forever(*args):
    while True:
        pass


def _raises(*args):
    raise ZeroDivisionError("student bug")


ANSWERS = st.one_of(
    st.none(), st.integers(), st.text(max_size=5), st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6),
    st.builds(lambda xs: np.asarray(xs), st.lists(st.floats(allow_nan=True), min_size=2, max_size=5)),
    st.builds(lambda xs: torch.tensor(xs, requires_grad=True), st.lists(st.floats(-5, 5), min_size=1, max_size=5)),
    st.builds(lambda xs: (x for x in xs), st.lists(st.integers(), max_size=3)),
)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list(EXERCISES)), ANSWERS)
def test_check_never_raises_on_any_answer(exercise_id, answer):
    fb = ex.check(exercise_id, answer)
    assert fb.status in ("passed", "failed", "error", "not attempted") and fb.message


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([i for i, e in EXERCISES.items() if isinstance(e, Implement)]),
       st.one_of(ANSWERS, st.sampled_from(["FOREVER", "RAISES"])))
def test_check_never_raises_whatever_the_function_does(exercise_id, returned):
    tag = returned if isinstance(returned, str) else None
    if tag == "FOREVER":
        fn = _forever
    elif tag == "RAISES":
        fn = _raises
    else:
        fn = lambda *args: returned                    # noqa: E731
    old = _safety.TIMEOUT_S
    _safety.TIMEOUT_S = 0.05
    try:
        fb = ex.check(exercise_id, fn)
    finally:
        _safety.TIMEOUT_S = old
    assert fb.status in ("failed", "error") and not fb.passed and fb.message
    if tag == "FOREVER":
        assert fb.mistakes == ("timeout",)
    if tag == "RAISES":
        assert "ZeroDivisionError: student bug" in fb.message
