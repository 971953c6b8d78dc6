// A CORS preflight (docs/api.md#cors): answered here, after the route is known and before every
// other check, so it never reaches a downstream, needs no token and spends no rate limit.
#include "checks.hpp"

#include "gather/admission/cors_policy.hpp"

namespace gather {

std::optional<refusal> check_preflight(admission_request& request) {
  const auto& cors = request.serving.cfg.cors;
  const auto& head = request.head;
  if (!cors || !is_preflight(head.method, head.has_header("origin"),
                             head.has_header("access-control-request-method")))
    return std::nullopt; // without `cors` an OPTIONS is any other method: 405
  auto verdict = cors_preflight(*cors, head.header("origin"), head.header("access-control-request-method"),
                                head.header("access-control-request-headers"),
                                allowed_methods(request));
  if (!verdict.allowed)
    return refusal{error_reply(403, "forbidden", request.request_id, {}, "this cross-origin request is not allowed"),
                   "CORS preflight refused: " + verdict.refusal};
  http_reply reply; // the answer's own CORS headers (Allow-Origin, Vary) are added by the front
  reply.status = 204;
  reply.headers = std::move(verdict.headers);
  return refusal{std::move(reply), "CORS preflight"};
}

} // namespace gather
