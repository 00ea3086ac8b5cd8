"""The runnable hand-off: TRL's GRPOTrainer on the tiny model (skipped when TRL is absent).

1. One frozen batch, both frameworks: for every preset, TRL's loss — configured only through
   ``to_trl_kwargs`` — equals ``grpo_lab.losses.grpo_loss`` on the same sampled responses,
   the same advantages, old and reference log-probs (perturbed so that ratios move past the
   clip range and the KL term is not zero), in value and in every parameter's gradient.
   This is the mapping tested numerically: a wrong ``loss_type``, ``epsilon_high``,
   ``importance_sampling_level``, ``beta`` or KL weighting changes the number.
2. ``examples/train_with_trl.py`` runs two TRL steps end to end (dataset, reward functions,
   held-out evaluation, saved model).

CI installs the ``trl`` extra so that these tests really run.
"""
import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

trl = pytest.importorskip("trl")
pytest.importorskip("datasets")

from grpo_lab.advantages import group_advantages  # noqa: E402
from grpo_lab.lm.config import GRPOConfig  # noqa: E402
from grpo_lab.lm.evaluation import encode_prompts  # noqa: E402
from grpo_lab.lm.handoff import to_trl_kwargs  # noqa: E402
from grpo_lab.lm.model import load_model, make_model, save_model  # noqa: E402
from grpo_lab.lm.rollout import sample, token_logp  # noqa: E402
from grpo_lab.lm.tasks import AdditionTask  # noqa: E402
from grpo_lab.lm.tokenizer import char_tokenizer  # noqa: E402
from grpo_lab.lm.trl_compat import build_dataset, reward_functions  # noqa: E402
from grpo_lab.lm.warmstart import SFTConfig, sft  # noqa: E402
from grpo_lab.losses import grpo_loss  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(hidden=32, intermediate=64, layers=2, heads=2)
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models run fastest on one thread (and do not thrash a shared 2-core machine)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random model, saved, and one sampled batch of P=3 prompts × G=4 responses."""
    tok = char_tokenizer()
    model = make_model(tok, seed=0, **TINY)
    path = save_model(model, tok, tmp_path_factory.mktemp("tiny") / "model")
    task = AdditionTask(levels=(2,))                      # "ab+cd=": every prompt has the same length
    problems = task.sample(3, np.random.default_rng(0))
    ids, pmask = encode_prompts(tok, problems)
    assert bool(pmask.all())                              # no left padding: positions agree in both loops
    ro = sample(model, ids, pmask, G=4, max_new=6, temperature=1.0, eos_id=tok.eos_token_id,
                pad_id=tok.pad_token_id, generator=torch.Generator().manual_seed(0), amp=False)
    return path, tok, task, ro


def _trainer(cfg, model, tok, task, tmp_path):
    kw = to_trl_kwargs(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        args = trl.GRPOConfig(output_dir=str(tmp_path / "trl"), report_to=[], gradient_checkpointing=False,
                              disable_tqdm=True, **kw)
        tr = trl.GRPOTrainer(model=model, processing_class=tok, args=args, reward_funcs=reward_functions(task, tok),
                             train_dataset=build_dataset(task, 8, seed=0))
    tr.current_gradient_accumulation_steps = 1            # set by Trainer.train() in a real run
    return tr


PRESET_CASES = ["grpo", "dr_grpo", "dapo", "gspo", ("gspo", {"eps_low": 0.02, "eps_high": 0.03}),
                ("dapo", {"beta": 0.1}), ("grpo", {"dual_clip": 2.0, "eps_high": 0.3}),
                # beyond the lecture notes: TRL's loss_type='cispo' / 'sapo' (grpo_lab.losses.beyond)
                "cispo", ("cispo", {"cispo_cap": 1.1, "beta": 0.1}), "sapo",
                ("sapo", {"sapo_tau_pos": 3.0, "sapo_tau_neg": 0.5})]


@pytest.mark.parametrize("case", PRESET_CASES, ids=lambda c: c if isinstance(c, str) else
                         c[0] + "+" + "+".join(f"{k}={v}" for k, v in c[1].items()))
def test_same_frozen_batch_same_loss_and_gradient(case, tiny, tmp_path):
    name, over = (case, {}) if isinstance(case, str) else case
    path, tok, task, ro = tiny
    cfg = GRPOConfig.preset(name, G=ro.G, prompts_per_step=ro.prompt_ids.shape[0], max_new=6, device="cpu", **over)
    model, _ = load_model(path)
    tr = _trainer(cfg, model, tok, task, tmp_path)
    model = tr.model.train()
    B, T = ro.response_ids.shape
    g = torch.Generator().manual_seed(1)
    rewards = torch.tensor([1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0], dtype=torch.float32)   # one degenerate group
    # TRL's own advantage convention (sample std, ε = 1e-4): this test is about the loss
    adv = torch.as_tensor(group_advantages(rewards.reshape(-1, ro.G).numpy(), scale=cfg.adv_scale, std="sample",
                                           eps=1e-4).reshape(-1), dtype=torch.float32)

    with torch.no_grad():
        logp0 = token_logp(model, ro, amp=False).logp
    old = logp0 + 0.3 * torch.randn(B, T, generator=g)      # π_θold ≠ π_θ: ratios spread past 1 ± ε
    ref = logp0 + 0.3 * torch.randn(B, T, generator=g)      # π_ref ≠ π_θ: the KL term is not zero
    mask = ro.mask

    # ours
    model.zero_grad(set_to_none=True)
    logp = token_logp(model, ro, amp=False).logp
    ours = grpo_loss(logp, old, adv, mask, ref_logp=ref if cfg.beta > 0 else None, **cfg.loss_kwargs()).loss
    ours.backward()
    g_ours = {n: p.grad.clone() for n, p in model.named_parameters()}

    # TRL, configured only through to_trl_kwargs
    inputs = {"prompt_ids": ro.prompt_ids.repeat_interleave(ro.G, 0), "prompt_mask": ro.prompt_mask.repeat_interleave(ro.G, 0),
              "completion_ids": ro.response_ids, "completion_mask": mask.long(), "advantages": adv,
              "old_per_token_logps": old, "num_items_in_batch": mask.sum()}
    if cfg.beta > 0:
        inputs["ref_per_token_logps"] = ref
    model.zero_grad(set_to_none=True)
    theirs = tr._compute_loss(model, inputs)
    theirs.backward()
    g_trl = {n: p.grad.clone() for n, p in model.named_parameters()}

    ratio = torch.exp(logp0 - old)[mask > 0]
    assert ((ratio < 1 - cfg.eps_low) | (ratio > 1 + (cfg.eps_high or cfg.eps_low))).any()   # clipping exercised
    if cfg.policy_loss == "cispo" and cfg.cispo_cap < 2:
        assert (ratio > cfg.cispo_cap).any()                                                 # the cap exercised
    torch.testing.assert_close(theirs.detach(), ours.detach(), rtol=1e-5, atol=1e-6)
    for n in g_ours:
        torch.testing.assert_close(g_trl[n], g_ours[n], rtol=1e-4, atol=1e-6, msg=n)
    assert any(v.abs().sum() > 0 for v in g_ours.values())


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_trl_advantages_follow_scale_rewards_with_the_sample_std(scale, tiny, tmp_path):
    """TRL's step 3 (eq. 1) under the mapped ``scale_rewards``: our group_advantages with std='sample', ε=1e-4."""
    path, tok, task, _ = tiny
    cfg = GRPOConfig.preset("grpo", G=4, prompts_per_step=3, max_new=6, device="cpu", adv_scale=scale)
    model, _ = load_model(path)
    tr = _trainer(cfg, model, tok, task, tmp_path)
    seen = []

    def varied(prompts, completions, completion_ids, **kw):        # spread-out rewards from a random model
        r = [float(len(c) % 3) for c in completion_ids]
        seen.extend(r)
        return r

    varied.__name__ = "varied"
    tr.reward_funcs, tr.reward_func_names = [varied], ["varied"]
    rows = [dict(r) for r in build_dataset(task, 3, seed=5)]
    torch.manual_seed(0)
    out = tr._generate_and_score_completions([r for r in rows for _ in range(cfg.G)])
    rewards = np.array(seen).reshape(-1, cfg.G)
    assert len(np.unique(rewards)) > 1
    want = group_advantages(rewards, scale=scale, std="sample", eps=1e-4).reshape(-1)
    np.testing.assert_allclose(out["advantages"].numpy(), want, rtol=1e-5, atol=1e-6)
    if scale != "none":          # the seeds' population std would give different numbers
        pop = group_advantages(rewards, scale=scale, std="population", eps=1e-4).reshape(-1)
        assert not np.allclose(out["advantages"].numpy(), pop, atol=1e-3)


