// A write route's answer (docs/api.md#write-routes): what the write's end turns the request into.
#pragma once

#include <optional>
#include <string>

#include "gather/config/config.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// The write did not end ok: a refusal its service made (400, 401, 403, 404, 409, 412, 422, 429,
/// or the gRPC codes that mean them) is that status as `rejected`, with the service's error object
/// as `detail` when the write has `pass_errors`; a body its message cannot hold is 400
/// `bad_request` naming the field; a timeout 504; `UNIMPLEMENTED` 501; the rest 503.
http_reply write_failure_reply(const section_config& write, const section_outcome& outcome,
                               const std::string& request_id);

/// The status of a write route's answer once its write ended ok: the write's 201 or 202, else 200
/// (`no_body`: a 204 write on a route without reads answers 204 with no body).
int write_answer_status(const route_config& route, const section_outcome& write, bool& no_body);

} // namespace gather
