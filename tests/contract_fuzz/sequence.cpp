#include "contract_fuzz/sequence.h"

#include <cstdio>
#include <sstream>

namespace trtet_test::fuzz {
namespace {

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string bytes_text(std::int64_t bytes) {
  constexpr std::int64_t kMiB = 1 << 20;
  char text[64];
  if (bytes >= kMiB) {
    const std::int64_t whole = bytes / kMiB;
    const std::int64_t rest = bytes - whole * kMiB;
    if (rest == 0) {
      std::snprintf(text, sizeof(text), "%lld MiB", static_cast<long long>(whole));
    } else if (rest < 4096) {
      std::snprintf(text, sizeof(text), "%lld MiB+%lld", static_cast<long long>(whole), static_cast<long long>(rest));
    } else {
      std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / static_cast<double>(kMiB));
    }
  } else {
    std::snprintf(text, sizeof(text), "%lld B", static_cast<long long>(bytes));
  }
  return text;
}

}  // namespace

std::string to_string(const StreamRef& stream) {
  switch (stream.source) {
    case StreamSource::kPerThread: return "per-thread";
    case StreamSource::kLegacy: return "legacy";
    case StreamSource::kCreated: return "created#" + std::to_string(stream.slot);
    case StreamSource::kGreen:
      return std::string("green#") + std::to_string(stream.slot) + (stream.slot < 2 ? "(small)" : "(rest)");
  }
  return "?";
}

const char* to_string(EngineKind kind) noexcept {
  switch (kind) {
    case EngineKind::kElementwise: return "elementwise";
    case EngineKind::kAux: return "aux";
    case EngineKind::kAliasing: return "aliasing";
    case EngineKind::kSum: return "sum";
    case EngineKind::kMulti: return "multi";
  }
  return "?";
}

std::string to_string(const EngineSpec& spec) {
  std::ostringstream out;
  out << to_string(spec.kind);
  if (spec.kind == EngineKind::kMulti) out << " outputs=" << spec.plain_outputs << (spec.alias ? "+alias" : "");
  if (spec.has_side()) out << " side=" << torch_tensorrt::executorch_backend::to_string(spec.side_dtype);
  out << " spin_us=" << spec.spin_us;
  if (spec.kernels != 1) out << " kernels=" << spec.kernels;
  if (spec.max_rows != kMaxRows) out << " max_rows=" << spec.max_rows;
  if (spec.profiles > 1) out << " profiles=" << spec.profiles;
  if (spec.record_sms) out << " record_sms";
  if (spec.graphs) out << " graphs";
  if (spec.budget_bytes > 0) out << " budget=" << bytes_text(static_cast<std::int64_t>(spec.budget_bytes));
  if (spec.staging_slots != 3) out << " slots=" << spec.staging_slots;
  if (spec.in_place()) {
    out << " cache=[" << spec.cache_shape.rows << "," << spec.cache_shape.cols << "]:" << to_string(spec.cache_mem);
  }
  return out.str();
}

std::string to_string(const CallPlan& call) {
  std::ostringstream out;
  out << (call.guard ? "guard=" + to_string(call.stream) : std::string("no-guard")) << " mems=[";
  for (std::size_t i = 0; i < call.mems.size(); ++i) {
    out << (i ? "," : "") << to_string(call.mems[i]) << (i < call.hints.size() && call.hints[i] ? "*" : "");
  }
  const std::int64_t bytes = call.shape.numel() * 4;
  out << "] shape=[" << call.shape.rows << "," << call.shape.cols << "] (" << bytes_text(bytes) << " per input"
      << (call.shape.in_profile() ? "" : ", outside the profile") << ") data=" << hex(call.data_seed);
  if (call.scribble) out << " scribble";
  if (call.stale_output_shapes) out << " stale-shapes";
  if (call.null_empty) out << " null-empty";
  if (call.caller_spin_us > 0) out << " caller-work=" << call.caller_spin_us << "us";
  if (call.shared_cache) out << " shared-cache";
  return out.str();
}

const char* to_string(BadCallStep::Kind kind) noexcept {
  switch (kind) {
    case BadCallStep::Kind::kTooFewArgs: return "too-few-args";
    case BadCallStep::Kind::kTooManyArgs: return "too-many-args";
    case BadCallStep::Kind::kWrongDtype: return "wrong-dtype";
    case BadCallStep::Kind::kGreenCurrentNoGuard: return "green-current-no-guard";
  }
  return "?";
}

std::string to_string(const Step& step) {
  return std::visit(
      Overloaded{
          [](const CallStep& s) { return "call s" + std::to_string(s.session) + " " + to_string(s.call); },
          [](const CaptureStep& s) {
            std::string text = "capture s" + std::to_string(s.session) + (s.warmup ? " warmup" : " no-warmup");
            if (s.pageable_probe >= 0) {
              text += " pageable-probe=" + std::to_string(s.pageable_probe) + (s.probe_first ? "(before)" : "(after)");
            }
            return text + " replays=" + std::to_string(s.replays) + " " + to_string(s.call);
          },
          [](const ReplayStep& s) {
            return "replay graph-of-step " + std::to_string(s.capture_step) + " x" + std::to_string(s.times) +
                   " data=" + hex(s.data_seed);
          },
          [](const ConcurrentStep& s) {
            std::string text = "concurrent s" + std::to_string(s.session) + " threads=" + std::to_string(s.threads.size());
            if (s.destroy_during) text += " destroy-after-" + std::to_string(s.destroy_delay_us) + "us";
            for (std::size_t t = 0; t < s.threads.size(); ++t) {
              for (const CallPlan& call : s.threads[t]) text += "\n        t" + std::to_string(t) + ": " + to_string(call);
            }
            return text;
          },
          [](const DestroyStep& s) {
            return "destroy s" + std::to_string(s.session) + (s.in_flight ? " in-flight: " + to_string(s.call) : "");
          },
          [](const RecreateSessionStep& s) { return "recreate-session s" + std::to_string(s.session); },
          [](const RecreateStreamStep& s) {
            return "recreate-stream " + to_string(s.stream) + (s.non_blocking ? " non-blocking" : " blocking");
          },
          [](const RepeatStep& s) {
            return "repeat s" + std::to_string(s.session) + " x" + std::to_string(s.times) + " " + to_string(s.call);
          },
          [](const BadCallStep& s) {
            return std::string("bad-call s") + std::to_string(s.session) + " " + to_string(s.kind) + " " +
                   to_string(s.call);
          },
      },
      step);
}

const char* to_string(Leg leg) noexcept { return leg == Leg::kExecuTorch ? "executorch" : "session"; }

std::string to_string(const FuzzConfig& config) {
  std::ostringstream out;
  if (config.leg != Leg::kSession) out << "--leg " << to_string(config.leg) << " ";
  out << "--seed " << config.seed << " --length " << config.length << " --max-bytes " << config.max_bytes
      << " --concurrent-max-bytes " << config.concurrent_max_bytes << " --max-spin-us " << config.max_spin_us;
  if (!config.green) out << " --no-green";
  return out.str();
}

Selection all_steps(const Sequence& sequence) {
  Selection selection;
  selection.sequence = &sequence;
  for (std::size_t i = 0; i < sequence.steps.size(); ++i) selection.keep.push_back(i);
  return selection;
}

std::string to_string(const std::vector<std::size_t>& indices) {
  std::string text;
  for (std::size_t i = 0; i < indices.size(); ++i) text += (i ? "," : "") + std::to_string(indices[i]);
  return text;
}

}  // namespace trtet_test::fuzz
