# cmake -DLIBRARY=<libtorchtrt_executorch_backend.so> -P links_no_tensorrt.cmake
# Fails when the library needs a TensorRT library (DT_NEEDED) or leaves a TensorRT symbol undefined:
# the adapter reaches TensorRT only through dlopen/dlsym (src/tensorrt/runtime_library.h).
find_program(READELF readelf REQUIRED)
find_program(NM nm REQUIRED)

# Runs the command in ARGN on LIBRARY; its output in `out`. Fails, naming `what`, where it fails.
function(run_on_library out what)
  execute_process(COMMAND ${ARGN} ${LIBRARY} OUTPUT_VARIABLE output RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} ${LIBRARY} failed")
  endif()
  set(${out} "${output}" PARENT_SCOPE)
endfunction()

run_on_library(dynamic "readelf -d" ${READELF} -d)
if(dynamic MATCHES "NEEDED[^\n]*nvinfer[^\n]*")
  message(FATAL_ERROR "${LIBRARY} links a TensorRT library: ${CMAKE_MATCH_0}")
endif()
run_on_library(undefined "nm -D" ${NM} -D --undefined-only)
if(undefined MATCHES "[^\n]*(createInferRuntime|getInferLibVersion|nvinfer1)[^\n]*")
  message(FATAL_ERROR "${LIBRARY} leaves a TensorRT symbol to the dynamic linker: ${CMAKE_MATCH_0}")
endif()
message(STATUS "${LIBRARY}: no TensorRT library needed, no TensorRT symbol undefined")
