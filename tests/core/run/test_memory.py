"""Memory planning: values whose lifetimes within a run do not overlap share memory, nothing
live at one step ever overlaps another, and results are bit for bit those of a buffer each."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import paddle_core as pc
from paddle_core._src.run.memory import Live, aligned, assign_offsets, live_intervals

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

F32 = np.float32


def check_placement(buffers: dict, offsets: dict, size: int, together=()) -> None:
    """No two buffers live at one step overlap (except pairs ``together``); all aligned."""
    joined = {frozenset(p) for p in together}
    for key, live in buffers.items():
        assert offsets[key] % 64 == 0
        assert offsets[key] + live.size <= size
    keys = list(buffers)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            x, y = buffers[a], buffers[b]
            if x.first > y.last or y.first > x.last or frozenset((a, b)) in joined:
                continue
            apart = offsets[a] + x.size <= offsets[b] or offsets[b] + y.size <= offsets[a]
            assert apart or 0 in (x.size, y.size), (a, b)


# -- the offsets, on hand-built intervals ---------------------------------------------------------


@pytest.mark.parametrize("by_size", [True, False])
def test_a_chain_needs_two_buffers(by_size):
    buffers = {k: Live(1000, k, k + 1) for k in range(6)}  # each read by the next step only
    offsets, size = assign_offsets(buffers, by_size=by_size)
    check_placement(buffers, offsets, size)
    assert size == 2 * aligned(1000)
    assert len(set(offsets.values())) == 2


@pytest.mark.parametrize("by_size", [True, False])
def test_values_live_at_one_step_never_overlap(by_size):
    rng = np.random.default_rng(0)
    for _ in range(50):
        buffers = {}
        for k in range(40):
            first = int(rng.integers(0, 30))
            buffers[k] = Live(int(rng.integers(0, 5000)), first, first + int(rng.integers(0, 8)))
        pairs = []  # in-place pairs: one value handing its memory to the next, of one size
        for k in range(0, 40, 2):
            if buffers[k].last == buffers[k + 1].first:
                buffers[k + 1] = buffers[k + 1]._replace(size=buffers[k].size)
                pairs.append((k, k + 1))
        offsets, size = assign_offsets(buffers, pairs, by_size=by_size)
        check_placement(buffers, offsets, size, pairs)
        assert all(offsets[a] == offsets[b] for a, b in pairs)
        peak = max(
            sum(aligned(b.size) for b in buffers.values() if b.first <= s <= b.last)
            - sum(aligned(buffers[a].size) for a, _ in pairs if buffers[a].last == s)
            for s in range(40)
        )
        assert peak <= size <= sum(aligned(b.size) for b in buffers.values())


def test_best_fit_takes_the_smallest_gap_that_fits():
    buffers = {
        "big": Live(4096, 0, 0),  # at 0
        "wall": Live(2048, 0, 9),  # live throughout, above big
        "small": Live(1024, 0, 0),  # above wall
        "top": Live(1024, 0, 9),  # live throughout, above small
        "late": Live(960, 1, 2),  # fits where big was and where small was: takes small's
    }
    offsets, size = assign_offsets(buffers)
    check_placement(buffers, offsets, size)
    assert [offsets[k] for k in ("big", "wall", "small", "top")] == [0, 4096, 6144, 7168]
    assert offsets["late"] == offsets["small"] and size == 8192


def test_in_step_order_frees_after_the_step_and_merges_free_neighbours():
    buffers = {
        "a": Live(1024, 0, 1),
        "b": Live(1024, 0, 1),
        "c": Live(2048, 1, 2),  # a and b are read at step 1: c may not take their memory
        "d": Live(2048, 2, 3),  # a and b, freed after step 1, merged: d fits where they were
    }
    offsets, size = assign_offsets(buffers, by_size=False)
    check_placement(buffers, offsets, size)
    assert offsets["c"] == 2048 and offsets["d"] == 0 and size == 4096


@pytest.mark.parametrize("by_size", [True, False])
def test_pairs_together_share_one_offset_and_others_stay_clear(by_size):
    buffers = {"x": Live(256, 0, 2), "y": Live(256, 2, 4), "z": Live(256, 2, 2)}
    offsets, size = assign_offsets(buffers, [("x", "y")], by_size=by_size)
    check_placement(buffers, offsets, size, [("x", "y")])
    assert offsets["x"] == offsets["y"] != offsets["z"]
    assert size == 512


@pytest.mark.parametrize("by_size", [True, False])
def test_sizes_round_up_to_the_alignment_and_empty_buffers_take_none(by_size):
    buffers = {"a": Live(1, 0, 0), "b": Live(65, 0, 0), "c": Live(0, 0, 0)}
    offsets, size = assign_offsets(buffers, by_size=by_size)
    check_placement(buffers, offsets, size)
    assert size == 64 + 128


# -- real programs --------------------------------------------------------------------------------


def run_both(prog, startup, feeds, fetch, persistables=()):
    """Run ``feeds`` in turn with and without reuse; return the plans and (fetched values,
    persistable values) of each, after checking that they are bit for bit the same."""
    results, plans = [], []
    for reuse in (True, False):
        scope, exe = pc.Scope(), pc.Executor(reuse_memory=reuse)
        if startup is not None:
            exe.run(startup, scope=scope)
        values = [exe.run(prog, feed=feed, fetch_list=fetch, scope=scope) for feed in feeds]
        results.append((values, [scope.get(n).copy() for n in persistables]))
        plans.append(exe.prepare(prog, feeds[0], fetch))
    (got, params), (want, want_params) = results
    for a, b in zip(got, want):
        for x, y in zip(a, b):
            assert x.tobytes() == y.tobytes()
    for x, y in zip(params, want_params):
        assert x.tobytes() == y.tobytes()
    check_plan(plans[0])
    return plans


def check_plan(prepared) -> None:
    """After a run: no output of a step overlaps an input of it (but a declared in-place one),
    and no two values live at one step share a byte (but such a pair)."""
    runner = prepared._runner
    steps = prepared.steps

    def span(name):
        a = runner.plan.array(runner.index[name])
        return a.ctypes.data, a.ctypes.data + a.nbytes

    def overlap(a, b):
        (s, e), (t, f) = span(a), span(b)
        return s < f and t < e

    def declared(step, x, y):
        inplace = {p.name: p.inplace for p in step.info.proto.outputs}
        ins = {slot: names for slot, _, names in step.inputs}
        return any(
            x in ins.get(inplace[slot], ()) and y in names for slot, _, names in step.outputs
        )

    for step in steps:
        for _, _, outs in step.outputs:
            for y in outs:
                for _, _, ins in step.inputs:
                    for x in ins:
                        if x != y and overlap(x, y):
                            assert declared(step, x, y), (step.op.type, x, y)
    live = live_intervals(steps)
    names = sorted(live)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (a_first, a_last), (b_first, b_last) = live[a], live[b]
            if a_first <= b_last and b_first <= a_last and overlap(a, b):
                s = max(a_first, b_first)  # where the later one is written, the earlier one read
                assert declared(steps[s], *((a, b) if b_first == s else (b, a))), (a, b)


def test_a_chain_of_math_ops_shares_memory_and_computes_the_same():
    def build():
        x = pc.data("x", [64, 256])
        y = x
        for k in range(8):
            y = pc.ops.exp(pc.ops.scale(y, scale=0.01 * (k + 1)))
            y = pc.ops.add(y, x)
        return pc.ops.mean(y)

    prog = pc.Program()
    with pc.program_guard(prog):
        out = build()
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((64, 256)).astype(F32)} for _ in range(3)]
    reused, alone = run_both(prog, None, feeds, [out])
    assert reused.memory.buffers == alone.memory.buffers == 24
    assert reused.memory.planned_bytes == alone.memory.arena_bytes == 24 * 64 * 256 * 4
    assert reused.memory.arena_bytes == 2 * 64 * 256 * 4  # a chain: two buffers take turns


def mlp(hidden=64):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [32])
        y = pc.layers.data("y", [1], dtype="int64")
        h = pc.layers.fc(x, hidden, act="relu")
        h = pc.layers.fc(h, hidden, act="relu")
        logits = pc.layers.fc(h, 10)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, y))
        pc.optimizer.SGD(0.1).minimize(loss)
    return main, startup, loss


def test_a_training_step_of_an_mlp_is_bit_for_bit_the_same_in_less_memory():
    pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
    main, startup, loss = mlp()
    rng = np.random.default_rng(2)
    feeds = [
        {
            "x": rng.standard_normal((16, 32)).astype(F32),
            "y": rng.integers(0, 10, (16, 1)).astype(np.int64),
        }
        for _ in range(4)
    ]
    params = [p.name for p in main.all_parameters()]
    reused, alone = run_both(main, startup, feeds, [loss], params)
    assert reused.memory.buffers == alone.memory.buffers > 10
    assert reused.memory.planned_bytes == alone.memory.arena_bytes
    assert reused.memory.arena_bytes < reused.memory.planned_bytes / 2


class InPlaceScale:
    """paddle-ops-math's compiled scale kernel, declared as an op whose out may be its x."""

    def paddle_core_manifest(self):
        return """
            kernel_module: "paddle_ops_math.kernels" kernel_abi: 1
            ops {
              proto {
                type: "scale_in_place" comment: "scale, updating x in place."
                inputs { name: "x" comment: "." }
                outputs { name: "out" comment: "." inplace: "x" }
                attrs { name: "scale" type: FLOAT comment: "." default { f: 1.0 } }
                attrs { name: "bias" type: FLOAT comment: "." default { f: 0.0 } }
                attrs { name: "bias_after_scale" type: BOOL comment: "." default { b: true } }
              }
              kernels { device: "cpu" dtypes: [FLOAT32] native: "scale" }
              shape_rule: "paddle_core.rules:unary"
            }
        """


