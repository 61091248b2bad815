# paddle_core_record_kernels(<TARGET> DESTINATION <dir> [MODULE <name>] [RUNTIME <file>]):
# record what the kernel module <TARGET> exports, beside it, included by
# paddle_coreConfig.cmake.
#
# After <TARGET> (the plugin's pybind11 module, `_C`) is built, runs record_kernels.py on it
# and installs the result as <dir>/kernels.json, where install(TARGETS <TARGET> DESTINATION
# <dir>) puts the module: the directory of the manifest's kernel_module (`_C`, or a Python
# module beside it that imports it). Discovery reads it to learn each native kernel's dtypes
# (its class's DTypes) and the devices the build compiled, without importing the module, so
# manifests need not list dtypes. MODULE is the module's import name (default: <dir> with / as
# ., then the target's name); RUNTIME the core's compiled runtime to read kernels with
# (default: the installed paddle-core's, for this Python).
#
# The module is imported at build time, by the Python the plugin installs into (-E -P, as the
# SDK lookup), so the build must run on the machine it builds for (no cross-compiling); a
# build whose kernels need a library preloaded (a sanitizer's runtime) sets
# PADDLE_CORE_RECORD_ENV to the NAME=VALUE environment to run it with.
function(paddle_core_record_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESTINATION;MODULE;RUNTIME" "")
  if(NOT arg_DESTINATION)
    message(FATAL_ERROR "paddle_core_record_kernels(${target}): DESTINATION is required")
  endif()
  if(CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR "paddle_core_record_kernels(${target}) imports the built module to read "
                        "its kernels' dtypes, which a cross-compiling build cannot: build on "
                        "the platform the wheel is for")
  endif()
  get_target_property(_name ${target} OUTPUT_NAME)
  if(NOT _name)
    set(_name ${target})
  endif()
  if(NOT arg_MODULE)
    string(REPLACE "/" "." arg_MODULE "${arg_DESTINATION}.${_name}")
  endif()
  if(NOT arg_RUNTIME)  # the installed core's, for this Python
    file(GLOB arg_RUNTIME "${paddle_core_RUNTIME_DIR}/_runtime.${Python_SOABI}.*")
    list(LENGTH arg_RUNTIME _found)
    if(NOT _found EQUAL 1)
      message(FATAL_ERROR "expected one compiled runtime of paddle-core for ${Python_SOABI} in "
                          "${paddle_core_RUNTIME_DIR}, found: '${arg_RUNTIME}'")
    endif()
  endif()
  set(_record "${CMAKE_CURRENT_BINARY_DIR}/kernels.json")
  add_custom_command(
    OUTPUT "${_record}"
    COMMAND "${CMAKE_COMMAND}" -E env ${PADDLE_CORE_RECORD_ENV}
            "${Python_EXECUTABLE}" -E -P "${_paddle_core_record_script}" "${arg_RUNTIME}"
            "$<TARGET_FILE:${target}>" "${arg_MODULE}" "${_record}"
    DEPENDS ${target} "${arg_RUNTIME}" "${_paddle_core_record_script}"
    COMMENT "Recording the kernels of ${arg_MODULE}"
    VERBATIM)
  add_custom_target(${target}_kernel_record ALL DEPENDS "${_record}")
  install(FILES "${_record}" DESTINATION "${arg_DESTINATION}")
endfunction()

set(_paddle_core_record_script "${CMAKE_CURRENT_LIST_DIR}/record_kernels.py")
