"""What DistributedOptimizer puts into the programs, and pc.distributed's bookkeeping: in this
process, with the launcher's environment set by hand (no MPI needed)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import paddle_core as pc


@pytest.fixture
def ranks(monkeypatch):
    """Pretend to be rank ``rank`` of ``size``, as Paddle's launcher says it."""

    def set_to(rank: int, size: int) -> None:
        monkeypatch.setenv("PADDLE_TRAINER_ID", str(rank))
        monkeypatch.setenv("PADDLE_TRAINERS_NUM", str(size))
        pc.distributed._rank_and_size.cache_clear()

    yield set_to
    pc.distributed._rank_and_size.cache_clear()


def build(fuse_grad_mb: float = 32.0):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [64])
        label = pc.layers.data("label", [1], dtype="int64")
        hidden = pc.layers.fc(image, 128, act="relu")  # fc.w_0 [64, 128] (32 KB), fc.b_0
        logits = pc.layers.fc(hidden, 10)  # fc.w_1 [128, 10] (5 KB), fc.b_1
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        test = main.clone(for_test=True)
        optimizer = pc.distributed.DistributedOptimizer(pc.optimizer.Adam(0.01), fuse_grad_mb)
        optimizer.minimize(loss)
    return main, startup, test, loss


def ops(program, type_):
    return [(i, op) for i, op in enumerate(program.global_block().ops) if op.type == type_]


def test_gradients_are_allreduced_in_buckets_right_after_their_last_producer(ranks):
    ranks(0, 4)
    # 32 KB buckets: backward produces the second layer's gradients first (5 KB together),
    # then fc.b_0 and fc.w_0, which fills the first bucket past 32 KB.
    main, _, _, loss = build(fuse_grad_mb=32 / 1024)
    block = main.global_block()
    allreduces = ops(main, "c_allreduce")
    buckets = [op.inputs["x"] for _, op in allreduces]
    assert buckets == [["fc.b_1@GRAD", "fc.w_1@GRAD", "fc.b_0@GRAD", "fc.w_0@GRAD"]]
    main, _, _, loss = build(fuse_grad_mb=4 / 1024)
    block = main.global_block()
    allreduces = ops(main, "c_allreduce")
    buckets = [op.inputs["x"] for _, op in allreduces]
    assert buckets == [["fc.b_1@GRAD", "fc.w_1@GRAD"], ["fc.b_0@GRAD", "fc.w_0@GRAD"]]
    for index, op in allreduces:
        assert op.outputs["out"] == op.inputs["x"]  # in place
        assert op.role == "backward" and op.attrs["reduce_type"] == "sum"
        # Right after the op that last writes one of its gradients, before any update reads one.
        writers = [
            i for i, o in enumerate(block.ops[:index]) if set(o.output_names) & set(op.inputs["x"])
        ]
        assert max(writers) == index - 1
        readers = [
            i
            for i, o in enumerate(block.ops)
            if i != index and set(o.input_names) & set(op.inputs["x"])
        ]
        assert min(readers) > index
    # The loss gradient is 1 / world size: the ranks' sum is the mean over their batches.
    (seed,) = [op for op in block.ops if op.type == "fill_like" and op.inputs["x"] == [loss.name]]
    assert seed.attrs["value"] == 0.25 and seed.role == "backward"


def test_programs_begin_with_the_check_and_startup_ends_with_the_broadcast(ranks):
    ranks(1, 2)
    main, startup, _, _ = build()
    for program in (main, startup):
        first = program.global_block().ops[0]
        assert first.type == "c_check_program"
        assert first.outputs["out"] == [pc.distributed.CHECKED]
        assert program.global_block().var(pc.distributed.CHECKED).persistable
    check = main.global_block().ops[0].attrs
    assert check == startup.global_block().ops[0].attrs  # one fingerprint of both programs
    assert len(check["fingerprint"]) == 64
    assert check["summary"][0].startswith("startup op 1: ")
    assert any(
        line.startswith("main op 1: mul(") or "main op 1:" in line for line in check["summary"]
    )
    (broadcast,) = [op for _, op in ops(startup, "c_broadcast")]
    assert startup.global_block().ops[-1] is broadcast and broadcast.attrs["root"] == 0
    initialised = {
        name
        for op in startup.global_block().ops
        if not op.type.startswith("c_")
        for name in op.output_names
    }
    assert set(broadcast.inputs["x"]) == initialised  # parameters and optimizer state
    assert {"fc.w_0", "fc.w_0@moment1", "learning_rate@float32"} <= initialised


