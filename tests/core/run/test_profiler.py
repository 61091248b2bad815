"""pc.profiler: each op's time in each run, taken in the compiled loop and in the Python loop;
totals by op type and by op; the Chrome trace."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading

import numpy as np
import pytest
from test_device_memory import DevMem, DevMemPlugin, add_mul_program

import paddle_core as pc
from paddle_core._src.run.profiler import recording

X = np.arange(6, dtype=np.float32).reshape(2, 3)


def small_program():
    """Native kernels (paddle-ops-math) and a Python one (the toy plugin's), and an op
    rewriting its own input (its output goes to scratch, copied back: part of its time)."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        w = block.create_parameter("w", [3])
        block.append_op("scale", {"x": w}, {"out": w}, {"scale": 1.0})
        y = pc.ops.add(x, w)
        z = pc.ops.toy_scale(y, scale=2.0)
        out = pc.ops.relu(z)
    return prog, out


def profiled(runs: int = 3):
    prog, out = small_program()
    scope = pc.Scope()
    scope.set_var("w", np.ones(3, np.float32))
    exe = pc.Executor()
    (want,) = exe.run(prog, feed={"x": X}, fetch_list=[out], scope=scope)
    with pc.profiler.profile() as prof:
        for _ in range(runs):
            (got,) = exe.run(prog, feed={"x": X}, fetch_list=[out], scope=scope)
    np.testing.assert_array_equal(got, want)  # profiling changes no result
    return prof, exe.prepare(prog, {"x": X}, [out])


def test_a_profile_records_each_op_of_each_run():
    prof, plan = profiled(runs=3)
    assert plan.compiled
    ops = [(s.op.type, s.kernel.impl) for s in plan.steps]
    assert ops == [("scale", "native"), ("add", "native"), ("toy_scale", "python"),
                   ("relu", "native")]  # fmt: skip
    assert prof.runs == 3
    records = prof.records
    assert len(records) == 3 * len(ops)
    assert [(r.run, r.index, r.type) for r in records] == [
        (run, index, type) for run in range(3) for index, (type, _) in enumerate(ops)
    ]
    assert records[1].outputs == ("add_0.out",) and records[0].outputs == ("w",)
    assert records[1].kernel == "add" and records[1].device == "cpu"
    assert {r.thread for r in records} == {threading.get_native_id()}
    for before, after in itertools.pairwise(records):
        assert before.start_ns <= before.end_ns <= after.start_ns  # one after another
    assert all(r.duration_ns >= 0 for r in records)


def test_totals_are_the_sums_of_the_records():
    prof, _ = profiled(runs=4)
    records = prof.records
    everything = sum(r.duration_ns for r in records)
    for stats, key in ((prof.by_type(), lambda r: r.type), (prof.by_op(), lambda r: r.index)):
        assert sum(s.total_ns for s in stats) == everything
        for s in stats:
            mine = [r for r in records if key(r) == (s.type if s.index is None else s.index)]
            assert s.calls == len(mine) == 4
            assert s.total_ns == sum(r.duration_ns for r in mine)
            assert s.mean_ns == s.total_ns / s.calls
        assert [s.total_ns for s in stats] == sorted((s.total_ns for s in stats), reverse=True)
        assert sum(s.share for s in stats) == pytest.approx(1.0)
    (add,) = [s for s in prof.by_op() if s.type == "add"]
    assert (add.index, add.outputs) == (1, ("add_0.out",))
    assert {s.type for s in prof.by_type()} == {"scale", "add", "toy_scale", "relu"}
    assert all(s.index is None and s.outputs == () for s in prof.by_type())


def test_the_table_lists_every_op_largest_total_first():
    prof, _ = profiled()
    table = prof.table()
    assert table.startswith("by op type: 3 runs, ")
    assert "calls" in table and "total ms" in table and "mean µs" in table and "share %" in table
    _, head, rule, *rows = table.splitlines()
    assert head.split()[:2] == ["op", "type"] and set(rule.strip()) == {"─"}
    rows = [line.split()[0] for line in rows]
    assert rows == [s.type for s in prof.by_type()]
    by_op = prof.table("op", limit=2)
    assert "the first 2 of 4" in by_op.splitlines()[0]
    assert "#1" in str(prof) and "add_0.out" in str(prof)
    with pytest.raises(pc.ConfigError, match="by must be 'type' or 'op'"):
        prof.table("kernel")


def test_the_chrome_trace_has_an_event_per_op_run(tmp_path):
    prof, _ = profiled(runs=2)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    for e in events:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["ph"] == "X" and e["ts"] >= 0 and e["dur"] >= 0
    ops = [e for e in events if e["cat"] == "op"]
    runs = [e for e in events if e["cat"] == "run"]
    assert len(ops) == len(prof.records) == 8 and len(runs) == 2
    for e, r in zip(ops, prof.records):
        assert e["name"] == r.type
        assert e["args"] == {"run": r.run, "op": r.index, "outputs": list(r.outputs),
                             "kernel": r.kernel, "device": r.device}  # fmt: skip
        assert e["dur"] == pytest.approx(r.duration_ns / 1e3)
        run = runs[r.run]  # each op lies within its run
        assert run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-3


def test_runs_outside_a_profile_record_nothing():
    prog, out = small_program()
    scope = pc.Scope()
    scope.set_var("w", np.ones(3, np.float32))
    exe = pc.Executor()
    exe.run(prog, feed={"x": X}, fetch_list=[out], scope=scope)
    with pc.profiler.profile() as prof:
        pass
    exe.run(prog, feed={"x": X}, fetch_list=[out], scope=scope)  # after: not recorded
    assert recording.get() is None
    assert prof.runs == 0 and prof.records == [] and prof.by_type() == []
    assert prof.chrome_trace()["traceEvents"] == []
    other = []  # a run in another thread is that thread's own
    with pc.profiler.profile() as prof:
        worker = threading.Thread(
            target=lambda: other.append(exe.run(prog, feed={"x": X}, fetch_list=[out], scope=scope))
        )
        worker.start()
        worker.join()
    assert other and prof.runs == 0
    with prof, pytest.raises(pc.ConfigError, match="recording already"):
        prof.__enter__()


def test_the_blocks_of_control_flow_ops_are_part_of_their_op():
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [3], "float32")
        n = pc.data("n", [1], "int64")
        i = pc.ops.fill_constant(shape=[1], dtype="int64", value=0)
        s = pc.ops.fill_constant(shape=[3], dtype="float32", value=0.0)
        one = pc.ops.fill_constant(shape=[1], dtype="int64", value=1)
        _, s_out = pc.layers.while_loop(
            lambda i, s: pc.ops.less(i, n),
            lambda i, s: (pc.ops.add(i, one), pc.ops.add(s, x)),
            [i, s],
        )
        big = pc.ops.greater(
            pc.ops.sum(s_out), pc.ops.fill_constant(shape=[], dtype="float32", value=10.0)
        )
        y = pc.layers.cond(big, lambda: pc.ops.scale(s_out, scale=0.5), lambda: s_out)
    feed = {"x": np.array([1, 2, 3], np.float32), "n": np.array([4])}
    exe = pc.Executor()
    with pc.profiler.profile() as prof:
        for _ in range(2):
            (got,) = exe.run(main, feed=feed, fetch_list=[y])
    np.testing.assert_array_equal(got, [2, 4, 6])
    plan = exe.prepare(main, feed, [y])
    types = [s.op.type for s in plan.steps]
    assert {"while_block", "cond_block"} <= set(types)
    assert [r.type for r in prof.records] == types * 2  # the blocks' ops are not apart


