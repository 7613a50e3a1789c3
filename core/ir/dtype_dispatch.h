// The one place that maps a DType to the C++ type its elements are stored as, and back:
// kernels, codecs and tools written once as templates over the element type pick their
// instance with visit_dtype. Storage types: float, int32_t, uint8_t, Float16, int8_t,
// uint32_t and Boolean (a byte, nonzero = true). Arithmetic reads an element with load()
// (float16 as float32, bool as bool) and writes it with store<T>() (one rounding to float16).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "core/ir/dtype.h"
#include "core/ir/error.h"
#include "core/ir/float16.h"

namespace plexus::ir {

/// A bool element: one byte, of any value (nonzero reads as true), written as 0 or 1.
enum class Boolean : uint8_t {};

/// Names a storage type as a value, for generic lambdas: [](auto tag) { using T = ... }.
template <class T>
struct TypeTag {
  using type = T;
};

/// The DType whose elements are stored as T.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  if constexpr (std::is_same_v<T, Float16>) return DType::Float16;
  if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  if constexpr (std::is_same_v<T, uint32_t>) return DType::UInt32;
  if constexpr (std::is_same_v<T, Boolean>) return DType::Bool;
}

/// The type arithmetic on T's elements uses: float for Float16, bool for Boolean, else T.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, Float16>, float,
                                     std::conditional_t<std::is_same_v<T, Boolean>, bool, T>>;

/// An element's value as compute_t<T>.
template <class T>
constexpr compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return half_to_float(v);
  } else if constexpr (std::is_same_v<T, Boolean>) {
    return static_cast<uint8_t>(v) != 0;
  } else {
    return v;
  }
}

/// A computed value stored as T: float16 rounded to nearest even, bool as 0 or 1, others
/// by static_cast (callers convert out-of-range values first: ops/elementwise/conversions).
template <class T, class V>
constexpr T store(V v) {
  if constexpr (std::is_same_v<T, Float16>) {
    return float_to_half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, Boolean>) {
    return static_cast<Boolean>(v != V{});
  } else {
    return static_cast<T>(v);
  }
}

/// Calls f(TypeTag<T>{}) for the storage type T of `t` among Ts and returns its result.
/// A dtype outside Ts is a bug of the caller's shape inference (Internal error).
template <class... Ts, class F>
auto visit_dtype(DType t, F&& f) {
  using First = std::tuple_element_t<0, std::tuple<Ts...>>;
  std::invoke_result_t<F, TypeTag<First>> result{};
  const bool found = ((t == dtype_of<Ts>() ? (result = f(TypeTag<Ts>{}), true) : false) || ...);
  if (!found) fail(ErrorCode::Internal, "no kernel instance for dtype " + std::string(dtype_name(t)));
  return result;
}

/// visit_dtype over the dtypes with arithmetic: float32, float16 and the integers.
template <class F>
auto visit_arithmetic(DType t, F&& f) {
  return visit_dtype<float, Float16, int32_t, int8_t, uint8_t, uint32_t>(t, f);
}

/// visit_dtype over every dtype.
template <class F>
auto visit_any(DType t, F&& f) {
  return visit_dtype<float, Float16, int32_t, int8_t, uint8_t, uint32_t, Boolean>(t, f);
}

}  // namespace plexus::ir
