// A write route's body checks (docs/api.md#write-routes): its media type on the head (415), then
// the body itself once read (400), parsed here once for every placeholder that reads it.
#include "gather/admission/write_body.hpp"

#include "checks.hpp"

namespace gather {

namespace {

/// A route that reads the client's body: a write route, or any route of a method other than GET
/// (not a batch route, whose body check is its own).
bool takes_body(const route_config& route) {
  return route.method != "GET" && !route.batch;
}

} // namespace

std::optional<refusal> check_media_type(admission_request& request) {
  if (!takes_body(*request.route()))
    return std::nullopt;
  const bool body = request.body ? !request.body->empty() : has_body(request.head);
  if (!body || is_json_media_type(request.head.header("content-type")))
    return std::nullopt;
  return refusal{error_reply(415, "unsupported_media_type", request.request_id, {},
                             "the body must be sent as Content-Type: application/json"),
                 "write body: Content-Type " + request.head.header("content-type").substr(0, 64)};
}

std::optional<refusal> check_write_body(admission_request& request) {
  const auto& route = *request.route();
  if (!takes_body(route) || !request.body)
    return std::nullopt;
  std::string problem;
  if (request.body->empty()) {
    if (route.method == "DELETE")
      return std::nullopt; // a DELETE alone may come without a body
    problem = "this route needs a JSON body";
  } else {
    // Parsed here, on the I/O thread: a 400 costs no actor, and every placeholder reads this one.
    auto parsed = parse_write_body(*request.body);
    if (parsed.problem.empty()) {
      request.body_json = std::move(parsed.value);
      return std::nullopt;
    }
    problem = std::move(parsed.problem);
  }
  request.slot.release();
  return refusal{error_reply(400, "bad_request", request.request_id, {}, problem),
                 "bad write body: " + problem};
}

} // namespace gather
