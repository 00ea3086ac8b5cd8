"""The three kinds of exercise and how each one is checked.

* :class:`Predict` — pick one of a few options *before* the notebook reveals the answer.
* :class:`Compute` — a number (or a short list of numbers) worked out by hand.
* :class:`Implement` — a function. The checker calls it on fixed inputs (the edge cases the
  seeds discuss) and on seeded random ones, compares with the package's own functions, and,
  where the answer is wrong, compares it with a list of typical mistakes (each also built
  from the package's functions) to *name* what went wrong.

Every expected value comes from a ``grpo_lab`` function (``value``/``correct``/``expected``
callables), never from a number typed into this file.
"""
from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import numpy as np

from grpo_lab.exercises import _grad, _safety
from grpo_lab.exercises._generic import MESSAGES as GENERIC, generic_mistake
from grpo_lab.exercises._feedback import ERROR, FAILED, NOT_ATTEMPTED, PASSED, Feedback, Reveal
from grpo_lab.i18n import Text, tr

RTOL, ATOL = 1e-5, 1e-8      # implement: tight enough to see ε = 1e-4 left out
LOOSE_RTOL, LOOSE_ATOL = 1e-3, 1e-5   # "right up to float32 rounding"
from grpo_lab.exercises._text import INTEGER, NUMBER, PRECISION, _fmt, _norm, random_label  # noqa: F401  (re-exported)

_as_float_array = _safety.to_float_array


