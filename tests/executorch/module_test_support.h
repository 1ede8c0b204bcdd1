// The names every test that runs a program through ExecuTorch's Module uses.
#pragma once

#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include "executorch/executorch_test_support.h"

namespace trtet_test {

using etr::Error;
using ::executorch::extension::from_blob;
using ::executorch::extension::Module;

}  // namespace trtet_test
