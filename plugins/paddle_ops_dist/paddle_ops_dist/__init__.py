"""paddle-ops-dist: collective ops for paddle-core, for data-parallel training.

The ops are declared in ``manifest.pbtxt``, their shape and grad rules live in ``rules``, and
their kernels in ``kernels``, one per op for every device: on MPI for CPU arrays (``mpi``,
through mpi4py: ``pip install "paddle-ops-dist[mpi]"``), on NCCL for CUDA ones (``nccl``,
through CuPy).
``pc.distributed`` builds data-parallel programs from them; ``paddle-ops launch -n N script.py``
runs a script on N processes.
"""
