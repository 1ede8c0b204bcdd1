// Which requests of one execute go into one call of the program (batch_rule.cpp; Note [batching
// requests]), apart from Triton's API so that it is unit-tested on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trtet_triton {

// Note [batching requests]
// ------------------------
// With `max_batch_size` N > 0 every input and output of the program is dynamic with a bound of at
// least N in dim 0, and the config's dims are the rest (Triton's convention: the batch dim is left
// out). A request's tensors then have its batch size in dim 0. Triton hands an instance several
// requests at once where the config has `dynamic_batching`; it batches requests with the same dims
// past dim 0 when a dim is variable (its own rule), and this backend does not rely on that:
//   - each request is checked on its own first (input count, types, shapes within the bound, bytes,
//     the same batch size in every input); one that fails is answered with its reason and left out;
//   - the others go into calls in order: a request joins the call before it when its inputs' dims past
//     dim 0 are that call's and the rows (dim 0 sizes) stay within the limit (the smallest dim-0 bound
//     of the program's inputs), else it starts a call of its own; a request of 0 rows is served alone;
//   - a call of one request runs as any request does (its buffers bound in place); a call of several
//     gathers each input's rows, request after request, into memory of the instance's own (on the
//     GPU where every request's input is on the instance's GPU, else in host memory), and each
//     output comes out into memory of the instance's own, its rows copied into each request's
//     response after the call (dim 0 must come out as the call's rows, or every request of it fails);
//   - every request of a call shares the call's compute times; the batch's statistics count its rows.
struct BatchCall {
  std::vector<std::size_t> requests;  // indices into the execute's requests, in order
  std::int64_t rows = 0;              // their dim-0 sizes, added up
};

// `shapes[r]` is request r's input shapes (one per input, each with dim 0 first), `valid[r]` whether
// it passed its own checks; `limit` the rows one call may take. The calls, in order.
std::vector<BatchCall> batch_calls(const std::vector<std::vector<std::vector<std::int64_t>>>& shapes,
                                   const std::vector<bool>& valid, std::int64_t limit);

}  // namespace trtet_triton
