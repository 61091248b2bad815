"""A runnable walk through paddle-core's pipeline, following one op (`scale`) from the entry
point that announces it to the kernel that computes it. The steps are those of
docs/architecture.md, each printed with the module that owns it. Run it:
`python docs/walkthrough.py`. The test suite runs it too, so every step here is true of the
current code.

Needs an installed plugin that provides `scale` (./dev demo installs them).
"""

import numpy as np

import paddle_core as pc
from paddle_core._src.plugins import discovery, index_cache, registry


def step(number, owner, text):
    print(f"{number:>2}. [{owner}] {text}")


# 1-4. Entry point, discovery, the index, settings. A plugin is a pip-installed distribution
#      with one entry point in the group "paddle_core.plugins" naming a manifest inside the
#      package. The core reads manifests without importing plugin code, caches the result in
#      an on-disk index, and applies the user's settings.
reg = pc.get_registry()
info = reg.op("scale")
plugin = info.plugin
step(1, "the plugin's pyproject.toml", f"{plugin.label}: entry point {plugin.entry_point!r}")
step(2, "plugins/discovery.py", f"group {discovery.GROUP!r}; status: {plugin.status}")
opdef = info.opdef
print(f"    manifest entry: {len(opdef.proto.attrs)} attrs, shape rule {opdef.shape_rule!r},")
print(f"    kernels {[(k.device, k.python or k.native) for k in opdef.kernels]}")
cache = reg.settings.cache_dir
where = index_cache.index_file(cache) if cache else "off (PADDLE_CORE_NO_CACHE)"
step(3, "plugins/index_cache.py", f"the index: {where}")
step(4, "plugins/config.py", f"settings from {reg.settings.config_file or 'the environment'}")

# 5. The registry: op type -> OpInfo (the chosen plugin, kernels by (device, dtype)); when
#    two plugins declare one op, a documented rule picks one and says so.
step(5, "plugins/registry.py", f"{len(reg.ops)} ops; kernels of scale: {sorted(info.kernels)}")
print(f"    conflicts: {[c.describe() for c in reg.conflicts] or 'none'}")
assert registry.get_registry() is reg

# 6. The generated API: one function per op, tensors positional, attrs keyword-only with the
#    declared defaults; its docstring is built from the OpProto.
step(6, "ops.py", f"pc.ops.scale{pc.ops.scale.__signature__}")

# 7. Validation: attrs go through a pydantic schema built from the AttrProtos before any
#    OpDesc exists; a bad value raises an AttrError naming the op, the attr, expected, given.
prog = pc.Program()
with pc.program_guard(prog):
    x = pc.data("x", shape=[None, 3], dtype="float32")
    try:
        pc.ops.scale(x, scale="2")
    except pc.AttrError as e:
        step(7, "spec/attr_validator.py", str(e))

    # 8. Appending: attrs validated, inputs bound, the shape rule infers the output; the op
    #    lands in the current block of the current program.
    y = pc.ops.scale(x, scale=2.0, bias=0.5)
step(8, "graph/append.py", f"appended {y.op._describe()}; out shape {y.shape}")

# 9. The ProgramDesc: the protobuf form of the program, what save_program writes.
desc = prog.to_desc()
same = pc.Program.parse(prog.serialize()).serialize() == prog.serialize()
step(9, "graph/program.py, graph/desc.py", f"{len(desc.SerializeToString())} bytes; same: {same}")

# 10. Backward: each op's grad rule appends its gradient ops.
grad_prog = prog.clone()
with pc.program_guard(grad_prog):
    gx = grad_prog.global_block().var("x")
    gx.stop_gradient = False
    (dx,) = pc.gradients([grad_prog.global_block().var(y.name)], [gx])
step(10, "graph/backward.py", f"d {y.name} / d x is {dx.name}, by {dx.op.type}")

# 11-13. The executor checks feeds and caches plans; planning prunes to the fetches, selects
#        each op's kernel by (op, device, dtype) and infers concrete shapes; the prepared
#        program runs the plan (on CPU, in the compiled loop).
exe = pc.Executor("cpu")
feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
(out,) = exe.run(prog, feed=feed, fetch_list=[y])
plan = exe.prepare(prog, feed, [y])
kernel = plan.steps[0].kernel
step(11, "run/executor.py", f"device {exe.device}; prepared {exe.prepare_count} time for 2 calls")
step(12, "run/planning.py", f"plan {plan.op_types}: kernel {kernel.ref!r} ({kernel.impl})")
step(13, "run/prepared.py", f"compiled loop: {plan.compiled}")

# 14. The kernel: prepare once per plan, run per call, through the versioned C ABI.
step(14, f"{kernel.plugin.distribution}'s kernels", f"out = {out.tolist()}")
assert np.allclose(out, feed["x"] * 2.0 + 0.5)
assert exe.prepare_count == 1
