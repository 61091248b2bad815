"""Optimizers: ``minimize(loss)`` appends backward and the parameter updates, as in Paddle fluid.

``minimize`` appends the gradient ops (``append_backward``), then, in the "optimize" role (so
that ``clone(for_test=True)`` drops them): gradient clipping (``grad_clip``), then L2 weight
decay (the optimizer's ``regularization``, or a parameter's own
``ParamAttr(regularizer=...)``), added to the clipped gradient as Paddle fluid and PyTorch add
it, and one update op per parameter, from a plugin (paddle-ops-nn's sgd,
momentum, adam, adamw). The update writes the parameter in place; its state (velocity,
moments, beta powers) and the learning rate are persistable variables initialised by the
startup program::

    optimizer = pc.optimizer.Adam(learning_rate=1e-3, grad_clip=pc.optimizer.GradientClipByGlobalNorm(1.0))
    optimizer.minimize(loss)  # inside program_guard(main, startup)
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable
from numbers import Real

from . import ops
from ._src.base.errors import ProgramError, did_you_mean, shown
from ._src.graph.backward import append_backward
from ._src.graph.block import append_initializer
from ._src.graph.operator import Operator
from ._src.graph.program import Program, default_startup_program
from ._src.graph.variable import Initializer, Parameter, Variable
from ._src.model.expression import Expression, as_variable
from ._src.plugins.registry import get_registry

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "GradientClipByGlobalNorm",
    "L2Decay",
    "Momentum",
    "Optimizer",
]


def _hyperparameter(what: str, value: object, *, zero_allowed: bool = False) -> float:
    """``value`` as a float: a finite real number (not a bool, not a string) above 0, or at
    least 0 where ``zero_allowed``."""
    bound = ">= 0" if zero_allowed else "> 0"
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not (value >= 0 if zero_allowed else value > 0):  # type: ignore[operator]
        raise ProgramError(f"{what} must be a finite number {bound}, got {value!r}")
    return float(value)  # type: ignore[arg-type]


_REQUIRED: object = object()  # an argument that must be given (so that a misspelt one is named)


class L2Decay:
    """L2 weight decay: the gradient gains ``coeff * param``."""

    def __init__(self, coeff: float) -> None:
        self.coeff = _hyperparameter("L2Decay: coeff", coeff, zero_allowed=True)


class GradientClipByGlobalNorm:
    """Scale every gradient by clip_norm / max(global_norm, clip_norm), where global_norm is
    the 2-norm of all gradients together: they keep their directions and their joint norm is
    at most clip_norm."""

    def __init__(self, clip_norm: float) -> None:
        self.clip_norm = _hyperparameter("GradientClipByGlobalNorm: clip_norm", clip_norm)

    def __call__(self, grads: list[Variable]) -> list[Variable]:
        squares = [ops.sum(ops.square(g)) for g in grads]
        total = squares[0] if len(squares) == 1 else ops.add_n(squares)
        global_norm = ops.sqrt(total)
        clip = ops.fill_constant(shape=[], value=self.clip_norm, dtype=global_norm.dtype)
        scale = ops.div(clip, ops.maximum(global_norm, clip))
        return [
            ops.mul(g, scale if g.dtype == scale.dtype else ops.cast(scale, dtype=g.dtype))
            for g in grads
        ]


class Optimizer:
    """What every optimizer shares; subclasses name their op and its state."""

    op = ""
    # (slot of the op, initial value: a number, or an attr naming it) per state variable;
    # "*_pow" state holds one element, the others the parameter's shape.
    state: tuple[tuple[str, object], ...] = ()

    def __init__(
        self,
        learning_rate: float | Variable = _REQUIRED,  # type: ignore[assignment]
        regularization: L2Decay | None = None,
        grad_clip: GradientClipByGlobalNorm | None = None,
        **unknown: object,
    ) -> None:
        name = type(self).__name__
        if unknown:  # (Python's TypeError would name Optimizer.__init__, and suggest nothing)
            key = next(iter(unknown))
            params = inspect.signature(type(self)).parameters.values()
            known = [p.name for p in params if p.kind != p.VAR_KEYWORD]
            known += ["regularization", "grad_clip"]
            raise ProgramError(
                f"{name} has no argument {key!r}{did_you_mean(key, known)}; its arguments "
                f"are: {', '.join(dict.fromkeys(known))}"
            )
        if learning_rate is _REQUIRED:  # (after the unknown arguments: a misspelt one first)
            raise ProgramError(f"{name}: learning_rate is required (a number or a Variable)")
        for what, value, kind in (
            ("regularization", regularization, L2Decay),
            ("grad_clip", grad_clip, GradientClipByGlobalNorm),
        ):
            if value is not None and not isinstance(value, kind):
                raise ProgramError(
                    f"{name}: {what} must be a pc.optimizer.{kind.__name__} or None, got "
                    f"{shown(value)}"
                )
        learning_rate = as_variable(learning_rate)  # a schedule built on a Model
        if not isinstance(learning_rate, Variable):
            learning_rate = _hyperparameter(
                f"{name}: learning_rate (a number or a Variable)", learning_rate
            )
        self.learning_rate = learning_rate
        self.regularization = regularization
        self.grad_clip = grad_clip
        self._set_attrs()

    def _set_attrs(self, **attrs: object) -> None:
        """The update op's attrs, checked against its declaration now: a bad value (Adam's
        beta1=2.0) is refused where it is given, not at minimize."""
        self.attrs: dict[str, object] = {}
        if self.op:  # (the base class names no op)
            self.attrs = get_registry().op(self.op).signature().validate(attrs)

    def minimize(
        self,
        loss: Variable,
        startup_program: Program | None = None,
        parameter_list: Iterable[Parameter | str] | None = None,
        no_grad_set: Iterable[Variable | str] | None = None,
    ) -> tuple[list[Operator], list[tuple[Parameter, Variable]]]:
        """Append backward and the updates of the parameters ``loss`` depends on; return the
        update ops and the (parameter, gradient) pairs."""
        params_grads = self.backward(loss, parameter_list, no_grad_set)
        return self.apply_gradients(params_grads, startup_program), params_grads

    def backward(
        self,
        loss: Variable,
        parameter_list: Iterable[Parameter | str] | None = None,
        no_grad_set: Iterable[Variable | str] | None = None,
        loss_scale: float = 1.0,
    ) -> list[tuple[Parameter, Variable]]:
        """Append the gradient ops of ``loss`` times ``loss_scale``; return the (parameter,
        gradient) pairs (the first half of ``minimize``)."""
        if isinstance(loss, Expression):
            raise ProgramError(
                f"minimize(): the loss {loss.name()!r} is an Expression of a Model; train it "
                "with model.minimize(loss, optimizer), which returns the training step"
            )
        seed = None
        if loss_scale != 1.0:
            with loss.block.program.role_guard("backward"):
                seed = ops.fill_like(loss, value=float(loss_scale))
        params_grads = append_backward(loss, parameter_list, no_grad_set, loss_grad=seed)
        if not params_grads:
            raise ProgramError(
                f"minimize(): the loss {loss.name!r} depends on no trainable parameter"
                + ("" if parameter_list is None else " of parameter_list")
                + "; nothing to optimize"
            )
        return params_grads

    def apply_gradients(
        self,
        params_grads: list[tuple[Parameter, Variable]],
        startup_program: Program | None = None,
    ) -> list[Operator]:
        """Append gradient clipping, weight decay and the parameter updates (the second half
        of ``minimize``); return the update ops."""
        program = params_grads[0][0].block.program
        startup = (startup_program or default_startup_program()).global_block()
        block = program.global_block()
        with program.role_guard("optimize"):
            grads = [g for _, g in params_grads]
            if self.grad_clip is not None:  # (clipped first: the decay is not, as in fluid)
                grads = self.grad_clip(grads)
            grads = [self._regularized(p, g) for (p, _), g in zip(params_grads, grads)]
            return [
                self._append_update(block, startup, p, g) for (p, _), g in zip(params_grads, grads)
            ]

    def _regularized(self, param: Parameter, grad: Variable) -> Variable:
        coeff = param.optimize_attrs.get("l2_decay")
        if coeff is None and self.regularization is not None:
            coeff = self.regularization.coeff
        if not coeff:
            return grad
        return ops.add(grad, ops.scale(param, scale=float(coeff)))

    def _learning_rate(self, block, startup, dtype: str) -> Variable:
        if isinstance(self.learning_rate, Variable):
            lr = self.learning_rate
            return lr if lr.dtype == dtype else ops.cast(lr, dtype=dtype)
        name = f"learning_rate@{dtype}"
        lr = block.vars.get(name)
        if lr is None:
            lr = block.create_var(name, [1], dtype, persistable=True)
            append_initializer(
                lr, Initializer("fill_constant", value=float(self.learning_rate)), startup
            )
        return lr

    def _append_update(self, block, startup, param: Parameter, grad: Variable) -> Operator:
        inputs: dict[str, Variable] = {"param": param, "grad": grad}
        for slot, value in self.state:
            shape = [1] if slot.endswith("_pow") else list(param.shape)
            var = block.create_var(f"{param.name}@{slot}", shape, param.dtype, persistable=True)
            start = self.attrs[value] if isinstance(value, str) else value
            append_initializer(var, Initializer("fill_constant", value=float(start)), startup)
            inputs[slot] = var
        inputs["learning_rate"] = self._learning_rate(block, startup, param.dtype)
        outputs = {
            f"{slot}_out": var
            for slot, var in inputs.items()
            if slot not in ("grad", "learning_rate")
        }
        return block.append_op(self.op, inputs, outputs, dict(self.attrs))


class SGD(Optimizer):
    """param -= learning_rate * grad."""

    op = "sgd"


class Momentum(Optimizer):
    """velocity = momentum * velocity + grad; param -= learning_rate * velocity (or, with
    use_nesterov, learning_rate * (grad + momentum * velocity))."""

    op = "momentum"
    state = (("velocity", 0.0),)

    def __init__(
        self,
        learning_rate: float | Variable = _REQUIRED,  # type: ignore[assignment]
        momentum: float = 0.9,
        use_nesterov: bool = False,
        **kwargs: object,
    ) -> None:
        super().__init__(learning_rate, **kwargs)  # type: ignore[arg-type]
        self._set_attrs(mu=momentum, use_nesterov=use_nesterov)


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction, as PyTorch and Paddle compute it."""

    op = "adam"
    state = (("moment1", 0.0), ("moment2", 0.0), ("beta1_pow", "beta1"), ("beta2_pow", "beta2"))

    def __init__(
        self,
        learning_rate: float | Variable = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        **kwargs: object,
    ) -> None:
        super().__init__(learning_rate, **kwargs)  # type: ignore[arg-type]
        self._set_attrs(beta1=beta1, beta2=beta2, epsilon=epsilon)


class AdamW(Adam):
    """Adam with decoupled weight decay: param *= 1 - learning_rate * weight_decay first."""

    op = "adamw"

    def __init__(
        self,
        learning_rate: float | Variable = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        weight_decay: float = 0.01,
        **kwargs: object,
    ) -> None:
        super().__init__(learning_rate, beta1, beta2, epsilon, **kwargs)
        self._set_attrs(**{**self.attrs, "coeff": weight_decay})
