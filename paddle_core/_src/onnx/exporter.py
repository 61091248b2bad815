"""Program -> ONNX model: each op is written through the mapping its plugin declares.

The program is cloned for test and pruned to what the fetches need. Each op is written through
the first of its mappings that covers the target opset and whose fixed attrs the op's attrs
match (pool2d with pooling_type "max" is a MaxPool), read backwards: our inputs at their ONNX
positions, attrs read from constant inputs written as constants, our attrs as ONNX attributes.
Where a declaration cannot be read backwards (an import rule, an attr rule with no
export_rule), the mapping's export_rule writes the nodes. An op with no way to be written is an
error naming it and its plugin. Parameters become initializers, from the scope.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..._version import __version__
from ...proto import framework_pb2 as pb
from ...proto import onnx_pb2 as onnx
from ..base.errors import PLUGIN_CODE_ERRORS, OnnxError, PaddleCoreError, brief
from ..graph.block import Block
from ..graph.program import Program
from ..graph.variable import Variable
from ..plugins.loading import resolve
from ..plugins.registry import get_registry
from ..run.planning import prune
from ..run.scope import Scope, global_scope
from ..spec.attrs import from_attr_value
from .mappings import domain_key
from .reader import element_type

# The opsets written: from 18 (ReduceX take axes as an input, as our mappings write them) to
# the newest our mappings are checked against.
OPSETS = range(18, 24)
DEFAULT_OPSET = 18
# The IR version each opset needs (ONNX's table: opset 18 came with IR 8).
IR_VERSION = {18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11}
# A protobuf message cannot pass 2 GiB: above this, initializers go to an external file.
EXTERNAL_ABOVE = 2**31 - 2**26
EXTERNAL_MIN_BYTES = 1024  # smaller initializers stay inside the model

A = onnx.AttributeProto


class ExportOp:
    """One op of ours as an export rule sees it: ``type``, ``attrs``, ``inputs`` / ``outputs``
    (slot -> ONNX value names), ``shape(name)`` / ``dtype(name)``; ``node(...)`` adds an ONNX
    node, ``constant(array)`` a constant, and ``error(message)`` makes an OnnxError naming
    the op."""

    def __init__(self, writer: _Writer, op: Any, info: Any, mapping: Any) -> None:
        self.type: str = op.type
        self.attrs: dict[str, Any] = dict(op.attrs)
        self.inputs: dict[str, list[str]] = {s: list(op.input(s)) for s in op.inputs}
        self.outputs: dict[str, list[str]] = {s: list(op.output(s)) for s in op.outputs}
        self.mapping = mapping
        self.opset = writer.opset
        self._writer, self._info = writer, info
        self.label = f"op {op.type!r} (outputs {', '.join(op.output_names)})"

    def input(self, slot: str) -> str:
        """The one ONNX value of input slot ``slot`` ('' when the op has none there)."""
        names = self.inputs.get(slot) or [""]
        return names[0]

    def output(self, slot: str) -> str:
        names = self.outputs.get(slot) or [""]
        return names[0]

    def shape(self, name: str) -> tuple:
        return tuple(self._writer.block.var(name).shape)

    def dtype(self, name: str) -> str:
        return self._writer.block.var(name).dtype

    def node(
        self, op_type: str, inputs: list[str], outputs: list[str], domain: str = "", **attrs: Any
    ) -> None:
        self._writer.node(op_type, inputs, outputs, domain, attrs, self.label)

    def constant(self, value: Any, dtype: str | None = None) -> str:
        """A constant tensor (written as an initializer); returns its name."""
        return self._writer.constant(np.asarray(value, dtype=dtype), self.type)

    def fresh(self, hint: str) -> str:
        """A new value name, for a node's output that no variable of ours holds."""
        return self._writer.fresh(hint)

    def error(self, message: str) -> OnnxError:
        return OnnxError(f"{self.label} of {self._info.plugin.label}: {message}")


