"""grpo_lab.lm.rollout: shared-prompt sampling and log-probs equal the naive computation."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab.lm.evaluation import encode_prompts
from grpo_lab.lm.model import make_model
from grpo_lab.lm.rollout import Rollout, sample, token_logp
from grpo_lab.lm.tasks import Problem
from grpo_lab.lm.tokenizer import char_tokenizer

PROBLEMS = [Problem(1, 2, 1), Problem(12, 345, 2), Problem(99, 9, 2)]   # different prompt lengths


@pytest.fixture(scope="module")
def setup():
    tok = char_tokenizer()
    model = make_model(tok, seed=5, hidden=32, intermediate=64, layers=2, heads=2)
    ids, mask = encode_prompts(tok, PROBLEMS)
    assert (mask == 0).any()            # left padding is exercised
    ro = sample(model, ids, mask, G=3, max_new=5, temperature=1.0, eos_id=tok.eos_token_id,
                pad_id=tok.pad_token_id, generator=torch.Generator().manual_seed(0))
    return tok, model, ro


def _naive_logp(model, tok, ro, i):
    """log π of response i's tokens from one unpadded forward of prompt + response."""
    p = i // ro.G
    prompt = ro.prompt_ids[p][ro.prompt_mask[p].bool()]
    L = int(ro.lengths[i])
    full = torch.cat([prompt, ro.response_ids[i, :L]])[None]
    logits = model(input_ids=full).logits[0, len(prompt) - 1: len(prompt) - 1 + L]
    return logits.log_softmax(-1).gather(-1, ro.response_ids[i, :L, None]).squeeze(-1)


def test_shapes_masks_and_lengths(setup):
    tok, _, ro = setup
    assert ro.B == 9 and ro.response_ids.shape[0] == 9 and ro.mask.shape == ro.response_ids.shape
    assert torch.equal(ro.mask.sum(-1).long(), ro.lengths)
    for i in range(ro.B):
        row = ro.response_ids[i, :int(ro.lengths[i])]
        has_eos = bool((row == tok.eos_token_id).any())
        assert has_eos != bool(ro.truncated[i])
        if has_eos:
            assert int(row[-1]) == tok.eos_token_id and int((row == tok.eos_token_id).sum()) == 1
        else:
            assert int(ro.lengths[i]) == ro.response_ids.shape[1] == 5


def test_token_logp_equals_naive_forward(setup):
    tok, model, ro = setup
    lp = token_logp(model, ro).logp.detach()
    with torch.no_grad():
        for i in range(ro.B):
            L = int(ro.lengths[i])
            torch.testing.assert_close(lp[i, :L], _naive_logp(model, tok, ro, i), atol=1e-5, rtol=1e-5)


def test_gradient_through_the_shared_prompt_equals_naive(setup):
    tok, model, ro = setup
    w = torch.randn(ro.response_ids.shape, generator=torch.Generator().manual_seed(1)) * ro.mask
    model.zero_grad()
    (token_logp(model, ro).logp * w).sum().backward()
    shared = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad()
    sum((_naive_logp(model, tok, ro, i) * w[i, :int(ro.lengths[i])]).sum() for i in range(ro.B)).backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(shared[n], p.grad, atol=1e-5, rtol=1e-4, msg=n)


def test_entropy_is_nonnegative_and_at_most_log_vocab(setup):
    tok, model, ro = setup
    ent = token_logp(model, ro, entropy=True).entropy
    assert (ent >= -1e-6).all() and (ent <= torch.log(torch.tensor(float(len(tok)))) + 1e-5).all()


def test_padded_greedy_sampling_matches_one_prompt_at_a_time(setup):
    tok, model, _ = setup
    ids, mask = encode_prompts(tok, PROBLEMS)
    kw = dict(max_new=5, temperature=0, eos_id=tok.eos_token_id, pad_id=tok.pad_token_id)
    batch = sample(model, ids, mask, G=2, **kw)
    for k, p in enumerate(PROBLEMS):
        i1, m1 = encode_prompts(tok, [p])
        one = sample(model, i1, m1, G=1, **kw)
        L = int(one.lengths[0])
        assert batch.response_ids[2 * k, :L].tolist() == one.response_ids[0, :L].tolist()
        assert batch.response_ids[2 * k + 1, :L].tolist() == one.response_ids[0, :L].tolist()


