// paddle_core/pybind.hpp: export a plugin's kernels from its pybind11 module (`_C`).
//
// The only header that needs pybind11; include it in one small file of the plugin:
//
//   #include <paddle_core/pybind.hpp>
//   PYBIND11_MODULE(_C, m) { paddle_core::export_kernels(m); }
//
// The module then has KERNEL_ABI_VERSION, KERNEL_LAYOUT (the layout fingerprint of the header
// it was built with), kernels() -> {name: capsule}: every kernel its source files registered
// (PADDLE_CORE_REGISTER_KERNELS in kernel.hpp), and KERNEL_DEVICES, the devices those files
// were compiled for (the build records them: a kernel of another device is then not built).
// The core checks them against its own ABI and layout and against the plugin's manifest (both
// ways) when it first loads the module.
#ifndef PADDLE_CORE_PYBIND_HPP_
#define PADDLE_CORE_PYBIND_HPP_

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "paddle_core/kernel.hpp"

namespace paddle_core {

// The layout fingerprint of the kernel ABI header this module was compiled with
// (pc_kernel_layout in kernel_abi.h); the core compares it with its own at load.
inline std::string kernel_layout() {
  std::string text(pc_kernel_layout(nullptr, 0) + 1, '\0');
  text.resize(pc_kernel_layout(&text[0], text.size()));
  return text;
}

inline void export_kernels(pybind11::module_& m) {
  pybind11::dict table;
  for (const pc_kernel* k : registered_kernels()) {
    if (table.contains(k->name))
      throw std::runtime_error(std::string("kernel '") + k->name + "' is registered twice");
    // Capsules point into the registrations, which live as long as the module: no destructor.
    table[k->name] = pybind11::capsule(static_cast<const void*>(k), PADDLE_CORE_KERNEL_CAPSULE);
  }
  m.attr("KERNEL_ABI_VERSION") = PADDLE_CORE_KERNEL_ABI_VERSION;
  m.attr("KERNEL_LAYOUT") = kernel_layout();
  pybind11::list devices;
  for (const std::string& device : registered_devices()) devices.append(device);
  m.attr("KERNEL_DEVICES") = devices;
  m.def("kernels", [table]() { return pybind11::dict(table); },
        "The kernel table: symbol name -> capsule of a pc_kernel.");
}

// `built_with_cuda()` and `cuda_architectures()` for the module of a plugin whose CUDA kernels
// paddle_core_cuda_kernels() may have built: `architectures` is the comma-separated list they
// were compiled for, or nullptr for a build without them.
inline void export_cuda_build(pybind11::module_& m, const char* architectures) {
  const bool built = architectures != nullptr;
  const std::string archs = built ? architectures : "";
  m.def("built_with_cuda", [built] { return built; },
        "Whether this build has the CUDA kernels (*_cuda); the CPU kernels are always there.");
  m.def("cuda_architectures", [archs] { return archs; },
        "The CUDA architectures the kernels were compiled for (CMAKE_CUDA_ARCHITECTURES, "
        "comma-separated, e.g. '80,90'); empty without CUDA.");
}

}  // namespace paddle_core

#endif  // PADDLE_CORE_PYBIND_HPP_
