// green-probe: splits a GPU's SMs into green-context partitions and measures, with a saturating
// kernel per partition, which SMs each partition's stream really runs on.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/device.h"
#include "green/probe.h"
#include "green/split.h"

namespace et = torch_tensorrt::executorch_backend;
namespace green = et::green;

namespace {

constexpr int kExitUsage = 1;
constexpr int kExitNoGpu = 2;
constexpr int kExitFailed = 3;       // a split or probe failed
constexpr int kExitNotConfined = 4;  // a partition ran outside its grant or shared SMs

const char kHelp[] =
    "usage: green-probe [--device N] [--sms A,B,... [--round] | --groups N] [--remainder] [--ids]\n"
    "\n"
    "Splits one GPU's SMs, in a single cuDevSmResourceSplitByCount call, into disjoint CUDA green\n"
    "contexts, runs a saturating kernel that records %smid on a stream of each partition and on a\n"
    "full-device stream, and prints what each was granted and what it really ran on.\n"
    "\n"
    "  --device N     the CUDA device to split (default 0)\n"
    "  --sms A,B,...  one partition per count, e.g. --sms 16,32 (the default). Counts must be\n"
    "                 multiples of the device's granularity (8 SMs on Hopper); others are rejected\n"
    "                 with the closest valid request, unless --round is given\n"
    "  --round        round misaligned counts to the nearest valid one instead of rejecting them\n"
    "  --groups N     N equal partitions, each as large as the device allows\n"
    "  --remainder    also make a partition of the SMs the others leave\n"
    "  --ids          also list the SM ids each partition ran on\n"
    "  --help         this text\n"
    "\n"
    "Table: partition, SMs requested, SMs granted by the driver, distinct SMs observed under the\n"
    "probe, and how many of those SMs another partition also ran on (0 when confined).\n"
    "Exit status: 0 confined; 1 bad arguments or request; 2 no GPU; 3 CUDA failure; 4 a partition\n"
    "ran on more SMs than granted or shared SMs with another.\n";

struct Options {
  int device = 0;
  green::SplitRequest request;
  bool list_ids = false;
};

bool parse_unsigned(const char* text, unsigned long max, unsigned long& out) {
  if (text == nullptr || *text == '\0' || *text == '-' || *text == '+') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value > max) return false;
  out = value;
  return true;
}

bool parse_counts(const char* text, std::vector<unsigned>& counts) {
  std::string list = text == nullptr ? "" : text;
  if (list.empty()) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    unsigned long value = 0;
    if (!parse_unsigned(item.c_str(), 1u << 20, value)) return false;
    counts.push_back(static_cast<unsigned>(value));
    if (comma == std::string::npos) return true;
    start = comma + 1;
  }
}

// 0 when parsed; otherwise the exit status (help prints and exits 0 through `help`).
int parse(int argc, char** argv, Options& options, bool& help) {
  bool round = false;
  bool remainder = false;
  unsigned groups = 0;
  std::vector<unsigned> counts;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    unsigned long number = 0;
    if (arg == "--help" || arg == "-h") {
      help = true;
      return 0;
    } else if (arg == "--device" && parse_unsigned(value, 1u << 16, number)) {
      options.device = static_cast<int>(number);
      ++i;
    } else if (arg == "--sms" && parse_counts(value, counts)) {
      ++i;
    } else if (arg == "--groups" && parse_unsigned(value, 1u << 20, number)) {
      groups = static_cast<unsigned>(number);
      ++i;
    } else if (arg == "--round") {
      round = true;
    } else if (arg == "--remainder") {
      remainder = true;
    } else if (arg == "--ids") {
      options.list_ids = true;
    } else {
      std::fprintf(stderr, "green-probe: unknown argument, or a missing or bad value: '%s%s%s' (see --help)\n",
                   arg.c_str(), value != nullptr ? " " : "", value != nullptr ? value : "");
      return kExitUsage;
    }
  }
  if (!counts.empty() && groups != 0) {
    std::fprintf(stderr, "green-probe: give --sms or --groups, not both\n");
    return kExitUsage;
  }
  if (round && groups != 0) {
    std::fprintf(stderr, "green-probe: --round applies to --sms only\n");
    return kExitUsage;
  }
  if (groups != 0) {
    options.request = green::SplitRequest::equal_groups(groups, remainder);
  } else {
    if (counts.empty()) counts = {16, 32};
    options.request = green::SplitRequest::counts(counts, remainder, round);
  }
  return 0;
}

std::string describe_request(const green::SplitRequest& request) {
  std::string text = request.groups != 0 ? "--groups " + std::to_string(request.groups)
                                         : "--sms " + green::format_counts(request.sm_counts);
  if (request.round) text += " --round";
  if (request.remainder) text += " --remainder";
  return text;
}