def test_sampling_is_reproducible_from_the_generator(setup):
    tok, model, ro = setup
    again = sample(model, ro.prompt_ids, ro.prompt_mask, G=3, max_new=5, temperature=1.0, eos_id=tok.eos_token_id,
                   pad_id=tok.pad_token_id, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again.response_ids, ro.response_ids)


def test_select_groups_and_concat(setup):
    tok, _, ro = setup
    sub = ro.select_groups([2, 0])
    assert sub.B == 6 and torch.equal(sub.response_ids[:3], ro.response_ids[6:9])
    both = Rollout.concat([sub, ro.select_groups([1])], tok.pad_token_id)
    assert both.B == 9 and both.prompt_ids.shape[0] == 3
    assert torch.equal(both.lengths[6:], ro.lengths[3:6])


def test_duplicate_responses_are_computed_once_with_the_same_values_and_gradients(setup):
    tok, model, ro = setup
    dup = Rollout(ro.prompt_ids, ro.prompt_mask, ro.G, ro.response_ids.clone(), ro.mask.clone(),
                  ro.lengths.clone(), ro.truncated.clone())
    for i in (1, 2, 4):                                        # copy the first response of its group
        j = (i // ro.G) * ro.G
        dup.response_ids[i], dup.mask[i] = ro.response_ids[j], ro.mask[j]
        dup.lengths[i], dup.truncated[i] = ro.lengths[j], ro.truncated[j]
    w = torch.randn(dup.response_ids.shape, generator=torch.Generator().manual_seed(2)) * dup.mask
    grads, values = [], []
    for dedup in (True, False):
        model.zero_grad()
        tl = token_logp(model, dup, entropy=True, dedup=dedup)
        (tl.logp * w).sum().backward()
        values.append((tl.logp.detach() * dup.mask, tl.entropy * dup.mask))
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    torch.testing.assert_close(values[0][0], values[1][0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(values[0][1], values[1][1], atol=1e-5, rtol=1e-5)
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], atol=1e-5, rtol=1e-4, msg=n)


# ---- speed work that must not change a value (issue 20, item 6) -------------------------------------
def _long_rollout(tok, model):
    """Responses of different lengths up to 12 tokens (EOS never drawn, then lengths cut by hand)."""
    ids, mask = encode_prompts(tok, PROBLEMS)
    ro = sample(model, ids, mask, G=4, max_new=12, temperature=1.0, eos_id=-1, pad_id=tok.pad_token_id,
                generator=torch.Generator().manual_seed(3))
    L = torch.tensor([12, 3, 5, 7, 2, 12, 4, 9, 6, 11, 1, 8])
    m = (torch.arange(12)[None] < L[:, None]).float()
    resp = torch.where(m > 0, ro.response_ids, torch.full_like(ro.response_ids, tok.pad_token_id))
    return Rollout(ro.prompt_ids, ro.prompt_mask, 4, resp, m, L, L == 12)


def test_length_buckets_run_each_group_to_its_own_length_with_the_same_values_and_gradients(setup, monkeypatch):
    from grpo_lab.lm import rollout

    tok, model, _ = setup
    ro = _long_rollout(tok, model)
    w = torch.randn(ro.response_ids.shape, generator=torch.Generator().manual_seed(4)) * ro.mask
    out = []
    for cost in (float("inf"), 1.0):        # one forward (the tiny model's default); buckets forced
        monkeypatch.setattr(rollout, "BUCKET_COST_TOKEN_PARAMS", cost)
        n = len(rollout.length_buckets(ro.lengths, rollout.n_params(model)))
        model.zero_grad()
        tl = token_logp(model, ro, entropy=True)
        (tl.logp * w).sum().backward()
        out.append((n, tl.logp.detach() * ro.mask, tl.entropy * ro.mask,
                    {k: p.grad.clone() for k, p in model.named_parameters()}))
    assert out[0][0] == 1 and out[1][0] >= 3
    torch.testing.assert_close(out[0][1], out[1][1], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[0][2], out[1][2], atol=1e-5, rtol=1e-5)
    for k in out[0][3]:
        torch.testing.assert_close(out[0][3][k], out[1][3][k], atol=1e-5, rtol=1e-4, msg=k)


def test_the_tiny_model_and_equal_lengths_never_split():
    from grpo_lab.lm.rollout import length_buckets

    L = torch.tensor([40, 12, 15, 18, 20, 22, 25, 14, 16, 19, 21, 23, 30, 13, 17, 24])
    assert length_buckets(L, 900_000) == [None]                 # a forward costs it more than any padding
    assert length_buckets(torch.full((16,), 40), 134_515_008) == [None]
    parts = length_buckets(L, 134_515_008)                       # SmolLM2-135M: the measured batch splits
    assert len(parts) >= 2


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 96), min_size=1, max_size=64), st.integers(10_000, 10**10))
def test_length_buckets_are_a_cheaper_partition_into_runs_of_lengths(lengths, params):
    from grpo_lab.lm.rollout import BUCKET_COST_TOKEN_PARAMS, length_buckets

    L = torch.tensor(lengths)
    parts = length_buckets(L, params)
    if parts == [None]:
        return
    idx = torch.cat(parts)
    assert sorted(idx.tolist()) == list(range(len(lengths)))          # every row exactly once
    spans = [(int(L[p].min()), int(L[p].max())) for p in parts]
    assert all(hi < lo2 for (_, hi), (lo2, _) in zip(spans, spans[1:]))   # shortest first, no overlap
    per = BUCKET_COST_TOKEN_PARAMS / params
    cost = sum(len(p) * hi + per for p, (_, hi) in zip(parts, spans))
    assert cost < len(lengths) * max(lengths) + per                   # cheaper than one padded forward


