// Shared by the ETDump tests: an ETDumpGen's buffer written to a file, and that file read back
// through tools/etdump_report.py --json (the script users run), as JSON.
#pragma once

#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/shell.h"

namespace trtet_test {

/// Writes what `gen` holds (get_etdump_data: the tracer takes no more events afterwards) to `path`;
/// false where it holds nothing or the file cannot be written.
inline bool write_etdump(::executorch::etdump::ETDumpGen& gen, const std::string& path) {
  const ::executorch::etdump::ETDumpResult result = gen.get_etdump_data();
  if (result.buf == nullptr || result.size == 0) return false;
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(result.buf), static_cast<std::streamsize>(result.size));
  free(result.buf);  // ETDumpGen without a static buffer hands over a malloc'ed copy
  return static_cast<bool>(out);
}

/// `file` through tools/etdump_report.py --json (with this build's flatc and ExecuTorch's schema),
/// with `extra` arguments; the parsed JSON, or a null value with the script's output in `failure`.
inline nlohmann::json report_etdump(const std::string& file, std::string& failure, const std::string& extra = "") {
  const std::string command = std::string(TRTET_PYTHON) + " " + TRTET_SOURCE_DIR + "/tools/etdump_report.py '" +
                              file + "' --json --schema-dir '" + TRTET_ETDUMP_SCHEMA_DIR + "' --flatc '" +
                              TRTET_ETDUMP_FLATC + "' " + extra;
  const Ran ran = run_shell("(" + command + " 2>/dev/null)");  // stdout alone: the JSON
  if (ran.exit_code != 0) {
    failure = command + " exited " + std::to_string(ran.exit_code) + ": " + run_shell(command).output;
    return nullptr;
  }
  nlohmann::json parsed = nlohmann::json::parse(ran.output, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) failure = "not JSON: " + ran.output;
  return parsed.is_discarded() ? nlohmann::json(nullptr) : parsed;
}

/// The calls of `report` whose field `kind` is present.
inline int count_kind(const nlohmann::json& report, const char* kind) {
  int n = 0;
  for (const auto& call : report["calls"]) n += call.contains(kind) ? 1 : 0;
  return n;
}

}  // namespace trtet_test
