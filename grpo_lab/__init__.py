"""grpo_lab: a companion package for a course on GRPO.

Modules follow the seeds' order: :mod:`bandit` (baselines), :mod:`guess_number`
(the advantage function), :mod:`advantages` (group advantages), :mod:`losses` (the GRPO
loss, token by token), :mod:`bias` (difficulty and length bias), :mod:`lm` (a full GRPO
loop on a tiny causal LM), :mod:`viz` (plots and widget panels), :mod:`figures`.
"""
__version__ = "0.1.0"

from grpo_lab.i18n import get_language, set_language  # noqa: E402  (the language switch)