def test_decoding_cache_gives_the_same_samples_as_transformers_cache(setup, monkeypatch):
    from grpo_lab.lm import kv_cache

    tok, model, _ = setup
    ids, mask = encode_prompts(tok, PROBLEMS)
    runs, ours = [], kv_cache.decoding_cache
    for make in (ours, lambda m, room: kv_cache.new_cache(m)):
        monkeypatch.setattr(kv_cache, "decoding_cache", make)
        ro = sample(model, ids, mask, G=4, max_new=12, temperature=1.0, eos_id=-1, pad_id=tok.pad_token_id,
                    generator=torch.Generator().manual_seed(3))
        runs.append(ro)
    assert runs[0].response_ids.shape == (12, 12)                    # every response ran all 12 tokens
    assert torch.equal(runs[0].response_ids, runs[1].response_ids)
    assert torch.equal(runs[0].sampler_logp, runs[1].sampler_logp)
    cache = ours(model, 4)
    assert all(type(layer).__name__ == "RoomLayer" for layer in cache.layers)


def test_lora_sampler_merges_the_adapters_exactly(setup):
    """The sampling copy of a LoRA policy is the base model with W + (α/r)·B·A merged in, re-merged by sync."""
    from types import SimpleNamespace

    from peft import get_peft_model

    from grpo_lab.lm import lora
    from grpo_lab.lm.rollout import Bf16Sampler

    tok, _, ro = setup
    base = make_model(tok, seed=6, hidden=32, intermediate=64, layers=2, heads=2)
    policy = get_peft_model(base, lora.peft_config(SimpleNamespace(lora_rank=4, lora_alpha=None))).eval()
    sampler = Bf16Sampler(policy, dtype=torch.float32)
    assert not lora.is_lora(sampler.model) and len(lora.adapted_layers(policy)) == 2 * len(lora.TARGETS)
    with torch.no_grad():                           # B = 0 at init: move every adapter, as training would
        for p in policy.parameters():
            if p.requires_grad:
                p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    ids = torch.cat([ro.prompt_ids[:1], ro.response_ids[:1]], 1)
    want = policy(input_ids=ids).logits
    stale = sampler.model(input_ids=ids).logits
    assert (want - stale).abs().max() > 1e-2         # before sync the copy holds the old adapters
    got = sampler.sync(policy)(input_ids=ids).logits
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert all(not p.requires_grad for p in sampler.model.parameters())
