"""Guess-the-number: the advantage function A = Q − V, exactly and by sampling (lecture notes 004 §一).

The game (lecture notes 004, L9 p.27). A secret is uniform over the consistent candidates (at the
start 1..N). Each guess costs one of K tries; the host answers ``"higher"`` (the secret is
higher than the guess: the guess was too small), ``"lower"`` (too big) or ``"correct"``.
Success pays reward 1, otherwise 0. The *cost variant* also charges ``cost`` for every
guess, so rewards arrive along the way and the reward-to-go (后续回报) differs from the
total return.

The lecture notes' example: after "8: too small" and "12: too big" the candidates are {9, 10, 11}
with two tries left. (The lecture notes write these hints as "8 / 偏大、12 / 偏小", describing
where the secret lies; :func:`parse_hints` reads them the same way — 偏大 "the secret is
bigger" = ``"higher"``, 偏小 "the secret is smaller" = ``"lower"`` — so the notes' state is
typed "8 偏大, 12 偏小".) Guessing 11 and failing leaves two candidates and one try; guessing 10 and
failing leaves one candidate and one try. Under the uniform policy

    Q(10) = 1/3 + 2/3 · 1   = 1,       Q(9) = Q(11) = 1/3 + 2/3 · 1/2 = 2/3,
    V     = (1 + 2/3 + 2/3)/3 = 7/9,   A(10) = +2/9 > 0,   A(9) = A(11) = −1/9 < 0:

the same 0 reward for a wrong guess, opposite signs of the advantage (优势).

Definitions (L9 p.27): for a history h (here summarised by the candidate set and the tries
left) and a guess a,

    Q^π(h, a) = E[reward-to-go from h | first guess a, then π],
    V^π(h)    = Σ_a π(a|h) Q^π(h, a),          A^π(h, a) = Q^π(h, a) − V^π(h),

so Σ_a π(a|h) A^π(h, a) = 0 for every h.

**Why sizes suffice.** The feedback only compares numbers, and every policy here looks only
at the *rank* of a guess among the consistent candidates, so after guessing the candidate of
rank r (0-based) in a set of m the next state is a set of size m − 1 − r ("higher") or r
("lower"), whatever the numbers are. The dynamic programme therefore runs over (m, k)
= (number of candidates, tries left), vectorised over m: O(K·M²) numbers for sets up to M.
The tests check it against brute-force enumeration over actual number sets and secrets.

Policies (rank-based; see :class:`Policy`):

=============  ===============================================================
``uniform``    every consistent candidate with probability 1/m (the default)
``bisection``  the lower median, rank (m − 1)//2 (an optimal policy)
``softmax``    π_θ(r|m) ∝ exp(θ·φ(r, m)), φ = −|r − (m − 1)/2|: θ = 0 is uniform,
               θ → ∞ bisection (both middles for even m), θ < 0 prefers the ends
=============  ===============================================================

Monte-Carlo (L9 p.27): per-step estimates Â_t = R(τ) − b(h_t) with the baselines (基线)
``none`` (b = 0), ``constant`` (a fixed b) and ``value`` (the exact V^π(h_t)); the return is
either the total return R(τ) or the reward-to-go G_t = Σ_{t' ≥ t} r_{t'} (L9 p.35; the seed
writes t' > t because it indexes the reward of action a_t as r_{t+1}). Every combination
gives an unbiased policy gradient Σ_t Â_t ∇_θ log π_θ(a_t|h_t), since
E_a[b(h)∇log π] = 0 (L9 p.29); they differ in variance. :func:`train` runs REINFORCE on θ.

TRL and verl do not model multi-step games: an LLM response is one action sequence with one
terminal reward, so there every token's reward-to-go equals the total return and GRPO
broadcasts one sequence-level advantage to all tokens (lecture notes 000, eq. (1)). This package is
the multi-step picture that explains what that broadcast gives up.

Modules: :mod:`~grpo_lab.guess_number.game` (rules, hints, policies),
:mod:`~grpo_lab.guess_number.exact` (V/Q/A by dynamic programming),
:mod:`~grpo_lab.guess_number.monte_carlo` (episodes, per-step estimators),
:mod:`~grpo_lab.guess_number.training` (REINFORCE on θ). Every name is importable from
``grpo_lab.guess_number``.
"""
from __future__ import annotations

from grpo_lab.guess_number.exact import (Branch, Solution, action_values, advantage_map, one_step_tree,
                                         policy_gradient, solve, state_visits, success_probability, value)
from grpo_lab.guess_number.game import (BASELINES, FEEDBACK, MAX_N, MAX_TRIES, PG_ESTIMATORS, POLICIES, RETURNS,
                                        SEED_CANDIDATES, SEED_HINTS, SEED_TRIES, ActionValue, Policy, State,
                                        candidates_from_hints, check_candidates, feedback, make_policy, next_state,
                                        parse_hints, policy_probs, state_from_hints)
from grpo_lab.guess_number.monte_carlo import (EstimatorStats, Episodes, MCValues, estimator_stats,
                                               gradient_samples, mc_action_values, per_step_advantages,
                                               sample_episodes)
from grpo_lab.guess_number.training import TrainConfig, TrainRun, success_curve, train, train_estimators

__all__ = ["BASELINES", "FEEDBACK", "MAX_N", "MAX_TRIES", "PG_ESTIMATORS", "POLICIES", "RETURNS", "SEED_CANDIDATES",
           "SEED_HINTS", "SEED_TRIES", "ActionValue", "Policy", "State", "candidates_from_hints", "check_candidates",
           "feedback", "make_policy", "next_state", "parse_hints", "policy_probs", "state_from_hints", "Branch",
           "Solution", "action_values", "advantage_map", "one_step_tree", "policy_gradient", "solve", "state_visits",
           "success_probability", "value", "EstimatorStats", "Episodes", "MCValues", "estimator_stats",
           "gradient_samples", "mc_action_values", "per_step_advantages", "sample_episodes", "TrainConfig",
           "TrainRun", "success_curve", "train", "train_estimators"]
