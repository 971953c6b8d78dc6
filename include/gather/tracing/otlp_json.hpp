// The OTLP/HTTP JSON encoding of spans (an ExportTraceServiceRequest), as the OpenTelemetry
// protocol specifies it for JSON: lowerCamelCase field names, trace and span ids as hex strings
// (not base64), enum values as integers, 64-bit integers (times, intValue) as decimal strings.
#pragma once

#include <string>
#include <vector>

#include "gather/tracing/span.hpp"

namespace gather {

/// {"resourceSpans":[{"resource":{"attributes":[service.name]},"scopeSpans":[{"scope":{"name":
/// "gather","version":...},"spans":[...]}]}]}: one resource, one scope, every span of `spans`.
std::string encode_otlp_json(const std::string& service_name, const std::vector<span_record>& spans);

} // namespace gather
