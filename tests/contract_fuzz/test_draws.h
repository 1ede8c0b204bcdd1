// What the fuzzer's own tests read of drawn sequences: a step's kind and call plans, a sequence
// printed one line per session and step (and as --no-green should print it), what many seeds drew.
#pragma once

#include <cstddef>
#include <regex>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

template <class T>
inline const T* as(const Step& step) {
  return std::get_if<T>(&step);
}

inline std::vector<const CallPlan*> plans_of(const Step& step) {
  std::vector<const CallPlan*> plans;
  if (auto* s = as<CallStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<CaptureStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<DestroyStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<BadCallStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<RepeatStep>(step)) plans.push_back(&s->call);
  if (auto* s = as<ConcurrentStep>(step)) {
    for (const auto& thread : s->threads) {
      for (const CallPlan& plan : thread) plans.push_back(&plan);
    }
  }
  return plans;
}

inline std::string print(const Sequence& sequence) {
  std::string text;
  for (const EngineSpec& spec : sequence.sessions) text += to_string(spec) + "\n";
  for (const Step& step : sequence.steps) text += to_string(step) + "\n";
  return text;
}

/// What the draws of many seeds produced, of what both legs draw.
struct SeenDraws {
  std::set<std::size_t> step_kinds;
  std::set<Mem> mems;
  std::set<StreamSource> streams;
  std::set<std::size_t> sizes;
};

/// A printed sequence as FuzzConfig::green == false should print it: green-context streams as the
/// created streams of their slots, green-current bad calls as wrong-dtype ones.
inline std::string as_without_green(const std::string& text) {
  static const std::regex green_stream("green#([0-9])\\((small|rest)\\)");
  const std::string streams = std::regex_replace(text, green_stream, "created#$1");
  return std::regex_replace(streams, std::regex("green-current-no-guard"), "wrong-dtype");
}

}  // namespace trtet_test::fuzz
