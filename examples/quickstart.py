"""The README's quick start: build a one-op program, run it, save and reload it."""

import tempfile
from pathlib import Path

import numpy as np

import paddle_core as pc

prog = pc.Program()
with pc.program_guard(prog):
    x = pc.data("x", shape=[None, 4], dtype="float32")
    y = pc.ops.scale(x, scale=2.0, bias=1.0)

exe = pc.Executor("cpu")
(out,) = exe.run(prog, feed={"x": np.ones((2, 4), np.float32)}, fetch_list=[y])
print(prog)
print("out =", out.tolist())
assert out.tolist() == [[3.0] * 4] * 2

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "prog.pb"
    pc.save_program(prog, path)
    prog2 = pc.load_program(path)
assert prog2.serialize() == prog.serialize()
print(f"saved and reloaded {path.name}: identical ({len(prog.serialize())} bytes)")
