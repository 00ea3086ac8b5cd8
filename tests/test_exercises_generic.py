"""The checker's answers to mistakes any exercise can receive (issue 32, "Exercises"): a percentage, a
flipped sign, swapped entries, early rounding, sys.exit() in a function, None where "none" is an option,
and the lazy loading of the notebooks' exercise modules."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab import exercises as ex
from grpo_lab.exercises._generic import MESSAGES, generic_mistake
from grpo_lab.exercises._kinds import Compute, Implement, Predict

COMPUTE = [i for i, e in ex.EXERCISES.items() if isinstance(e, Compute)]
IMPLEMENT = [i for i, e in ex.EXERCISES.items() if isinstance(e, Implement)]


def _value(i):
    return np.asarray(ex.get(i).value(), dtype=float)


def _named(i, answer):
    """The mistakes named for ``answer``, or None where the exercise's own list names something else."""
    fb = ex.check(i, answer)
    assert fb.status == "failed", (i, answer, fb.message)
    return fb.mistakes


@pytest.mark.parametrize("exercise_id", COMPUTE)
def test_sign_and_percent_are_named_or_known(exercise_id):
    v = _value(exercise_id)
    if np.allclose(v, 0, atol=ex.get(exercise_id).atol):
        pytest.skip("an answer of 0 has no sign and no percentage")
    for answer, generic in ((-v, "sign_flipped"), (100 * v, "percent")):
        if np.allclose(answer, v, atol=ex.get(exercise_id).atol):
            continue                                   # -0.0 and friends: the right answer, not a mistake
        names = _named(exercise_id, answer.tolist())
        assert names, (exercise_id, generic)            # never the generic "does not match yet"
        known = {k.key for k in ex.get(exercise_id).known}
        assert names[0] == generic or names[0] in known, (exercise_id, names)


def test_the_generic_rules_on_plain_numbers():
    e = np.array([0.25, -1.5])
    assert generic_mistake(100 * e, e, 0.01) == "percent"
    assert generic_mistake(-e, e, 0.01) == "sign_flipped"
    assert generic_mistake(e[::-1].copy(), e, 0.01) == "swapped"
    assert generic_mistake(np.round(np.array([0.75])), np.array([0.75]), 0.01) == "rounded_integer"
    assert generic_mistake(np.array([0.6]), np.array([0.625]), 0.01) == "rounded_one_decimal"
    assert generic_mistake(np.array([0.3]), np.array([0.25]), 0.01) is None
    assert generic_mistake(np.zeros(2), np.zeros(2), 0.01) is None
    assert set(MESSAGES) == {"percent", "sign_flipped", "swapped", "rounded_integer", "rounded_one_decimal"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=1, max_size=5))
def test_the_right_answer_is_never_a_generic_mistake(values):
    e = np.asarray(values)
    assert generic_mistake(e.copy(), e, 0.01) is None                 # the right answer is never a mistake
    assert generic_mistake(e + 0.004, e, 0.01) is None                # nor is one within the tolerance
    if not np.allclose(e, 0, atol=0.01):
        assert generic_mistake(-e, e, 0.01) in ("sign_flipped", "swapped", "percent") or np.allclose(-e, e, atol=0.01)


def test_a_single_number_is_not_called_entry_one():
    i = next(i for i in COMPUTE if _value(i).size == 1 and abs(float(_value(i))) > 0.5)
    v = float(_value(i))
    msg = ex.check(i, v + 0.37 if v > 0 else v - 0.37).message
    assert "entry 1" not in msg and "your answer" in msg, msg


@pytest.mark.parametrize("exercise_id", IMPLEMENT)
def test_sys_exit_in_a_function_is_reported_not_raised(exercise_id):
    def answer(*args):
        sys.exit(0)
    fb = ex.check(exercise_id, answer)
    assert fb.status == "error" and fb.mistakes == ("sys_exit",), fb.message
    assert "sys.exit" in fb.message


def test_none_where_none_is_an_option_says_so():
    with_none = [i for i, e in ex.EXERCISES.items() if isinstance(e, Predict) and "none" in e.accepted()]
    assert with_none, "the course has predict exercises with an option 'none'"
    for i in with_none:
        fb = ex.check(i, None)
        assert fb.status == "not attempted" and '"none"' in fb.message, (i, fb.message)
    other = next(i for i, e in ex.EXERCISES.items() if isinstance(e, Predict) and "none" not in e.accepted())
    assert '"none"' not in ex.check(other, None).message


def test_importing_the_exercises_loads_no_notebook_module():
    code = ("import sys; from grpo_lab import exercises as ex; "
            "before = sorted(m for m in sys.modules if m.startswith('grpo_lab.exercises.nb')); "
            "ex.check('bandit.same_mean', 'a'); "
            "after = sorted(m for m in sys.modules if m.startswith('grpo_lab.exercises.nb')); "
            "print(before, after, 'transformers' in sys.modules, 'grpo_lab.lm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] ['grpo_lab.exercises.nb00', 'grpo_lab.exercises.nb01'] False False", out


def test_the_registry_keeps_course_order_and_all_ids():
    ids = list(ex.EXERCISES)
    notebooks = [ex.get(i).notebook for i in ids]
    assert notebooks == sorted(notebooks) and len(ids) == len(set(ids)) == len(ex.catalog())
    with pytest.raises(KeyError, match="exercise_id must be one of"):
        ex.get("no.such_exercise")
