"""A distributed job that goes wrong ends, loudly and soon, on every rank: never a hang."""

from __future__ import annotations

from dist_helpers import launch


def test_ranks_building_different_programs_are_refused_on_every_rank(tmp_path):
    result, _ = launch(2, "worker_failures.py", "differ", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    for rank in (0, 1):
        message = (tmp_path / f"rank{rank}.txt").read_text()
        assert message.startswith(
            f"rank {rank} caught DistributedError: the ranks prepared different programs: "
            "rank 1 differs from rank 0\n"
        )
        # The first differing op, as each rank has it.
        assert "rank 1: startup op 1: uniform_random() -> (out=fc.w_0:float32[64, 33])" in message
        assert "rank 0: startup op 1: uniform_random() -> (out=fc.w_0:float32[64, 32])" in message


def test_a_rank_that_raises_ends_the_job_within_seconds():
    # The others wait in the first step's allreduce, with the default timeout of minutes.
    result, seconds = launch(2, "worker_failures.py", "raise", env={"PADDLE_DIST_TIMEOUT": "300"})
    assert result.returncode != 0
    assert "RuntimeError: rank 1 fails on purpose" in result.stderr
    assert "rank 1 of 2 failed (RuntimeError); ending the job" in result.stderr
    assert "the job failed" in result.stderr
    assert "finished a step" not in result.stdout
    assert seconds < 60


def test_a_collective_waiting_past_the_timeout_raises():
    result, seconds = launch(2, "worker_failures.py", "timeout", env={"PADDLE_DIST_TIMEOUT": "3"})
    assert result.returncode != 0
    assert "DistributedError: c_allreduce on rank 0 of 2 waited more than 3 s" in result.stderr
    assert seconds < 50  # rank 1 sleeps 60 s: the timeout, not rank 1, ended the job