def export(
    program: Program,
    path: str | os.PathLike,
    *,
    feeds: list[Any],
    fetches: list[Any],
    scope: Scope | None = None,
    opset: int | None = None,
    external_data: bool | None = None,
) -> onnx.ModelProto:
    """Write the part of ``program`` computing ``fetches`` from ``feeds`` (names or
    Variables) as an ONNX model at ``path``, its parameters' values from ``scope`` (default:
    the global scope); returns the model. ``opset``: the default domain's version (18 by
    default). ``external_data``: parameters in a file beside the model (``<name>.data``);
    None does so only when the model would pass protobuf's 2 GiB."""
    if not isinstance(program, Program):
        raise OnnxError(f"export expects a Program, got {type(program).__name__}")
    opset = DEFAULT_OPSET if opset is None else opset
    if opset not in OPSETS:
        raise OnnxError(f"opset {opset!r} is not one export writes ({OPSETS[0]} to {OPSETS[-1]})")
    feeds, fetches = _names("feeds", feeds), _names("fetches", fetches)
    writer = _Writer(program.clone(for_test=True), opset, scope or global_scope())
    model = writer.write(feeds, fetches)
    path = Path(path)
    _save(model, path, external_data)
    return model


def _names(what: str, given: Any) -> list[str]:
    items = [given] if isinstance(given, (str, Variable)) else list(given)
    for item in items:
        if not isinstance(item, (str, Variable)):
            raise OnnxError(f"{what} are variable names or Variables, got {type(item).__name__}")
    return [i.name if isinstance(i, Variable) else i for i in items]


