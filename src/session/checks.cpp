#include "session/checks.h"

#include <cstdint>
#include <string>

namespace torch_tensorrt::executorch_backend::delegate {

Result<std::size_t> checked_byte_size(const Shape& shape, DataType dtype, const char* what, int index,
                                      const std::string& name) {
  const std::size_t bytes = byte_size(shape, dtype);
  TRTET_CHECK_OR_RETURN(bytes != SIZE_MAX, kInvalidArgument,
                        "%s %d (\"%s\") has shape %s of %s, whose size in bytes overflows 64 bits", what, index,
                        name.c_str(), shape.to_string().c_str(), to_string(dtype));
  return bytes;
}

Status check_input(const engine::IoDesc& io, const TensorView& arg, int index) {
  return check_input(io, engine::ShapeBounds{io.min_shape, io.max_shape}, "", arg, index);
}

namespace {

Status check_rank(const engine::IoDesc& io, const TensorView& arg, int index) {
  TRTET_CHECK_OR_RETURN(arg.shape.rank == io.min_shape.rank, kInvalidArgument,
                        "input %d (\"%s\") has rank %d (shape %s), the engine expects rank %d", index, io.name.c_str(),
                        arg.shape.rank, arg.shape.to_string().c_str(), io.min_shape.rank);
  return Status::Ok();
}

bool within(const engine::ShapeBounds& bounds, const Shape& shape) {
  if (bounds.min.rank != shape.rank || bounds.max.rank != shape.rank) return false;
  for (int d = 0; d < shape.rank; ++d) {
    if (shape[d] < bounds.min[d] || shape[d] > bounds.max[d]) return false;
  }
  return true;
}

}  // namespace

Status check_input(const engine::IoDesc& io, const engine::ShapeBounds& bounds, const char* profile,
                   const TensorView& arg, int index) {
  TRTET_CHECK_OR_RETURN(arg.dtype == io.dtype, kInvalidArgument, "input %d (\"%s\") has dtype %s, the engine expects %s",
                        index, io.name.c_str(), to_string(arg.dtype), to_string(io.dtype));
  TRTET_RETURN_IF_ERROR(check_rank(io, arg, index));
  for (int d = 0; d < arg.shape.rank; ++d) {
    TRTET_CHECK_OR_RETURN(arg.shape[d] >= bounds.min[d] && arg.shape[d] <= bounds.max[d], kInvalidArgument,
                          "input %d (\"%s\") has shape %s: dimension %d = %lld is outside the engine's %sprofile %s..%s",
                          index, io.name.c_str(), arg.shape.to_string().c_str(), d,
                          static_cast<long long>(arg.shape[d]), profile, bounds.min.to_string().c_str(),
                          bounds.max.to_string().c_str());
  }
  TRTET_ASSIGN_OR_RETURN(const std::size_t needed, checked_byte_size(arg.shape, arg.dtype, "input", index, io.name));
  TRTET_CHECK_OR_RETURN(arg.capacity_bytes >= needed, kInvalidArgument,
                        "input %d (\"%s\") holds %zu bytes, shape %s of %s needs %zu", index, io.name.c_str(),
                        arg.capacity_bytes, arg.shape.to_string().c_str(), to_string(arg.dtype), needed);
  TRTET_CHECK_OR_RETURN(needed == 0 || arg.data != nullptr, kInvalidArgument,
                        "input %d (\"%s\") has no data pointer", index, io.name.c_str());
  return Status::Ok();
}

Result<int> choose_profile(const engine::Engine& engine, const TensorView* args) {
  const int profiles = engine.profile_count();
  const int count = engine.io_count();
  for (int i = 0; i < count; ++i) {
    if (engine.io(i).is_input) TRTET_RETURN_IF_ERROR(check_rank(engine.io(i), args[i], i));
  }
  int best = -1;
  double best_volume = 0;
  for (int p = 0; p < profiles; ++p) {
    bool fits = true;
    double volume = 0;
    for (int i = 0; i < count && fits; ++i) {
      if (!engine.io(i).is_input) continue;
      const engine::ShapeBounds bounds = engine.input_bounds(p, i);
      fits = within(bounds, args[i].shape);
      double elements = 1;
      for (int d = 0; d < bounds.max.rank; ++d) elements *= static_cast<double>(bounds.max[d]);
      volume += elements;
    }
    if (fits && (best < 0 || volume < best_volume)) {
      best = p;
      best_volume = volume;
    }
  }
  if (best >= 0) return best;
  std::string shapes;
  std::string bounds;
  for (int i = 0; i < count; ++i) {
    if (!engine.io(i).is_input) continue;
    shapes += (shapes.empty() ? "" : ", ") + engine.io(i).name + " " + args[i].shape.to_string();
  }
  for (int p = 0; p < profiles; ++p) {
    bounds += "; profile " + std::to_string(p) + ":";
    for (int i = 0; i < count; ++i) {
      if (!engine.io(i).is_input) continue;
      const engine::ShapeBounds b = engine.input_bounds(p, i);
      bounds += " " + engine.io(i).name + " " + b.min.to_string() + ".." + b.max.to_string();
    }
  }
  return make_error(ErrorCode::kInvalidArgument, "input shapes (%s) fit none of the engine's %d optimization profiles%s",
                    shapes.c_str(), profiles, bounds.c_str());
}

Result<int> check_arguments(const engine::Engine& engine, const TensorView* args, std::size_t count) {
  const int io_count = engine.io_count();
  TRTET_CHECK_OR_RETURN(count == static_cast<std::size_t>(io_count), kInvalidArgument,
                        "execute got %zu arguments, the engine has %d bindings (inputs then outputs)", count,
                        io_count);
  // One profile: its bounds are checked input by input (the message names the dimension). Several:
  // the tightest that fits them all.
  int profile = 0;
  if (engine.profile_count() > 1) {
    TRTET_ASSIGN_OR_RETURN(profile, choose_profile(engine, args));
  }
  const std::string name = engine.profile_count() > 1 ? "profile " + std::to_string(profile) + " " : "";
  for (int i = 0; i < io_count; ++i) {
    const engine::IoDesc& io = engine.io(i);
    if (io.is_input) {
      TRTET_RETURN_IF_ERROR(check_input(io, engine.input_bounds(profile, i), name.empty() ? "" : name.c_str(), args[i], i));
    } else {
      TRTET_CHECK_OR_RETURN(args[i].dtype == io.dtype, kInvalidArgument,
                            "output %d (\"%s\") has dtype %s, the engine produces %s", i, io.name.c_str(),
                            to_string(args[i].dtype), to_string(io.dtype));
    }
  }
  return profile;
}

Status check_engine_metadata(const engine::Engine& engine) {
  const int count = engine.io_count();
  TRTET_CHECK_OR_RETURN(count > 0, kInvalidProgram, "engine has no bindings");
  TRTET_CHECK_OR_RETURN(engine.profile_count() >= 1, kInvalidProgram, "engine has no optimization profile");
  for (int p = 0; p < engine.profile_count(); ++p) {
    for (int i = 0; i < count; ++i) {
      const engine::IoDesc& io = engine.io(i);
      if (!io.is_input) continue;
      const engine::ShapeBounds bounds = engine.input_bounds(p, i);
      TRTET_CHECK_OR_RETURN(bounds.min.rank == bounds.max.rank && bounds.min.rank == io.min_shape.rank, kInvalidProgram,
                            "input %d (\"%s\"): profile %d bounds %s and %s differ in rank (profile 0: rank %d)", i,
                            io.name.c_str(), p, bounds.min.to_string().c_str(), bounds.max.to_string().c_str(),
                            io.min_shape.rank);
      for (int d = 0; d < bounds.min.rank; ++d) {
        TRTET_CHECK_OR_RETURN(bounds.min[d] <= bounds.max[d], kInvalidProgram,
                              "input %d (\"%s\"): profile %d minimum %s exceeds maximum %s", i, io.name.c_str(), p,
                              bounds.min.to_string().c_str(), bounds.max.to_string().c_str());
      }
    }
  }
  return Status::Ok();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
