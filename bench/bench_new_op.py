"""From nothing to an installed one-op plugin: seconds, and the lines an author writes.

1. `paddle-ops new` then a plain `pip install` of the package it wrote (build isolation on:
   pip sets up scikit-build-core and pybind11, CMake configures, one kernel file and the
   module compile), into a directory of its own. Best of three; the build environment's
   wheels come from pip's cache after the first. Also without isolation (the edit-compile
   loop's `pip install --no-build-isolation`). Target: under 15 s on 2 cores.
2. The same op (scale * cos(x), forward and gradient) as a PyTorch C++ extension built with
   `torch.utils.cpp_extension.load_inline`, in the same run (a fresh build directory each
   time, so nothing is cached). PaddlePaddle's custom-op build took 13-23 s on this class of
   machine.
3. Lines of code (not blank, not comments) in each file of the package, and which of them
   an author writes for one op with kernel and gradient.

    python bench/bench_new_op.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import optional

ROOT = Path(__file__).resolve().parent.parent
PADDLE_OPS = Path(sys.executable).parent / "paddle-ops"
AUTHORED = ("src/bench_ops/ops/cos.pbtxt", "csrc/cos.hpp", "csrc/cos_cpu.cpp", "tests/test_cos.py")

TORCH_CPP = r"""
#include <torch/extension.h>
torch::Tensor scaled_cos(torch::Tensor x, double scale) { return scale * torch::cos(x); }
torch::Tensor scaled_cos_grad(torch::Tensor x, torch::Tensor g, double scale) {
  return -scale * torch::sin(x) * g;
}
"""


def new_and_install(tmp: Path, isolation: bool) -> float:
    project, site = tmp / "bench-ops", tmp / "site"
    start = time.perf_counter()
    subprocess.run([PADDLE_OPS, "new", "bench-ops", "--dir", project], check=True,
                   capture_output=True)  # fmt: skip
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", site]
    command += [] if isolation else ["--no-build-isolation"]
    # Only the CPU kernels: `paddle-ops new` without --cuda writes no .cu file.
    subprocess.run([*command, project], check=True, capture_output=True)
    return time.perf_counter() - start


def torch_build(tmp: Path, torch_extension: object, name: str) -> float:
    start = time.perf_counter()
    torch_extension.load_inline(  # type: ignore[attr-defined]
        name=name,
        cpp_sources=[TORCH_CPP],
        functions=["scaled_cos", "scaled_cos_grad"],
        build_directory=str(tmp),
        verbose=False,
    )
    return time.perf_counter() - start


def best_of(runs: int, measure) -> float:  # type: ignore[no-untyped-def]
    """The least seconds of ``runs`` calls of measure(fresh temporary directory, run index)."""
    times = []
    for i in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            times.append(measure(Path(tmp), i))
    return min(times)


def code_lines(path: Path) -> int:
    comment = "#" if path.suffix in (".py", ".pbtxt", ".toml", ".txt") else "//"
    text = path.read_text()
    if path.suffix == ".py":  # docstrings are prose too
        text = re.sub(r'"""(.*?)"""', "", text, flags=re.DOTALL)
    return sum(
        1 for line in text.splitlines() if line.strip() and not line.strip().startswith(comment)
    )


def main() -> None:
    print(f"{'from nothing to an installed one-op plugin':48} {'seconds':>8}")
    ours = best_of(3, lambda tmp, _: new_and_install(tmp, isolation=True))
    loop = best_of(3, lambda tmp, _: new_and_install(tmp, isolation=False))
    print(f"{'paddle-ops new + pip install':48} {ours:8.1f}")
    print(f"{'paddle-ops new + pip install --no-build-isolation':48} {loop:8.1f}")
    torch_extension = optional("torch.utils.cpp_extension")
    if torch_extension is not None:
        theirs = best_of(2, lambda tmp, i: torch_build(tmp, torch_extension, f"scaled_cos_{i}"))
        print(f"{'PyTorch cpp_extension.load_inline (same op)':48} {theirs:8.1f}")
        print(f"{'ratio (ours / PyTorch)':48} {ours / theirs:8.2f}x")
    print("target: under 15 s (PaddlePaddle custom op: 13-23 s)\n")

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "bench-ops"
        subprocess.run([PADDLE_OPS, "new", "bench-ops", "--cuda", "--dir", project], check=True,
                       capture_output=True)  # fmt: skip
        files = sorted(p for p in project.rglob("*") if p.is_file())
        print(f"{'file (paddle-ops new bench-ops --cuda)':48} {'lines':>6}  written by")
        authored = 0
        for path in files:
            name = path.relative_to(project).as_posix()
            lines = code_lines(path)
            who = "the author" if name in AUTHORED else "paddle-ops new"
            authored += lines if name in AUTHORED else 0
            print(f"{name:48} {lines:6}  {who}")
        print(f"{'lines an author writes for one op (CPU, grad, tests)':48} {authored:6}")


if __name__ == "__main__":
    main()