def test_the_std_convention_is_what_separates_the_advantages(tiny):
    """TRL's advantages on 1,1,0,0 are ±0.866 (sample std), the seeds' ±1: the hand-off keeps TRL's."""
    r = np.array([[1.0, 1.0, 0.0, 0.0]])
    assert np.allclose(group_advantages(r, std="sample", eps=1e-4), [[0.866, 0.866, -0.866, -0.866]], atol=1e-3)
    assert np.allclose(group_advantages(r, std="population", eps=0), [[1, 1, -1, -1]])


def _load_example():
    spec = importlib.util.spec_from_file_location("train_with_trl", ROOT / "examples" / "train_with_trl.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_runs_two_trl_steps(tmp_path):
    tok = char_tokenizer()
    model = make_model(tok, seed=0, **TINY)
    task = AdditionTask(levels=(1,))
    sft(model, tok, task, SFTConfig(steps=60, batch=32, lr=1e-2, seed=0))   # off zero, so groups are informative
    init = save_model(model, tok, tmp_path / "init")
    out = tmp_path / "run"
    example = _load_example()
    argv = ["--preset", "grpo", "--steps", "2", "--out", str(out), "--model", str(init), "--levels", "1",
            "--G", "4", "--prompts", "4", "--max-new", "4", "--device", "cpu", "--threads", "1"]
    result = example.main(argv)
    assert result["steps"] == 2 and result["processes"] == 1
    cfg = example.make_config(example.parse(argv))
    assert json.loads((out / "trl_config.json").read_text()) == json.loads(json.dumps(to_trl_kwargs(cfg)))
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward" in r]
    assert len(steps) == 2
    for r in steps:
        assert 0.0 <= r["reward"] <= 1.0 and np.isfinite(r["loss"]) and np.isfinite(r["kl"])
        assert r["completions/max_length"] <= 4
    ev = json.loads((out / "eval.json").read_text())
    assert 0.0 <= ev["before"]["acc"] <= 1.0 and 0.0 <= ev["after"]["acc"] <= 1.0
    final, _ = load_model(out / "final_model")
    start, _ = load_model(init)
    moved = max(float((a - b).abs().max()) for a, b in zip(final.parameters(), start.parameters()))
    informative = any(r["frac_reward_zero_std"] < 1.0 for r in steps)
    # the first step is on-policy at π_ref (KL gradient 0): only informative groups move the weights
    assert (moved > 0) == informative
