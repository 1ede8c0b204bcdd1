// What README's usage snippet needs around it (see extract_readme_usage.cmake).
#pragma once

#include <cuda_runtime_api.h>

#include <executorch/runtime/executor/method.h>

/// The stream the snippet's comment describes: a green-context stream the test made.
cudaStream_t trtet_readme_stream();
/// README's snippet as written, with `method` loaded by the test.
void trtet_readme_usage(executorch::runtime::Method* method);