class _Writer:
    def __init__(self, program: Program, opset: int, scope: Scope) -> None:
        self.program, self.opset, self.scope = program, opset, scope
        self.block = program.global_block()
        self.graph = onnx.GraphProto(name="paddle_core")
        self.domains: dict[str, int] = {"": opset}
        self.initialized: set[str] = set()
        self._count = 0

    def write(self, feeds: list[str], fetches: list[str]) -> onnx.ModelProto:
        block = self.block
        for name in [*feeds, *fetches]:
            block.var(name)  # a ProgramError naming close matches for an unknown name
        ops = prune(block, fetches, set(feeds))
        self.used = {n for op in ops for n in op.input_names} | set(fetches)
        for op in ops:
            self._op(op)
        self.graph.input.extend(self._value(name) for name in feeds)
        self.graph.output.extend(self._value(name) for name in fetches)
        model = onnx.ModelProto(
            ir_version=IR_VERSION[self.opset],
            producer_name="paddle-core",
            producer_version=__version__,
            graph=self.graph,
        )
        for domain, version in sorted(self.domains.items()):
            model.opset_import.add(domain=domain, version=version)
        return model

    # ---- values ----------------------------------------------------------------------------

    def _value(self, name: str) -> onnx.ValueInfoProto:
        var = self.block.var(name)
        value = onnx.ValueInfoProto(name=name)
        tensor_type = value.type.tensor_type
        tensor_type.elem_type = _element_type(var.dtype, f"variable {name!r}")
        for i, d in enumerate(var.shape):
            dim = tensor_type.shape.dim.add()
            if d is None:
                dim.dim_param = "batch" if i == 0 else f"{name}_dim{i}"
            else:
                dim.dim_value = d
        return value

    def _input(self, name: str) -> str:
        """``name`` as a node's input: a persistable variable becomes an initializer (other
        names: a variable, or a value an earlier node of this export made)."""
        var = self.block.find_var(name)
        if var is not None and var.persistable and name not in self.initialized:
            value = self.scope.find_var(name)
            if value is None:
                raise OnnxError(
                    f"parameter {name!r} has no value in the scope (run the startup program, or "
                    "pass the scope that holds it)"
                )
            self.graph.initializer.append(_tensor(name, np.asarray(value)))
            self.initialized.add(name)
        return name

    def _persistable(self, name: str) -> bool:
        var = self.block.find_var(name)
        return var is not None and var.persistable

    def constant(self, value: np.ndarray, hint: str) -> str:
        name = self.fresh(f"{hint}_const")
        self.graph.initializer.append(_tensor(name, value))
        self.initialized.add(name)
        return name

    def fresh(self, hint: str) -> str:
        while True:
            self._count += 1
            name = f"{hint}_{self._count}"
            if self.block.find_var(name) is None:
                return name

    def node(
        self,
        op_type: str,
        inputs: list[str],
        outputs: list[str],
        domain: str,
        attrs: dict,
        label: str,
    ) -> None:
        n = self.graph.node.add(op_type=op_type, domain=domain)
        n.name = f"{op_type}_{len(self.graph.node)}"
        n.input.extend(self._input(i) if i else "" for i in inputs)
        n.output.extend(outputs)
        for key, value in attrs.items():
            if value is not None:
                n.attribute.append(_attribute(key, value, label))

    # ---- ops -------------------------------------------------------------------------------

    def _op(self, op: Any) -> None:
        info = get_registry().op(op.type)
        if any(isinstance(v, Block) for v in op.attrs.values()):
            raise OnnxError(f"op {op.type!r}: ops holding sub-blocks do not export yet")
        mapping = self._choose(op, info)
        exporting = ExportOp(self, op, info, mapping)
        domain = domain_key(mapping.domain)
        if domain:
            self.domains[domain] = max(self.domains.get(domain, 0), mapping.since_version)
        try:
            if mapping.export_rule:
                rule = resolve(
                    info.plugin, mapping.export_rule, f"ONNX export rule of op {op.type!r}"
                )
                _call(rule, exporting, exporting)
            else:
                self._declared(exporting, info, mapping)
        except OnnxError:
            raise
        except PaddleCoreError as e:
            raise exporting.error(f"{type(e).__name__}: {e}") from e

    def _choose(self, op: Any, info: Any) -> Any:
        """The first mapping that covers the opset, matches the op's attrs and can be written."""
        reasons = []
        # the most specific first: GlobalAveragePool (two fixed attrs) before AveragePool (one)
        for m in sorted(info.opdef.onnx, key=lambda m: -len(m.fixed)):
            name = f"{m.op_type} (opset {m.since_version}+)"
            until = m.until_version or 10**9
            if not domain_key(m.domain) and not m.since_version <= self.opset <= until:
                reasons.append(f"{name} does not cover opset {self.opset}")
                continue
            mismatch = [
                f.attr
                for f in m.fixed
                if op.attrs.get(f.attr) != from_attr_value(f.value, info.attr_types[f.attr])
            ]
            if mismatch:
                continue  # another operator (MaxPool, not AveragePool)
            readable = not m.import_rule and all(a.export_rule or not a.rule for a in m.attrs)
            if m.export_rule or readable:
                return m
            reasons.append(f"{name} needs code to write (its plugin names no export_rule)")
        why = "; ".join(reasons) or "it maps no ONNX operator"
        raise OnnxError(f"op {op.type!r} of {info.plugin.label} cannot be written as ONNX: {why}")

    def _declared(self, op: ExportOp, info: Any, m: Any) -> None:
        """The declaration read backwards: one node."""
        types = info.attr_types
        defaults = info.attr_defaults
        covered = {f.attr for f in m.fixed} | set(m.export_ignores)
        positions: dict[int, str] = {}
        from_input = {g.attr: g.index for g in m.inputs if g.attr}
        renamed = {g.input: g.index for g in m.inputs if g.input}
        slots = list(info.proto.inputs)
        if slots and slots[0].duplicable:
            for i, name in enumerate(op.inputs.get(slots[0].name, [])):
                positions[i] = name
        else:
            for i, slot in enumerate(slots):
                if op.inputs.get(slot.name):
                    positions[renamed.get(slot.name, i)] = op.inputs[slot.name][0]
        for attr, index in from_input.items():
            covered.add(attr)
            kind = types[attr]
            value = op.attrs[attr]
            dtype = "float32" if kind in (pb.FLOAT, pb.FLOATS) else "int64"
            if kind == pb.FLOAT and slots:  # (Clip's min: x's dtype)
                dtype = op.dtype(op.input(slots[0].name))
            positions[index] = op.constant(value, dtype)
        attributes: dict[str, Any] = {}
        for a in m.attrs:
            target = a.attr or a.name
            if a.export_rule:
                rule = resolve(info.plugin, a.export_rule, f"ONNX export rule of attr {a.name!r}")
                attributes[a.name] = _call(rule, op, op.attrs)
                covered.add(target)
            elif a.ignore or target not in types or target in from_input:
                continue
            else:
                attributes[a.name] = op.attrs[target]
                covered.add(target)
        for attr, value in op.attrs.items():
            if attr not in covered and attr in defaults and value != defaults[attr]:
                raise op.error(
                    f"attr {attr!r} = {brief(repr(value))} has no counterpart in its mapping of "
                    f"{m.op_type}"
                )
        inputs = [positions.get(i, "") for i in range(max(positions, default=-1) + 1)]
        out_slots = list(m.outputs) or [s.name for s in info.proto.outputs]
        outputs = [op.output(slot) for slot in out_slots]
        # a later output only where something reads it, and never a persistable variable (a
        # batch norm's running statistics, updated in place: not an output at inference)
        outputs[1:] = [
            n if n in self.used and not self._persistable(n) else "" for n in outputs[1:]
        ]
        while outputs and not outputs[-1]:
            outputs.pop()
        self.node(m.op_type, inputs, outputs, domain_key(m.domain), attributes, op.label)


