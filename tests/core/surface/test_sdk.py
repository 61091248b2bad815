"""The kernel SDK as a third party uses it: headers, and a compiled plugin built with pip.

examples/paddle_ops_example is really built (scikit-build-core, CMake, the SDK of the installed
core) and installed with pip into a directory on PYTHONPATH; a fresh process then runs its op,
checks its gradient, and shows it with the CLI.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
from conftest import ROOT, run_cli

import paddle_core as pc


def compiler(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed")
    return found


def test_the_abi_header_is_plain_c(tmp_path: Path) -> None:
    source = tmp_path / "abi.c"
    source.write_text(
        "#include <paddle_core/kernel_abi.h>\n"
        'int main(void) { pc_attrs a = {0, 0}; return pc_find_attr(&a, "x") != 0; }\n'
    )
    cmd = [compiler("cc"), "-std=c99", "-Wall", "-Werror", "-pedantic", f"-I{pc.get_include()}"]
    subprocess.run([*cmd, "-c", str(source), "-o", str(tmp_path / "abi.o")], check=True)


def test_the_cpp_layer_compiles_cleanly_on_its_own(tmp_path: Path) -> None:
    source = tmp_path / "k.cpp"
    source.write_text(
        "#include <paddle_core/kernel.hpp>\n"
        "struct K { K(const paddle_core::Attrs&, const paddle_core::Slots&, const paddle_core::Slots&) {}\n"
        "  void run(const paddle_core::Slots&, const paddle_core::Slots&, const paddle_core::Context&) const {} };\n"
        'PADDLE_CORE_REGISTER_KERNELS(paddle_core::kernel<K>("k"));\n'
    )
    cmd = [compiler("c++"), "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{pc.get_include()}"]
    subprocess.run([*cmd, "-c", str(source), "-o", str(tmp_path / "k.o")], check=True)


def build(tmp_path: Path, source: str, suffix: str, *flags: str) -> Path:
    """Compiles `source` (C99 for ".c", C++17 otherwise) against the SDK headers, warnings
    being errors; returns the executable (or, with "-c", the object file)."""
    if suffix == ".c":
        cmd = [compiler("cc"), "-std=c99", "-Wall", "-Werror", "-pedantic"]
    else:
        cmd = [compiler("c++"), "-std=c++17", "-Wall", "-Wextra", "-Werror"]
    path, output = tmp_path / f"main{suffix}", tmp_path / "main"
    path.write_text(source)
    cmd += [*flags, f"-I{pc.get_include()}", str(path), "-o", str(output)]
    subprocess.run(cmd, check=True)
    return output


def compile_and_run(tmp_path: Path, source: str, suffix: str, *flags: str) -> str:
    """Builds and runs `source` (with the compiler's `flags`); returns its stdout."""
    executable = build(tmp_path, source, suffix, *flags)
    return subprocess.run([str(executable)], check=True, capture_output=True, text=True).stdout


HELPERS = r"""
#include <paddle_core/kernel.hpp>
#include <cstdio>
#include <type_traits>
namespace pc = paddle_core;

template <class T> const char* name_of() {
  return std::is_same_v<T, float> ? "float" : std::is_same_v<T, double> ? "double"
       : std::is_same_v<T, int32_t> ? "int32_t" : std::is_same_v<T, int64_t> ? "int64_t" : "?";
}
template <class L> void show_dispatch(const char* label, int32_t dtype) {
  try {
    std::printf("%s=%s\n", label, pc::dispatch(dtype, L{}, [](auto t) { return name_of<decltype(t)>(); }));
  } catch (const pc::KernelError& e) {
    std::printf("%s=%s\n", label, e.what());
  }
}
template <class F> void show_check(const char* label, F check) {
  try {
    check();
    std::printf("%s=ok\n", label);
  } catch (const pc::KernelError& e) {
    std::printf("%s=%s\n", label, e.what());
  }
}

int main() {
  show_dispatch<pc::Floats>("float32 in Floats", PC_FLOAT32);
  show_dispatch<pc::Floats>("float64 in Floats", PC_FLOAT64);
  show_dispatch<pc::Numbers>("int64 in Numbers", PC_INT64);
  show_dispatch<pc::Ints>("int32 in Ints", PC_INT32);
  show_dispatch<pc::Floats>("int32 in Floats", PC_INT32);
  show_dispatch<pc::Types<int64_t>>("float16 in Types<int64_t>", PC_FLOAT16);

  const int64_t s23[] = {2, 3}, s32[] = {3, 2};
  const pc_tensor a{nullptr, s23, nullptr, 2, PC_FLOAT32, PC_DEVICE_CPU, 0};
  const pc_tensor b{nullptr, s23, nullptr, 2, PC_FLOAT64, PC_DEVICE_CPU, 0};
  const pc_tensor c{nullptr, s32, nullptr, 2, PC_FLOAT32, PC_DEVICE_CPU, 0};
  const pc::Tensor x(a), y(b), z(c);
  show_check("same shape", [&] { pc::expect_same_shape(x, y, "x and y"); });
  show_check("other shape", [&] { pc::expect_same_shape(x, z, "x and out"); });
  show_check("same dtype", [&] { pc::expect_same_dtype(x, z, "x and z"); });
  show_check("other dtype", [&] { pc::expect_same_dtype(x, y, "x and out_grad"); });
  std::printf("element_size=%lld %lld\n", (long long)x.element_size(), (long long)y.element_size());
  std::printf("nbytes=%lld %lld\n", (long long)x.nbytes(), (long long)y.nbytes());
  std::printf("pc_dtype_size=%zu %zu\n", pc_dtype_size(PC_BFLOAT16), pc_dtype_size(-1));
}
"""


def test_the_cpp_helpers_dispatch_check_and_size(tmp_path: Path) -> None:
    output = compile_and_run(tmp_path, HELPERS, ".cpp")
    results = dict(line.split("=", 1) for line in output.splitlines())
    assert results == {
        "float32 in Floats": "float",
        "float64 in Floats": "double",
        "int64 in Numbers": "int64_t",
        "int32 in Ints": "int32_t",
        "int32 in Floats": "dtype int32 is not supported by this kernel",
        "float16 in Types<int64_t>": "dtype float16 is not supported by this kernel",
        "same shape": "ok",
        "other shape": "x and out: shapes differ: float32[2, 3] vs float32[3, 2]",
        "same dtype": "ok",
        "other dtype": "x and out_grad: dtypes differ: float32[2, 3] vs float64[2, 3]",
        "element_size": "4 8",
        "nbytes": "24 48",
        "pc_dtype_size": "2 0",
    }


PARALLEL = r"""
#include <paddle_core/parallel.hpp>
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>
namespace pc = paddle_core;

using Chunks = std::vector<std::pair<int64_t, int64_t>>;
template <class Split> Chunks chunks_of(Split split) {
  Chunks seen;
  std::mutex m;
  split([&](int64_t lo, int64_t hi) {
    std::lock_guard<std::mutex> lock(m);
    seen.emplace_back(lo, hi);
  });
  std::sort(seen.begin(), seen.end());
  return seen;
}
void show(const char* label, const Chunks& c) {
  std::printf("%s=", label);
  for (auto [lo, hi] : c) std::printf("[%lld,%lld)", (long long)lo, (long long)hi);
  std::printf("\n");
}
// Whether the chunks cover [0, n) once each, in order, with bounds on multiples of align.
bool tiles(const Chunks& c, int64_t n, int64_t align) {
  int64_t next = 0;
  for (auto [lo, hi] : c) {
    if (lo != next || hi <= lo || lo % align != 0) return false;
    next = hi;
  }
  return next == n;
}

int main() {
  show("rows 48 on 2", chunks_of([](auto f) { pc::parallel_rows(48, 2, 1, f); }));
  show("rows 48 on 16", chunks_of([](auto f) { pc::parallel_rows(48, 16, 1, f); }));
  show("rows 10 on 4, grain 4", chunks_of([](auto f) { pc::parallel_rows(10, 4, 4, f); }));
  show("rows 3 on 2, grain 2", chunks_of([](auto f) { pc::parallel_rows(3, 2, 2, f); }));
  show("for 48 on 2", chunks_of([](auto f) { pc::parallel_for(48, 2, 1, f); }));
  show("for 1000 on 2", chunks_of([](auto f) { pc::parallel_for(1000, 2, 1, f); }));
  show("for 0 on 2", chunks_of([](auto f) { pc::parallel_for(0, 2, 1, f); }));
  int bad = 0;
  for (int64_t n = 0; n <= 300; ++n)
    for (int32_t t = 1; t <= 5; ++t)
      for (int64_t align : {1, 7, 64}) {
        auto c = chunks_of([&](auto f) { pc::parallel_chunks(n, t, 1, align, f); });
        bad += !tiles(c, n, align);
      }
  std::printf("sweeps that do not tile=%d\n", bad);
}
"""


def test_the_parallel_loops_split_rows_evenly_and_elements_on_cache_lines(tmp_path: Path) -> None:
    output = compile_and_run(tmp_path, PARALLEL, ".cpp", "-fopenmp")
    results = dict(line.split("=", 1) for line in output.splitlines())
    assert results == {
        "rows 48 on 2": "[0,24)[24,48)",
        "rows 48 on 16": "".join(f"[{k},{k + 3})" for k in range(0, 48, 3)),
        "rows 10 on 4, grain 4": "[0,5)[5,10)",  # only 10 / 4 = 2 chunks are worth a thread
        "rows 3 on 2, grain 2": "[0,3)",  # too small to split: inline
        "for 48 on 2": "[0,48)",  # 64-item bounds: one thread
        "for 1000 on 2": "[0,448)[448,1000)",
        "for 0 on 2": "",
        "sweeps that do not tile": "0",
    }


AVX2 = r"""
#include <paddle_core/avx2.hpp>
#include <cmath>
#include <cstdio>
namespace avx2 = paddle_core::avx2;

int main() {
  const float x[11] = {0.0f, 1.0f, -1.0f, 10.5f, -50.25f, 88.0f, -100.0f, 89.0f, -200.0f,
                       INFINITY, NAN};
  float y[11] = {0};
  _mm256_storeu_ps(y, avx2::exp8(_mm256_loadu_ps(x)));
  const __m256i tail = avx2::first_lanes(3);  // x[8, 11) only: y[11..15] are never touched
  _mm256_maskstore_ps(y + 8, tail, avx2::exp8(_mm256_maskload_ps(x + 8, tail)));
  for (int i = 0; i < 11; ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    const float rounded = static_cast<float>(want);  // inf past FLT_MAX
    const double ulp = std::nextafter(rounded, INFINITY) - rounded;
    std::printf("%g=%s\n", x[i],
                std::isnan(want) ? (std::isnan(y[i]) ? "nan" : "?")
                : std::isinf(rounded) ? (std::isinf(y[i]) ? "inf" : "?")
                : std::fabs(y[i] - want) <= 1.05 * ulp ? "ok" : "off");
  }
}
"""


def test_the_avx2_header_computes_exp_and_refuses_other_flags(tmp_path: Path) -> None:
    with pytest.raises(subprocess.CalledProcessError):  # without -mavx2 -mfma: its #error
        build(tmp_path, AVX2, ".cpp", "-c")
    flags = Path("/proc/cpuinfo").read_text().split() if Path("/proc/cpuinfo").exists() else []
    if "avx2" not in flags or "fma" not in flags:
        pytest.skip("this CPU has no AVX2+FMA to run it on")
    output = compile_and_run(tmp_path, AVX2, ".cpp", "-mavx2", "-mfma")
    results = dict(line.split("=", 1) for line in output.splitlines())
    assert results == {
        **{v: "ok" for v in ("0", "1", "-1", "10.5", "-50.25", "88", "-100", "-200")},
        "89": "inf",
        "inf": "inf",
        "nan": "nan",
    }


WORKSPACE = r"""
#include <paddle_core/kernel.hpp>
#include <cstdio>
namespace pc = paddle_core;

// A kernel's workspace from a core that plans it (struct_size covering the field) and from an
// older one (ABI 1's first size), where the kernel keeps its own.
void show(const char* label, int32_t struct_size) {
  alignas(64) static char planned[256];
  pc_context c{};
  c.struct_size = struct_size;
  const pc::Context ctx(&c);
  const pc::Workspace small(ctx, 100), large(ctx, 200), none(ctx, 0);
  std::printf("%s: asked %zu, state %zu;", label, c.workspace_size, c.state_bytes);
  c.workspace = c.workspace_size ? planned : nullptr;  // what the core binds for the run
  char* data = large.data(ctx);
  const bool ours = data == planned;
  std::printf(" large %s, aligned %d, none %s\n", ours ? "planned" : "own",
              (int)(reinterpret_cast<uintptr_t>(data) % 64 == 0),
              none.data(ctx) == nullptr ? "null" : "?");
  (void)small;
}

int main() {
  show("core", sizeof(pc_context));
  show("older core", PC_CONTEXT_BASE_SIZE);
}
"""


def test_a_workspace_is_the_cores_where_it_plans_one_else_the_kernels_own(tmp_path: Path) -> None:
    output = compile_and_run(tmp_path, WORKSPACE, ".cpp")
    assert output.splitlines() == [
        "core: asked 200, state 0; large planned, aligned 1, none null",
        # An older core fills no field of ABI 1's later ones: the kernel says nothing there.
        "older core: asked 0, state 0; large own, aligned 1, none null",
    ]


PHILOX8 = r"""
#include <paddle_core/avx2.hpp>
#include <paddle_core/random.hpp>
#include <cstdio>
namespace pc = paddle_core;

int main() {
  char message[8];
  pc_context c{};
  c.num_threads = 1, c.message = message, c.message_capacity = sizeof message;
  c.random_key = 0x0123456789abcdefull, c.random_counter = 0xfedcba9876543210ull;
  c.struct_size = sizeof(pc_context);
  const pc::Context ctx(&c);
  int wrong = 0, blocks = 0;
  for (const pc::Random rng : {pc::Random(ctx, 0), pc::Random(ctx, 42)}) {
    // From 0, and across 2^32, where an index's low word wraps and its high word counts on.
    for (const uint64_t first : {0ull, 4294967291ull, 123456789012345ull}) {
      __m256i w[4];
      pc::avx2::random_bits8(rng.philox().key[0], rng.philox().key[1], rng.run(), first, w);
      uint32_t got[4][8];
      for (int k = 0; k < 4; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(got[k]), w[k]);
      for (int j = 0; j < 8; ++j, ++blocks) {
        uint32_t want[4];
        rng.bits(first + j, want);
        for (int k = 0; k < 4; ++k) wrong += got[k][j] != want[k];
      }
    }
  }
  std::printf("%d blocks, %d words differ\n", blocks, wrong);
}
"""


def test_the_avx2_philox_gives_randoms_bits(tmp_path: Path) -> None:
    flags = Path("/proc/cpuinfo").read_text().split() if Path("/proc/cpuinfo").exists() else []
    if "avx2" not in flags or "fma" not in flags:
        pytest.skip("this CPU has no AVX2+FMA to run it on")
    output = compile_and_run(tmp_path, PHILOX8, ".cpp", "-mavx2", "-mfma")
    assert output.strip() == "48 blocks, 0 words differ"


def test_the_c_element_sizes_agree_with_python_and_the_proto(tmp_path: Path) -> None:
    """pc_dtype_size is the one C table of element sizes: it must match dtypes.ITEMSIZE and
    the names of VarType.DataType (bits in the name / 8; BOOL is a byte), and give 0 for the
    values around the enum, so a dtype added to the proto fails here until the table has it."""
    from paddle_core._src.base import dtypes
    from paddle_core.proto.framework_pb2 import VarType

    names = {v.number: v.name for v in VarType.DataType.DESCRIPTOR.values if v.number != 0}
    last = max(names)
    source = (
        "#include <paddle_core/kernel_abi.h>\n#include <stdio.h>\n"
        "int main(void) {\n  int d;\n"
        f'  for (d = -1; d <= {last + 1}; ++d) printf("%d %zu\\n", d, pc_dtype_size(d));\n'
        "  return 0;\n}\n"
    )
    sizes = {}
    for line in compile_and_run(tmp_path, source, ".c").splitlines():
        value, size = map(int, line.split())
        sizes[value] = size
    assert sorted(sizes) == list(range(-1, last + 2))
    for value, size in sizes.items():
        if value not in names:
            assert size == 0, f"pc_dtype_size({value}) is {size}, not 0"
            continue
        name = names[value]
        expected = 1 if name == "BOOL" else int(re.sub(r"\D", "", name)) // 8
        assert size == expected, f"pc_dtype_size(PC_{name}) is {size}, not {expected}"
        assert size == dtypes.ITEMSIZE[dtypes.from_enum(value)], name


def test_the_guides_kernel_example_compiles(tmp_path: Path) -> None:
    """The C++ kernel that docs/writing-op-plugins.md shows third parties compiles, warning-free."""
    text = (ROOT / "docs" / "writing-op-plugins.md").read_text()
    blocks = [b for b in re.findall(r"```cpp\n(.*?)```", text, re.DOTALL) if "kernel.hpp" in b]
    assert blocks, "docs/writing-op-plugins.md shows no kernel"
    for block in blocks:
        build(tmp_path, block, ".cpp", "-c")


def test_cmake_finds_the_sdk() -> None:
    config = Path(pc.get_cmake_dir()) / "paddle_coreConfig.cmake"
    assert config.is_file()
    assert "paddle_core::sdk" in config.read_text()
    assert (Path(pc.get_include()) / "paddle_core" / "kernel_abi.h").is_file()


RUN_EXAMPLE = """
import json, numpy as np, paddle_core as pc
from paddle_core.testing import check_grad, run_op
x = np.linspace(-4, 4, 11)
(out,) = run_op("example_cos", {"x": x.astype(np.float32)}, {"scale": 2.0})["out"]
want = 2.0 * np.cos(x)
check_grad("example_cos", {"x": x}, {"scale": 2.0})
print(json.dumps({"max_error": float(np.max(np.abs(out - want))), "dtype": str(out.dtype)}))
"""


def test_a_third_party_compiled_plugin_builds_installs_and_runs(
    example_site: Path, tmp_path: Path
) -> None:
    site = example_site
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-P", "-c", RUN_EXAMPLE], env=env, capture_output=True, text=True, timeout=120,
        cwd=tmp_path,  # outside the checkout, so the installed paddle_core is imported
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dtype"] == "float32" and report["max_error"] < 1e-5
    shown = json.loads(run_cli("show", "example_cos", "--json", pythonpath=site).stdout)
    assert shown["plugin"] == "example" and shown["kernels"][0]["impl"] == "native"
    assert shown["attrs"][0]["min"] == {"value": 0.0, "exclusive": True}


RANDOM = r"""
#include <paddle_core/random.hpp>
#include <cinttypes>
#include <cstdio>

namespace pc = paddle_core;

void philox(uint32_t k0, uint32_t k1, const uint32_t c[4]) {
  pc::Philox p{{k0, k1}};
  uint32_t out[4];
  p.block(c, out);
  std::printf("%08x %08x %08x %08x\n", out[0], out[1], out[2], out[3]);
}

int main() {
  const uint32_t zero[4] = {0, 0, 0, 0}, ones[4] = {~0u, ~0u, ~0u, ~0u};
  const uint32_t pi[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  philox(0, 0, zero);
  philox(~0u, ~0u, ones);
  philox(0xa4093822u, 0x299f31d0u, pi);
  char message[8];
  pc_context c{};
  c.num_threads = 1, c.message = message, c.message_capacity = sizeof message;
  c.random_key = 7, c.random_counter = 9;
  c.struct_size = sizeof(pc_context);
  pc::Context now(&c);
  std::printf("%" PRIu64 " %" PRIu64 "\n", now.random_key(), now.random_counter());
  // The numbers of element i do not depend on which other elements were drawn.
  pc::Random seeded(now, 42), again(now, 42), other(now, 43), keyed(now, 0);
  double u = seeded.uniform<double>(1000), v = again.uniform<double>(1000);
  std::printf("%d %d %d\n", u == v, u != other.uniform<double>(1000), u >= 0 && u < 1);
  float f = keyed.uniform<float>(3);
  std::printf("%d\n", f >= 0 && f < 1);
  double sum = 0, sq = 0;
  for (int i = 0; i < 100000; ++i) {
    double z = seeded.normal<double>(i);
    sum += z, sq += z * z;
  }
  std::printf("%.2f %.2f\n", sum / 100000, sq / 100000);
  return 0;
}
"""


def test_the_random_generator_is_philox_keyed_by_the_context(tmp_path: Path):
    lines = compile_and_run(tmp_path, RANDOM, ".cpp").splitlines()
    # Known answers of Philox4x32-10 (Random123's test vectors)
    assert lines[:3] == [
        "6627e8d5 e169c58d bc57ac4c 9b00dbd8",
        "408f276d 41c83b0e a20bc7c6 6d5451fd",
        "d16cfe09 94fdcceb 5001e420 24126ea1",
    ]
    assert lines[3] == "7 9"
    assert lines[4:6] == ["1 1 1", "1"]
    mean, second_moment = map(float, lines[6].split())
    assert abs(mean) < 0.02 and abs(second_moment - 1) < 0.02


def test_reinstalling_the_core_leaves_unchanged_sdk_files_alone() -> None:
    """`./dev` reinstalls the core whenever its sources change, and pip stamps what it installs
    with the time of the install; plugins compile against the installed SDK, so their next
    build would recompile everything. Each installed SDK file keeps its source's mtime instead:
    unchanged, nothing rebuilds."""
    dist = importlib.metadata.distribution("paddle-core")
    origin = json.loads(dist.read_text("direct_url.json") or "{}").get("url", "")
    if Path(url2pathname(urlparse(origin).path)) != ROOT:
        pytest.skip(f"paddle-core was not installed from this checkout by ./dev ({origin!r})")
    sdk = [
        f
        for f in dist.files or []
        if f.parts[:2] in (("paddle_core", "include"), ("paddle_core", "cmake"))
    ]
    assert sdk
    for file in sdk:
        if "__pycache__" in file.parts:  # (written by pip when it installs)
            continue
        installed, source = Path(file.locate()), ROOT.joinpath(*file.parts)
        if source.read_bytes() == installed.read_bytes():
            assert installed.stat().st_mtime_ns == source.stat().st_mtime_ns, file
