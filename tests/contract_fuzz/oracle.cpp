#include "contract_fuzz/oracle.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

namespace trtet_test::fuzz {
namespace {

/// How far past an output's end the fuzzer looks for stray writes.
constexpr std::size_t kTailBytes = 64 * 1024;
/// How much of an unused (aliased output's own) buffer is checked for poison.
constexpr std::size_t kUnusedBytes = 1 << 20;
constexpr unsigned char kScribbleByte = 0x7F;

Failure fail(Category category, std::string message) { return Failure{category, std::move(message)}; }

std::string binding_name(const CallArgs& args, int b) {
  std::ostringstream out;
  const BindingRole& role = args.model().role(b);
  out << (role.input ? "input " : "output ") << b << " (" << to_string(args.plan().mems[static_cast<std::size_t>(b)])
      << ", " << args.bytes(b) << " bytes" << (role.dtype != ex::DataType::kFloat32 ? std::string(" of ") + ex::to_string(role.dtype) : "") << ")";
  return out.str();
}

enum class Side { kHost, kDevice, kAll };

bool on_side(const CallArgs& args, int b, Side side) {
  if (side == Side::kAll) return true;
  return args.host_binding(b) == (side == Side::kHost);
}

Verdict read(const Buffer& buffer, std::size_t offset, std::size_t bytes, std::vector<unsigned char>& out,
             cudaStream_t io, Tally& tally) {
  out.resize(bytes);
  const ex::Status status = buffer.read(out.data(), offset, bytes, io);
  if (!status.ok()) return fail(Category::kHarness, "reading a buffer back: " + status.to_string());
  tally.bytes += bytes;
  return std::nullopt;
}

/// [offset, offset + bytes) of `buffer` is all poison.
Verdict check_poison(const Buffer& buffer, std::size_t offset, std::size_t bytes, const std::string& what,
                     cudaStream_t io, Tally& tally) {
  if (bytes == 0) return std::nullopt;
  std::vector<unsigned char> data;
  if (Verdict v = read(buffer, offset, bytes, data, io, tally)) return v;
  for (std::size_t i = 0; i < bytes; ++i) {
    if (data[i] != kPoisonByte) {
      std::ostringstream out;
      out << what << ": byte " << offset + i << " was written (0x" << std::hex << static_cast<int>(data[i])
          << "), it must still hold the poison";
      return fail(Category::kOutputs, out.str());
    }
  }
  return std::nullopt;
}

Verdict check_input(CallArgs& args, int b, cudaStream_t io, Tally& tally) {
  const TensorState& t = args.tensor(b);
  if (t.buffer == nullptr || args.bytes(b) == 0) return std::nullopt;
  std::vector<unsigned char> data;
  if (Verdict v = read(*t.buffer, 0, args.bytes(b), data, io, tally)) return v;
  ++tally.tensors;
  const std::vector<float>& original = args.inputs()[static_cast<std::size_t>(b)];
  if (std::memcmp(data.data(), original.data(), args.bytes(b)) == 0) return std::nullopt;
  const auto* was = reinterpret_cast<const unsigned char*>(original.data());
  std::size_t i = 0;
  while (i < args.bytes(b) && data[i] == was[i]) ++i;
  std::ostringstream out;
  out << binding_name(args, b) << " was modified by the call: byte " << i << " is 0x" << std::hex
      << static_cast<int>(data[i]) << ", was 0x" << static_cast<int>(was[i]);
  return fail(Category::kInputs, out.str());
}

Verdict check_plain_output(CallArgs& args, int b, cudaStream_t io, Tally& tally) {
  const int profile = args.model().profile_for(args.plan().shape);
  const TensorState& t = args.tensor(b);
  const BindingRole& role = args.model().role(b);
  ex::Shape want = args.model().output_shape(b, args.plan().shape);
  if (role.scalar && args.initial_shape(b).rank == 0) want = ex::Shape{};  // a 0-d view stays 0-d
  if (t.shape != want) {
    return fail(Category::kOutputs, binding_name(args, b) + " has shape " + t.shape.to_string() + " after the call, " +
                                        "expected " + want.to_string());
  }
  if (t.buffer == nullptr) return std::nullopt;
  if (t.data != t.buffer->data()) {
    return fail(Category::kOutputs, binding_name(args, b) + " was re-pointed (set_data) though it aliases no input");
  }
  const std::size_t bytes = args.bytes(b);
  std::vector<unsigned char> data;
  if (Verdict v = read(*t.buffer, 0, bytes, data, io, tally)) return v;
  ++tally.tensors;
  const std::string mismatch =
      role.xor_of >= 0 ? args.model().compare_bytes(b, data.data(), bytes, args.inputs())
                       : args.model().compare(b, reinterpret_cast<const float*>(data.data()), bytes / sizeof(float),
                                              args.inputs(), profile);
  if (!mismatch.empty()) {
    return fail(Category::kOutputs, binding_name(args, b) + " (profile " + std::to_string(profile) + "): " + mismatch);
  }
  const std::size_t tail = std::min(kTailBytes, t.buffer->capacity() - bytes);
  return check_poison(*t.buffer, bytes, tail, binding_name(args, b) + " past its end", io, tally);
}

Verdict check_aliased_output(CallArgs& args, int b, cudaStream_t io, Tally& tally, bool values) {
  const TensorState& t = args.tensor(b);
  const int input = args.model().role(b).aliased_input;
  const TensorState& target = args.tensor(input);
  if (t.data != target.data) {
    return fail(Category::kOutputs, binding_name(args, b) + " aliases input " + std::to_string(input) +
                                        " but was not pointed at the input's memory (set_data)");
  }
  if (t.buffer != nullptr) {
    const std::size_t unused = std::min(kUnusedBytes, t.buffer->capacity());
    if (Verdict v = check_poison(*t.buffer, 0, unused, binding_name(args, b) + "'s own buffer (the update belongs in "
                                                                               "the aliased input)",
                                 io, tally)) {
      return v;
    }
  }
  const std::size_t bytes = args.bytes(input);
  if (!values || target.buffer == nullptr || bytes == 0) return std::nullopt;
  std::vector<unsigned char> data;
  if (Verdict v = read(*target.buffer, 0, bytes, data, io, tally)) return v;
  ++tally.tensors;
  const std::string mismatch =
      args.model().compare(b, reinterpret_cast<const float*>(data.data()), bytes / sizeof(float), args.inputs());
  if (!mismatch.empty()) {
    return fail(Category::kOutputs, binding_name(args, b) + (args.is_shared_cache(input) ? " (the shared cache)" : "") +
                                        ": " + mismatch);
  }
  return std::nullopt;
}

/// Outputs and inputs on `side`; `when` says at which moment (for the message).
Verdict check_results(CallArgs& args, Side side, const char* when, cudaStream_t io, Tally& tally,
                      const std::vector<bool>& scribbled, bool alias_values = true) {
  for (int b = 0; b < args.model().io_count(); ++b) {
    const BindingRole& role = args.model().role(b);
    if (role.input) continue;
    Verdict v;
    if (role.aliased_input >= 0) {
      if (side != Side::kHost) v = check_aliased_output(args, b, io, tally, alias_values);  // device-resident input
    } else if (on_side(args, b, side)) {
      v = check_plain_output(args, b, io, tally);
    }
    if (v) {
      v->message += std::string(" [checked ") + when + "]";
      return v;
    }
  }
  for (int b = 0; b < args.model().io_count(); ++b) {
    const BindingRole& role = args.model().role(b);
    if (!role.input || role.updated_in_place || scribbled[static_cast<std::size_t>(b)] || !on_side(args, b, side)) {
      continue;
    }
    if (Verdict v = check_input(args, b, io, tally)) {
      v->message += std::string(" [checked ") + when + "]";
      return v;
    }
  }
  return std::nullopt;
}

Verdict synchronize(cudaStream_t stream, const char* what) {
  const cudaError_t error = cudaStreamSynchronize(stream);
  if (error != cudaSuccess) {
    return fail(Category::kStatus, std::string("cudaStreamSynchronize(") + what + ") after the call: " +
                                       cudaGetErrorString(error));
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(Category category) noexcept {
  switch (category) {
    case Category::kStatus: return "status";
    case Category::kOutputs: return "outputs";
    case Category::kInputs: return "inputs";
    case Category::kCapture: return "capture";
    case Category::kCounters: return "counters";
    case Category::kCrashOrHang: return "crash-or-hang";
    case Category::kHarness: return "harness";
    case Category::kPromise: return "promise";
  }
  return "?";
}

std::string error_name(cudaError_t e) { return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")"; }

Verdict check_untouched(CallArgs& args, cudaStream_t io, Tally& tally) {
  for (int b = 0; b < args.model().io_count(); ++b) {
    const TensorState& t = args.tensor(b);
    if (t.buffer == nullptr) continue;
    if (args.model().role(b).input) {
      if (Verdict v = check_input(args, b, io, tally)) return v;
    } else {
      ++tally.tensors;
      const std::size_t bytes = std::min(t.buffer->capacity(), args.bytes(b) + kTailBytes);
      if (Verdict v = check_poison(*t.buffer, 0, bytes, binding_name(args, b) + " of a rejected call", io, tally)) {
        return v;
      }
    }
  }
  return std::nullopt;
}

Verdict check_call(CallArgs& args, const ex::Status& status, Expect expect, const CallContext& context, Tally& tally) {
  ++tally.calls;
  if (expect == Expect::kSuccess && !status.ok()) {
    return fail(Category::kStatus, "execute failed where it must succeed: " + status.to_string());
  }
  if (expect == Expect::kFailure && status.ok()) {
    return fail(Category::kStatus, std::string("execute succeeded where it must fail: ") + context.failure_reason);
  }
  const std::vector<bool> none(static_cast<std::size_t>(args.model().io_count()), false);
  if (!status.ok()) {
    if (status.message().empty()) return fail(Category::kStatus, "a rejected call gave no message: " + status.to_string());
    // Nothing may have been enqueued: whatever was would have landed once the stream is idle.
    if (Verdict v = synchronize(context.guard ? context.stream : cudaStreamPerThread, "the call's stream")) return v;
    if (Verdict v = check_untouched(args, context.io, tally)) {
      v->message += " (the call failed with: " + status.to_string() + ")";
      return v;
    }
    return std::nullopt;
  }
  if (!context.guard) {
    return check_results(args, Side::kAll, "right after an unguarded execute returned", context.io, tally, none,
                         context.alias_values);
  }

  std::vector<bool> scribbled = none;
  if (args.host_inputs() || args.host_outputs()) {
    if (Verdict v = check_results(args, Side::kHost, "right after a guarded execute with host memory returned",
                                  context.io, tally, none)) {
      return v;
    }
    if (context.scribble) {
      for (int b = 0; b < args.model().io_count(); ++b) {
        if (!args.model().role(b).input || !args.host_binding(b) || args.bytes(b) == 0) continue;
        const ex::Status s = args.tensor(b).buffer->fill(kScribbleByte, args.bytes(b), context.io);
        if (!s.ok()) return fail(Category::kHarness, "scribbling over a host input: " + s.to_string());
        scribbled[static_cast<std::size_t>(b)] = true;
      }
    }
  }
  if (context.defer_device) return std::nullopt;
  // A guard on a default-stream handle (null: the legacy stream) is synchronized as that stream.
  if (Verdict v = synchronize(context.stream != nullptr ? context.stream : cudaStreamLegacy, "the guard's stream")) return v;
  const bool any_scribbled = std::find(scribbled.begin(), scribbled.end(), true) != scribbled.end();
  return check_results(args, Side::kDevice,
                       any_scribbled ? "after synchronizing the guard's stream (host inputs were overwritten at return)"
                                     : "after synchronizing the guard's stream",
                       context.io, tally, scribbled, context.alias_values);
}

Verdict check_device_results(CallArgs& args, cudaStream_t io, Tally& tally, bool alias_values, const char* when) {
  const std::vector<bool> none(static_cast<std::size_t>(args.model().io_count()), false);
  return check_results(args, Side::kDevice, when, io, tally, none, alias_values);
}

Verdict check_replay(CallArgs& args, cudaStream_t stream, cudaStream_t io, Tally& tally) {
  if (Verdict v = synchronize(stream, "the graph's stream")) return v;
  const std::vector<bool> none(static_cast<std::size_t>(args.model().io_count()), false);
  return check_results(args, Side::kAll, "after a graph replay", io, tally, none);
}

}  // namespace trtet_test::fuzz
