# The ExecuTorch targets this project links, made from whatever find_package(executorch) provided:
#
#   executorch::runtime         ExecuTorch's runtime (program, method, backend registry), with its
#                               include directories and the compile definitions its headers need
#   executorch::extension_cuda  ExecuTorch's shared CUDA caller-stream library, where it exists
#   executorch::kernels         ExecuTorch's CPU operator kernels (kernels_optimized, every portable
#                               and optimized operator, et_copy's boundary copies among them) with
#                               the thread pool they need, linked so that their static registrations
#                               run (a registration-only library the linker would otherwise drop),
#                               where the install has them; a program with CPU operators needs it
#   executorch::threadpool, executorch::kernels_optimized, executorch::etdump
#                               the parts, where the install has them (the wheel's own names)
#
# trtet_executorch_has_kernels(<out>) says whether executorch::kernels exists.
#
# The wheel's package defines both itself on CMake >= 3.28; on older CMake it offers only
# variables (EXECUTORCH_INCLUDE_DIRS, EXECUTORCH_COMPILE_DEFINITIONS, EXECUTORCH_RUNTIME_LIBRARY_DIR),
# and a source build's install exports bare names (executorch-shared, executorch_core,
# extension_cuda). This file is used by the build and installed beside the package config, so a
# consumer of the installed package gets the same names.
function(trtet_executorch_targets)
  # ---- executorch::runtime ----
  if(NOT TARGET executorch::runtime)
    if(TARGET executorch-shared)
      add_library(executorch::runtime INTERFACE IMPORTED)
      target_link_libraries(executorch::runtime INTERFACE executorch-shared)
    elseif(TARGET executorch_core)
      # A static runtime: the backend registry would be copied into every shared object that
      # links it, so a backend registered here could be invisible to the application.
      message(WARNING "ExecuTorch at ${executorch_DIR} has no shared runtime (executorch-shared); "
        "linking the static executorch_core: the application must link it only through this library")
      add_library(executorch::runtime INTERFACE IMPORTED)
      target_link_libraries(executorch::runtime INTERFACE executorch executorch_core)
    elseif(EXECUTORCH_RUNTIME_LIBRARY_DIR AND EXISTS "${EXECUTORCH_RUNTIME_LIBRARY_DIR}/libexecutorch.so")
      # The wheel's package on CMake < 3.28: the same target its config defines on newer CMake.
      add_library(executorch::runtime SHARED IMPORTED)
      set_target_properties(executorch::runtime PROPERTIES
        IMPORTED_LOCATION "${EXECUTORCH_RUNTIME_LIBRARY_DIR}/libexecutorch.so"
        IMPORTED_SONAME libexecutorch.so
        INTERFACE_INCLUDE_DIRECTORIES "${EXECUTORCH_INCLUDE_DIRS}"
        INTERFACE_COMPILE_DEFINITIONS "${EXECUTORCH_COMPILE_DEFINITIONS}"
        INTERFACE_COMPILE_FEATURES cxx_std_17)
    else()
      message(STATUS "ExecuTorch at ${executorch_DIR} offers no runtime library to link")
      return()
    endif()
  endif()

  # ---- executorch::extension_cuda (optional) ----
  if(NOT TARGET executorch::extension_cuda)
    if(TARGET extension_cuda)
      add_library(executorch::extension_cuda INTERFACE IMPORTED)
      target_link_libraries(executorch::extension_cuda INTERFACE extension_cuda)
    else()
      set(_lib "")
      foreach(_dir IN ITEMS "${EXECUTORCH_RUNTIME_LIBRARY_DIR}" "${EXECUTORCH_ROOT}/lib")
        foreach(_name IN ITEMS libexecutorch_extension_cuda.so libextension_cuda.so)
          if(NOT _lib AND _dir AND EXISTS "${_dir}/${_name}")
            set(_lib "${_dir}/${_name}")
            set(_soname "${_name}")
          endif()
        endforeach()
      endforeach()
      if(_lib)
        add_library(executorch::extension_cuda SHARED IMPORTED)
        set_target_properties(executorch::extension_cuda PROPERTIES
          IMPORTED_LOCATION "${_lib}"
          IMPORTED_SONAME "${_soname}"
          INTERFACE_LINK_LIBRARIES executorch::runtime)
      endif()
    endif()
  endif()

  # ---- executorch::threadpool, executorch::kernels_optimized, executorch::etdump (optional) ----
  # The wheel's package defines them on CMake >= 3.28; otherwise from a source build's bare names or
  # the wheel's files beside the runtime.
  _trtet_executorch_component(threadpool executorch_threadpool SOURCE_TARGETS extension_threadpool)
  _trtet_executorch_component(kernels_optimized executorch_kernels_optimized
    SOURCE_TARGETS optimized_native_cpu_ops_lib portable_ops_lib WHOLE_ARCHIVE)
  _trtet_executorch_component(etdump executorch_etdump SOURCE_TARGETS etdump)
  # As the wheel's package does on CMake >= 3.28: its variables (older CMake) carry ET_USE_THREADPOOL
  # whenever the thread pool shipped, which makes thread_parallel_interface.h declare what only the
  # thread pool library defines, so the runtime links it.
  if(TARGET executorch::threadpool AND NOT TARGET executorch-shared AND NOT TARGET executorch_core)
    get_target_property(_defs executorch::runtime INTERFACE_COMPILE_DEFINITIONS)
    get_target_property(_links executorch::runtime INTERFACE_LINK_LIBRARIES)
    if(_defs AND "ET_USE_THREADPOOL" IN_LIST _defs AND NOT (_links AND "executorch::threadpool" IN_LIST _links))
      set_property(TARGET executorch::runtime APPEND PROPERTY INTERFACE_LINK_LIBRARIES executorch::threadpool)
    endif()
  endif()

  # ---- executorch::kernels: the CPU kernels and their thread pool, kept on the link line ----
  if(NOT TARGET executorch::kernels AND TARGET executorch::kernels_optimized)
    add_library(executorch::kernels INTERFACE IMPORTED)
    target_link_libraries(executorch::kernels INTERFACE executorch::kernels_optimized executorch::runtime)
    if(TARGET executorch::threadpool)
      target_link_libraries(executorch::kernels INTERFACE executorch::threadpool)
    endif()
  endif()
