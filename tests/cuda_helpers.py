"""What the CUDA tests of every plugin share (tests/plugins/*/test_*cuda*.py): where a build
finds nvcc, the manifests of the CUDA kernels, and a ctypes mirror of kernel_abi.h to call a
kernel straight through the C ABI (prepare, run, release) where no CUDA driver is."""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import numpy as np

from paddle_core.proto import framework_pb2 as pb

PC_DTYPES = {"bool": 1, "int32": 4, "int64": 5, "uint8": 6, "float32": 9, "float64": 10}
PC_DEVICE_CUDA, PC_ERROR = 2, 1
PC_ATTR_INT, PC_ATTR_FLOAT, PC_ATTR_STRING, PC_ATTR_BOOL, PC_ATTR_INTS = 1, 2, 3, 4, 6


@functools.cache
def cuda_compiler() -> str | None:
    """The nvcc a build of the plugin finds (the SDK's paddle_core_cuda_kernels rule):
    $CUDACXX, else nvcc on PATH, in $CUDA_PATH/bin or in /usr/local/cuda/bin; None if it does
    not run (CMake, which tries it on a test file, would not take it either)."""
    if os.environ.get("CUDACXX"):
        found = os.environ["CUDACXX"].split()[0]
    else:
        homes = [os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
        candidates = [shutil.which("nvcc")] + [str(Path(h) / "bin" / "nvcc") for h in homes if h]
        found = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    if found is None:
        return None
    try:
        subprocess.run([found, "--version"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return found


def parse(path: Path) -> pb.PluginManifest:
    from google.protobuf import text_format

    return text_format.Parse(path.read_text(encoding="utf-8"), pb.PluginManifest())


def kernel_dtypes(manifest: pb.PluginManifest, device: str) -> dict[str, tuple[int, ...]]:
    """{op: dtypes} of the ``device`` kernels, from ops and kernel packs."""
    packs = [(o.proto.type, o.kernels) for o in manifest.ops]
    packs += [(p.op, p.kernels) for p in manifest.kernel_packs]
    return {op: tuple(k.dtypes) for op, ks in packs for k in ks if k.device == device}


def natives(manifest: pb.PluginManifest, device: str) -> dict[str, list[str]]:
    """{op: native symbols} of the ``device`` kernels, from ops and kernel packs."""
    found: dict[str, list[str]] = {}
    packs = [(o.proto.type, o.kernels) for o in manifest.ops]
    packs += [(p.op, p.kernels) for p in manifest.kernel_packs]
    for op, kernels in packs:
        for k in kernels:
            if k.device == device and k.WhichOneof("impl") == "native":
                found.setdefault(op, []).append(k.native)
    return found


def source_manifest(plugin: Path) -> pb.PluginManifest:
    """A plugin's manifest as its source declares it (manifest/*.pbtxt), merged; dtypes left as
    written (discovery fills the rest in from the build's record)."""
    merged = pb.PluginManifest()
    for path in sorted((plugin / plugin.name / "manifest").glob("*.pbtxt")):
        merged.MergeFrom(parse(path))
    return merged


def check_built_with_cuda(module: ModuleType, plugin: str) -> None:
    """Where a CUDA compiler is, the plugin must have been built with its CUDA kernels."""
    assert module.built_with_cuda(), (
        f"a CUDA compiler is here ({cuda_compiler()}) but {plugin} was built without its "
        "CUDA kernels: reinstall it (and check the build log for 'CUDA kernels')"
    )


def check_kernel_record(module: ModuleType, plugin: str) -> None:
    """The record the build left beside the kernel module (kernels.json) lists exactly the
    kernels the module exports, each with the dtypes its class declares; the CUDA kernels are
    there exactly when they were built, and otherwise every declared one is listed as not built
    (not a problem of the plugin)."""
    import json

    from paddle_core._src.base.runtime import compiled_runtime
    from paddle_core._src.plugins.registry import get_registry

    data = json.loads((Path(module.__file__).parent / "kernels.json").read_text())
    record, table = data["kernels"], module.kernels()
    assert data["devices"] == (["cpu", "cuda"] if module.built_with_cuda() else ["cpu"])
    assert set(record) == set(table)
    runtime = compiled_runtime()
    for symbol, capsule in table.items():
        assert record[symbol] == runtime.kernel_signature(capsule)[2], symbol
    exported = {name for name in table if name.endswith("_cuda")}
    assert bool(exported) == module.built_with_cuda()
    plugin_record = get_registry().plugins[plugin]
    unbuilt = {symbol for _, device, symbol, _ in plugin_record.unbuilt if device == "cuda"}
    if module.built_with_cuda():
        assert not unbuilt and module.cuda_architectures()
    else:
        assert unbuilt and module.cuda_architectures() == ""
        assert plugin_record.status == "ok", plugin_record.problems


def has_cuda_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


# -- kernel_abi.h in ctypes ------------------------------------------------------------------


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("ndim", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("device_type", ctypes.c_int32),
        ("device_index", ctypes.c_int32),
    ]


class Tensors(ctypes.Structure):
    _fields_ = [
        ("items", ctypes.POINTER(Tensor)),
        ("slot_begin", ctypes.POINTER(ctypes.c_int32)),
        ("num_slots", ctypes.c_int32),
        ("num_items", ctypes.c_int32),
    ]


class Attr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("type", ctypes.c_int32),
        ("count", ctypes.c_int32),
        ("i", ctypes.c_int64),
        ("f", ctypes.c_double),
        ("s", ctypes.c_char_p),
        ("ints", ctypes.POINTER(ctypes.c_int64)),
        ("floats", ctypes.POINTER(ctypes.c_double)),
        ("strings", ctypes.c_void_p),
    ]


class Attrs(ctypes.Structure):
    _fields_ = [("items", ctypes.POINTER(Attr)), ("count", ctypes.c_int32)]


def make_attrs(values: dict[str, bool | int | float | str | list[int]]) -> Attrs:
    """pc_attrs of bools, ints, floats, strings and int lists (kept alive by the returned
    structure)."""
    items = (Attr * max(len(values), 1))()
    keep = []
    for item, (name, value) in zip(items, values.items()):
        item.name = name.encode()
        if isinstance(value, bool):
            item.type, item.i = PC_ATTR_BOOL, int(value)
        elif isinstance(value, int):
            item.type, item.i = PC_ATTR_INT, value
        elif isinstance(value, float):
            item.type, item.f = PC_ATTR_FLOAT, value
        elif isinstance(value, str):
            text = value.encode()
            keep.append(text)
            item.type, item.s = PC_ATTR_STRING, text
        else:
            array = (ctypes.c_int64 * max(len(value), 1))(*value)
            keep.append(array)
            item.type, item.count, item.ints = PC_ATTR_INTS, len(value), array
    attrs = Attrs(items, len(values))
    attrs._keep = (items, keep)
    return attrs


class Context(ctypes.Structure):
    _fields_ = [
        ("stream", ctypes.c_void_p),
        ("num_threads", ctypes.c_int32),
        ("struct_size", ctypes.c_int32),
        ("message", ctypes.c_char_p),
        ("message_capacity", ctypes.c_size_t),
        ("random_key", ctypes.c_uint64),
        ("random_counter", ctypes.c_uint64),
    ]


Prepare = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.POINTER(Attrs),
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Context),
    ctypes.POINTER(ctypes.c_void_p),
)
Run = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Tensors),
    ctypes.POINTER(Context),
)
Release = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Kernel(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("prepare", Prepare),
        ("run", Run),
        ("release", Release),
    ]


