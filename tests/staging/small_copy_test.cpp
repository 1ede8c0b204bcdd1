// TRTET_SMALL_COPIES's reading (staging/small_copy.h), without a GPU: which way small chunks move.
#include "staging/small_copy.h"

#include <gtest/gtest.h>

namespace torch_tensorrt::executorch_backend::staging {
namespace {

TEST(SmallCopiesSetting, UnsetOrKernelIsTheCopyKernelAndEnginesTheCopyEnginesInAnyCase) {
  for (const char* value : {static_cast<const char*>(nullptr), "kernel", "KERNEL", "Kernel"}) {
    bool bad = true;
    EXPECT_EQ(parse_small_copies(value, &bad), SmallCopies::kKernel) << (value ? value : "(unset)");
    EXPECT_FALSE(bad) << (value ? value : "(unset)");
  }
  for (const char* value : {"engines", "ENGINES", "Engines"}) {
    bool bad = true;
    EXPECT_EQ(parse_small_copies(value, &bad), SmallCopies::kEngines) << value;
    EXPECT_FALSE(bad) << value;
  }
}

TEST(SmallCopiesSetting, AnythingElseIsTheDefaultAndSaysItWasBad) {
  for (const char* value : {"", "engine", "enginesx", "kernels", "0", "off", " engines", "engines "}) {
    bool bad = false;
    EXPECT_EQ(parse_small_copies(value, &bad), SmallCopies::kKernel) << '"' << value << '"';
    EXPECT_TRUE(bad) << '"' << value << '"';
  }
  EXPECT_EQ(parse_small_copies("engines", nullptr), SmallCopies::kEngines) << "no place to say it was bad";
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::staging
