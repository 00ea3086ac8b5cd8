"""Model answers of the ``implement`` exercises: what a student is asked to write.

These are the *readable* solutions an instructor hands out (``ex.solution(id)`` returns a
function's source, ``make solutions`` puts them into the notebooks). They are written the
way a student would write them, from numpy/torch primitives, so they are a worked answer,
not a second source of truth: the checker compares every answer — these included — with
the package's own functions (:mod:`grpo_lab.advantages`, :mod:`grpo_lab.losses`, …), and
the tests check that each of these passes its own checker.

Each docstring states the task (inputs, output, shapes) and becomes the stub's docstring
in the student notebook, so it describes *what*, not *how*. Its Chinese twin, ``fn.zh_doc`` (set
right after each function), is the stub's docstring in a Chinese notebook.
"""
from __future__ import annotations

import math

import numpy as np
import torch


# --- notebook 01 -------------------------------------------------------------------
def reinforce_estimate(theta, action, reward, baseline):
    """One-sample REINFORCE estimate of dJ/dθ on the two-armed bandit, with a baseline b.

    π(A) = σ(θ), π(B) = 1 − σ(θ). Arguments: theta (float), action ("A" or "B"), reward (float),
    baseline (float). Returns a float: (R − b) times the score of the sampled action.
    """
    p = 1.0 / (1.0 + math.exp(-theta))            # π(A) = σ(θ)
    score = 1.0 - p if action == "A" else -p       # ∂/∂θ log π(action)
    return (reward - baseline) * score


reinforce_estimate.zh_doc = """双臂 bandit 上、带基线 b 的单样本 REINFORCE 对 dJ/dθ 的估计。

    π(A) = σ(θ)，π(B) = 1 − σ(θ)。参数：theta（float）、action（"A" 或 "B"）、reward（float）、
    baseline（float）。返回一个 float：(R − b) 乘以所采动作的得分函数。
"""


# --- notebook 02 -------------------------------------------------------------------
def reward_to_go(rewards):
    """Reward-to-go (后续回报) of one episode: rewards (T,) -> (T,).

    rewards[t] is the reward received for the action at step t; entry t of the result is
    the return from step t on (no discount).
    """
    rewards = np.asarray(rewards, dtype=float)          # (T,)
    return np.cumsum(rewards[::-1])[::-1]               # G_t = r_t + r_{t+1} + … + r_{T-1}


reward_to_go.zh_doc = """一局的后续回报：rewards (T,) -> (T,)。

    rewards[t] 是第 t 步动作得到的奖励；结果的第 t 项是从第 t 步起的回报（不打折扣）。
"""


# --- notebook 03 -------------------------------------------------------------------
def group_advantages(rewards):
    """Group advantages of eq. (1): rewards (N, G) -> advantages (N, G).

    Each row is one group (the G responses to one prompt). Population std, ε = 1e-4 added
    to the std in the denominator; a group whose rewards are all equal gets exactly 0.
    """
    rewards = np.asarray(rewards, dtype=float)                  # (N, G)
    mean = rewards.mean(axis=1, keepdims=True)                  # (N, 1)
    std = rewards.std(axis=1, keepdims=True)                    # (N, 1) population std: divide by G
    adv = (rewards - mean) / (std + 1e-4)                       # (N, G)
    adv[np.all(rewards == rewards[:, :1], axis=1)] = 0.0        # all equal: exactly 0, no gradient
    return adv


group_advantages.zh_doc = """式 (1) 的组内优势：rewards (N, G) -> advantages (N, G)。

    每一行是一组（同一提示的 G 条回答）。用总体标准差，分母里在标准差上加 ε = 1e-4；
    奖励全部相等的组恰好得到 0。
"""


# --- notebook 04 -------------------------------------------------------------------
def clipped_loss(logp, old_logp, adv, mask, eps):
    """The per-token clipped surrogate *loss* (to minimise) of eq. (3) with clip-higher: -> Tensor (B, T).

    logp, old_logp, mask: (B, T) tensors; adv: (B,), one advantage per response, used on
    every token; eps = (eps_low, eps_high): the ratio is clipped to [1 − eps_low, 1 + eps_high]
    (DAPO's asymmetric range). Values at padding positions (mask == 0) are ignored.
    """
    eps_low, eps_high = eps
    ratio = torch.exp(logp - old_logp)                          # (B, T) ρ, eq. (4)
    A = adv[:, None]                                            # (B, 1): the same Â_i on every token
    unclipped = ratio * A                                       # (B, T)
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high) * A        # (B, T)
    return -torch.minimum(unclipped, clipped)                   # loss = −ℓ, ℓ of eq. (3)


clipped_loss.zh_doc = """式 (3) 带 clip-higher 的逐 token 裁剪代理*损失*（要最小化的量）：-> Tensor (B, T)。

    logp、old_logp、mask：(B, T) 张量；adv：(B,)，每条回答一个优势，用在它的每个 token 上；
    eps = (eps_low, eps_high)：比率被裁剪到 [1 − eps_low, 1 + eps_high]（DAPO 的非对称范围）。
    填充位置（mask == 0）上的值不计。
"""


def k3_grad(logp, ref_logp):
    """The gradient ∂k3/∂logp of the k3 estimate of eq. (5), per token, u = π_ref/π_θ: -> Tensor (B, T).

    logp = log π_θ and ref_logp = log π_ref of the sampled tokens, both (B, T). Entry (i, t)
    is the derivative of k3_{i,t} with respect to logp[i, t] (ref_logp held fixed), written
    out by hand — no autograd.
    """
    u = torch.exp(ref_logp - logp)                              # (B, T) u = π_ref/π_θ; ∂u/∂logp = −u
    return 1 - u                                                # ∂(u − log u − 1)/∂logp = −u + 1


