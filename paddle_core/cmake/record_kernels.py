"""Write down what a plugin's compiled kernel module exports, for discovery to read: run by the
build (``paddle_core_record_kernels`` in paddle_coreKernels.cmake), never by hand.

    python -E -P record_kernels.py RUNTIME MODULE_FILE MODULE_NAME OUTPUT

A manifest need not list the dtypes of a native kernel: its class declares them once
(``DTypes``, kernel.hpp), and this records them, so that listing ops knows every kernel's dtypes
without importing plugin code. It loads the core's compiled runtime (RUNTIME) and the module
(MODULE_FILE, imported as MODULE_NAME) by file, nothing else, and writes OUTPUT as JSON:

    {"module": "paddle_ops_math._C", "kernel_abi": 1, "devices": ["cpu", "cuda"],
     "kernels": {"scale": [9, 10, ...], "sum_cuda": [...], ...}}

with each kernel's dtypes as the PC_* values of kernel_abi.h (those of VarType.DataType in
framework.proto), or null for a kernel whose class declares none, and the devices its files
were compiled for ("devices": ["cpu", "cuda"], the module's KERNEL_DEVICES): a kernel the
manifest declares for a device the build did not compile is not built, one for a device it did
compile is missing. A module that exports no kernel table, or a kernel that is not a kernel
capsule, fails the build with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys


def load(name: str, path: str):
    """Import the extension module at ``path`` as ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"record_kernels: {path} is not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(runtime_path: str, module_path: str, module_name: str) -> dict:
    # The runtime under its own name, in case the module is the runtime (the core's kernels).
    runtime = load("paddle_core._src.base._runtime", runtime_path)
    module = runtime if os.path.samefile(runtime_path, module_path) else None
    module = module or load(module_name, module_path)
    if not callable(getattr(module, "kernels", None)):
        raise SystemExit(
            f"record_kernels: {module_name} has no kernels() table: does it call "
            "paddle_core::export_kernels(m) (paddle_core/pybind.hpp)?"
        )
    kernels = {}
    for symbol, capsule in sorted(module.kernels().items()):
        try:
            _, _, dtypes = runtime.kernel_signature(capsule)
        except Exception as e:
            raise SystemExit(f"record_kernels: {module_name}: kernel {symbol!r}: {e}") from None
        kernels[symbol] = dtypes
    devices = sorted(getattr(module, "KERNEL_DEVICES", None) or ["cpu"])
    return {
        "module": module_name,
        "kernel_abi": module.KERNEL_ABI_VERSION,
        "devices": devices,
        "kernels": kernels,
    }


def main(argv: list[str]) -> None:
    if len(argv) != 4:
        raise SystemExit(__doc__)
    runtime_path, module_path, module_name, output = argv
    found = record(runtime_path, module_path, module_name)
    kernels = ",\n".join(f"  {json.dumps(k)}: {json.dumps(d)}" for k, d in found["kernels"].items())
    text = (
        f'{{"module": {json.dumps(found["module"])}, "kernel_abi": {found["kernel_abi"]},\n'
        f' "devices": {json.dumps(found["devices"])},\n "kernels": {{\n{kernels}\n }}}}\n'
    )
    with open(output + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(output + ".tmp", output)


if __name__ == "__main__":
    main(sys.argv[1:])
