// A program's flatbuffer read by hand, to plant one flaw in a copy of it (the tests that a damaged
// program is refused before ExecuTorch reads it): a little-endian word, where field `field` of a
// table is in its vtable, where an offset field points, a vector's element. No bounds checks: the
// tests walk their own, whole programs. `Bytes` is any contiguous container of char.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace trtet_test::flatbuffer {

template <typename Bytes>
std::size_t u32_at(const Bytes& b, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

/// Where the table at `table` keeps field `field`'s offset (a 16-bit slot of its vtable).
template <typename Bytes>
std::size_t field_slot(const Bytes& b, std::size_t table, int field) {
  std::int32_t back = 0;
  std::memcpy(&back, b.data() + table, sizeof back);
  return static_cast<std::size_t>(static_cast<std::int64_t>(table) - back) + 4 + 2 * static_cast<std::size_t>(field);
}

/// Field `field`'s offset within its table (0: absent).
template <typename Bytes>
std::uint16_t field_offset(const Bytes& b, std::size_t table, int field) {
  std::uint16_t o = 0;
  std::memcpy(&o, b.data() + field_slot(b, table, field), sizeof o);
  return o;
}

/// Where the offset field `field` of the table at `table` points (a table, vector or string).
template <typename Bytes>
std::size_t target(const Bytes& b, std::size_t table, int field) {
  const std::size_t at = table + field_offset(b, table, field);
  return at + u32_at(b, at);
}

/// Element `i` of the vector of tables at `vector`.
template <typename Bytes>
std::size_t element(const Bytes& b, std::size_t vector, std::size_t i) {
  const std::size_t slot = vector + 4 + 4 * i;
  return slot + u32_at(b, slot);
}

/// The program's execution_plan[0] (field 1 of the root table).
template <typename Bytes>
std::size_t first_plan(const Bytes& b) {
  return element(b, target(b, u32_at(b, 0), 1), 0);
}

/// `b` with field `field` of the table at `table` left out, as a writer that left it out makes it.
template <typename Bytes>
void drop_field(Bytes& b, std::size_t table, int field) {
  const std::size_t slot = field_slot(b, table, field);
  b[slot] = 0;
  b[slot + 1] = 0;
}

}  // namespace trtet_test::flatbuffer