def addresses(prepared, *names):
    runner = prepared._runner
    return [runner.plan.array(runner.index[n]).ctypes.data for n in names]


def test_an_output_takes_its_inputs_memory_only_where_declared_in_place():
    pc.register_plugin(InPlaceScale(), name="in_place")
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [1000])
        a = pc.ops.scale(x, scale=2.0)
        b = pc.ops.scale_in_place(a, scale=3.0)  # a is not read after: b may take its memory
        c = pc.ops.scale(b, scale=5.0)  # b is not read after, but scale is not in place
        d = pc.ops.scale_in_place(c, scale=7.0)  # declared, but c is read after it
        e = pc.ops.add(c, d)
        out = pc.ops.scale(e)
    feed = {"x": np.arange(1000, dtype=F32)}
    plan, _ = run_both(prog, None, [feed], [out])
    at = dict(zip("abcde", addresses(plan, a.name, b.name, c.name, d.name, e.name)))
    assert at["a"] == at["b"]  # in place
    assert at["c"] != at["b"]  # an output never shares memory with an input undeclared
    assert at["d"] != at["c"]  # nor with one that is still live
    (got,) = pc.Executor().run(prog, feed=feed, fetch_list=[out])
    np.testing.assert_array_equal(got, np.arange(1000) * 30 * (1 + 7))


