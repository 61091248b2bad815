"""ONNX model -> Program: each node becomes ops through the mapping its plugin declares.

In order: the file is read as untrusted input (reader.py); every node no installed plugin maps is
listed at once, before anything is built; the nodes are put in dependency order (a cycle or an
undefined input is refused, naming the node); then each node is converted. A node whose inputs
are all constants is folded: its ops run once, here, and its outputs are constants too (shape
arithmetic, weights' transposes). Initializers become parameters in a scope, trainable when
floating point, so that the imported program fine-tunes like any other.
"""

from __future__ import annotations

import ast
import heapq
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...proto import framework_pb2 as pb
from ...proto import onnx_pb2 as onnx
from ..base.errors import PLUGIN_CODE_ERRORS, OnnxError, PaddleCoreError, brief, counted
from ..graph.append import append
from ..graph.program import Program, program_guard
from ..graph.variable import Variable
from ..plugins import catalog
from ..plugins.config import normalize
from ..plugins.loading import resolve
from ..run.executor import Executor
from ..run.scope import Scope
from ..spec.attrs import from_attr_value
from .mappings import Mapping, domain_key, get_mappings, onnx_op_name
from .reader import MAX_BYTES, Budget, dtype_of, read_model, tensor_array

A = onnx.AttributeProto
# Dimensions larger than this are refused as hostile (no tensor of ours reaches 2**48 elements).
MAX_DIM = 2**48


class Imported:
    """An imported ONNX model: an ordinary Program with its values in a Scope.

    ``inputs`` and ``outputs`` are the graph's input and output names, in order (the program's
    data variables and fetch targets of those names); ``startup`` is None (the scope already
    holds every value); ``opsets`` maps each domain to the version the model imports.
    """

    def __init__(self, program, scope, inputs, outputs, opsets) -> None:
        self.program: Program = program
        self.startup: Program | None = None
        self.scope: Scope = scope
        self.inputs: list[str] = inputs
        self.outputs: list[str] = outputs
        self.opsets: dict[str, int] = opsets
        self._executors: dict[str, Executor] = {}

    def run(self, feed: dict[str, Any], device: str = "cpu") -> list[np.ndarray]:
        """Run the model: ``feed`` maps input names to arrays; returns the outputs in order."""
        exe = self._executors.get(device)
        if exe is None:
            exe = self._executors[device] = Executor(device)
        return exe.run(self.program, feed=feed, fetch_list=self.outputs, scope=self.scope)

    def __repr__(self) -> str:
        ops = len(self.program.global_block().ops)
        return f"<pc.onnx.Imported: {ops} ops, inputs {self.inputs}, outputs {self.outputs}>"


