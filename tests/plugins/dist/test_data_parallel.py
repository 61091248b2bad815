"""Data parallelism: N ranks with batch B each train as one process with batch N * B (with
batch norm: under sync_batch_norm)."""

from __future__ import annotations

import pytest
from dist_helpers import json_lines, launch, succeeded

STEPS = 6


@pytest.mark.parametrize("model", ["mlp", "cnn", "cnn_bn"])
@pytest.mark.parametrize("n", [2, 4])
def test_ranks_train_as_one_process_with_their_batches_together(n, model):
    result, _ = launch(n, "worker_contract.py", model, str(STEPS), "4")
    steps = json_lines(succeeded(result))
    assert [s["step"] for s in steps] == list(range(STEPS))
    for s in steps:
        # Float32 sums in another order: the loss within 1e-5 of the single process's, the
        # parameters (Adam steps of 1e-2) within 1e-5, and every rank's the very same bytes.
        assert s["loss_diff"] <= 1e-5 * max(1.0, abs(s["loss"])), s
        assert s["param_diff"] <= 1e-5, s
        assert s["ranks_identical"], s


@pytest.mark.parametrize("n, model", [(2, "mlp"), (4, "cnn_bn")])
def test_overlapped_allreduces_train_the_same(n, model):
    result, _ = launch(n, "worker_contract.py", model, str(STEPS), "4", "--overlap")
    steps = json_lines(succeeded(result))
    assert [s["step"] for s in steps] == list(range(STEPS))
    for s in steps:
        assert s["loss_diff"] <= 1e-5 * max(1.0, abs(s["loss"])), s
        assert s["param_diff"] <= 1e-5, s
        assert s["ranks_identical"], s
