#include "run/engines.h"


#if TRTET_RUN_HAVE_TEST_ENGINES
#include "engines/recording_factory.h"
#endif

namespace trtet_run {

#if TRTET_RUN_HAVE_TEST_ENGINES

bool have_test_engines() { return true; }

ex::Status install_test_engine_factory() { return trtet_test::install_recording_test_engine_factory(); }

ex::Status clear_engine_sms() { return trtet_test::clear_engine_sms(); }

ex::Result<std::optional<std::vector<int>>> engine_sms() { return trtet_test::engine_sms(); }

#else

bool have_test_engines() { return false; }

ex::Status install_test_engine_factory() {
  return ex::make_error(ex::ErrorCode::kNotSupported, "this build has no test engines (TRTET_BUILD_TESTS=OFF)");
}

ex::Status clear_engine_sms() { return ex::Status::Ok(); }

ex::Result<std::optional<std::vector<int>>> engine_sms() { return std::optional<std::vector<int>>(); }

#endif

}  // namespace trtet_run
