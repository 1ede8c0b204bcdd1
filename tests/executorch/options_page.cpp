// Writes docs/OPTIONS.md from the options table (backend/options.cpp) to stdout. ctest's
// executorch_options_page_is_current fails when the committed page differs; regenerate with
//   build/tests/executorch/trtet_options_page > docs/OPTIONS.md
#include <cstdio>
#include <string>

#include "common/environment.h"
#include "backend/options.h"

namespace ex = torch_tensorrt::executorch_backend;

namespace {

std::string sources(const ex::OptionSpec& row) {
  std::string out;
  auto add = [&](unsigned bit, const char* name) {
    if ((row.sources & bit) == 0) return;
    if (!out.empty()) out += ", ";
    out += name;
  };
  add(ex::kFromLoadOption, "load option");
  add(ex::kFromCompileSpec, "compile spec");
  add(ex::kFromSetOption, "set_option");
  if (row.environment != nullptr) {
    if (!out.empty()) out += ", ";
    out += std::string("`") + row.environment + "`";
  }
  return out;
}

const char* type_name(ex::OptionType type) {
  switch (type) {
    case ex::OptionType::kBool: return "bool";
    case ex::OptionType::kWholeNumber: return "whole number";
    case ex::OptionType::kText: return "string";
  }
  return "?";
}

std::string range(const ex::OptionSpec& row) {
  if (row.type != ex::OptionType::kWholeNumber) return "";
  return std::to_string(row.min) + " to " + std::to_string(row.max);
}

std::string escape(const char* text) {
  std::string out;
  for (const char* c = text; *c != '\0'; ++c) out += *c == '|' ? std::string("\\|") : std::string(1, *c);
  return out;
}

}  // namespace

int main() {
  std::printf(
      "# Options\n\n"
      "<!-- Written by tests/executorch/options_page.cpp from the table in src/backend/options.cpp; ctest\n"
      "     (executorch_options_page_is_current) fails when this page differs. Do not edit by hand. -->\n\n"
      "Every option of the \"TensorRTBackend\" delegate, from one table in `src/backend/options.cpp`.\n\n"
      "Sources:\n\n"
      "- **load option**: a load-time backend option from the application, given to ExecuTorch's\n"
      "  `LoadBackendOptionsMap` under \"TensorRTBackend\" (Python: keyword arguments of `load`).\n"
      "  It wins over a compile spec of the same key. A bad value is `InvalidArgument`. A key the\n"
      "  backend does not have is refused too, and the message lists the keys it does have.\n"
      "- **compile spec**: baked into the program when it was compiled. A program is untrusted input:\n"
      "  a bad or repeated value is `InvalidProgram`. Compile specs with other keys are ignored.\n"
      "  Options that choose which code runs, or cap what a program may ask for, are never read from a\n"
      "  compile spec.\n"
      "- **set_option**: `executorch::runtime::set_option(\"TensorRTBackend\", options)` sets the\n"
      "  process-wide default for methods loaded later. A load option still wins, and methods that are\n"
      "  already loaded keep their values. Every option is checked before any is applied, so one bad\n"
      "  option changes nothing. `get_option` reads the current defaults back as ints.\n"
      "- **environment**: a variable of the process, named `%s<NAME>`. The old `%s<NAME>`\n"
      "  spelling is still read when the new one is unset, with a warning the first time.\n\n"
      "A whole number is an int or a string of decimal digits (no sign, blank or unit). A bool is a\n"
      "bool or the int 0 or 1. In a compile spec, a bool is `1`, `0`, `true`, `false`, `True` or `False`.\n"
      "An option given several times as a load option takes the last value.\n\n"
      "| Key | Sources | Type | Unit | Range | Default | Fills | Meaning |\n"
      "|---|---|---|---|---|---|---|---|\n",
      ex::kEnvironmentPrefix, ex::kDeprecatedEnvironmentPrefix);
  for (const ex::OptionSpec& row : ex::option_table()) {
    std::printf("| `%s` | %s | %s | %s | %s | %s | `%s` | %s |\n", row.key, sources(row).c_str(), type_name(row.type),
                row.unit, range(row).c_str(), escape(row.default_text).c_str(), row.field, escape(row.meaning).c_str());
  }
  std::printf(
      "\nRows whose only source is a variable are read once by the process. A bad `TRTET_COPY_WORKERS` is\n"
      "warned about and the default is used. `TRTET_TENSORRT_RUNTIME` and `TRTET_ALLOW_ENGINE_HOST_CODE`\n"
      "apply only where the load option is not given. docs/SECURITY.md explains which options bound what\n"
      "a program may make the runtime do.\n");
  std::printf("\n## What each option does\n");
  for (const ex::OptionSpec& row : ex::option_table()) {
    if (row.details[0] == '\0') continue;
    std::printf("\n### `%s`\n\n%s\n", row.key, row.details);
  }
  return 0;
}
