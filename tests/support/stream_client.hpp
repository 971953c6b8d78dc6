// A raw client for progressive answers: it sends the request bytes as written and reads the answer
// off the socket as it arrives (never through a buffering client library), timing the first byte,
// the head and every chunk, and decoding each chunk at once (identity, gzip, br).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/decode.hpp"
#include "support/raw_client.hpp"

namespace gather::test {

using steady_clock = std::chrono::steady_clock;

/// One chunk as it arrived: its bytes (decoded when the answer is compressed) and when its last
/// byte was read.
struct stream_piece {
  std::string bytes;
  steady_clock::time_point at;
};

class stream_client {
public:
  /// Connects to 127.0.0.1:port and sends `request` (whole request bytes); `sent` is then.
  stream_client(int port, const std::string& request);

  /// Reads the status line and headers within `limit`; false on timeout or close.
  bool read_head(std::chrono::milliseconds limit = std::chrono::seconds(5));
  /// The next chunk's bytes (decoded), within `limit`; nullopt after the last chunk, or on
  /// timeout or close (then `ended()` tells which).
  std::optional<stream_piece> next_chunk(std::chrono::milliseconds limit = std::chrono::seconds(5));
  /// Every remaining chunk, decoded and joined (the rest of the body).
  std::string rest(std::chrono::milliseconds limit = std::chrono::seconds(5));

  int status = 0;
  std::map<std::string, std::string> headers; ///< names lower-case
  std::string header(const std::string& lower_name) const;
  steady_clock::time_point sent, first_byte, head_at;
  bool ended() const { return ended_; }        ///< the terminating chunk was read
  std::string raw_body() const { return raw_body_; } ///< a non-chunked answer's body as read
  raw_connection& connection() { return conn_; }

private:
  bool fill(steady_clock::time_point deadline); ///< reads once more; false on timeout or close
  raw_connection conn_;
  std::string buffer_;
  std::string raw_body_;
  std::unique_ptr<stream_decoder> decoder_;
  bool ended_ = false;
  bool got_first_ = false;
};

/// A GET request's bytes with `extra` header lines (each "Name: value").
std::string get_request(const std::string& target, const std::vector<std::string>& extra = {});

/// Milliseconds from `from` to `to`.
long long ms_between(steady_clock::time_point from, steady_clock::time_point to);

} // namespace gather::test
