"""The GRPO loss, token by token (seed 000 §2–§4, eqs. (2)–(7); seed 004 §四).

Everything here is torch and works on a padded batch: ``B`` responses of at most ``T``
tokens, with a 0/1 response ``mask`` of shape ``(B, T)``. One response ``i`` has
``|y_i| = mask[i].sum()`` valid tokens. The pieces, in the order of the seed's six-step
recipe (seed 000 §5):

=====================================  ===============================================
:func:`token_ratio`                    ρ_{i,t} = π_θ / π_θold per token, eq. (4)
:func:`sequence_ratio`                 GSPO's s_i = exp(mean_t log ρ_{i,t}) (seed 004 §四)
:func:`broadcast_adv`                  Â_i (B,) copied onto every token (B, T), §1.2/§2.2
:func:`policy_loss_per_token`          −ℓ_{i,t}, the clipped term of eq. (3) as a loss
:func:`kl_penalty`                     k1 / k2 / k3 per token; k3 is eq. (5)
:func:`aggregate`                      eq. (6) seq-mean, eq. (7) token-mean, Dr. GRPO 1/C
:func:`grpo_loss`                      eq. (2) as a loss: aggregate(−ℓ + β·KL) + diagnostics
:func:`kl_shaped_rewards`              §3 form 2: r' = −β log(π/π_ref) folded into r_i
:func:`token_grad_weights`             ∂loss/∂log π(o_{i,t}) for every token, by autograd
=====================================  ===============================================

Beyond the lecture notes (:mod:`grpo_lab.losses.beyond`): CISPO, SAPO and GMPO as
``grpo_loss(policy_loss=...)``, their per-token pieces (:func:`cispo_weight`,
:func:`sapo_gate`), and the sampler/trainer correction (:func:`rollout_is_weights` for
TIS/MIS; :func:`mismatch_stats` in :mod:`grpo_lab.losses.tools`).

Sign convention. The seed writes an *objective* to maximise,
ℓ = min(ρ·Â, clip(ρ, 1−ε, 1+ε)·Â) (eq. 3). This module returns *losses* to minimise, i.e.
−ℓ, because that is what an optimiser and the LM trainer consume. Consequently a token of a
good response (Â > 0) has a *negative* gradient weight ∂loss/∂log π: gradient descent pushes
its log-probability up.

:func:`grpo_loss` is the one place the loss is computed; the LM trainer, the notebooks, the
figures and :func:`token_grad_weights` all call it. Input validation and the option names
live in :mod:`grpo_lab.losses.checks`, the loss in :mod:`grpo_lab.losses.core`, the tools built
on it (the last rows of the table, :func:`surrogate_curve`, :func:`zero_grad_intervals`) in
:mod:`grpo_lab.losses.tools`; every name is importable from ``grpo_lab.losses``.

Conventions of other libraries (described, not copied):

* TRL's ``GRPOConfig.loss_type`` names map onto :func:`aggregate` modes — ``"grpo"`` →
  ``"seq-mean-token-mean"`` (eq. 6), ``"bnpo"`` → ``"token-mean"`` over the local batch,
  ``"dapo"`` → ``"token-mean"`` over the whole (gradient-accumulated) batch, ``"dr_grpo"`` →
  ``"seq-mean-token-sum-norm"`` with ``max_len = max_completion_length``. All four are accepted
  here as aliases. "bnpo" and "dapo" differ in TRL only in *which* tokens are counted when the
  batch is split into micro-batches; on one batch they are the same number.
* verl names its ``loss_agg_mode`` exactly like the modes here. Its
  ``"seq-mean-token-sum-norm"`` (in the versions we read) divides the *total* by the padded
  response length T only, without the 1/B of Dr. GRPO's 1/(G·C); its value is therefore B
  times ours (same direction, B-fold step size). Here, as in TRL's ``dr_grpo``, the divisor
  is B'·max_len.
* verl calls k1/k2/k3 ``"kl"``/``"mse"``/``"low_var_kl"`` (and clamps the last one); these
  names are accepted as aliases; instead of verl's clamp, k3 continues along its tangent
  line past a log-ratio of 20 (see :func:`kl_penalty`).
* Dual clip (verl's ``clip_ratio_c``, default 3) bounds the loss of Â < 0 tokens whose ratio
  has run far above 1; TRL's GRPO trainer has no dual clip.
* With one optimiser step per batch (μ = 1 in the GRPO paper, TRL's default
  ``num_iterations=1``) old_logp equals logp numerically, ρ ≡ 1 and clipping never fires;
  only the gradient of ρ survives (see :func:`token_grad_weights`).
"""
from grpo_lab.losses.beyond import (POLICY_LOSSES, ROLLOUT_IS_MODES, check_policy_loss, cispo_weight,  # noqa: F401
                                    rollout_is_weights, sapo_gate)
from grpo_lab.losses.checks import (KL_ALIASES, KL_KINDS, LEVELS, MODE_ALIASES, MODES, resolve_kind,  # noqa: F401
                                    resolve_mode)
from grpo_lab.losses.core import (K3_LOG_RATIO_BOUND, LOG_RATIO_MARGIN, LossOutput, aggregate,  # noqa: F401
                                  broadcast_adv, grpo_loss, kl_penalty, policy_loss_per_token, sequence_ratio,
                                  token_ratio)
from grpo_lab.losses.tools import (kl_shaped_rewards, mismatch_stats, surrogate_curve,  # noqa: F401
                                   token_grad_weights, token_weights, zero_grad_intervals)
