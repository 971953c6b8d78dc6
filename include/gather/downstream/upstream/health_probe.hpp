// Active health checks of an upstream's endpoints (contract §17 `health`, docs/upstreams.md): one
// probe through the downstream client (no client of its own: the endpoint's own pool and links,
// HTTP/1.1 for `path`, HTTP/2 for `grpc_service`), the streak that takes an endpoint out of
// rotation and brings it back, and the schedule that probes every endpoint every `interval_ms` on
// an event loop's timers. No thread: a probe is a transfer or a call like a section's.
//
// TLS. A probe takes the endpoint's target (call_target.hpp) when it has one: the upstream's CA,
// client certificate and `server_name`, the endpoint's own connections, as its calls have them;
// the probe has no TLS setting of its own. Without a target, the origin as the client calls it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "gather/downstream/call/downstream_client.hpp"

namespace gather {

/// How one probe ended: the labels of gather_upstream_health_checks_total.
enum class probe_result { healthy, unhealthy, timeout };
const char* probe_result_name(probe_result result); ///< "healthy", "unhealthy", "timeout"

struct probe_outcome {
  probe_result result = probe_result::unhealthy;
  std::string detail; ///< in words, for the log line and /debug/upstreams: "HTTP 503", "NOT_SERVING"
};

/// What a probe asks: exactly one of `path` and `grpc_service` (§17).
struct health_probe_spec {
  enum class kind { path, grpc_service };
  kind what = kind::path;
  std::string path = "/";   ///< kind::path: GET this path (and query) over HTTP/1.1; a 2xx is healthy
  std::string grpc_service; ///< kind::grpc_service: grpc.health.v1.Health/Check's `service` ("" the server)
  std::chrono::milliseconds timeout{1000}; ///< `timeout_ms`: past it the probe ends `timeout`
  std::size_t max_response_bytes = 8 * 1024 * 1024; ///< the config's max_response_bytes
};

/// Probes the endpoint at `origin` ("http://10.0.0.7:9002", "http://[fd00::7]:50051", "https://...")
/// once; with `target` (an upstream's endpoint, call_target.hpp) through that endpoint's own
/// connections, TLS and authority, as its calls go. `done` runs once, on the loop that ran the
/// probe (the caller's when it is one of the client's loops), unless the returned id is
/// cancelled first (downstream_client::cancel).
std::uint64_t probe_endpoint(downstream_client& client, const std::string& origin,
                             const health_probe_spec& spec, std::function<void(probe_outcome)> done,
                             std::shared_ptr<const call_target> target = nullptr);

/// grpc.health.v1's messages (grpc/health/v1/health.proto), written by hand: a
/// HealthCheckRequest for `service`, and the `status` of a HealthCheckResponse (0 UNKNOWN,
/// 1 SERVING, 2 NOT_SERVING, 3 SERVICE_UNKNOWN; -1 when the bytes are no such message).
std::string health_check_request(const std::string& service);
int health_check_status(const std::string& response);

/// One endpoint's probes in a row: `unhealthy` failed ones (a timeout is one) take it out of
/// rotation, `healthy` good ones bring it back. It starts in rotation.
class health_streak {
public:
  enum class change { none, out_of_rotation, into_rotation };
  explicit health_streak(unsigned unhealthy = 3, unsigned healthy = 2);
  change record(probe_result result);
  bool in_rotation() const { return in_rotation_; }

private:
  unsigned unhealthy_, healthy_;
  bool in_rotation_ = true;
  unsigned failed_ = 0, good_ = 0; ///< in a row
};

struct health_schedule_options {
  health_probe_spec probe;
  std::chrono::milliseconds interval{5000}; ///< `interval_ms`: from one probe's start to the next's
  unsigned unhealthy = 3, healthy = 2;
  /// The endpoint an origin names, asked at each probe (an upstream's table: its endpoints'
  /// targets, which a reload of its `tls` replaces); empty or null: the origin itself.
  std::function<std::shared_ptr<const call_target>(const std::string& origin)> target_of{};
};

/// Probes each of an upstream's endpoints every `interval` on one event loop. The first probes are
/// spread over the first interval (endpoint i of n at i * interval / n), so an upstream of a
/// thousand endpoints does not open a thousand connections at once; an endpoint added later is
/// probed at once. A probe still running when the next is due delays it (never two at once).
/// Everything runs on `loop`'s thread: make, change and destroy it there. Destroying it cancels
/// the probes in flight; no callback runs after.
class health_schedule {
public:
  struct callbacks {
    /// An endpoint went out of rotation (false) or came back (true).
    std::function<void(const std::string& origin, bool healthy)> changed;
    /// Every probe's end (the health-check counter, /debug/upstreams' last probe); may be empty.
    std::function<void(const std::string& origin, const probe_outcome& outcome)> probed{};
  };

  health_schedule(boost::asio::io_context& loop, downstream_client& client, health_schedule_options options,
                  std::vector<std::string> origins, callbacks on);
  ~health_schedule();
  health_schedule(const health_schedule&) = delete;
  health_schedule& operator=(const health_schedule&) = delete;

  /// The endpoints from now on: those that stay keep their streak and their timer; new ones start
  /// in rotation and are probed at once; those that left are no longer probed.
  void set_origins(std::vector<std::string> origins);

private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace gather
