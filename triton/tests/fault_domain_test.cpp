// The fault domain's fail-fast (Note [the fault domain], fault.h) through the backend's own entry
// points, against the stand-in for Triton's C API (fake_server.h): before the process is poisoned, an
// execute answers a request with its own reason; once a sticky CUDA error has poisoned it, every
// request of every execute is answered at once with UNAVAILABLE and the first cause, released and not
// counted as served, and a model's load is refused with the cause. A binary of its own: a poisoned
// process stays poisoned.
#include "fake_server.h"
#include "fault.h"
#include "finish.h"
#include "instance.h"
#include "model.h"
#include "test_model.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace {

using fake_server::Call;

TEST(FaultDomain, OncePoisonedEveryRequestFailsFastWithTheCauseAndNoModelLoads) {
  fake_server::reset();
  trtet_triton::ModelState model;
  trtet_triton_test::two_input_model(model, "bystander", 0);
  trtet_triton::InstanceState state;
  state.model = &model;
  state.name = "bystander_0_0";
  state.triton = fake_server::instance();
  fake_server::set_instance_state(&state);
  fake_server::set_request(0, {{"input_0", TRITONSERVER_TYPE_FP32, {2, 64}}});  // one input of two
  fake_server::set_request(1, {{"input_0", TRITONSERVER_TYPE_FP32, {2, 64}}, {"input_1", TRITONSERVER_TYPE_FP32, {2, 64}}});
  TRITONBACKEND_Request* first[] = {fake_server::request(0)};

  // Not poisoned: the request's own reason.
  std::string cause;
  ASSERT_FALSE(trtet_triton::process_poisoned(cause));
  ASSERT_EQ(TRITONBACKEND_ModelInstanceExecute(fake_server::instance(), first, 1), nullptr);
  auto calls = fake_server::calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].what, "send");
  EXPECT_EQ(calls[0].code, TRITONSERVER_ERROR_INVALID_ARG);
  EXPECT_NE(calls[0].message.find("the request has 1 inputs; model 'bystander' takes 2"), std::string::npos)
      << calls[0].message;

  // A sticky error elsewhere in the process (another model's kernel): every request now fails at once.
  fake_server::reset();
  trtet_triton::poison_process("model 'A': an illegal memory access was encountered (planted)");
  ASSERT_TRUE(trtet_triton::process_poisoned(cause));
  TRITONBACKEND_Request* both[] = {fake_server::request(0), fake_server::request(1)};
  ASSERT_EQ(TRITONBACKEND_ModelInstanceExecute(fake_server::instance(), both, 2), nullptr);
  calls = fake_server::calls();
  std::vector<std::string> kinds;
  for (const Call& c : calls) kinds.push_back(c.what);
  ASSERT_EQ(kinds, (std::vector<std::string>{"send", "stats", "release", "send", "stats", "release"}))
      << "each request answered, counted as failed and released; no batch counted";
  for (int k = 0; k < 2; ++k) {
    const Call& send = calls[3 * k];
    EXPECT_EQ(send.request, reinterpret_cast<std::uintptr_t>(fake_server::response(k)));
    EXPECT_EQ(send.code, TRITONSERVER_ERROR_UNAVAILABLE);
    EXPECT_NE(send.message.find("model 'bystander': this process's CUDA context was lost (model 'A': an illegal "
                                "memory access was encountered (planted)); the server serves nothing more and stops: "
                                "restart it"),
              std::string::npos)
        << send.message;
    EXPECT_FALSE(calls[3 * k + 1].success);
    EXPECT_EQ(calls[3 * k + 2].request, reinterpret_cast<std::uintptr_t>(fake_server::request(k)));
  }

  // The same where the instance sends from its completion thread: answered there, in order.
  fake_server::reset();
  trtet_triton::start_completion_thread(state);
  const std::thread::id completer = state.completer->id();
  ASSERT_EQ(TRITONBACKEND_ModelInstanceExecute(fake_server::instance(), both, 2), nullptr);
  state.completer.reset();  // every request handed over is finished first
  calls = fake_server::calls();
  kinds.clear();
  for (const Call& c : calls) kinds.push_back(c.what);
  ASSERT_EQ(kinds, (std::vector<std::string>{"send", "stats", "release", "send", "stats", "release"}));
  for (const Call& c : calls) EXPECT_EQ(c.thread, completer) << c.what;
  EXPECT_EQ(calls[0].code, TRITONSERVER_ERROR_UNAVAILABLE);
  EXPECT_EQ(calls[3].request, reinterpret_cast<std::uintptr_t>(fake_server::response(1)));

  // And no model loads in it.
  TRITONSERVER_Error* load = TRITONBACKEND_ModelInitialize(fake_server::model());
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(TRITONSERVER_ErrorCode(load), TRITONSERVER_ERROR_UNAVAILABLE);
  EXPECT_NE(std::string(TRITONSERVER_ErrorMessage(load)).find("this process's CUDA context was lost (model 'A'"),
            std::string::npos)
      << TRITONSERVER_ErrorMessage(load);
  TRITONSERVER_ErrorDelete(load);
  EXPECT_EQ(fake_server::live_errors(), 0);
  fake_server::set_instance_state(nullptr);
}

}  // namespace
