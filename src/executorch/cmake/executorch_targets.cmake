# The ExecuTorch targets this project links, made from whatever find_package(executorch) provided:
#
#   executorch::runtime         ExecuTorch's runtime (program, method, backend registry), with its
#                               include directories and the compile definitions its headers need
#   executorch::extension_cuda  ExecuTorch's shared CUDA caller-stream library, where it exists
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
