"""Notebook 04 (the GRPO loss): the clipped term, the ratio, and the k3 estimator."""
from __future__ import annotations

import math

import numpy as np
import torch

from grpo_lab import losses as L
from grpo_lab.exercises._kinds import NUMBER, Case, Compute, Implement, Known, Mistake, Option, Predict, random_label
import functools

from grpo_lab import credit_emergence, kl_toy
from grpo_lab.exercises.solutions import clipped_loss, k3_grad
from grpo_lab.i18n import Text, tr

D = torch.float64


def _t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=D)


# --- the clipped term ----------------------------------------------------------------
def _expected_clipped(logp, old_logp, adv, mask, eps):
    return L.policy_loss_per_token(logp, old_logp, adv, mask, eps_low=eps[0], eps_high=eps[1])


def _sym(eps_value):
    """A typical mistake that uses one ε for both sides."""
    return lambda lp, olp, adv, m, eps: L.policy_loss_per_token(lp, olp, adv, m, eps_low=eps_value(eps))


def _rho_adv(logp, old_logp, adv, mask):
    return L.token_ratio(logp, old_logp, mask), L.broadcast_adv(adv, torch.ones_like(mask))   # (B, T) each


def _min_left_out(logp, old_logp, adv, mask, eps):
    rho, A = _rho_adv(logp, old_logp, adv, mask)
    return -(rho.clamp(1 - eps[0], 1 + eps[1]) * A)


def _max_not_min(logp, old_logp, adv, mask, eps):
    rho, A = _rho_adv(logp, old_logp, adv, mask)
    return -torch.maximum(rho * A, rho.clamp(1 - eps[0], 1 + eps[1]) * A)


def _no_clip(logp, old_logp, adv, mask, eps):
    rho, A = _rho_adv(logp, old_logp, adv, mask)
    return -(rho * A)