class Node:
    """One ONNX node as a mapping's rules see it.

    ``attrs`` holds the node's attributes as Python values (tensors as arrays, graphs as their
    GraphProto); ``constant(i)`` is input i's value when it is a constant (else None) and
    ``input(i)`` input i as a Variable (None where the node leaves it out).
    """

    def __init__(self, importer: _Importer, proto: onnx.NodeProto, version: int) -> None:
        self.proto = proto
        self.op_type: str = proto.op_type
        self.domain: str = proto.domain
        self.version = version
        self.name: str = proto.name or proto.op_type
        self.label = f"node {brief(self.name)!r} ({onnx_op_name(proto.domain, proto.op_type)})"
        self.outputs: list[str] = list(proto.output)
        self._importer = importer
        self.attrs: dict[str, Any] = {}
        for attr in proto.attribute:
            if attr.name in self.attrs:
                raise self.error(f"attribute {attr.name!r} is given twice")
            self.attrs[attr.name] = importer.attr_value(attr, self)

    @property
    def input_count(self) -> int:
        return len(self.proto.input)

    def has_input(self, i: int) -> bool:
        return i < len(self.proto.input) and self.proto.input[i] != ""

    def constant(self, i: int) -> np.ndarray | None:
        return self._importer.constants.get(self.proto.input[i]) if self.has_input(i) else None

    def input(self, i: int) -> Variable | None:
        return self._importer.variable(self.proto.input[i]) if self.has_input(i) else None

    def shape(self, i: int) -> tuple[int | None, ...]:
        """Input i's shape as far as it is known (None for dimensions known at run time)."""
        value = self.constant(i)
        if value is not None:
            return tuple(value.shape)
        return tuple(self._importer.variable(self.proto.input[i]).shape)

    def dtype(self, i: int) -> str:
        """Input i's dtype (ours: NumPy's names)."""
        value = self.constant(i)
        if value is not None:
            return str(value.dtype)
        return self._importer.variable(self.proto.input[i]).dtype

    def parameter(self, value: np.ndarray, hint: str) -> Variable:
        """A trainable parameter holding ``value``: for a rule that rearranges the model's
        weights (LSTM's gate order), which stay trainable like the initializers they came
        from."""
        return self._importer.parameter(np.ascontiguousarray(value), f"{self.name}.{hint}")

    def subgraph(self, name: str, inputs: Sequence[Variable] = ()) -> list[Variable]:
        """Build the graph attribute ``name`` (If's then_branch, Loop's body) into the current
        block, its inputs bound to ``inputs``; returns its outputs as Variables."""
        return self._importer.subgraph(self.attrs[name], list(inputs))

    def error(self, message: str) -> OnnxError:
        return OnnxError(f"{self.label}: {message}", node=self.name)


def load(source: Any, *, batch: int | None = None, max_bytes: int = MAX_BYTES) -> Imported:
    """Import an ONNX model (a path or bytes) as a Program; see :class:`Imported`.

    ``batch`` fixes the first dimension of inputs where the model leaves it symbolic; other
    symbolic dimensions stay unknown. ``max_bytes`` bounds what the model may make us read and
    hold (the file, its external data and its tensors). Loading runs no code from the file.
    """
    if batch is not None and (type(batch) is not int or batch < 1):
        raise OnnxError(f"batch must be a positive int, got {batch!r}")
    if type(max_bytes) is not int or max_bytes < 1:
        raise OnnxError(f"max_bytes must be a positive int, got {max_bytes!r}")
    model, base = read_model(source, max_bytes)
    budget = Budget(max_bytes)
    budget.take(model.ByteSize(), "the model")
    return _Importer(model, base, budget, batch).run()


