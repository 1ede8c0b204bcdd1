# ctest executorch_options_page_is_current: -DTOOL=<trtet_options_page> -DPAGE=<docs/OPTIONS.md> -DOUT=<scratch>
execute_process(COMMAND "${TOOL}" OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} failed (${rc})")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${OUT}" "${PAGE}" RESULT_VARIABLE differs)
if(NOT differs EQUAL 0)
  message(FATAL_ERROR "docs/OPTIONS.md differs from the options table (src/backend/options.cpp); "
    "regenerate it: ${TOOL} > docs/OPTIONS.md (see ${OUT})")
endif()
message(STATUS "docs/OPTIONS.md matches the options table")
