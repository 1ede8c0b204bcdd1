# Compiles a use of CudaStreamGuard and checks the compiler's verdict (ctest -P script):
#   -DCXX=<compiler> -DINCLUDES=<dir;dir> -DARG=<the guard's argument> -DEXPECT=compiles|refused
# "refused" also requires the compiler to name the deleted constructor, so that a snippet failing
# for another reason (a missing header) does not pass.
string(MAKE_C_IDENTIFIER "${ARG}" tag)
set(source "${WORK}/guard_literal_${tag}.cpp")
file(WRITE "${source}" "#include <torch_tensorrt/executorch/CudaStreamGuard.h>
void use(cudaStream_t stream) {
  (void)stream;
  torch_tensorrt::executorch_backend::CudaStreamGuard guard(${ARG});
}
")
set(flags -std=c++17 -fsyntax-only)
foreach(dir IN LISTS INCLUDES)
  list(APPEND flags -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${flags} ${source} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(EXPECT STREQUAL "compiles")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "CudaStreamGuard guard(${ARG}) should compile:\n${out}")
  endif()
elseif(rc EQUAL 0)
  message(FATAL_ERROR "CudaStreamGuard guard(${ARG}) compiled; it must not")
elseif(NOT out MATCHES "deleted")
  message(FATAL_ERROR "CudaStreamGuard guard(${ARG}) failed, but not on the deleted constructor:\n${out}")
else()
  message(STATUS "CudaStreamGuard guard(${ARG}) is refused: ${ARG} names no stream")
endif()
