# cmake -DREADME=<README.md> -DOUT=<file.cpp> -P extract_readme_partitions.cmake
# Writes README's partitions example (the first ```cpp block under "### Partitions of the GPU" in
# "## Usage") to OUT exactly as written: it is a complete translation unit, compiled as it stands
# and called by readme_partitions_gpu_test.cpp. Same pattern as tests/executorch/extract_readme_usage.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/../common/readme_block.cmake")
trtet_readme_cpp_block(snippet "${README}" "## Usage" "### Partitions of the GPU")
foreach(required IN ITEMS "#include <torch_tensorrt/executorch/GreenContext.h>" "bool run_on_32_sms(")
  string(FIND "${snippet}" "${required}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "${README}: the partitions example no longer has '${required}': update this script and "
      "readme_partitions_gpu_test.cpp")
  endif()
endforeach()
file(WRITE "${OUT}.tmp"
"// Generated from ${README} (\"### Partitions of the GPU\") by tests/tools/extract_readme_partitions.cmake.\n"
"${snippet}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
