#include "program_shapes.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>

namespace trtet_triton {

namespace {

// A flatbuffer whose every read is checked against its end (Note [dynamic shapes]); a read out of
// bounds makes the reader bad, and every later read answers nothing.
class Reader {
 public:
  explicit Reader(const std::vector<std::uint8_t>& bytes) : bytes_(bytes) {}
  bool bad() const { return bad_; }

  std::optional<std::uint32_t> u32(std::size_t at) { return read<std::uint32_t>(at); }
  std::optional<std::int32_t> i32(std::size_t at) { return read<std::int32_t>(at); }
  std::optional<std::uint16_t> u16(std::size_t at) { return read<std::uint16_t>(at); }
  std::optional<std::uint8_t> u8(std::size_t at) { return read<std::uint8_t>(at); }

  // The offset of field `index` in the table at `table` (0: absent).
  std::uint16_t field(std::size_t table, int index) {
    auto back = i32(table);
    if (!back) return 0;
    const std::int64_t vtable = static_cast<std::int64_t>(table) - *back;
    if (vtable < 0) return fail();
    auto size = u16(static_cast<std::size_t>(vtable));
    const std::size_t slot = 4 + 2 * static_cast<std::size_t>(index);
    if (!size || slot + 2 > *size) return 0;
    auto o = u16(static_cast<std::size_t>(vtable) + slot);
    return o ? *o : 0;
  }
  // Where the offset field `index` of the table points (a table, vector or string), or nothing.
  std::optional<std::size_t> target(std::size_t table, int index) {
    const std::uint16_t o = field(table, index);
    if (o == 0) return std::nullopt;
    auto rel = u32(table + o);
    if (!rel) return std::nullopt;
    const std::size_t at = table + o + *rel;
    if (at >= bytes_.size()) return fail(), std::nullopt;
    return at;
  }
  // Element `i` of a vector of offsets (tables) at `vector`.
  std::optional<std::size_t> element(std::size_t vector, std::uint32_t i) {
    const std::size_t slot = vector + 4 + 4 * static_cast<std::size_t>(i);
    auto rel = u32(slot);
    if (!rel) return std::nullopt;
    const std::size_t at = slot + *rel;
    if (at >= bytes_.size()) return fail(), std::nullopt;
    return at;
  }

 private:
  template <typename T>
  std::optional<T> read(std::size_t at) {
    if (bad_ || at > bytes_.size() || bytes_.size() - at < sizeof(T)) return fail(), std::nullopt;
    T v;
    std::memcpy(&v, bytes_.data() + at, sizeof v);
    return v;
  }
  std::uint16_t fail() {
    bad_ = true;
    return 0;
  }

