// Which of a method's inputs and outputs have dynamic shapes (program_shapes.cpp): the program's own
// flag per tensor (TensorShapeDynamism), which ExecuTorch's MethodMeta does not carry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trtet_triton {

// Note [dynamic shapes]
// ---------------------
// A program's tensor is STATIC (its sizes are its shape), DYNAMIC_BOUND (its sizes are an upper bound:
// any shape of the same rank within them) or DYNAMIC_UNBOUND. MethodMeta gives the sizes (the bound)
// but not the flag, so the backend reads the flag from the program file's flatbuffer itself: the
// tables MethodMeta reads (execution_plan[m].values at the method's inputs and outputs) and one more
// field of each of those Tensor tables, every read checked against the buffer's end (the file is
// untrusted input: a bad offset refuses the load, naming it).
// In the config, every dim of a dynamic tensor is -1 (auto-complete), and the backend checks each
// request against the bound (or the config's narrower dims); a dynamic output's shape is the one the
// delegate gives it, and the response carries that shape.
enum class Dynamism { kStatic = 0, kDynamicBound = 1, kDynamicUnbound = 2 };

// Note [a delegate's fields]
// --------------------------
// A verified flatbuffer (Note [verifying a program], model.h) may still leave out a table's fields:
// the schema makes every field optional. ExecuTorch 1.5.1 reads a BackendDelegate's id, processed
// data and compile specs, and each CompileSpec's key and value, without checking that they are
// there (BackendDelegate::Init, when an instance loads the method), so a program without one crashes
// the server. The same walk that reads the method's dynamism checks every delegate of the method for
// them and refuses the program naming the one that is missing, before any instance loads it.

// Each input's and output's scalar type as the program writes it (ExecuTorch's ScalarType, a byte;
// kNotATensor for a value that is no tensor). ExecuTorch 1.5.1's verification lets an unknown type
// through on a dynamic tensor, and MethodMeta's tensor_meta then aborts the process on it (S54): the
// backend checks these before it asks MethodMeta for a tensor (Note [verifying a program], model.h).
constexpr std::int8_t kNotATensor = -128;
struct TensorTypes {
  std::vector<std::int8_t> inputs, outputs;
};

// The dynamism of `method`'s inputs and outputs in the program file at `path`, in order (and, given
// `types`, their scalar types). False with
// `why` when the file cannot be read, its tables are malformed, or a delegate of the method lacks a
// field ExecuTorch reads unchecked (Note [a delegate's fields]).
bool method_dynamism(const std::string& path, const std::string& method, std::vector<Dynamism>& inputs,
                     std::vector<Dynamism>& outputs, std::string& why, TensorTypes* types = nullptr);
// The same from the flatbuffer's bytes (the file's first program_size bytes, or all of it).
bool method_dynamism_in(const std::vector<std::uint8_t>& bytes, const std::string& method, std::vector<Dynamism>& inputs,
                        std::vector<Dynamism>& outputs, std::string& why, TensorTypes* types = nullptr);

}  // namespace trtet_triton
