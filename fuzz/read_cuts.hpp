// How a fuzz target cuts one byte stream into reads, so that it can check that the reader gives the
// same result however the bytes arrive: seed 0 gives everything at once, any other seed pieces of
// 1..max bytes drawn from a linear congruential generator (the same input cuts the same way).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace fuzz {

struct read_cuts {
  std::uint32_t state;
  std::size_t max = 64;

  /// The size of the next read, of `left` bytes still to come.
  std::size_t next(std::size_t left) {
    if (state == 0)
      return left;
    state = state * 1103515245u + 12345u;
    return std::min<std::size_t>(left, 1 + (state >> 16) % max);
  }
};

} // namespace fuzz