def _call(rule: Any, op: ExportOp, *args: Any) -> Any:
    try:
        return rule(*args)
    except (OnnxError, PaddleCoreError):
        raise
    except PLUGIN_CODE_ERRORS as e:
        raise op.error(f"its export rule failed: {type(e).__name__}: {brief(str(e), 200)}") from e


def _element_type(dtype: str, what: str) -> int:
    try:
        return element_type(dtype)
    except OnnxError as e:
        raise OnnxError(f"{what}: {e}") from None


def _tensor(name: str, value: np.ndarray) -> onnx.TensorProto:
    dtype = str(value.dtype)
    raw = np.ascontiguousarray(value)
    if dtype == "bfloat16":
        raw = raw.view(np.uint16)
    return onnx.TensorProto(
        name=name,
        dims=value.shape,
        data_type=_element_type(dtype, f"value {name!r}"),
        raw_data=raw.astype(raw.dtype.newbyteorder("<")).tobytes(),
    )


def _attribute(name: str, value: Any, label: str) -> onnx.AttributeProto:
    """A Python value (of one of our attr types) as an ONNX attribute."""
    a = onnx.AttributeProto(name=name)
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        a.type, a.i = A.INT, int(value)
    elif isinstance(value, (float, np.floating)):
        a.type, a.f = A.FLOAT, float(value)
    elif isinstance(value, str):
        a.type, a.s = A.STRING, value.encode()
    elif isinstance(value, np.ndarray):
        a.type = A.TENSOR
        a.t.CopyFrom(_tensor("", value))
    elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value) and value:
        a.type = A.STRINGS
        a.strings.extend(v.encode() for v in value)
    elif isinstance(value, (list, tuple)) and all(
        isinstance(v, (bool, int, np.integer)) for v in value
    ):
        a.type = A.INTS
        a.ints.extend(int(v) for v in value)
    elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        a.type = A.FLOATS
        a.floats.extend(float(v) for v in value)
    else:
        raise OnnxError(f"{label}: attribute {name!r} = {brief(repr(value))} has no ONNX type")
    return a


def _save(model: onnx.ModelProto, path: Path, external_data: bool | None) -> None:
    size = model.ByteSize()
    if external_data is None:
        external_data = size > EXTERNAL_ABOVE
    data_path = path.with_name(path.name + ".data")
    try:
        if external_data:
            with open(data_path, "wb") as f:
                for tensor in model.graph.initializer:
                    if len(tensor.raw_data) < EXTERNAL_MIN_BYTES:
                        continue
                    offset = f.tell()
                    f.write(tensor.raw_data)
                    tensor.ClearField("raw_data")
                    tensor.data_location = onnx.TensorProto.EXTERNAL
                    for key, value in (
                        ("location", data_path.name),
                        ("offset", str(offset)),
                        ("length", str(f.tell() - offset)),
                    ):
                        tensor.external_data.add(key=key, value=value)
        path.write_bytes(model.SerializeToString())
    except OSError as e:
        raise OnnxError(f"cannot write the model to {str(path)!r}: {e.strerror or e}") from None
