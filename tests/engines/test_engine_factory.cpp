#include "engines/test_engine_factory.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <vector>

#include "engines/aliasing_engine.h"
#include "engines/aux_stream_engine.h"
#include "engines/elementwise_engine.h"
#include "engines/fake_engine.h"
#include "engines/fault_hook.h"
#include "engines/sum_engine.h"
#include "engines/waves_engine.h"

namespace trtet_test {
namespace {

using Kind = TestEngineSpec::Kind;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::vector<std::string_view> split_words(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_blank(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !is_blank(text[i])) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

Status bad(std::string_view what, std::string_view word) {
  return ex::make_error(ErrorCode::kInvalidProgram, "test engine spec: %.*s \"%.*s\"", static_cast<int>(what.size()),
                        what.data(), static_cast<int>(word.size()), word.data());
}

Result<std::int64_t> parse_int(std::string_view text, std::string_view word) {
  if (text.empty() || text.size() > 18) return bad("bad integer in", word);
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad("bad integer in", word);
    value = value * 10 + (c - '0');
  }
  return value;
}

Result<float> parse_float(std::string_view text, std::string_view word) {
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const float value = std::strtof(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || errno != 0) return bad("bad number in", word);
  return value;
}

Result<Shape> parse_dims(std::string_view text, std::string_view word) {
  Shape shape;
  std::size_t start = 0;
  while (true) {
    const std::size_t x = text.find('x', start);
    const std::string_view part = text.substr(start, x == std::string_view::npos ? text.size() - start : x - start);
    if (shape.rank == Shape::kMaxRank) return bad("too many dimensions in", word);
    TRTET_ASSIGN_OR_RETURN(shape[shape.rank], parse_int(part, word));
    ++shape.rank;
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  return shape;
}

Result<Kind> parse_kind(std::string_view word) {
  if (word == "elementwise") return Kind::kElementwise;
  if (word == "aux") return Kind::kAux;
  if (word == "aliasing") return Kind::kAliasing;
  if (word == "sum") return Kind::kSum;
  if (word == "fake") return Kind::kFake;
  if (word == "waves") return Kind::kWaves;
  return bad("unknown engine kind", word);
}

bool kind_takes(Kind kind, std::string_view key) {
  if (key == "min" || key == "max" || key == "shape" || key == "n" || key == "profiles") return true;
  if (key == "a" || key == "b") {
    return kind == Kind::kElementwise || kind == Kind::kAux || kind == Kind::kFake || kind == Kind::kWaves;
  }
  if (key == "blocks") return kind == Kind::kWaves;
  if (key == "fault_if") return kind == Kind::kElementwise;
  if (key == "spin_us" || key == "kernels" || key == "record_sms") return kind != Kind::kFake;
  if (key == "alias") return kind == Kind::kAliasing;
  return false;
}

}  // namespace

Result<TestEngineSpec> parse_test_engine_spec(std::string_view text) {
  const std::vector<std::string_view> words = split_words(text);
  if (words.empty()) return bad("empty spec", text);
  TestEngineSpec spec;
  TRTET_ASSIGN_OR_RETURN(spec.kind, parse_kind(words[0]));
  std::set<std::string_view> seen;
  bool min_given = false;
  bool max_given = false;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string_view word = words[i];
    const std::size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0) return bad("expected key=value, got", word);
    const std::string_view key = word.substr(0, eq);
    const std::string_view value = word.substr(eq + 1);
    if (key != "min" && key != "max" && key != "shape" && key != "n" && key != "a" && key != "b" &&
        key != "spin_us" && key != "kernels" && key != "record_sms" && key != "alias" && key != "profiles" && key != "blocks" &&
        key != "fault_if") {
      return bad("unknown key in", word);
    }
    if (!kind_takes(spec.kind, key)) return bad("this engine kind does not take", word);
    if (!seen.insert(key).second) return bad("repeated key in", word);
    if (key == "min") {
      TRTET_ASSIGN_OR_RETURN(spec.min_shape, parse_dims(value, word));
      min_given = true;
    } else if (key == "max") {
      TRTET_ASSIGN_OR_RETURN(spec.max_shape, parse_dims(value, word));
      max_given = true;
    } else if (key == "shape" || key == "n") {
      if (key == "n") {
        TRTET_ASSIGN_OR_RETURN(const std::int64_t n, parse_int(value, word));
        spec.min_shape = Shape{n};
      } else {
        TRTET_ASSIGN_OR_RETURN(spec.min_shape, parse_dims(value, word));
      }
      spec.max_shape = spec.min_shape;
      min_given = max_given = true;
    } else if (key == "a") {
      TRTET_ASSIGN_OR_RETURN(spec.options.a, parse_float(value, word));
    } else if (key == "b") {
      TRTET_ASSIGN_OR_RETURN(spec.options.b, parse_float(value, word));
    } else if (key == "spin_us") {
      TRTET_ASSIGN_OR_RETURN(spec.options.spin_us, parse_int(value, word));
    } else if (key == "kernels") {
      TRTET_ASSIGN_OR_RETURN(const std::int64_t kernels, parse_int(value, word));
      if (kernels < 1 || kernels > 1000) return bad("kernels must be 1..1000 in", word);
      spec.options.kernels = static_cast<int>(kernels);
    } else if (key == "blocks") {
      TRTET_ASSIGN_OR_RETURN(const std::int64_t blocks, parse_int(value, word));
      if (blocks < 1 || blocks > 65536) return bad("blocks must be 1..65536 in", word);
      spec.blocks = static_cast<int>(blocks);
    } else if (key == "fault_if") {
      TRTET_ASSIGN_OR_RETURN(spec.options.fault_if, parse_float(value, word));
      spec.options.fault = true;
    } else if (key == "record_sms") {
      if (value != "0" && value != "1" && value != "probe") return bad("record_sms takes 0, 1 or probe:", word);
      spec.options.record_sms = value != "0";
      spec.options.marker_on_request = value == "probe";
    } else if (key == "profiles") {
      // MIN:MAX{,MIN:MAX}: profiles 1, 2, ... after profile 0 (min..max), each for every input.
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t comma = std::min(value.find(',', start), value.size());
        const std::string_view range = value.substr(start, comma - start);
        const std::size_t colon = range.find(':');
        if (colon == std::string_view::npos) return bad("profiles takes MIN:MAX{,MIN:MAX}:", word);
        TRTET_ASSIGN_OR_RETURN(const Shape low, parse_dims(range.substr(0, colon), word));
        TRTET_ASSIGN_OR_RETURN(const Shape high, parse_dims(range.substr(colon + 1), word));
        if (low.rank != high.rank) return bad("a profile's MIN and MAX differ in rank:", word);
        for (int d = 0; d < low.rank; ++d) {
          if (low[d] > high[d]) return bad("a profile's MIN exceeds its MAX:", word);
        }
        spec.profiles.push_back(ex::engine::ShapeBounds{low, high});
        start = comma + 1;
      }
    } else if (key == "alias") {
      if (value == "kv_cache_update") {
        spec.alias = ex::engine::AliasKind::kKvCacheUpdate;
      } else if (value == "user") {
        spec.alias = ex::engine::AliasKind::kUser;
      } else {
        return bad("alias takes kv_cache_update or user:", word);
      }
    }
  }
  const std::size_t profile_keys =
      seen.count("shape") + seen.count("n") + ((seen.count("min") + seen.count("max")) > 0 ? 1 : 0);
  if (profile_keys > 1) return bad("shape or n cannot be combined with min, max, shape or n:", text);
  if (min_given && !max_given && spec.min_shape.rank != spec.max_shape.rank) {
    return bad("min needs max of the same rank:", text);
  }
  if (max_given && !min_given && spec.min_shape.rank != spec.max_shape.rank) {
    // A lone max of higher rank: the minimum is 1 in every dimension.
    spec.min_shape.rank = spec.max_shape.rank;
    for (int d = 0; d < spec.min_shape.rank; ++d) spec.min_shape[d] = 1;
  }
  if (spec.min_shape.rank != spec.max_shape.rank) return bad("min and max differ in rank:", text);
  for (int d = 0; d < spec.min_shape.rank; ++d) {
    if (spec.min_shape[d] > spec.max_shape[d]) return bad("min exceeds max:", text);
  }
  for (const ex::engine::ShapeBounds& profile : spec.profiles) {
    if (profile.min.rank != spec.min_shape.rank) return bad("every profile needs the rank of min and max:", text);
  }
  return spec;
}

