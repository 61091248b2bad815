"""``paddle_core.ops``: one Python function per discovered op, generated on first access.

``pc.ops.scale(x, scale=2.0)`` appends a ``scale`` op to the current block of the current
program and returns its output variable(s). Tensors are positional, attrs keyword-only with
their declared defaults; ``help(pc.ops.scale)`` shows the docstring built from the OpProto.
``paddle-ops stubs`` writes ``ops.pyi`` beside this module so editors complete these names.
"""

from __future__ import annotations

import inspect as _inspect
from typing import Any

# Module-level names are underscored: every other name here is an op's generated function.
from ._src.base.errors import AttrError as _AttrError
from ._src.base.errors import OpInputError as _OpInputError
from ._src.base.errors import did_you_mean as _did_you_mean
from ._src.graph.append import append as _append
from ._src.graph.program import default_main_program as _default_main_program
from ._src.model.expression import Expression as _Expression
from ._src.model.methods import append_to_model as _append_to_model
from ._src.plugins.registry import _rebuild_listeners, get_registry
from ._src.spec.opdoc import docstring as _docstring

_MISSING = object()  # an input or required attr the caller did not pass
_generated: set[str] = set()


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    fn = make_function(get_registry().op(name))  # OpNotFoundError is an AttributeError
    globals()[name] = fn
    _generated.add(name)
    return fn


def __dir__() -> list[str]:
    return sorted(get_registry().ops)  # the ops; module internals are not part of the API


def _forget_generated() -> None:
    """Drop generated functions when the registry is rebuilt (plugins changed)."""
    for name in _generated:
        globals().pop(name, None)
    _generated.clear()


_rebuild_listeners.append(_forget_generated)


def make_function(info: Any) -> Any:
    """Generate the API function of one op.

    The function is compiled from source (as ``dataclasses`` and ``namedtuple`` do) so that
    calling it costs no more than a hand-written one; every name in the source was checked to
    be a plain identifier when the manifest loaded. Its real parameters also catch surplus
    positional and unknown keyword arguments, so those get our errors with suggestions;
    ``__signature__`` shows the clean signature.
    """
    proto = info.proto
    inputs = [s.name for s in proto.inputs]
    attrs = [a.name for a in proto.attrs]
    defaults = info.attr_defaults
    # Inputs default to None; _bind_inputs reports a missing required one by name.
    params = [f"{s.name}=None" for s in proto.inputs]
    params.append("*_surplus")
    params += [f"{a}=_d[{a!r}]" if a in defaults else f"{a}=_MISSING" for a in attrs]
    params += ["name=None", "**_unknown"]
    body = [
        f"def {info.type}({', '.join(params)}):",
        "    if _surplus or _unknown:",
        f"        _bad_call(_info, _surplus, _unknown, {len(inputs)})",
        f"    _attrs = {{{', '.join(f'{a!r}: {a}' for a in attrs)}}}",
    ]
    body += [f"    if {a} is _MISSING: del _attrs[{a!r}]" for a in attrs if a not in defaults]
    body.append(f"    _inputs = {{{', '.join(f'{i!r}: {i}' for i in inputs)}}}")
    # Called on a model's expressions: appended to that model, returning expressions.
    checks = [
        f"_listed({s.name})" if s.duplicable else f"type({s.name}) is _Expression"
        for s in proto.inputs
    ]
    if checks:
        body.append(f"    if {' or '.join(checks)}:")
        body.append("        return _append_to_model(_info, _inputs, _attrs, name, _result)")
    body += [
        "    _, _outs = _append(_default_main_program().current_block(), _info, _inputs, _attrs, name=name)",
        "    return _result(_outs)",
    ]
    namespace: dict[str, Any] = {
        "_MISSING": _MISSING,
        "_d": defaults,
        "_info": info,
        "_bad_call": _bad_call,
        "_append": _append,
        "_default_main_program": _default_main_program,
        "_result": _result_maker(info),
        "_Expression": _Expression,
        "_listed": _listed,
        "_append_to_model": _append_to_model,
    }
    exec("\n".join(body), namespace)
    fn = namespace[info.type]
    fn.__doc__ = _docstring(info)
    fn.__module__ = __name__
    fn.__qualname__ = info.type
    fn.__signature__ = _signature(info)
    return fn


def _listed(value: Any) -> bool:
    """Whether a duplicable input holds an Expression."""
    return isinstance(value, (list, tuple)) and any(isinstance(v, _Expression) for v in value)


def _result_maker(info: Any) -> Any:
    slots = [(s.name, s.duplicable) for s in info.proto.outputs]
    if len(slots) == 1:
        slot, duplicable = slots[0]
        if duplicable:
            return lambda outs: outs.get(slot, [])
        return lambda outs: outs[slot][0] if slot in outs else None

    def result(outs: dict) -> tuple:
        return tuple(
            outs.get(s, []) if dup else (outs[s][0] if s in outs else None) for s, dup in slots
        )

    return result


def _bad_call(info: Any, surplus: tuple, unknown: dict, n_inputs: int) -> None:
    op = info.type
    if surplus:
        raise _OpInputError(
            f"op {op!r} takes {n_inputs} positional input(s) "
            f"({', '.join(s.name for s in info.proto.inputs) or 'none'}); attrs are keyword-only, "
            f"got {n_inputs + len(surplus)} positional arguments",
            op=op,
        )
    key = next(iter(unknown))
    names = [a.name for a in info.proto.attrs]
    inputs = [s.name for s in info.proto.inputs]
    raise _AttrError(
        f"op {op!r} has no attr {key!r}{_did_you_mean(key, names + inputs)}; "
        f"its attrs are: {', '.join(names) or 'none'}",
        op=op,
        attr=key,
    )


def _signature(info: Any) -> Any:
    P = _inspect.Parameter
    params = [
        P(s.name, P.POSITIONAL_OR_KEYWORD, default=None if s.dispensable else P.empty)
        for s in info.proto.inputs
    ]
    params += [
        P(a.name, P.KEYWORD_ONLY, default=info.attr_defaults.get(a.name, P.empty))
        for a in info.proto.attrs
    ]
    params.append(P("name", P.KEYWORD_ONLY, default=None))
    return _inspect.Signature(params)
