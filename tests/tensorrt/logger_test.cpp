// tensorrt/logger.h: TensorRT severities routed to our log levels, and the last error kept per thread.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "tensorrt/logger.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

using Severity = nvinfer1::ILogger::Severity;

TEST(TensorRTLogger, SeverityLevels) {
  EXPECT_EQ(log_level_of(Severity::kINTERNAL_ERROR), LogLevel::kError);
  EXPECT_EQ(log_level_of(Severity::kERROR), LogLevel::kError);
  EXPECT_EQ(log_level_of(Severity::kWARNING), LogLevel::kWarning);
  EXPECT_EQ(log_level_of(Severity::kINFO), LogLevel::kDebug);
  EXPECT_EQ(log_level_of(Severity::kVERBOSE), std::nullopt);
  EXPECT_EQ(log_level_of(static_cast<Severity>(42)), LogLevel::kWarning);
}

TEST(TensorRTLogger, KeepsTheLastErrorOfThisThread) {
  clear_last_error();
  EXPECT_EQ(last_error_suffix(), "");
  logger().log(Severity::kWARNING, "only a warning");
  EXPECT_EQ(last_error_suffix(), "");
  logger().log(Severity::kERROR, "first");
  logger().log(Severity::kINTERNAL_ERROR, "second");
  EXPECT_EQ(last_error_suffix(), ": second");
  std::thread other([] { EXPECT_EQ(last_error_suffix(), ""); });
  other.join();
  clear_last_error();
  EXPECT_EQ(last_error_suffix(), "");
}

TEST(TensorRTLogger, IsOneProcessWideInstance) {
  EXPECT_EQ(&logger(), &logger());
  logger().log(Severity::kERROR, nullptr);  // tolerated
  EXPECT_EQ(last_error_suffix(), ": (no message)");
  clear_last_error();
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
