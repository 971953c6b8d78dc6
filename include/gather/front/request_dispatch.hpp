// What the front does with a parsed request, apart from any socket: admission (the contract's
// checks, gather/admission/admission.hpp), the operations endpoints, and the start of one
// coordinator (aggregate route) or batch coordinator (batch route) per admitted request. Every
// request gets a request_record here; a refusal finishes it at once, a started request hands it
// to its reply_sink, where whoever ends the request finishes it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <caf/actor.hpp>

#include "gather/admission/admission.hpp"
#include "gather/front/query_string.hpp"
#include "gather/front/request_id.hpp"
#include "gather/front/request_parser.hpp"
#include "gather/ops/ops_endpoints.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/actors/reply_sink.hpp"
#include "gather/actors/request_record.hpp"
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
  steady_time deadline;   ///< when the front sends the coordinator deadline_atom
  steady_time hard_limit; ///< the deadline plus coordinator_grace: the front answers 504 itself
};

/// Every call that concerns one request takes the configuration generation the request began on
/// (the admission_request's `serving`): the caller picks it once per request
/// (serving_config_slot::refresh) and passes the same one throughout, so a reload in the middle of
/// a request never mixes two configurations.
class request_dispatch {
public:
  /// `services` outlive the dispatch; each request's job gets them and its own generation.
  /// On the admin listener (`role`) only the operations paths answer: anything else is 404.
  request_dispatch(gateway_stats& stats, caf::actor_system& system, const process_services& services,
                   listener_role role = listener_role::main);

  gateway_stats& stats() { return stats_; }

  /// True when a request whose body follows its head should have it read: a POST to anything but
  /// an operations path, which admit_head() then admits. Any other body stays unread (and its
  /// connection ends after the answer).
  /// Never on the admin listener (GET only there).
  bool may_read_body(const serving_config& serving, const request_head& head) const;
  /// Admission's first pass, on the head alone, before a body is read. nullopt: read the body.
  /// Else the refusal (the request finished: counted and logged).
  std::optional<http_reply> admit_head(admission_request& request, steady_time arrived);

  /// Serves a complete request: either the answer at once (counted and logged) or a started
  /// coordinator that will deliver to `sink`, which then holds the request's record.
  std::variant<http_reply, started_request> serve(const std::shared_ptr<const serving_config>& serving,
                                                  admission_request& request, std::string body,
                                                  steady_time arrived,
                                                  const std::shared_ptr<reply_sink>& sink);

  /// The request's deadline has passed: tells its coordinator (deadline_atom).
  void deadline_passed(const started_request& started) const;

  /// Stops the coordinator of a progressive answer that will not be finished (its client hung up):
  /// its calls are cancelled; it counts and logs the request itself.
  void cancel(const started_request& started) const;

  /// The front answers a started request itself: the client left (499, nothing sent) or the hard
  /// limit passed (504). Call only after claiming the sink, with its record. Stops the coordinator.
  http_reply give_up(const started_request& started, request_record& record, bool client_gone);

  /// A request refused while it was parsed (400, 413, 414, 431): counted and logged, under its
  /// route when its path was read, else under no_route.
  http_reply refuse_unparsed(const serving_config& serving, parse_refusal why, const request_head& head,
                             const std::string& request_id, steady_time arrived);

private:
  /// A new request's record: its trace begins here (W3C traceparent, tracing.sample_ratio).
  request_record record_of(const serving_config& serving, const request_head& head,
                           const std::string& request_id, std::size_t route, steady_time arrived) const;
  /// A coordinator's job (aggregate_job or batch_job): what every request hands its coordinator.
  template <class Job>
  std::shared_ptr<Job> make_job(const std::shared_ptr<const serving_config>& serving,
                                std::size_t route_index, const std::shared_ptr<reply_sink>& sink,
                                inbound_request inbound) const;

  gateway_stats& stats_;
  caf::actor_system& system_;
  const process_services& services_;
  listener_role role_;
};

} // namespace gather