def missing(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """(ONNX op with its opset, the nodes and why) per ONNX op the model uses that no installed
    plugin maps at its opset."""
    opsets = _opsets(model)
    mappings = get_mappings()
    found: dict[tuple[str, str, int], list[str]] = {}
    for node in _all_nodes(model.graph):
        if domain_key(node.domain) == "" and node.op_type == "Constant":
            continue
        version = opsets.get(domain_key(node.domain))
        if version is None or mappings.find(node.domain, node.op_type, version) is None:
            key = (node.domain, node.op_type, version or 0)
            found.setdefault(key, []).append(node.name or node.op_type)
    report = []
    for (domain, op_type, version), names in sorted(found.items()):
        name = onnx_op_name(domain, op_type)
        shown_names = ", ".join(repr(brief(n, 40)) for n in names[:3])
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        nodes = f"{counted(len(names), 'node')}: {shown_names}{more}"
        if not version:
            report.append((name, f"{nodes} (the model imports no opset of {domain!r})"))
            continue
        mapped = mappings.versions(domain, op_type)
        why = f" (mapped for opsets {', '.join(mapped)})" if mapped else _provider_hint(name)
        report.append((f"{name} (opset {version})", f"{nodes}{why}"))
    return report


def _provider_hint(name: str) -> str:
    """Where a first-party package that is not installed maps the ONNX op: how to install it."""
    package = catalog.provider_of_onnx(name)
    if package is None:
        return ""
    installed = {normalize(r.distribution) for r in get_mappings().registry.records}
    if normalize(package) in installed:
        return f" (mapped by {package}, installed but not loaded: `paddle-ops plugins` says why)"
    return f" (mapped by {package}, not installed: {catalog.install_command(package)})"


def _opsets(model: onnx.ModelProto) -> dict[str, int]:
    opsets: dict[str, int] = {}
    for entry in model.opset_import:
        opsets[domain_key(entry.domain)] = int(entry.version)
    return opsets


def _all_nodes(graph: onnx.GraphProto):
    """Every node of the graph and of the graphs its nodes hold (If's branches, Loop's body)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == A.GRAPH else list(attr.graphs):
                yield from _all_nodes(sub)


class _Importer:
    def __init__(self, model: onnx.ModelProto, base: Any, budget: Budget, batch: int | None):
        self.model, self.base, self.budget, self.batch = model, base, budget, batch
        self.opsets = _opsets(model)
        self.mappings = get_mappings()
        self.program = Program()
        self.scope = Scope()
        self.constants: dict[str, np.ndarray] = {}
        self.vars: dict[str, Variable] = {}
        self.trainable: set[str] = set()  # the initializers: parameters a user fine-tunes
        self._fold: dict[str, np.ndarray] | None = None  # the feed while folding a node
        self._exe: Executor | None = None

    def run(self) -> Imported:
        graph = self.model.graph
        problems = missing(self.model)
        if problems:
            raise OnnxError(
                f"no installed plugin maps {', '.join(op for op, _ in problems)} "
                "(`paddle-ops list --onnx` shows what is mapped):\n"
                + "".join(f"  {op}: {nodes}\n" for op, nodes in problems)
            )
        for tensor in graph.initializer:
            self._define(tensor.name, "initializer")
            self.constants[tensor.name] = tensor_array(
                tensor, "initializer", self.budget, self.base
            )
            self.trainable.add(tensor.name)
        if len(graph.sparse_initializer):
            raise OnnxError("sparse initializers are not supported")
        inputs = []
        for value in graph.input:
            if value.name in self.constants:  # an initializer listed as an input too (IR < 4)
                continue
            self._define(value.name, "graph input")
            self.vars[value.name] = self._data(value)
            inputs.append(value.name)
        for proto in _ordered(graph, set(self.constants) | set(self.vars)):
            self._convert(proto)
        outputs = [self._output(value.name) for value in graph.output]
        return Imported(self.program, self.scope, inputs, outputs, self.opsets)

    @property
    def block(self) -> Any:
        """Where ops go: the program's current block (a branch's or a loop body's, while a
        rule builds one)."""
        return self.program.current_block()

    def subgraph(self, graph: onnx.GraphProto, inputs: Sequence[Variable]) -> list[Variable]:
        """Convert ``graph`` (If's branch, Loop's body) into the current block: its inputs
        bound to ``inputs``, outer values visible; returns its outputs."""
        if len(inputs) != len(graph.input):
            raise OnnxError(
                f"subgraph {brief(graph.name)!r} takes {len(graph.input)} inputs, got {len(inputs)}"
            )
        outer = dict(self.vars), dict(self.constants)
        try:
            for value, var in zip(graph.input, inputs):
                self.vars[value.name] = var
            for tensor in graph.initializer:
                self.constants[tensor.name] = tensor_array(
                    tensor, "initializer", self.budget, self.base
                )
            for proto in _ordered(graph, set(self.vars) | set(self.constants)):
                self._convert(proto)
            missing = [
                v.name
                for v in graph.output
                if v.name not in self.vars and v.name not in self.constants
            ]
            if missing:
                raise OnnxError(
                    f"subgraph {brief(graph.name)!r}: output {brief(missing[0])!r} is not computed"
                )
            return [self.variable(v.name) for v in graph.output]
        finally:
            self.vars, self.constants = outer

    # ---- values ----------------------------------------------------------------------------

    def _define(self, name: str, what: str) -> None:
        if not name:
            raise OnnxError(f"a {what} has no name")
        if name in self.constants or name in self.vars:
            raise OnnxError(f"{what} {brief(name)!r} is defined twice")

    def _data(self, value: onnx.ValueInfoProto) -> Variable:
        what = f"graph input {brief(value.name)!r}"
        if value.type.WhichOneof("value") != "tensor_type":
            raise OnnxError(
                f"{what}: only tensors are supported, not {value.type.WhichOneof('value')}"
            )
        tensor_type = value.type.tensor_type
        dtype = dtype_of(tensor_type.elem_type, what)
        shape: list[int | None] = []
        for i, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                if not 0 <= dim.dim_value <= MAX_DIM:
                    raise OnnxError(f"{what}: dimension {i} is {dim.dim_value}")
                shape.append(dim.dim_value)
            else:  # a symbolic dimension (dim_param) or none given: known at run time
                shape.append(self.batch if i == 0 and self.batch else None)
        var = self.block.create_var(value.name, shape, dtype, stop_gradient=True)
        var.is_data = True
        return var

    def variable(self, name: str) -> Variable:
        """The Variable holding ONNX value ``name``: a constant becomes a parameter (trainable
        when an initializer of floating point) or, while folding, a fed input."""
        if self._fold is not None:  # (even a constant made a parameter: this is another program)
            value = self.constants[name]
            var = self.block.create_var(self._fresh(name), value.shape, str(value.dtype))
            self._fold[var.name] = value
            return var
        var = self.vars.get(name)
        if var is not None:
            return var
        value = self.constants[name]
        trainable = name in self.trainable and value.dtype.kind == "f"
        var = self.block.create_parameter(
            self._fresh(name), value.shape, str(value.dtype), trainable=trainable
        )
        self.scope.set_var(var.name, value)
        self.vars[name] = var
        return var

    def parameter(self, value: np.ndarray, hint: str) -> Variable:
        self.budget.take(value.nbytes, f"parameter {brief(hint)!r}")
        var = self.block.create_parameter(
            self._fresh(hint), value.shape, str(value.dtype), trainable=value.dtype.kind == "f"
        )
        self.scope.set_var(var.name, value)
        return var

    def _fresh(self, name: str) -> str:
        """``name``, or a variant of it when the program has a variable of that name."""
        candidate, n = name, 0
        while self.block.find_var(candidate) is not None:
            n += 1
            candidate = f"{name}.{n}"
        return candidate

    def _output(self, name: str) -> str:
        """A graph output's variable, named as the graph names it."""
        if name not in self.vars and name not in self.constants:
            raise OnnxError(f"graph output {brief(name)!r} is not computed by any node")
        var = self.variable(name)
        if var.name == name:
            return name
        with program_guard(self.program, Program()):
            out = self.block.create_var(self._fresh(name), var.shape, var.dtype)
            append(self.block, self.registry_op("assign"), {"x": var}, {}, {"out": out})
        return out.name

    def registry_op(self, op_type: str) -> Any:
        return self.mappings.registry.op(op_type)

    def attr_value(self, attr: onnx.AttributeProto, node: Node) -> Any:
        what = f"attribute {attr.name!r}"
        kind = attr.type
        if kind == A.FLOAT:
            return float(attr.f)
        if kind == A.INT:
            return int(attr.i)
        if kind == A.STRING:
            return _text(attr.s, node, what)
        if kind == A.FLOATS:
            return [float(v) for v in attr.floats]
        if kind == A.INTS:
            return [int(v) for v in attr.ints]
        if kind == A.STRINGS:
            return [_text(s, node, what) for s in attr.strings]
        if kind == A.TENSOR:
            return tensor_array(attr.t, f"{node.label}: {what}", self.budget, self.base)
        if kind == A.GRAPH:
            return attr.g
        if kind == A.GRAPHS:
            return list(attr.graphs)
        raise node.error(f"{what} of type {A.AttributeType.Name(kind)} is not supported")

    # ---- nodes -----------------------------------------------------------------------------

    def _convert(self, proto: onnx.NodeProto) -> None:
        version = self.opsets[domain_key(proto.domain)]
        if domain_key(proto.domain) == "" and proto.op_type == "Constant":
            node = Node(self, proto, version)
            self._bind(node, [_constant(node)])
            return
        mapping = self.mappings.find(proto.domain, proto.op_type, version)
        assert mapping is not None  # (missing() listed every node without one)
        node = Node(self, proto, version)
        given = [i for i in range(node.input_count) if node.has_input(i)]
        foldable = (
            given
            and all(node.constant(i) is not None for i in given)
            and not mapping.info.opdef.random
            and not any(a.type in (A.GRAPH, A.GRAPHS) for a in proto.attribute)
        )
        try:
            results = self._fold_node(node, mapping) if foldable else self._build(node, mapping)
        except OnnxError:
            raise
        except PaddleCoreError as e:
            raise node.error(f"{type(e).__name__}: {e}") from e
        self._bind(node, results)

    def _bind(self, node: Node, results: Sequence[Any]) -> None:
        wanted = [(i, name) for i, name in enumerate(node.outputs) if name]
        for i, name in wanted:
            if i >= len(results) or results[i] is None:
                raise node.error(f"output {i} ({brief(name)!r}) is not supported")
            self._define(name, f"{node.label}: output")
            result = results[i]
            if isinstance(result, Variable):
                self.vars[name] = result
            else:
                value = np.asarray(result)
                self.budget.take(value.nbytes, f"{node.label}: output {brief(name)!r}")
                self.constants[name] = value

    def _build(self, node: Node, mapping: Mapping) -> list[Any]:
        info, spec = mapping.info, mapping.spec
        if spec.import_rule:
            _check_attrs(node, mapping)
            what = f"ONNX import rule of op {info.type!r}"
            rule = resolve(info.plugin, spec.import_rule, what)
            with program_guard(self.program, Program()):
                out = _call(rule, node, what, info, node)
            return list(out) if isinstance(out, (list, tuple)) else [out]
        inputs, attrs = self._translate(node, mapping)
        slots = list(spec.outputs) or [slot.name for slot in info.proto.outputs]
        _, outs = append(self.block, info, inputs, attrs, self._output_names(node, info, slots))
        return [outs[slot][0] if outs.get(slot) else None for slot in slots]

    def _output_names(self, node: Node, info: Any, slots: list[str]) -> dict | None:
        """Our output variables named as the node's outputs (the others named uniquely), so
        that the program reads like the model; None where a slot takes a list."""
        if any(slot.duplicable for slot in info.proto.outputs):
            return None
        given = dict(zip(slots, node.outputs))
        names = {}
        for slot in info.proto.outputs:
            if given.get(slot.name):
                names[slot.name] = self._fresh(given[slot.name])
            elif not slot.dispensable:
                names[slot.name] = self._fresh(f"{node.name}.{slot.name}")
        return names

    def _fold_node(self, node: Node, mapping: Mapping) -> list[Any]:
        """Run a node whose inputs are constants, now, in a program of its own."""
        main, self._fold = self.program, {}
        self.program = Program()
        try:
            results = self._build(node, mapping)
            feed, program = self._fold, self.program
        finally:
            self.program, self._fold = main, None
        if all(not isinstance(r, Variable) for r in results):
            return results  # the rule computed them itself
        fetch = [r for r in results if isinstance(r, Variable)]
        self._exe = self._exe or Executor("cpu")
        values = iter(self._exe.run(program, feed=feed, fetch_list=fetch, scope=Scope()))
        return [next(values) if isinstance(r, Variable) else r for r in results]

    def _translate(self, node: Node, mapping: Mapping) -> tuple[dict, dict]:
        """The inputs and attrs of our op for a node, through a declarative mapping."""
        info, spec = mapping.info, mapping.spec
        types = info.attr_types
        attrs: dict[str, Any] = {
            f.attr: from_attr_value(f.value, types[f.attr]) for f in spec.fixed
        }
        for a in spec.attrs:
            if a.HasField("default") and a.name not in node.attrs:
                target = a.attr or a.name
                attrs[target] = from_attr_value(a.default, types[target])
        by_name = _check_attrs(node, mapping)
        for name, value in node.attrs.items():
            a = by_name[name]
            if a.ignore or (a.only and not a.attr and a.name not in types):
                continue
            if a.rule:
                what = f"ONNX attr rule of op {info.type!r}"
                rule = resolve(info.plugin, a.rule, what)
                attrs.update(_call(rule, node, what, info, value, node))
                continue
            target = a.attr or a.name
            attrs[target] = _as_type(value, types[target], node, f"attribute {name!r}")
        slots = [s for s in info.proto.inputs]
        variadic = bool(slots) and slots[0].duplicable
        given = {g.index: g for g in spec.inputs}
        inputs: dict[str, Any] = {}
        for pos in range(node.input_count):
            if not node.has_input(pos):
                continue
            g = given.get(pos)
            if g is not None and g.attr:
                value = node.constant(pos)
                if value is None:
                    raise node.error(
                        f"input {pos} ({brief(node.proto.input[pos])!r}) must be a constant: "
                        f"it becomes attr {g.attr!r} of op {info.type!r}"
                    )
                attrs[g.attr] = _constant_as(value, types[g.attr], node, f"input {pos}")
            elif g is not None and g.input:
                inputs[g.input] = node.input(pos)
            elif variadic:
                inputs.setdefault(slots[0].name, []).append(node.input(pos))
            elif pos < len(slots) and g is None:
                inputs[slots[pos].name] = node.input(pos)
            else:
                raise node.error(f"input {pos} is not supported by op {info.type!r}")
        return inputs, attrs