@pytest.mark.usefixtures("fresh_warnings")
def test_plans_run_by_the_python_loop_time_every_op():
    """A device plan with an op falling back to the CPU runs in the Python loop: each op is
    timed there, its copies to and from the host included."""
    pc.register_plugin(DevMemPlugin(), name="devmem")
    try:
        prog = pc.Program()
        with pc.program_guard(prog):
            x = pc.data("x", [None, 3])
            out = pc.ops.scale(pc.ops.add(x, x), scale=0.5)  # scale: no devmem kernel
        exe = pc.Executor("devmem")
        with pytest.warns(RuntimeWarning, match="no devmem kernel"):
            exe.run(prog, feed={"x": X}, fetch_list=[out])
        assert not exe.prepare(prog, {"x": X}, [out]).compiled
        with pc.profiler.profile() as prof:
            for _ in range(2):
                (got,) = exe.run(prog, feed={"x": X}, fetch_list=[out])
    finally:
        pc.unregister_plugin("devmem")
    np.testing.assert_array_equal(got, X)
    assert [(r.run, r.type, r.device) for r in prof.records] == [
        (0, "add", "devmem:0"), (0, "scale", "cpu"), (1, "add", "devmem:0"), (1, "scale", "cpu")
    ]  # fmt: skip
    assert all(r.duration_ns >= 0 for r in prof.records)


def test_a_failing_kernel_is_named_by_its_op_after_copy_steps():
    """The runtime counts ops, not its steps: an op writing its own input (its output goes to
    scratch, and a copy step follows it) does not shift which op a failure names."""
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 3])
        index = pc.data("index", [2], "int64")
        w = block.create_parameter("w", [3])
        block.append_op("add", {"x": w, "y": w}, {"out": w})
        out = pc.ops.gather(pc.ops.add(x, w), index)
    scope = pc.Scope()
    scope.set_var("w", np.ones(3, np.float32))
    exe = pc.Executor()
    feed = {"x": X, "index": np.array([0, 7])}
    assert exe.prepare(prog, feed, [out])._runner.scratch_copies == 1
    for profile in (False, True):
        with pc.profiler.profile() if profile else contextlib.nullcontext():
            with pytest.raises(pc.KernelRuntimeError, match=r"op 'gather'.*index 7") as info:
                exe.run(prog, feed=feed, fetch_list=[out], scope=scope)
        assert info.value.op == "gather"


def test_a_compiled_device_plan_waits_for_the_device_around_each_op(monkeypatch):
    """A device's queued work is not the next op's time: a profiled run of a compiled device
    plan synchronizes before its first op and after each one, and an unprofiled run never."""
    waits = []
    monkeypatch.setattr(DevMem, "synchronize", lambda self: waits.append(1))
    pc.register_plugin(DevMemPlugin(), name="devmem")
    try:
        prog, out = add_mul_program()
        exe = pc.Executor("devmem")
        feed = {"x": X, "y": np.array([1, 2, 3], np.float32)}
        exe.run(prog, feed=feed, fetch_list=[out])
        assert exe.prepare(prog, feed, [out]).compiled and waits == []
        with pc.profiler.profile() as prof:
            (got,) = exe.run(prog, feed=feed, fetch_list=[out])
    finally:
        pc.unregister_plugin("devmem")
    np.testing.assert_array_equal(got, (X + feed["y"]) * feed["y"])
    assert [(r.type, r.device) for r in prof.records] == [("add", "devmem:0"), ("mul", "devmem:0")]
    assert len(waits) == 1 + 2
