# The CUDA kernels (src/*_cuda.cu), built into _C next to the CPU ones when asked for:
#   -DPADDLE_OPS_MATH_CUDA=AUTO  (default) when a CUDA compiler is found
#   -DPADDLE_OPS_MATH_CUDA=ON    always; configuring fails without a CUDA toolkit
#   -DPADDLE_OPS_MATH_CUDA=OFF   never (the CPU build needs no toolkit)
# (with pip: --config-settings=cmake.define.PADDLE_OPS_MATH_CUDA=OFF). Sets
# PADDLE_OPS_MATH_WITH_CUDA, and when it is ON the object library cuda_kernels.
set(PADDLE_OPS_MATH_CUDA AUTO CACHE STRING "Build the CUDA kernels: AUTO, ON or OFF")
set_property(CACHE PADDLE_OPS_MATH_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${PADDLE_OPS_MATH_CUDA}" _cuda_wanted)
if(NOT _cuda_wanted MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PADDLE_OPS_MATH_CUDA must be AUTO, ON or OFF, got '${PADDLE_OPS_MATH_CUDA}'")
endif()

set(PADDLE_OPS_MATH_WITH_CUDA OFF)
if(NOT _cuda_wanted STREQUAL "OFF")
  # CMake looks for nvcc through CUDACXX, on PATH and in $CUDA_PATH/bin; also take the
  # toolkit's usual home (tests/plugins/math/test_cuda_build.py follows the same rule). Handed
  # over as CUDACXX, not CMAKE_CUDA_COMPILER, so that check_language still tries it: an nvcc
  # that cannot compile (a toolkit half removed) means no CUDA kernels under AUTO.
  # A compiler not found by an earlier configure is looked for again: one may be here now.
  if(DEFINED CMAKE_CUDA_COMPILER AND NOT CMAKE_CUDA_COMPILER)
    unset(CMAKE_CUDA_COMPILER CACHE)
    unset(PADDLE_OPS_MATH_NVCC CACHE)
  endif()
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND "$ENV{CUDACXX}" STREQUAL "")
    find_program(PADDLE_OPS_MATH_NVCC nvcc PATHS ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin)
    if(PADDLE_OPS_MATH_NVCC)
      set(ENV{CUDACXX} "${PADDLE_OPS_MATH_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(PADDLE_OPS_MATH_WITH_CUDA ON)
  elseif(_cuda_wanted STREQUAL "ON")
    message(FATAL_ERROR "PADDLE_OPS_MATH_CUDA=ON, but no working CUDA compiler was found "
                        "(put nvcc on PATH, or set CUDACXX or CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "paddle-ops-math CUDA kernels: ${PADDLE_OPS_MATH_WITH_CUDA} "
               "(PADDLE_OPS_MATH_CUDA=${PADDLE_OPS_MATH_CUDA})")
if(NOT PADDLE_OPS_MATH_WITH_CUDA)
  return()
endif()

# A100 and H100/H200 unless the user chose (CMAKE_CUDA_ARCHITECTURES or CUDAARCHS). Must be
# set before enable_language, which otherwise picks the compiler's default.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES 80 90)
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)

file(GLOB CUDA_SOURCES CONFIGURE_DEPENDS src/*_cuda.cu)
add_library(cuda_kernels OBJECT ${CUDA_SOURCES})
set_target_properties(cuda_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(cuda_kernels PRIVATE paddle_core::sdk)
# --expt-relaxed-constexpr: device code may call constexpr std functions (numeric_limits).
target_compile_options(cuda_kernels PRIVATE --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra)
