# trtet_readme_cpp_block(<out-var> <README> <heading>...): the first ```cpp block of README.md under
# the given headings, each searched for after the one before (e.g. "## Usage" "### Partitions of the
# GPU"). Fails the script, naming what is missing, when a heading or the block is not there.
# Used by the scripts that compile README's examples as written (extract_readme_*.cmake).
function(trtet_readme_cpp_block out readme)
  file(READ "${readme}" text)
  foreach(heading IN LISTS ARGN)
    string(FIND "${text}" "\n${heading}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${readme}: no '${heading}' section where the tests expect it: update the script")
    endif()
    string(SUBSTRING "${text}" ${at} -1 text)
  endforeach()
  string(FIND "${text}" "```cpp\n" begin)
  if(begin EQUAL -1)
    message(FATAL_ERROR "${readme}: no ```cpp block under '${ARGN}'")
  endif()
  math(EXPR begin "${begin} + 7")
  string(SUBSTRING "${text}" ${begin} -1 text)
  string(FIND "${text}" "```" end)
  string(SUBSTRING "${text}" 0 ${end} snippet)
  set(${out} "${snippet}" PARENT_SCOPE)
endfunction()

# trtet_write_doc_example(<doc> <out> <snippet> <what> <users> <generated-from> REQUIRED <string>...):
# fails the script, naming <what> and the tests to update (<users>), when the snippet lacks one of
# the REQUIRED strings; otherwise writes it to <out> exactly as written under a "// Generated from"
# line (<generated-from>), touching <out> only when it changes.
function(trtet_write_doc_example doc out snippet what users generated_from)
  cmake_parse_arguments(PARSE_ARGV 6 arg "" "" "REQUIRED")
  foreach(required IN LISTS arg_REQUIRED)
    string(FIND "${snippet}" "${required}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "${doc}: the ${what} no longer has '${required}': update this script and ${users}")
    endif()
  endforeach()
  file(WRITE "${out}.tmp" "// Generated from ${doc} ${generated_from}.\n${snippet}")
  file(COPY_FILE "${out}.tmp" "${out}" ONLY_IF_DIFFERENT)
endfunction()