def _clip_cases() -> list[Case]:
    ratios = [0.5, 0.75, 0.9, 1.0, 1.1, 1.3, 2.0]                       # both sides of [1 − ε, 1 + ε]
    logp = _t(np.log([ratios] * 4)) - 1.0
    old = torch.full_like(logp, -1.0)
    mask = _t([[1] * 7, [1] * 7, [1] * 5 + [0] * 2, [1] * 3 + [0] * 4])
    adv = _t([1.0, -1.0, 0.5, -2.0])
    cases = [Case((logp, old, adv, mask, (0.2, 0.28)), Text("ratios 0.5 … 2 on both sides of the clip range, ε=(0.2, 0.28)",
                                                            "比率 0.5 … 2，落在裁剪范围两侧，ε=(0.2, 0.28)"), mask.numpy() > 0),
             Case((logp, old, adv, mask, (0.1, 0.4)), Text("the same with ε=(0.1, 0.4)", "同上，ε=(0.1, 0.4)"), mask.numpy() > 0),
             Case((logp, old, adv, mask, (0.3, 0.2)), Text("the same with ε=(0.3, 0.2)", "同上，ε=(0.3, 0.2)"), mask.numpy() > 0),
             Case((old.clone(), old, _t([1.0, 1.0, -1.0, -1.0]), mask, (0.2, 0.28)),
                  Text("first inner step: ρ ≡ 1, Â = ±1", "第一个内层步：ρ ≡ 1，Â = ±1"), mask.numpy() > 0)]
    rng = np.random.default_rng(404)
    for k in range(6):
        B, T = int(rng.integers(2, 6)), int(rng.integers(3, 9))
        lengths = rng.integers(1, T + 1, size=B)
        m = _t(np.arange(T)[None, :] < lengths[:, None])
        lp = _t(-rng.uniform(0.1, 4.0, (B, T)))
        olp = lp + _t(rng.normal(0, 0.4, (B, T)))
        lo = float(rng.choice([0.1, 0.2, 0.3]))
        cases.append(Case((lp, olp, _t(rng.normal(size=B)), m, (lo, lo + float(rng.choice([0.05, 0.08, 0.2])))),
                          Text(f"random #{k + 1} ({B}×{T}, with padding)", f"随机 #{k + 1}（{B}×{T}，含填充）"), m.numpy() > 0))
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
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(lp, olp, adv, m, eps_low=1.0, eps_high=eps[1])),
    Mistake("clip_lower_only", Text("Clipping on one side only: you clip ρ at 1 − ε but not at 1 + ε, so tokens with Â > 0 "
                                    "keep being pushed up after their ratio passed 1 + ε.",
                                    "只裁剪了一侧：你在 1 − ε 处裁剪了 ρ，却没有在 1 + ε 处裁剪，所以 Â > 0 的 token 在"
                                    "比率超过 1 + ε 之后仍被继续往上推。"),
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(lp, olp, adv, m, eps_low=eps[0], eps_high=1e12)),
    Mistake("ratio_inverted", Text("The ratio is inverted: ρ = π_θ/π_θold = exp(logp − old_logp), not exp(old_logp − logp).",
                                   "比率倒过来了：ρ = π_θ/π_θold = exp(logp − old_logp)，不是 exp(old_logp − logp)。"),
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(olp, lp, adv, m, eps_low=eps[0], eps_high=eps[1])),
    Mistake("eps_swapped", Text("ε_low and ε_high are swapped: the range is [1 − eps[0], 1 + eps[1]] — eps_low "
                                "below 1, eps_high above.",
                                "ε_low 与 ε_high 互换了：范围是 [1 − eps[0], 1 + eps[1]]——eps_low 在 1 之下，eps_high 在 1 之上。"),
            lambda lp, olp, adv, m, eps: L.policy_loss_per_token(lp, olp, adv, m, eps_low=eps[1], eps_high=eps[0])),
    Mistake("symmetric_low", Text("You clipped symmetrically with eps_low on both sides; clip-higher lets the ratio of a "
                                  "good token rise to 1 + eps_high.",
                                  "你在两侧都用 eps_low 做了对称裁剪；clip-higher 允许好 token 的比率升到 1 + eps_high。"),
            _sym(lambda eps: eps[0])),
    Mistake("symmetric_high", Text("You clipped symmetrically with eps_high on both sides; below 1 the range is 1 − eps_low.",
                                   "你在两侧都用 eps_high 做了对称裁剪；1 以下的范围是 1 − eps_low。"),
            _sym(lambda eps: eps[1])),
)


def _rho_detached(args, got, exp, case):
    """Gradient wrong on tokens inside the clip range: the unclipped branch's ρ is cut off from autograd."""
    logp, old_logp, adv, mask, eps = args
    rho = torch.exp(logp - old_logp).numpy()
    inside = (rho > 1 - eps[0] + 1e-9) & (rho < 1 + eps[1] - 1e-9) & (mask.numpy() > 0) & (adv.numpy()[:, None] != 0)
    if inside.any() and not np.allclose(got[0][inside], exp[0][inside], rtol=1e-5, atol=1e-8):
        return "rho_detached", RHO_DETACHED
    return None


def _clip_kinks(args):
    """Tokens whose ratio sits on a clip boundary 1 ± ε: the loss has a kink there (float32 may land either side)."""
    logp, old_logp, adv, mask, eps = args
    rho = torch.exp(logp - old_logp).numpy()
    return (np.abs(rho - (1 - eps[0])) < 1e-5) | (np.abs(rho - (1 + eps[1])) < 1e-5)


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
    cases = [Case((lp, lp.clone()), Text("π_θ = π_ref: the gradient must be 0", "π_θ = π_ref：梯度必须为 0")),
             Case((_t([[math.log(0.5)]]), _t([[math.log(0.25)]])), "π_θ = 0.5, π_ref = 0.25"),
             Case((lp, _t(np.log([[0.25, 0.4, 0.6], [0.1, 0.3, 0.35]]))), Text("a 2×3 batch", "一个 2×3 的批次"))]
    rng = np.random.default_rng(405)
    for k in range(5):
        B, T = int(rng.integers(1, 5)), int(rng.integers(2, 8))
        a = _t(-rng.uniform(0.05, 4.0, (B, T)))
        cases.append(Case((a, a + _t(rng.normal(0, 0.8, (B, T)))), random_label(k + 1, f"{B}×{T}")))
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


