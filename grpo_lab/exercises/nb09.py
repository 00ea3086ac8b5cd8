"""Notebook 09 (beyond the lecture notes): CISPO's weight, SAPO's gate, clip-higher at μ = 1, a TIS weight."""
from __future__ import annotations

import math

import torch

from grpo_lab import losses as L
from grpo_lab.exercises._kinds import NUMBER, Compute, Known, Option, Predict
from grpo_lab.i18n import Text, tr

RHOS = (0.5, 1.0, 7.0)          # the ratios of the CISPO exercise
CAP = 5.0


def _cispo():
    return [float(x) for x in L.cispo_weight(torch.tensor(RHOS, dtype=torch.float64), CAP)]


def _push(rho: float, adv: float, **kw) -> float:
    """−∂loss/∂log π of one token with ratio ρ and advantage Â (one token, one answer: aggregation weight 1)."""
    lp = torch.tensor([[math.log(rho)]], dtype=torch.float64)
    return -float(L.token_grad_weights(lp, torch.zeros_like(lp), torch.tensor([adv], dtype=torch.float64),
                                       torch.ones_like(lp), **kw))


def _sapo_key() -> str:
    pushes = [_push(r, a, policy_loss="sapo") for r, a in ((1.5, 1.0), (3.0, 1.0), (0.5, -1.0))]
    return "every" if all(abs(p) > 1e-3 for p in pushes) else "inside"


def _sapo_text() -> str:
    def f(x):
        return f"{round(x, 2) + 0.0:.2f}"
    rhos = (1.0, 1.5, 3.0)
    p = ", ".join(f(_push(r, 1.0, policy_loss="sapo")) for r in rhos)
    c = ", ".join(f(_push(r, 1.0)) for r in rhos)
    return tr(f"push of a token with Â = +1 at ρ = 1, 1.5, 3 (unclipped ρ·Â: 1, 1.5, 3): SAPO {p}; the clip (ε 0.2) {c}. "
              f"The gate keeps less than ρ·Â but never cuts to 0.",
              f"Â = +1 的 token 在 ρ = 1、1.5、3 时的推力（不裁剪时 ρ·Â 为 1、1.5、3）：SAPO {p}；裁剪（ε 0.2）{c}。"
              f"门函数保留的比 ρ·Â 少，但从不切到 0。")


def _mu1_key() -> str:
    """Does ε_high change the gradient when π_θold = π_θ (μ = 1)? Computed on a random batch."""
    g = torch.Generator().manual_seed(9)
    lp = -torch.rand(6, 5, generator=g, dtype=torch.float64) - 0.1
    adv = torch.randn(6, generator=g, dtype=torch.float64)
    m = torch.ones(6, 5, dtype=torch.float64)
    a = L.token_grad_weights(lp, lp, adv, m, mode="token-mean", eps_high=0.2)
    b = L.token_grad_weights(lp, lp, adv, m, mode="token-mean", eps_high=0.28)
    return "no" if torch.equal(a, b) else "yes"


def _tis():
    w = L.rollout_is_weights(torch.tensor([[-1.0]]), torch.tensor([[-2.0]]), torch.ones(1, 1), "token_truncate",
                             clip_max=2.0)
    return float(w)


