// An application that includes TensorRTBackend.h and names nothing else from the library, linked
// with --as-needed: the header's reference keeps the library, so "TensorRTBackend" is registered.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/runtime/platform/runtime.h>

#include <cstdio>

int main() {
  executorch::runtime::runtime_init();
  if (executorch::runtime::get_backend_class("TensorRTBackend") == nullptr) {
    std::puts("TensorRTBackend is not registered: the linker dropped the library");
    return 1;
  }
  std::puts("TensorRTBackend registered in an --as-needed link");
  return 0;
}
