#include "contract_fuzz/et_executor.h"

#include <torch_tensorrt/executorch/CudaStreamGuard.h>
#include <torch_tensorrt/executorch/GreenContext.h>
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/platform/runtime.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>

#include "contract_fuzz/buffer_pool.h"
#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"
#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/rng.h"
#include "engine/engine_factory.h"
#include "engines/test_engine_factory.h"

namespace trtet_test::fuzz {

bool have_et_leg() noexcept { return true; }

namespace {

namespace etr = ::executorch::runtime;
using ::executorch::aten::SizesType;
using ::executorch::extension::Module;
using ::executorch::extension::TensorPtr;

/// Threads with an I/O stream: the main thread (0) and up to 4 workers (1..4).
constexpr int kEtIoStreams = 5;
/// How far past an output's end the fuzzer looks for stray writes.
constexpr std::size_t kTailBytes = 64 * 1024;
constexpr unsigned char kScribbleByte = 0x7F;

Failure fail(Category category, std::string message) { return Failure{category, std::move(message)}; }

std::string et_error(etr::Error error) {
  std::ostringstream out;
  out << "ExecuTorch error " << etr::to_string(error) << " (0x" << std::hex << static_cast<unsigned>(error) << ")";
  return out.str();
}

/// The process's green-context partitions (16 SMs and the rest, through the public GreenContext.h),
/// their streams and the I/O streams; made on first use and kept until the process ends. No
/// partitions where green_contexts_here() is false (initcheck): the green streams stay null.
class EtWorld {
 public:
  static EtWorld& get() {
    static EtWorld* world = new EtWorld();  // never destroyed: streams and green contexts live on
    return *world;
  }
  const std::string& error() const noexcept { return error_; }
  cudaStream_t io(int thread) const noexcept { return io_[thread]; }
  cudaStream_t green(int slot) const noexcept { return green_[slot]; }
  bool has_green() const noexcept { return !partitions_.empty(); }

 private:
  EtWorld() {
    ensure_et_runtime();
    if (const cudaError_t e = cudaSetDevice(0); e != cudaSuccess) {
      error_ = std::string("cudaSetDevice(0): ") + cudaGetErrorString(e);
      return;
    }
    if (green_contexts_here()) make_green();
    if (!error_.empty()) return;
    for (cudaStream_t& s : io_) {
      if (const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess) {
        error_ = std::string("creating an I/O stream: ") + cudaGetErrorString(e);
        return;
      }
    }
  }

  void make_green() {
    auto partitions = ex::split_device(0, {16}, ex::Remainder::kKeep);
    if (!partitions.ok()) {
      error_ = "split_device(0, {16}, Remainder::kKeep): " + partitions.error().message();
      return;
    }
    partitions_ = std::move(partitions).value();
    if (partitions_.size() != 2) {
      error_ = "split_device made " + std::to_string(partitions_.size()) + " partitions, expected 2";
      return;
    }
    for (int slot = 0; slot < kGreenSlots; ++slot) {  // slots 0, 1 on the 16 SMs, 2, 3 on the rest
      ex::GreenContext& partition = partitions_[slot < 2 ? 0 : 1];
      if (slot % 2 == 0) {
        green_[slot] = partition.stream();
        continue;
      }
      auto stream = partition.make_stream();
      if (!stream.ok()) {
        error_ = "GreenContext::make_stream: " + stream.error().message();
        return;
      }
      green_[slot] = *stream;
    }
  }

