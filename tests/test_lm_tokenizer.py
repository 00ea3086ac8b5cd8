"""grpo_lab.lm.tokenizer: a character tokenizer built with `tokenizers`, wrapped for transformers."""
import pytest
from hypothesis import given
from hypothesis import strategies as st
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from grpo_lab.lm.tokenizer import DEFAULT_CHARS, SPECIALS, char_tokenizer, check_tokenizer, load_tokenizer


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


def test_is_a_transformers_fast_tokenizer_with_specials(tok):
    assert isinstance(tok, PreTrainedTokenizerFast)
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert len(tok) == len(SPECIALS) + len(DEFAULT_CHARS)
    assert tok.padding_side == "left"


def test_one_token_per_character_and_bos_first(tok):
    ids = tok("12+34=")["input_ids"]
    assert ids[0] == tok.bos_token_id
    assert len(ids) == 1 + 6
    assert tok.convert_ids_to_tokens(ids[1:]) == list("12+34=")


@given(st.text(alphabet=DEFAULT_CHARS, min_size=0, max_size=30))
def test_round_trip(text):
    tok = char_tokenizer()
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)
    assert tok.decode(ids) == text


def test_unknown_characters_map_to_unk(tok):
    assert tok("a", add_special_tokens=False)["input_ids"] == [tok.unk_token_id]


def test_left_padding_batch(tok):
    enc = tok(["1+2=", "12+345="], padding=True)
    assert enc["attention_mask"][0] == [0, 0, 0, 1, 1, 1, 1, 1]
    assert enc["input_ids"][0][:3] == [tok.pad_token_id] * 3


def test_save_pretrained_from_pretrained(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    for loaded in (AutoTokenizer.from_pretrained(tmp_path), load_tokenizer(tmp_path)):
        assert loaded("99+1=")["input_ids"] == tok("99+1=")["input_ids"]
        assert loaded.eos_token_id == tok.eos_token_id and loaded.pad_token_id == tok.pad_token_id


def test_bad_chars():
    with pytest.raises(ValueError, match="chars"):
        char_tokenizer("")
    with pytest.raises(ValueError, match="repeat"):
        char_tokenizer("112")


def test_tokenizer_without_eos_is_refused(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    bad = AutoTokenizer.from_pretrained(tmp_path)
    bad.eos_token = None
    with pytest.raises(ValueError, match="EOS"):
        check_tokenizer(bad)


def test_load_tokenizer_missing_dir(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        load_tokenizer(tmp_path / "nope")
