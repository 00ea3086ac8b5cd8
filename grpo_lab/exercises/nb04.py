"""Notebook 04 (the GRPO loss): the clipped term, the ratio, and the k3 estimator."""
from __future__ import annotations

import math

import numpy as np
import torch

from grpo_lab import losses as L
from grpo_lab.exercises._kinds import Case, Compute, Implement, Known, Mistake, Option, Predict
from grpo_lab.exercises.solutions import clipped_loss, k3
from grpo_lab.i18n import Text, tr

D = torch.float64


def _t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=D)


# --- the clipped term ----------------------------------------------------------------
def _expected_clipped(logp, old_logp, adv, mask, eps):
    return L.policy_loss_per_token(logp, old_logp, adv, mask, eps_low=eps)


def _rho_adv(logp, old_logp, adv, mask):
    return L.token_ratio(logp, old_logp, mask), L.broadcast_adv(adv, torch.ones_like(mask))   # (B, T) each


def _min_left_out(logp, old_logp, adv, mask, eps):
    rho, A = _rho_adv(logp, old_logp, adv, mask)
    return -(rho.clamp(1 - eps, 1 + eps) * A)


def _max_not_min(logp, old_logp, adv, mask, eps):
    rho, A = _rho_adv(logp, old_logp, adv, mask)
    return -torch.maximum(rho * A, rho.clamp(1 - eps, 1 + eps) * A)


def _no_clip(logp, old_logp, adv, mask, eps):
    rho, A = _rho_adv(logp, old_logp, adv, mask)
    return -(rho * A)


def _clip_cases() -> list[Case]:
    ratios = [0.5, 0.75, 0.9, 1.0, 1.1, 1.3, 2.0]                       # both sides of [1 − ε, 1 + ε]
    logp = _t(np.log([ratios] * 4)) - 1.0
    old = torch.full_like(logp, -1.0)
    mask = _t([[1] * 7, [1] * 7, [1] * 5 + [0] * 2, [1] * 3 + [0] * 4])
    adv = _t([1.0, -1.0, 0.5, -2.0])
    cases = [Case((logp, old, adv, mask, 0.2), "ratios 0.5 … 2 on both sides of the clip range, ε=0.2", mask.numpy() > 0),
             Case((logp, old, adv, mask, 0.1), "the same with ε=0.1", mask.numpy() > 0),
             Case((old.clone(), old, _t([1.0, 1.0, -1.0, -1.0]), mask, 0.2), "first inner step: ρ ≡ 1, Â = ±1",
                  mask.numpy() > 0)]
    rng = np.random.default_rng(404)
    for k in range(6):
        B, T = int(rng.integers(2, 6)), int(rng.integers(3, 9))
        lengths = rng.integers(1, T + 1, size=B)
        m = _t(np.arange(T)[None, :] < lengths[:, None])
        lp = _t(-rng.uniform(0.1, 4.0, (B, T)))
        olp = lp + _t(rng.normal(0, 0.4, (B, T)))
        cases.append(Case((lp, olp, _t(rng.normal(size=B)), m, float(rng.choice([0.1, 0.2, 0.28]))),
                          f"random #{k + 1} ({B}×{T}, with padding)", m.numpy() > 0))
    return cases


