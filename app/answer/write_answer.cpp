#include "gather/answer/write_answer.hpp"

#include "gather/downstream/grpc/grpc_wire.hpp"

namespace gather {

namespace {

/// The status a refusal by the write's service passes on as `rejected`; 0 for any other end.
int refused_status(const section_outcome& outcome) {
  if (outcome.grpc_code >= 0) {
    switch (outcome.grpc_code) {
      case grpc::invalid_argument:
      case grpc::out_of_range:
      case grpc::failed_precondition: return 400;
      case grpc::unauthenticated: return 401;
      case grpc::permission_denied: return 403;
      case grpc::not_found: return 404;
      case grpc::already_exists:
      case grpc::aborted: return 409;
      case grpc::resource_exhausted: return 429;
      default: return 0;
    }
  }
  if (outcome.status != section_status::error)
    return 0;
  switch (outcome.last_http) {
    case 400: case 401: case 403: case 404: case 409: case 412: case 422: case 429:
      return outcome.last_http;
    default:
      return 0;
  }
}

} // namespace

http_reply write_failure_reply(const section_config& write, const section_outcome& outcome,
                               const std::string& request_id) {
  if (outcome.not_made == not_made_reason::bad_body) // no call made: the detail names the field
    return error_reply(400, "bad_request", request_id, write.name, outcome.detail);
  if (const int status = refused_status(outcome)) {
    auto reply = error_reply(status, "rejected", request_id, write.name);
    if (write.pass_errors && !outcome.passed.empty() && !reply.body.empty() && reply.body.back() == '}') {
      reply.body.pop_back(); // `passed` is a JSON object the downstream answer code re-serialized
      reply.body += ",\"detail\":";
      reply.body += outcome.passed;
      reply.body += '}';
    }
    return reply;
  }
  if (outcome.status == section_status::timeout || outcome.grpc_code == grpc::deadline_exceeded)
    return error_reply(504, "upstream_timeout", request_id, write.name);
  if (outcome.grpc_code == grpc::unimplemented)
    return error_reply(501, "not_implemented", request_id, write.name);
  return error_reply(503, "upstream_unavailable", request_id, write.name);
}

int write_answer_status(const route_config& route, const section_outcome& write, bool& no_body) {
  no_body = write.last_http == 204 && route.sections.size() == 1;
  if (no_body)
    return 204;
  return write.last_http == 201 || write.last_http == 202 ? write.last_http : 200;
}

} // namespace gather
