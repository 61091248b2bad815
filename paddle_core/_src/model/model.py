"""Model: owns what training a network needs, and runs Expressions.

A Model holds a main program (the net; its blocks are the net stack), a startup program (the
parameters' initialisers), a stack of scopes (the root one holds the parameters; models may
share it), the parameter -> gradient map that ``minimize`` fills, and one device, chosen any
time before the model first runs and fixed from then on.

It answers ``Expression.value()`` and ``run``: it checks and keeps the data it is fed (a feed
is a write, stamped on the scopes' ``CLOCK``), initialises parameters the scope lacks (only
those: models sharing a scope share their values), finds or builds the subgraph of the
requested expressions and runs it, or serves a kept result while nothing it read changed.

Saving is ``storage``'s; the global model (``default_model()``) is ``default_model``'s.
"""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..base.errors import DeviceError, FeedError, ProgramError, shown
from ..base.limits import MAX_THREADS
from ..graph.program import Program, program_guard
from ..graph.variable import Variable
from ..plugins import hooks
from ..plugins.devices import get_device
from ..plugins.registry import get_registry
from ..run.executor import check_setting, default_num_threads, feed_array
from ..run.planning import plan
from ..run.prepared import PreparedProgram
from ..run.scope import CLOCK, Scope
from . import storage
from .expression import Expression, TrainStep
from .subgraph import Subgraph

_ndarray = np.ndarray
MAX_UNIONS = 64  # subgraphs of several expressions (model.run) kept per model


