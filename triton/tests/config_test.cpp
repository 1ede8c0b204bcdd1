// A model's config is untrusted input: the backend's reading of it (parameters.cpp, model_io.cpp's
// check_io) tested without a server, and every message the backend hands the server written with
// its untrusted text escaped (Note [untrusted text in messages], errors.h). The same code runs under
// the config fuzzer (tests/fuzz/config, scripts/fuzz-config); test_backend.py checks the escaped
// refusal in the real server's log.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "errors.h"
#include "fake_server.h"
#include "model_io.h"
#include "parameters.h"

namespace {

using trtet_triton::Json;
using trtet_triton::Parameters;

// The error's message, the error deleted; "" for none.
std::string taken(TRITONSERVER_Error* e) {
  if (e == nullptr) return "";
  std::string text = TRITONSERVER_ErrorMessage(e);
  TRITONSERVER_ErrorDelete(e);
  return text;
}

std::string parameters_refusal(const Json& config, Parameters* out = nullptr) {
  Parameters local;
  return taken(trtet_triton::parse_parameters(config, "m", out != nullptr ? *out : local));
}

Json with_parameters(std::initializer_list<std::pair<const char*, std::string>> entries) {
  Json config = {{"name", "m"}};
  for (const auto& [key, value] : entries) config["parameters"][key] = {{"string_value", value}};
  return config;
}

bool has_raw_control(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

TEST(Messages, ControlCharactersAndBackslashesGoOutEscaped) {
  const std::string message = taken(trtet_triton::error(TRITONSERVER_ERROR_INVALID_ARG, "a\nE1205 forged\x1b[31m\\ b"));
  EXPECT_EQ(message, "torchtrt_executorch: a\\x0aE1205 forged\\x1b[31m\\x5c b");
  // The backend's own text passes as it is.
  EXPECT_EQ(taken(trtet_triton::error(TRITONSERVER_ERROR_INTERNAL, "input 'x' has shape [9, 35]; the bound is [8, 64]")),
            "torchtrt_executorch: input 'x' has shape [9, 35]; the bound is [8, 64]");
}

TEST(Messages, AreCutAtTheLimit) {
  const std::string message = taken(trtet_triton::error(TRITONSERVER_ERROR_INVALID_ARG, std::string(100000, 'k')));
  ASSERT_EQ(message.size(), trtet_triton::kMessageLimit + 3);
  EXPECT_EQ(message.substr(message.size() - 3), "...");
}

TEST(Messages, AreValidUtf8WhateverTheyQuote) {
  // What ExecuTorch logs about a damaged program (a backend id, a name) is the program's bytes; Triton
  // keeps a refusal in its repository index, JSON that clients decode as UTF-8.
  const char executorch_line[] = "Backend torchtrt\xac\xe4\xb8 is not registered";
  fake_server::capture_logs(true);
  trtet_triton::executorch_log(0, kError, "method.cpp", "f", 7, executorch_line, sizeof executorch_line - 1);
  fake_server::capture_logs(false);
  const std::string failure = taken(trtet_triton::error(
      TRITONSERVER_ERROR_INTERNAL, trtet_triton::executorch_failure("init", ::executorch::runtime::Error::NotFound)));
  EXPECT_NE(failure.find("Backend torchtrt\\xac\\xe4\\xb8 is not registered"), std::string::npos) << failure;
  // Cut at the limit, never inside a character: 3-byte characters after 1, 2 and 3 bytes of ASCII.
  for (std::size_t lead = 1; lead <= 3; ++lead) {
    std::string text(lead, 'a');
    for (int i = 0; i < 6000; ++i) text += "\xe4\xb8\xad";
    const std::string message = taken(trtet_triton::error(TRITONSERVER_ERROR_INVALID_ARG, text));
    ASSERT_LE(message.size(), trtet_triton::kMessageLimit + 3);
    EXPECT_EQ(message.substr(message.size() - 6), "\xe4\xb8\xad...") << lead;
  }
}

TEST(Messages, LogLinesAndExecuTorchsGoOutEscaped) {
  fake_server::capture_logs(true);
  trtet_triton::log(TRITONSERVER_LOG_ERROR, "model 'x\nI1205 fake line' refused");
  const char executorch_line[] = "tensor 'n\x1b]0;title\x07' refused\n";
  trtet_triton::executorch_log(0, kError, "method.cpp", "f", 12, executorch_line, sizeof executorch_line - 1);
  const std::vector<std::string> lines = fake_server::logs();
  fake_server::capture_logs(false);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "torchtrt_executorch: model 'x\\x0aI1205 fake line' refused");
  EXPECT_EQ(lines[1], "executorch method.cpp:12: tensor 'n\\x1b]0;title\\x07' refused");
  // The error a failed call reports carries the line's text; it too is escaped on its way out.
  const std::string failure = taken(trtet_triton::error(
      TRITONSERVER_ERROR_INTERNAL, trtet_triton::executorch_failure("execute", ::executorch::runtime::Error::InvalidArgument)));
  EXPECT_NE(failure.find("tensor 'n\\x1b]0;title\\x07' refused"), std::string::npos) << failure;
  EXPECT_FALSE(has_raw_control(failure)) << failure;
}

TEST(Parameters, AKeyWithANewlineIsRefusedAndNamedEscaped) {
  const std::string message = parameters_refusal(with_parameters({{"bad\nE1205 12:00:00 forged", "1"}}));
  EXPECT_NE(message.find("unknown parameter 'bad\\x0aE1205 12:00:00 forged'"), std::string::npos) << message;
  EXPECT_FALSE(has_raw_control(message)) << message;
}

TEST(Parameters, ReadsWhatItTakes) {
  Parameters p;
  const Json config = with_parameters({{"sms", "32"}, {"method", "forward"}, {"gpu_time_every", "0"},
                                       {"stream_wait", "spin"}, {"send_from", "completion_thread"},
                                       {"use_cuda_graphs", "true"}});
  ASSERT_EQ(parameters_refusal(config, &p), "");
  EXPECT_EQ(p.sms, 32u);
  EXPECT_EQ(p.gpu_time_every, 0u);
  EXPECT_EQ(p.send_from, trtet_triton::SendFrom::kCompletionThread);
  ASSERT_EQ(p.load_options.size(), 1u);
  EXPECT_EQ(p.load_options[0].first, "use_cuda_graphs");
  EXPECT_EQ(p.plan_partition, "m");  // the model's name unless the config names one
}

TEST(Parameters, RefusesEachBadValueWithItsReason) {
  const struct {
    std::vector<std::pair<const char*, std::string>> entries;
    const char* says;
  } cases[] = {
      {{{"sms", "0"}}, "parameter 'sms' is 0; it takes 1 to 65536"},
      {{{"sms", "99999999999"}}, "it takes a whole number of SMs"},
      {{{"sms", "-8"}}, "it takes a whole number of SMs"},
      {{{"sms.g", "70000"}}, "parameter 'sms.g' is 70000; it takes 1 to 65536"},
      {{{"gpu_time_every", "1000001"}}, "it takes 0 to 1000000"},
      {{{"stream_wait", "busy"}}, "it takes sync, spin, yield or callback"},
      {{{"send_from", "elsewhere"}}, "it takes instance or completion_thread"},
      {{{"plan_file.x1", "p.json"}}, "'x1' is not a device index"},
      {{{"plan_file.12345", "p.json"}}, "'12345' is not a device index"},
      {{{"tensorrt_runtime", "/tmp/libevil.so"}}, "chooses which code the server runs"},
      {{{"allow_engine_host_code", "1"}}, "chooses which code the server runs"},
      {{{"sms", "16"}, {"plan_file", "p.json"}}, "give one"},
      {{{"method", std::string(4097, 'm')}}, "longer than 4096 bytes"},
  };
  for (const auto& c : cases) {
    Json config = {{"name", "m"}};
    for (const auto& [key, value] : c.entries) config["parameters"][key] = {{"string_value", value}};
    const std::string message = parameters_refusal(config);
    EXPECT_NE(message.find(c.says), std::string::npos) << config.dump().substr(0, 200) << " -> " << message;
  }
  // Not a map, or an entry without a string value.
  EXPECT_NE(parameters_refusal({{"parameters", 3}}).find("is not a map"), std::string::npos);
  EXPECT_NE(parameters_refusal({{"parameters", {{"sms", {{"int_value", 3}}}}}}).find("has no string_value"), std::string::npos);
  EXPECT_NE(parameters_refusal({{"optimization", {{"priority", "PRIORITY_HIGHEST"}}}}).find("PRIORITY_DEFAULT, PRIORITY_MAX or PRIORITY_MIN"),
            std::string::npos);
  EXPECT_EQ(fake_server::live_errors(), 0);
}

std::vector<trtet_triton::IoSpec> program_inputs() {
  std::vector<trtet_triton::IoSpec> specs(2);
  specs[0].name = "x";
  specs[0].type = trtet_triton::data_type_of(::executorch::aten::ScalarType::Float);
  specs[0].dims = {2, 3};
  specs[0].config_dims = {2, 3};
  specs[1].name = "input_1";  // a generated name: the config may rename it
  specs[1].type = specs[0].type;
  specs[1].dims = {8, 64};
  specs[1].dynamism = trtet_triton::Dynamism::kDynamicBound;
  specs[1].config_dims = {-1, -1};
  return specs;
}

std::string io_refusal(Json config, std::vector<trtet_triton::IoSpec>& specs, bool autocomplete = false) {
  bool changed = false;
  return taken(trtet_triton::check_io(config, "input", specs, autocomplete, changed));
}

TEST(ConfigIo, TheProgramsInputsAreCheckedAndMayBeNarrowed) {
  auto specs = program_inputs();
  const Json good = {{"input", {{{"name", "x"}, {"data_type", "TYPE_FP32"}, {"dims", {2, 3}}},
                                {{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {-1, 16}}}}}};
  ASSERT_EQ(io_refusal(good, specs), "");
  EXPECT_EQ(specs[1].name, "y");
  EXPECT_EQ(specs[1].config_dims, (std::vector<std::int64_t>{-1, 16}));

  const struct {
    Json second;
    const char* says;
  } cases[] = {
      {{{"name", "y"}, {"data_type", "TYPE_INT32"}, {"dims", {-1, -1}}}, "is TYPE_INT32 in the config; the program takes TYPE_FP32"},
      {{{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {-1, 65}}}, "dynamic with 2 dims bounded by [8, 64]"},
      {{{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {-1}}}, "dynamic with 2 dims bounded by [8, 64]"},
      {{{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {-2, 4}}}, "dynamic with 2 dims bounded by [8, 64]"},
      {{{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {"x", 4}}}, "is not an integer"},
      {{{"name", ""}, {"data_type", "TYPE_FP32"}, {"dims", {-1, 4}}}, "has no name"},
  };
  for (const auto& c : cases) {
    auto fresh = program_inputs();
    Json config = {{"input", {{{"name", "x"}, {"data_type", "TYPE_FP32"}, {"dims", {2, 3}}}, c.second}}};
    const std::string message = io_refusal(config, fresh);
    EXPECT_NE(message.find(c.says), std::string::npos) << c.second.dump() << " -> " << message;
  }
  auto fresh = program_inputs();
  EXPECT_NE(io_refusal({{"input", {{{"name", "x"}, {"data_type", "TYPE_FP32"}, {"dims", {2, 4}}},
                                   {{"name", "y"}, {"data_type", "TYPE_FP32"}, {"dims", {-1, -1}}}}}},
                       fresh)
                .find("has dims [2, 4] in the config; the program's are [2, 3]"),
            std::string::npos);
  EXPECT_NE(io_refusal({{"input", {{{"name", "x"}, {"data_type", "TYPE_FP32"}, {"dims", {2, 3}}}}}}, fresh)
                .find("the config gives 1 inputs; the program's method has 2"),
            std::string::npos);
  EXPECT_NE(io_refusal({{"name", "m"}}, fresh).find("auto-complete is off"), std::string::npos);
}

TEST(ConfigIo, AutoCompleteWritesTheProgramsInputs) {
  auto specs = program_inputs();
  Json config = {{"name", "m"}};
  bool changed = false;
  ASSERT_EQ(taken(trtet_triton::check_io(config, "input", specs, true, changed)), "");
  EXPECT_TRUE(changed);
  ASSERT_EQ(config["input"].size(), 2u);
  EXPECT_EQ(config["input"][1]["dims"], Json({-1, -1}));
  EXPECT_EQ(config["input"][0]["data_type"], "TYPE_FP32");
}

}  // namespace
