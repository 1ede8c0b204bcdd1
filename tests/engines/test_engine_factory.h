// Test engines from a one-line text spec, so a .pte built for tests can carry the spec as its
// "engine bytes" and the ExecuTorch backend's test build can turn it into an engine.
//
// Note [test engine spec]
// -----------------------
//   spec    := kind { ' '+ key '=' value }        (leading/trailing blanks and tabs/newlines ignored)
//   kind    := "elementwise" | "aux" | "aliasing" | "sum" | "fake" | "waves"
//   dims    := INT { 'x' INT }                     e.g. "1024", "1x4", "64x4096"; "0" allowed
//
//   key          kinds                      value / default
//   min=DIMS     all                        profile minimum of every input        (default 1)
//   max=DIMS     all                        profile maximum, same rank as min     (default 65536)
//   shape=DIMS   all                        min = max = DIMS
//   n=INT        all                        min = max = [INT]
//   a=FLOAT      elementwise, aux, fake, waves  first coefficient                 (default 2)
//   b=FLOAT      elementwise, aux, fake, waves  second coefficient                (default -0.5)
//   spin_us=INT  all but fake               each kernel launch lasts >= INT us    (default 0);
//                                           waves: each of its blocks spins INT us
//   blocks=INT   waves                      blocks per launch, 1..65536           (default 64)
//   kernels=INT  all but fake               launches per enqueue, >= 1            (default 1)
//   record_sms=0|1|probe  all but fake      record %smid of every block           (default 0);
//                                           1 also launches a saturating marker kernel every
//                                           enqueue (the stream's whole partition is recorded);
//                                           probe only during a probe: from a clear to the next read
//   fault_if=FLOAT  elementwise             each enqueue ends with a one-thread kernel that writes
//                                           to an illegal address when x[0] == FLOAT: a sticky CUDA
//                                           error on request (default: no such kernel)
//   alias=kv_cache_update|user  aliasing    kind of the alias                     (default kv_cache_update)
//   profiles=MIN:MAX{,MIN:MAX}  all         more optimization profiles (1, 2, ...) for every input,
//                                           each of min's rank; profile 0 is min..max  (default none)
//
// Bindings by kind (names, in binding order; every dtype float32):
//   elementwise, aux, fake: x, y (inputs) -> out = a*x + b*y (x's shape). aux computes a*x and b*y on
//       two auxiliary streams (aux_stream_count() == 2). fake is FakeEngine: no CUDA, computes nothing.
//   aliasing: cache, x (inputs) -> cache_out aliased to cache: cache += x in place.
//   sum:      x (input) -> total, reported as shape [1]: the sum of x.
//   waves:    as elementwise, computed by `blocks` blocks that each fill an SM's shared memory and
//       spin spin_us, so a launch on s SMs lasts about ceil(blocks / s) * spin_us (WavesEngine).
// Examples: "elementwise min=1x4 max=64x4096 spin_us=0 kernels=1", "aliasing n=1024", "waves blocks=64 spin_us=100",
//           "aux min=1 max=1048576 record_sms=1", "elementwise n=256 spin_us=50000".
// Every error (unknown kind or key, a key the kind does not take, a repeated key, a bad number,
// min/max of different rank or min > max, kernels < 1) is kInvalidProgram naming the offending word.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "engines/cuda_test_engine.h"

namespace trtet_test {

/// A parsed spec (see Note [test engine spec]).
struct TestEngineSpec {
  enum class Kind { kElementwise, kAux, kAliasing, kSum, kFake, kWaves };
  Kind kind = Kind::kElementwise;
  Shape min_shape{1};
  Shape max_shape{65536};
  KernelOptions options;
  ex::engine::AliasKind alias = ex::engine::AliasKind::kKvCacheUpdate;
  std::vector<ex::engine::ShapeBounds> profiles;  ///< profiles 1, 2, ... (profile 0: min_shape..max_shape)
  int blocks = 64;                                ///< waves: blocks per launch
};

/// Parses `spec` without touching CUDA. kInvalidProgram with the offending word on any error.
Result<TestEngineSpec> parse_test_engine_spec(std::string_view spec);

/// Builds the engine `spec` describes on `device` (kinds other than fake need a GPU: kNoDevice or
/// kInvalidArgument for the device otherwise).
Result<ex::engine::EnginePtr> make_test_engine(const TestEngineSpec& spec, int device);
Result<ex::engine::EnginePtr> make_test_engine(std::string_view spec, int device);

}  // namespace trtet_test
