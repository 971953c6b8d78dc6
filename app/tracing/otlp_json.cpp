// Written by hand rather than through nlohmann::json: an export of 512 spans runs on an event loop,
// and appending to one string costs a fraction of building a JSON tree first.
#include "gather/tracing/otlp_json.hpp"

namespace gather {

namespace {

/// A JSON string literal. Control characters are escaped; other bytes go as they are (names come
/// from the config, which is valid UTF-8, and from values the callers restrict to ASCII).
void append_string(std::string& out, const std::string& text) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 0xF];
    } else {
      out += c;
    }
  }
  out += '"';
}

template <std::size_t N>
void append_id(std::string& out, const std::array<char, N>& id) {
  out += '"';
  out.append(id.begin(), id.end());
  out += '"';
}

void append_attribute(std::string& out, const span_attribute& a) {
  out += "{\"key\":";
  append_string(out, a.key);
  out += ",\"value\":{";
  switch (a.what) {
    case span_attribute::type::text:
      out += "\"stringValue\":";
      append_string(out, a.text);
      break;
    case span_attribute::type::integer: // int64: a decimal string in OTLP JSON
      out += "\"intValue\":\"" + std::to_string(a.integer) + "\"";
      break;
    case span_attribute::type::boolean:
      out += a.boolean ? "\"boolValue\":true" : "\"boolValue\":false";
      break;
  }
  out += "}}";
}

void append_span(std::string& out, const span_record& s) {
  out += "{\"traceId\":";
  append_id(out, s.trace_id);
  out += ",\"spanId\":";
  append_id(out, s.span_id);
  if (s.has_parent) {
    out += ",\"parentSpanId\":";
    append_id(out, s.parent_id);
  }
  out += ",\"name\":";
  append_string(out, s.name);
  out += ",\"kind\":" + std::to_string(static_cast<int>(s.kind));
  out += ",\"startTimeUnixNano\":\"" + std::to_string(s.start_unix_ns) + "\"";
  out += ",\"endTimeUnixNano\":\"" + std::to_string(s.end_unix_ns) + "\"";
  out += ",\"attributes\":[";
  for (std::size_t i = 0; i < s.attributes.size(); ++i) {
    if (i > 0)
      out += ',';
    append_attribute(out, s.attributes[i]);
  }
  out += "],\"status\":{";
  if (s.status != span_status::unset) {
    out += "\"code\":" + std::to_string(static_cast<int>(s.status));
    if (!s.status_message.empty()) {
      out += ",\"message\":";
      append_string(out, s.status_message);
    }
  }
  out += "}}";
}

} // namespace

std::string encode_otlp_json(const std::string& service_name, const std::vector<span_record>& spans) {
  std::string out;
  out.reserve(256 + spans.size() * 512);
  out += "{\"resourceSpans\":[{\"resource\":{\"attributes\":[";
  append_attribute(out, span_attribute::of_text("service.name", service_name));
  out += "]},\"scopeSpans\":[{\"scope\":{\"name\":\"gather\",\"version\":";
  append_string(out, GATHER_VERSION);
  out += "},\"spans\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i > 0)
      out += ',';
    append_span(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

} // namespace gather