namespace {

Result<ex::engine::EnginePtr> make_engine_of_kind(const TestEngineSpec& spec, int device) {
  switch (spec.kind) {
    case Kind::kElementwise: {
      TRTET_ASSIGN_OR_RETURN(auto engine, ElementwiseEngine::create(device, spec.min_shape, spec.max_shape, spec.options));
      return ex::engine::EnginePtr(std::move(engine));
    }
    case Kind::kAux: {
      TRTET_ASSIGN_OR_RETURN(auto engine, AuxStreamEngine::create(device, spec.min_shape, spec.max_shape, spec.options));
      return ex::engine::EnginePtr(std::move(engine));
    }
    case Kind::kAliasing: {
      TRTET_ASSIGN_OR_RETURN(auto engine,
                             AliasingEngine::create(device, spec.min_shape, spec.max_shape, spec.alias, spec.options));
      return ex::engine::EnginePtr(std::move(engine));
    }
    case Kind::kSum: {
      TRTET_ASSIGN_OR_RETURN(auto engine, SumEngine::create(device, spec.min_shape, spec.max_shape, spec.options));
      return ex::engine::EnginePtr(std::move(engine));
    }
    case Kind::kFake:
      return ex::engine::EnginePtr(FakeEngine::elementwise(spec.min_shape, spec.max_shape, device));
    case Kind::kWaves: {
      TRTET_ASSIGN_OR_RETURN(auto engine,
                             WavesEngine::create(device, spec.min_shape, spec.max_shape, spec.blocks, spec.options));
      return ex::engine::EnginePtr(std::move(engine));
    }
  }
  return ex::make_error(ErrorCode::kInvalidProgram, "test engine spec: unknown kind");
}

}  // namespace

Result<ex::engine::EnginePtr> make_test_engine(const TestEngineSpec& spec, int device) {
  TRTET_RETURN_IF_ERROR(engine_fault("test engine factory"));
  TRTET_ASSIGN_OR_RETURN(ex::engine::EnginePtr engine, make_engine_of_kind(spec, device));
  auto* test_engine = static_cast<TestEngine*>(engine.get());  // every kind is a TestEngine
  for (const ex::engine::ShapeBounds& profile : spec.profiles) test_engine->add_profile(profile.min, profile.max);
  return engine;
}

Result<ex::engine::EnginePtr> make_test_engine(std::string_view spec, int device) {
  TRTET_ASSIGN_OR_RETURN(const TestEngineSpec parsed, parse_test_engine_spec(spec));
  return make_test_engine(parsed, device);
}

}  // namespace trtet_test
