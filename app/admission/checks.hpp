// The admission checks, one function each (app/admission/admission.cpp runs them in order).
#pragma once

#include <optional>

#include "gather/admission/admission.hpp"

namespace gather {

std::optional<refusal> check_route(admission_request& request);    // 404 no_route
std::optional<refusal> check_preflight(admission_request& request); // 204 or 403: a CORS preflight
std::optional<refusal> check_method(admission_request& request);   // 405, with Allow
std::optional<refusal> check_size(admission_request& request);     // 413, the declared length
std::optional<refusal> check_encoding(admission_request& request); // 415, an encoded body
std::optional<refusal> check_media_type(admission_request& request); // 415, a write route's body not JSON
std::optional<refusal> check_gate(admission_request& request);     // 401, 403, 429, 503: auth, rate_limit
std::optional<refusal> check_overload(admission_request& request); // 503, takes the in-flight slot
std::optional<refusal> check_batch_body(admission_request& request); // 400, reads the items
std::optional<refusal> check_write_body(admission_request& request); // 400, parses a write route's body

/// The head says a body follows: a Transfer-Encoding, or a Content-Length other than 0.
bool has_body(const request_head& head);

/// The methods of the routes that share the matched route's path: "GET", "GET, POST", ...
std::string allowed_methods(const admission_request& request);

} // namespace gather
