"""Every public entry point called with hostile values (hostile.py: None, NaN, huge and negative
numbers, NUL bytes, 100,000-character strings, objects whose every method raises, sequences
claiming 2**62 items, arrays of strings, objects, float16, complex, strided or big-endian
memory...): each call gives a result or one of the core's errors, never a raw Python exception
or a hang. What a result means is checked where it matters (a program that accepted a value
still saves, loads and runs, or refuses with a typed error)."""

from __future__ import annotations

import numpy as np
import pytest
from hostile import sweep, values

import paddle_core as pc

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")


def program_with_x():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [2, 3])
        y = pc.ops.scale(x, scale=2.0)
    return prog, x, y


def assert_clean(found: list[str]) -> None:
    assert found == [], "\n".join(found)


# -- building programs --------------------------------------------------------------------------


def test_every_generated_op_with_hostile_inputs_and_attrs():
    """Each op of every plugin: each input slot, each attr and the name given each value."""
    registry = pc.get_registry()
    found = []
    for op in registry.op_types():
        info = registry.op(op)
        prog, x, _ = program_with_x()
        good = {s.name: ([x] if s.duplicable else x) for s in info.proto.inputs}
        with pc.program_guard(prog):
            found += sweep_op(getattr(pc.ops, op), op, info, good)
    assert_clean(found)


def sweep_op(fn, op: str, info, good: dict) -> list[str]:
    """``fn`` (a generated op) with each input, each attr and its name given each value."""
    found = []
    for slot in info.proto.inputs:
        found += [
            f"{op}({slot.name}=...) {f}" for f in sweep(lambda v, s=slot.name: fn(**{**good, s: v}))
        ]
    for attr in info.proto.attrs:
        found += [
            f"{op}({attr.name}=...) {f}" for f in sweep(lambda v, a=attr.name: fn(**good, **{a: v}))
        ]
    return found + [f"{op}(name=...) {f}" for f in sweep(lambda v: fn(**good, name=v))]


def hashable() -> list:
    """The hostile values that can be dict keys."""
    keys = []
    for value in values():
        try:
            hash(value)
        except Exception:
            continue
        keys.append(value)
    return keys


def test_append_op_with_hostile_arguments():
    prog, x, _ = program_with_x()
    block = prog.global_block()
    found = sweep(lambda v: block.append_op(v, {"x": x}))
    found += sweep(lambda v: block.append_op("scale", v))
    found += sweep(lambda v: block.append_op("scale", {"x": v}))
    found += sweep(lambda v: block.append_op("scale", {v: x}), hashable())
    found += sweep(lambda v: block.append_op("scale", {"x": x}, outputs=v))
    found += sweep(lambda v: block.append_op("scale", {"x": x}, outputs={"out": v}))
    found += sweep(lambda v: block.append_op("scale", {"x": x}, attrs=v))
    found += sweep(lambda v: block.append_op("scale", {"x": x}, attrs={"scale": v}))
    found += sweep(lambda v: block.append_op("scale", {"x": x}, attrs={v: 1.0}), hashable())
    assert_clean(found)


def test_set_attr_with_hostile_names_and_values():
    prog, _, y = program_with_x()
    op = y.op
    found = sweep(lambda v: op.set_attr(v, 1.0))
    found += sweep(lambda v: op.set_attr("scale", v))
    found += sweep(lambda v: op.set_attr("bias_after_scale", v))
    assert_clean(found)
    # What set_attr accepted, the program still runs with (or refuses, typed).
    try:
        pc.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y])
    except pc.PaddleCoreError:
        pass


@pytest.mark.parametrize("method", ["create_var", "create_parameter"])
def test_create_var_and_create_parameter_with_hostile_arguments(method):
    prog = pc.Program()
    create = getattr(prog.global_block(), method)
    count = iter(range(10**6))

    def fresh() -> str:
        return f"v{next(count)}"

    found = sweep(lambda v: create(v, [2, 3]))
    found += sweep(lambda v: create(fresh(), v))
    found += sweep(lambda v: create(fresh(), [2, 3], v))
    found += sweep(lambda v: create(fresh(), [2, v]))
    keyword = "persistable" if method == "create_var" else "initializer"
    found += sweep(lambda v: create(fresh(), [2, 3], **{keyword: v}))
    assert_clean(found)


