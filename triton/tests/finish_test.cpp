// Finishing a request (triton/src/finish.cpp; Note [sending from a completion thread]) against a
// stand-in for Triton's C API (fake_server.h) that records each call with its thread and time: in the
// instance's thread, each request is sent, counted and released before the next, and the batch is
// counted at the end; on the completion thread, the instance's thread goes on while a send is under
// way, the requests go out in order on that thread, each counted with its end taken before its send,
// and the batch counted before its last request is released. Every error is deleted once. No server
// and no GPU.
#include "fake_server.h"
#include "finish.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using fake_server::Call;
using trtet_triton::ExecuteFinisher;
using trtet_triton::FinishedRequest;
using trtet_triton::InstanceState;

std::uintptr_t handle(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

FinishedRequest served(int k, std::uint64_t compute_start, std::uint64_t compute_end, std::uint64_t rows = 1) {
  FinishedRequest done;
  done.request = fake_server::request(k);
  done.response = fake_server::response(k);
  done.ok = true;
  done.compute_start = compute_start;
  done.compute_end = compute_end;
  done.rows = rows;
  return done;
}

FinishedRequest failed(int k, std::uint64_t at, const char* why) {
  FinishedRequest done;
  done.request = fake_server::request(k);
  done.response = fake_server::response(k);
  done.error = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, why);
  done.compute_start = done.compute_end = at;
  return done;
}

std::vector<std::string> kinds(const std::vector<Call>& calls) {
  std::vector<std::string> out;
  for (const Call& c : calls) out.push_back(c.what);
  return out;
}

class Finish : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_server::reset();
    state_.triton = fake_server::instance();
  }
  void TearDown() override { fake_server::reset(); }
  InstanceState state_;
};

TEST_F(Finish, InTheInstancesThreadEachRequestIsSentCountedAndReleasedInTurn) {
  ExecuteFinisher finisher(state_, 1000);
  finisher.finish(served(0, 2000, 3000), false);
  finisher.finish(failed(1, 3100, "input 'x' has shape [9, 64]"), false);
  finisher.finish(served(2, 3200, 4000), true);
  finisher.end();
  const auto calls = fake_server::calls();
  ASSERT_EQ(kinds(calls), (std::vector<std::string>{"send", "stats", "release", "send", "stats", "release", "send",
                                                    "stats", "release", "batch_stats"}));
  for (const Call& c : calls) EXPECT_EQ(c.thread, std::this_thread::get_id()) << c.what;
  for (int k = 0; k < 3; ++k) {
    const Call& send = calls[3 * k];
    const Call& stats = calls[3 * k + 1];
    const Call& release = calls[3 * k + 2];
    EXPECT_EQ(send.request, handle(fake_server::response(k)));
    EXPECT_EQ(stats.request, handle(fake_server::request(k)));
    EXPECT_EQ(release.request, handle(fake_server::request(k)));
    EXPECT_EQ(stats.success, k != 1);
    EXPECT_EQ(stats.exec_start, 1000u);
    EXPECT_GE(stats.exec_end, send.at_ns) << "in the instance's thread the send is inside the execution";
  }
  EXPECT_FALSE(calls[3].success);
  EXPECT_EQ(calls[3].message, "input 'x' has shape [9, 64]");
  EXPECT_EQ(calls[1].compute_start, 2000u);
  EXPECT_EQ(calls[1].compute_end, 3000u);
  const Call& batch = calls.back();
  EXPECT_EQ(batch.size, 2u) << "the two served requests";
  EXPECT_EQ(batch.exec_start, 1000u);
  EXPECT_EQ(batch.compute_start, 2000u);
  EXPECT_EQ(batch.compute_end, 4000u);
  EXPECT_EQ(fake_server::live_errors(), 0);
}