endfunction()

# _trtet_executorch_component(<suffix> <library base name> [SOURCE_TARGETS <name>...] [WHOLE_ARCHIVE]):
# executorch::<suffix> from, in order: the target the package defined, a source build's install
# target (a static one linked whole with WHOLE_ARCHIVE, so its registrations are kept), or
# lib<base>.so beside the runtime (a shared library recorded as NEEDED even under --as-needed,
# since an application references none of its symbols and its registrations run at load).
function(_trtet_executorch_component suffix base)
  cmake_parse_arguments(ARG "WHOLE_ARCHIVE" "" "SOURCE_TARGETS" ${ARGN})
  set(_target executorch::${suffix})
  if(TARGET ${_target})
    return()
  endif()
  foreach(_source IN LISTS ARG_SOURCE_TARGETS)
    if(TARGET ${_source})
      add_library(${_target} INTERFACE IMPORTED)
      get_target_property(_type ${_source} TYPE)
      if(ARG_WHOLE_ARCHIVE AND _type STREQUAL "STATIC_LIBRARY")
        target_link_libraries(${_target} INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${_source}>")
      else()
        target_link_libraries(${_target} INTERFACE ${_source})
      endif()
      return()
    endif()
  endforeach()
  set(_lib "")
  foreach(_dir IN ITEMS "${EXECUTORCH_RUNTIME_LIBRARY_DIR}" "${EXECUTORCH_ROOT}/lib")
    if(NOT _lib AND _dir AND EXISTS "${_dir}/lib${base}.so")
      set(_lib "${_dir}/lib${base}.so")
    endif()
  endforeach()
  if(NOT _lib)
    return()
  endif()
  add_library(${_target} SHARED IMPORTED)
  set_target_properties(${_target} PROPERTIES
    IMPORTED_LOCATION "${_lib}"
    IMPORTED_SONAME "lib${base}.so"
    INTERFACE_LINK_LIBRARIES executorch::runtime)
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
    # One option per library (CMake drops repeated identical options): --no-as-needed only for it.
    set_property(TARGET ${_target} APPEND PROPERTY INTERFACE_LINK_OPTIONS
      "LINKER:--push-state,--no-as-needed,${_lib},--pop-state")
  endif()
endfunction()

# True in `out` when executorch::kernels exists (a program with CPU operators can run).
function(trtet_executorch_has_kernels out)
  if(TARGET executorch::kernels)
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# True in `out` when executorch::extension_cuda exists and ExecuTorch's caller_stream.h is among the runtime's headers.
function(trtet_executorch_has_caller_stream out)
  set(${out} FALSE PARENT_SCOPE)
  if(NOT TARGET executorch::extension_cuda)
    return()
  endif()
  get_target_property(_dirs executorch::runtime INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _dirs)
    set(_dirs "${EXECUTORCH_INCLUDE_DIRS}")
  endif()
  foreach(_dir IN LISTS _dirs)
    if(EXISTS "${_dir}/executorch/extension/cuda/caller_stream.h")
      set(${out} TRUE PARENT_SCOPE)
    endif()
  endforeach()
endfunction()