  std::string error_;
  std::vector<ex::GreenContext> partitions_;
  cudaStream_t green_[kGreenSlots] = {};
  cudaStream_t io_[kEtIoStreams] = {};
};

/// Memory the delegate sees (ours, or the Module's planned memory), with host access through the
/// thread's I/O stream: device memory is copied on `io` and only `io` is synchronized.
struct Region {
  void* data = nullptr;
  Mem mem = Mem::kPageable;
};

Verdict region_read(const Region& r, std::size_t offset, std::size_t bytes, void* to, cudaStream_t io, Tally& tally) {
  if (bytes == 0) return std::nullopt;
  const auto* from = static_cast<const unsigned char*>(r.data) + offset;
  if (r.mem == Mem::kDevice) {
    cudaError_t e = cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, io);
    if (e == cudaSuccess) e = cudaStreamSynchronize(io);
    if (e != cudaSuccess) return fail(Category::kHarness, std::string("reading device memory back: ") + cudaGetErrorString(e));
  } else {
    std::memcpy(to, from, bytes);
  }
  tally.bytes += bytes;
  return std::nullopt;
}

Verdict region_fill(const Region& r, unsigned char value, std::size_t bytes, cudaStream_t io) {
  if (bytes == 0) return std::nullopt;
  if (r.mem == Mem::kDevice) {
    cudaError_t e = cudaMemsetAsync(r.data, value, bytes, io);
    if (e == cudaSuccess) e = cudaStreamSynchronize(io);
    if (e != cudaSuccess) return fail(Category::kHarness, std::string("filling device memory: ") + cudaGetErrorString(e));
  } else {
    std::memset(r.data, value, bytes);
  }
  return std::nullopt;
}

/// The streams a sequence selects: kCreatedSlots streams of its own, the world's green ones.
class EtStreams {
 public:
  explicit EtStreams(const EtWorld& world) : world_(world) {}
  ~EtStreams() {
    for (cudaStream_t s : created_) {
      if (s != nullptr) (void)cudaStreamDestroy(s);
    }
  }
  EtStreams(const EtStreams&) = delete;             // owns streams
  EtStreams& operator=(const EtStreams&) = delete;

  std::string create() {
    for (cudaStream_t& s : created_) {
      if (const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess) {
        return std::string("cudaStreamCreateWithFlags: ") + cudaGetErrorString(e);
      }
    }
    return "";
  }
  cudaStream_t get(const StreamRef& ref) const {
    switch (ref.source) {
      case StreamSource::kPerThread: return cudaStreamPerThread;
      case StreamSource::kLegacy: return nullptr;
      case StreamSource::kCreated: return created_[ref.slot];
      case StreamSource::kGreen: return world_.green(ref.slot);
    }
    return cudaStreamPerThread;
  }
  cudaError_t synchronize_all() const {
    for (cudaStream_t s : created_) {
      if (s == nullptr) continue;
      if (const cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) return e;
    }
    for (int slot = 0; slot < kGreenSlots; ++slot) {
      if (world_.green(slot) == nullptr) continue;  // no green contexts in this process
      if (const cudaError_t e = cudaStreamSynchronize(world_.green(slot)); e != cudaSuccess) return e;
    }
    if (const cudaError_t e = cudaStreamSynchronize(cudaStreamPerThread); e != cudaSuccess) return e;
    return cudaStreamSynchronize(cudaStreamLegacy);
  }

 private:
  const EtWorld& world_;
  cudaStream_t created_[kCreatedSlots] = {};
};

class EtRun {
 public:
  EtRun(const EtSequence& sequence, Tally& tally) : sequence_(sequence), tally_(tally), world_(EtWorld::get()) {}
  ~EtRun() {
    if (streams_) (void)streams_->synchronize_all();
    modules_.clear();  // before the pool: nothing of theirs is in flight, and no method points at a freed buffer
  }
  EtRun(const EtRun&) = delete;             // owns modules and streams
  EtRun& operator=(const EtRun&) = delete;

  RunResult run(const std::vector<std::size_t>& keep) {
    RunResult result;
    if (!world_.error().empty()) {
      result.failure = fail(Category::kHarness, "GPU setup (green-context split, I/O streams): " + world_.error());
      return result;
    }
    if (sequence_.config.green && !world_.has_green()) {
      result.failure = fail(Category::kHarness, kGreenDrawnWhereNone);
      return result;
    }
    streams_ = std::make_unique<EtStreams>(world_);
    if (const std::string made = streams_->create(); !made.empty()) {
      result.failure = fail(Category::kHarness, "making the sequence's streams: " + made);
      return result;
    }
    for (EtProgram program : sequence_.modules) modules_.push_back(std::make_unique<Module>(et_program_path(program)));
    for (std::size_t index : keep) {
      g_step_started_ns.store(std::chrono::steady_clock::now().time_since_epoch().count());
      g_current_step.store(static_cast<long>(index));
      Verdict v = step(sequence_.steps[index]);
      if (!v) {
        if (const cudaError_t e = streams_->synchronize_all(); e != cudaSuccess) {
          v = fail(Category::kStatus, std::string("synchronizing after the step: ") + cudaGetErrorString(e));
        }
      }
      pool_.release_all();
      if (v) {
        result.failure = v;
        result.step = index;
        break;
      }
    }
    g_current_step.store(-1);
    return result;
  }