std::string format_ids(const std::vector<int>& ids) {
  std::string text;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i != 0) text += ' ';
    text += std::to_string(ids[i]);
  }
  return text;
}

// SMs of `mine` that any other observed set also contains.
std::size_t overlap_with_others(const std::vector<std::vector<int>>& seen, std::size_t mine) {
  std::vector<int> others;
  for (std::size_t j = 0; j < seen.size(); ++j) {
    if (j != mine) others.insert(others.end(), seen[j].begin(), seen[j].end());
  }
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  return green::shared_sms(seen[mine], others);
}

int fail(const char* what, const et::Status& status) {
  std::fprintf(stderr, "green-probe: %s: %s\n", what, status.to_string().c_str());
  return status.code() == et::ErrorCode::kInvalidArgument ? kExitUsage
         : status.code() == et::ErrorCode::kNoDevice      ? kExitNoGpu
                                                          : kExitFailed;
}

// The SMs a plain (non-green) stream of the device runs on.
et::Result<std::vector<int>> probe_full_device(int device) {
  if (cudaSetDevice(device) != cudaSuccess) {
    return et::make_error(et::ErrorCode::kInternal, "cudaSetDevice(%d): %s", device,
                          cudaGetErrorString(cudaGetLastError()));
  }
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    return et::make_error(et::ErrorCode::kInternal, "cudaStreamCreateWithFlags: %s",
                          cudaGetErrorString(cudaGetLastError()));
  }
  auto sms = green::probe_sms(stream);
  (void)cudaStreamDestroy(stream);
  return sms;
}

int run(const Options& options) {
  auto count = et::cuda::device_count();
  if (!count.ok()) {
    std::fprintf(stderr, "green-probe: no usable GPU on this machine: %s\n", count.status().message().c_str());
    return kExitNoGpu;
  }
  auto g = green::device_sm_granularity(options.device);
  if (!g.ok()) return fail("reading the device's SM resource", g.status());
  cudaDeviceProp prop{};
  const char* name = cudaGetDeviceProperties(&prop, options.device) == cudaSuccess ? prop.name : "?";
  std::printf("device %d: %s\n", options.device, name);
  std::printf("SM resource: %u SMs, minimum partition %u, alignment %u; one split makes at most %u groups of %u SMs\n",
              g->sm_count, g->min_partition, g->alignment, g->group_capacity(), g->unit());
  std::printf("split: %s\n\n", describe_request(options.request).c_str());

  auto partitions = green::split_device(options.device, options.request);
  if (!partitions.ok()) return fail("split rejected", partitions.status());

  std::vector<std::vector<int>> seen;
  for (green::Partition& p : *partitions) {
    auto stream = p.context.make_stream();
    if (!stream.ok()) return fail("creating a partition stream", stream.status());
    auto sms = green::probe_sms(*stream);
    if (!sms.ok()) return fail("probing a partition", sms.status());
    seen.push_back(std::move(sms).value());
  }
  auto full = probe_full_device(options.device);
  if (!full.ok()) return fail("probing the full device", full.status());

  bool confined = true;
  std::printf("%-12s %10s %8s %13s %20s\n", "partition", "requested", "granted", "SMs observed", "overlap with others");
  for (std::size_t i = 0; i < partitions->size(); ++i) {
    const green::Partition& p = (*partitions)[i];
    const std::size_t overlap = overlap_with_others(seen, i);
    confined = confined && overlap == 0 && seen[i].size() <= p.granted_sms();
    const std::string label = p.is_remainder ? "remainder" : std::to_string(i);
    const std::string requested = p.is_remainder ? "-" : std::to_string(p.requested_sms);
    std::printf("%-12s %10s %8u %13zu %20zu\n", label.c_str(), requested.c_str(), p.granted_sms(), seen[i].size(),
                overlap);
  }
  std::printf("%-12s %10s %8u %13zu %20s\n", "full device", "-", g->sm_count, full->size(), "-");
  if (options.list_ids) {
    std::printf("\n");
    for (std::size_t i = 0; i < partitions->size(); ++i) {
      std::printf("%s: %s\n", (*partitions)[i].is_remainder ? "remainder" : std::to_string(i).c_str(),
                  format_ids(seen[i]).c_str());
    }
    std::printf("full device: %s\n", format_ids(*full).c_str());
  }
  std::printf("\n%s\n", confined ? "confined: every partition ran within its grant, no SM shared"
                                 : "NOT CONFINED: a partition ran beyond its grant or shared SMs");
  return confined ? 0 : kExitNotConfined;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  bool help = false;
  const int parsed = parse(argc, argv, options, help);
  if (help) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (parsed != 0) return parsed;
  return run(options);
}