CLIP_MISTAKES = (
    Mistake("sign_flipped", Text("The sign is flipped: you returned the objective ℓ (to maximise). The function must "
                                 "return the *loss* −ℓ that an optimiser minimises.",
                                 "符号反了：你返回的是目标 ℓ（要最大化的）。函数要返回优化器最小化的*损失* −ℓ。"),
            lambda *a: -_expected_clipped(*a)),
    Mistake("min_left_out", Text("The min is left out: you used only the clipped branch clip(ρ)·Â. Without the min, a "
                                 "token whose ratio moved the *wrong* way is clipped too (it should keep ρ·Â).",
                                 "漏掉了 min：你只用了裁剪分支 clip(ρ)·Â。没有 min 时，比率往*错误*方向移动的 token "
                                 "也被裁剪了（它应保留 ρ·Â）。"), _min_left_out),
    Mistake("max_not_min", Text("You took the max of the two branches; eq. (3) takes the min (the pessimistic bound).",
                                "你取了两个分支的 max；式 (3) 取的是 min（悲观的下界）。"), _max_not_min),
    Mistake("no_clipping", Text("There is no clipping at all: you returned −ρ·Â. Add the clipped branch and the min.",
                                "完全没有裁剪：你返回的是 −ρ·Â。加上裁剪分支和 min。"), _no_clip),
    Mistake("clip_upper_only", Text("Clipping on one side only: you clip ρ at 1 + ε but not at 1 − ε, so tokens with Â < 0 "
                                    "keep being pushed down after their ratio fell below 1 − ε.",
                                    "只裁剪了一侧：你在 1 + ε 处裁剪了 ρ，却没有在 1 − ε 处裁剪，所以 Â < 0 的 token 在"
                                    "比率跌破 1 − ε 之后仍被继续往下压。"),
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(lp, olp, adv, m, eps_low=1.0, eps_high=eps)),
    Mistake("clip_lower_only", Text("Clipping on one side only: you clip ρ at 1 − ε but not at 1 + ε, so tokens with Â > 0 "
                                    "keep being pushed up after their ratio passed 1 + ε.",
                                    "只裁剪了一侧：你在 1 − ε 处裁剪了 ρ，却没有在 1 + ε 处裁剪，所以 Â > 0 的 token 在"
                                    "比率超过 1 + ε 之后仍被继续往上推。"),
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(lp, olp, adv, m, eps_low=eps, eps_high=1e12)),
    Mistake("ratio_inverted", Text("The ratio is inverted: ρ = π_θ/π_θold = exp(logp − old_logp), not exp(old_logp − logp).",
                                   "比率倒过来了：ρ = π_θ/π_θold = exp(logp − old_logp)，不是 exp(old_logp − logp)。"),
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(olp, lp, adv, m, eps_low=eps)),
)


def _rho_detached(args, got, exp, case):
    """Gradient wrong on tokens inside the clip range: the unclipped branch's ρ is cut off from autograd."""
    logp, old_logp, adv, mask, eps = args
    rho = torch.exp(logp - old_logp).numpy()
    inside = (np.abs(rho - 1) < eps - 1e-9) & (mask.numpy() > 0) & (adv.numpy()[:, None] != 0)
    if inside.any() and not np.allclose(got[0][inside], exp[0][inside], rtol=1e-5, atol=1e-8):
        return "rho_detached", RHO_DETACHED
    return None


def _clip_kinks(args):
    """Tokens whose ratio sits on a clip boundary 1 ± ε: the loss has a kink there (float32 may land either side)."""
    logp, old_logp, adv, mask, eps = args
    rho = torch.exp(logp - old_logp).numpy()
    return (np.abs(rho - (1 - eps)) < 1e-5) | (np.abs(rho - (1 + eps)) < 1e-5)


RHO_DETACHED = Text(
    "no gradient flows through ρ inside the clip range: your values are right, but where 1 − ε < ρ < 1 + ε the "
    "gradient of your loss is not −Â·ρ per log π. Did you .detach() the ratio (or compute it from detached "
    "log-probs) in the unclipped branch ρ·Â? Inside the clip range that branch is the one the min picks, so the "
    "model would never learn.",
    "在裁剪范围内没有梯度流过 ρ：你的数值是对的，但在 1 − ε < ρ < 1 + ε 处你的损失对 log π 的梯度不是 −Â·ρ。"
    "是不是在未裁剪分支 ρ·Â 里对比率用了 .detach()（或用已 detach 的对数概率算比率）？在裁剪范围内 min 取的正是"
    "这个分支，所以模型永远学不到。")


