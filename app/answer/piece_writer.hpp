// Writing an answer's pieces into a string sized once (private to app/answer).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gather {

/// Pieces written through a pointer into a string sized once for the most they can take: one
/// allocation and no capacity check per piece (the answer is built once per request; appending
/// piece by piece cost ~5.5k instructions of a four-section answer, docs/performance.md).
class piece_writer {
public:
  piece_writer(std::string& out, std::size_t most) : out_(out) {
    out_.resize(most);
    p_ = out_.data();
  }
  void put(std::string_view piece) {
    std::memcpy(p_, piece.data(), piece.size());
    p_ += piece.size();
  }
  void put(char c) { *p_++ = c; }
  void number(std::int64_t value) { p_ = std::to_chars(p_, p_ + max_digits, value).ptr; }
  void finish() { out_.resize(static_cast<std::size_t>(p_ - out_.data())); }

  static constexpr std::size_t max_digits = 20; ///< of an int64, its sign included

private:
  std::string& out_;
  char* p_;
};

} // namespace gather
