# CMake package config for paddle-core's kernel SDK (header-only).
#
#   find_package(paddle_core CONFIG REQUIRED)
#   target_link_libraries(my_kernels PRIVATE paddle_core::sdk)
#
# paddle-core is not a build requirement of a plugin (pip's isolated build would fetch one from
# an index): a plugin's CMakeLists asks the Python it installs into where this directory is (see
# docs/writing-op-plugins.md), or is given
# -Dpaddle_core_DIR=$(python -c "import paddle_core; print(paddle_core.get_cmake_dir())").
get_filename_component(_paddle_core_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
set(paddle_core_INCLUDE_DIR "${_paddle_core_root}/include")
set(paddle_core_KERNEL_ABI_VERSION 1)
set(paddle_core_RUNTIME_DIR "${_paddle_core_root}/_src/base")  # the compiled runtime, _runtime.*
if(NOT TARGET paddle_core::sdk)
  add_library(paddle_core::sdk INTERFACE IMPORTED)
  set_target_properties(paddle_core::sdk PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${paddle_core_INCLUDE_DIR}")
endif()
# paddle_core_cuda_kernels(): the CUDA build recipe plugins share (docs/writing-op-plugins.md).
include("${CMAKE_CURRENT_LIST_DIR}/paddle_coreCuda.cmake")
# paddle_core_record_kernels(): record the kernels a module exports, for discovery.
include("${CMAKE_CURRENT_LIST_DIR}/paddle_coreKernels.cmake")
