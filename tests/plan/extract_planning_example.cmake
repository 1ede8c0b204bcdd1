# cmake -DDOC=<docs/PLANNING.md> -DOUT=<file.cpp> -P extract_planning_example.cmake
# Writes PLANNING.md's example (the first ```cpp block under "### Applying the plan" in "## Three
# commands and the plot") to OUT exactly as written: a complete translation unit, compiled as it
# stands and called by planning_example_test.cpp (CPU) and planning_example_gpu_test.cpp (GPU).
# The pattern of tests/tools/extract_readme_partitions.cmake, over the same block finder.
include("${CMAKE_CURRENT_LIST_DIR}/../common/readme_block.cmake")
trtet_readme_cpp_block(snippet "${DOC}" "## Three commands and the plot" "### Applying the plan")
foreach(required IN ITEMS "#include <torch_tensorrt/executorch/PartitionPlan.h>" "bool run_as_planned(")
  string(FIND "${snippet}" "${required}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "${DOC}: the plan example no longer has '${required}': update this script and "
      "planning_example_test.cpp, planning_example_gpu_test.cpp")
  endif()
endforeach()
file(WRITE "${OUT}.tmp"
"// Generated from ${DOC} (\"### Applying the plan\") by tests/plan/extract_planning_example.cmake.\n"
"${snippet}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
