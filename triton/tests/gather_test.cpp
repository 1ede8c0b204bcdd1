// An input Triton gives in several buffers, gathered into host memory of the input's own
// (triton/src/execute.h gather_input): in order, exactly the shape's bytes, refused otherwise with the
// counts, and the next request right after a refusal. The real server hands a large HTTP body in one
// piece as often as not (S52 on the H200), so this path is tested here, against the fake server's
// pieces of host memory. No GPU: host pieces are copied without CUDA.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "execute.h"
#include "fake_server.h"
#include "test_model.h"

namespace {

using trtet_triton::ModelState;

std::string bytes_of(std::size_t n, unsigned char seed) {
  std::string s(n, '\0');
  for (std::size_t k = 0; k < n; ++k) s[k] = static_cast<char>(seed + 7 * k);
  return s;
}

// Gathers request k's input_0 (a [3, 17] FP32 input: 204 bytes) into `scratch`.
TRITONSERVER_Error* gather(const ModelState& model, int k, std::vector<unsigned char>& scratch, bool& from_gpu) {
  trtet_triton::InputView view;
  TRITONSERVER_Error* e = trtet_triton::read_input(model, fake_server::request(k), 0, -1, view);
  if (e != nullptr) return e;
  return trtet_triton::gather_input(model.inputs[0], view.input, view.buffers, view.bytes, scratch, from_gpu);
}

std::string message_of(TRITONSERVER_Error* e) {
  std::string text = e == nullptr ? "" : TRITONSERVER_ErrorMessage(e);
  if (e != nullptr) {
    EXPECT_EQ(TRITONSERVER_ErrorCode(e), TRITONSERVER_ERROR_INVALID_ARG) << text;
    TRITONSERVER_ErrorDelete(e);
  }
  return text;
}

TEST(Gather, PiecesAreJoinedInOrderAndAnEmptyPieceIsSkipped) {
  ModelState model;
  trtet_triton_test::two_input_model(model, "gather", 0);
  const std::string a = bytes_of(100, 1), b = bytes_of(104, 101);
  fake_server::set_request(20, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}});
  fake_server::set_pieces(20, 0, {a, "", b});
  std::vector<unsigned char> scratch(4096, 0xee);  // an earlier, larger request's bytes
  bool from_gpu = true;
  TRITONSERVER_Error* e = gather(model, 20, scratch, from_gpu);
  ASSERT_EQ(e, nullptr) << TRITONSERVER_ErrorMessage(e);
  ASSERT_EQ(scratch.size(), 204u);
  EXPECT_EQ(std::string(scratch.begin(), scratch.end()), a + b);
  EXPECT_FALSE(from_gpu);
}

TEST(Gather, PiecesShortOfOrOverTheShapeAreRefusedWithTheirCountsAndTheNextRequestIsGatheredRight) {
  ModelState model;
  trtet_triton_test::two_input_model(model, "gather", 0);
  std::vector<unsigned char> scratch;
  bool from_gpu = false;
  // Short: 200 bytes in three buffers for a shape of 204 (the properties' byte size says 204).
  fake_server::set_request(21, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}});
  fake_server::set_pieces(21, 0, {bytes_of(100, 1), bytes_of(50, 2), bytes_of(50, 3)});
  EXPECT_EQ(message_of(gather(model, 21, scratch, from_gpu)),
            "torchtrt_executorch: input 'input_0' has 200 bytes in its 3 buffers; its shape takes 204");
  // Over: the second piece runs past the shape.
  fake_server::set_request(22, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}});
  fake_server::set_pieces(22, 0, {bytes_of(200, 4), bytes_of(8, 5)});
  EXPECT_EQ(message_of(gather(model, 22, scratch, from_gpu)),
            "torchtrt_executorch: input 'input_0' has more bytes in its 2 buffers than its shape takes (204)");
  // The next good request, in the same scratch.
  const std::string whole = bytes_of(204, 9);
  fake_server::set_request(23, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}});
  fake_server::set_pieces(23, 0, {whole.substr(0, 1), whole.substr(1, 200), whole.substr(201)});
  TRITONSERVER_Error* e = gather(model, 23, scratch, from_gpu);
  ASSERT_EQ(e, nullptr) << TRITONSERVER_ErrorMessage(e);
  EXPECT_EQ(std::string(scratch.begin(), scratch.end()), whole);
  EXPECT_EQ(fake_server::live_errors(), 0);
}

// S63's H100 run: one request reached the backend with its input's byte size right and no buffer,
// which Triton's core never hands a backend. It is refused as the server's fault (INTERNAL, not a
// client's bad argument), logged, and the next request is gathered as before.
TEST(Gather, AnInputWithBytesInNoBufferIsRefusedAsTheServersFaultAndLoggedAndTheNextRequestWorks) {
  ModelState model;
  trtet_triton_test::two_input_model(model, "gather", 0);
  std::vector<unsigned char> scratch;
  bool from_gpu = false;
  fake_server::set_request(24, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}});
  fake_server::set_no_buffers(24, 0);
  fake_server::capture_logs(true);
  TRITONSERVER_Error* e = gather(model, 24, scratch, from_gpu);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(TRITONSERVER_ErrorCode(e), TRITONSERVER_ERROR_INTERNAL);
  const std::string said = TRITONSERVER_ErrorMessage(e);
  TRITONSERVER_ErrorDelete(e);
  EXPECT_EQ(said, "torchtrt_executorch: input 'input_0' reports 204 bytes in 0 buffers, which Triton's core does not "
                  "hand a backend (it checks an input's bytes against its shape first); the request is refused");
  const std::vector<std::string> logged = fake_server::logs();
  fake_server::capture_logs(false);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("reports 204 bytes in 0 buffers"), std::string::npos) << logged[0];
  // The next request, in the same scratch.
  const std::string whole = bytes_of(204, 11);
  fake_server::set_request(25, {{"input_0", TRITONSERVER_TYPE_FP32, {3, 17}}});
  fake_server::set_pieces(25, 0, {whole.substr(0, 100), whole.substr(100)});
  e = gather(model, 25, scratch, from_gpu);
  ASSERT_EQ(e, nullptr) << TRITONSERVER_ErrorMessage(e);
  EXPECT_EQ(std::string(scratch.begin(), scratch.end()), whole);
  EXPECT_EQ(fake_server::live_errors(), 0);
}

}  // namespace
