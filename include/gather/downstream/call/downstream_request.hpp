// What an inbound request contributes to the downstream calls made for it: the values of the URL
// placeholders that read it, and the headers every call carries. Sections and batch items share
// these, so the two kinds of call can never forward differently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"
#include "gather/values/inbound_request.hpp"

namespace gather {

/// The raw value of a placeholder that reads the inbound request: a literal's text, a path capture,
/// a query parameter or a header ("" when the request lacks it); nullopt for the parts that read
/// something else (another section's data, the batch item).
std::optional<std::string> inbound_value(const url_part& part, const inbound_request& in);

/// The same value for a JSON template (a gRPC message, an HTTP write's body): a body field with
/// its own JSON type (a discarded value when the body lacks it: the member is left out), the
/// rest as text; nullopt for the parts that read something else.
std::optional<nlohmann::json> inbound_json_value(const url_part& part, const inbound_request& in);

/// The header lines of a downstream call as they go on the wire, "Name: value\r\n" each:
/// X-Request-Id (the response's), Accept, the request's traceparent (its trace, its SERVER span;
/// each call replaces the span id with its own, see call_span.hpp), and every value of each of
/// forwarded_names() (lower-case names) that `in` carries, with CR, LF and NUL in a value replaced
/// by spaces (no value can add a header line). An inbound traceparent is never forwarded as it
/// came: the gateway's own replaces it. The lines named `replaced` (the deadline header, whose
/// value the gateway writes per call) are left out. Every section and batch call of a request
/// that forwards the same headers carries the same lines: made once per request.
std::string downstream_header_lines(const std::vector<std::string>& forward_headers, const inbound_request& in,
                                    std::string_view replaced = {});

/// `lines` (header lines, each ended by CRLF) and then `last` (when not empty) as one more line:
/// one string, sized once.
std::string header_block(std::string_view lines, std::string_view last = {});

/// Appends the line "Name: value" to `lines`.
void add_header(std::string& lines, std::string_view name, std::string_view value);

/// Removes the lines whose name is `name` (in any case) from `lines`.
void drop_header(std::string& lines, std::string_view name);

/// The value of the first line of `lines` named `name` (in any case); empty when none is.
std::string_view header_value(std::string_view lines, std::string_view name);

/// The inbound headers a downstream call carries: `forward_headers`, then the route's claim
/// headers (in.claim_headers) not among them. The section cache keys by the same list.
std::vector<std::string> forwarded_names(const std::vector<std::string>& forward_headers,
                                         const inbound_request& in);


} // namespace gather
