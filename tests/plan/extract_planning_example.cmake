# cmake -DDOC=<docs/PLANNING.md> -DOUT=<file.cpp> -P extract_planning_example.cmake
# Writes PLANNING.md's example (the first ```cpp block under "### Applying the plan" in "## Three
# commands and the plot") to OUT exactly as written: a complete translation unit, compiled as it
# stands and called by planning_example_test.cpp (CPU) and planning_example_gpu_test.cpp (GPU).
# The pattern of tests/tools/extract_readme_partitions.cmake, over the same block finder.
include("${CMAKE_CURRENT_LIST_DIR}/../common/readme_block.cmake")
trtet_readme_cpp_block(snippet "${DOC}" "## Three commands and the plot" "### Applying the plan")
trtet_write_doc_example("${DOC}" "${OUT}" "${snippet}" "plan example"
  "planning_example_test.cpp, planning_example_gpu_test.cpp"
  "(\"### Applying the plan\") by tests/plan/extract_planning_example.cmake"
  REQUIRED "#include <torch_tensorrt/executorch/PartitionPlan.h>" "bool run_as_planned(")