# --- k3 ------------------------------------------------------------------------------
def _k3_cases() -> list[Case]:
    lp = _t(np.log([[0.5, 0.2, 0.9], [0.05, 0.6, 0.3]]))
    cases = [Case((lp, lp.clone()), "π_θ = π_ref: k3 must be 0"),
             Case((_t([[math.log(0.5)]]), _t([[math.log(0.25)]])), "π_θ = 0.5, π_ref = 0.25"),
             Case((lp, _t(np.log([[0.25, 0.4, 0.6], [0.1, 0.3, 0.35]]))), "a 2×3 batch")]
    rng = np.random.default_rng(405)
    for k in range(5):
        B, T = int(rng.integers(1, 5)), int(rng.integers(2, 8))
        a = _t(-rng.uniform(0.05, 4.0, (B, T)))
        cases.append(Case((a, a + _t(rng.normal(0, 0.8, (B, T)))), f"random #{k + 1} ({B}×{T})"))
    return cases


def _kl(kind):
    return lambda logp, ref_logp: L.kl_penalty(logp, ref_logp, kind)


K3_MISTAKES = (
    Mistake("u_inverted", Text("u is inverted: eq. (5) uses u = π_ref/π_θ = exp(ref_logp − logp); you used π_θ/π_ref. Only "
                               "with u = π_ref/π_θ is E_{π_θ}[u] = 1, which makes k3 unbiased.",
                               "u 倒过来了：式 (5) 用 u = π_ref/π_θ = exp(ref_logp − logp)；你用的是 π_θ/π_ref。只有 "
                               "u = π_ref/π_θ 时 E_{π_θ}[u] = 1，k3 才是无偏的。"),
            lambda logp, ref_logp: L.kl_penalty(ref_logp, logp, "k3")),
    Mistake("k1", Text("That is k1 = log(π_θ/π_ref), not k3. k1 is unbiased too but can be negative.",
                       "这是 k1 = log(π_θ/π_ref)，不是 k3。k1 也无偏，但可能为负。"), _kl("k1")),
    Mistake("k2", Text("That is k2 = ½(log π_θ/π_ref)², not k3.", "这是 k2 = ½(log π_θ/π_ref)²，不是 k3。"), _kl("k2")),
    Mistake("sign_flipped", Text("The sign is flipped: k3 = u − log u − 1 is never negative.",
                                 "符号反了：k3 = u − log u − 1 永远不为负。"), lambda a, b: -L.kl_penalty(a, b, "k3")),
    Mistake("minus_one_left_out", Text("The −1 is missing: k3 must be 0 when the two policies agree (u = 1).",
                                       "漏掉了 −1：两个策略一致（u = 1）时 k3 必须是 0。"),
            lambda a, b: L.kl_penalty(a, b, "k3") + 1.0),
)


# --- predictions ---------------------------------------------------------------------
def _push(w: float) -> str:
    return "none" if abs(w) < 1e-12 else ("up" if w > 0 else "down")


def _clip_weight(rho: float, adv: float) -> float:
    return float(L.surrogate_curve(np.array([rho]), adv, eps_low=0.2)[1][0])   # ∂ℓ/∂log π


def _first_step():
    logp = _t(np.log([[0.5, 0.3, 0.2], [0.6, 0.1, 0.4], [0.2, 0.2, 0.7], [0.9, 0.5, 0.3]]))
    adv = _t([1.0, 1.0, -1.0, -1.0])
    mask = torch.ones_like(logp)
    out = L.grpo_loss(logp, logp.detach(), adv, mask)
    return float(out.loss), L.token_grad_weights(logp, logp.detach(), adv, mask)