def _call(rule: Any, node: Node, what: str, info: Any, *args: Any) -> Any:
    """A plugin's rule, called: an error of ours passes through; anything else its code raises
    (a bug, or a value it did not expect) becomes an OnnxError naming the node and the plugin."""
    try:
        return rule(*args)
    except PaddleCoreError:
        raise
    except PLUGIN_CODE_ERRORS as e:
        raise node.error(
            f"the {what} ({info.plugin.label}) failed: {type(e).__name__}: {brief(str(e), 200)}"
        ) from e


def _check_attrs(node: Node, mapping: Mapping) -> dict[str, Any]:
    """Every attribute the node sets is one the mapping lists, at a value it accepts; returns
    the mapping's attributes by ONNX name."""
    info, by_name = mapping.info, {a.name: a for a in mapping.spec.attrs}
    for name, value in node.attrs.items():
        a = by_name.get(name)
        if a is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise node.error(
                f"attribute {name!r} is not supported by op {info.type!r} of "
                f"{info.plugin.label} (its mapping of {node.op_type} reads: {known})"
            )
        accepted = [ast.literal_eval(v) for v in a.only]
        if accepted and value not in accepted:
            raise node.error(
                f"attribute {name!r} = {brief(repr(value))} is not supported by op "
                f"{info.type!r} (only {', '.join(a.only)})"
            )
    return by_name


