# cmake -DREADME=<README.md> -DOUT=<file.cpp> -P extract_readme_partitions.cmake
# Writes README's partitions example (the first ```cpp block under "### Partitions of the GPU" in
# "## Usage") to OUT exactly as written: it is a complete translation unit, compiled as it stands
# and called by readme_partitions_gpu_test.cpp. Same pattern as tests/executorch/extract_readme_usage.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/../common/readme_block.cmake")
trtet_readme_cpp_block(snippet "${README}" "## Usage" "### Partitions of the GPU")
trtet_write_doc_example("${README}" "${OUT}" "${snippet}" "partitions example"
  "readme_partitions_gpu_test.cpp"
  "(\"### Partitions of the GPU\") by tests/tools/extract_readme_partitions.cmake"
  REQUIRED "#include <torch_tensorrt/executorch/GreenContext.h>" "bool run_on_32_sms(")
