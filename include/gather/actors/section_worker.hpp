// The section worker: one actor per section per request, owning that section's attempts.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "gather/config/config.hpp"
#include "gather/actors/attempt_runner.hpp"
#include "gather/actors/request_progress.hpp"
#include "gather/actors/section_attempts.hpp"
#include "gather/downstream/call/call_face.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/tracing/traceparent.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/values/section_outcome.hpp"
#include "gather/values/section_work.hpp"

namespace gather {

struct section_guard;
struct serving_config;
struct process_services;

/// One section of one request, resolved: what to call, plus what only this process needs.
struct section_call {
  section_work work;
  std::size_t route = 0; ///< the route's position in the config (metrics)
  std::size_t index = 0; ///< the section's position in its route
  std::string name;      ///< the section's name (its calls' spans); empty on a cluster node
  /// What its calls' traceparent line says (the request's trace), when the request has one: their
  /// spans take it from here instead of parsing the line. None on a cluster node.
  std::optional<traceparent> trace;
  steady_time deadline;
  /// Shared with the request's coordinator: whether it answered, the calls each section started.
  std::shared_ptr<request_progress> progress;
  /// Non-empty when the section is cached: the key, and how long entries live.
  std::string cache_key;
  millis cache_ttl{0};
  millis stale_ttl{0};
  bool cache_shared = false; ///< entries kept in the shared store too (docs/shared.md)
  /// The request's time with the shared store, which its store operations spend (null: none).
  std::shared_ptr<store_budget> store_time;
  /// The route section's bulkhead, circuit, latencies and retry budget. Null for a node's call:
  /// it is no route section of the node's; the gateway that sent it guards and counts it.
  section_guard* guard = nullptr;
  /// A gRPC section's call (its target is work.url): the message rendered and encoded, and the
  /// plan and descriptors of the request's generation, which outlives the worker. On a cluster
  /// node: the path, message and max_messages its work carried, without descriptors.
  std::shared_ptr<const grpc_call_part> grpc;
  /// The upstream the section calls (docs/upstreams.md): each call picks one of its endpoints;
  /// null for a plain origin. Such a section never runs on a cluster node.
  std::shared_ptr<upstream_table> upstream;
  /// The section's URL template's origin, split when its generation was made (null: its URL is
  /// split per call: a gRPC section, an upstream's, a cluster node's call).
  std::shared_ptr<const split_origin> origin;
};

/// Resolves section `index` of route `route` (in `serving`, the request's generation) for one
/// request whose URL rendered to `url`, its calls carrying `header_lines` (downstream_header_lines,
/// the deadline header left out); made where the worker's spawn takes it (section_worker).
std::unique_ptr<section_call> make_section_call(const section_config& section, std::size_t route,
                                                std::size_t index, std::string url, std::string header_lines,
                                                const inbound_request& in, steady_time deadline,
                                                std::shared_ptr<request_progress> progress,
                                                const serving_config& serving);

/// One call of `call`'s current attempt, which has `left` of its timeout at `now`: what the call
/// face (call_face.hpp) starts, its headers with the deadline header (gRPC: grpc-timeout instead).
call_description call_request_of(const section_call& call, millis left, steady_time now);

/// A call's header lines (header_block): `lines`, then, unless `deadline_header` is empty, its
/// deadline line "Name: N" for a call that may take `call_timeout` with `left` until the
/// request's deadline (the smaller of the two in whole milliseconds, at least 1). Sections and
/// batch calls alike.
std::string call_header_lines(std::string_view lines, const std::string& deadline_header,
                              millis call_timeout, std::chrono::nanoseconds left);

struct section_worker_state {
  const process_services* services = nullptr; ///< set when spawned, never null afterwards
  /// The generation the request began on: every actor of the request holds it, so its routes,
  /// guards and counters outlive the request's last actor. A node's: a generation of no routes.
  std::shared_ptr<const serving_config> serving;
  /// The call as the spawn carried it, never null once the worker runs: kept behind its pointer, not
  /// moved into the state (a move assignment of a dozen strings and vectors per section). Its guard
  /// points into `serving`; declared before what holds its slots.
  std::unique_ptr<section_call> call;
  caf::actor coordinator;
  /// A node's worker answers the run request its node delegated to it (the gateway worker's).
  caf::typed_response_promise<section_outcome> promise;
  bool promised = false;
  /// A gateway's worker starts when spawned and sends its outcome to its coordinator
  /// (outcome_atom): no request, response promise or response handler per section. Until it has,
  /// it owes one, which its state's end sends if nothing else did (an exception ended it).
  bool owes_outcome = false;
  live_count alive;                 ///< in gateway_stats::workers while the worker lives
  // What the worker started ends itself when the state goes (section_attempts.hpp): the worker
  // needs no destructor, however it ends.
  attempt_runner runner;            ///< the attempts run here, the calls of the current one
  std::optional<remote_run> remote; ///< the attempt running on a cluster node now, if any
  std::optional<local_run> local;   ///< counted in the cluster's local share (it has nodes)
  circuit_probe probe;              ///< set when this section is its circuit's half-open probe
  section_outcome last_failure;     ///< what the section ends with when a retry is not made
  std::int32_t hedges = 0;
  not_made_reason not_made = not_made_reason::none;
  steady_time started;
  std::uint32_t sent = 0;          ///< work sent to nodes so far: tells a stale answer from the current one
  // A cache_shared section's way through the shared store (section_worker_shared.cpp):
  int shared_phase = 0;        ///< 0 not asking, 1 looking, 2 waiting for another gateway's entry, 3 holds the lock
  bool shared_leader = false;  ///< its call's entry goes to the store
  std::string shared_token;    ///< the lock's value if this worker takes it
  std::string shared_stale;    ///< a stale entry from the store, shown if the call fails

  ~section_worker_state();

  static inline const char* name = "section_worker";
};

/// Spawned by a coordinator, which stops it by an exit message when it answers first: the worker
/// then cancels its transfer and quits. It starts at once and sends its coordinator one
/// (outcome_atom, index, section_outcome). On a cluster node the "coordinator" is the gateway-side
/// worker that sent the work, which it monitors; there it waits for `run_atom` (the node's
/// delegated request) and answers it once with a section_outcome.
/// The call comes behind a pointer: CAF moves a spawn's arguments twice before the behavior has
/// them (into the spawn's tuple, then into the call), and a section_call is a dozen strings and
/// vectors; this way it is never moved: the state keeps the pointer.
caf::behavior section_worker(caf::stateful_actor<section_worker_state>* self, caf::actor coordinator,
                             const process_services& services,
                             std::shared_ptr<const serving_config> serving,
                             std::unique_ptr<section_call> call);

} // namespace gather