def test_a_reshape_takes_its_inputs_memory_where_nothing_reads_it_after():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [4, 6])
        a = pc.ops.exp(x)
        b = pc.ops.reshape(a, shape=[2, 3, 4])  # a is not read after: no copy
        c = pc.ops.flatten(
            pc.ops.unsqueeze(pc.ops.squeeze(pc.ops.unsqueeze(b, axes=[0]), axes=[0]), axes=[1]),
            start_axis=0,
        )
        d = pc.ops.reshape(c, shape=[6, 4])  # c is read after it: a copy
        out = pc.ops.add(pc.ops.reshape(c, shape=[6, 4]), d)
    feed = {"x": np.arange(24, dtype=F32).reshape(4, 6) / 24}
    plan, _ = run_both(prog, None, [feed], [out])
    at = addresses(plan, a.name, b.name, c.name, d.name)
    assert at[0] == at[1] == at[2] and at[3] != at[2]
    (got,) = pc.Executor().run(prog, feed=feed, fetch_list=[out])
    np.testing.assert_allclose(got, 2 * np.exp(feed["x"]).reshape(6, 4), rtol=1e-6)


def test_the_gradient_of_an_add_takes_out_grads_memory_instead_of_copying_it():
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [8, 16])
        b = pc.data("b", [16])
        for v in (x, b):
            v.stop_gradient = False
        biased = pc.ops.add(pc.ops.exp(x), b)  # x_grad is out_grad; b_grad sums it
        residual = pc.ops.sub(biased, x)  # x_grad is out_grad; y_grad its negation
        loss = pc.ops.sum(pc.ops.mul(residual, residual))
        grads = pc.gradients([loss], [x, b])
    rng = np.random.default_rng(3)
    feed = {"x": rng.standard_normal((8, 16)).astype(F32), "b": rng.standard_normal(16).astype(F32)}
    plan, _ = run_both(prog, None, [feed], grads)
    shared = 0
    for step in plan.steps:
        if step.op.type in ("add_grad", "sub_grad"):
            out_grad, x_grad = step.op.input("out_grad")[0], step.op.output("x_grad")[0]
            shared += addresses(plan, out_grad) == addresses(plan, x_grad)
    assert shared == 2
    got_x, got_b = pc.Executor().run(prog, feed=feed, fetch_list=grads)
    e = np.exp(feed["x"].astype(np.float64))
    d = 2 * (e + feed["b"] - feed["x"])  # d loss / d residual
    np.testing.assert_allclose(got_x, d * e - d, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_b, d.sum(axis=0), rtol=1e-5, atol=1e-5)


