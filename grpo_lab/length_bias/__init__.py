"""Length bias (长度偏差): sequence-mean vs token-mean, token by token (seed 000 §4, eqs. (6)/(7)).

Seed 000 §4 and seed 004 §四. Every number here comes from :func:`grpo_lab.losses.grpo_loss`
by autograd (:func:`grpo_lab.losses.token_grad_weights`) and from
:func:`grpo_lab.advantages.group_advantages`; no loss or aggregation formula is repeated.

Per-token gradient weight. With one optimiser step per batch (μ = 1) the ratio is 1 and
w_{i,t} = ∂loss/∂log π(o_{i,t}) is, for a group of G responses with advantages Â_i:

=============  =============================================  ==========================
scheme         aggregation                                    w_{i,t}
=============  =============================================  ==========================
``grpo``       seq-mean-token-mean, eq. (6)                    −Â_i / (G·|y_i|)
``dapo``       token-mean, eq. (7) (DAPO's token-level PG)     −Â_i / Σ_j |y_j|
``dr_grpo``    seq-mean-token-sum-norm, 1/C (Dr. GRPO)         −Â_i / (G·C)
``gspo``       GSPO's sequence ratio s_i, seq-mean             −s_i·Â_i / (G·|y_i|)
``seq_sum``    seq-mean-token-sum (no normaliser)              −Â_i / G
=============  =============================================  ==========================

Only eq. (6) and GSPO carry 1/|y_i|: a wrong answer (Â_i < 0) twice as long has each token
pushed down half as hard, and the whole answer receives the same total push |Â_i|/G
whatever its length (every *response* weighs the same). Under eq. (7) every *token* weighs
the same, so a long answer's total push grows ∝ |y_i| (the seed's "long answers dominate
the gradient", §4.4). Under Dr. GRPO's constant C the per-token push is the same for every
length. GSPO's s_i = exp(mean_t log ρ_{i,t}) is a *mean* over the response, so ∂s_i/∂log π
carries 1/|y_i| again: on policy, GSPO weighs tokens exactly like eq. (6).

Length drift (:func:`simulate_drift`). A toy policy writes one answer token, right with a
fixed probability q (length never helps), then continues or stops at every later position
with a stop probability σ(s_c) that may depend on whether the answer is right (c = right /
wrong). Trained by :func:`grpo_lab.losses.grpo_loss` under each scheme from the same random
numbers, the wrong answers grow longer under eq. (6) and GSPO and do not under eq. (7) or
1/C. The condition, in words: a length parameter moves in expectation only if the per-token
weight of a response depends on its own length. For a geometric length with stop
probability p, ∂log P(L)/∂s = 1 − L·p has mean 0, so with weight 1/C (or a batch-wide
1/Σ|y|) the expected push on s is 0; with weight 1/L it is E[1/L] − p > 0 (Jensen:
E[1/L] > 1/E[L] ≈ p), multiplied by Â < 0 for wrong answers: their stop probability falls,
they get longer; right answers (Â > 0) get shorter. It needs the length policy to "know"
the answer is wrong (here: stop logits per branch; in an LM, the hidden state); if one stop
probability is shared by right and wrong answers, Σ_i Â_i = 0 cancels the effect in
expectation (``length_policy="shared"``).

Robustness (measured when this module was written, 150 steps, 8 seeds per setting): over
q ∈ {0.2, 0.5, 0.8}, G ∈ {4, 8}, 4 or 16 groups per batch, lr ∈ {0.3, 1}, p_stop0 ∈ {0.1,
0.3} and two base seeds, GRPO's (and GSPO's) wrong answers grew by +11 … +23 tokens on every
seed and its right answers shrank; Dr. GRPO's moved by at most 0.6 tokens and DAPO's by at
most 2.6 (DAPO's residual drift has GRPO's sign: the batch denominator Σ_j|y_j| contains the
response's own length; it shrinks as the batch grows). With eq. (7) taken within each group of G = 8
(``DriftConfig(token_mean_over="group")``) the residual is large: wrong answers about +6 tokens. With a shared stop probability every
scheme random-walks by a few tokens, with no trend.

Conventions: TRL's ``loss_type`` "grpo"/"dapo"/"dr_grpo" and verl's ``loss_agg_mode`` map
onto these schemes (see :mod:`grpo_lab.losses`); GSPO as published averages the sequence
terms (seq-mean), which is what ``gspo`` uses. Dr. GRPO also drops the std of eq. (1); here
every scheme gets the *same* advantages so that only the aggregation differs (the std is
notebook 03's topic).

Modules: :mod:`~grpo_lab.length_bias.schemes` (the schemes, from :mod:`grpo_lab.methods`),
:mod:`~grpo_lab.length_bias.weights` (one group's weights), :mod:`~grpo_lab.length_bias.drift`
(the drift toy), :mod:`~grpo_lab.length_bias.table` (seed 000 §4.4's table). Every name is
importable from ``grpo_lab.length_bias``.
"""
from __future__ import annotations

from grpo_lab._torch_threads import single_thread
from grpo_lab.length_bias.drift import (TOKEN_MEAN_OVER, DriftConfig, DriftResult, _simulate, drift_frame,
                                        expected_length,
                                        length_pmf, length_score_moments, simulate_all, simulate_drift, toy_logp)
from grpo_lab.length_bias.schemes import (LABELS, LENGTH_POLICIES, SCHEMES, SHORT, SHOWN, colour, response_mask)
from grpo_lab.length_bias.table import TABLE_EXAMPLE, summary_numbers, summary_table
from grpo_lab.length_bias.weights import GroupWeights, group_weights

__all__ = ["SCHEMES", "LABELS", "SHORT", "SHOWN", "LENGTH_POLICIES", "TOKEN_MEAN_OVER", "colour", "response_mask", "GroupWeights",
           "group_weights", "DriftConfig", "DriftResult", "expected_length", "length_pmf", "toy_logp",
           "simulate_drift", "simulate_all", "drift_frame", "length_score_moments", "TABLE_EXAMPLE",
           "summary_numbers", "summary_table", "single_thread", "_simulate"]
