#include "gather/front/request_dispatch.hpp"

#include "gather/admission/gates.hpp"

#include <caf/all.hpp>

#include "gather/values/atoms.hpp"
#include "gather/front/negotiation.hpp"
#include "gather/actors/batch_coordinator.hpp"
#include "gather/actors/coordinator.hpp"
#include "gather/ops/ops_endpoints.hpp"
#include "gather/config/route_table.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/quiet_spawn.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"
#include "gather/tracing/span_exporter.hpp"
#include "gather/tracing/traceparent.hpp"

#include "request_start.hpp"

namespace gather {

namespace {

int status_for(parse_refusal why) {
  switch (why) {
    case parse_refusal::uri_too_long: return 414;
    case parse_refusal::headers_too_large: return 431;
    case parse_refusal::payload_too_large: return 413;
    default: return 400;
  }
}

} // namespace

request_dispatch::request_dispatch(gateway_stats& stats, caf::actor_system& system,
                                   const process_services& services, listener_role role)
  : stats_(stats), system_(system), services_(services), role_(role) {
}

bool request_dispatch::may_read_body(const serving_config& serving, const request_head& head) const {
  const auto& m = head.method; // a batch route's POST, or a write route's method
  return (m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE") && role_ == listener_role::main &&
         !is_ops_path(head.path(), serving.cfg, role_);
}

request_record request_dispatch::record_of(const serving_config& serving, const request_head& head,
                                           const std::string& request_id, std::size_t route,
                                           steady_time arrived) const {
  // Without tracing nothing is recorded: new traces go out unsampled, a caller's flag as it came.
  const double ratio = services_.spans.sample_ratio();
  const auto& routes = serving.cfg.routes;
  request_record record{{&serving.counters, &services_.spans},
                        request_id,
                        head.method,
                        arrived,
                        start_trace(head.header("traceparent"), arrived, ratio),
                        routes.size()};
  if (route < routes.size())
    record.set_route(route, routes[route].path);
  record.set_proto(head.version == 20 ? inbound_proto::h2
                   : head.version == 10 ? inbound_proto::http10 : inbound_proto::http11);
  record.set_client(head.client);
  return record;
}

std::optional<http_reply> request_dispatch::admit_head(admission_request& request, steady_time arrived) {
  auto refused = admit(request);
  if (!refused)
    return std::nullopt;
  record_of(request.serving, request.head, request.request_id, request.route_index(), arrived)
    .finish(refused->reply.status, refused->detail);
  return std::move(refused->reply);
}

template <class Job>
std::shared_ptr<Job> request_dispatch::make_job(const std::shared_ptr<const serving_config>& serving,
                                               std::size_t route_index,
                                               const std::shared_ptr<reply_sink>& sink,
                                               inbound_request inbound) const {
  auto job = std::make_shared<Job>(services_, serving);
  job->route = &serving->cfg.routes[route_index];
  job->deadline = request_deadline(serving->deadline_header_lower, inbound,
                                   job->route->batch ? job->route->batch->deadline : job->route->deadline);
  job->route_index = route_index;
  job->reply = sink;
  job->inbound = std::move(inbound);
  return job;
}

std::variant<http_reply, started_request>
request_dispatch::serve(const std::shared_ptr<const serving_config>& serving, admission_request& request,
                        std::string body, steady_time arrived, const std::shared_ptr<reply_sink>& sink) {
  const auto& cfg = serving->cfg;
  const auto& head = request.head;
  const auto path = head.path();
  if (is_ops_path(path, cfg, role_))
    return serve_ops(head.method, path, request.request_id,
                     ops_sources{cfg, stats_, system_, services_.client, serving->counters,
                                 services_.inflight, services_.cache, services_.nodes,
                                 services_.spans, serving->upstreams});
  if (role_ == listener_role::admin) // no route is served here, whatever its path
    return error_reply(404, "no_route", request.request_id);
  auto record = record_of(*serving, head, request.request_id, request.route_index(), arrived);
  request.body = &body;
  if (auto refused = admit(request)) {
    record.finish(refused->reply.status, refused->detail);
    return std::move(refused->reply);
  }
  record.hold(std::move(request.slot));
  const auto route_index = request.route_index();
  auto inbound = inbound_of(head, std::move(request.match->captures), request.request_id, arrived,
                            record.trace());
  if (const auto& auth = cfg.routes[route_index].auth)
    set_claims(inbound, auth->jwt, std::move(request.claims));
  inbound.store_time = std::move(request.shared_store_time());
  if (request.body_json) { // a write route's body: what its placeholders and its HTTP write read
    inbound.body = std::move(request.body_json);
    inbound.body_text = std::move(body);
  }
  sink->record() = std::move(record); // from here on, whoever claims the sink finishes it
  caf::actor coordinator_actor;
  steady_time deadline;
  if (cfg.routes[route_index].batch) {
    auto job = make_job<batch_job>(serving, route_index, sink, std::move(inbound));
    job->gate = std::move(request.gate);
    job->format = choose_format(head.header_list("accept"), {answer_format::ndjson});
    auto descriptors = serving->descriptors();
    const auto& call = job->route->batch->grpc;
    if (call && descriptors && route_index < descriptors->batches.size() && !descriptors->batches[route_index])
      serving->unknown_method(*call); // its items end error now; a later batch may find it
    job->plan = plan_batch(std::move(request.items), *job->route->batch, job->inbound,
                           descriptors, route_index);
    deadline = job->deadline;
    coordinator_actor = quiet_spawn(system_, nullptr, batch_coordinator, std::shared_ptr<const batch_job>(job));
  } else {
    auto job = make_job<aggregate_job>(serving, route_index, sink, std::move(inbound));
    job->gate = std::move(request.gate);
    // A route of another method than GET answers whole (docs/api.md#write-routes).
    if (job->route->method == "GET")
      job->format = choose_format(head.header_list("accept"), {answer_format::ndjson, answer_format::sse});
    deadline = job->deadline;
    // quiet_spawn: no logger handed to the loop for the rest of its turn (quiet_spawn.hpp).
    coordinator_actor = quiet_spawn(system_, nullptr, coordinator, std::shared_ptr<const aggregate_job>(job));
  }
  return started_request{std::move(coordinator_actor), serving, deadline, deadline + coordinator_grace};
}

void request_dispatch::deadline_passed(const started_request& started) const {
  caf::anon_send(started.coordinator, deadline_atom::value);
}

void request_dispatch::cancel(const started_request& started) const {
  caf::anon_send_exit(started.coordinator, caf::exit_reason::user_shutdown);
}

http_reply request_dispatch::give_up(const started_request& started, request_record& record,
                                     bool client_gone) {
  caf::anon_send_exit(started.coordinator, caf::exit_reason::user_shutdown);
  if (client_gone) {
    stats_.client_gone.fetch_add(1, std::memory_order_relaxed);
    record.finish(499, "client closed the connection");
    return error_reply(499, "client_closed", record.request_id());
  }
  record.finish(504, "coordinator missed the hard limit");
  return error_reply(504, "upstream_timeout", record.request_id());
}

http_reply request_dispatch::refuse_unparsed(const serving_config& serving, parse_refusal why,
                                             const request_head& head, const std::string& request_id,
                                             steady_time arrived) {
  const int status = status_for(why);
  const auto& routes = serving.cfg.routes;
  std::size_t route_index = routes.size();
  if (!head.target.empty())
    if (auto match = match_route(routes, head.path()))
      route_index = match->route;
  auto reply = refuse(status, request_id).reply;
  record_of(serving, head, request_id, route_index, arrived).finish(status);
  return reply;
}

} // namespace gather
