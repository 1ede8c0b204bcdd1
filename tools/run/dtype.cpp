#include "run/dtype.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace trtet_run {
namespace {

struct Entry {
  ScalarType type;
  const char* descr;  // "" where NumPy has none
  const char* name;
  std::size_t size;
};

constexpr Entry kTypes[] = {
    {ScalarType::Float, "<f4", "float32", 4}, {ScalarType::Double, "<f8", "float64", 8},
    {ScalarType::Half, "<f2", "float16", 2},  {ScalarType::BFloat16, "", "bfloat16", 2},
    {ScalarType::Char, "|i1", "int8", 1},     {ScalarType::Byte, "|u1", "uint8", 1},
    {ScalarType::Short, "<i2", "int16", 2},   {ScalarType::Int, "<i4", "int32", 4},
    {ScalarType::Long, "<i8", "int64", 8},    {ScalarType::Bool, "|b1", "bool", 1},
};

const Entry* find(ScalarType type) {
  for (const Entry& e : kTypes) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

template <typename T, typename Make>
void fill(void* data, std::size_t count, Make make) {
  T* out = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) out[i] = make();
}

}  // namespace

std::string npy_descr(ScalarType type) {
  const Entry* e = find(type);
  return e != nullptr ? e->descr : "";
}

bool dtype_of_npy(const std::string& descr, ScalarType& type) {
  // NumPy writes byte-sized types with '|', some writers with '<'.
  const std::string normalized = descr.size() == 3 && descr[0] == '<' && descr[2] == '1' ? "|" + descr.substr(1) : descr;
  for (const Entry& e : kTypes) {
    if (*e.descr != '\0' && normalized == e.descr) {
      type = e.type;
      return true;
    }
  }
  return false;
}

std::string dtype_name(ScalarType type) {
  const Entry* e = find(type);
  return e != nullptr ? e->name : "dtype " + std::to_string(static_cast<int>(type));
}

std::size_t dtype_size(ScalarType type) {
  const Entry* e = find(type);
  return e != nullptr ? e->size : 0;
}

bool fill_random(ScalarType type, void* data, std::size_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 15);
  std::uniform_int_distribution<int> bit(0, 1);
  switch (type) {
    case ScalarType::Float:
      fill<float>(data, count, [&] { return real(rng); });
      return true;
    case ScalarType::Double:
      fill<double>(data, count, [&] { return static_cast<double>(real(rng)); });
      return true;
    case ScalarType::Half:
      fill<__half>(data, count, [&] { return __float2half(real(rng)); });
      return true;
    case ScalarType::BFloat16:
      fill<__nv_bfloat16>(data, count, [&] { return __float2bfloat16(real(rng)); });
      return true;
    case ScalarType::Char:
      fill<std::int8_t>(data, count, [&] { return static_cast<std::int8_t>(small(rng)); });
      return true;
    case ScalarType::Byte:
      fill<std::uint8_t>(data, count, [&] { return static_cast<std::uint8_t>(small(rng)); });
      return true;
    case ScalarType::Short:
      fill<std::int16_t>(data, count, [&] { return static_cast<std::int16_t>(small(rng)); });
      return true;
    case ScalarType::Int:
      fill<std::int32_t>(data, count, [&] { return static_cast<std::int32_t>(small(rng)); });
      return true;
    case ScalarType::Long:
      fill<std::int64_t>(data, count, [&] { return static_cast<std::int64_t>(small(rng)); });
      return true;
    case ScalarType::Bool:
      fill<bool>(data, count, [&] { return bit(rng) == 1; });
      return true;
    default:
      return false;
  }
}

}  // namespace trtet_run