class Model:
    """A network with its programs, scopes, parameters' gradients and device.

    ``Model(device=None, *, scope=None, main_program=None, startup_program=None,
    num_threads=None)``: new, empty programs unless given (a Program built the usual way
    becomes a Model this way), a new root scope unless given (give several models one scope to
    share parameters by name). Build it with layers and ops given ``model=`` or its
    expressions; evaluate with ``Expression.value`` and ``run``; train with ``minimize``.
    """

    def __init__(
        self,
        device: Any = None,
        *,
        scope: Scope | None = None,
        main_program: Program | None = None,
        startup_program: Program | None = None,
        num_threads: int | None = None,
    ) -> None:
        for what, program in (("main_program", main_program), ("startup_program", startup_program)):
            if program is not None and not isinstance(program, Program):
                raise ProgramError(f"Model: {what} must be a Program, got {type(program).__name__}")
        if scope is not None and not isinstance(scope, Scope):
            raise ProgramError(f"Model: scope must be a Scope, got {type(scope).__name__}")
        check_setting("Model", "num_threads", num_threads, 1, MAX_THREADS, none_ok=True)
        self._set_programs(main_program, startup_program)
        self._device = None if device is None else get_device(device)
        self._ran = False  # the device is fixed once the model ran (init or run)
        self._scopes = [Scope() if scope is None else scope]
        self.num_threads = num_threads or default_num_threads()
        self.param_grad_map: dict[str, str] = {}  # parameter name -> its gradient's name
        self.prepare_count = 0  # plans built (first calls, new feed shapes, program changes)
        self.run_count = 0  # runs of the main program (a served cached value is no run)
        self.ops_run = 0  # ops those runs ran
        self._source: Model | None = None  # the model this one is a clone of
        self._init_version = -1  # the startup program's version last initialised
        self._feeds: dict[str, Any] = {}  # data name -> the array fed, its stamp, its spec
        self._feed_stamps: dict[str, int] = {}
        self._feed_specs: dict[str, tuple] = {}
        self._feed_layout = 0  # moves on whenever a fed dtype or shape changes
        self._unions: OrderedDict[tuple, Subgraph] = OrderedDict()
        self._whole: Subgraph | None = None

    def _set_programs(self, main: Program | None, startup: Program | None) -> None:
        self._main = Program() if main is None else main
        self._startup = Program() if startup is None else startup

    # -- what the model holds ---------------------------------------------------------------

    @property
    def main_program(self) -> Program:
        """The net: layers and ops append here; its blocks are the net stack."""
        return self._main

    @property
    def startup_program(self) -> Program:
        """The parameters' initialisers (run for the parameters the scope lacks)."""
        return self._startup

    def current_block(self) -> Any:
        """The top of the net stack: where layers append now (seed: ``cur_net``)."""
        return self.main_program.current_block()

    def global_block(self) -> Any:
        """The bottom of the net stack (seed: ``root_net``)."""
        return self.main_program.global_block()

    @property
    def root_scope(self) -> Scope:
        """Where parameters live; models given the same scope share them."""
        return self._scopes[0]

    @property
    def scope(self) -> Scope:
        """The top of the scope stack: runs read and write here (see ``scope_guard``)."""
        return self._scopes[-1]

    @contextlib.contextmanager
    def scope_guard(self, scope: Scope | None = None) -> Iterator[Scope]:
        """Push ``scope`` (default: a new child of the current one) for the ``with`` block;
        reads fall back to its ancestors, so the parameters stay visible."""
        if scope is not None and not isinstance(scope, Scope):
            raise ProgramError(f"scope_guard expects a Scope, got {type(scope).__name__}")
        pushed = self.scope.new_scope() if scope is None else scope
        self._scopes.append(pushed)
        try:
            yield pushed
        finally:
            self._scopes.pop()

    @property
    def device(self) -> Any:
        """The model's Device: None until set or until the model first runs (then CPU)."""
        return self._device

    @device.setter
    def device(self, device: Any) -> None:
        if not self._ran:
            self._device = get_device(device)
            return
        try:
            chosen = get_device(device)
        except DeviceError:  # unknown or unavailable here: not this device either way
            chosen = None
        if chosen != self._device:
            raise DeviceError(
                f"the model's device is {self._device}, fixed when it first ran; it cannot "
                f"become {chosen or device} (make another Model on that device, sharing this "
                "one's scope if it needs the values)"
            )

    def guard(self) -> Any:
        """``program_guard(main_program, startup_program)``: inside it, the Program API builds
        this model (the generated ops, layers given Variables)."""
        return program_guard(self.main_program, self.startup_program)

    def __repr__(self) -> str:
        ops = len(self.main_program.global_block().ops)
        params = len(self.main_program.all_parameters())
        device = "unset" if self._device is None else str(self._device)
        return f"<Model: {ops} ops, {params} parameters, device {device}{' (fixed)' * self._ran}>"

    # -- expressions ------------------------------------------------------------------------

    def expression(self, target: Any) -> Expression:
        """The Expression of a Variable of this model, a variable name, or an Expression of the
        model this one was cloned from (by name): its value after the ops built so far."""
        if isinstance(target, Expression):
            if target.model is self:
                return target
            if not self._derives_from(target.model):
                raise ProgramError(
                    f"expression {target.name()!r} belongs to another model; a model evaluates "
                    "its own expressions and those of the model it was cloned from"
                )
            target = target.name()
        block = self.main_program.global_block()
        if isinstance(target, str):
            return self.wrap(block.var(target))
        if isinstance(target, Variable):
            if target.block.program is not self.main_program:
                raise ProgramError(f"variable {target.name!r} is not in this model's program")
            return self.wrap(target)
        raise ProgramError(
            f"expected an Expression, a Variable or a variable name, got {type(target).__name__}"
        )

    def wrap(self, result: Any) -> Any:
        """A layer's result with each Variable made an Expression of this model (at the end of
        its block; a persistable variable's expression is its value in the scope)."""
        if isinstance(result, Variable):
            ops = result.block.ops
            anchor = None if result.persistable or not ops else ops[-1]
            return Expression(self, result, anchor)
        if isinstance(result, (list, tuple)):
            return type(result)(self.wrap(item) for item in result)
        return result

    def parameters(self) -> list[Expression]:
        """Expressions of every parameter (their values in the scope)."""
        return [self.wrap(p) for p in self.main_program.all_parameters()]

    def gradient(self, parameter: Any) -> Expression:
        """The Expression of ``parameter``'s gradient (after ``minimize``)."""
        name = _name_of(parameter)
        grad = self.param_grad_map.get(name)
        if grad is None:
            known = ", ".join(self.param_grad_map) or "none yet"
            raise ProgramError(
                f"the model has no gradient of {name!r}; minimize a loss depending on it "
                f"first (it has gradients of: {known})"
            )
        return self.expression(grad)

    def _derives_from(self, other: Any) -> bool:
        source = self._source
        while source is not None:
            if source is other:
                return True
            source = source._source
        return False

    # -- feeding and running ----------------------------------------------------------------

    def feed(self, feed: dict[Any, Any]) -> None:
        """Give the model data: data variables (Expressions, Variables or names) -> arrays.
        Each stays fed until fed again; arrays are kept, not copied (feed one again after
        changing it in place). Every feed counts as a change for what reads it."""
        if type(feed) is not dict and not isinstance(feed, dict):
            raise FeedError(
                f"feed must be a dict of data variables to arrays, got {type(feed).__name__}"
            )
        specs, feeds, stamps = self._feed_specs, self._feeds, self._feed_stamps
        CLOCK.now = stamp = CLOCK.now + 1  # a feed is a write (CLOCK.tick(), inlined)
        for key, value in feed.items():
            name = key if type(key) is str else _name_of(key)
            spec = specs.get(name)
            if (
                spec is None
                or type(value) is not _ndarray
                or value.dtype is not spec[0]
                or value.shape != spec[1]
            ):
                value = self._checked_feed(name, value)
                if spec != (value.dtype, value.shape):
                    specs[name] = (value.dtype, value.shape)
                    self._feed_layout += 1  # plans chosen for the old specs do not fit
            feeds[name] = value
            stamps[name] = stamp

    def _checked_feed(self, name: str, value: Any) -> Any:
        block = self.main_program.global_block()
        var = block.vars.get(name)
        if var is not None and not var.is_data:
            raise FeedError(
                f"{name!r} is not a data variable; a model is fed its data variables only "
                f"(pc.layers.data): {', '.join(n for n, v in block.vars.items() if v.is_data)}"
            )
        return feed_array(block, name, value)  # an unknown name: FeedError with suggestions

    def run(self, targets: Sequence[Any] | None = None, feed: dict[Any, Any] | None = None) -> list:
        """Evaluate ``targets`` (Expressions, Variables or names) in one run of the union of
        their subgraphs; return their values (read-only arrays), in order. A training step
        among them trains. ``targets`` None runs the whole main program (every op writing a
        persistable variable, and what they need), as ``Executor.run`` without fetches."""
        if feed:
            self.feed(feed)
        if targets is None:
            self._start()
            program = self.main_program
            if self._whole is None or not self._whole.valid(program):
                self._whole = Subgraph(self, program, None)
            self._execute(self._whole, (), self.scope)
            return []
        if isinstance(targets, (str, Variable, Expression)) or not hasattr(targets, "__iter__"):
            raise FeedError(
                f"run() takes a list of expressions, got {type(targets).__name__} (wrap a "
                "single one in a list, or call its value())"
            )
        exprs = tuple(
            t if type(t) is Expression and t.model is self else self._target(t) for t in targets
        )
        return self._evaluate(exprs) if exprs else []

    def program_for(self, targets: Sequence[Any]) -> Program:
        """A copy of the main program holding only the ops ``run(targets)`` runs (and the
        variables they use): to inspect, save or run with an Executor. Its random ops draw
        other numbers than the model's, their places in the block having changed."""
        exprs = tuple(self._target(t) for t in targets)
        program = self.main_program
        graph = self._subgraph(exprs)
        copy = program.clone()
        block, indices = copy.global_block(), _indices(program.global_block(), graph.ops)
        block.ops = [block.ops[i] for i in indices]
        used = {n for op in block.ops for n in op.input_names + op.output_names}
        used |= set(graph.fetch_names)
        for name in [n for n, v in block.vars.items() if n not in used and not v.persistable]:
            del block.vars[name]
        copy._version += 1
        return copy

    def _target(self, target: Any) -> Expression:
        if isinstance(target, TrainStep):
            if target.model is self:
                return target
            # (by name it would be its loss: evaluating, where the caller meant to train)
            raise ProgramError(
                f"{target!r} is a training step of another model; run it with its own model "
                f"(step.value()), or evaluate its loss here: model.run([step.loss])"
            )
        return self.expression(target)

    def init(self) -> None:
        """Run the initialisers of the startup program whose variables the root scope lacks
        (all of them the first time; after ``minimize``, the optimizer's state). Every run
        does this first when the startup program changed. Fixes the device."""
        if not self._ran:
            if self._device is None:
                self._device = get_device("cpu")
            self._ran = True
        startup, scope = self.startup_program, self.root_scope

        def missing(block: Any, fed: set[str], origins: Any = None) -> list[Any]:
            return [op for op in block.ops if any(n not in scope for n in op.output_names)]

        if missing(startup.global_block(), set()):
            spec = plan(startup, self._device, (), [], missing)
            PreparedProgram(spec, self._device, self.num_threads)._run({}, scope)
        self._init_version = startup.version

    def _start(self) -> None:
        """Before a run: initialise what the startup program gained since last time (the
        first time, every parameter), which also fixes the device."""
        if self._startup._version != self._init_version:
            self.init()

    def _value_of(self, expr: Expression, feed: dict | None = None) -> Any:
        """``expr.value(feed)``: its kept value while nothing it read changed, else a run.

        The hot path of the model, written out (no helper calls where nothing changed): one
        run costs it about what Executor.run's repeated-call check costs (bench_expression).
        """
        if feed:
            self.feed(feed)
        if self._startup._version != self._init_version:
            self.init()  # (_start)
        scope = self._scopes[-1]
        graph = expr._graph
        if (
            graph is None
            or graph.program._version != graph.version
            or get_registry() is not graph.registry
            or hooks.generation != graph.generation
        ):
            graph = self._graph_of(expr)
        elif expr._scope is scope and not graph.stateful:
            if CLOCK.now == expr._clock or self._fresh(expr, graph, scope):
                return _readonly(expr._value)
        # One run of its subgraph (_execute for one target).
        feeds = self._feeds
        if graph._fed_by is not feeds:  # names are never unfed: checked once per feed store
            graph.feed_from(feeds, repr(expr.name()))  # raises, naming what is missing
            graph._fed_by = feeds
        expr._value = None  # the plan may reuse its memory, if the caller let go of it too
        if graph._layout != self._feed_layout:
            graph.prepared(feeds, self._feed_layout)
        prepared = graph._last
        # The compiled runner reads its feeds by name: it can be given the model's own.
        run_feed = feeds if graph._reads_by_name else graph.feed_from(feeds, "")
        clock = CLOCK.now  # what this run reads is as of now
        value = prepared._run(run_feed, scope)[0]
        self.run_count += 1
        self.ops_run += len(prepared.steps)
        if not graph.stateful:
            expr._value, expr._clock, expr._scope = value, clock, scope
        view = value.view()
        view.setflags(write=False)  # (_readonly)
        return view

    def _evaluate(self, targets: tuple[Expression, ...]) -> list:
        """``run(targets)``: their kept values while all are fresh, else one run."""
        if len(targets) == 1:
            return [self._value_of(targets[0])]
        self._start()
        scope = self._scopes[-1]
        graph = self._union(targets)
        for t in targets:
            own = self._graph_of(t)
            if t._scope is not scope or own.stateful or not self._fresh(t, own, scope):
                return self._execute(graph, targets, scope)
        return [_readonly(t._value) for t in targets]

    def _fresh(self, expr: Expression, graph: Subgraph, scope: Scope) -> bool:
        """Whether nothing ``expr``'s kept value read was written since it was computed."""
        clock = expr._clock
        if CLOCK.now == clock:  # nothing at all was written since
            return True
        stamps = self._feed_stamps
        for name in graph.feed_names:
            if stamps.get(name, 0) > clock:
                return False
        for name in graph.persistables:
            if scope.stamp(name) > clock:
                return False
        return True

    def _graph_of(self, expr: Expression) -> Subgraph:
        """The subgraph of ``expr`` alone, rebuilt (and its kept value dropped) when stale."""
        graph = expr._graph
        program = expr.variable.block.program
        if graph is None or not graph.valid(program):
            graph = expr._graph = self._subgraph((expr,))
            expr._value, expr._clock, expr._scope = None, -1, None
        return graph

    def _union(self, targets: tuple[Expression, ...]) -> Subgraph:
        graph = self._unions.get(targets)
        if graph is None or not graph.valid(targets[0].variable.block.program):
            graph = self._subgraph(targets)
            if len(self._unions) >= MAX_UNIONS:
                self._unions.popitem(last=False)
        self._unions[targets] = graph
        return graph

    def _subgraph(self, targets: tuple[Expression, ...]) -> Subgraph:
        program = self.main_program
        block = program.global_block()
        for t in targets:
            if t.variable.block.program is not program:
                raise ProgramError(
                    f"expression {t.name()!r} is of a program that is not this model's main "
                    "program (the default programs changed since it was made?); make that "
                    "program a Model: pc.Model(main_program=..., startup_program=...)"
                )
            if t.variable.block is not block:
                raise ProgramError(
                    f"expression {t.name()!r} is a variable of block {t.variable.block.idx}; "
                    "only values of the global block can be evaluated"
                )
        return Subgraph(self, program, [t._target(block) for t in targets])

    def _execute(self, graph: Subgraph, targets: tuple[Expression, ...], scope: Scope) -> list:
        feeds = self._feeds
        try:
            feed = {name: feeds[name] for name in graph.feed_names}
        except KeyError:
            what = ", ".join(repr(t.name()) for t in targets) or "the model"
            feed = graph.feed_from(feeds, what)  # raises, naming what is missing
        for t in targets:
            t._value = None  # the plan may reuse its memory, if the caller let go of it too
        prepared = graph.prepared(feed, self._feed_layout)
        clock = CLOCK.now  # what this run reads is as of now
        values = prepared._run(feed, scope)
        self.run_count += 1
        self.ops_run += len(prepared.steps)
        results = []
        for t, value in zip(targets, values):
            own = graph if len(targets) == 1 else self._graph_of(t)
            if not own.stateful:
                t._value, t._clock, t._scope = value, clock, scope
            results.append(_readonly(value))
        return results

    # -- training ---------------------------------------------------------------------------

    def minimize(
        self,
        loss: Any,
        optimizer: Any,
        parameter_list: Sequence[Any] | None = None,
        no_grad_set: Sequence[Any] | None = None,
    ) -> TrainStep:
        """Append backward and ``optimizer``'s updates for ``loss``; fill ``param_grad_map``;
        return the training step: an Expression whose every evaluation trains once and gives
        that step's loss (``model.run([step, accuracy], feed=...)`` gives both)."""
        loss = self._target(loss)
        if isinstance(loss, TrainStep):
            raise ProgramError("minimize() takes a loss, not a training step")
        if isinstance(optimizer, type) or not callable(getattr(optimizer, "minimize", None)):
            raise ProgramError(
                "minimize() takes an optimizer: an instance such as "
                f"pc.optimizer.Adam(learning_rate=1e-3), got {shown(optimizer)}"
            )
        with self.guard():
            updates, params_grads = optimizer.minimize(
                loss.variable,
                self.startup_program,
                parameter_list=None
                if parameter_list is None
                else [_name_of(p) for p in parameter_list],
                no_grad_set=None if no_grad_set is None else [_name_of(v) for v in no_grad_set],
            )
        for param, grad in params_grads:
            self.param_grad_map[param.name] = grad.name
        return TrainStep(self, loss, updates, optimizer)

    def clone(self, for_test: bool = False) -> Model:
        """A model over a copy of the main program (``for_test``: its evaluation program) with
        this one's startup program, root scope (the same parameters) and device choice. It
        evaluates this model's expressions too, by name."""
        clone = Model(
            self._device,
            scope=self.root_scope,
            main_program=self.main_program.clone(for_test=for_test),
            startup_program=self.startup_program,
            num_threads=self.num_threads,
        )
        clone._source = self
        if not for_test:
            clone.param_grad_map = dict(self.param_grad_map)
        return clone

    # -- saving (storage.py) -----------------------------------------------------------------

    def save(self, dirname: str | os.PathLike) -> None:
        """Write the model to directory ``dirname``: its programs (``main.pb``,
        ``startup.pb``) and the values of its persistable variables (``values.npz``: the
        parameters, and the optimizer's state and step counters that have one, so training
        resumes exactly). ``pc.load_model`` reads it back; ``load`` restores the values."""
        storage.save(self.main_program, self.startup_program, self.scope, dirname)

    def load(self, dirname: str | os.PathLike) -> None:
        """Set this model's persistable values from a directory ``save`` wrote (a checkpoint):
        every parameter must be there with its declared shape and dtype, checked before any
        is set; the optimizer's state is set where the file has it."""
        storage.load_values(self.main_program, self.root_scope, dirname)


def load_model(dirname: str | os.PathLike, device: Any = None, scope: Scope | None = None) -> Model:
    """The Model a ``Model.save`` wrote to ``dirname``, its values in ``scope`` (default: a new
    one). Its expressions: ``model.expression(name)``."""
    main, startup = storage.load_programs(dirname)
    model = Model(device, scope=scope, main_program=main, startup_program=startup)
    model.load(dirname)
    return model


def _name_of(value: Any) -> str:
    if isinstance(value, Expression):
        return value.name()
    if isinstance(value, Variable):
        return value.name
    if isinstance(value, str):
        return value
    raise FeedError(f"expected an Expression, a Variable or a name, got {type(value).__name__}")


def _readonly(value: Any) -> Any:
    """A read-only view: the model keeps the array itself to answer value() again."""
    view = value.view()
    view.setflags(write=False)  # (cheaper than view.flags.writeable = False)
    return view


def _indices(block: Any, ops: list[Any]) -> list[int]:
    position = {id(op): i for i, op in enumerate(block.ops)}
    return [position[id(op)] for op in ops]
