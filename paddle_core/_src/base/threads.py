"""The OpenMP settings the core gives the kernels' thread pool when a plugin's compiled module
is first imported.

GNU OpenMP, which the plugins' kernels (and the OpenBLAS and oneDNN work they hand it) run on,
reads its settings once, when the library loads: that is when the first compiled module that
needs it is imported. By default its idle threads spin for about 3 ms after each parallel
region before they sleep, so after a run they hold the cores that NumPy, PyTorch or the user's
own threads want next. The core asks for a short spin instead (SPIN_COUNT: about 0.1 ms, longer
than the gap between two ops of a run, so a run's ops still find the threads awake), unless the
user set OMP_WAIT_POLICY or GOMP_SPINCOUNT. The setting is in the environment only while the
module imports, so processes the user starts later do not inherit it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

SPIN_COUNT = "10000"  # GOMP_SPINCOUNT: spins before an idle thread sleeps (~100,000 per ms)


@contextmanager
def openmp_defaults() -> Iterator[None]:
    """While the block runs, the environment asks a GNU OpenMP that loads for a short spin."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        yield
        return
    os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT
    try:
        yield
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)