def _ordered(graph: onnx.GraphProto, known: set[str]) -> list[onnx.NodeProto]:
    """The graph's nodes in dependency order; an undefined input or a cycle is an error."""
    producer: dict[str, int] = {}
    for i, node in enumerate(graph.node):
        for name in node.output:
            if not name:
                continue
            if name in producer or name in known:
                raise OnnxError(
                    f"value {brief(name)!r} is produced twice (node {brief(node.name)!r})",
                    node=node.name,
                )
            producer[name] = i
    waiting = [0] * len(graph.node)
    users: dict[int, list[int]] = {}
    for i, node in enumerate(graph.node):
        for name in {n for n in node.input if n} | _outer_reads(node):
            if name in producer:
                waiting[i] += 1
                users.setdefault(producer[name], []).append(i)
            elif name not in known:
                label = brief(node.name or node.op_type)
                raise OnnxError(
                    f"node {label!r} ({node.op_type}): input {brief(name)!r} is not a graph "
                    "input, an initializer or any node's output",
                    node=node.name,
                )
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)  # the file's order wherever it is a valid one (ONNX requires it)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(graph.node[i])
        for user in users.get(i, ()):
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < len(graph.node):
        stuck = next(graph.node[i] for i, count in enumerate(waiting) if count)
        raise OnnxError(
            f"the graph has a cycle through node {brief(stuck.name or stuck.op_type)!r} "
            f"({stuck.op_type})",
            node=stuck.name,
        )
    return order


