// Which bytes JSON writes as they are: what the request log's line (app/ops/json_line.cpp) and a
// gRPC answer's data as text (app/downstream/grpc/grpc_message_json.cpp) both copy unescaped.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace gather {

/// Eight bytes (a word read with memcpy) that JSON writes as they are, all of them: a word holds
/// another byte iff one of its bytes is below 0x20, 0x22, 0x5C or above 0x7F (with no such byte
/// none of the subtractions borrows, so no high bit is set).
inline bool plain_json_word(std::uint64_t w) {
  constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  const std::uint64_t low = w - 0x20 * ones;                  // a byte below 0x20
  const std::uint64_t quote = (w ^ ('"' * ones)) - ones;      // a byte equal to '"'
  const std::uint64_t backslash = (w ^ ('\\' * ones)) - ones; // a byte equal to '\\'
  return ((((low | quote | backslash) & ~w) | w) & highs) == 0;
}

/// One byte JSON writes as it is: printable ASCII but `"` and `\\`.
inline bool plain_json_byte(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/// Copies the bytes of `text` that JSON writes as they are to `out` (room for all of `text`), up
/// to the first one that is not; returns how many. Eight bytes at a time while they last, then
/// byte by byte, copying as it tests (one pass: a test and then a copy cost the request log's line
/// ~280 instructions more).
inline std::size_t copy_plain_json(char* out, std::string_view text) {
  const char* in = text.data();
  const std::size_t n = text.size();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, in + i, 8);
    if (!plain_json_word(w))
      break;
    std::memcpy(out + i, &w, 8);
  }
  for (; i < n && plain_json_byte(in[i]); ++i)
    out[i] = in[i];
  return i;
}

} // namespace gather