 private:
  Verdict step(const EtStep& step) {
    return std::visit(Overloaded{
                          [&](const EtCallStep& s) {
                            const auto m = static_cast<std::size_t>(s.module);
                            return call(*modules_[m], sequence_.modules[m], s.call, 0);
                          },
                          [&](const EtUnloadStep& s) -> Verdict {
                            const auto m = static_cast<std::size_t>(s.module);
                            if (s.remake) {
                              modules_[m].reset();  // destroys the method, and with it the delegate's session
                              modules_[m] = std::make_unique<Module>(et_program_path(sequence_.modules[m]));
                            } else {
                              modules_[m]->unload_method("forward");
                            }
                            return std::nullopt;
                          },
                          [&](const EtThreadsStep& s) { return threads(s); },
                      },
                      step);
  }

  Verdict threads(const EtThreadsStep& step) {
    // Every buffer the threads will lend, made now and handed back: an allocation (cudaMalloc*) may
    // synchronize the device, which must not happen while the threads' calls are in flight.
    for (const EtThread& thread : step.threads) {
      const bool planned = is_planned(thread.program);
      for (const EtCallPlan& plan : thread.calls) {
        const std::size_t bytes = static_cast<std::size_t>(plan.shape.numel()) * sizeof(float);
        for (int r = 0; r < plan.repeats; ++r) {
          for (int b = 0; b < 3; ++b) {
            if (planned && b == 2) continue;  // a planned output is the Module's
            const Mem mem = planned ? Mem::kPageable : plan.mems[static_cast<std::size_t>(b)];
            auto buffer = pool_.lend(mem, b == 2 ? kEtBoundBytes : std::max<std::size_t>(bytes, 1));
            if (!buffer.ok()) return fail(Category::kHarness, "making the threads' buffers: " + buffer.status().to_string());
          }
        }
      }
    }
    pool_.release_all();
    std::mutex mutex;
    std::condition_variable go;
    bool started = false;
    Verdict first;
    auto worker = [&](int t) {
      const EtThread& plan = step.threads[static_cast<std::size_t>(t)];
      Module module(et_program_path(plan.program));  // this thread's own; loaded by its first call
      {
        std::unique_lock<std::mutex> lock(mutex);
        go.wait(lock, [&] { return started; });
      }
      for (std::size_t c = 0; c < plan.calls.size(); ++c) {
        if (Verdict v = call(module, plan.program, plan.calls[c], 1 + t)) {
          v->message = "thread " + std::to_string(t) + " (" + to_string(plan.program) + "), call " + std::to_string(c) +
                       ": " + v->message;
          std::lock_guard<std::mutex> lock(mutex);
          if (!first) first = v;
          return;
        }
      }
    };  // the Module goes with the thread: its method's destroy waits for the session's own work
    std::vector<std::thread> pool;
    for (int t = 0; t < static_cast<int>(step.threads.size()); ++t) pool.emplace_back(worker, t);
    {
      std::lock_guard<std::mutex> lock(mutex);
      started = true;
    }
    go.notify_all();
    for (std::thread& t : pool) t.join();
    return first;
  }

  Verdict call(Module& module, EtProgram program, const EtCallPlan& plan, int thread) {
    for (int r = 0; r < plan.repeats; ++r) {
      if (Verdict v = one_call(module, program, plan, r, thread)) {
        if (plan.repeats > 1) v->message = "repeat " + std::to_string(r) + ": " + v->message;
        return v;
      }
    }
    return std::nullopt;
  }