def _k3_grad(logp, ref_logp, kind="k3"):
    """∂KL-estimate/∂logp per token, by autograd through the package's estimator."""
    lp = logp.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(L.kl_penalty(lp, ref_logp, kind).sum(), lp)
    return g


K3_GRAD_MISTAKES = (
    Mistake("sign_flipped", Text("The sign is flipped: where π_θ > π_ref (u < 1) the gradient must be positive, so that "
                                 "minimising the loss pushes logp back down.",
                                 "符号反了：π_θ > π_ref（u < 1）时梯度必须为正，最小化损失才会把 logp 压回去。"),
            lambda a, b: -_k3_grad(a, b)),
    Mistake("u_inverted", Text("u is inverted: eq. (5) uses u = π_ref/π_θ = exp(ref_logp − logp); you differentiated the "
                               "k3 of u = π_θ/π_ref.",
                               "u 倒过来了：式 (5) 用 u = π_ref/π_θ = exp(ref_logp − logp)；你求导的是 u = π_θ/π_ref 时的 k3。"),
            lambda a, b: torch.exp(a - b) - 1),
    Mistake("k1_grad", Text("That is the gradient of k1 = log(π_θ/π_ref): 1 for every token. k3's gradient vanishes where "
                            "the policies agree.",
                            "这是 k1 = log(π_θ/π_ref) 的梯度：每个 token 都是 1。k3 的梯度在两个策略一致时为零。"),
            lambda a, b: _k3_grad(a, b, "k1")),
    Mistake("k2_grad", Text("That is the gradient of k2 = ½(log π_θ/π_ref)², i.e. logp − ref_logp, not of k3.",
                            "这是 k2 = ½(log π_θ/π_ref)² 的梯度，即 logp − ref_logp，不是 k3 的。"),
            lambda a, b: _k3_grad(a, b, "k2")),
    Mistake("value_not_gradient", Text("You returned k3 itself (u − log u − 1), not its derivative with respect to logp.",
                                       "你返回的是 k3 本身（u − log u − 1），而不是它对 logp 的导数。"),
            lambda a, b: L.kl_penalty(a, b, "k3")),
    Mistake("chain_rule_missing", Text("The chain rule is missing: you wrote ∂k3/∂u = 1 − 1/u. Multiply by ∂u/∂logp = −u.",
                                       "漏了链式法则：你写的是 ∂k3/∂u = 1 − 1/u。还要乘上 ∂u/∂logp = −u。"),
            lambda a, b: 1 - torch.exp(a - b)),
)


@functools.lru_cache(maxsize=None)
def _credit_runs() -> dict:
    """G = 2 vs 16, 32 responses a step, 4 seeds, 100 steps (≈ 1 s, cached)."""
    return {G: credit_emergence.run(credit_emergence.CreditConfig(G=G, seeds=4, steps=100)) for G in (2, 16)}


def _credit_steps() -> dict[int, int | None]:
    """Steps to the seed-mean π(target) ≥ 0.5 at the decisive position, G = 2 vs 16."""
    return {G: r.steps_to(0.5) for G, r in _credit_runs().items()}


def _seed_range(G: int) -> str:
    """The range of the single seeds' steps to π(target) ≥ 0.5 ('' if a seed never gets there)."""
    p = _credit_runs()[G].p_key                                          # (steps + 1, S)
    hits = [np.flatnonzero(p[:, s] >= 0.5) for s in range(p.shape[1])]
    if any(h.size == 0 for h in hits):
        return ""
    first = [int(h[0]) for h in hits]
    return tr(f" ({min(first)}–{max(first)})", f"（{min(first)}–{max(first)}）")


def _credit_key() -> str:
    s2, s16 = (_credit_steps()[G] or 10**9 for G in (2, 16))
    return "same" if s2 == s16 else ("G16" if s16 < s2 else "G2")


