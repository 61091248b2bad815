"""Model methods: how layers and the generated ops reach a model.

Model methods take ``model=None`` and Expressions, and return Expressions. They are the
Program API's functions, unchanged, with a way in: given ``model=``, or called on an
expression, a layer runs inside the model's ``guard()`` on the expressions' Variables, and
what it returns comes back as the model's Expressions. Called with neither, it is the Program
API itself (the default model's programs are the default programs), returning Variables.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from ..base.errors import ProgramError, shown
from ..graph.append import append
from .expression import Expression

Layer = Callable[..., Any]


def model_of(values: Any) -> Any:
    """The model of the Expressions among ``values`` (items of lists and tuples too), or None;
    ProgramError when they belong to several."""
    found = None
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, Expression):
                if found is None:
                    found = item.model
                elif item.model is not found:
                    raise ProgramError(
                        f"expression {item.name()!r} belongs to another model than the other "
                        "inputs; a layer builds one model"
                    )
    return found


def unwrap(value: Any, model: Any) -> Any:
    """``value`` with Expressions (of ``model`` only) replaced by their Variables."""
    if isinstance(value, Expression):
        if value.model is not model:
            raise ProgramError(
                f"expression {value.name()!r} belongs to another model than the one building "
                "this layer (model=)"
            )
        return value.variable
    if isinstance(value, (list, tuple)) and any(isinstance(v, Expression) for v in value):
        return type(value)(unwrap(v, model) for v in value)
    return value


def model_method(layer: Layer) -> Layer:
    """Give a Program-API layer a keyword-only ``model=None`` and Expression inputs (see the
    module docstring)."""

    @functools.wraps(layer)
    def method(*args: Any, model: Any = None, **kwargs: Any) -> Any:
        if model is None:
            model = model_of((*args, *kwargs.values()))
            if model is None:
                return layer(*args, **kwargs)  # the Program API itself
        elif not callable(getattr(model, "guard", None)):
            raise ProgramError(f"{layer.__name__}(): model must be a pc.Model, got {shown(model)}")
        args = tuple(unwrap(a, model) for a in args)
        kwargs = {k: unwrap(v, model) for k, v in kwargs.items()}
        with model.guard():
            result = layer(*args, **kwargs)
        return model.wrap(result)

    signature = inspect.signature(layer)
    params = list(signature.parameters.values())
    params.append(inspect.Parameter("model", inspect.Parameter.KEYWORD_ONLY, default=None))
    method.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return method


def append_to_model(
    info: Any, inputs: dict[str, Any], attrs: dict[str, Any], name: Any, result: Callable
) -> Any:
    """A generated op called on Expressions: appended to their model, returning Expressions."""
    model = model_of(inputs.values())
    inputs = {slot: unwrap(value, model) for slot, value in inputs.items()}
    with model.guard():
        _, outs = append(model.current_block(), info, inputs, attrs, name=name)
    return model.wrap(result(outs))
