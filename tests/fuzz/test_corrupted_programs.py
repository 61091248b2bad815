"""Saved programs with bytes flipped or cut off: loading gives a program or the core's typed
error, and a program that loads plans and runs or raises a typed error, never anything else."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")


# A flipped byte in an op's recorded provider names another distribution or version.
@pytest.mark.filterwarnings("ignore::paddle_core.ProviderMismatchWarning")
def test_corrupted_program_files_give_typed_errors(tmp_path):
    prog = pc.Program()
    with pc.program_guard(prog):
        x = pc.data("x", [None, 4])
        pc.ops.sum(pc.layers.fc(x, 8, act="relu"))
    path = tmp_path / "program.pb"
    pc.save_program(prog, str(path))
    good = path.read_bytes()
    rng = np.random.default_rng(0)
    outcomes = {"loaded": 0, "typed": 0}
    for _ in range(2000):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 6))):
            data[int(rng.integers(len(data)))] = int(rng.integers(256))
        if rng.random() < 0.2:
            data = data[: int(rng.integers(len(data)))]
        path.write_bytes(bytes(data))
        try:
            loaded = pc.load_program(str(path))
        except pc.PaddleCoreError:
            outcomes["typed"] += 1
            continue
        outcomes["loaded"] += 1
        ops = loaded.global_block().ops
        if not ops or not ops[-1].output_names or "x" not in loaded.global_block().vars:
            continue
        try:
            pc.Executor().run(
                loaded,
                feed={"x": np.ones((2, 4), np.float32)},
                fetch_list=[ops[-1].output_names[0]],
                scope=pc.Scope(),
            )
        except pc.PaddleCoreError:
            pass
    assert outcomes["typed"] > 1000 and outcomes["loaded"] > 10, outcomes
