"""paddle-ops-dist: collective ops for paddle-core, for data-parallel training.

The ops are declared in ``manifest.pbtxt``, their shape and grad rules live in ``rules``, and
their CPU kernels in ``mpi`` (MPI through mpi4py: ``pip install "paddle-ops-dist[mpi]"``).
``pc.distributed`` builds data-parallel programs from them; ``paddle-ops launch -n N script.py``
runs a script on N processes.
"""
