"""The registry of methods: one record per member of the GRPO family (seed 004 §三–四).

What makes "DAPO" or "Dr. GRPO" is a choice among functions that already exist: an
advantage estimator (:mod:`grpo_lab.advantages`), an aggregation mode and an importance-ratio
level (:mod:`grpo_lab.losses`), a clip range, and the two DAPO extras that act on the
sampled batch (dynamic sampling, overlong reward shaping). Each :class:`Method` writes that
choice down once, with its label, its colour and its paper. Everything else derives from it:

* the LM presets ``GRPOConfig.preset(name)`` (:func:`preset_overrides`),
* notebook 07's frozen-batch variants (:data:`grpo_lab.frozen_batch.VARIANTS`),
* notebook 05's length-bias schemes (:data:`grpo_lab.length_bias.SCHEMES`, labels, short labels),
* the TRL / verl names in :mod:`grpo_lab.lm.handoff` (:data:`TRL_LOSS_TYPE`, :data:`VERL_KL_TYPE`),
* the colour of a method in every panel and figure (:func:`colour`).

``tests/test_methods.py`` checks that each derived table agrees with this one.

==========  =========  ======  ======================  ========  ==============  =====  =====  =====
method      Â          ÷ std   aggregation             ratio     ε_low / ε_high  dyn.   overl. β
==========  =========  ======  ======================  ========  ==============  =====  =====  =====
grpo        group      group   seq-mean-token-mean     token     0.2 / 0.2       no     0      0.04
dr_grpo     group      none    seq-mean-token-sum-norm token     0.2 / 0.2       no     0      0
dapo        group      group   token-mean              token     0.2 / 0.28      yes    2      0
gspo        group      group   seq-mean-token-mean     sequence  3e-4 / 4e-4     no     0      0
cispo *     group      group   token-mean              token     cap 5 (weight)  no     0      0
sapo *      group      group   seq-mean-token-mean     token     gate τ 1 / 1.05 no     0      0
gmpo *      group      group   seq-mean-token-mean     geo-mean  0.4 / 0.4 (log) no     0      0
rloo        rloo       —       seq-mean-token-mean     token     0.2 / 0.2       no     0      0
ppo         gae        —       token-mean              token     0.2 / 0.2       no     0      0
==========  =========  ======  ======================  ========  ==============  =====  =====  =====

For the rows marked * the ε_low / ε_high column is not a clip of ρ: CISPO's cap 5 bounds the
detached weight (TRL passes it as ``epsilon_high=5``, :attr:`Method.trl_epsilon_high`), GMPO's 0.4
bounds log ρ (ρ ∈ [0.67, 1.49]), SAPO has a gate and no bound; :attr:`Method.bound` says which, and
:func:`table` shows that instead of the record's unused ``eps_low`` / ``eps_high``.

Rows marked * are beyond the lecture notes (``lecture=False``): the 2025 policy losses of
:mod:`grpo_lab.losses.beyond` (``policy_loss``), each with its paper. TRL's ``bnpo`` is not a
record of its own: in these terms it is the token-mean aggregation (eq. 7) on one batch,
which DAPO's record already uses (they differ only in which tokens count once a batch is
split into micro-batches, see :mod:`grpo_lab.lm.handoff`).

Colour convention (every panel and figure): a method always has its :func:`colour`; a
quantity that *pushes a probability up* (Â > 0, a negative gradient weight) is
:data:`PUSH_UP` (blue) and one that *pushes it down* is :data:`PUSH_DOWN` (red). No method
colour is blue or red, so the two encodings never collide.

Conventions that differ from TRL / verl (named here once, detailed in
:mod:`grpo_lab.lm.handoff`): the std is the seeds' population std (TRL and verl use the
sample std); ``eps_high=None`` means the seed's symmetric ε (= ``eps_low``, as in TRL);
``overlong_buffer`` counts tokens of the tiny model's budget (DAPO's paper uses 4096 tokens
of a 20k budget).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_lab import _checks

ADV_ESTIMATORS = ("grpo", "rloo", "gae")     # group-normalised (eq. 1), leave-one-out, PPO's GAE
PUSH_UP = "tab:blue"      # probability pushed up: Â > 0, gradient weight < 0
PUSH_DOWN = "tab:red"     # probability pushed down: Â < 0, gradient weight > 0
NEUTRAL = "0.55"          # no push (Â = 0, a degenerate group)
PUSH_CMAP = "RdBu"        # colour map of a push (−∂loss/∂log π, Â, A): > 0 blue, < 0 red
WEIGHT_CMAP = "RdBu_r"    # colour map of a gradient weight ∂loss/∂log π (< 0 raises log π): < 0 blue
# Colours of things that are neither a method nor a push (baselines, KL-shaped rewards …)
OTHER = {"constant": "tab:cyan", "running": "teal", "value": "goldenrod", "optimal": "black",
         "kl_shaped": "goldenrod", "none": "tab:gray", "informative": "goldenrod"}
# Correctness (the verifier's verdict, not a push): correct green, wrong red — a wrong answer of an
# informative group is also the one pushed down, so the two reds agree.
CORRECT, WRONG = "tab:green", "tab:red"


def push_colour(x: float, tol: float = 1e-12) -> str:
    """:data:`PUSH_UP` for x > tol, :data:`PUSH_DOWN` for x < −tol, else :data:`NEUTRAL`."""
    return PUSH_UP if x > tol else PUSH_DOWN if x < -tol else NEUTRAL


def resolve_eps_high(eps_low: float, eps_high: float | None) -> float:
    """The high side of the clip range: ``eps_high``, or ``eps_low`` when it is None.

    The one place the default "ε_high = ε_low" (the seed's symmetric clip, eq. 3) is
    written; TRL's ``epsilon_high=None`` means the same.
    """
    return float(eps_low) if eps_high is None else float(eps_high)


@dataclass(frozen=True)
class Method:
    """One method of the family as a choice among existing functions.

    Field names are :class:`grpo_lab.lm.config.GRPOConfig`'s where the LM loop has the knob
    (``adv_scale``, ``adv_std``, ``agg``, ``ratio_level``, ``eps_low``, ``eps_high``,
    ``dynamic_sampling``, ``overlong_buffer``, ``beta``). ``estimator`` picks the advantage:
    ``"grpo"`` = :func:`grpo_lab.advantages.group_advantages` with ``adv_scale``/``adv_std``,
    ``"rloo"`` = :func:`~grpo_lab.advantages.rloo_advantages`, ``"gae"`` = PPO's per-token
    GAE with a value model (:func:`grpo_lab.credit.gae`; not a group method, so it has no
    LM preset). ``preset`` says whether ``GRPOConfig.preset(name)`` exists.
    """

    name: str                       # registry key: "grpo", "dr_grpo", …
    label: str                      # "Dr. GRPO"
    short: str                      # short label for legends: "Dr. GRPO 1/C"
    colour: str                     # matplotlib colour, the same in every panel
    paper: str                      # reference
    summary: str                    # what it changes, in one line
    estimator: str = "grpo"
    adv_scale: str = "group"        # "group" (÷ group std), "batch", "none" (Dr. GRPO)
    adv_std: str = "population"     # the seeds' std
    agg: str = "seq-mean-token-mean"
    ratio_level: str = "token"
    eps_low: float = 0.2
    eps_high: float | None = None   # None = eps_low
    dynamic_sampling: bool = False
    overlong_buffer: int = 0
    beta: float = 0.0
    preset: bool = True
    policy_loss: str = "clip"       # grpo_lab.losses.POLICY_LOSSES: clip (eq. 3), cispo, sapo, gmpo
    cispo_cap: float = 5.0          # CISPO's largest weight (TRL's epsilon_high for loss_type='cispo'; 5 is the
    #                                 value TRL's docs recommend, after ScaleRL; MiniMax-M1 tunes it, no default)
    sapo_tau_pos: float = 1.0       # SAPO gate temperature for Â > 0
    sapo_tau_neg: float = 1.05      # … for Â ≤ 0
    lecture: bool = True            # False: beyond the lecture notes (notebook 09)

    def __post_init__(self):
        # (adv_scale, adv_std, agg, ratio_level are checked against advantages/losses by
        # tests/test_methods.py and by GRPOConfig.validate: this module imports no torch)
        _checks.choice("estimator", self.estimator, ADV_ESTIMATORS)
        _checks.in_range("eps_low", self.eps_low, 0.0, 1.0)
        if self.eps_high is not None:
            _checks.in_range("eps_high", self.eps_high, 0.0)
        if self.colour in (PUSH_UP, PUSH_DOWN):
            raise ValueError(f"colour of {self.name}: blue and red are reserved for PUSH_UP / PUSH_DOWN")

    @property
    def clip_high(self) -> float:
        """ε_high with the symmetric default resolved (:func:`resolve_eps_high`)."""
        return resolve_eps_high(self.eps_low, self.eps_high)

    @property
    def bound(self) -> str:
        """What the policy term bounds, and where, in words for the method table: the ratio ρ (eq. 3's
        clip; GSPO's sequence ratio), CISPO's detached weight (its cap), GMPO's log ρ (log space), or
        SAPO's gate (no bound, a temperature)."""
        if self.policy_loss == "cispo":
            return f"detached weight min(ρ, {self.cispo_cap:g})"
        if self.policy_loss == "sapo":
            return f"gate σ(τ(ρ−1))·4/τ, τ {self.sapo_tau_pos:g} / {self.sapo_tau_neg:g}"
        if self.policy_loss == "gmpo":
            return (f"log ρ ∈ [−{self.eps_low:g}, {self.clip_high:g}], i.e. ρ ∈ [{math.exp(-self.eps_low):.2f}, "
                    f"{math.exp(self.clip_high):.2f}]")
        name = "s" if self.ratio_level == "sequence" else "ρ"
        return f"{name} ∈ [{1 - self.eps_low:.6g}, {1 + self.clip_high:.6g}]"

    @property
    def trl_epsilon_high(self) -> float:
        """The value TRL 1.16's ``epsilon_high`` takes for this method: 1 + ε_high is the clip's top for the
        clipped loss, but for ``loss_type="cispo"`` TRL reads ``epsilon_high`` as the cap itself (5, not
        0.2); NaN where TRL does not read it (SAPO's gate; GMPO, which TRL 1.16 lacks)."""
        if self.policy_loss == "cispo":
            return float(self.cispo_cap)
        return self.clip_high if self.policy_loss == "clip" else float("nan")

    def config_overrides(self) -> dict:
        """The GRPOConfig fields this method sets (relative to the dataclass defaults)."""
        if not self.preset:
            raise ValueError(f"method {self.name!r} has no LM preset (estimator {self.estimator!r})")
        return {k: getattr(self, k) for k in CONFIG_FIELDS}


# GRPOConfig fields a method record fixes (the rest are run settings).
CONFIG_FIELDS = ("adv_scale", "adv_std", "agg", "ratio_level", "eps_low", "eps_high", "dynamic_sampling",
                 "overlong_buffer", "beta", "policy_loss", "cispo_cap", "sapo_tau_pos", "sapo_tau_neg")

METHODS: dict[str, Method] = {m.name: m for m in (
    Method("grpo", "GRPO", "GRPO (6)", "tab:purple", "Shao et al. 2024, DeepSeekMath (arXiv:2402.03300)",
           "Â = (r − mean)/std (eq. 1), token ratio clipped at 1 ± 0.2 (eq. 3), seq-mean (eq. 6), k3 KL β = 0.04",
           beta=0.04),
    Method("dr_grpo", "Dr. GRPO", "Dr. GRPO 1/C", "tab:green", "Liu et al. 2025, Understanding R1-Zero-Like "
           "Training (arXiv:2503.20783)",
           "no ÷std (difficulty bias), constant 1/C instead of 1/|y_i| (length bias)",
           adv_scale="none", agg="seq-mean-token-sum-norm"),
    Method("dapo", "DAPO", "DAPO (7)", "tab:orange", "Yu et al. 2025, DAPO (arXiv:2503.14476)",
           "clip-higher (ε_high 0.28), dynamic sampling, token-level mean (eq. 7), overlong shaping",
           agg="token-mean", eps_high=0.28, dynamic_sampling=True, overlong_buffer=2),
    Method("gspo", "GSPO", "GSPO", "tab:brown", "Zheng et al. 2025, Group Sequence Policy Optimization "
           "(arXiv:2507.18071)",
           "sequence ratio s_i = exp(mean_t log ρ_{i,t}) with a tiny clip range (3e-4 / 4e-4)",
           ratio_level="sequence", eps_low=3e-4, eps_high=4e-4),
    Method("cispo", "CISPO", "CISPO", "darkcyan", "MiniMax 2025, MiniMax-M1 (arXiv:2506.13585)",
           "ratio not clipped but its weight capped and detached, sg[min(ρ, 5)]·Â·log π: a capped token keeps "
           "its gradient; token-mean (eq. 7)",
           agg="token-mean", policy_loss="cispo", lecture=False),
    Method("sapo", "SAPO", "SAPO", "gold", "Qwen team 2025, Soft Adaptive Policy Optimization (arXiv:2511.20347)",
           "hard clip replaced by a soft gate σ(τ(ρ−1))·4/τ, τ = 1 for Â > 0 and 1.05 for Â ≤ 0; seq-mean (eq. 6)",
           policy_loss="sapo", lecture=False),
    Method("gmpo", "GMPO", "GMPO", "slategray", "Zhao et al. 2025, Geometric-Mean Policy Optimization "
           "(arXiv:2507.20673)",
           "one ratio per response: the geometric mean of token ratios clipped in log space to [−0.4, 0.4]",
           eps_low=0.4, eps_high=0.4, policy_loss="gmpo", lecture=False),
    Method("rloo", "RLOO", "RLOO", "tab:olive", "Kool et al. 2019; Ahmadian et al. 2024 (arXiv:2402.14740)",
           "leave-one-out baseline r_i − mean of the other G − 1, no ÷std",
           estimator="rloo", adv_scale="none", preset=False),
    Method("ppo", "PPO", "PPO (GAE)", "tab:pink", "Schulman et al. 2017 (arXiv:1707.06347); GAE: Schulman et "
           "al. 2016 (arXiv:1506.02438)",
           "a learned value model gives per-token advantages by GAE; the same clipped term",
           estimator="gae", adv_scale="none", agg="token-mean", preset=False),
)}

NAMES = tuple(METHODS)
PRESETS = tuple(n for n, m in METHODS.items() if m.preset)     # the LM presets: grpo … gspo, cispo, sapo, gmpo
LECTURE = tuple(n for n, m in METHODS.items() if m.lecture)   # the methods the lecture notes cover
_BY_LABEL = {m.label: m for m in METHODS.values()}


def get(name: str) -> Method:
    """The record of ``name`` (a key such as ``"dr_grpo"`` or a label such as ``"Dr. GRPO"``)."""
    if isinstance(name, Method):
        return name
    if isinstance(name, str) and name in _BY_LABEL:
        return _BY_LABEL[name]
    return METHODS[_checks.choice("method", name, NAMES)]


def colour(name: str) -> str:
    """The method's colour (the same in every notebook and figure)."""
    return get(name).colour


def label(name: str) -> str:
    return get(name).label


def colour_name(name: str) -> str:
    """The method's colour as a word for prose ("purple" for ``tab:purple``): notebooks name
    colours through this, never by typing them, so the text follows the registry."""
    c = colour(name)
    return c.split(":", 1)[1] if c.startswith(("tab:", "xkcd:")) else c


def preset_overrides() -> dict[str, dict]:
    """``GRPOConfig.PRESETS``: preset name -> the fields it sets (every method with an LM preset)."""
    return {n: METHODS[n].config_overrides() for n in PRESETS}


def table(rows=None, columns=None):
    """The registry as a ``pandas.DataFrame``, one row per method (for notebooks 00, 07 and 09), English
    labels (code reads them). ``rows`` (method labels, e.g. ``["GRPO", "DAPO"]``) and ``columns``
    (headers) pick a part of it. :func:`grpo_lab.roadmap.method_table` is the same table as a student
    sees it, with Chinese headers under ``grpo_lab.set_language("zh")``."""
    import pandas as pd

    data = [{"method": m.label, "advantage": m.estimator, "÷ std": m.adv_scale, "aggregation": m.agg,
             "ratio": m.ratio_level, "bound": m.bound, "TRL epsilon_high": m.trl_epsilon_high,
             "dynamic sampling": m.dynamic_sampling, "overlong buffer": m.overlong_buffer, "beta": m.beta,
             "policy loss": m.policy_loss, "lecture notes": m.lecture, "paper": m.paper} for m in METHODS.values()]
    frame = pd.DataFrame(data).set_index("method")
    for arg, wanted, known in (("rows", rows, frame.index), ("columns", columns, frame.columns)):
        if wanted is not None and (isinstance(wanted, str) or not set(wanted) <= set(known)):
            raise ValueError(f"{arg} must be a list of {'method labels' if arg == 'rows' else 'column names'} "
                             f"from {list(known)}, got {wanted!r}")
    return frame.loc[list(rows) if rows is not None else frame.index,
                     list(columns) if columns is not None else frame.columns]


__all__ = ["Method", "METHODS", "NAMES", "PRESETS", "get", "colour", "colour_name", "label", "preset_overrides", "table",
           "resolve_eps_high", "PUSH_UP", "PUSH_DOWN", "NEUTRAL", "PUSH_CMAP", "WEIGHT_CMAP", "OTHER", "CORRECT", "WRONG",
           "push_colour", "ADV_ESTIMATORS", "CONFIG_FIELDS", "LECTURE"]
