"""Notebook 06's exercises: the step-loss mistake catalogue, and a rounded answer to the metric-table count."""
import pytest
import torch

from grpo_lab import exercises as ex
from grpo_lab.exercises import nb06


def student(logp, old_logp, rewards, mask, group_size, *, eps="outside", pad="masked", clip="min", exp=True,
            kl=False):
    """A hand-written step loss (not the package's) with one switchable slip."""
    r = torch.as_tensor(rewards, dtype=logp.dtype).reshape(-1, group_size)
    std = r.std(dim=1, unbiased=False, keepdim=True)
    den = {"outside": std + 1e-4, "missing": std, "inside": torch.sqrt(std ** 2 + 1e-4)}[eps]
    adv = torch.where(std == 0, torch.zeros_like(r), (r - r.mean(1, keepdim=True)) / den).reshape(-1, 1)
    ratio = torch.exp(logp - old_logp) if exp else logp - old_logp
    if clip == "min":
        term = torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)
    elif clip == "none":
        term = ratio * adv
    else:
        term = torch.clamp(ratio, 0.8, 1.2) * adv
    per_token = -term
    if kl:
        u = torch.exp(old_logp - logp)
        per_token = per_token + 0.04 * (u - torch.log(u) - 1)
    if pad == "masked":
        return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()
    if pad == "over_T":
        return ((per_token * mask).sum(-1) / mask.shape[-1]).mean()
    return per_token.mean(-1).mean()


def test_the_student_reference_passes():
    assert ex.check("lm.step_loss", student).passed


@pytest.mark.parametrize("slip, key", [({"eps": "missing"}, "eps_missing"), ({"eps": "inside"}, "eps_in_sqrt"),
                                       ({"pad": "over_T"}, "padding_counted"), ({"pad": "unmasked"}, "padding_unmasked"),
                                       ({"clip": "none"}, "no_clip"), ({"clip": "clamp"}, "clamp_without_min"),
                                       ({"exp": False}, "exp_forgotten"), ({"kl": True}, "kl_left_in")])
def test_step_loss_names_each_typical_slip(slip, key):
    fb = ex.check("lm.step_loss", lambda *a: student(*a, **slip))
    assert not fb.passed and fb.mistakes == (key,), (slip, fb.mistakes, fb.message)


def test_groups_with_gradient_accepts_the_prompts_rounded_numbers_and_the_unrounded_ones():
    correct, wrong = nb06._healthy_fracs()
    assert ex.check("lm.groups_with_gradient", round(32 * (1 - correct - wrong), 2)).passed     # 10.43
    s = nb06._broken_summary()
    exact = 32 * (1 - s.loc["healthy", "frac_all_correct"] - s.loc["healthy", "frac_all_wrong"])
    assert ex.check("lm.groups_with_gradient", round(float(exact), 2)).passed                    # 10.45
    assert not ex.check("lm.groups_with_gradient", round(32 * (1 - correct), 2)).passed          # one kind only