def kernel(module: ModuleType, name: str) -> Kernel:
    """Kernel ``name`` of a plugin's kernel module (its ``kernels()`` table)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return Kernel.from_address(get(module.kernels()[name], b"paddle_core.kernel"))


class Slots:
    """pc_tensors over CUDA-tagged views of arrays, one per slot (kept alive with it)."""

    def __init__(self, *arrays: np.ndarray | None, variadic: bool = False):
        """One slot per array (None: an unused dispensable slot), or (variadic) all of them in
        one slot: concat's xs, split's outs."""
        slots = [[] if a is None else [a] for a in arrays]
        if variadic:
            slots = [list(arrays)]
        self.arrays = [a for slot in slots for a in slot]
        self.shapes = [(ctypes.c_int64 * max(a.ndim, 1))(*a.shape) for a in self.arrays]
        self.items = (Tensor * max(len(self.arrays), 1))()
        for item, a, shape in zip(self.items, self.arrays, self.shapes):
            item.shape, item.strides = shape, None
            item.ndim, item.dtype = a.ndim, PC_DTYPES[a.dtype.name]
            item.device_type = PC_DEVICE_CUDA
        begin = [0]
        for slot in slots:
            begin.append(begin[-1] + len(slot))
        self.begin = (ctypes.c_int32 * len(begin))(*begin)
        self.raw = Tensors(self.items, self.begin, len(slots), len(self.arrays))

    def bind(self) -> None:  # host addresses: never dereferenced, the launch fails first
        for item, a in zip(self.items, self.arrays):
            item.data = a.ctypes.data


def prepare(module: ModuleType, name: str, ins: Slots, outs: Slots, attrs: dict | None = None):
    """Prepare kernel ``name`` of ``module``: (status, message, kernel, state, context, message
    buffer)."""
    k = kernel(module, name)
    message = ctypes.create_string_buffer(1024)
    ctx = Context(None, 1, ctypes.sizeof(Context), ctypes.cast(message, ctypes.c_char_p), 1024)
    state = ctypes.c_void_p()
    raw_attrs = make_attrs(attrs or {})
    status = k.prepare(ctypes.byref(raw_attrs), ins.raw, outs.raw, ctypes.byref(ctx), state)
    return status, message.value.decode() if status else "", k, state, ctx, message


def prepare_and_run(
    module: ModuleType, name: str, ins: Slots, outs: Slots, attrs: dict | None = None
) -> tuple[int, str]:
    """Run kernel ``name`` of ``module`` once; (status of run, its message). Prepare must
    succeed."""
    status, error, k, state, ctx, message = prepare(module, name, ins, outs, attrs)
    assert status == 0, error
    ins.bind()
    outs.bind()
    try:
        status = k.run(state, ins.raw, outs.raw, ctypes.byref(ctx))
    finally:
        k.release(state)
    return status, message.value.decode() if status else ""