class Keeper:
    """A Python kernel that keeps the arrays it is given."""

    def __init__(self):
        self.kept = []

    def paddle_core_manifest(self):
        return """
            ops { proto { type: "keep" comment: "c" inputs { name: "x" } outputs { name: "out" } }
                  kernels { device: "cpu" dtypes: [FLOAT32] python: "keep_cpu" }
                  shape_rule: "paddle_core.rules:unary" }"""

    def keep_cpu(self, x):
        self.kept.append(x)
        return x * 2


def test_arrays_a_python_kernel_was_given_keep_their_values_through_the_run():
    keeper = Keeper()
    pc.register_plugin(keeper, name="keeper")
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [500])
        y = pc.ops.keep(pc.ops.scale(x, scale=3.0))
        for _ in range(4):  # values that would take the kept array's memory were it free
            y = pc.ops.scale(y, scale=1.0, bias=1.0)
    feed = {"x": np.ones(500, F32)}
    (got,) = pc.Executor().run(prog, feed=feed, fetch_list=[y])
    assert got[0] == 10.0
    np.testing.assert_array_equal(keeper.kept[0], np.full(500, 3.0))


def test_an_intermediate_its_op_rewrites_goes_through_scratch_memory_of_its_own():
    prog = pc.Program()
    block = prog.global_block()
    with pc.program_guard(prog):
        x = pc.data("x", [16, 16])
        a = pc.ops.scale(x, scale=2.0)
        block.append_op("transpose", {"x": a}, {"out": a}, {"perm": [1, 0]})  # a = a.T
        out = pc.ops.add(pc.ops.scale(a), x)
    feed = {"x": np.arange(256, dtype=F32).reshape(16, 16)}
    reused, _ = run_both(prog, None, [feed], [out])
    assert reused._runner.scratch_copies == 1
    (got,) = pc.Executor().run(prog, feed=feed, fetch_list=[out])
    np.testing.assert_array_equal(got, 2 * feed["x"].T + feed["x"])


