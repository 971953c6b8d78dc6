// What the front does with a parsed request, apart from any socket: the contract's checks in
// order (no_route, method, size, overload, body), the operations endpoints, and the spawn of one
// coordinator (aggregate route) or batch coordinator (batch route) per admitted request.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <caf/actor.hpp>

#include "gather/config/config.hpp"
#include "gather/front/request_parser.hpp"
#include "gather/ops/ops_endpoints.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/values/trace_context.hpp"
#include "gather/actors/reply_sink.hpp"
#include "gather/actors/section_worker.hpp"
#include "gather/actors/serving_config.hpp"

namespace gather {

/// How long past a route's deadline the front waits for its coordinator before answering 504
/// itself: the coordinator's deadline message is exact, so this covers only a starved scheduler.
constexpr millis coordinator_grace{1000};

/// A request handed to a coordinator: what the front needs to give up on it.
struct started_request {
  caf::actor coordinator;
  std::shared_ptr<const serving_config> serving; ///< the generation it began on
  std::size_t route = 0;                         ///< in `serving`'s routes
  steady_time deadline;   ///< when the front sends the coordinator deadline_atom
  steady_time hard_limit; ///< the deadline plus coordinator_grace: the front answers 504 itself
  trace_context trace;    ///< the request's trace: give_up() ends its SERVER span
};

/// Every call that concerns one request takes the configuration generation the request began on
/// (`serving`): the caller picks it once per request (serving_config_slot::refresh) and passes the
/// same one throughout, so a reload in the middle of a request never mixes two configurations.
class request_dispatch {
public:
  /// `runtime`'s `serving` and `counters` are left empty: each request's job gets its generation's.
  /// On the admin listener (`role`) only the operations paths answer: anything else is 404.
  request_dispatch(gateway_stats& stats, caf::actor_system& system, section_runtime runtime,
                   listener_role role = listener_role::main);

  /// The checks that come before a body is read: route, method, declared size, encoding.
  /// nullopt: a body may be read. (Nothing is counted: serve() refuses and counts.)
  std::optional<http_reply> check_head(const serving_config& serving, const request_head& head,
                                       const std::string& request_id) const;
  /// True when a request with a body should have it read: a POST to a batch route that the
  /// head's checks admit. Any other body stays unread (and its connection ends after the answer).
  bool reads_body(const serving_config& serving, const request_head& head,
                  const std::string& request_id) const;
  /// True when a new aggregation would be refused with 503 right now.
  bool overloaded(const serving_config& serving) const;
  /// The 503 for a request refused on its head because the gateway is full (counted and logged).
  http_reply refuse_overloaded(const serving_config& serving, const request_head& head,
                               const std::string& request_id, steady_time arrived);

  /// Serves a complete request: either the answer at once (counted and logged) or a started
  /// coordinator that will deliver to `sink`.
  std::variant<http_reply, started_request> serve(const std::shared_ptr<const serving_config>& serving,
                                                  const request_head& head, std::string body,
                                                  const std::string& request_id, steady_time arrived,
                                                  const std::shared_ptr<reply_sink>& sink);

  /// The request's deadline has passed: tells its coordinator (deadline_atom).
  void deadline_passed(const started_request& started) const;

  /// The front answers a started request itself: the client left (499, nothing sent) or the hard
  /// limit passed (504). Call only after claiming the sink. Stops the coordinator.
  http_reply give_up(const started_request& started, bool client_gone,
                     const std::string& request_id, steady_time arrived);

  /// A request refused while it was parsed (400, 413, 414, 431): counted and logged, under its
  /// route when its path was read, else under no_route.
  http_reply refuse_unparsed(const serving_config& serving, parse_refusal why, const request_head& head,
                             const std::string& request_id, steady_time arrived);

  /// Releases the admission of a started request once its answer is handed back.
  void release() { stats_.inflight.fetch_sub(1, std::memory_order_relaxed); }

private:
  http_reply refuse(const serving_config& serving, std::size_t route_index, http_reply reply,
                    const std::string& request_id, steady_time arrived, const request_head& head,
                    const trace_context& trace);
  /// The request's trace (W3C traceparent, tracing.sample_ratio): gather/tracing/traceparent.hpp.
  trace_context trace_of(const request_head& head, steady_time arrived) const;
  /// The route's deadline from arrival, or sooner when the request's deadline header asks.
  steady_time deadline_of(const serving_config& serving, const inbound_request& in, millis budget) const;
  /// A coordinator's job (aggregate_job or batch_job): what every request hands its coordinator.
  template <class Job>
  std::shared_ptr<Job> make_job(const std::shared_ptr<const serving_config>& serving,
                                std::size_t route_index, const std::shared_ptr<reply_sink>& sink,
                                inbound_request inbound) const;
  inbound_request inbound_of(const request_head& head,
                             std::vector<std::pair<std::string, std::string>> captures,
                             const std::string& request_id, steady_time arrived,
                             const trace_context& trace) const;

  /// The route's deadline from arrival, or sooner when the request's deadline header asks.
  steady_time deadline_of(const inbound_request& in, millis budget) const;

  gateway_stats& stats_;
  caf::actor_system& system_;
  section_runtime runtime_;
  listener_role role_;
};

/// The X-Request-Id rule: the inbound id when it is [A-Za-z0-9._-]{1,64}, else a fresh one.
std::string request_id_for(const request_head& head);

/// "a=1&b=x%20y" -> {{"a","1"},{"b","x y"}} ('+' is a space, as browsers send forms).
std::multimap<std::string, std::string> parse_query(std::string_view query);

} // namespace gather
