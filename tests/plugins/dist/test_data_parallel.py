"""Data parallelism: N ranks with batch B each train as one process with batch N * B (with
batch norm: under sync_batch_norm)."""

from __future__ import annotations

import pytest
from dist_helpers import json_lines, launch, succeeded

STEPS = 6


CASES = [(n, model, False) for n in (2, 4) for model in ("mlp", "cnn", "cnn_bn")]
CASES += [(2, "mlp", True), (4, "cnn_bn", True)]  # overlapped: c_allreduce_start and c_wait


@pytest.mark.parametrize("n, model, overlap", CASES)
def test_ranks_train_as_one_process_with_their_batches_together(n, model, overlap):
    args = [model, str(STEPS), "4"] + ["--overlap"] * overlap
    result, _ = launch(n, "worker_contract.py", *args)
    steps = json_lines(succeeded(result))
    assert [s["step"] for s in steps] == list(range(STEPS))
    for s in steps:
        # Float32 sums in another order: the loss within 1e-5 of the single process's, the
        # parameters (Adam steps of 1e-2) within 1e-5, and every rank's the very same bytes.
        assert s["loss_diff"] <= 1e-5 * max(1.0, abs(s["loss"])), s
        assert s["param_diff"] <= 1e-5, s
        assert s["ranks_identical"], s
