"""The gradient stage of a loss exercise: right values are not enough, the model must be able to learn.

After an implement exercise with ``grad_wrt`` has the right values on every input, its function
is called again with those arguments requiring grad; the result must be a ``torch.Tensor`` that
autograd connects to them, and ∂(Σ W·out)/∂input (W a fixed random weighting, 0 where the output
is not compared) must match the package's function. Named mistakes: ``no_gradient`` (numpy,
``.item()``, ``.detach()``, ``torch.no_grad()``), an exercise's own ``grad_mistake`` (e.g.
``rho_detached`` for the clipped loss), otherwise ``gradient_wrong`` with the input shown.
"""
from __future__ import annotations

import copy

import numpy as np

from grpo_lab.exercises import _safety
from grpo_lab.exercises._feedback import FAILED
from grpo_lab.i18n import Text, tr

GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-8

NO_GRADIENT = Text(
    "your loss has no gradient: {why} An optimiser calls loss.backward(); with no path back to `{arg}` the model "
    "would never learn, even though every value is right. Compute with torch operations on the inputs and return the "
    "tensor (no numpy, no .item(), no .detach(), no torch.no_grad()).",
    "你的损失没有梯度：{why}优化器会调用 loss.backward()；没有通往 `{arg}` 的路径，模型就永远学不到东西——尽管每个数值"
    "都对。请对输入用 torch 运算来计算并返回张量（不要用 numpy、.item()、.detach() 或 torch.no_grad()）。")


def _why_not_tensor(out) -> tuple[str, str]:
    name = type(out).__name__
    return (f"{name} is not a torch.Tensor (numpy or .item() cut it off from autograd).",
            f"返回的 {name} 不是 torch.Tensor（numpy 或 .item() 把它和 autograd 断开了）。")


def check_gradients(e, answer, cases, deadline):
    """None when ``answer``'s gradients match on every case, else the Feedback naming what is wrong."""
    import torch

    arg = e.params[e.grad_wrt[0]]
    for i, case in enumerate(cases):
        try:
            out, args = e._call(answer, case, deadline, e.grad_wrt)
        except _safety.CheckTimeout:
            return e._timeout(i, case)
        except Exception as err:
            if "numpy()" in str(err) and "requires grad" in str(err):     # .numpy() on the input: cut off from autograd
                return e._fb(FAILED, tr(NO_GRADIENT.en.format(why="you called .numpy() on the input. ", arg=arg),
                                        NO_GRADIENT.zh.format(why="你对输入调用了 .numpy()。", arg=arg)), ("no_gradient",))
            return e._raised(err, i, case)
        why = None
        if not isinstance(out, torch.Tensor):
            why = _why_not_tensor(out)
        elif not out.requires_grad:
            why = ("the tensor you return does not depend on the inputs through autograd.",
                   "你返回的张量没有通过 autograd 依赖于输入。")
        if why is not None:
            return e._fb(FAILED, tr(NO_GRADIENT.en.format(why=why[0] + " ", arg=arg),
                                    NO_GRADIENT.zh.format(why=why[1], arg=arg)), ("no_gradient",))
        inputs = [args[j] for j in e.grad_wrt]
        got = _safety.gradients(out, inputs, case.where)
        ref_args = list(copy.deepcopy(case.args))
        for j in e.grad_wrt:
            ref_args[j] = ref_args[j].detach().clone().requires_grad_(True)
        exp = _safety.gradients(e.expected(*ref_args), [ref_args[j] for j in e.grad_wrt], case.where)
        kink = np.asarray(e.grad_kinks(case.args), dtype=bool) if e.grad_kinks is not None else False
        if all(np.all(np.isclose(g, x, rtol=GRAD_RTOL, atol=GRAD_ATOL) | kink) for g, x in zip(got, exp)):
            continue
        if e.grad_mistake is not None:
            named = e.grad_mistake(case.args, got, exp, case)
            if named is not None:
                key, message = named
                return e._fb(FAILED, str(message) + e._reproduce(i), (key,))
        return e._fb(FAILED, tr(f"Your values are right, but the gradient ∂loss/∂{arg} is not, on input {case.label}:\n"
                                f"  expected (Σ of a fixed weighting): {np.array2string(exp[0], precision=4, threshold=40)}\n"
                                f"  received: {np.array2string(got[0], precision=4, threshold=40)}\n"
                                "Some part of the computation is cut off from autograd or differentiates differently.",
                                f"你的数值是对的，但梯度 ∂loss/∂{arg} 不对，输入「{case.label}」：\n"
                                f"  期望：{np.array2string(exp[0], precision=4, threshold=40)}\n"
                                f"  得到：{np.array2string(got[0], precision=4, threshold=40)}\n"
                                "计算中有一部分和 autograd 断开了，或者求导方式不同。") + e._reproduce(i),
                     ("gradient_wrong",))
    return None

