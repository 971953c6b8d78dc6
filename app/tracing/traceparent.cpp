#include "gather/tracing/traceparent.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace gather {

namespace {

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

template <std::size_t N>
bool read_hex(std::string_view text, std::array<char, N>& out) {
  if (text.size() != N || !std::all_of(text.begin(), text.end(), [](char c) { return is_lower_hex(c); }))
    return false;
  std::copy(text.begin(), text.end(), out.begin());
  return true;
}

template <std::size_t N>
bool all_zeros(const std::array<char, N>& id) {
  return std::all_of(id.begin(), id.end(), [](char c) { return c == '0'; });
}

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

std::mt19937_64& generator() {
  // Seeded once per thread (one getrandom there), then no system call at all.
  thread_local std::mt19937_64 rng{[] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    return std::mt19937_64{seed};
  }()};
  return rng;
}

/// Each byte's two lower-case hex digits: an id is written a byte at a time, not a digit at a time.
constexpr std::array<char, 512> byte_digits = [] {
  std::array<char, 512> out{};
  constexpr const char* digits = "0123456789abcdef";
  for (std::size_t b = 0; b < 256; ++b) {
    out[2 * b] = digits[b >> 4];
    out[2 * b + 1] = digits[b & 0xF];
  }
  return out;
}();

/// N hex digits of fresh random bits, never all zeros (W3C Trace Context: an invalid id).
template <std::size_t N>
std::array<char, N> random_hex() {
  static_assert(N % 16 == 0, "a whole number of 64-bit words");
  std::array<char, N> id{};
  std::uint64_t seen = 0;
  do {
    seen = 0;
    for (std::size_t i = 0; i < N; i += 16) {
      auto bits = generator()();
      seen |= bits;
      for (std::size_t j = i; j < i + 16; j += 2, bits >>= 8) {
        const auto* pair = &byte_digits[2 * (bits & 0xFF)];
        id[j] = pair[0];
        id[j + 1] = pair[1];
      }
    }
  } while (seen == 0);
  return id;
}

constexpr std::size_t traceparent_length = 55; // 2 + 1 + 32 + 1 + 16 + 1 + 2

} // namespace

std::optional<traceparent> parse_traceparent(std::string_view value) {
  if (value.size() < traceparent_length)
    return std::nullopt;
  std::array<char, 2> version{}, flags{};
  if (!read_hex(value.substr(0, 2), version) || (version[0] == 'f' && version[1] == 'f'))
    return std::nullopt;
  const bool version_00 = version[0] == '0' && version[1] == '0';
  if (version_00 ? value.size() != traceparent_length
                 : value.size() > traceparent_length && value[traceparent_length] != '-')
    return std::nullopt;
  if (value[2] != '-' || value[35] != '-' || value[52] != '-')
    return std::nullopt;
  traceparent out;
  if (!read_hex(value.substr(3, 32), out.trace_id) || !read_hex(value.substr(36, 16), out.parent_id) ||
      !read_hex(value.substr(53, 2), flags) || all_zeros(out.trace_id) || all_zeros(out.parent_id))
    return std::nullopt;
  out.sampled = (hex_value(flags[1]) & 1) != 0;
  return out;
}

trace_id_hex new_trace_id() { return random_hex<32>(); }

span_id_hex new_span_id() { return random_hex<16>(); }

bool sample_new_trace(const trace_id_hex& trace, double ratio) {
  if (ratio >= 1.0)
    return true;
  if (ratio <= 0.0)
    return false;
  std::uint64_t low = 0;
  for (std::size_t i = 16; i < 32; ++i)
    low = (low << 4) | static_cast<std::uint64_t>(hex_value(trace[i]));
  return static_cast<long double>(low) < static_cast<long double>(ratio) * 18446744073709551616.0L;
}

trace_context start_trace(std::string_view traceparent_value, steady_time arrived, double ratio) {
  trace_context trace;
  if (auto parent = parse_traceparent(traceparent_value)) {
    trace.trace_id = parent->trace_id;
    trace.parent_id = parent->parent_id;
    trace.has_parent = true;
    trace.sampled = parent->sampled; // parent-based: the caller decided
  } else {
    trace.trace_id = new_trace_id();
    trace.sampled = sample_new_trace(trace.trace_id, ratio);
  }
  trace.span_id = new_span_id();
  trace.start_unix_ns = unix_nanos_at(arrived);
  return trace;
}

std::int64_t unix_nanos_at(steady_time when) {
  using namespace std::chrono;
  const auto ago = steady_clock::now() - when;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch() - ago).count();
}

} // namespace gather