  Verdict one_call(Module& module, EtProgram program, const EtCallPlan& plan, int repeat, int thread) {
    const cudaStream_t io = world_.io(thread);
    const bool planned = is_planned(program);
    const std::size_t n = static_cast<std::size_t>(plan.shape.numel());
    const std::size_t bytes = n * sizeof(float);
    const bool in_profile = et_in_profile(plan.shape);
    const std::uint64_t seed = repeat == 0 ? plan.data_seed : mix(plan.data_seed, static_cast<std::uint64_t>(repeat));
    std::vector<std::vector<float>> values(3);  // by binding: x, y, (out)
    const std::vector<SizesType> sizes = {static_cast<SizesType>(plan.shape.rows), static_cast<SizesType>(plan.shape.cols)};

    // The caller's inputs: pageable host for a planned program (set_input copies them into the
    // Module's planned memory), else the drawn kind, aliased by set_input.
    Region in[2];
    TensorPtr tensors[2];
    for (int b = 0; b < 2; ++b) {
      const Mem mem = planned ? Mem::kPageable : plan.mems[static_cast<std::size_t>(b)];
      auto buffer = pool_.lend(mem, std::max<std::size_t>(bytes, 1));
      if (!buffer.ok()) return fail(Category::kHarness, "lending an input buffer: " + buffer.status().to_string());
      values[static_cast<std::size_t>(b)] = draw_floats(n, mix(seed, static_cast<std::uint64_t>(b)));
      const ex::Status written = (*buffer)->write(values[static_cast<std::size_t>(b)].data(), bytes, io);
      if (!written.ok()) return fail(Category::kHarness, "writing an input: " + written.to_string());
      in[b] = Region{(*buffer)->data(), mem};
      const auto device = mem == Mem::kDevice ? ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0)
                                              : ::executorch::aten::Device(::executorch::aten::DeviceType::CPU);
      tensors[b] = ::executorch::extension::from_blob((*buffer)->data(), sizes, ::executorch::aten::ScalarType::Float,
                                                      device);
    }

    // The output: the Module's planned memory, or a buffer of ours handed over with set_output.
    // set_output wants room for the method's output as it stands (up to the bound): our buffer is
    // the bound's size, and only what this call may write (plus a tail) is poisoned.
    Region out;
    TensorPtr out_tensor;
    // Loaded first (a no-op when it is): the method may have been unloaded at any point before.
    if (const etr::Error e = module.load_method("forward"); e != etr::Error::Ok) {
      return fail(Category::kStatus, std::string("loading ") + program_file(program) + "'s forward: " + et_error(e));
    }
    if (planned) {
      auto current = module.get_output("forward", 0);
      if (!current.ok() || !current->isTensor()) {
        return fail(Category::kHarness, "reading the planned output tensor: " +
                                            et_error(current.ok() ? etr::Error::InvalidType : current.error()));
      }
      out = Region{current->toTensor().mutable_data_ptr(), Mem::kPageable};
    } else {
      const Mem mem = plan.mems[2];
      auto buffer = pool_.lend(mem, kEtBoundBytes);
      if (!buffer.ok()) return fail(Category::kHarness, "lending an output buffer: " + buffer.status().to_string());
      out = Region{(*buffer)->data(), mem};
      out_tensor = ::executorch::extension::from_blob(
          out.data, {static_cast<SizesType>(kEtBoundElements / kEtMaxCols), static_cast<SizesType>(kEtMaxCols)},
          ::executorch::aten::ScalarType::Float);
      if (const etr::Error e = module.set_output("forward", etr::EValue(*out_tensor), 0); e != etr::Error::Ok) {
        return fail(Category::kStatus, "Module::set_output: " + et_error(e));
      }
    }
    const std::size_t poisoned = std::min(kEtBoundBytes, bytes + kTailBytes);
    if (Verdict v = region_fill(out, kPoisonByte, poisoned, io)) return v;
    // Where the delegate reads the inputs: a planned program's copies (their memory plan).
    Region read_from[2] = {in[0], in[1]};
    if (planned) {
      for (int b = 0; b < 2; ++b) read_from[b] = Region{planned_input_address(module, program, b), Mem::kPageable};
    }

    // The call.
    const cudaStream_t stream = streams_->get(plan.stream);
    // A call the delegate must refuse, from the main thread (no other thread queues meanwhile), of
    // a program with no copies before the delegate: its stream, idle now, must be idle right after.
    const cudaStream_t ordered = plan.guard ? (stream != nullptr ? stream : cudaStreamLegacy) : cudaStreamPerThread;
    bool idle_before = false;
    if (!in_profile && !planned && thread == 0) {
      if (const cudaError_t e = cudaStreamSynchronize(ordered); e != cudaSuccess) {
        return fail(Category::kStatus, std::string("synchronizing before a call that must fail: ") + cudaGetErrorString(e));
      }
      idle_before = cudaStreamQuery(ordered) == cudaSuccess;
    }
    auto execute = [&] {
      return module.execute("forward", std::vector<etr::EValue>{etr::EValue(*tensors[0]), etr::EValue(*tensors[1])});
    };
    auto result = plan.guard ? [&] {
      ex::CudaStreamGuard guard(stream);
      return execute();
    }()
                             : execute();
    ++tally_.calls;
    bool unloaded = false;
    auto unload = [&] {
      if (!unloaded) module.unload_method("forward");  // the method's destroy waits for its session's work
      unloaded = true;
    };

