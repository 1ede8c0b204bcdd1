#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include <nanobind/stl/string.h>

#include "common.h"

namespace trtet_py {

namespace {

thread_local std::string t_backend_message;

// The PAL's log function before ours (ExecuTorch's default, or the one executorch.runtime's _C
// registered): every message is passed on to it, so the application's logging is unchanged.
std::atomic<pal_emit_log_message_method> g_next_log{nullptr};

void emit_log(et_timestamp_t timestamp, et_pal_log_level_t level, const char* filename, const char* function,
              size_t line, const char* message, size_t length) {
  static constexpr char kPrefix[] = "TensorRTBackend";
  if ((level == kError || level == kFatal) && length >= sizeof(kPrefix) - 1 &&
      std::strncmp(message, kPrefix, sizeof(kPrefix) - 1) == 0) {
    std::string text(message, length);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (t_backend_message.empty()) {
      t_backend_message = std::move(text);
    } else if (t_backend_message.size() < 4096) {
      t_backend_message += "; " + text;
    }
  }
  const pal_emit_log_message_method next = g_next_log.load();
  if (next != nullptr && next != &emit_log) {
    next(timestamp, level, filename, function, line, message, length);
    return;
  }
  const unsigned long long us = timestamp / 1000;  // as ExecuTorch's default PAL prints it
  std::fprintf(stderr, "%c %02llu:%02llu:%02llu.%06llu executorch:%s:%zu] %.*s\n", static_cast<char>(level),
               us / 3600000000ull, us / 60000000ull % 60, us / 1000000ull % 60, us % 1000000ull,
               filename ? filename : "?", line, static_cast<int>(length), message);
}

}  // namespace

void clear_backend_message() noexcept {
  t_backend_message.clear();
  ensure_log_capture();  // a pointer compare when ours is still in place
}
const std::string& backend_message() noexcept { return t_backend_message; }

void ensure_log_capture() noexcept {
  const etr::PalImpl* current = etr::get_pal_impl();
  if (current == nullptr || current->emit_log_message == &emit_log) return;
  // Another PAL registered after ours (executorch.runtime's _C does at its import): chain to it.
  g_next_log.store(current->emit_log_message);
  etr::register_pal(etr::PalImpl::create(emit_log, __FILE__));
}

void install_log_capture() {
  etr::runtime_init();
  ensure_log_capture();
}

et::ErrorCode code_of(etr::Error error) noexcept {
  using E = etr::Error;
  switch (error) {
    case E::Ok: return et::ErrorCode::kOk;
    case E::InvalidArgument:
    case E::InvalidType: return et::ErrorCode::kInvalidArgument;
    case E::InvalidProgram: return et::ErrorCode::kInvalidProgram;
    case E::DelegateInvalidCompatibility: return et::ErrorCode::kIncompatible;
    case E::NotSupported:
    case E::NotImplemented: return et::ErrorCode::kNotSupported;
    case E::NotFound:
    case E::OperatorMissing: return et::ErrorCode::kNotFound;
    case E::MemoryAllocationFailed:
    case E::DelegateMemoryAllocationFailed: return et::ErrorCode::kMemoryAllocationFailed;
    case E::AccessFailed: return et::ErrorCode::kNoDevice;
    case E::InvalidState: return et::ErrorCode::kInvalidState;
    default: return et::ErrorCode::kInternal;
  }
}

void raise(et::ErrorCode code, std::string message) {
  PyError e;
  e.code = code;
  e.message = std::move(message);
  throw e;
}

void raise(const et::Error& error) {
  PyError e;
  e.code = error.ok() ? et::ErrorCode::kInternal : error.code();
  e.message = error.message();
  e.closest_valid = error.closest_valid();
  e.limits = error.limits();
  throw e;
}

void raise_executorch(etr::Error error, const std::string& what) {
  PyError e;
  e.code = code_of(error);
  char code[16];
  std::snprintf(code, sizeof code, "0x%x", static_cast<unsigned>(error));
  std::string name = etr::to_string(error);
  if (name.rfind("Error::", 0) == 0) name = name.substr(7);
  e.message = what + ": ExecuTorch error " + name + " (" + code + ")";
  if (!t_backend_message.empty()) e.message += ": " + t_backend_message;
  e.executorch_error = static_cast<int>(error);
  throw e;
}

void set_python_error(const PyError& e) noexcept {
  try {
    nb::object errors = nb::module_::import_("torchtrt_executorch._errors");
    nb::list closest;
    for (unsigned v : e.closest_valid) closest.append(v);
    nb::object limits = nb::none();
    if (e.limits.device >= 0) limits = limits_dict(e.limits);
    // A message quotes names from the program and the delegate's log, escaped to UTF-8 where they
    // are quoted; a byte that still is not UTF-8 goes in as \xNN rather than failing the exception.
    nb::object message = nb::steal(
        PyUnicode_DecodeUTF8(e.message.data(), static_cast<Py_ssize_t>(e.message.size()), "backslashreplace"));
    if (!message.is_valid()) throw nb::python_error();
    nb::object exc = errors.attr("_make")(et::to_string(e.code), message, e.executorch_error, closest, limits);
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  } catch (nb::python_error& pe) {
    pe.restore();
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, e.message.c_str());
  }
}

void bind_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const PyError& e) {
      nb::gil_scoped_acquire gil;  // translators run with the GIL held; this is a no-op then
      set_python_error(e);
    }
  });
  m.def("_error_code_names", [] {
    nb::list names;
    for (int c = 0; c <= static_cast<int>(et::ErrorCode::kInvalidState); ++c)
      names.append(et::to_string(static_cast<et::ErrorCode>(c)));
    return names;
  });
  auto raise_named = [](const std::string& code, std::string message) {
    for (int c = 1; c <= static_cast<int>(et::ErrorCode::kInvalidState); ++c) {
      if (code == et::to_string(static_cast<et::ErrorCode>(c))) raise(static_cast<et::ErrorCode>(c), std::move(message));
    }
    raise(et::ErrorCode::kInvalidArgument, "no error kind named '" + code + "'");
  };
  m.def("_raise_for_test", raise_named,
        "Raises the exception of error kind `code` from C++ (the translation the test suite checks).");
  m.def("_raise_for_test", [raise_named](const std::string& code, const nb::bytes& message) {
    raise_named(code, std::string(message.c_str(), message.size()));
  }, "The same with a message of raw bytes, as C++ may hold (not UTF-8 among them).");
}

}  // namespace trtet_py
