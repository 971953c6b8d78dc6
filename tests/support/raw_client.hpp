// A raw TCP client for hostile-traffic tests: whatever bytes the test writes reach the gateway as
// written (no client library fixing them up), and what comes back is read with deadlines.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace gather::test {

/// One HTTP response as read off the wire (Content-Length bodies; the gateway sends no others).
struct raw_response {
  int status = 0;
  std::map<std::string, std::string> headers; ///< names lower-case
  std::string body;
  std::string header(const std::string& lower_name) const;
};

class raw_connection {
public:
  explicit raw_connection(int port); ///< connects to 127.0.0.1:port (throws on failure)
  /// Connects from the loopback address `from` ("127.0.0.2"; bound before connect), so the
  /// gateway sees a peer other than 127.0.0.1.
  raw_connection(int port, const std::string& from);
  ~raw_connection();
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  /// Writes all of `bytes`; false when the peer has closed or reset the connection.
  bool send(const std::string& bytes);
  /// Reads one complete response within `limit`; nullopt on timeout, close or garbage.
  std::optional<raw_response> read_response(std::chrono::milliseconds limit = std::chrono::seconds(5));
  /// Raw bytes: at least `n` (fewer when `limit` passes or the peer closes first), and all of
  /// what was read past the last response.
  std::string read_at_least(std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(5));
  /// Bytes read but not yet returned (what came before the peer closed, say).
  const std::string& buffered() const { return buffered_; }
  /// Waits up to `limit` for the peer to close (EOF or reset), discarding anything it sends.
  bool wait_closed(std::chrono::milliseconds limit);
  /// True when the peer has closed (checked now, without waiting). Unread data is kept.
  bool closed_now();
  /// Closes with an RST (SO_LINGER 0) instead of a FIN.
  void reset();
  void close();
  int fd() const { return fd_; }

private:
  int fd_ = -1;
  std::string buffered_; ///< bytes read past the last response
};

/// True when `text` is valid UTF-8 (what a strict JSON parser accepts).
bool valid_utf8(const std::string& text);

/// A GET request head for `target` (Host: gw), with `extra_headers` (each ending in CRLF).
std::string get_head(const std::string& target, const std::string& extra_headers = "",
                     const std::string& version = "HTTP/1.1");

} // namespace gather::test