k3_grad.zh_doc = """式 (5) 的 k3 估计对 logp 的梯度 ∂k3/∂logp，逐 token，u = π_ref/π_θ：-> Tensor (B, T)。

    logp = log π_θ 和 ref_logp = log π_ref 是所采 token 的对数概率，都是 (B, T)。第 (i, t) 项是
    k3_{i,t} 对 logp[i, t] 的导数（ref_logp 固定），手工推导——不用 autograd。
"""


# --- notebook 05 -------------------------------------------------------------------
def seq_mean(values, mask):
    """Eq. (6), the sequence mean: values (B, T), mask (B, T) -> scalar Tensor.

    mask is 1 on response tokens and 0 on padding (whatever values holds there). Every row
    has at least one token.
    """
    mask = mask.to(values.dtype)
    per_response = (values * mask).sum(-1) / mask.sum(-1)       # (B,) mean over each response's tokens
    return per_response.mean()                                  # then over the B responses


seq_mean.zh_doc = """式 (6)，序列平均：values (B, T)，mask (B, T) -> 标量 Tensor。

    mask 在回答 token 上为 1、在填充位置上为 0（那里的 values 可以是任意数）。每一行至少有一个 token。
"""


def token_mean(values, mask):
    """Eq. (7), the token (batch) mean: values (B, T), mask (B, T) -> scalar Tensor.

    mask is 1 on response tokens and 0 on padding (whatever values holds there).
    """
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum()                   # every token of the batch weighs the same


token_mean.zh_doc = """式 (7)，批次平均：values (B, T)，mask (B, T) -> 标量 Tensor。

    mask 在回答 token 上为 1、在填充位置上为 0（那里的 values 可以是任意数）。
"""


# --- notebook 06 -------------------------------------------------------------------
def step_loss(logp, old_logp, rewards, mask, group_size):
    """Steps 3–6 of one GRPO step on a flat batch: -> scalar Tensor, the loss to minimise.

    rewards (N·G,) laid out group after group (responses k·G … k·G + G − 1 answer prompt k);
    logp, old_logp, mask (N·G, T). Eq. (1) within each group (population std, ε = 1e-4,
    all-equal -> 0), the clipped term of eq. (3) with ε = 0.2, then eq. (6): the mean over
    each response's tokens, then over the responses. No KL term (β = 0).
    """
    r = torch.as_tensor(rewards, dtype=logp.dtype).reshape(-1, group_size)    # (N, G): row k = prompt k
    std = r.std(dim=1, unbiased=False, keepdim=True)                         # population std
    adv = (r - r.mean(dim=1, keepdim=True)) / (std + 1e-4)                   # eq. (1)
    adv = torch.where(std == 0, torch.zeros_like(adv), adv).reshape(-1, 1)   # (N·G, 1), all-equal -> 0
    ratio = torch.exp(logp - old_logp)                                       # (N·G, T)
    per_token = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv)     # −ℓ of eq. (3)
    mask = mask.to(logp.dtype)
    return ((per_token * mask).sum(-1) / mask.sum(-1)).mean()                # eq. (6)


step_loss.zh_doc = """一个 GRPO 步的第 3–6 步，作用在扁平的批次上：-> 标量 Tensor，要最小化的损失。

    rewards (N·G,) 按组依次排列（第 k·G … k·G + G − 1 条回答对应第 k 个提示）；
    logp、old_logp、mask 为 (N·G, T)。每组内用式 (1)（总体标准差，ε = 1e-4，全部相等 -> 0），
    式 (3) 的裁剪项取 ε = 0.2，再用式 (6)：先在每条回答的 token 上平均，再对回答平均。没有 KL 项（β = 0）。
"""


# --- notebook 07 -------------------------------------------------------------------
def rloo_advantages(rewards):
    """RLOO advantages: each reward minus the mean of the *other* G − 1 rewards of its group.

    rewards (N, G) -> (N, G); G ≥ 2.
    """
    rewards = np.asarray(rewards, dtype=float)                  # (N, G)
    G = rewards.shape[1]
    others = (rewards.sum(axis=1, keepdims=True) - rewards) / (G - 1)   # (N, G) mean of the others
    return rewards - others


rloo_advantages.zh_doc = """RLOO 优势：每个奖励减去同组*其余* G − 1 个奖励的均值。

    rewards (N, G) -> (N, G)；G ≥ 2。
"""


def dr_grpo_mean(values, mask, max_len):
    """Dr. GRPO's aggregation: values (B, T), mask (B, T), max_len C (int) -> scalar Tensor.

    Replaces eq. (6)'s 1/|y_i| by the constant 1/C (the generation budget, C ≥ T), then
    averages over the B responses. mask is 1 on response tokens, 0 on padding.
    """
    mask = mask.to(values.dtype)
    B = values.shape[0]
    return (values * mask).sum() / (B * max_len)                # Σ_i Σ_t v_{i,t} / (B·C)



dr_grpo_mean.zh_doc = """Dr. GRPO 的聚合：values (B, T)，mask (B, T)，max_len C（int）-> 标量 Tensor。

    把式 (6) 中的 1/|y_i| 换成常数 1/C（生成预算，C ≥ T），再对 B 条回答平均。
    mask 在回答 token 上为 1、在填充位置上为 0。
"""