def _outer_reads(node: onnx.NodeProto) -> set[str]:
    """The values the graphs a node holds (If's branches, Loop's body) read from outside them."""
    found: set[str] = set()
    for attr in node.attribute:
        for graph in [attr.g] if attr.type == A.GRAPH else list(attr.graphs):
            defined = {v.name for v in graph.input} | {t.name for t in graph.initializer}
            for inner in graph.node:
                found |= {n for n in inner.input if n} | _outer_reads(inner)
                defined |= set(inner.output)
            found -= defined
    return found


def _text(raw: bytes, node: Node, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise node.error(f"{what} is not UTF-8 text") from None


def _constant(node: Node) -> np.ndarray:
    """The value of a Constant node (ONNX's literal: not an op)."""
    if len(node.attrs) != 1:
        raise node.error(f"a Constant sets exactly one value attribute, got {sorted(node.attrs)}")
    name, value = next(iter(node.attrs.items()))
    if name == "value":
        return value
    if name in ("value_float", "value_floats"):
        return np.asarray(value, dtype=np.float32)
    if name in ("value_int", "value_ints"):
        return np.asarray(value, dtype=np.int64)
    raise node.error(f"a Constant's {name!r} is not supported (tensors of numbers only)")


_INTEGER = (pb.INT, pb.LONG)
_SCALAR_OF = {pb.INTS: pb.INT, pb.LONGS: pb.LONG, pb.FLOATS: pb.FLOAT, pb.BOOLS: pb.BOOL}


def _as_type(value: Any, attr_type: int, node: Node, what: str) -> Any:
    """An ONNX attribute's value as our attr type (an INT 0/1 as a BOOLEAN...)."""
    if attr_type in _SCALAR_OF:
        if not isinstance(value, list):
            raise node.error(f"{what}: expected a list, got {brief(repr(value))}")
        return [_as_type(v, _SCALAR_OF[attr_type], node, what) for v in value]
    if attr_type == pb.BOOL and isinstance(value, int):
        return bool(value)
    if attr_type in _INTEGER and isinstance(value, int):
        return value
    if attr_type == pb.FLOAT and isinstance(value, (int, float)):
        return float(value)
    if attr_type == pb.STRING and isinstance(value, str):
        return value
    if attr_type == pb.STRINGS and isinstance(value, list):
        return value
    raise node.error(
        f"{what}: {brief(repr(value))} does not fit an attr of type {pb.AttrType.Name(attr_type)}"
    )


def _constant_as(value: np.ndarray, attr_type: int, node: Node, what: str) -> Any:
    """A constant input's values as our attr type: a list, or the one element."""
    flat = value.reshape(-1)
    if attr_type in _SCALAR_OF:
        kind = _SCALAR_OF[attr_type]
        return [
            float(v) if kind == pb.FLOAT else bool(v) if kind == pb.BOOL else int(v) for v in flat
        ]
    if flat.size != 1:
        raise node.error(f"{what}: expected one value, got {flat.size}")
    if attr_type in _INTEGER:
        return int(flat[0])
    if attr_type == pb.FLOAT:
        return float(flat[0])
    if attr_type == pb.BOOL:
        return bool(flat[0])
    raise node.error(
        f"{what}: a constant cannot give an attr of type {pb.AttrType.Name(attr_type)}"
    )