def test_the_same_script_gives_the_same_program_on_every_rank(ranks):
    ranks(0, 2)
    first = build()[0].global_block().ops[0].attrs["fingerprint"]
    ranks(1, 2)
    assert build()[0].global_block().ops[0].attrs["fingerprint"] == first


def test_evaluation_clone_and_saved_program_carry_no_collectives(ranks, tmp_path):
    ranks(0, 2)
    main, _, test, _ = build()
    assert not [op for op in test.global_block().ops if op.type.startswith("c_")]
    assert not [
        op for op in main.clone(for_test=True).global_block().ops if op.type.startswith("c_")
    ]
    pc.save_program(main, tmp_path / "main.pb")  # an ordinary program: saved and loaded back
    loaded = pc.load_program(tmp_path / "main.pb")
    assert [op.type for op in loaded.global_block().ops] == [
        op.type for op in main.global_block().ops
    ]


def one_process(ranks):
    """Rank 0 of 1: (main program, loss, scope, executor, a batch), startup run."""
    ranks(0, 1)
    main, startup, _, loss = build()
    scope, exe = pc.Scope(), pc.Executor("cpu")
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(0)
    feed = {"image": rng.random((16, 64), np.float32), "label": rng.integers(0, 10, (16, 1))}
    return main, loss, scope, exe, feed


def test_one_process_trains_with_the_collectives_as_identities(ranks):
    main, loss, scope, exe, feed = one_process(ranks)
    losses = [float(exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0]) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]
    assert bool(scope.get(pc.distributed.CHECKED))


def test_backward_writes_the_gradients_into_their_bucket_from_the_second_step(ranks):
    """The first allreduce packs a bucket into one buffer and hands back views of it; the
    executor binds the gradients to them, so that later steps reduce that buffer where it lies,
    copying nothing."""
    main, loss, scope, exe, feed = one_process(ranks)
    (allreduce,) = [op for _, op in ops(main, "c_allreduce")]
    grads = allreduce.inputs["x"]
    plan = exe.prepare(main, feed, [loss])
    bound = []
    for _ in range(3):
        exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        bound.append([plan._runner.array(name) for name in grads])
    bucket = bound[1][0].base
    assert bucket.size == sum(g.size for g in bound[1])
    assert all(g.base is bucket for g in bound[1])
    assert all(a is b for a, b in zip(bound[1], bound[2]))  # the same views: nothing rebound


def test_one_process_needs_no_mpi(tmp_path):
    script = """
import sys
sys.modules["mpi4py"] = None  # as if it were not installed
import numpy as np, paddle_core as pc
print(pc.distributed.init())
program = pc.Program()
x = program.global_block().create_var("x", [3], "float32")
with pc.program_guard(program):
    x = pc.data("x", [3])
program.global_block().append_op("c_allreduce", {"x": [x]}, {"out": [x]}, {})
print(pc.Executor("cpu").run(program, feed={"x": np.arange(3, dtype=np.float32)}, fetch_list=[x])[0])
"""
    script = script.replace('x = program.global_block().create_var("x", [3], "float32")\n', "")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["(0, 1)", "[0. 1. 2.]"]


