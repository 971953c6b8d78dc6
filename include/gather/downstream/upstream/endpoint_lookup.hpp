// Where an upstream's endpoints come from (contract §17), found off the request path: the names of
// an `endpoints` list, a `dns` name's A and AAAA addresses, an `srv` name's records of the lowest
// priority and their targets' addresses. The upstream's table of endpoints (who is available,
// the balancer) takes each answer; a lookup that fails or finds nothing leaves its last good set.
//
// These are the values both sides share: what a lookup is asked (endpoint_source) and what it
// finds (lookup_answer); endpoint_watch runs the lookups of one upstream on one event loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

namespace gather {

/// One endpoint as a lookup found it.
struct found_endpoint {
  std::string address;      ///< an IP literal as text ("10.0.0.7", "fd00::7"), no brackets
  std::uint16_t port = 0;
  std::uint32_t weight = 1; ///< 1..100: the entry's weight, or the SRV record's (0 read as 1)
  std::string name;         ///< the host name it was found under ("" for a literal): TLS's default server_name
};

inline bool operator==(const found_endpoint& a, const found_endpoint& b) {
  return a.address == b.address && a.port == b.port && a.weight == b.weight && a.name == b.name;
}
inline bool operator!=(const found_endpoint& a, const found_endpoint& b) { return !(a == b); }

/// "scheme://address:port" of an endpoint, an IPv6 address in brackets ("http://[fd00::7]:50051"):
/// the origin the downstream client calls it by and a health probe is given.
std::string endpoint_origin(const std::string& scheme, const found_endpoint& endpoint);

/// How a lookup ended: the labels of gather_upstream_lookups_total.
enum class lookup_result { ok, error, empty };

struct lookup_answer {
  lookup_result result = lookup_result::ok;
  std::vector<found_endpoint> endpoints; ///< empty unless ok; at most the watch's max_endpoints
  std::string detail; ///< in words, for the log line: which name, what went wrong, what was cut
};

/// What an upstream's lookups are asked: exactly one of §17's three sources.
struct endpoint_source {
  enum class kind { endpoints, dns, srv };
  struct entry {
    std::string host; ///< an IP literal (one endpoint) or a name (each of its addresses one)
    std::uint16_t port = 0;
    std::uint32_t weight = 1;
  };
  kind what = kind::endpoints;
  std::vector<entry> entries; ///< kind::endpoints
  std::string name;           ///< kind::dns: the name; kind::srv: the SRV record's name
  std::uint16_t port = 0;     ///< kind::dns: the port of every address
};

/// How an endpoint_watch looks names up (endpoint_watch.cpp: c-ares on the loop's epoll).
struct endpoint_watch_options {
  /// The most one lookup may take, all its queries together (an SRV record's and its targets'):
  /// one still running then is given up and answers `error`. 0: the watch's `refresh`, so a
  /// lookup never overlaps the next. The resolver's own per-query timeout and attempts
  /// (resolv.conf's `options timeout: attempts:`) apply within it.
  std::chrono::milliseconds lookup_timeout{0};
  /// For tests and tools only: the DNS servers to ask ("127.0.0.1:5353,[::1]:53", as
  /// ares_set_servers_ports_csv reads them) instead of resolv.conf's. Empty: the system's
  /// resolv.conf (nameservers, search, ndots) and /etc/hosts, as the gateway always runs.
  std::string servers;
};

/// One upstream's lookups on one event loop: the first at once, then one every `refresh`; each
/// answer goes to `done` on that loop's thread. Destroying the watch (on that loop's thread)
/// stops them: no `done` runs after. A source of IP literals only answers once, at once, and is
/// never looked up again.
class endpoint_watch {
public:
  using completion = std::function<void(lookup_answer)>;

  endpoint_watch(boost::asio::io_context& loop, endpoint_source source, std::chrono::milliseconds refresh,
                 std::size_t max_endpoints, completion done);
  endpoint_watch(boost::asio::io_context& loop, endpoint_source source, std::chrono::milliseconds refresh,
                 std::size_t max_endpoints, completion done, endpoint_watch_options options);
  ~endpoint_watch();
  endpoint_watch(const endpoint_watch&) = delete;
  endpoint_watch& operator=(const endpoint_watch&) = delete;

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace gather