def small_cnn(optimizer=None):
    """A training step of conv -> batch norm -> relu -> max pool, twice, then fc (softmax
    cross-entropy, SGD): the convolutions and poolings ask for workspaces."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [3, 16, 16])
        label = pc.layers.data("label", [1], dtype="int64")
        h = image
        for filters in (8, 16):
            h = pc.layers.conv2d(h, filters, 3, padding=1, bias_attr=False)
            h = pc.layers.pool2d(pc.layers.batch_norm(h, act="relu"), 2, pool_stride=2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(pc.layers.fc(h, 10), label))
        (optimizer or pc.optimizer.SGD(0.1)).minimize(loss)
    return main, startup, loss


def cnn_feed(rng, batch=8):
    return {
        "image": rng.standard_normal((batch, 3, 16, 16)).astype(F32),
        "label": rng.integers(0, 10, (batch, 1)).astype(np.int64),
    }


def test_kernels_workspaces_share_the_arena_and_never_overlap_their_steps_values():
    pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
    main, startup, loss = small_cnn()
    rng = np.random.default_rng(3)
    feeds = [cnn_feed(rng) for _ in range(3)]
    params = [p.name for p in main.all_parameters()]
    reused, alone = run_both(main, startup, feeds, [loss], params)
    memory = reused.memory
    assert memory.workspaces == alone.memory.workspaces > 0  # conv2d(_grad), pool2d(_grad)
    assert 0 < memory.workspace_bytes < memory.planned_bytes
    # Each lives at its step only: together they take less than a buffer each.
    assert memory.arena_bytes < alone.memory.arena_bytes == alone.memory.planned_bytes
    runner = reused._runner
    for index, s in runner.workspaces:
        workspace = runner.plan.array(index)
        start, end = workspace.ctypes.data, workspace.ctypes.data + workspace.nbytes
        assert start % 64 == 0
        step = reused.steps[s]
        for _, _, names in (*step.inputs, *step.outputs):
            for name in names:
                a = runner.plan.array(runner.index[name])
                assert a.ctypes.data + a.nbytes <= start or end <= a.ctypes.data, (s, name)


def test_the_memory_report_adds_up_what_the_plan_holds():
    pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
    main, startup, loss = small_cnn(pc.optimizer.Momentum(0.1, 0.9))
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    feed = cnn_feed(np.random.default_rng(4))
    exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    memory = exe.prepare(main, feed, [loss]).memory
    assert memory.fetched_bytes == 4  # the loss, a float32 scalar
    # Parameters, their velocities, the learning rate, batch norm's running statistics.
    block = main.global_block()
    persistable = sum(scope.get(n).nbytes for n, v in block.vars.items() if v.persistable)
    assert memory.persistable_bytes == persistable
    assert memory.kernel_state_bytes == 0  # the kernels keep their scratch in workspaces
    assert memory.held_bytes == memory.arena_bytes + memory.fetched_bytes
    text = str(memory)
    for row in ("arena", "workspaces", "kernel state", "fetched", "persistable"):
        assert row in text
    assert f"{memory.arena_bytes / 2**20:.2f} MB" in text


def resident_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="AddressSanitizer's allocator holds freed memory in quarantine (./dev sanitize)",
)
@pytest.mark.parametrize("model", ["cnn", "transformer"])
def test_steady_state_training_steps_allocate_nothing(model):
    """After a few warm-up steps a training step needs no new memory: its values are planned
    once (the arena), kernels' scratch too (their workspaces), the fetched loss reuses its
    buffer once let go. A leak, or memory allocated and touched afresh each step, shows as
    resident growth or as page faults (4 KiB each) across 100 steps."""
    pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
    resource = pytest.importorskip("resource")  # (POSIX only)
    rng = np.random.default_rng(5)
    if model == "cnn":
        main, startup, loss = small_cnn()
        feed = cnn_feed(rng)
    else:
        main, startup = pc.Program(), pc.Program()
        with pc.program_guard(main, startup):
            h = pc.layers.data("x", [32, 64])
            h = pc.layers.transformer_encoder_layer(h, 64, 4, 128, dropout=0.1)
            loss = pc.layers.mean(pc.ops.mul(h, h))
            pc.optimizer.Adam(0.001).minimize(loss)
        feed = {"x": rng.standard_normal((4, 32, 64)).astype(F32)}
    scope, exe = pc.Scope(), pc.Executor(num_threads=2)
    exe.run(startup, scope=scope)

    def step():
        (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        return float(value)

    for _ in range(5):
        step()
    faults, resident = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, resident_bytes()
    losses = [step() for _ in range(100)]
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    growth = resident_bytes() - resident
    assert all(np.isfinite(losses))
    assert growth <= 256 * 1024, f"resident memory grew {growth / 1024:.0f} KiB over 100 steps"
    assert faults <= 100, f"{faults} page faults over 100 steps"