def _push_factors(temperature: float = 1.0) -> tuple[float, float, float]:
    """G = 16 over G = 2 at the start: (whole push ratio, the (G − 1)/G part, the ÷ std part)."""
    push = lambda G, scale: credit_emergence.start_push(
        credit_emergence.CreditConfig(G=G, temperature=temperature, scale=scale))
    whole, mean_only = push(16, "group") / push(2, "group"), push(16, "none") / push(2, "none")
    return whole, mean_only, whole / mean_only


def _credit_text() -> str:
    st = {G: (tr("not within 100 steps", "100 步内未达到") if v is None else tr(f"{v} steps", f"{v} 步") + _seed_range(G))
          for G, v in _credit_steps().items()}
    whole, mean_only, std_part = _push_factors()
    return tr(f"G = 16: {st[16]}; G = 2: {st[2]} (the toy's numbers: when π averaged over 4 seeds reaches 0.5; in brackets, "
              f"the range over the single seeds). Not because a large group judges better: at the start G = 16's expected "
              f"push per step is {whole:.2f}× G = 2's — {mean_only:.3f}× from (G − 1)/G (the group mean includes the response "
              f"itself) and {std_part:.2f}× from ÷ std (a rare hit in a large group has a small std). §5 equalises the "
              "pushes: then no difference in steps is detectable (16 seeds).",
              f"G = 16：{st[16]}；G = 2：{st[2]}（这个玩具的数字：4 个随机种子平均的 π 达到 0.5 的步数；括号里是单个随机种子的范围）。"
              f"并不是因为大组判断得更准：一开始 G = 16 每步的期望推力是 G = 2 的 {whole:.2f} 倍——其中 {mean_only:.3f} 倍来自 "
              f"(G − 1)/G（组均值里包含这条回答自己），{std_part:.2f} 倍来自 ÷ std（大组里罕见的命中使组标准差很小）。"
              "§5 把两者的推力调成相同：所需步数的差异就检测不到了（16 个随机种子）。")


def _degenerate_placement():
    log_ratio, mask = kl_toy.toy_log_ratio(6, 12, drift=2.0, seed=0)
    return kl_toy.kl_placement(np.ones(6), log_ratio, mask, beta=0.01)


def _placement_key() -> str:
    sd = float(np.std(_degenerate_placement().adv_reward))
    return "zero" if sd < 1e-9 else ("unit" if sd > 0.5 else "tiny")


