# cmake -DREADME=<README.md> -DOUT=<file.cpp> -P extract_readme_usage.cmake
# Writes README's usage snippet (the first ```cpp block under "## Usage") as a compilable function,
# trtet_readme_usage(method), for readme_usage_test.cpp. The snippet's lines are copied as written:
# #include and namespace lines at file scope, the rest as the function body; the one line added is
# the stream's creation, right after the snippet declares `stream` (where its comment says how).
file(READ "${README}" text)
string(FIND "${text}" "\n## Usage" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${README} has no '## Usage' section")
endif()
string(SUBSTRING "${text}" ${at} -1 text)
string(FIND "${text}" "```cpp\n" begin)
if(begin EQUAL -1)
  message(FATAL_ERROR "${README}: no ```cpp block under '## Usage'")
endif()
math(EXPR begin "${begin} + 7")
string(SUBSTRING "${text}" ${begin} -1 text)
string(FIND "${text}" "```" end)
string(SUBSTRING "${text}" 0 ${end} snippet)

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
