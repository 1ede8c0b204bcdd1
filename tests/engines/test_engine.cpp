#include "engines/test_engine.h"

#include <cstdint>

namespace trtet_test {

TestEngine::TestEngine(std::vector<ex::engine::IoDesc> io, std::vector<ex::engine::Alias> aliases, int device)
    : io_(std::move(io)),
      aliases_(std::move(aliases)),
      device_(device),
      shapes_(io_.size()),
      shape_set_(io_.size(), false),
      addresses_(io_.size(), nullptr) {}

Status TestEngine::set_input_shape(int index, const Shape& shape) {
  set_input_shapes_.fetch_add(1);
  TRTET_CHECK_OR_RETURN(index >= 0 && index < io_count() && io(index).is_input, kInvalidArgument,
                        "set_input_shape: binding %d is not an input", index);
  const ex::engine::IoDesc& desc = io(index);
  const ex::engine::ShapeBounds bounds = input_bounds(profile_.load(), index);
  TRTET_CHECK_OR_RETURN(shape.rank == bounds.min.rank, kInvalidArgument,
                        "set_input_shape: \"%s\" has rank %d, the profile rank %d", desc.name.c_str(), shape.rank,
                        bounds.min.rank);
  for (int d = 0; d < shape.rank; ++d) {
    TRTET_CHECK_OR_RETURN(shape[d] >= bounds.min[d] && shape[d] <= bounds.max[d], kInvalidArgument,
                          "set_input_shape: \"%s\" shape %s outside the profile %s..%s", desc.name.c_str(),
                          shape.to_string().c_str(), bounds.min.to_string().c_str(), bounds.max.to_string().c_str());
  }
  shapes_[static_cast<std::size_t>(index)] = shape;
  shape_set_[static_cast<std::size_t>(index)] = true;
  return Status::Ok();
}

void TestEngine::add_profile(const Shape& min_shape, const Shape& max_shape) {
  extra_profiles_.push_back(ex::engine::ShapeBounds{min_shape, max_shape});
}

ex::engine::ShapeBounds TestEngine::input_bounds(int profile, int index) const {
  if (profile <= 0 || profile > static_cast<int>(extra_profiles_.size())) {
    return ex::engine::ShapeBounds{io(index).min_shape, io(index).max_shape};
  }
  return extra_profiles_[static_cast<std::size_t>(profile - 1)];
}

Status TestEngine::select_profile(int profile, cudaStream_t stream) {
  (void)stream;
  TRTET_CHECK_OR_RETURN(profile >= 0 && profile < profile_count(), kInvalidArgument,
                        "select_profile: profile %d of %d", profile, profile_count());
  profile_.store(profile);
  selects_.fetch_add(1);
  return Status::Ok();
}

Result<Shape> TestEngine::output_shape(int index) const {
  TRTET_CHECK_OR_RETURN(index >= 0 && index < io_count() && !io(index).is_input, kInvalidArgument,
                        "output_shape: binding %d is not an output", index);
  TRTET_CHECK_OR_RETURN(shape_set_[static_cast<std::size_t>(index)], kInvalidState,
                        "output_shape: \"%s\" asked before infer_shapes()", io(index).name.c_str());
  return shapes_[static_cast<std::size_t>(index)];
}

Status TestEngine::set_tensor_address(int index, void* address) {
  set_tensor_addresses_.fetch_add(1);
  TRTET_CHECK_OR_RETURN(index >= 0 && index < io_count(), kInvalidArgument, "set_tensor_address: no binding %d",
                        index);
  TRTET_CHECK_OR_RETURN(address != nullptr, kInvalidArgument, "set_tensor_address: \"%s\" bound to null",
                        io(index).name.c_str());
  TRTET_CHECK_OR_RETURN(reinterpret_cast<std::uintptr_t>(address) % 256 == 0, kInvalidArgument,
                        "set_tensor_address: \"%s\" address %p is not 256-byte aligned", io(index).name.c_str(),
                        address);
  addresses_[static_cast<std::size_t>(index)] = address;
  return Status::Ok();
}

Status TestEngine::check_bound() const {
  for (int i = 0; i < io_count(); ++i) {
    TRTET_CHECK_OR_RETURN(addresses_[static_cast<std::size_t>(i)] != nullptr, kInvalidState,
                          "enqueue: \"%s\" has no address", io(i).name.c_str());
    TRTET_CHECK_OR_RETURN(!io(i).is_input || shape_set_[static_cast<std::size_t>(i)], kInvalidState,
                          "enqueue: input \"%s\" has no shape", io(i).name.c_str());
  }
  return Status::Ok();
}

void TestEngine::set_output_shape(int index, const Shape& shape) {
  shapes_[static_cast<std::size_t>(index)] = shape;
  shape_set_[static_cast<std::size_t>(index)] = true;
}

ex::engine::IoDesc input_desc(const char* name, const Shape& min_shape, const Shape& max_shape, DataType dtype) {
  return ex::engine::IoDesc{name, /*is_input=*/true, dtype, min_shape, max_shape};
}

ex::engine::IoDesc output_desc(const char* name, int rank, DataType dtype) {
  Shape dims;  // -1 in every dimension: they follow the inputs
  dims.rank = rank;
  for (int d = 0; d < rank; ++d) dims[d] = -1;
  return ex::engine::IoDesc{name, /*is_input=*/false, dtype, dims, dims};
}

}  // namespace trtet_test
