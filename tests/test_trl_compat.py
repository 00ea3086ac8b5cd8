"""TRL-compatible reward functions and the dataset builder (grpo_lab.lm.trl_compat).

The reward functions must give exactly the core loop's rewards (same verifier, same
truncation rule), so the two frameworks train on the same signal.
"""
import numpy as np
import pytest

from grpo_lab.lm.tasks import AdditionTask, overlong_penalty
from grpo_lab.lm.tokenizer import char_tokenizer
from grpo_lab.lm.trl_compat import OverlongReward, TaskReward, build_dataset, problem_rows, reward_functions


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


def ids(tok, text, eos=True):
    out = tok(text, add_special_tokens=False)["input_ids"]
    return out + [tok.eos_token_id] if eos else out


def test_problem_rows_are_training_problems_with_consistent_columns():
    task = AdditionTask(levels=(2,))
    rows = problem_rows(task, 50, seed=3)
    assert len(rows) == 50
    for r in rows:
        assert r["prompt"] == f"{r['a']}+{r['b']}="
        assert r["answer"] == str(r["a"] + r["b"])
        assert r["level"] == 2 and 10 <= r["a"] <= 99 and 10 <= r["b"] <= 99
        assert not task.is_heldout(r["a"], r["b"])
    assert rows == problem_rows(task, 50, seed=3)          # deterministic
    assert rows != problem_rows(task, 50, seed=4)


def test_build_dataset_columns():
    pytest.importorskip("datasets")
    ds = build_dataset(AdditionTask(levels=(1, 2)), 20, seed=0)
    assert len(ds) == 20
    assert set(ds.column_names) == {"prompt", "answer", "level", "a", "b"}
    assert all(isinstance(p, str) and p.endswith("=") for p in ds["prompt"])


def test_task_reward_matches_verifier_and_truncation(tok):
    task = AdditionTask(levels=(2,))
    rf = TaskReward(task, tok)
    comps = ["57", "58", "57", " 57 "]
    cids = [ids(tok, "57"), ids(tok, "58"), ids(tok, "57", eos=False), ids(tok, " 57 ")]
    r = rf(prompts=["23+34="] * 4, completions=comps, completion_ids=cids,
           answer=["57"] * 4, a=[23] * 4, b=[34] * 4, level=[2] * 4)
    # correct, wrong, truncated (no EOS) -> 0 like the core loop, whitespace stripped
    assert r == [1.0, 0.0, 0.0, 1.0]


def test_task_reward_keeps_special_tokens_like_the_core_loop(tok):
    # "5<pad>7<eos>": TRL's own decode would read "57"; the core loop reads it as wrong.
    rf = TaskReward(AdditionTask(levels=(2,)), tok)
    cid = tok("5", add_special_tokens=False)["input_ids"] + [tok.pad_token_id] \
        + tok("7", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    assert rf(prompts=["23+34="], completions=["57"], completion_ids=[cid], answer=["57"]) == [0.0]


def test_task_reward_partial_credit_and_answer_only(tok):
    task = AdditionTask(levels=(2,), partial=True)
    rf = TaskReward(task)                                   # no tokenizer: TRL's decoded text
    r = rf(prompts=["23+34="] * 3, completions=["57", "47", "157"], answer=["57"] * 3)
    assert r == pytest.approx([1.0, 0.5, 2 / 3])


def test_task_reward_bad_input(tok):
    rf = TaskReward(AdditionTask(levels=(2,)), tok)
    with pytest.raises(ValueError, match="answer"):
        rf(prompts=["1+2="], completions=["3"])
    with pytest.raises(ValueError, match="answer"):
        rf(prompts=["1+2="], completions=["3"], answer=["3", "4"])
    with pytest.raises(ValueError, match="disagrees"):
        rf(prompts=["1+2="], completions=["3"], answer=["4"], a=[1], b=[2], level=[1])
    with pytest.raises(TypeError, match="completions"):
        rf(prompts=["1+2="], completions=[[{"role": "assistant", "content": "3"}]], answer=["3"])
    with pytest.raises(TypeError, match="task"):
        TaskReward("addition")

    class NoEos:
        eos_token_id = None

    with pytest.raises(ValueError, match="EOS"):
        TaskReward(AdditionTask(), NoEos())


def test_overlong_reward_is_the_task_penalty(tok):
    rf = OverlongReward(max_new=16, buffer=4)
    lengths = [3, 12, 13, 14, 16]
    cids = [[7] * n for n in lengths]
    got = rf(prompts=[""] * 5, completions=[""] * 5, completion_ids=cids)
    np.testing.assert_allclose(got, overlong_penalty(np.array(lengths), 16, 4))
    assert got == pytest.approx([0.0, 0.0, -0.25, -0.5, -1.0])
    with pytest.raises(ValueError, match="buffer"):
        OverlongReward(max_new=4, buffer=8)


def test_reward_functions_list(tok):
    task = AdditionTask(levels=(2,))
    assert [f.__name__ for f in reward_functions(task, tok)] == ["task_reward"]
    fs = reward_functions(task, tok, overlong_buffer=4, max_new=16)
    assert [f.__name__ for f in fs] == ["task_reward", "overlong_reward"]
    with pytest.raises(ValueError, match="max_new"):
        reward_functions(task, tok, overlong_buffer=4)
