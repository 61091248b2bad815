"""The SDK's CUDA build recipe (paddle_core_cuda_kernels in paddle_coreCuda.cmake) on a toy
plugin project: its AUTO/ON/OFF option, a CUDA compiler that does not work, and, where a
toolkit is here, a .cu file using the SDK's CUDA header and the generator of random.hpp in
device code."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cuda_helpers import cuda_compiler

import paddle_core as pc

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake here")

CMAKELISTS = """
cmake_minimum_required(VERSION 3.18)
project(toy_ops LANGUAGES CXX)
find_package(paddle_core CONFIG REQUIRED)
paddle_core_cuda_kernels(TOY toy_cuda kernels_cuda.cu)
message(STATUS "TOY_WITH_CUDA=${TOY_WITH_CUDA} architectures=${CMAKE_CUDA_ARCHITECTURES}")
"""

# The SDK's launch helpers, and a Random built on the host and drawn from on the device.
KERNEL = r"""
#include <paddle_core/cuda.hpp>
#include <paddle_core/random.hpp>

namespace pc = paddle_core;

__global__ void draw(pc::Random rng, float* out, int64_t n) {
  for (int64_t i = pc::first_index(); i < n; i += pc::index_step())
    out[i] = rng.uniform<float>(static_cast<uint64_t>(i)) + rng.normal<float>(i);
}

void launch(const pc::Context& ctx, float* out, int64_t n) {
  const pc::Random rng(ctx, 7);
  const pc::Grid g = pc::grid_for(n);
  draw<<<g.blocks, g.threads, 0, pc::stream_of(ctx)>>>(rng, out, n);
  pc::check_launch();
}
"""


def configure(tmp_path: Path, *defines: str, env: dict[str, str] | None = None):
    (tmp_path / "CMakeLists.txt").write_text(CMAKELISTS)
    (tmp_path / "kernels_cuda.cu").write_text(KERNEL)
    command = ["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build")]
    command += [f"-Dpaddle_core_DIR={pc.get_cmake_dir()}", *(f"-D{d}" for d in defines)]
    # The recipe's own default architectures, not the ones this run's builds may be given.
    base = {k: v for k, v in os.environ.items() if k != "CUDAARCHS"}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, env={**base, **(env or {})}
    )


def test_off_builds_no_cuda(tmp_path):
    result = configure(tmp_path, "TOY_CUDA=OFF")
    assert result.returncode == 0, result.stderr
    assert "toy-ops CUDA kernels: OFF (TOY_CUDA=OFF)" in result.stdout
    assert "TOY_WITH_CUDA=OFF" in result.stdout


def test_an_unknown_value_is_refused(tmp_path):
    result = configure(tmp_path, "TOY_CUDA=maybe")
    assert result.returncode != 0
    assert "TOY_CUDA must be AUTO, ON or OFF, got 'maybe'" in result.stderr


def test_a_cuda_compiler_that_does_not_work_means_none_under_auto(tmp_path):
    result = configure(tmp_path, env={"CUDACXX": shutil.which("false") or "/bin/false"})
    assert result.returncode == 0, result.stderr
    assert "TOY_WITH_CUDA=OFF" in result.stdout


def test_on_fails_without_a_working_cuda_compiler(tmp_path):
    result = configure(
        tmp_path, "TOY_CUDA=ON", env={"CUDACXX": shutil.which("false") or "/bin/false"}
    )
    assert result.returncode != 0
    assert "TOY_CUDA=ON, but no working CUDA compiler was found" in result.stderr


@pytest.mark.skipif(cuda_compiler() is None, reason="no CUDA toolkit (nvcc) here")
def test_with_a_toolkit_auto_builds_the_cuda_kernels(tmp_path):
    # A configure that found no working compiler does not stick: the next one looks again.
    missed = configure(tmp_path, env={"CUDACXX": shutil.which("false") or "/bin/false"})
    assert "TOY_WITH_CUDA=OFF" in missed.stdout
    result = configure(tmp_path, env={"CUDACXX": ""})
    assert result.returncode == 0, result.stderr
    assert "TOY_WITH_CUDA=ON architectures=80;90" in result.stdout
    built = subprocess.run(
        ["cmake", "--build", str(tmp_path / "build"), "--target", "toy_cuda"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
