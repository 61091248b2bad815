"""A runnable walk through paddle-core's pipeline, following one op (`scale`) from the entry
point that announces it to the kernel that computes it. Run it: `python docs/walkthrough.py`.
The test suite runs it too, so every step here is true of the current code.

Needs an installed plugin that provides `scale` (./dev demo installs them).
"""

import numpy as np

import paddle_core as pc
from paddle_core._src.plugins import discovery, registry

# 1. Discovery. A plugin is a pip-installed distribution with one entry point in the group
#    "paddle_core.plugins"; its value names a manifest file inside the package. The core reads
#    manifests without importing any plugin code, and caches the result in an on-disk index
#    keyed by the installed distributions.
reg = pc.get_registry()
info = reg.op("scale")
plugin = info.plugin
print(f"1. {plugin.label} announces itself with entry point {plugin.entry_point!r}")
print(f"   in group {discovery.GROUP!r}; status: {plugin.status}")

# 2. The manifest: protobuf text format, one entry per op holding its interface (OpProto),
#    its kernels and the names of its shape and grad rules. Everything below derives from it.
opdef = info.opdef
print(f"2. manifest entry for {opdef.proto.type!r}: {len(opdef.proto.attrs)} attrs,")
print(f"   kernels {[(k.device, k.python or k.native) for k in opdef.kernels]},")
print(f"   shape rule {opdef.shape_rule!r}, grad rule {opdef.grad_rule or None!r}")

# 3. The registry maps op type -> OpInfo (proto, plugin, kernels by (device, dtype)); when two
#    plugins declare one op, a documented rule picks one and says so.
print(f"3. registry: {len(reg.ops)} ops; kernels of scale: {sorted(info.kernels)}")
print(f"   conflicts: {[c.describe() for c in reg.conflicts] or 'none'}")

# 4. The generated API: one function per op, tensors positional, attrs keyword-only with the
#    declared defaults; its docstring is built from the OpProto.
print(f"4. pc.ops.scale{pc.ops.scale.__signature__}")

# 5. Validation: attrs go through a pydantic model built from the AttrProtos before any OpDesc
#    exists; a bad value raises an AttrError naming the op, the attr, expected and given.
prog = pc.Program()
with pc.program_guard(prog):
    x = pc.data("x", shape=[None, 3], dtype="float32")
    try:
        pc.ops.scale(x, scale="2")
    except pc.AttrError as e:
        print(f"5. {e}")

    # 6. Appending: attrs validated, inputs checked, the shape rule infers the output; the op
    #    lands in the current block of the current program.
    y = pc.ops.scale(x, scale=2.0, bias=0.5)
print(f"6. appended {y.op._describe()}; out shape {y.shape}")

# 7. The ProgramDesc: the protobuf form of the program, what save_program writes.
desc = prog.to_desc()
print(f"7. ProgramDesc: {len(desc.blocks[0].ops)} op, {len(desc.SerializeToString())} bytes;")
print(
    f"   loads back identical: {pc.Program.parse(prog.serialize()).serialize() == prog.serialize()}"
)

# 8. The executor prepares once (prune to the fetches, select kernels by (op, device, dtype),
#    decode attrs), then each run only moves tensors through the selected kernels.
exe = pc.Executor("cpu")
feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
(out,) = exe.run(prog, feed=feed, fetch_list=[y])
plan = exe.prepare(prog, feed, [y])
step = plan.steps[0]
print(f"8. plan: {plan.op_types}; kernel {step.kernel.ref!r} from {step.kernel.plugin.name!r}")
print(f"   out = {out.tolist()}  (prepared {exe.prepare_count} time for 2 requests)")
assert np.allclose(out, feed["x"] * 2.0 + 0.5)
assert exe.prepare_count == 1

# The registry module is the seam between discovery and everything after it.
assert registry.get_registry() is reg
