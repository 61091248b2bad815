"""paddle-ops-math's threads: one OpenMP pool for its kernels, its OpenBLAS and NumPy's
OpenBLAS, and programs that keep running in a child process made by fork().

Each case runs in a fresh interpreter: what is checked is process-wide state (which pool a
library runs on, what fork leaves behind), and a hang must end in a timeout, not a stuck
suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")

# Runs a program whose kernels use two threads (a parallel elementwise op and a GEMM), so the
# OpenMP pool has threads; then whatever the case adds.
PRELUDE = """
import ctypes, os, sys, threading
import numpy as np
import paddle_core as pc

def build():
    prog = pc.Program()
    with pc.program_guard(prog):
        x, a = pc.data("x", [1 << 21]), pc.data("a", [256, 256])
        fetch = [pc.ops.scale(x, scale=2.0), pc.ops.matmul(a, a)]
    return prog, fetch

prog, fetch = build()
exe = pc.Executor("cpu", num_threads=2)
rng = np.random.default_rng(0)
feed = {"x": rng.standard_normal(1 << 21).astype(np.float32),
        "a": rng.standard_normal((256, 256)).astype(np.float32)}
want = [feed["x"] * 2, feed["a"].astype(np.float64) @ feed["a"]]

def check(got):
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-3)

check(exe.run(prog, feed=feed, fetch_list=fetch))
b = rng.standard_normal((300, 300))
"""


def run_case(body: str, env: dict[str, str] | None = None, timeout: float = 60) -> str:
    script = PRELUDE + textwrap.dedent(body)
    process = subprocess.Popen(
        [sys.executable, "-P", "-c", script],  # -P: the installed packages, not the checkout
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,  # a hung case's forked child goes with it
    )
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        pytest.fail(f"the case hung (no exit in {timeout} s); its output: {out!r}")
    assert process.returncode == 0, out
    return out


def numpy_uses_scipy_openblas() -> bool:
    config = np.show_config(mode="dicts")
    return config["Build Dependencies"]["blas"]["name"].startswith("scipy-openblas")


def test_a_forked_child_runs_programs_prepared_before_and_after_the_fork():
    out = run_case(
        """
        pid = os.fork()
        if pid == 0:
            try:
                check(exe.run(prog, feed=feed, fetch_list=fetch))  # prepared in the parent
                prog2, fetch2 = build()
                check(pc.Executor("cpu", num_threads=2).run(prog2, feed=feed, fetch_list=fetch2))
            except BaseException as e:
                print(repr(e), flush=True)
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        check(exe.run(prog, feed=feed, fetch_list=fetch))  # the parent keeps its threads
        """
    )
    assert "child exit 0" in out, out


@pytest.mark.skipif(not numpy_uses_scipy_openblas(), reason="NumPy is not built on OpenBLAS")
def test_numpys_openblas_runs_on_the_kernels_pool():
    out = run_case(
        """
        from paddle_ops_math import kernels
        numpy_blas = [p for p in kernels.shared_blas if "scipy_openblas64_" in p]
        assert len(numpy_blas) == 1, kernels.shared_blas
        # OpenBLAS keeps the callback in this exported variable: set means its jobs are ours.
        callback = ctypes.c_void_p.in_dll(ctypes.CDLL(numpy_blas[0]), "openblas_threads_callback_")
        assert callback.value, "NumPy's OpenBLAS has no threads callback"
        np.testing.assert_allclose(b @ b, np.einsum("ij,jk->ik", b, b), atol=1e-9)
        print("shared")
        """
    )
    assert "shared" in out


@pytest.mark.skipif(not numpy_uses_scipy_openblas(), reason="NumPy is not built on OpenBLAS")
def test_numpys_openblas_keeps_its_own_threads_when_asked():
    out = run_case(
        """
        from paddle_ops_math import kernels
        assert kernels.shared_blas == [], kernels.shared_blas
        import glob
        lib = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs",
                                     "libscipy_openblas64_*"))[0]
        callback = ctypes.c_void_p.in_dll(ctypes.CDLL(lib), "openblas_threads_callback_")
        assert not callback.value
        print("own threads")
        """,
        env={"PADDLE_OPS_MATH_SHARE_BLAS": "0"},
    )
    assert "own threads" in out


def test_numpy_gemm_in_a_forked_child_after_the_parent_used_the_pool():
    out = run_case(
        """
        b @ b  # NumPy's GEMM, on the kernels' OpenMP threads
        pid = os.fork()
        if pid == 0:
            ok = np.allclose(b @ b, np.einsum("ij,jk->ik", b, b), atol=1e-9)
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        """
    )
    assert "child exit 0" in out, out


def test_numpy_gemms_and_runs_from_several_threads_at_once():
    out = run_case(
        """
        errors = []

        def numpy_work():
            try:
                for _ in range(20):
                    np.testing.assert_allclose(b @ b, np.einsum("ij,jk->ik", b, b), atol=1e-9)
            except BaseException as e:
                errors.append(e)

        def our_work():
            try:
                own = pc.Executor("cpu", num_threads=2)
                for _ in range(20):
                    check(own.run(prog, feed=feed, fetch_list=fetch))
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=f) for f in (numpy_work, numpy_work, our_work)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        print("ok")
        """
    )
    assert "ok" in out