def test_data_with_hostile_arguments():
    prog = pc.Program()
    count = iter(range(10**6))
    with pc.program_guard(prog):
        found = sweep(lambda v: pc.data(v, [2, 3]))
        found += sweep(lambda v: pc.data(f"d{next(count)}", v))
        found += sweep(lambda v: pc.data(f"d{next(count)}", [None, v]))
        found += sweep(lambda v: pc.data(f"d{next(count)}", [2], v))
    assert_clean(found)


# -- running them -------------------------------------------------------------------------------


def test_executor_with_hostile_settings():
    found = sweep(lambda v: pc.Executor(v))
    for keyword in ("num_threads", "cache_size", "reuse_memory"):
        found += sweep(lambda v, k=keyword: pc.Executor(**{k: v}))
    assert_clean(found)


def test_run_with_hostile_programs_feeds_fetches_and_scopes():
    prog, _, y = program_with_x()
    exe = pc.Executor()
    good = {"x": np.ones((2, 3), np.float32)}
    found = sweep(lambda v: exe.run(v, feed=good, fetch_list=[y]))
    found += sweep(lambda v: exe.run(prog, feed=v, fetch_list=[y]))
    found += sweep(lambda v: exe.run(prog, feed={"x": v}, fetch_list=[y]))
    found += sweep(lambda v: exe.run(prog, feed={v: good["x"]}, fetch_list=[y]), hashable())
    found += sweep(lambda v: exe.run(prog, feed=good, fetch_list=v))
    found += sweep(lambda v: exe.run(prog, feed=good, fetch_list=[v]))
    found += sweep(lambda v: exe.run(prog, feed=good, fetch_list=[y], scope=v))
    found += sweep(lambda v: exe.run(prog, feed=good, fetch_list=[y], return_numpy=v))
    found += sweep(lambda v: exe.prepare(prog, v, [y]))
    assert_clean(found)
    # Whatever came before, the executor still gives the right answer.
    (got,) = exe.run(prog, feed=good, fetch_list=[y])
    np.testing.assert_array_equal(got, np.full((2, 3), 2.0, np.float32))


def test_scope_with_hostile_names_and_values():
    prog = pc.Program()
    with pc.program_guard(prog):
        w = prog.global_block().create_var("w", [3], persistable=True)
        y = pc.ops.scale(w, scale=2.0)

    def run_with(value):  # a scope value is checked when a program reads it
        scope = pc.Scope()
        scope.set_var("w", value)
        pc.Executor().run(prog, fetch_list=[y], scope=scope)

    found = sweep(lambda v: pc.Scope().set_var(v, np.ones(3, np.float32)))
    found += sweep(lambda v: pc.Scope().find_var(v))
    found += sweep(run_with)
    assert_clean(found)


def test_load_program_with_hostile_paths_and_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the relative paths among the values land here
    found = sweep(pc.load_program)
    junk = tmp_path / "junk.pb"
    for content in (b"", b"\x00" * 10, b"\xff" * 1000, b"\x0a\xff\xff\xff\xff\x0f", b"x" * 10**6):
        junk.write_bytes(content)
        found += sweep(pc.load_program, [str(junk), junk])
    found += sweep(pc.load_program, [str(tmp_path), "/dev/null", "/nonexistent/p.pb"])
    prog, _, _ = program_with_x()
    found += sweep(lambda v: pc.save_program(prog, v))
    found += sweep(lambda v: pc.save_program(v, str(tmp_path / "saved.pb")))
    assert_clean(found)


def test_load_program_refuses_what_is_not_a_regular_file_instead_of_reading_forever():
    for path in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(pc.ProgramError, match="not a regular file"):
            pc.load_program(path)