def test_several_processes_without_mpi_say_what_to_install(tmp_path):
    script = """
import sys
sys.modules["mpi4py"] = None
import paddle_core as pc
try:
    pc.distributed.init()
except pc.DistributedError as e:
    print(e)
"""
    env = {"PADDLE_TRAINER_ID": "0", "PADDLE_TRAINERS_NUM": "2", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert 'pip install "paddle-ops-dist[mpi]"' in result.stdout, result.stderr
    assert "mpi4py could not be imported" in result.stdout


@pytest.mark.parametrize(
    "rank, size", [("2", "2"), ("-1", "2"), ("x", "2"), ("0", "0"), ("0", None)]
)
def test_a_launcher_environment_that_makes_no_sense_is_refused(monkeypatch, rank, size):
    monkeypatch.setenv("PMI_RANK", rank)
    if size is None:
        monkeypatch.delenv("PMI_SIZE", raising=False)
    else:
        monkeypatch.setenv("PMI_SIZE", size)
    pc.distributed._rank_and_size.cache_clear()
    try:
        with pytest.raises(pc.DistributedError, match="PMI_RANK"):
            pc.distributed.world_size()
    finally:
        pc.distributed._rank_and_size.cache_clear()


@pytest.mark.parametrize("n_samples", [0, 1, 7, 12, 13])
@pytest.mark.parametrize("size", [1, 2, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_shard_deals_one_permutation_out_evenly(ranks, n_samples, size, drop_last):
    shards = []
    for r in range(size):
        ranks(r, size)
        shards.append(pc.distributed.shard(n_samples, seed=5, drop_last=drop_last))
    counts = {len(s) for s in shards}
    assert len(counts) == 1  # every rank runs as many steps
    (count,) = counts
    order = np.random.default_rng(5).permutation(n_samples)
    if drop_last:
        assert count == n_samples // size
        dealt = np.stack(shards, axis=1).reshape(-1)
        assert np.array_equal(dealt, order[: count * size])
    else:
        assert count == -(-n_samples // size)
        dealt = np.stack(shards, axis=1).reshape(-1)  # batch k of the ranks together
        assert np.array_equal(dealt[:n_samples], order)
        assert set(dealt[n_samples:]) <= set(order)  # padded with samples of the epoch


def test_bad_arguments_are_refused():
    with pytest.raises(pc.ProgramError, match="wraps a pc\\.optimizer optimizer"):
        pc.distributed.DistributedOptimizer("adam")
    with pytest.raises(pc.ProgramError, match="fuse_grad_mb must be above 0"):
        pc.distributed.DistributedOptimizer(pc.optimizer.SGD(0.1), fuse_grad_mb=0)
    with pytest.raises(pc.ProgramError, match="n_samples must be an int"):
        pc.distributed.shard(-1, seed=0)


def test_sync_batch_norm_replaces_each_training_batch_norm(ranks):
    ranks(0, 2)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [3, 4, 4])
        x = pc.layers.batch_norm(pc.layers.conv2d(image, 4, 3), act="relu")
        loss = pc.layers.mean(pc.layers.batch_norm(x))
        test = main.clone(for_test=True)
        optimizer = pc.distributed.DistributedOptimizer(pc.optimizer.SGD(0.1), sync_batch_norm=True)
        optimizer.minimize(loss)
    types = [op.type for op in main.global_block().ops]
    assert "batch_norm" not in types and "batch_norm_grad" not in types
    # Two forward allreduces per batch norm (mean, variance), their two gradients, one bucket.
    forward = [op for op in main.global_block().ops if op.role == "forward"]
    assert sum(op.type == "c_allreduce" for op in forward) == 4
    assert types.count("c_allreduce") == 4 + 4 + 1
    # The running statistics are still updated in place; the evaluation clone is untouched.
    written = {n for op in forward for n in op.output_names}
    assert {"batch_norm.mean_0", "batch_norm.variance_0", "batch_norm.mean_1"} <= written
    assert [op.type for op in test.global_block().ops].count("batch_norm") == 2


def test_overlap_starts_each_bucket_after_its_producer_and_waits_before_its_reader(ranks):
    ranks(0, 2)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [64])
        label = pc.layers.data("label", [1], dtype="int64")
        logits = pc.layers.fc(pc.layers.fc(image, 128, act="relu"), 10)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        optimizer = pc.optimizer.SGD(0.1)
        pc.distributed.DistributedOptimizer(optimizer, 4 / 1024, overlap=True).minimize(loss)
    ops_ = main.global_block().ops
    assert not [op for op in ops_ if op.type == "c_allreduce"]
    starts = [(i, op) for i, op in enumerate(ops_) if op.type == "c_allreduce_start"]
    waits = [(i, op) for i, op in enumerate(ops_) if op.type == "c_wait"]
    assert len(starts) == len(waits) == 2
    assert [op.attrs["bucket"] for _, op in starts] == [0, 1]
    waits = {tuple(op.inputs["handle"]): (i, op) for i, op in waits}
    for s, start in starts:
        w, wait = waits[tuple(start.outputs["handle"])]
        bucket = start.inputs["x"]
        assert s < w and wait.inputs["x"] == bucket
        assert wait.outputs["out"] == bucket
        assert set(ops_[s - 1].output_names) & set(bucket)  # right after its last producer
        between = ops_[s + 1 : w]
        assert not [op for op in between if set(op.input_names) & set(bucket)]
        assert set(ops_[w + 1].input_names) & set(bucket) or ops_[w + 1].type == "c_wait"
    # The first bucket (the second layer's gradients) travels while backward goes on.
    s, first = starts[0]
    w, _ = waits[tuple(first.outputs["handle"])]
    assert any(op.type.endswith("_grad") for op in ops_[s + 1 : w])


def test_a_wait_for_nothing_started_says_so():
    program = pc.Program()
    with pc.program_guard(program):
        handle = pc.data("handle", [], "int64")
        x = pc.data("x", [3])
    program.global_block().append_op("c_wait", {"handle": handle, "x": [x]}, {"out": [x]}, {})
    feed = {"handle": np.array(7), "x": np.zeros(3, np.float32)}
    with pytest.raises(pc.DistributedError, match="no collective was started with handle 7"):
        pc.Executor("cpu").run(program, feed=feed, fetch_list=[x])
