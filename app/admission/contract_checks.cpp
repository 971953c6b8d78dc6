// The contract's own checks (docs/api.md#errors): route, method, size, encoding, overload, body.
#include "checks.hpp"

#include <string>

#include "gather/admission/batch_body.hpp"

namespace gather {

bool has_body(const request_head& head) {
  if (head.has_header("transfer-encoding"))
    return true;
  const auto& length = head.header("content-length");
  return !length.empty() && length.find_first_not_of('0') != std::string::npos;
}

std::optional<refusal> check_route(admission_request& request) {
  if (!request.match)
    return refuse(404, request.request_id);
  return std::nullopt;
}

namespace {

/// The routes of the matched route's path (only itself in a config made without read_routes).
std::vector<std::size_t> path_routes(const admission_request& request) {
  const auto& same = request.route()->same_path;
  return same.empty() ? std::vector<std::size_t>{request.match->route} : same;
}

} // namespace

std::string allowed_methods(const admission_request& request) {
  const auto& routes = request.serving.cfg.routes;
  std::string methods;
  for (const auto i : path_routes(request))
    methods += (methods.empty() ? "" : ", ") + routes[i].method;
  return methods;
}

std::optional<refusal> check_method(admission_request& request) {
  // Routes of one path and several methods: the request takes the one of its method.
  const auto& routes = request.serving.cfg.routes;
  for (const auto i : path_routes(request))
    if (request.head.method == routes[i].method) {
      request.match->route = i;
      return std::nullopt;
    }
  auto refused = refuse(405, request.request_id);
  refused.reply.headers.emplace_back("Allow", allowed_methods(request));
  return refused;
}

std::optional<refusal> check_size(admission_request& request) {
  const auto& declared = request.head.header("content-length");
  // The parser has checked that a Content-Length is digits; 19 of them may not fit in 64 bits.
  if (!declared.empty() && (declared.size() > 18 ||
                            std::stoull("0" + declared) > request.serving.cfg.max_body_bytes))
    return refuse(413, request.request_id);
  return std::nullopt;
}

std::optional<refusal> check_encoding(admission_request& request) {
  // Encoded bodies are refused unread: max_body_bytes counts the bytes sent, and an inflated
  // body has no bound.
  const auto& head = request.head;
  if (has_body(head) && head.has_header("content-encoding") &&
      head.header("content-encoding") != "identity")
    return refuse(415, request.request_id);
  return std::nullopt;
}

std::optional<refusal> check_overload(admission_request& request) {
  const auto limit = request.serving.cfg.max_inflight;
  auto& inflight = request.stats.inflight;
  // On the head alone only look: the slot is taken once the body is in, so a slow body holds none.
  const bool full =
    request.body ? !(request.slot = inflight_slot::try_take(inflight, limit))
                 : inflight.load(std::memory_order_relaxed) >= static_cast<std::int64_t>(limit);
  if (!full)
    return std::nullopt;
  request.stats.overloaded.fetch_add(1, std::memory_order_relaxed);
  auto refused = refuse(503, request.request_id);
  refused.reply.headers.emplace_back("Retry-After", "1");
  return refused;
}

std::optional<refusal> check_batch_body(admission_request& request) {
  const auto& batch = request.route()->batch;
  if (!batch || !request.body)
    return std::nullopt;
  // Parsed here, on the I/O thread: a 400 costs no actor.
  auto parsed = parse_batch_body(*request.body, batch->max_items);
  if (parsed.problem.empty()) {
    request.items = std::move(parsed.items);
    return std::nullopt;
  }
  request.slot.release();
  return refusal{error_reply(400, "bad_request", request.request_id, {}, parsed.problem),
                 "bad batch body: " + parsed.problem};
}

} // namespace gather
