"""How long each op takes: ``with pc.profiler.profile() as prof:`` records every run.

Each run of a prepared program made in the block (in this thread) records, per op of its plan,
when the op started and ended: its kernel and the copies around it (a scratch output copied
back; an op falling back to the CPU, its copies to and from the host), timed in the compiled
run loop itself. Then::

    print(prof)                             # tables by op type and by op: calls, total, mean, share
    prof.by_type(), prof.by_op()            # the same as OpStats, largest total first
    prof.records                            # an OpRecord per op per run
    prof.export_chrome_trace("trace.json")  # for chrome://tracing or https://ui.perfetto.dev

``paddle-ops profile MODEL --feed x=x.npy`` profiles a saved model from the command line.
Runs made with no profile active pay nothing for it (the compiled loop takes no readings).
"""

from __future__ import annotations

from ._src.run.profiler import OpRecord, OpStats, Profile, profile

__all__ = ["OpRecord", "OpStats", "Profile", "profile"]
