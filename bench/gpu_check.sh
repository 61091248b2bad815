#!/usr/bin/env bash
# Everything CUDA in one command, on a machine with an NVIDIA GPU and a CUDA toolkit: build the
# core and every plugin with their CUDA kernels (a missing toolkit is an error here, not a CPU
# build), list the CUDA kernels, run the GPU tests, run the GPU benchmarks.
#
#   bash bench/gpu_check.sh              installs into the environment of `python3` (or $PYTHON):
#                                        activate a venv that has CuPy (cupy-cuda13x) and,
#                                        for the PyTorch comparisons, a CUDA build of PyTorch
#   bash bench/gpu_check.sh --download   where PyPI is reachable: puts the wheels a GPU machine
#                                        without network may lack into .whl/ (Python 3.12,
#                                        x86_64), which the first form then installs from;
#                                        cuDNN's among them (about 700 MB), for the convolutions,
#                                        and cuBLAS's (matmul, lstm, gru), MPI and NCCL
#                                        (the collective ops)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

if [ "${1:-}" = "--download" ]; then
  "$PY" -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    "protobuf>=7.35,<8" "pydantic>=2.7" "scipy-openblas32>=0.3.27" nvidia-cudnn-cu13 nvidia-cublas \
    "mpi4py>=4.0" "mpich>=4.2" nvidia-nccl-cu13
  du -sh .whl
  exit 0
fi

if [ -d .whl ]; then
  echo "==> installing the wheels in .whl/"
  "$PY" -m pip install --quiet --no-index --no-deps .whl/*.whl
fi
echo "==> building paddle-core and the plugins with their CUDA kernels"
export SKBUILD_CMAKE_DEFINE="PADDLE_OPS_MATH_CUDA=ON;PADDLE_OPS_NN_CUDA=ON"
"$PY" -m pip install --quiet --no-index --no-deps --no-build-isolation .
"$PY" -m pip install --quiet --no-index --no-deps --no-build-isolation \
  ./plugins/paddle_ops_math ./plugins/paddle_ops_nn ./plugins/paddle_ops_dist
nvidia-smi -L || true
"$PY" -c "import paddle_core as pc; print(pc.CUDA.unavailable_reason(0) or 'cuda:0 is usable')"
# The convolution kernels run on cuDNN where it loads, else on the plugin's own kernels (the GPU
# tests run both where it loads).
"$PY" -c "import paddle_ops_nn.cudnn as c; print(c.unavailable_reason() or 'cuDNN is loaded')"
# lstm and gru need cuBLAS (their GPU tests skip without it, saying so).
"$PY" -c "import paddle_ops_nn._kernels as k; print(k.cublas_unavailable_reason() or 'cuBLAS is loaded')"
echo "==> paddle-ops list --device cuda"
"$PY" -m paddle_core.cli list --device cuda
echo "==> GPU tests"
# From a directory outside the checkout, so that the tests import the installed packages.
(cd "$(mktemp -d)" && "$PY" -m pytest "$OLDPWD/tests" -m gpu -rs -q -p no:cacheprovider)
echo "==> bench/bench_cuda.py"
"$PY" bench/bench_cuda.py
