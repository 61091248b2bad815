"""The collective ops on 2 and 4 processes (4 share this machine's cores), against NumPy."""

from __future__ import annotations

import re

import pytest
from dist_helpers import launch, succeeded


@pytest.mark.parametrize("n", [2, 4])
def test_every_collective_matches_numpy(n):
    result, _ = launch(n, "worker_collectives.py")
    counts = re.findall(r"rank (\d+): (\d+) cases ok", succeeded(result))
    assert sorted(int(rank) for rank, _ in counts) == list(range(n))
    assert len({cases for _, cases in counts}) == 1 and int(counts[0][1]) > 200


def gpus() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # (no CuPy, no driver, no device: no GPU test)
        return 0


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 2])
def test_every_collective_matches_numpy_on_gpus_through_nccl(n):
    if gpus() < n:
        pytest.skip(f"needs {n} GPU{'s' if n > 1 else ''} (NCCL runs one rank per GPU)")
    result, _ = launch(n, "worker_collectives.py", "cuda")
    counts = re.findall(r"rank (\d+): (\d+) cases ok", succeeded(result))
    assert sorted(int(rank) for rank, _ in counts) == list(range(n))