EXERCISES = (
    Compute(
        id="beyond.cispo_weight", notebook="09", name="cispo_weights", form="[w(0.5), w(1.0), w(7.0)]",
        title=Text("CISPO's weight by hand", "手算 CISPO 的权重"),
        prompt=Text(f"CISPO multiplies Â·log π by the detached weight min(ρ, cap). With cap = {CAP:g}, what are the weights "
                    f"of three tokens with ρ = 0.5, 1.0 and 7.0? Three numbers.",
                    f"CISPO 把 Â·log π 乘以截断且不回传梯度的权重 min(ρ, cap)。cap = {CAP:g} 时，ρ = 0.5、1.0、7.0 的三个 "
                    f"token 的权重是多少？三个数。"),
        hints=(Text("Only the top is capped; nothing is clipped from below.", "只截上限；下面不截。"),),
        value=_cispo,
        known=(Known("grpo_clip", Text("That is clip(ρ, 0.8, 1.2), GRPO's clip range. CISPO caps only above, at 5.",
                                       "这是 clip(ρ, 0.8, 1.2)，GRPO 的裁剪区间。CISPO 只截上限，且上限是 5。"),
                     lambda: [min(max(r, 0.8), 1.2) for r in RHOS]),
               Known("zeroed", Text("You zeroed the capped token, as the clip's *gradient* would be. CISPO keeps its "
                                    "weight at the cap: the token is still pushed.",
                                    "你把被截断的 token 设成了 0，就像裁剪的*梯度*那样。CISPO 把它的权重保留在上限：这个 "
                                    "token 仍然被推动。"),
                     lambda: [r if r <= CAP else 0.0 for r in RHOS])),
        explain=lambda: tr("The ρ = 7 token keeps a push of 5·Â·(its aggregation weight); under the clip it would get 0.",
                           "ρ = 7 的 token 保留 5·Â·（聚合权重）的推力；在裁剪下它得到 0。"),
    ),
    Predict(
        id="beyond.sapo_pushes", notebook="09", name="sapo_still_pushes",
        title=Text("Which tokens does a SAPO gate still push?", "SAPO 的门函数还推动哪些 token？"),
        prompt=Text("A token with Â = +1 and ρ = 1.5 (far outside GRPO's [0.8, 1.2]). Under SAPO's gate σ(τ(ρ−1))·4/τ, "
                    "which tokens still receive a push: `\"inside\"` (only those with ρ inside a clip range) or "
                    "`\"every\"` (every token, with a weight that falls further and further below ρ·Â as ρ moves away)?",
                    "一个 Â = +1、ρ = 1.5 的 token（远在 GRPO 的 [0.8, 1.2] 之外）。在 SAPO 的门函数 σ(τ(ρ−1))·4/τ 下，"
                    "哪些 token 仍然被推动：`\"inside\"`（只有 ρ 在裁剪区间内的）还是 `\"every\"`（所有 token，ρ 越远，权重比 ρ·Â 小得越多）？"),
        hints=(Text("Differentiate σ(τ(ρ − 1)): is the derivative of a sigmoid ever exactly 0?",
                    "对 σ(τ(ρ − 1)) 求导：sigmoid 的导数会恰好为 0 吗？"),),
        options=(Option("inside", Text("only inside a clip range", "只有裁剪区间内的"),
                        Text("That is the hard clip of eq. (3). SAPO has no clip range: a smooth gate replaces it.",
                             "那是式 (3) 的硬裁剪。SAPO 没有裁剪区间：一个平滑的门函数代替了它。")),
                 Option("every", Text("every token, further below ρ·Â as ρ moves away", "所有 token，ρ 越远，比 ρ·Â 小得越多"))),
        correct=_sapo_key, explain=_sapo_text,
    ),
    Predict(
        id="beyond.clip_higher_mu1", notebook="09", name="clip_higher_at_mu1",
        title=Text("Does ε_high matter at μ = 1?", "μ = 1 时 ε_high 有影响吗？"),
        prompt=Text("With one optimiser step per batch (μ = 1, TRL's default), does raising ε_high from 0.2 to 0.28 "
                    "change any token's gradient: `\"yes\"` or `\"no\"`?",
                    "每批只做一次优化（μ = 1，TRL 的默认）时，把 ε_high 从 0.2 提到 0.28 会改变任何 "
                    "token 的梯度吗：`\"yes\"` 还是 `\"no\"`？"),
        hints=(Text("What is ρ when π_θold = π_θ, and where does the clip act?", "π_θold = π_θ 时 ρ 是多少？裁剪在哪里起作用？"),),
        options=(Option("yes", Text("yes", "会"), Text("ρ ≡ 1 at μ = 1: the clip never binds, whatever ε_high is.",
                                                       "μ = 1 时 ρ ≡ 1：无论 ε_high 多大，裁剪都不起作用。")),
                 Option("no", Text("no", "不会"))),
        correct=_mu1_key,
        explain=lambda: tr("Identical gradients: clip-higher only acts once ρ has moved (μ > 1, or a stale or mismatched "
                           "sampler). Section 4's runs therefore use μ = 4.",
                           "梯度完全相同：只有 ρ 离开 1 之后（μ > 1，或采样器过时或不一致）clip-higher 才起作用。所以第 4 节的"
                           "实验用 μ = 4。"),
    ),
    Compute(
        id="beyond.tis_weight", notebook="09", name="tis_weight", form=NUMBER,
        title=Text("A TIS weight by hand", "手算一个 TIS 权重"),
        prompt=Text("The trainer gives a sampled token log π_θold = −1.0, the sampler gave it log π_sampler = −2.0. What "
                    "is its TIS weight with cap C = 2 (token_truncate)? Two decimals.",
                    "训练器给一个采样 token 的 log π_θold = −1.0，采样器给它 log π_sampler = −2.0。cap C = 2（token_truncate）"
                    "时它的 TIS 权重是多少？两位小数。"),
        hints=(Text("The weight is π_θold/π_sampler = exp(log π_θold − log π_sampler), then truncated.",
                    "权重是 π_θold/π_sampler = exp(log π_θold − log π_sampler)，然后截断。"),),
        value=_tis,
        known=(Known("inverted", Text("You computed π_sampler/π_θold. The weight corrects *towards* the trainer: "
                                      "π_θold/π_sampler.", "你算的是 π_sampler/π_θold。权重要向训练器校正：π_θold/π_sampler。"),
                     lambda: math.exp(-1.0)),
               Known("untruncated", Text("e¹ = 2.72 is the raw ratio; TIS truncates it at C.",
                                         "e¹ = 2.72 是原始比率；TIS 在 C 处截断它。"), lambda: math.e),
               Known("masked", Text("0 is what MIS (token_mask) would give: it drops the token instead.",
                                    "0 是 MIS（token_mask）给的结果：它直接丢掉这个 token。"), lambda: 0.0)),
        explain=lambda: tr("e^1 = 2.72 > C, so the weight is C = 2: the token counts, but at most twice.",
                           "e^1 = 2.72 > C，所以权重是 C = 2：这个 token 计入，但最多算两倍。"),
    ),
)
