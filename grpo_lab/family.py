"""The GRPO family side by side (notebook 07): one import for the notebook's compute.

"Family" in this package means one thing: the family of methods of seed 004 (REINFORCE →
baseline → PPO → GRPO → its 2025 branches Dr. GRPO, DAPO, GSPO; RLOO beside them), whose
members are the records of :mod:`grpo_lab.methods`. This module gathers what notebook 07
computes with them; the code lives in

* :mod:`grpo_lab.frozen_batch` — part (a): one frozen batch scored by every variant
  (:func:`score_batch`, :data:`VARIANTS`, :func:`make_batch`, :func:`synthetic_batch`);
* :mod:`grpo_lab.credit` — part (b): PPO's per-token GAE vs GRPO's broadcast Â
  (:func:`gae`, :func:`credit_assignment`);
* :mod:`grpo_lab.lm.preset_runs` — part (c): short LM runs per preset, cached as package
  data. That one depends on the LM loop, so it is not re-exported here (the core does not
  import ``grpo_lab.lm``): ``from grpo_lab.lm.preset_runs import load_family_runs``.
"""
from __future__ import annotations

from grpo_lab.credit import (CreditAssignment, ToySequence, credit_assignment, discounted_returns, gae,
                             td_errors, toy_sequence)
from grpo_lab.frozen_batch import (BATCH_SPECS, BATCHES, BEYOND_VARIANTS, VARIANTS, FamilyScores, FrozenBatch, Variant,
                                   make_batch, score_batch, synthetic_batch, variant_of)

__all__ = ["Variant", "VARIANTS", "BEYOND_VARIANTS", "variant_of", "FrozenBatch", "synthetic_batch", "BATCHES", "BATCH_SPECS",
           "make_batch", "FamilyScores", "score_batch", "td_errors", "discounted_returns", "gae", "ToySequence",
           "toy_sequence", "CreditAssignment", "credit_assignment"]
