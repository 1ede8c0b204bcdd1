# cmake -DREADME=<README.md> -DOUT=<file.cpp> -P extract_readme_partitions.cmake
# Writes README's partitions example (the first ```cpp block under "### Partitions of the GPU" in
# "## Usage") to OUT exactly as written: it is a complete translation unit, compiled as it stands
# and called by readme_partitions_gpu_test.cpp. Same pattern as tests/executorch/extract_readme_usage.cmake.
file(READ "${README}" text)
string(FIND "${text}" "\n## Usage" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} has no '## Usage' section")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
string(FIND "${text}" "\n### Partitions of the GPU" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README}: no '### Partitions of the GPU' under '## Usage': update this script")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
string(FIND "${text}" "```cpp\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block under '### Partitions of the GPU'")
endif()
math(EXPR begin "${begin} + 7")
string(SUBSTRING "${text}" ${begin} -1 text)
string(FIND "${text}" "```" end)
string(SUBSTRING "${text}" 0 ${end} snippet)
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
