// Who may come in (docs/security.md): the route's bearer token and rate limit, on the request's
// head, before the overload check, the body and any downstream call.
#include "checks.hpp"

#include <chrono>

#include "gather/admission/gates.hpp"

namespace gather {

namespace {

auth_result metric_result(const auth_outcome& outcome) {
  switch (outcome.failure) {
    case jwt_failure::none: return auth_result::ok;
    case jwt_failure::missing: return auth_result::missing;
    case jwt_failure::exp: return auth_result::expired;
    case jwt_failure::forbidden: return auth_result::forbidden;
    default: return auth_result::invalid;
  }
}

} // namespace

std::optional<refusal> check_gate(admission_request& request) {
  if (request.gated || !request.serving.gates)
    return std::nullopt;
  request.gated = true;
  const auto& gate = request.serving.gates->routes[request.route_index()];
  if (!gate.jwt && !gate.limit)
    return std::nullopt;
  auto verdict = pass_gate(gate, request.head.headers, request.head.peer,
                           std::chrono::steady_clock::now());
  auto& counters = request.serving.counters;
  if (verdict.auth)
    counters.auth(request.route_index(), metric_result(*verdict.auth));
  if (verdict.rate_limited)
    counters.rate_limited(request.route_index());
  if (verdict.status == 0) {
    request.claims = std::move(verdict.claims);
    return std::nullopt;
  }
  // 503 here is "no key set to check with", not overload: upstream_unavailable.
  refusal refused = verdict.status == 503
                        ? refusal{error_reply(503, "upstream_unavailable", request.request_id), {}}
                        : refuse(verdict.status, request.request_id);
  for (auto& header : verdict.headers)
    refused.reply.headers.push_back(std::move(header));
  refused.detail = std::move(verdict.detail); // the reason: in the log line only
  return refused;
}

} // namespace gather
