# paddle_core_cuda_kernels(<PREFIX> <TARGET> <SOURCES...>): the CUDA build recipe of every
# plugin, included by paddle_coreConfig.cmake.
#
# Adds the cache option <PREFIX>_CUDA:
#   AUTO  (default) build the CUDA kernels when a working CUDA compiler is found
#   ON    always; configuring fails without a CUDA toolkit
#   OFF   never (the CPU build needs no toolkit)
# (with pip: --config-settings=cmake.define.<PREFIX>_CUDA=OFF). Sets <PREFIX>_WITH_CUDA; when
# it is ON, also defines the object library <TARGET> from <SOURCES> (C++17,
# position-independent, linked to paddle_core::sdk) for CMAKE_CUDA_ARCHITECTURES (80;90 unless
# the user set it or CUDAARCHS), and finds CUDAToolkit (link CUDA::cudart_static into the
# module, so that it imports where there is no GPU or driver).
# A macro, called from the top-level CMakeLists.txt: enable_language must run in file scope.
# Its temporaries are named _pc_cuda_*.
macro(paddle_core_cuda_kernels prefix target)
  set(${prefix}_CUDA AUTO CACHE STRING "Build the CUDA kernels: AUTO, ON or OFF")
  set_property(CACHE ${prefix}_CUDA PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${prefix}_CUDA}" _pc_cuda_wanted)
  if(NOT _pc_cuda_wanted MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${prefix}_CUDA must be AUTO, ON or OFF, got '${${prefix}_CUDA}'")
  endif()

  set(${prefix}_WITH_CUDA OFF)
  if(NOT _pc_cuda_wanted STREQUAL "OFF")
    # CMake looks for nvcc through CUDACXX, on PATH and in $CUDA_PATH/bin; also take the
    # toolkit's usual home. Handed over as CUDACXX, not CMAKE_CUDA_COMPILER, so that
    # check_language still tries it: an nvcc that cannot compile (a toolkit half removed)
    # means no CUDA kernels under AUTO. A compiler not found by an earlier configure is looked
    # for again: one may be here now.
    if(DEFINED CMAKE_CUDA_COMPILER AND NOT CMAKE_CUDA_COMPILER)
      unset(CMAKE_CUDA_COMPILER CACHE)
      unset(${prefix}_NVCC CACHE)
    endif()
    if(NOT DEFINED CMAKE_CUDA_COMPILER AND "$ENV{CUDACXX}" STREQUAL "")
      find_program(${prefix}_NVCC nvcc PATHS ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES bin)
      if(${prefix}_NVCC)
        set(ENV{CUDACXX} "${${prefix}_NVCC}")
      endif()
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
      set(${prefix}_WITH_CUDA ON)
    elseif(_pc_cuda_wanted STREQUAL "ON")
      message(FATAL_ERROR "${prefix}_CUDA=ON, but no working CUDA compiler was found "
                          "(put nvcc on PATH, or set CUDACXX or CMAKE_CUDA_COMPILER)")
    endif()
  endif()
  string(TOLOWER "${PROJECT_NAME}" _pc_cuda_name)
  string(REPLACE "_" "-" _pc_cuda_name "${_pc_cuda_name}")
  message(STATUS "${_pc_cuda_name} CUDA kernels: ${${prefix}_WITH_CUDA} "
                 "(${prefix}_CUDA=${${prefix}_CUDA})")

  if(${prefix}_WITH_CUDA)
    # A100 and H100/H200 unless the user chose. Must be set before enable_language, which
    # otherwise picks the compiler's default.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)

    add_library(${target} OBJECT ${ARGN})
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${target} PRIVATE paddle_core::sdk)
    # --expt-relaxed-constexpr: device code may call constexpr std functions (numeric_limits).
    target_compile_options(${target} PRIVATE --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra)
  endif()
endmacro()