TEST_F(Finish, ABatchCountsItsRows) {
  ExecuteFinisher finisher(state_, 10);
  finisher.finish(served(0, 20, 90, 3), false);
  finisher.finish(served(1, 20, 90, 2), true);
  finisher.end();
  const auto calls = fake_server::calls();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().what, "batch_stats");
  EXPECT_EQ(calls.back().size, 5u);
}

TEST_F(Finish, NothingServedCountsNoBatch) {
  ExecuteFinisher finisher(state_, 10);
  finisher.finish(failed(0, 20, "refused"), true);
  finisher.end();
  EXPECT_EQ(kinds(fake_server::calls()), (std::vector<std::string>{"send", "stats", "release"}));
  EXPECT_EQ(fake_server::live_errors(), 0);
}

TEST_F(Finish, OnTheCompletionThreadTheInstanceGoesOnAndTheRequestsGoOutInOrder) {
  trtet_triton::start_completion_thread(state_);
  // The first send waits until the test lets it go: the instance's thread must hand over all three
  // (and end its execute) meanwhile.
  std::mutex mutex;
  std::condition_variable cv;
  bool go = false;
  bool first_started = false;
  fake_server::on_send([&](std::uintptr_t response) {
    if (response != handle(fake_server::response(0))) return;
    std::unique_lock<std::mutex> lock(mutex);
    first_started = true;
    cv.notify_all();
    cv.wait(lock, [&] { return go; });
  });
  {
    ExecuteFinisher finisher(state_, 1000);
    finisher.finish(served(0, 2000, 3000), false);
    finisher.finish(failed(1, 3100, "refused"), false);
    finisher.finish(served(2, 3200, 4000), true);
    finisher.end();  // reported with the last request, not here
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return first_started; }));
  }
  EXPECT_TRUE(fake_server::calls().empty()) << "a request was finished past the first one's send";
  {
    std::lock_guard<std::mutex> lock(mutex);
    go = true;
  }
  cv.notify_all();
  const std::thread::id completer = state_.completer->id();
  state_.completer.reset();  // every request handed over is finished first
  const auto calls = fake_server::calls();
  ASSERT_EQ(kinds(calls), (std::vector<std::string>{"send", "stats", "release", "send", "stats", "release", "send",
                                                    "stats", "batch_stats", "release"}));
  EXPECT_NE(completer, std::this_thread::get_id());
  for (const Call& c : calls) EXPECT_EQ(c.thread, completer) << c.what;
  for (int k = 0; k < 3; ++k) {
    const Call& send = calls[3 * k];
    const Call& stats = calls[3 * k + 1];
    EXPECT_EQ(send.request, handle(fake_server::response(k)));
    EXPECT_EQ(stats.request, handle(fake_server::request(k)));
    EXPECT_LE(stats.exec_end, send.at_ns) << "the end of execution is taken before the send";
    EXPECT_GE(stats.exec_end, stats.compute_end);
  }
  EXPECT_EQ(calls[8].size, 2u);
  EXPECT_EQ(calls[8].compute_start, 2000u);
  EXPECT_EQ(calls[8].compute_end, 4000u);
  EXPECT_EQ(calls[9].request, handle(fake_server::request(2))) << "the batch is counted before its last release";
  EXPECT_EQ(fake_server::live_errors(), 0);
}

TEST_F(Finish, OnTheCompletionThreadAnExecuteWithNothingServedCountsNoBatch) {
  trtet_triton::start_completion_thread(state_);
  {
    ExecuteFinisher finisher(state_, 10);
    finisher.finish(failed(0, 20, "refused"), false);
    finisher.finish(failed(1, 20, "refused"), true);
    finisher.end();
  }
  state_.completer.reset();
  EXPECT_EQ(kinds(fake_server::calls()),
            (std::vector<std::string>{"send", "stats", "release", "send", "stats", "release"}));
  EXPECT_EQ(fake_server::live_errors(), 0);
}

}  // namespace

// ---- an execute of several requests of a batching model, each refused on its own ----

#include "execute.h"
#include "model.h"
#include "test_model.h"