  const std::vector<std::uint8_t>& bytes_;
  bool bad_ = false;
};

// Fields, in the schema's order (executorch/exir/_serialize/program.fbs).
constexpr int kProgramExecutionPlan = 1;
constexpr int kPlanName = 0, kPlanValues = 2, kPlanInputs = 3, kPlanOutputs = 4, kPlanDelegates = 7;
constexpr int kDelegateId = 0, kDelegateProcessed = 1, kDelegateCompileSpecs = 2;
constexpr int kCompileSpecKey = 0, kCompileSpecValue = 1;
constexpr int kEValueType = 0, kEValueVal = 1;
constexpr std::uint8_t kKernelTypesTensor = 5;  // a union's members count from 1 (0 is NONE)
constexpr int kTensorScalarType = 0, kTensorShapeDynamism = 8;

bool dynamism_of(Reader& r, std::optional<std::size_t> values, std::optional<std::size_t> indices,
                 std::vector<Dynamism>& out, std::vector<std::int8_t>* types, const char* kind, std::string& why) {
  out.clear();
  if (types != nullptr) types->clear();
  if (!indices && !r.bad()) return true;
  const std::uint32_t count = indices ? r.u32(*indices).value_or(0) : 0;
  const std::uint32_t value_count = values ? r.u32(*values).value_or(0) : 0;
  for (std::uint32_t i = 0; i < count && !r.bad(); ++i) {
    const std::int32_t index = r.i32(*indices + 4 + 4 * static_cast<std::size_t>(i)).value_or(-1);
    if (index < 0 || static_cast<std::uint32_t>(index) >= value_count) {
      why = std::string("the method's ") + kind + " " + std::to_string(i) + " names value " + std::to_string(index) +
            "; the method has " + std::to_string(value_count);
      return false;
    }
    auto evalue = r.element(*values, static_cast<std::uint32_t>(index));
    if (!evalue) break;
    const std::uint16_t type_field = r.field(*evalue, kEValueType);
    const std::uint8_t type = type_field == 0 ? 0 : r.u8(*evalue + type_field).value_or(0);
    auto tensor = type == kKernelTypesTensor ? r.target(*evalue, kEValueVal) : std::nullopt;
    if (!tensor) {
      out.push_back(Dynamism::kStatic);  // not a tensor: read_io refuses it with its own reason
      if (types != nullptr) types->push_back(kNotATensor);
      continue;
    }
    if (types != nullptr) {  // a byte enum; absent, its default (0)
      const std::uint16_t t_field = r.field(*tensor, kTensorScalarType);
      types->push_back(t_field == 0 ? 0 : static_cast<std::int8_t>(r.u8(*tensor + t_field).value_or(0)));
    }
    const std::uint16_t d_field = r.field(*tensor, kTensorShapeDynamism);
    const std::uint8_t d = d_field == 0 ? 0 : r.u8(*tensor + d_field).value_or(0);
    out.push_back(d == 1 ? Dynamism::kDynamicBound : d == 2 ? Dynamism::kDynamicUnbound : Dynamism::kStatic);
  }
  if (r.bad()) {
    why = std::string("the program's ") + kind + " tensors point outside its flatbuffer";
    return false;
  }
  return true;
}

// Note [a delegate's fields]: every delegate of the plan has its id, processed data and compile specs,
// and each compile spec its key and value.
bool delegates_whole(Reader& r, const std::size_t plan, const std::string& method, std::string& why) {
  auto delegates = r.target(plan, kPlanDelegates);
  const std::uint32_t count = delegates ? r.u32(*delegates).value_or(0) : 0;
  for (std::uint32_t d = 0; d < count && !r.bad(); ++d) {
    auto delegate = r.element(*delegates, d);
    if (!delegate) break;
    const char* missing = !r.target(*delegate, kDelegateId)          ? "its backend id"
                          : !r.target(*delegate, kDelegateProcessed) ? "its processed data"
                          : nullptr;
    auto specs = missing == nullptr ? r.target(*delegate, kDelegateCompileSpecs) : std::nullopt;
    if (missing == nullptr && !specs) missing = "its compile specs";
    const std::uint32_t spec_count = specs ? r.u32(*specs).value_or(0) : 0;
    for (std::uint32_t s = 0; missing == nullptr && s < spec_count && !r.bad(); ++s) {
      auto spec = r.element(*specs, s);
      if (!spec) break;
      if (!r.target(*spec, kCompileSpecKey)) missing = "a compile spec's key";
      else if (!r.target(*spec, kCompileSpecValue)) missing = "a compile spec's value";
    }
    if (missing != nullptr && !r.bad()) {
      why = "delegate " + std::to_string(d) + " of method '" + method + "' lacks " + missing +
            " (ExecuTorch reads it without a check)";
      return false;
    }
  }
  if (r.bad()) {
    why = "the delegates of method '" + method + "' point outside the program's flatbuffer";
    return false;
  }
  return true;
}

}  // namespace

bool method_dynamism(const std::string& path, const std::string& method, std::vector<Dynamism>& inputs,
                     std::vector<Dynamism>& outputs, std::string& why, TensorTypes* types) {
  // The flatbuffer is the file's start: all of it, or the extended header's program_size bytes.
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    why = "cannot open " + path;
    return false;
  }
  std::vector<std::uint8_t> head(32, 0);
  file.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  const std::size_t got = static_cast<std::size_t>(file.gcount());
  file.clear();
  file.seekg(0, std::ios::end);
  const std::uint64_t file_size = static_cast<std::uint64_t>(file.tellg());
  std::uint64_t size = file_size;
  if (got >= 24 && std::memcmp(head.data() + 8, "eh00", 4) == 0) {
    std::uint64_t program_size = 0;
    std::memcpy(&program_size, head.data() + 16, sizeof program_size);
    if (program_size == 0 || program_size > file_size) {
      why = "the program's extended header gives a flatbuffer of " + std::to_string(program_size) + " bytes in a file of " +
            std::to_string(file_size);
      return false;
    }
    size = program_size;
  }
  constexpr std::uint64_t kMax = 2ull << 30;  // flatbuffers address 2 GiB at most
  if (size < 8 || size > kMax) {
    why = "the program's flatbuffer is " + std::to_string(size) + " bytes (8 to 2 GiB)";
    return false;
  }
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<std::uint64_t>(file.gcount()) != size) {
    why = "cannot read " + path;
    return false;
  }
  return method_dynamism_in(bytes, method, inputs, outputs, why, types);
}

bool method_dynamism_in(const std::vector<std::uint8_t>& bytes, const std::string& method, std::vector<Dynamism>& inputs,
                        std::vector<Dynamism>& outputs, std::string& why, TensorTypes* types) {
  Reader r(bytes);
  const std::size_t root = r.u32(0).value_or(0);
  auto plans = root == 0 ? std::nullopt : r.target(root, kProgramExecutionPlan);
  const std::uint32_t plan_count = plans ? r.u32(*plans).value_or(0) : 0;
  for (std::uint32_t p = 0; p < plan_count && !r.bad(); ++p) {
    auto plan = r.element(*plans, p);
    if (!plan) break;
    auto name = r.target(*plan, kPlanName);
    if (!name) continue;
    const std::uint32_t length = r.u32(*name).value_or(0);
    if (r.bad() || length != method.size() || *name + 4 + length > bytes.size() ||
        std::memcmp(bytes.data() + *name + 4, method.data(), length) != 0) {
      continue;
    }
    auto values = r.target(*plan, kPlanValues);
    return dynamism_of(r, values, r.target(*plan, kPlanInputs), inputs, types ? &types->inputs : nullptr, "input", why) &&
           dynamism_of(r, values, r.target(*plan, kPlanOutputs), outputs, types ? &types->outputs : nullptr, "output", why) &&
           delegates_whole(r, *plan, method, why);
  }
  why = r.bad() ? "the program's execution plans point outside its flatbuffer"
                : "the program has no execution plan named '" + method + "'";
  return false;
}

}  // namespace trtet_triton
