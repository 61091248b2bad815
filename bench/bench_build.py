"""Build times of compiled plugins: a clean build, and an incremental rebuild of one kernel file.

1. Clean: `pip wheel` of paddle-ops-math into a fresh build directory (configure, compile all
   kernel files and the pybind11 module, link).
2. Incremental: touch each kernel file in that build tree and rebuild only its object (the
   edit-compile loop of a kernel author). Kernel files include only the light SDK header,
   never pybind11. Target: under 5 s for every one.
The example package examples/paddle_ops_example (one kernel file, csrc/) is measured the same way
(its kernels compile into the module target `_C` directly: the rebuild includes the link).
For comparison: PaddlePaddle custom ops take 13-23 s to build one file; PyTorch's
cpp_extension.load 22-29 s.

    python bench/bench_build.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def clean_build(project: Path, build_dir: Path, wheels: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "-w", str(wheels), "-C", f"build-dir={build_dir}", str(project)],
        check=True,
    )  # fmt: skip
    return time.perf_counter() - start


def incremental(build_dir: Path, source: Path, target: str) -> float:
    """Seconds to rebuild the object of ``source`` after touching it (best of three)."""
    times = []
    for _ in range(3):
        os.utime(source)
        start = time.perf_counter()
        subprocess.run(["cmake", "--build", str(build_dir), "--target", target], check=True,
                       capture_output=True)  # fmt: skip
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(f"{'package / kernel file':34} {'seconds':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for project, sources, target in (
            (ROOT / "plugins" / "paddle_ops_math", "src", "kernels"),
            (ROOT / "examples" / "paddle_ops_example", "csrc", "_C"),
        ):
            build = Path(tmp) / f"build-{project.name}"
            clean = clean_build(project, build, Path(tmp) / "wheels")
            print(f"{project.name + ' (clean build)':34} {clean:8.1f}")
            files = sorted((project / sources).glob("*_cpu.cpp")) + sorted(
                (project / sources).glob("*_avx2.cpp")
            )
            rebuilt = {s.name: incremental(build, s, target) for s in files}
            for name, seconds in rebuilt.items():
                print(f"  {name:32} {seconds:8.2f}")
            slowest = max(rebuilt, key=rebuilt.get)
            print(f"  slowest one-file rebuild: {slowest} {rebuilt[slowest]:.2f} s")
    print("\ntarget: every kernel file rebuilt in under 5 s")


if __name__ == "__main__":
    main()