namespace {

using trtet_triton::ModelState;

// A batching model (max_batch_size 8) of two FP32 inputs, dynamic within [8, 64].
void batching_model(ModelState& model) { trtet_triton_test::two_input_model(model, "batched", 8); }

TEST_F(Finish, ABatchOfRequestsEachRefusedIsAnsweredInOrderWithEachReason) {
  // Note [batching requests]: each request checked on its own, before any call; here none passes, so
  // no call is made (the instance has no program) and each is answered with its own reason, in order.
  ModelState model;
  batching_model(model);
  state_.model = &model;
  fake_server::set_request(0, {{"input_0", TRITONSERVER_TYPE_FP32, {2, 64}}});
  fake_server::set_request(1, {{"input_0", TRITONSERVER_TYPE_FP32, {9, 64}}, {"input_1", TRITONSERVER_TYPE_FP32, {9, 64}}});
  fake_server::set_request(2, {{"input_0", TRITONSERVER_TYPE_FP32, {2, 64}}, {"input_1", TRITONSERVER_TYPE_FP32, {3, 64}}});
  fake_server::set_request(3, {{"input_0", TRITONSERVER_TYPE_FP32, {2, 64}, 100}, {"input_1", TRITONSERVER_TYPE_FP32, {2, 64}}});
  fake_server::set_request(4, {{"input_0", TRITONSERVER_TYPE_INT32, {2, 64}}, {"input_1", TRITONSERVER_TYPE_FP32, {2, 64}}});
  TRITONBACKEND_Request* requests[5];
  for (int k = 0; k < 5; ++k) requests[k] = fake_server::request(k);
  {
    ExecuteFinisher finisher(state_, 10);
    trtet_triton::serve_batched(state_, requests, 5, finisher);
    finisher.end();
  }
  const auto calls = fake_server::calls();
  ASSERT_EQ(calls.size(), 15u) << "send, statistics and release for each, and no batch";
  const char* reasons[] = {
      "the request has 1 inputs; model 'batched' takes 2",
      "input 'input_0' has shape [9, 64]; the program takes 2 dims within [8, 64] (config dims [-1, -1]): dim 0 is 9, "
      "above its bound 8",
      "input 'input_1' has 3 rows in dim 0 and input 'input_0' 2: a request's inputs share its batch size",
      "input 'input_0' has 100 bytes; its shape [2, 64] takes 512",
      "input 'input_0' is TYPE_INT32; the program takes TYPE_FP32",
  };
  for (int k = 0; k < 5; ++k) {
    const Call& send = calls[3 * k];
    EXPECT_EQ(send.what, "send");
    EXPECT_EQ(send.request, handle(fake_server::response(k)));
    EXPECT_FALSE(send.success);
    EXPECT_NE(send.message.find(reasons[k]), std::string::npos) << send.message;
    EXPECT_EQ(calls[3 * k + 1].what, "stats");
    EXPECT_FALSE(calls[3 * k + 1].success);
    EXPECT_EQ(calls[3 * k + 2].what, "release");
    EXPECT_EQ(calls[3 * k + 2].request, handle(fake_server::request(k)));
  }
  EXPECT_EQ(fake_server::live_errors(), 0);
  state_.model = nullptr;
}

TEST_F(Finish, ARequestThatPassesItsChecksGivesItsInputShapes) {
  ModelState model;
  batching_model(model);
  fake_server::set_request(7, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}, {"input_1", TRITONSERVER_TYPE_FP32, {3, 17}}});
  std::vector<std::vector<std::int64_t>> shapes;
  TRITONSERVER_Error* e = trtet_triton::check_request(model, fake_server::request(7), shapes);
  ASSERT_EQ(e, nullptr) << TRITONSERVER_ErrorMessage(e);
  EXPECT_EQ(shapes, (std::vector<std::vector<std::int64_t>>{{3, 17}, {3, 17}}));
}

}  // namespace
