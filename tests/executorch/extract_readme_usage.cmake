# cmake -DREADME=<README.md> -DOUT=<file.cpp> -P extract_readme_usage.cmake
# Writes README's usage snippet (the first ```cpp block under "## Usage") as a compilable function,
# trtet_readme_usage(method), for readme_usage_test.cpp. The snippet's lines are copied as written:
# #include and namespace lines at file scope, the rest as the function body; the one line added is
# the stream's creation, right after the snippet declares `stream` (where its comment says how).
include("${CMAKE_CURRENT_LIST_DIR}/../common/readme_block.cmake")
trtet_readme_cpp_block(snippet "${README}" "## Usage")

string(REPLACE ";" "\\;" snippet "${snippet}")
string(REPLACE "\n" ";" lines "${snippet}")
set(prelude "")
set(body "")
set(declared FALSE)
foreach(line IN LISTS lines)
  if(line MATCHES "^#include" OR line MATCHES "^namespace ")
    string(APPEND prelude "${line}\n")
  else()
    string(APPEND body "  ${line}\n")
    if(line MATCHES "^cudaStream_t stream;")
      string(APPEND body "  stream = trtet_readme_stream();  // added: the stream the comment above describes\n")
      set(declared TRUE)
    endif()
  endif()
endforeach()
if(NOT declared)
  message(FATAL_ERROR "${README}: the usage snippet no longer declares 'cudaStream_t stream;': update this script")
endif()
file(WRITE "${OUT}.tmp"
"// Generated from ${README} (section \"Usage\") by tests/executorch/extract_readme_usage.cmake.\n"
"#include \"executorch/readme_usage.h\"\n"
"${prelude}\n"
"void trtet_readme_usage(executorch::runtime::Method* method) {\n"
"${body}}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