EXERCISES = (
    Implement(
        id="loss.clipped", notebook="04", name="clipped_loss",
        signature="(logp, old_logp, adv, mask, eps) -> torch.Tensor (B, T)",
        title=Text("Implement the clipped surrogate loss, eq. (3)", "实现裁剪代理损失，式 (3)"),
        prompt=Text(
            "Write `clipped_loss(logp, old_logp, adv, mask, eps)`: the per-token *loss* to minimise, $-\\ell_{i,t}$ with "
            "$\\ell$ of eq. (3), the ratio of eq. (4) and the sequence-level Â_i broadcast over the tokens. `logp`, "
            "`old_logp`, `mask` are (B, T) tensors, `adv` is (B,). Values at padding positions are ignored.",
            "写出 `clipped_loss(logp, old_logp, adv, mask, eps)`：逐 token 要最小化的*损失* $-\\ell_{i,t}$，$\\ell$ 是式 (3)，"
            "比率用式 (4)，序列级的 Â_i 广播到每个 token。`logp`、`old_logp`、`mask` 是 (B, T) 张量，`adv` 是 (B,)。"
            "padding 位置上的值不计。"),
        hints=(Text("adv[:, None] has shape (B, 1) and broadcasts against (B, T). torch.clamp and torch.minimum do the rest.",
                    "adv[:, None] 的形状是 (B, 1)，可以和 (B, T) 广播。剩下的用 torch.clamp 和 torch.minimum。"),
               Text("Draw ℓ(ρ) for Â = +1 and for Â = −1: on which side of [1 − ε, 1 + ε] is each one flat?",
                    "分别画出 Â = +1 和 Â = −1 时的 ℓ(ρ)：各自在 [1 − ε, 1 + ε] 的哪一侧是平的？")),
        reference=clipped_loss, expected=_expected_clipped, cases=_clip_cases, mistakes=CLIP_MISTAKES,
        grad_wrt=(0,), grad_mistake=_rho_detached, grad_kinks=_clip_kinks,
    ),
    Predict(
        id="loss.clip_gradient", notebook="04", name="token_push",
        title=Text("Does a clipped token get a gradient?", "被裁剪的 token 还有梯度吗？"),
        prompt=Text("A token of a good response (Â = +1) has ratio ρ = 1.3 and ε = 0.2. Is its log-probability pushed "
                    "`\"up\"`, `\"down\"`, or does it get no gradient (`\"none\"`)?",
                    "一条好回答（Â = +1）里的某个 token，比率 ρ = 1.3，ε = 0.2。它的对数概率是被往上推（`\"up\"`）、"
                    "往下压（`\"down\"`），还是没有梯度（`\"none\"`）？"),
        hints=(Text("Which of the two branches of the min is smaller at ρ = 1.3, and does that branch depend on ρ?",
                    "在 ρ = 1.3 处，min 的两个分支哪个更小？那个分支依赖 ρ 吗？"),),
        options=(Option("up", Text("pushed up", "往上推"),
                        Text("Â > 0 pushes up only while ρ < 1 + ε; beyond it the min picks a constant.",
                             "Â > 0 只在 ρ < 1 + ε 时往上推；超过之后 min 取的是一个常数。")),
                 Option("down", Text("pushed down", "往下压"),
                        Text("Clipping never reverses the direction of the push; it can only switch it off.",
                             "裁剪从不反转推力的方向，只会把它关掉。")),
                 Option("none", Text("no gradient", "没有梯度"))),
        correct=lambda: _push(_clip_weight(1.3, 1.0)),
        explain=lambda: tr(f"∂ℓ/∂log π at ρ = 1.3 is {_clip_weight(1.3, 1.0):.3g}: the min picks (1 + ε)·Â, a constant. "
                           f"At ρ = 0.7 (the other side) it is {_clip_weight(0.7, 1.0):+.2f}: clipping is one-sided for each sign of Â.",
                           f"ρ = 1.3 处 ∂ℓ/∂log π = {_clip_weight(1.3, 1.0):.3g}：min 取的是常数 (1 + ε)·Â。在另一侧 "
                           f"ρ = 0.7 处它是 {_clip_weight(0.7, 1.0):+.2f}：对每种符号的 Â，裁剪都只在一侧。"),
    ),
    Predict(
        id="loss.first_step", notebook="04", name="gradient_at_zero_loss",
        title=Text("Loss 0, gradient 0?", "损失为 0，梯度也为 0？"),
        prompt=Text("At the first inner step ρ ≡ 1, and with Â = +1, +1, −1, −1 the loss (eq. 6) is exactly 0. Is the "
                    "gradient zero too? Answer `\"yes\"` or `\"no\"`.",
                    "第一步内循环时 ρ ≡ 1，Â = +1, +1, −1, −1 时损失（式 6）恰好为 0。梯度也为零吗？回答 `\"yes\"` 或 `\"no\"`。"),
        hints=(Text("The loss is a sum of ρ·Â terms. The value of ρ is 1, but what is ∂ρ/∂log π?",
                    "损失是 ρ·Â 项的和。ρ 的值是 1，但 ∂ρ/∂log π 是多少？"),),
        options=(Option("yes", Text("yes", "是"),
                        Text("A zero value does not mean a zero slope: the +Â and −Â terms cancel in value, not in gradient.",
                             "值为零不代表斜率为零：+Â 与 −Â 的项在数值上抵消，在梯度上并不抵消。")),
                 Option("no", Text("no", "否"))),
        correct=lambda: "no" if float(_first_step()[1].abs().max()) > 0 and abs(_first_step()[0]) < 1e-12 else "yes",
        explain=lambda: tr(f"loss = {_first_step()[0]:.1e}, yet ∂loss/∂log π per token = "
                           f"{np.round(_first_step()[1][:, 0].numpy(), 4).tolist()} (row by row): good answers pushed up, bad ones down.",
                           f"损失 = {_first_step()[0]:.1e}，但每个 token 的 ∂loss/∂log π = "
                           f"{np.round(_first_step()[1][:, 0].numpy(), 4).tolist()}（逐行）：好回答往上推，坏回答往下压。"),
    ),
    Implement(
        id="kl.k3", notebook="04", name="k3",
        signature="(logp, ref_logp) -> torch.Tensor (B, T)",
        title=Text("Implement the k3 estimator, eq. (5)", "实现 k3 估计量，式 (5)"),
        prompt=Text("Write `k3(logp, ref_logp)`: the per-token estimate u − log u − 1 of eq. (5), u = π_ref/π_θ, from the "
                    "log-probabilities of the sampled tokens under π_θ (`logp`) and π_ref (`ref_logp`), both (B, T).",
                    "写出 `k3(logp, ref_logp)`：式 (5) 的逐 token 估计 u − log u − 1，u = π_ref/π_θ；输入是采样 token 在 "
                    "π_θ（`logp`）和 π_ref（`ref_logp`）下的对数概率，都是 (B, T)。"),
        hints=(Text("Work with log u first: it is a difference of the two inputs. Which one comes first?",
                    "先算 log u：它是两个输入之差。哪个在前？"),
               Text("Check: equal inputs must give exactly 0, and no input may give a negative value.",
                    "验算：两个输入相等时必须恰好为 0，任何输入都不能得到负值。")),
        reference=k3, expected=lambda logp, ref_logp: L.kl_penalty(logp, ref_logp, "k3"), cases=_k3_cases,
        mistakes=K3_MISTAKES, grad_wrt=(0,),
    ),
    Compute(
        id="kl.k3_value", notebook="04", name="k3_by_hand", form="a number",
        title=Text("k3 for one token, by hand", "手算一个 token 的 k3"),
        prompt=Text("A sampled token has π_θ = 0.5 and π_ref = 0.25. Compute its k3 = u − log u − 1 (natural log). "
                    "One number, three decimals.",
                    "某个采样 token 的 π_θ = 0.5，π_ref = 0.25。算出它的 k3 = u − log u − 1（自然对数）。一个数，三位小数。"),
        hints=(Text("u is the reference probability over the current one.", "u 是参考策略的概率除以当前策略的概率。"),),
        value=lambda: float(L.kl_penalty(_t([[math.log(0.5)]]), _t([[math.log(0.25)]]), "k3")),
        atol=0.002,
        known=(Known("u_inverted", Text("You used u = π_θ/π_ref = 2. Eq. (5) uses u = π_ref/π_θ.",
                                        "你用的是 u = π_θ/π_ref = 2。式 (5) 用 u = π_ref/π_θ。"),
                     lambda: float(L.kl_penalty(_t([[math.log(0.25)]]), _t([[math.log(0.5)]]), "k3"))),
               Known("k1", Text("That is k1 = log(π_θ/π_ref). k3 is u − log u − 1.", "这是 k1 = log(π_θ/π_ref)。k3 是 u − log u − 1。"),
                     lambda: float(L.kl_penalty(_t([[math.log(0.5)]]), _t([[math.log(0.25)]]), "k1")))),
    ),
)
