// A stand-in for a TensorRT runtime library, for the loader's host-only tests: it exports the two
// entry points runtime_library.h looks up (or, with TRTET_STUB_NO_CREATE, only the version), under
// a name no TensorRT library has, so it never shadows one; tests load it by path.
// createInferRuntime_INTERNAL counts its calls and returns the logger it was given, so a test can
// tell the call reached this library with its arguments.
#include <cstdint>

extern "C" {

__attribute__((visibility("default"))) std::int32_t getInferLibVersion() noexcept { return TRTET_STUB_VERSION; }

#if !defined(TRTET_STUB_NO_CREATE)
__attribute__((visibility("default"))) std::int32_t trtet_stub_last_version = 0;
__attribute__((visibility("default"))) void* createInferRuntime_INTERNAL(void* logger, std::int32_t version) noexcept {
  trtet_stub_last_version = version;
  return logger;
}
#endif
}