    const bool host[3] = {planned || is_host(in[0].mem), planned || is_host(in[1].mem), planned || is_host(out.mem)};
    auto binding = [&](int b) {
      static const char* const names[] = {"input x", "input y", "output out"};
      std::ostringstream text;
      text << names[b] << " (" << (planned ? "the Module's planned memory" : to_string(b < 2 ? in[b].mem : out.mem))
           << ", " << bytes << " bytes)";
      return text.str();
    };
    auto check_output = [&](const char* when) -> Verdict {
      std::vector<unsigned char> data(poisoned);
      if (Verdict v = region_read(out, 0, poisoned, data.data(), io, tally_)) return v;
      ++tally_.tensors;
      const auto* got = reinterpret_cast<const float*>(data.data());
      for (std::size_t i = 0; i < n; ++i) {
        float tolerance = 0;
        const float want = et_reference(program, values[0][i], values[1][i], &tolerance);
        if (!(std::fabs(got[i] - want) <= tolerance)) {
          std::ostringstream text;
          text << binding(2) << ": element " << i << " of " << n << " is " << got[i]
               << (is_poison(got[i]) ? " (the poison: never written)" : "") << ", expected " << want << " ("
               << to_string(program) << " of x " << values[0][i] << ", y " << values[1][i] << ") [checked " << when << "]";
          return fail(Category::kOutputs, text.str());
        }
      }
      for (std::size_t i = bytes; i < poisoned; ++i) {
        if (data[i] != kPoisonByte) {
          return fail(Category::kOutputs, binding(2) + " past its end: byte " + std::to_string(i) +
                                              " was written, it must still hold the poison [checked " + when + "]");
        }
      }
      return std::nullopt;
    };
    auto check_input = [&](int b, const char* when) -> Verdict {
      std::vector<float> data(n);
      if (Verdict v = region_read(read_from[b], 0, bytes, data.data(), io, tally_)) return v;
      ++tally_.tensors;
      const std::vector<float>& original = values[static_cast<std::size_t>(b)];
      if (bytes == 0 || std::memcmp(data.data(), original.data(), bytes) == 0) return std::nullopt;
      std::size_t i = 0;
      while (i < n && std::memcmp(&data[i], &original[i], sizeof(float)) == 0) ++i;
      std::ostringstream text;
      text << binding(b) << " was modified by the call: element " << i << " is " << data[i] << ", was " << original[i]
           << " [checked " << when << "]";
      return fail(Category::kInputs, text.str());
    };
    auto synchronize = [&](cudaStream_t s, const char* what) -> Verdict {
      if (const cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) {
        return fail(Category::kStatus, std::string("cudaStreamSynchronize(") + what + ") after the call: " +
                                           cudaGetErrorString(e));
      }
      return std::nullopt;
    };

    if (!result.ok()) {
      if (in_profile) return fail(Category::kStatus, "Module::execute failed where it must succeed: " + et_error(result.error()));
      if (result.error() != etr::Error::InvalidArgument) {
        return fail(Category::kStatus, "a call outside the engine's profile failed with " + et_error(result.error()) +
                                           ", expected InvalidArgument (caller misuse)");
      }
      if (idle_before) {
        const cudaError_t query = cudaStreamQuery(ordered);
        ++tally_.idle_after_reject;
        if (query != cudaSuccess) {
          return fail(Category::kPromise, std::string("a rejected call left work on its stream, idle before the call: "
                                                      "cudaStreamQuery right after it gave ") + cudaGetErrorName(query));
        }
      }
      // Nothing may have been enqueued: whatever was would have landed once the stream is idle.
      if (Verdict v = synchronize(plan.guard ? stream : cudaStreamPerThread, "the call's stream")) return v;
      std::vector<unsigned char> data(poisoned);
      if (Verdict v = region_read(out, 0, poisoned, data.data(), io, tally_)) return v;
      ++tally_.tensors;
      for (std::size_t i = 0; i < poisoned; ++i) {
        if (data[i] != kPoisonByte) {
          return fail(Category::kOutputs, binding(2) + " of a rejected call: byte " + std::to_string(i) +
                                              " was written, it must still hold the poison");
        }
      }
      for (int b = 0; b < 2; ++b) {
        if (Verdict v = check_input(b, "after a rejected call")) return v;
      }
      if (plan.unload_after) unload();
      return std::nullopt;
    }
    if (!in_profile) {
      return fail(Category::kStatus, "Module::execute succeeded where it must fail: the shape is outside the engine's "
                                     "profile [0, 1] .. [" + std::to_string(kEtMaxRows) + ", " +
                                         std::to_string(kEtMaxCols) + "]");
    }
    if (result->size() != 1 || !(*result)[0].isTensor()) {
      return fail(Category::kOutputs, "forward returned " + std::to_string(result->size()) + " values, expected one tensor");
    }
    {
      const auto& tensor = (*result)[0].toTensor();
      const bool shape_ok = tensor.dim() == 2 && tensor.size(0) == plan.shape.rows && tensor.size(1) == plan.shape.cols;
      if (!shape_ok) {
        std::ostringstream text;
        text << binding(2) << " has " << tensor.dim() << " dimensions [";
        for (int d = 0; d < tensor.dim(); ++d) text << (d ? ", " : "") << tensor.size(d);
        text << "] after the call, expected [" << plan.shape.rows << ", " << plan.shape.cols << "]";
        return fail(Category::kOutputs, text.str());
      }
      if (tensor.const_data_ptr() != out.data) {
        return fail(Category::kOutputs, binding(2) + " was re-pointed: its data is no longer the buffer it was given");
      }
    }  // the returned tensors belong to the method: not used past this point (it may be unloaded)

