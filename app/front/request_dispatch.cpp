#include "gather/front/request_dispatch.hpp"

#include <algorithm>
#include <random>

#include <caf/all.hpp>

#include "gather/values/atoms.hpp"
#include "gather/front/batch_body.hpp"
#include "gather/actors/batch_coordinator.hpp"
#include "gather/actors/coordinator.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/ops/ops_endpoints.hpp"
#include "gather/ops/request_log.hpp"
#include "gather/config/route_table.hpp"
#include "gather/config/url_template.hpp"
#include "gather/tracing/server_span.hpp"
#include "gather/tracing/span_exporter.hpp"
#include "gather/tracing/traceparent.hpp"

namespace gather {

namespace {

using clock = std::chrono::steady_clock;

std::chrono::microseconds elapsed_us(steady_time since) {
  return std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - since);
}

std::int64_t elapsed_ms(steady_time since) {
  return std::chrono::duration_cast<millis>(clock::now() - since).count();
}

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64)
    return false;
  for (unsigned char c : id)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id(32, '0');
  for (int half = 0; half < 2; ++half) {
    auto bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4)
      id[half * 16 + i] = hex[bits & 0xF];
  }
  return id;
}

bool has_body(const request_head& head) {
  if (head.has_header("transfer-encoding"))
    return true;
  const auto& length = head.header("content-length");
  return !length.empty() && length.find_first_not_of('0') != std::string::npos;
}

const char* code_for_status(int status) {
  switch (status) {
    case 400: return "bad_request";
    case 404: return "no_route";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 414: return "uri_too_long";
    case 415: return "unsupported_media_type";
    case 431: return "headers_too_large";
    case 503: return "overloaded";
    default: return status >= 500 ? "internal_error" : "bad_request";
  }
}

int status_for(parse_refusal why) {
  switch (why) {
    case parse_refusal::uri_too_long: return 414;
    case parse_refusal::headers_too_large: return 431;
    case parse_refusal::payload_too_large: return 413;
    default: return 400;
  }
}

} // namespace

std::string request_id_for(const request_head& head) {
  const auto& inbound = head.header("x-request-id");
  return valid_request_id(inbound) ? inbound : new_request_id();
}