@dataclass(frozen=True)
class Exercise:
    """Fields every exercise has; subclasses add how to check and what the cells hold."""

    id: str
    notebook: str                 # "00" … "07"
    title: Text
    prompt: Text                  # markdown shown above the answer cell
    hints: tuple[Text, ...]
    name: str                     # the variable (or function) the answer cell defines
    kind: ClassVar[str] = ""

    def check(self, answer) -> Feedback:
        """Never raises on a student's answer: anything the checker cannot read is a message."""
        try:
            return self._check(answer)
        except _safety.CheckTimeout:        # a time limit that fired outside a student's call
            return self._fb(ERROR, tr("the check ran out of time.", "检查超时。"), ("timeout",))
        except SystemExit as err:           # sys.exit()/exit() in a student's function
            return self._fb(ERROR, tr(f"your code called sys.exit() (SystemExit: {err.code!r}), which stops a program "
                                      "instead of giving an answer: return the result instead.",
                                      f"你的代码调用了 sys.exit()（SystemExit：{err.code!r}），它会终止程序而不是给出答案："
                                      "请用 return 返回结果。"), ("sys_exit",))
        except Exception as err:
            return self._fb(ERROR, tr(f"the checker could not read your answer ({type(err).__name__}: {err}). "
                                      f"Expected: {self._expects()}.",
                                      f"检查器读不懂你的答案（{type(err).__name__}：{err}）。需要：{self._expects()}。"))

    def _expects(self) -> str:
        return str(getattr(self, "form", "")) or getattr(self, "signature", "") or ", ".join(map(repr, getattr(self, "keys", tuple)()))

    def _check(self, answer) -> Feedback:  # pragma: no cover - abstract
        raise NotImplementedError

    def solution(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fb(self, status, message, mistakes=()) -> Feedback:
        return Feedback(self.id, status, message, tuple(mistakes))

    def _not_attempted(self) -> Feedback:
        return self._fb(NOT_ATTEMPTED, tr(f"put your answer into `{self.name}` above and run this cell again.",
                                          f"在上面的 `{self.name}` 里写下你的答案，再运行本单元。"))

    # --- notebook cells (the writer in grpo_lab.exercises.notebooks uses these) ---
    def stub_code(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def solution_code(self) -> str:
        return f"{self.name} = {self.solution()!r}"

    def nbgrader_code(self) -> str:
        return f"### BEGIN SOLUTION\n{self.solution_code()}\n### END SOLUTION"

    def check_code(self) -> str:
        return f'ex.check("{self.id}", {self.name})'

    def reveal_code(self) -> str | None:
        return None


# ---------------------------------------------------------------------------------
# Predict
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Option:
    key: str
    text: Text
    why: Text | None = None       # said when this (wrong) option is chosen: the misconception


@dataclass(frozen=True)
class Predict(Exercise):
    options: tuple[Option, ...] = ()
    correct: Callable[[], str] = None        # -> the right option key, computed by the package
    explain: Callable[[], str] = None        # -> the reveal text, computed by the package
    widget: str | None = None                # optional code (self-contained) that shows a panel
    kind: ClassVar[str] = "predict"

    def keys(self) -> tuple[str, ...]:
        return tuple(o.key for o in self.options)

    def solution(self) -> str:
        key = self.correct()
        assert key in self.keys(), (self.id, key)
        return key

    def accepted(self) -> dict[str, str]:
        """Every accepted spelling -> option key: the key, and the option's text in English and in Chinese."""
        out = {}
        for o in self.options:
            for t in (o.text.en, o.text.zh):
                out.setdefault(_norm(t), o.key)
        out.update({_norm(k): k for k in self.keys()})        # a key always means itself
        return out

    def _check(self, answer) -> Feedback:
        if answer is None:
            if "none" in self.accepted():
                return self._fb(NOT_ATTEMPTED, tr(f"`{self.name}` is still None (Python's empty value). If you mean the "
                                                  "option \"none\", write it as a string: \"none\".",
                                                  f"`{self.name}` 还是 None（Python 的空值）。如果你想选「none」这个选项，"
                                                  "请写成字符串：\"none\"。"))
            return self._not_attempted()
        keys = tr(", ", "、").join(map(repr, self.keys()))
        given = self.accepted().get(_norm(answer)) if isinstance(answer, str) else None
        if given is None:
            shown = repr(answer) if isinstance(answer, (str, int, float)) else tr("a ", "一个 ") + type(answer).__name__
            return self._fb(FAILED, tr(f"answer with one of {keys} (a string); got {shown[:60]}.",
                                       f"请用以下之一作答：{keys}（字符串）；你写的是 {shown[:60]}。"))
        if given == self.solution():
            return self._fb(PASSED, tr("Right. ", "对。") + self.explain())
        why = next(o.why for o in self.options if o.key == given)
        msg = str(why) if why is not None else tr("Not this one.", "不是这个。")
        return self._fb(FAILED, msg + tr(f" Think again, or ask for a hint: ex.hint(\"{self.id}\").",
                                         f"再想想，或者要一个提示：ex.hint(\"{self.id}\")。"), (f"option:{given}",))

    def reveal(self) -> Reveal:
        return Reveal(self.id, self.explain())

    def stub_code(self) -> str:
        return f"{self.name} = None  # your prediction · 你的预测 ∈ {{{', '.join(map(repr, self.keys()))}}}"

    def reveal_code(self) -> str:
        """The reveal cell: shown once ``self.name`` holds an answer (or on a click); computed always (CI checks it)."""
        if not self.widget:
            return f'_ = ex.reveal_after("{self.id}", {self.name})'
        *setup, last = self.widget.strip().splitlines()       # imports, then the expression that builds the panel
        return "\n".join(setup + [f'_ = ex.reveal_after("{self.id}", {self.name}, panel=lambda: {last})'])


# ---------------------------------------------------------------------------------
# Compute (by hand)
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Known:
    """A typical wrong answer: its name, what to say, and its value (computed by the package)."""

    key: str
    message: Text
    value: Callable[[], Any]


@dataclass(frozen=True)
class Compute(Exercise):
    value: Callable[[], Any] = None          # -> the right number(s), computed by the package
    form: Text | str = NUMBER               # what the answer looks like, shown in the stub (Text: prose; str: symbols)
    atol: float = 0.01                      # by hand: two decimals are enough
    known: tuple[Known, ...] = ()
    explain: Callable[[], str] | None = None
    exact: Callable[[], Any] | None = None   # -> the value ex.solution shows (ε-free, as the prompt says), default value
    kind: ClassVar[str] = "compute"

    def solution(self):
        v = np.asarray((self.exact or self.value)(), dtype=float)
        out = np.round(v, 4) + 0.0                                   # + 0.0: no "-0.0"
        return float(out) if out.ndim == 0 else out.tolist()

    def _check(self, answer) -> Feedback:
        if answer is None:
            return self._not_attempted()
        expected = np.asarray(self.value(), dtype=float)
        try:
            got = _as_float_array(answer)
        except (TypeError, ValueError):
            return self._fb(FAILED, tr(f"expected {self.form}; got {answer!r}.", f"需要的形式：{self.form}；你写的是 {answer!r}。"))
        if got.size != expected.size:
            return self._fb(FAILED, tr(f"expected {expected.size} number(s) ({self.form}); got {got.size}.",
                                       f"需要 {expected.size} 个数（形式：{self.form}）；你给了 {got.size} 个。"))
        got = got.reshape(expected.shape)
        if not np.all(np.isfinite(got)):
            return self._fb(FAILED, tr("your answer contains NaN or inf.", "你的答案里有 NaN 或 inf。"))
        if np.allclose(got, expected, rtol=0, atol=self.atol):
            extra = (tr(" ", "") + self.explain()) if self.explain else ""
            return self._fb(PASSED, tr("Right.", "对。") + extra)
        for k in self.known:
            if np.allclose(got, np.asarray(k.value(), dtype=float).reshape(expected.shape), rtol=0, atol=self.atol):
                return self._fb(FAILED, str(k.message), (k.key,))
        generic = generic_mistake(got, expected, self.atol)
        if generic is not None:
            return self._fb(FAILED, str(GENERIC[generic]), (generic,))
        if self.atol < 0.005 and np.allclose(got, expected, rtol=0, atol=0.005 + 1e-9):
            return self._fb(FAILED, tr(f"right to 2 decimals, give 3: this exercise asks for three decimals "
                                       f"(the check needs ±{self.atol:g}).",
                                       f"两位小数是对的，请给三位：本题要求三位小数（检查精度 ±{self.atol:g}）。"),
                            ("two_decimals",))
        off = np.flatnonzero(~np.isclose(got, expected, rtol=0, atol=self.atol).reshape(-1))
        where = tr("your answer is" if expected.size == 1 else
                   ("entries " if off.size > 1 else "entry ") + ", ".join(str(i + 1) for i in off),
                   "你的答案" if expected.size == 1 else f"第 {'、'.join(str(i + 1) for i in off)} 个数")
        return self._fb(FAILED, tr(f"does not match yet: {where} off by more than {self.atol:g}. "
                                   f"Check again, or ask for a hint: ex.hint(\"{self.id}\").",
                                   f"{where}的误差超过 {self.atol:g}。再检查一下，"
                                   f"或者要一个提示：ex.hint(\"{self.id}\")。"))

    def stub_code(self) -> str:
        form = self.form
        said = f"your answer: {form.en} · 你的答案：{form.zh}" if isinstance(form, Text) else f"your answer · 你的答案：{form}"
        return f"{self.name} = None  # {said}"


# ---------------------------------------------------------------------------------
# Implement
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One input: positional arguments, a label for messages, and where the output counts."""

    args: tuple
    label: Text | str                   # Text when it holds words (shown in the current language), str for symbols only
    where: np.ndarray | None = None     # bool mask of output entries that are compared (None: all)


@dataclass(frozen=True)
class Mistake:
    """A typical wrong implementation: ``output(*args)`` is what it returns (built from the package)."""

    key: str
    message: Text
    output: Callable[..., Any]


@dataclass(frozen=True)
class Implement(Exercise):
    signature: str = ""                          # "(theta: float, …) -> float", as in the issue
    reference: Callable = None                   # the model answer (grpo_lab.exercises.solutions)
    expected: Callable[..., Any] = None          # the same result from the package's own functions
    cases: Callable[[], list[Case]] = None       # fixed edge cases first, then seeded random ones
    mistakes: tuple[Mistake, ...] = ()
    grad_wrt: tuple[int, ...] = ()               # loss exercises: the arguments whose gradient is compared too
    grad_mistake: Callable | None = None         # (args, got_grads, exp_grads, case) -> (key, Text) | None
    grad_kinks: Callable | None = None           # (args) -> bool mask of input entries at a kink (any subgradient is right)
    kind: ClassVar[str] = "implement"

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(inspect.signature(self.reference).parameters)

    def solution(self) -> str:
        return textwrap.dedent(inspect.getsource(self.reference))

    # the reference split into header (def + docstring) and body, for stubs and nbgrader
    def _split(self) -> tuple[str, str]:
        src = self.solution()
        fn = ast.parse(src).body[0]
        has_doc = isinstance(fn.body[0], ast.Expr) and isinstance(getattr(fn.body[0], "value", None), ast.Constant)
        first = fn.body[1] if has_doc else fn.body[0]
        lines = src.splitlines()
        start = first.lineno - 1
        while start > 0 and lines[start - 1].strip().startswith("#"):
            start -= 1
        zh = getattr(self.reference, "zh_doc", None)
        if has_doc and zh:               # the stub's docstring in both languages (solutions.py: fn.zh_doc)
            doc = fn.body[0]
            both = ast.get_docstring(fn) + "\n\n" + inspect.cleandoc(zh)
            text = textwrap.indent('"""' + both + '\n"""', "    ").splitlines()
            lines[:start] = lines[:doc.lineno - 1] + [ln.rstrip() for ln in text] + lines[doc.end_lineno:start]
            start = len(lines) - len(src.splitlines()[start:])
        return "\n".join(lines[:start]), "\n".join(lines[start:])

    def stub_code(self) -> str:
        head, _ = self._split()
        return head + "\n    raise NotImplementedError  # your code here · 在这里写你的代码"

    def solution_code(self) -> str:
        """The reference with the stub's (bilingual) docstring: what the solution notebooks hold."""
        head, body = self._split()
        return f"{head}\n{body}".rstrip()

    def nbgrader_code(self) -> str:
        head, body = self._split()
        return f"{head}\n    ### BEGIN SOLUTION\n{body}\n    ### END SOLUTION"

    # --- checking ---
    def _call(self, fn, case: Case, deadline: float, grad_wrt=()):
        """``fn`` on fresh copies of the case's arguments (those in ``grad_wrt`` requiring grad), within the time left."""
        args = list(copy.deepcopy(case.args))
        for j in grad_wrt:
            args[j] = args[j].detach().clone().requires_grad_(True)
        with _safety.time_limit(max(deadline - time.monotonic(), 0.01)):
            out = fn(*args)
        return out, args

    def _check(self, answer) -> Feedback:
        if answer is None:
            return self._not_attempted()
        if not callable(answer):
            return self._fb(FAILED, tr(f"expected a function {self.name}{self.signature}; got {type(answer).__name__}.",
                                       f"需要一个函数 `{self.name}{self.signature}`；你给的是 {type(answer).__name__}。"))
        try:
            inspect.signature(answer).bind(*self.params)
        except TypeError:
            return self._fb(FAILED, tr(f"your function cannot be called with the {len(self.params)} arguments "
                                       f"({', '.join(self.params)}); expected {self.name}{self.signature}.",
                                       f"你的函数无法用这 {len(self.params)} 个参数（`{', '.join(self.params)}`）调用；"
                                       f"需要 `{self.name}{self.signature}`。"))
        except ValueError:
            pass  # builtins without a signature: just call them
        cases = self.cases()
        deadline = time.monotonic() + _safety.TIMEOUT_S
        received, expected = [], []
        for i, case in enumerate(cases):
            try:
                out, args = self._call(answer, case, deadline)
            except NotImplementedError:
                return self._fb(NOT_ATTEMPTED, tr(f"{self.name} still raises NotImplementedError; "
                                                  "replace that line with your code.",
                                                  f"{self.name} 仍然抛出 NotImplementedError；把那一行换成你的代码。"))
            except _safety.CheckTimeout:
                return self._timeout(i, case)
            except Exception as err:  # the student's code: report, never a traceback
                return self._raised(err, i, case)
            if out is None:
                return self._fb(FAILED, tr(f"your function returned None on input {case.label}: did you forget `return`?",
                                           f"你的函数在输入「{case.label}」上返回了 None：是不是忘了写 `return`？"),
                                ("returned_none",))
            moved = [(p, type(a).__name__) for p, a, b in zip(self.params, case.args, args) if _safety.changed(a, b)]
            if moved:
                (arg, kind), = moved[:1]
                return self._fb(FAILED, tr(
                    f"{self.name} changed its input `{arg}` in place (the caller's {kind} "
                    f"is different after the call, on input {case.label}) — e.g. `{arg} -= …` or `{arg}[mask == 0] = 0`. "
                    "A loss function must not change what it is given (the trainer reuses it): work on a copy "
                    "(`.clone()`, `.copy()`) or write `x = x - …`.",
                    f"{self.name} 原地修改了输入 `{arg}`（调用之后调用者手里的 {kind} 变了，输入「{case.label}」）——例如 "
                    f"`{arg} -= …` 或 `{arg}[mask == 0] = 0`。函数不能改动传给它的数据（训练器还要用）："
                    "先复制（`.clone()`、`.copy()`），或者写成 `x = x - …`。"), ("in_place",))
            exp = _as_float_array(self.expected(*copy.deepcopy(case.args)))
            try:
                got = _as_float_array(out)
            except (TypeError, ValueError):
                return self._fb(FAILED, tr(f"{self.name} returned {type(out).__name__} on input {case.label}; expected "
                                           f"numbers of shape {exp.shape}.",
                                           f"{self.name} 在输入「{case.label}」上返回了 {type(out).__name__}；需要形状为 {exp.shape} 的数值。"))
            if exp.ndim == 0 and got.size == 1:
                got = got.reshape(())
            if got.shape != exp.shape:
                return self._fb(FAILED, tr(f"{self.name} returned shape {got.shape} on input {case.label}; expected shape {exp.shape}.",
                                           f"{self.name} 在输入「{case.label}」上返回的形状是 {got.shape}；需要 {exp.shape}。"))
            received.append(got)
            expected.append(exp)
        bad = [self._bad(g, e, c) for g, e, c in zip(received, expected, cases)]
        n_bad = sum(int(b.sum()) for b in bad)
        if n_bad:
            return self._diagnose(cases, received, expected, bad)
        if self.grad_wrt:
            fb = _grad.check_gradients(self, answer, cases, time.monotonic() + _safety.TIMEOUT_S)
            if fb is not None:
                return fb
        first = tr(", ".join(str(c.label) for c in cases[:4]), "、".join(f"「{c.label}」" for c in cases[:4]))
        return self._fb(PASSED, tr(f"Correct on all {len(cases)} inputs ({first}, … "
                                   "and seeded random ones)" + (", values and gradients." if self.grad_wrt else "."),
                                   f"全部 {len(cases)} 个输入都正确（{first}……以及若干由随机种子生成的输入）"
                                   + ("，数值和梯度都对。" if self.grad_wrt else "。")))

    def _timeout(self, i: int, case: Case) -> Feedback:
        return self._fb(ERROR, tr(f"{self.name} did not finish within {_safety.TIMEOUT_S:g} s on input {case.label} "
                                  f"(the checker stops a function after {_safety.TIMEOUT_S:g} s): an infinite loop, or a "
                                  "`while` whose condition never changes?",
                                  f"{self.name} 在输入「{case.label}」上 {_safety.TIMEOUT_S:g} 秒内没有结束（检查器在 "
                                  f"{_safety.TIMEOUT_S:g} 秒后停止函数）：是不是死循环，或者 `while` 的条件永远不变？")
                        + self._reproduce(i), ("timeout",))

    def _raised(self, err: Exception, i: int, case: Case) -> Feedback:
        return self._fb(ERROR, tr(f"{self.name} raised {type(err).__name__}: {err}\n  on input {case.label}: {self._inputs(case)}",
                                  f"{self.name} 抛出 {type(err).__name__}：{err}\n  输入「{case.label}」：{self._inputs(case)}")
                        + self._reproduce(i))

    @staticmethod
    def _bad(got, exp, case: Case) -> np.ndarray:
        b = ~np.isclose(got, exp, rtol=RTOL, atol=ATOL, equal_nan=True)
        if case.where is not None:
            b = b & np.asarray(case.where, dtype=bool)
        return np.atleast_1d(b)

    def _diagnose(self, cases, received, expected, bad) -> Feedback:
        # Entry-wise, so that two mistakes in one function are both found. For every known
        # mistake: the failing entries it explains (the student's value equals the mistake's),
        # and the entries where it predicts an error but the student is right (contradictions).
        hits, contra = {}, {}
        for m in self.mistakes:
            h, c = [], []
            for case, got, exp, b in zip(cases, received, expected, bad):
                try:
                    mo = _as_float_array(m.output(*copy.deepcopy(case.args))).reshape(got.shape)
                except Exception:  # a mistake that cannot even run on this input explains nothing here
                    h.append(np.zeros_like(b))
                    c.append(np.zeros_like(b))
                    continue
                where = np.ones_like(b) if case.where is None else np.atleast_1d(np.asarray(case.where, dtype=bool))
                same = np.atleast_1d(np.isclose(got, mo, rtol=RTOL, atol=ATOL, equal_nan=True))
                m_wrong = np.atleast_1d(~np.isclose(mo, exp, rtol=RTOL, atol=ATOL, equal_nan=True)) & where
                h.append(same & b)
                c.append(m_wrong & ~b)
            hits[m.key], contra[m.key] = h, c
        left = [b.copy() for b in bad]
        named = []
        while True:   # greedy: the mistake that explains most of what is left, minus its contradictions
            best, best_score = None, 0
            for m in self.mistakes:
                if m in named:
                    continue
                n = sum(int((h & l).sum()) for h, l in zip(hits[m.key], left))
                score = n - sum(int(c.sum()) for c in contra[m.key])
                if n > 0 and score > best_score:
                    best, best_score = m, score
            if best is None:
                break
            named.append(best)
            left = [l & ~h for l, h in zip(left, hits[best.key])]
        parts = [str(m.message) for m in named]
        keys = [m.key for m in named]
        near = [np.atleast_1d(np.isclose(g, e, rtol=LOOSE_RTOL, atol=LOOSE_ATOL)) for g, e in zip(received, expected)]
        if any(l.any() for l in left) and all(bool(np.all(n[l])) for n, l in zip(near, left)):
            parts.append(str(PRECISION))       # right to ~4 digits everywhere: the dtype, not the formula
            keys.append("float32_precision")
            left = [np.zeros_like(l) for l in left]
        unexplained = next((i for i, l in enumerate(left) if l.any()), None)
        if unexplained is not None:
            case = cases[unexplained]
            head = tr("Your function does not match the reference" if not named else "Something else does not match either",
                      "你的函数与参考答案不一致" if not named else "另外还有不一致的地方")
            parts.append(tr(f"{head} on input {case.label}:\n  input: {self._inputs(case)}\n"
                            f"  expected: {_fmt(expected[unexplained])}\n  received: {_fmt(received[unexplained])}",
                            f"{head}，输入「{case.label}」：\n  输入：{self._inputs(case)}\n"
                            f"  期望：{_fmt(expected[unexplained])}\n  得到：{_fmt(received[unexplained])}") + self._reproduce(unexplained))
        parts.append(tr(f"Stuck? ex.hint(\"{self.id}\")", f"卡住了？ex.hint(\"{self.id}\")"))
        return self._fb(FAILED, "\n".join(parts), tuple(keys))

    def _inputs(self, case: Case) -> str:
        """The arguments, small arrays in full and larger ones by shape (ex.case(id, k) returns them)."""
        def one(a):
            arr = a.detach().cpu().numpy() if type(a).__module__.split(".")[0] == "torch" else a
            if isinstance(arr, np.ndarray) and arr.size > 16:
                return tr(f"<{type(a).__name__} of shape {tuple(arr.shape)}>", f"<{type(a).__name__}，形状 {tuple(arr.shape)}>")
            return _fmt(a)
        return ", ".join(f"{p}={one(a)}" for p, a in zip(self.params, case.args))

    def _reproduce(self, k: int) -> str:
        return tr(f"\n  try it yourself: args = ex.case(\"{self.id}\", {k}); {self.name}(*args)",
                  f"\n  自己试试：args = ex.case(\"{self.id}\", {k}); {self.name}(*args)")
