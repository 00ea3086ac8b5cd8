"""grpo_lab.lm.tasks and evaluation: verifiable addition, rewards, held-out split, scoring."""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab.lm.evaluation import decode_responses, encode_answers, encode_prompts, score
from grpo_lab.lm.rollout import Rollout
from grpo_lab.lm.tasks import AdditionTask, Problem, overlong_penalty, partial_credit, verify
from grpo_lab.lm.tokenizer import char_tokenizer


def test_problem_prompt_and_answer():
    p = Problem(12, 345, 2)
    assert p.prompt == "12+345=" and p.answer == "357"


def test_verifier_is_zero_one():
    assert verify("357", "357") == 1.0
    assert verify("358", "357") == 0.0
    assert verify("3570", "357") == 0.0
    assert verify("", "357") == 0.0
    assert verify("357", "357", truncated=True) == 0.0


def test_partial_credit_numbers():
    assert partial_credit("57", "57") == 1.0
    assert partial_credit("58", "57") == 0.5            # tens right, units wrong
    assert partial_credit("157", "57") == pytest.approx(2 / 3)   # an extra digit costs
    assert partial_credit("7", "57") == 0.5
    assert partial_credit("57", "57", truncated=True) == 0.0
    assert partial_credit("", "57") == 0.0


@given(st.integers(0, 999), st.integers(0, 999), st.text("0123456789", max_size=5))
def test_partial_credit_is_in_unit_interval_and_one_only_when_exact(a, b, resp):
    ans = str(a + b)
    c = partial_credit(resp, ans)
    assert 0.0 <= c <= 1.0
    assert (c == 1.0) == (resp == ans)


def test_overlong_penalty_dapo_ramp():
    np.testing.assert_allclose(overlong_penalty([3, 12, 13, 14, 16], max_new=16, buffer=4),
                               [0, 0, -0.25, -0.5, -1.0])
    with pytest.raises(ValueError, match="buffer"):
        overlong_penalty([1], max_new=4, buffer=5)


def test_heldout_is_never_sampled_and_is_symmetric():
    task = AdditionTask(levels=(1, 2))
    rng = np.random.default_rng(0)
    train = task.sample(2000, rng)
    assert not any(task.is_heldout(p.a, p.b) for p in train)
    held = task.heldout(50)
    assert held and all(task.is_heldout(p.a, p.b) for p in held)
    assert all(task.is_heldout(p.b, p.a) for p in held)       # b+a is held out with a+b
    assert {p.level for p in held} == {1, 2}
    assert held == task.heldout(50)                            # fixed set


def test_levels_have_the_right_number_of_digits():
    task = AdditionTask(levels=(1, 2, 3))
    for p in task.sample(300, np.random.default_rng(1)):
        assert len(str(p.a)) == p.level or (p.level == 1 and p.a < 10)
        assert len(str(p.b)) == p.level or (p.level == 1 and p.b < 10)


def test_stratified_sampling_balances_levels():
    task = AdditionTask(levels=(1, 2, 3))
    levels = [p.level for p in task.sample(8, np.random.default_rng(2), stratified=True)]
    counts = sorted(levels.count(lv) for lv in (1, 2, 3))
    assert counts == [2, 3, 3]


def test_task_bad_input():
    with pytest.raises(ValueError, match="levels"):
        AdditionTask(levels=(4,))
    with pytest.raises(ValueError, match="weights"):
        AdditionTask(levels=(1, 2), weights=[1.0])
    with pytest.raises(ValueError, match="heldout_frac"):
        AdditionTask(heldout_frac=0.9)


def _rollout(tok, problems, responses, G, truncated=None):
    ids, mask = encode_prompts(tok, problems)
    rows = [tok(r, add_special_tokens=False)["input_ids"] + ([] if (truncated and truncated[i]) else [tok.eos_token_id])
            for i, r in enumerate(responses)]
    T = max(len(r) for r in rows)
    resp = torch.full((len(rows), T), tok.pad_token_id)
    for i, r in enumerate(rows):
        resp[i, :len(r)] = torch.tensor(r)
    L = torch.tensor([len(r) for r in rows])
    trunc = torch.tensor(truncated or [False] * len(rows))
    return Rollout(ids, mask, G, resp, (torch.arange(T)[None] < L[:, None]).float(), L, trunc)


def test_score_a_constructed_rollout():
    tok = char_tokenizer()
    task = AdditionTask(levels=(1, 2))
    problems = [Problem(3, 4, 1), Problem(12, 30, 2)]
    ro = _rollout(tok, problems, ["7", "8", "42", "4"], G=2)
    sc = score(task, tok, ro, problems)
    assert sc.texts == ["7", "8", "42", "4"]
    np.testing.assert_array_equal(sc.rewards, [1, 0, 1, 0])
    np.testing.assert_array_equal(sc.levels, [1, 1, 2, 2])


def test_truncated_responses_score_zero_even_if_digits_match():
    tok = char_tokenizer()
    task = AdditionTask(levels=(1,))
    problems = [Problem(3, 4, 1)]
    ro = _rollout(tok, problems, ["7", "7"], G=2, truncated=[False, True])
    assert decode_responses(tok, ro) == ["7", "7"]
    np.testing.assert_array_equal(score(task, tok, ro, problems).rewards, [1, 0])


def test_special_tokens_inside_a_response_are_wrong():
    tok = char_tokenizer()
    task = AdditionTask(levels=(1,))
    problems = [Problem(3, 4, 1)]
    ro = _rollout(tok, problems, ["7", "7"], G=2)
    ro.response_ids[1, 0] = tok.pad_token_id          # a sampled <pad> instead of "7"
    assert score(task, tok, ro, problems).rewards.tolist() == [1.0, 0.0]


def test_encode_answers_end_with_eos():
    tok = char_tokenizer()
    assert encode_answers(tok, [Problem(50, 50, 2)]) == [tok("100", add_special_tokens=False)["input_ids"]
                                                         + [tok.eos_token_id]]