std::multimap<std::string, std::string> parse_query(std::string_view query) {
  std::multimap<std::string, std::string> out;
  const auto decode = [](std::string_view text) {
    std::string spaced(text);
    for (auto& c : spaced)
      if (c == '+')
        c = ' ';
    return percent_decode(spaced);
  };
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    if (!pair.empty()) {
      const auto eq = pair.find('=');
      out.emplace(decode(pair.substr(0, eq)),
                  eq == std::string_view::npos ? std::string{} : decode(pair.substr(eq + 1)));
    }
    if (amp == std::string_view::npos)
      break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

request_dispatch::request_dispatch(gateway_stats& stats, caf::actor_system& system,
                                   section_runtime runtime, listener_role role)
  : stats_(stats), system_(system), runtime_(std::move(runtime)), role_(role) {
  runtime_.serving.reset();
  runtime_.counters = nullptr;
}

std::optional<http_reply> request_dispatch::check_head(const serving_config& serving,
                                                       const request_head& head,
                                                       const std::string& request_id) const {
  const auto& cfg = serving.cfg;
  auto match = match_route(cfg.routes, head.path());
  if (!match)
    return error_reply(404, "no_route", request_id);
  const auto& route = cfg.routes[match->route];
  const char* method = route.batch ? "POST" : "GET";
  if (head.method != method) {
    auto reply = error_reply(405, "method_not_allowed", request_id);
    reply.headers.emplace_back("Allow", method);
    return reply;
  }
  const auto& declared = head.header("content-length");
  if (!declared.empty() &&
      (declared.size() > 18 || std::stoull("0" + declared) > cfg.max_body_bytes))
    return error_reply(413, "payload_too_large", request_id);
  // Encoded bodies are refused unread: max_body_bytes counts the bytes sent, and an inflated
  // body has no bound.
  const auto& encoding = head.header("content-encoding");
  if (has_body(head) && head.has_header("content-encoding") && encoding != "identity")
    return error_reply(415, "unsupported_media_type", request_id);
  return std::nullopt;
}

bool request_dispatch::reads_body(const serving_config& serving, const request_head& head,
                                  const std::string& request_id) const {
  return head.method == "POST" && role_ == listener_role::main &&
         !is_ops_path(head.path(), serving.cfg, role_) && !check_head(serving, head, request_id);
}

bool request_dispatch::overloaded(const serving_config& serving) const {
  return stats_.inflight.load(std::memory_order_relaxed) >=
         static_cast<std::int64_t>(serving.cfg.max_inflight);
}

steady_time request_dispatch::deadline_of(const serving_config& serving, const inbound_request& in,
                                          millis budget) const {
  auto deadline = in.arrived + budget;
  const auto& name = serving.deadline_header_lower;
  if (name.empty())
    return deadline;
  // A positive integer of at most 600000 shortens the deadline, never lengthens it (resilience.md).
  const auto asked = in.header_value(name);
  if (!asked.empty() && asked.size() <= 6 &&
      std::all_of(asked.begin(), asked.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const auto ms = std::stol(asked);
    if (ms > 0 && ms <= 600000)
      deadline = std::min(deadline, in.arrived + millis{ms});
  }
  return deadline;
}

template <class Job>
std::shared_ptr<Job> request_dispatch::make_job(const std::shared_ptr<const serving_config>& serving,
                                               std::size_t route_index,
                                               const std::shared_ptr<reply_sink>& sink,
                                               inbound_request inbound) const {
  auto job = std::make_shared<Job>();
  job->route = &serving->cfg.routes[route_index];
  job->deadline = deadline_of(*serving, inbound, job->route->batch ? job->route->batch->deadline
                                                                   : job->route->deadline);
  job->route_index = route_index;
  job->runtime = runtime_;
  job->runtime.serving = serving;
  job->runtime.counters = &serving->counters;
  job->runtime.max_response_bytes = serving->cfg.max_response_bytes;
  job->runtime.guards = &serving->guards;
  job->runtime.deadline_header = &serving->cfg.deadline_header;
  job->reply = sink;
  job->inbound = std::move(inbound);
  return job;
}

std::variant<http_reply, started_request>
request_dispatch::serve(const std::shared_ptr<const serving_config>& serving, const request_head& head,
                        std::string body, const std::string& request_id, steady_time arrived,
                        const std::shared_ptr<reply_sink>& sink) {
  const auto& cfg = serving->cfg;
  const auto path = head.path();
  if (is_ops_path(path, cfg, role_))
    return serve_ops(head.method, path, request_id,
                     ops_sources{cfg, stats_, system_, *runtime_.client, serving->counters,
                                 *runtime_.inflight, *runtime_.cache, runtime_.nodes,
                                 runtime_.spans});
  if (role_ == listener_role::admin) // no route is served here, whatever its path
    return error_reply(404, "no_route", request_id);
  auto match = match_route(cfg.routes, path);
  const auto route_index = match ? match->route : cfg.routes.size();
  const auto trace = trace_of(head, arrived);
  if (auto refusal = check_head(*serving, head, request_id))
    return refuse(*serving, route_index, std::move(*refusal), request_id, arrived, head, trace);
  const auto& route = cfg.routes[route_index];
  if (stats_.inflight.fetch_add(1, std::memory_order_relaxed) >= static_cast<std::int64_t>(cfg.max_inflight)) {
    release();
    return refuse_overloaded(*serving, head, request_id, arrived);
  }
  auto inbound = inbound_of(head, std::move(match->captures), request_id, arrived, trace);
  if (route.batch) {
    // The body is parsed here, on the I/O thread: a 400 costs no actor.
    auto parsed = parse_batch_body(body, route.batch->max_items);
    if (!parsed.problem.empty()) {
      release();
      serving->counters.request_done(route_index, 400, elapsed_us(arrived));
      log_request(request_id, route.path, 400, elapsed_ms(arrived), "bad batch body: " + parsed.problem,
                  trace.trace_id_text());
      finish_server_span(runtime_.spans, trace, head.method, route.path, 400, false);
      return error_reply(400, "bad_request", request_id, {}, parsed.problem);
    }
    auto job = make_job<batch_job>(serving, route_index, sink, std::move(inbound));
    job->plan = plan_batch(std::move(parsed.items), *route.batch, job->inbound);
    const auto deadline = job->deadline;
    return started_request{system_.spawn(batch_coordinator, std::shared_ptr<const batch_job>(job)),
                           serving, route_index, deadline, deadline + coordinator_grace, trace};
  }
  auto job = make_job<aggregate_job>(serving, route_index, sink, std::move(inbound));
  const auto deadline = job->deadline;
  return started_request{system_.spawn(coordinator, std::shared_ptr<const aggregate_job>(job)),
                         serving, route_index, deadline, deadline + coordinator_grace, trace};
}

void request_dispatch::deadline_passed(const started_request& started) const {
  caf::anon_send(started.coordinator, deadline_atom::value);
}

http_reply request_dispatch::refuse_overloaded(const serving_config& serving, const request_head& head,
                                               const std::string& request_id, steady_time arrived) {
  stats_.overloaded.fetch_add(1, std::memory_order_relaxed);
  auto match = match_route(serving.cfg.routes, head.path());
  auto reply = error_reply(503, "overloaded", request_id);
  reply.headers.emplace_back("Retry-After", "1");
  return refuse(serving, match ? match->route : serving.cfg.routes.size(), std::move(reply),
                request_id, arrived, head, trace_of(head, arrived));
}

http_reply request_dispatch::give_up(const started_request& started, bool client_gone,
                                     const std::string& request_id, steady_time arrived) {
  release();
  caf::anon_send_exit(started.coordinator, caf::exit_reason::user_shutdown);
  const auto& route = started.serving->cfg.routes[started.route];
  auto& counters = started.serving->counters;
  const char* method = route.batch ? "POST" : "GET";
  if (client_gone) {
    stats_.client_gone.fetch_add(1, std::memory_order_relaxed);
    counters.request_done(started.route, 499, elapsed_us(arrived));
    log_request(request_id, route.path, 499, elapsed_ms(arrived), "client closed the connection",
                started.trace.trace_id_text());
    finish_server_span(runtime_.spans, started.trace, method, route.path, 499, false);
    return error_reply(499, "client_closed", request_id);
  }
  counters.request_done(started.route, 504, elapsed_us(arrived));
  log_request(request_id, route.path, 504, elapsed_ms(arrived), "coordinator missed the hard limit",
              started.trace.trace_id_text());
  finish_server_span(runtime_.spans, started.trace, method, route.path, 504, false);
  return error_reply(504, "upstream_timeout", request_id);
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
  return refuse(serving, route_index, error_reply(status, code_for_status(status), request_id),
                request_id, arrived, head, trace_of(head, arrived));
}

http_reply request_dispatch::refuse(const serving_config& serving, std::size_t route_index,
                                    http_reply reply, const std::string& request_id,
                                    steady_time arrived, const request_head& head,
                                    const trace_context& trace) {
  serving.counters.request_done(route_index, reply.status, elapsed_us(arrived));
  const auto& routes = serving.cfg.routes;
  const auto& route = route_index < routes.size() ? routes[route_index].path
                                                  : std::string{metrics::no_route_label};
  log_request(request_id, route, reply.status, elapsed_ms(arrived),
              std::string{"refused: "} + code_for_status(reply.status), trace.trace_id_text());
  finish_server_span(runtime_.spans, trace, head.method, route, reply.status, false);
  return reply;
}

trace_context request_dispatch::trace_of(const request_head& head, steady_time arrived) const {
  // Without tracing nothing is recorded: new traces go out unsampled, a caller's flag as it came.
  const double ratio = runtime_.spans ? runtime_.spans->sample_ratio() : 0.0;
  return start_trace(head.header("traceparent"), arrived, ratio);
}

inbound_request request_dispatch::inbound_of(const request_head& head,
                                             std::vector<std::pair<std::string, std::string>> captures,
                                             const std::string& request_id, steady_time arrived,
                                             const trace_context& trace) const {
  inbound_request in;
  in.request_id = request_id;
  in.arrived = arrived;
  in.trace = trace;
  in.captures = std::move(captures);
  const auto question = head.target.find('?');
  if (question != std::string::npos)
    in.query = parse_query(std::string_view{head.target}.substr(question + 1));
  for (const auto& [name, value] : head.headers)
    in.headers.emplace(name, value);
  return in;
}

} // namespace gather