    if (!plan.guard) {
      const char* when = "right after an unguarded execute returned";
      if (Verdict v = check_output(when)) return v;
      for (int b = 0; b < 2; ++b) {
        if (Verdict v = check_input(b, when)) return v;
      }
      if (plan.unload_after) unload();
      return std::nullopt;
    }
    bool scribbled[2] = {false, false};
    if (host[0] || host[1] || host[2]) {
      const char* when = "right after a guarded execute with host memory returned";
      if (host[2]) {
        if (Verdict v = check_output(when)) return v;
      }
      for (int b = 0; b < 2; ++b) {
        if (!host[b]) continue;
        if (Verdict v = check_input(b, when)) return v;
        if (plan.scribble && bytes > 0) {
          // The contract lets the caller reuse host inputs once execute returned.
          if (Verdict v = region_fill(read_from[b], kScribbleByte, bytes, io)) return v;
          scribbled[b] = true;
        }
      }
    }
    // Unplanned: our buffers outlive the method, so it may go while its work is in flight.
    if (plan.unload_after && !planned) unload();
    if (Verdict v = synchronize(stream, "the guard's stream")) return v;
    const char* when = scribbled[0] || scribbled[1]
                           ? "after synchronizing the guard's stream (host inputs were overwritten at return)"
                           : "after synchronizing the guard's stream";
    if (!host[2]) {
      if (Verdict v = check_output(when)) return v;
    }
    for (int b = 0; b < 2; ++b) {
      if (host[b]) continue;
      if (Verdict v = check_input(b, when)) return v;
    }
    if (plan.unload_after) unload();
    return std::nullopt;
  }

  const EtSequence& sequence_;
  Tally& tally_;
  EtWorld& world_;
  BufferPool pool_;  // declared before the modules: they go first
  std::unique_ptr<EtStreams> streams_;
  std::vector<std::unique_ptr<Module>> modules_;
};

}  // namespace

std::string et_program_path(EtProgram program) { return std::string(TRTET_FUZZ_PROGRAM_DIR) + "/" + program_file(program); }

void ensure_et_runtime() {
  static const bool ready = [] {
    etr::runtime_init();
    ex::set_engine_factory([](const ex::EngineRequest& request) {
      return make_test_engine(std::string_view(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size),
                              request.device);
    });
    return true;
  }();
  (void)ready;
}

void* planned_input_address(Module& module, EtProgram program, int index) {
  if (module.load_method("forward") != etr::Error::Ok) return nullptr;
  auto out = module.get_output("forward", 0);
  if (!out.ok() || !out->isTensor()) return nullptr;
  auto* out_address = static_cast<unsigned char*>(out->toTensor().mutable_data_ptr());
  return out_address - static_cast<std::size_t>(planned_output_slot(program) - index) * kEtBoundBytes;
}

RunResult run_et(const EtSequence& sequence, const std::vector<std::size_t>& keep, Tally& tally) {
  EtRun run(sequence, tally);
  return run.run(keep);
}

}  // namespace trtet_test::fuzz
