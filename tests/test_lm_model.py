"""grpo_lab.lm.model: tiny Llama/Qwen2 from a config, save/load as safetensors, clear errors."""
import json

import pytest
import torch

from grpo_lab.lm.model import load_model, make_model, n_params, save_model, tiny_config
from grpo_lab.lm.tokenizer import char_tokenizer

TINY = dict(hidden=32, intermediate=64, layers=1, heads=2)


@pytest.fixture(scope="module")
def tok():
    return char_tokenizer()


def test_default_size_is_about_one_million(tok):
    m = make_model(tok)
    assert 0.9e6 < n_params(m) < 1.2e6
    assert m.config.tie_word_embeddings and m.config.num_hidden_layers == 4 and m.config.hidden_size == 128
    assert m.config.eos_token_id == tok.eos_token_id


def test_seed_determines_weights_and_leaves_global_rng_alone(tok):
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b, c = make_model(tok, seed=1, **TINY), make_model(tok, seed=1, **TINY), make_model(tok, seed=2, **TINY)
    assert torch.rand(1) == before
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_save_load_round_trip_safetensors(tok, tmp_path, arch):
    m = make_model(tok, seed=3, arch=arch, **TINY)
    save_model(m, tok, tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    assert not list(tmp_path.glob("*.bin"))
    m2, tok2 = load_model(tmp_path)
    s1, s2 = m.state_dict(), m2.state_dict()
    assert set(s1) == set(s2) and all(torch.equal(s1[k], s2[k]) for k in s1)
    x = torch.tensor([tok("1+2=")["input_ids"]])
    with torch.no_grad():
        assert torch.equal(m(x).logits, m2(x).logits)
    assert tok2("5+5=")["input_ids"] == tok("5+5=")["input_ids"]


def test_missing_model_path(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_model(tmp_path / "no_such_model")
    with pytest.raises(ValueError, match="config.json"):
        load_model(tmp_path)
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        load_model(tmp_path / "f.txt")


def test_model_dir_whose_tokenizer_has_no_eos(tok, tmp_path):
    save_model(make_model(tok, **TINY), tok, tmp_path)
    cfg_path = tmp_path / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["eos_token"] = None
    cfg_path.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="EOS"):
        load_model(tmp_path)


def test_bad_config_values(tok):
    with pytest.raises(ValueError, match="arch"):
        tiny_config(tok, arch="gpt9")
    with pytest.raises(ValueError, match="hidden"):
        tiny_config(tok, hidden=30, heads=4)
    with pytest.raises(ValueError, match="seed"):
        make_model(tok, seed=-1)