def _placement_text() -> str:
    pl = _degenerate_placement()
    return tr(f"KL in the loss: Â = {pl.adv_loss.round(2).tolist()}; KL in the reward: Â = {pl.adv_reward.round(2).tolist()} "
              f"(std {np.std(pl.adv_reward):.2f}) at β = 0.01. The task says nothing, yet ÷ std blows the KL differences up to "
              f"unit scale: the drifted response 0 gets Â = {pl.adv_reward[0]:+.2f} although every answer was right.",
              f"KL 在损失里：Â = {pl.adv_loss.round(2).tolist()}；KL 在奖励里：Â = {pl.adv_reward.round(2).tolist()}"
              f"（标准差 {np.std(pl.adv_reward):.2f}），β = 0.01。任务本身没有信号，÷ std 却把 KL 的差异放大到单位尺度："
              f"偏离的第 0 条回答得到 Â = {pl.adv_reward[0]:+.2f}，尽管每条回答都是对的。")


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
        title=Text("Implement the clipped loss with clip-higher", "实现带 clip-higher 的裁剪损失"),
        prompt=Text(
            "Write `clipped_loss(logp, old_logp, adv, mask, eps)`: the per-token *loss* to minimise, $-\\ell_{i,t}$ with "
            "$\\ell$ of eq. (3), the ratio of eq. (4) and the sequence-level Â_i broadcast over the tokens — but with "
            "DAPO's **asymmetric** clip range: `eps = (eps_low, eps_high)` and ρ is clipped to "
            "[1 − eps_low, 1 + eps_high]. `logp`, `old_logp`, `mask` are (B, T) tensors (B responses of T tokens), `adv` is (B,). Values at padding "
            "positions are ignored. The checker also backpropagates through your loss: return a torch.Tensor.",
            "写出 `clipped_loss(logp, old_logp, adv, mask, eps)`：逐 token 要最小化的*损失* $-\\ell_{i,t}$，$\\ell$ 是式 (3)，"
            "比率用式 (4)，序列级的 Â_i 广播到每个 token——但用 DAPO 的**非对称**裁剪范围：`eps = (eps_low, eps_high)`，"
            "ρ 被裁剪到 [1 − eps_low, 1 + eps_high]。`logp`、`old_logp`、`mask` 是 (B, T) 张量（B 条回答、每条 T 个 token），`adv` 是 (B,)。"
            "填充位置上的值不计。检查器还会对你的损失做反向传播：请返回 torch.Tensor。"),
        hints=(Text("adv[:, None] has shape (B, 1) and broadcasts against (B, T). torch.clamp and torch.minimum do the rest.",
                    "adv[:, None] 的形状是 (B, 1)，可以和 (B, T) 广播。剩下的用 torch.clamp 和 torch.minimum。"),
               Text("Draw ℓ(ρ) for Â = +1 and for Â = −1: on which side of 1 is each one flat, and which ε sets that edge?",
                    "分别画出 Â = +1 和 Â = −1 时的 ℓ(ρ)：各自在 1 的哪一侧是平的？那条边由哪个 ε 决定？")),
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
                    "第一个内层步里 ρ ≡ 1，Â = +1, +1, −1, −1 时损失（式 6）恰好为 0。梯度也为零吗？回答 `\"yes\"` 或 `\"no\"`。"),
        hints=(Text("The loss is a sum of ρ·Â terms. The value of ρ is 1, but what is ∂ρ/∂log π?",
                    "损失是 ρ·Â 项的和。ρ 的值是 1，但 ∂ρ/∂log π 是多少？"),),
        options=(Option("yes", Text("yes", "是"),
                        Text("A zero value does not mean a zero slope: the +Â and −Â terms cancel in value, not in gradient.",
                             "值为零不代表斜率为零：+Â 与 −Â 的项在数值上抵消，在梯度上并不抵消。")),
                 Option("no", Text("no", "否"))),
        correct=lambda: "no" if float(_first_step()[1].abs().max()) > 0 and abs(_first_step()[0]) < 1e-12 else "yes",
        explain=lambda: tr(f"loss = {_first_step()[0]:.1e}, yet ∂loss/∂log π per token = "
                           f"{np.round(_first_step()[1][:, 0].numpy(), 4).tolist()} (row by row; the push is minus this): "
                           "good answers (negative ∂loss/∂log π) pushed up, bad ones down.",
                           f"损失 = {_first_step()[0]:.1e}，但每个 token 的 ∂loss/∂log π = "
                           f"{np.round(_first_step()[1][:, 0].numpy(), 4).tolist()}（逐行；推力是它的相反数）："
                           "好回答（∂loss/∂log π 为负）往上推，坏回答往下压。"),
    ),
    Implement(
        id="kl.k3", notebook="04", name="k3_grad",
        signature="(logp, ref_logp) -> torch.Tensor (B, T)",
        title=Text("Implement the gradient of k3, eq. (5)", "实现 k3 的梯度，式 (5)"),
        prompt=Text("In KL-in-loss the optimiser sees the *derivative* of β·k3, not its value. Write "
                    "`k3_grad(logp, ref_logp)`: for every token, ∂k3/∂logp with k3 = u − log u − 1 of eq. (5), "
                    "u = π_ref/π_θ, `ref_logp` held fixed — derived by hand, no autograd. Both inputs are (B, T) "
                    "log-probabilities of the sampled tokens under π_θ (`logp`) and π_ref (`ref_logp`).",
                    "把 KL 放在损失里时，优化器看到的是 β·k3 的*导数*，不是它的值。写出 `k3_grad(logp, ref_logp)`：对每个 token "
                    "求 ∂k3/∂logp，其中 k3 = u − log u − 1（式 5），u = π_ref/π_θ，`ref_logp` 视为常数——手推，不用 autograd。"
                    "两个输入都是 (B, T)：采样 token 在 π_θ（`logp`）和 π_ref（`ref_logp`）下的对数概率。"),
        hints=(Text("Write u = exp(ref_logp − logp). What is ∂u/∂logp, and ∂(log u)/∂logp?",
                    "写成 u = exp(ref_logp − logp)。∂u/∂logp 是多少？∂(log u)/∂logp 呢？"),
               Text("Check: equal inputs must give exactly 0 (k3 has its minimum there); π_θ > π_ref must give a positive "
                    "gradient (the loss pushes logp down).",
                    "验算：两个输入相等时必须恰好为 0（k3 在那里取最小值）；π_θ > π_ref 时梯度必须为正（损失把 logp 往下压）。")),
        reference=k3_grad, expected=_k3_grad, cases=_k3_cases, mistakes=K3_GRAD_MISTAKES,
    ),
    Compute(
        id="kl.k3_value", notebook="04", name="k3_by_hand", form=NUMBER,
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
    Predict(
        id="loss.clip_negative", notebook="04", name="bad_token_push",
        title=Text("Clipping when Â < 0", "Â < 0 时的裁剪"),
        prompt=Text("A token of a **bad** response (Â = −1) has ratio **ρ = 1.5**, ε = 0.2: the update made it *more* "
                    "likely. Is its log-probability pushed `\"up\"`, `\"down\"`, or does clipping switch its gradient off "
                    "(`\"none\"`)?",
                    "一条**坏**回答（Â = −1）里的某个 token，比率 **ρ = 1.5**，ε = 0.2：更新反而让它*更*可能了。它的对数概率"
                    "是被往上推（`\"up\"`）、往下压（`\"down\"`），还是被裁剪关掉了梯度（`\"none\"`）？"),
        hints=(Text("With Â < 0 both branches are negative. Which one does the min pick at ρ = 1.5: ρ·Â or clip(ρ)·Â?",
                    "Â < 0 时两个分支都是负的。在 ρ = 1.5 处 min 取哪个：ρ·Â 还是 clip(ρ)·Â？"),),
        options=(Option("up", Text("pushed up", "往上推"),
                        Text("A bad response is never pushed up: the sign of the push is the sign of Â.",
                             "坏回答从不会被往上推：推力的符号就是 Â 的符号。")),
                 Option("down", Text("pushed down", "往下压")),
                 Option("none", Text("no gradient", "没有梯度"),
                        Text("ρ > 1 + ε switches the gradient off only for Â > 0. For Â < 0 the min keeps ρ·Â there: the "
                             "pessimistic bound never forgives a move the wrong way.",
                             "ρ > 1 + ε 只对 Â > 0 关掉梯度。Â < 0 时 min 在那里保留 ρ·Â：悲观下界从不放过往错误方向的移动。"))),
        correct=lambda: _push(_clip_weight(1.5, -1.0)),
        explain=lambda: tr(f"∂ℓ/∂log π at ρ = 1.5, Â = −1 is {_clip_weight(1.5, -1.0):+.2f} (= ρ·Â): pushed down, harder than "
                           f"at ρ = 1. For Â < 0 the flat side is ρ < 1 − ε (at ρ = 0.7: {_clip_weight(0.7, -1.0):.3g}).",
                           f"ρ = 1.5、Â = −1 处 ∂ℓ/∂log π = {_clip_weight(1.5, -1.0):+.2f}（= ρ·Â）：被往下压，比 ρ = 1 时更狠。"
                           f"Â < 0 时平坦的一侧是 ρ < 1 − ε（ρ = 0.7 处：{_clip_weight(0.7, -1.0):.3g}）。"),
    ),
    Predict(
        id="credit.emergence", notebook="04", name="faster_credit",
        title=Text("Which group size finds the decisive token first?", "哪种组大小先找到关键 token？"),
        prompt=Text("§5's toy: the reward is 1 iff token 0 sits at the decisive position; every token of a response "
                    "gets the same Â. Each step samples **32 responses** of one prompt, as 16 groups of **G = 2** or as 2 "
                    "groups of **G = 16**, with eq. (1) (÷ the group std) and the same learning rate. Which raises π(token 0) at the decisive position to 0.5 in fewer steps: "
                    "`\"G2\"`, `\"G16\"`, or `\"same\"` (same number of responses)?",
                    "§5 的玩具：关键位置上是 token 0 时奖励为 1；一条回答的每个 token 得到同一个 Â。每步对一个提示采样 "
                    "**32 条回答**，分成 16 组 **G = 2** 或 2 组 **G = 16**，都用式 (1)（÷ 组标准差）和相同的学习率。哪种方式用更少的步数把关键位置上的 π(token 0) "
                    "提到 0.5：`\"G2\"`、`\"G16\"`，还是一样（`\"same\"`，回答数相同）？"),
        hints=(Text("The target starts unlikely. In a group of 2, how often does exactly one of the two responses hit it "
                    "(so that the group is not degenerate)?",
                    "目标 token 一开始概率很低。2 条一组时，恰好一条命中（这组才不是退化组）的机会有多大？"),),
        options=(Option("G2", Text("G = 2", "G = 2"),
                        Text("More groups, but most pairs are degenerate (both responses miss) and give no push: per step, "
                             "G = 2's expected push is the smaller one.",
                             "组更多，但大多数两两一组是退化组（两条都没命中），没有推力：每步的期望推力 G = 2 更小。")),
                 Option("G16", Text("G = 16", "G = 16")),
                 Option("same", Text("the same", "一样"),
                        Text("The same responses, but not the same push per step: eq. (1)'s group mean and its ÷ std "
                             "both make it grow with G.",
                             "回答一样多，但每步的推力不一样：式 (1) 的组均值和 ÷ std 都让它随 G 变大。"))),
        correct=lambda: _credit_key(), explain=lambda: _credit_text(),
    ),
    Predict(
        id="kl.placement", notebook="04", name="kl_in_reward_adv",
        title=Text("KL in the reward on a degenerate group", "退化组上把 KL 放进奖励"),
        prompt=Text("A group where **every** answer is right (rewards 1, …, 1), and one token of response 0 has drifted "
                    "from π_ref. With the KL **in the loss** the advantages are all 0. With the KL **in the reward** "
                    "(r_i − β Σ_t log π_θ/π_ref, then eq. 1) and a small **β = 0.01**, how large are the advantages: "
                    "`\"zero\"`, `\"tiny\"` (of order β) or `\"unit\"` (std ≈ 1)?",
                    "一组回答**全部**正确（奖励 1, …, 1），第 0 条回答里有一个 token 偏离了 π_ref。KL **放在损失里**时，优势全是 0。"
                    "KL **放进奖励**（r_i − β Σ_t log π_θ/π_ref，再做式 1）且 **β = 0.01** 很小时，优势有多大：`\"zero\"`（零）、"
                    "`\"tiny\"`（β 量级）还是 `\"unit\"`（标准差 ≈ 1）？"),
        hints=(Text("Eq. (1) divides by the group's std. What is left of the rewards' spread once every task reward is 1?",
                    "式 (1) 要除以组标准差。每个任务奖励都是 1 之后，奖励的差异还剩下什么？"),),
        options=(Option("zero", Text("zero", "零"),
                        Text("The shaped rewards are no longer all equal: the KL term differs between responses.",
                             "塑形后的奖励不再全部相等：KL 项在回答之间不同。")),
                 Option("tiny", Text("tiny", "很小"),
                        Text("They would be tiny without ÷ std; eq. (1) rescales any spread well above its additive "
                             "constant ε_std (1e-4 here) to unit std — only a far smaller β (1e-5: std 0.07) leaves them tiny.",
                             "如果不除以标准差它们会很小；式 (1) 会把任何明显大于其加性常数 ε_std（这里是 1e-4）的差异放大到"
                             "单位标准差——只有小得多的 β（1e-5：标准差 0.07）才让它们保持很小。")),
                 Option("unit", Text("unit", "单位大小"))),
        correct=lambda: _placement_key(), explain=lambda: _placement_text(),
    ),
)
