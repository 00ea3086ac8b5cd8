"""grpo_lab.lm.microbatch: gradient accumulation over groups gives the whole batch's update."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab.losses import MODES, aggregate
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.evaluation import encode_prompts
from grpo_lab.lm.microbatch import chunk_weight, group_chunks
from grpo_lab.lm.rollout import sample
from grpo_lab.lm.trainer import Trainer

TINY = dict(hidden=32, intermediate=64, layers=1, heads=2, levels=(1, 2), G=4, prompts_per_step=3, max_new=5,
            warmstart_steps=0, eval_per_level=4, progress=False, threads=1, lr_warmup=0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.sampled_from(MODES), st.integers(0, 10**6))
def test_chunk_weights_recombine_every_aggregation(n_groups, G, T, mode, seed):
    g = torch.Generator().manual_seed(seed)
    B = n_groups * G
    v = torch.randn(B, T, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None] < lengths[:, None]).double()
    whole = aggregate(v, mask, mode, max_len=T)
    cut = sorted(set(torch.randint(1, B, (2,), generator=g).tolist())) if B > 1 else []
    bounds = [0, *cut, B]
    parts = sum(chunk_weight(mask[a:b], mask, mode) * aggregate(v[a:b], mask[a:b], mode, max_len=T)
                for a, b in zip(bounds, bounds[1:]) if b > a)
    assert float(parts) == pytest.approx(float(whole), rel=1e-9, abs=1e-12)


def _batch(tr, seed=0):
    problems = tr.task.sample(tr.cfg.prompts_per_step, np.random.default_rng(seed), stratified=True)
    ids, pm = encode_prompts(tr.tok, problems)
    return sample(tr.policy, ids, pm, G=tr.cfg.G, max_new=tr.cfg.max_new, temperature=1.0,
                  eos_id=tr.tok.eos_token_id, pad_id=tr.tok.pad_token_id, generator=torch.Generator().manual_seed(seed))


def test_group_chunks_split_whole_groups_under_the_budget():
    tr = Trainer(GRPOConfig.preset("grpo", **TINY))
    batch = _batch(tr)
    per_group = batch.G * (batch.prompt_ids.shape[1] + batch.response_ids.shape[1])
    assert group_chunks(batch, 0) is None and group_chunks(batch, 3 * per_group) is None
    chunks = group_chunks(batch, 2 * per_group)
    assert [c.tolist() for c in chunks] == [[0, 1], [2]]
    assert [c.tolist() for c in group_chunks(batch, 1)] == [[0], [1], [2]]     # at least one group each


@pytest.mark.parametrize("agg,mu,kl_form", [("seq-mean-token-mean", 1, "loss"), ("token-mean", 2, "loss"),
                                            ("seq-mean-token-sum-norm", 1, "reward")])
def test_microbatched_update_equals_the_whole_batch_update(agg, mu, kl_form):
    cfgs = [GRPOConfig.preset("grpo", agg=agg, mu=mu, kl_form=kl_form, tokens_per_microbatch=n, **TINY)
            for n in (0, 1)]
    a, b = Trainer(cfgs[0]), Trainer(cfgs[1])
    b.policy.load_state_dict(a.policy.state_dict())
    b.ref.load_state_dict(a.ref.state_dict())
    # move the policy away from the reference so the KL term is not 0
    with torch.no_grad():
        for p, q in zip(a.policy.parameters(), b.policy.parameters()):
            p.add_(0.01 * torch.sin(torch.arange(p.numel()).reshape(p.shape).float()))
            q.copy_(p)
    batch = _batch(a, seed=3)
    rewards = np.random.default_rng(0).integers(0, 2, batch.B).astype(float)
    ma, mb = a.learn(batch, rewards), b.learn(batch, rewards)
    for k in ("loss", "pg_loss", "kl", "clip_frac_low", "clip_frac_high", "entropy", "adv_abs_mean", "grad_norm"):
        assert mb[k] == pytest.approx(ma[k], rel=1e-4, abs=1e-6), k
    assert ma["kl"] > 0
    for (n, p), q in zip(a.policy.named_parameters(), b.policy.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=n)


def test_gradient_checkpointing_gives_the_same_logprobs_and_gradients():
    # transformers drops the KV cache under gradient checkpointing; token_logp must then not
    # rely on the shared prompt prefix (it would silently score responses without their prompt)
    from grpo_lab.lm.rollout import enable_checkpointing, token_logp

    tr = Trainer(GRPOConfig.preset("grpo", **TINY))
    batch = _batch(tr, seed=1)
    tr.policy.train()

    def run():
        tr.policy.zero_grad(set_to_none=True)
        lp = token_logp(tr.policy, batch).logp
        (lp * batch.mask).sum().backward()
        return lp.detach(), [p.grad.clone() for p in tr.policy.parameters()]

    lp0, g0 = run()
    enable_checkpointing(tr.policy)
    lp1, g1 = run()
    torch.testing.assert_close(lp1 * batch.mask, lp0 * batch.mask, rtol=1e-5, atol=1e-6)
    for a, b in zip(g0, g1):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-6)


def test_cpu_bf16_is_opt_in_for_the_tiny_model_and_the_sampler_copy_follows_the_policy():
    from grpo_lab.lm.rollout import amp_mode, cpu_has_bf16

    assert amp_mode(True, None, "cpu", pretrained=False) is False          # the tiny model stays fp32
    assert amp_mode(True, None, "cpu", pretrained=True) == ("always" if cpu_has_bf16() else False)
    assert amp_mode(True, False, "cpu", pretrained=True) is False
    assert amp_mode(True, True, "cpu", pretrained=False) == "always"
    tr = Trainer(GRPOConfig.preset("grpo", cpu_bf16=True, **TINY))
    assert tr.amp == "always" and tr._sampler is not None
    with torch.no_grad():
        for p in tr.policy.parameters():
            p.add_(0.5)
    copy = tr._sampler.sync(tr.policy)
    for a, b in zip(copy.parameters(), tr.policy.parameters()):
        assert a.dtype == torch.bfloat16 and torch.equal(a, b.to(torch.bfloat16))
    row = tr.step()                                                          # a bf16 step runs end to end
    assert row["step"] == 1 and row["n_tokens"] > 0


def test_a_microbatched_step_records_the_advantages_in_last_samples():
    # micro-batching is only a memory setting: the step's samples table holds the same Â_i
    a, b = (Trainer(GRPOConfig.preset("grpo", tokens_per_microbatch=n, **TINY)) for n in (0, 1))
    b.policy.load_state_dict(a.policy.state_dict())
    a.step(), b.step()
    assert b.last_adv.shape == (TINY["prompts_per_step"] * TINY["G"],)
    np.testing.assert_allclose(b.last_samples["adv"].to_numpy(), a.last_samples["adv"].to_numpy(), rtol=1e-5)


@pytest.mark.parametrize("tokens_per_microbatch", [0, 1])
def test_nonfinite_policy_is_caught_before_the_step_with_or_without_chunks(tokens_per_microbatch):
    """One update loop: the same check (the policy's log-probs of its own samples) fires before
    any optimiser step, whether the batch is one chunk or many."""
    from grpo_lab.lm.trainer import TrainingDiverged

    tr = Trainer(GRPOConfig.preset("grpo", **TINY, tokens_per_microbatch=tokens_per_microbatch))
    batch = _batch(tr)
    with torch.no_grad():
        for p in tr.policy.parameters():
            p.fill_(float("nan"))
    with pytest.raises(TrainingDiverged, match="log-probabilities of its own samples are not finite"):
        tr.learn(batch, np.arange(batch.B, dtype=float) % 2)
    assert not tr.opt.state                          # AdamW never stepped
