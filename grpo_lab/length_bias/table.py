"""Seed 000 §4.4's table (sequence mean vs batch mean), recomputed from computed numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_lab.length_bias.drift import DriftResult, simulate_all
from grpo_lab.length_bias.weights import group_weights

TABLE_EXAMPLE = {"lengths": (12, 12, 6, 24), "rewards": (1, 1, 0, 0)}   # Â = +1, +1, −1, −1


def summary_numbers(lengths=TABLE_EXAMPLE["lengths"], rewards=TABLE_EXAMPLE["rewards"],
                    drift: dict[str, DriftResult] | None = None, dapo_group: DriftResult | None = None) -> dict:
    """The numbers behind the §4.4 table, for eq. (6) (``"seq"``) and eq. (7) (``"batch"``).

    From one group's autograd weights (:func:`group_weights`) and a drift simulation
    (``drift``: a dict scheme -> :class:`DriftResult` holding grpo, dapo, dr_grpo and gspo;
    default :func:`simulate_all` of the default config). Per column:

    * ``normaliser`` (G,): −Â_i / w_i, the number each response's advantage is divided by
      per token (G·|y_i| for eq. 6, Σ|y| for eq. 7);
    * ``total_push`` (G,): |Σ_t w_{i,t}|, the whole push one response receives;
    * ``per_token_long_over_short`` / ``total_long_over_short``: the longest over the
      shortest wrong answer;
    * ``longest_share``: the longest response's share of Σ_i |total push|;
    * ``wrong_drift`` / ``right_drift``: change of wrong / right answers' E|y| over training, mean over seeds.

    ``dapo_group``: optionally the dapo run with ``token_mean_over="group"`` (eq. (7) within each
    group of G); its mean wrong-answer drift becomes ``dapo_group_wrong_drift``.
    """
    gw = group_weights(lengths, rewards, schemes=("grpo", "dapo"))
    drift = simulate_all() if drift is None else drift
    missing = {"grpo", "dapo", "dr_grpo", "gspo"} - set(drift)
    if missing:
        raise ValueError(f"drift must hold results for grpo, dapo, dr_grpo and gspo; missing {sorted(missing)}")
    L, adv = gw.lengths, gw.adv
    wrong = np.flatnonzero(adv < 0)
    if wrong.size < 2 or L[wrong].min() == L[wrong].max():
        raise ValueError("lengths/rewards: the table needs two wrong answers (Â < 0) of different lengths")
    if np.any(adv == 0):
        raise ValueError("rewards: every response needs Â != 0 for its normaliser to be defined")
    short, long_ = wrong[np.argmin(L[wrong])], wrong[np.argmax(L[wrong])]
    longest = int(np.argmax(L))
    out = {"example": {"lengths": L, "adv": adv, "G": int(L.size), "total_tokens": int(L.sum()),
                       "short_wrong_len": int(L[short]), "long_wrong_len": int(L[long_])},
           "steps": int(drift["grpo"].config.steps), "seeds": int(np.size(drift["grpo"].wrong_change))}
    for key, k, scheme in (("seq", 0, "grpo"), ("batch", 1, "dapo")):
        w = gw.per_token[k]                                              # (G,) ∂loss/∂log π per token
        mass = np.abs(gw.total[k])                                       # (G,)
        out[key] = {
            "normaliser": -adv / w,                                      # (G,)
            "total_push": mass,
            "per_token_long_over_short": float(w[long_] / w[short]),
            "total_long_over_short": float(gw.total[k][long_] / gw.total[k][short]),
            "longest_share": float(mass[longest] / mass.sum()),
            "wrong_drift": float(drift[scheme].wrong_change.mean()),
            "right_drift": float(drift[scheme].right_change.mean()),
        }
    out["gspo_wrong_drift"] = float(drift["gspo"].wrong_change.mean())
    out["dr_grpo_wrong_drift"] = float(drift["dr_grpo"].wrong_change.mean())
    out["batch_responses"] = int(drift["dapo"].config.n_groups * drift["dapo"].config.G)
    if dapo_group is not None:
        if dapo_group.scheme != "dapo" or dapo_group.config.token_mean_over != "group":
            raise ValueError("dapo_group must be a dapo run with token_mean_over='group'")
        out["dapo_group_wrong_drift"] = float(dapo_group.wrong_change.mean())
        out["group_size"] = int(dapo_group.config.G)
    return out


def summary_table(lengths=TABLE_EXAMPLE["lengths"], rewards=TABLE_EXAMPLE["rewards"],
                  drift: dict[str, DriftResult] | None = None, dapo_group: DriftResult | None = None) -> pd.DataFrame:
    """Seed 000 §4.4 (一张表总结) recomputed from :func:`summary_numbers`: every cell is formatted, not typed.

    Columns 序列平均 (sequence mean, eq. 6) and 批次平均 (batch/token mean, eq. 7); rows
    as in the seed: denominator, what weighs equally, a long answer's gradient, side effect,
    fix. The example group defaults to lengths 12, 12, 6, 24 with rewards 1, 1, 0, 0.
    """
    n = summary_numbers(lengths, rewards, drift, dapo_group)
    s, b, ex = n["seq"], n["batch"], n["example"]
    G, short, long_ = ex["G"], ex["short_wrong_len"], ex["long_wrong_len"]
    own = ", ".join(f"{v:.0f}" for v in s["normaliser"] / G)
    rows = {
        "分母 denominator": (
            f"own length |y_i| (×G): {own}",
            f"batch total Σ|y| = {b['normaliser'].min():.0f}" + (" for every response" if np.ptp(b["normaliser"]) < 1e-9
                                                                  else f" … {b['normaliser'].max():.0f}")),
        "等权对象 equal weight": (
            "each response: total push " + " = ".join(f"{v:.3f}" for v in np.unique(s["total_push"].round(6))),
            f"each token: per-token push long/short wrong = {b['per_token_long_over_short']:.2f}"),
        "长回答的梯度 long answer's gradient": (
            f"diluted: per token ×{s['per_token_long_over_short']:.2f} (= {short}/{long_})",
            f"∝ token count: total ×{b['total_long_over_short']:.2f} (= {long_}/{short})"),
        "副作用 side effect": (
            f"length bias: wrong answers {s['wrong_drift']:+.1f}, right answers {s['right_drift']:+.1f} tokens in "
            f"{n['steps']} steps (toy of §6, mean of {n['seeds']} seeds)",
            f"long answers dominate: longest carries {100 * b['longest_share']:.0f}% of the push "
            f"(seq-mean: {100 * s['longest_share']:.0f}%)"),
        "修复倾向 fix": (
            f"— (GSPO's sequence ratio keeps it: {n['gspo_wrong_drift']:+.1f})",
            f"DAPO's direction: {b['wrong_drift']:+.1f} with Σ|y| over {n['batch_responses']} responses"
            + (f", {n['dapo_group_wrong_drift']:+.1f} over one group of {n['group_size']}" if "dapo_group_wrong_drift" in n else "")
            + f"; Dr. GRPO 1/C: {n['dr_grpo_wrong_drift']:+.1f} (means of {n['seeds']} seeds)"),
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=["序列平均 seq-mean, eq. (6)", "批次平均 token-mean, eq. (7)"])
