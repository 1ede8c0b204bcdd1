// The call schedule's phases (session/call_schedule.h, Note [the call schedule]) as types: each
// phase offers only the next step, takes it only as an rvalue (once: it consumes itself), and hands
// on the next phase; none is copied, made from nothing, or made outside the ordering. Checked at
// compile time, without a GPU.
#include "session/call_schedule.h"

#include <gtest/gtest.h>

#include <type_traits>
#include <utility>

namespace torch_tensorrt::executorch_backend::delegate {
namespace {

using CopyIn = CallSchedule::CopyIn;
using EnginePhase = CallSchedule::Engine;
using CopyOut = CallSchedule::CopyOut;
using Repeat = CallSchedule::Repeat;
using Done = CallSchedule::Done;

Status copy_work() { return Status::Ok(); }
Result<EngineRun> engine_work() { return EngineRun{}; }
using CopyWork = decltype(&copy_work);
using EngineWork = decltype(&engine_work);

// Whether `P` (with its value category) offers each step.
template <typename P, typename = void>
struct OffersCopyIn : std::false_type {};
template <typename P>
struct OffersCopyIn<P, std::void_t<decltype(std::declval<P>().copy_in(std::declval<CopyWork>()))>> : std::true_type {};
template <typename P, typename = void>
struct OffersEngine : std::false_type {};
template <typename P>
struct OffersEngine<P, std::void_t<decltype(std::declval<P>().engine(std::declval<EngineWork>()))>> : std::true_type {};
template <typename P, typename = void>
struct OffersCopyOut : std::false_type {};
template <typename P>
struct OffersCopyOut<P, std::void_t<decltype(std::declval<P>().copy_out(std::declval<CopyWork>()))>> : std::true_type {};
template <typename P, typename = void>
struct OffersFinish : std::false_type {};
template <typename P>
struct OffersFinish<P, std::void_t<decltype(std::declval<P>().finish())>> : std::true_type {};

template <typename P>
constexpr int steps_offered() {
  return int{OffersCopyIn<P>::value} + int{OffersEngine<P>::value} + int{OffersCopyOut<P>::value} +
         int{OffersFinish<P>::value};
}

// In order: each phase offers exactly its own step.
static_assert(OffersCopyIn<CopyIn&&>::value && steps_offered<CopyIn&&>() == 1, "copy in comes first");
static_assert(OffersEngine<EnginePhase&&>::value && steps_offered<EnginePhase&&>() == 1, "then the engine");
static_assert(OffersCopyOut<CopyOut&&>::value && steps_offered<CopyOut&&>() == 1, "then copy out");
static_assert(OffersFinish<Done&&>::value && steps_offered<Done&&>() == 1, "then finish");
static_assert(OffersEngine<Repeat&&>::value && steps_offered<Repeat&&>() == 1, "a repeat has the engine alone");

// Once: a step is taken from an rvalue only, so a phase kept in a variable is spent by std::move.
static_assert(steps_offered<CopyIn&>() == 0 && steps_offered<EnginePhase&>() == 0 && steps_offered<CopyOut&>() == 0 &&
                  steps_offered<Repeat&>() == 0 && steps_offered<Done&>() == 0,
              "no step from an lvalue");
static_assert(steps_offered<const CopyIn&&>() == 0 && steps_offered<const Done&&>() == 0, "no step from a const phase");

// Each step hands on the next phase.
static_assert(std::is_same_v<decltype(std::declval<CopyIn>().copy_in(copy_work)), Result<EnginePhase>>);
static_assert(std::is_same_v<decltype(std::declval<EnginePhase>().engine(engine_work)), Result<CopyOut>>);
static_assert(std::is_same_v<decltype(std::declval<CopyOut>().copy_out(copy_work)), Result<Done>>);
static_assert(std::is_same_v<decltype(std::declval<Repeat>().engine(engine_work)), Result<Done>>);
static_assert(std::is_same_v<decltype(std::declval<Done>().finish()), Result<QueuedCall>>);

// One owner: moved, never copied, never made from nothing or from a schedule outside the ordering.
template <typename P>
constexpr bool one_owner() {
  return !std::is_copy_constructible_v<P> && !std::is_copy_assignable_v<P> && !std::is_move_assignable_v<P> &&
         std::is_nothrow_move_constructible_v<P> && !std::is_default_constructible_v<P> &&
         !std::is_constructible_v<P, CallSchedule&&>;
}
static_assert(one_owner<CopyIn>() && one_owner<EnginePhase>() && one_owner<CopyOut>() && one_owner<Repeat>() &&
              one_owner<Done>());
static_assert(!std::is_copy_constructible_v<CallSchedule> && std::is_nothrow_move_constructible_v<CallSchedule> &&
              !std::is_default_constructible_v<CallSchedule>);
static_assert(std::is_nothrow_destructible_v<CallSchedule>, "the failure path runs in a destructor");

TEST(CallSchedule, PhasesComeInOrderEachOnce) { SUCCEED() << "checked at compile time (static_assert above)"; }

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::delegate
