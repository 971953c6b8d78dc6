#include "gather/downstream/call/downstream_request.hpp"

#include <algorithm>
#include <strings.h>

#include <nlohmann/json.hpp>

#include "gather/config/url_template.hpp"

namespace gather {

std::optional<std::string> inbound_value(const url_part& part, const inbound_request& in) {
  switch (part.what) {
    case url_part::kind::literal:
      return part.text;
    case url_part::kind::capture:
      for (const auto& [name, value] : in.captures)
        if (name == part.text)
          return value;
      return std::string{};
    case url_part::kind::query:
      return in.query_value(part.text);
    case url_part::kind::header:
      return in.header_value(part.text);
    case url_part::kind::claim: {
      if (!in.claims)
        return std::string{};
      const auto claim = in.claims->find(part.text);
      return claim == in.claims->end() ? std::string{} : scalar_text(*claim).value_or("");
    }
    case url_part::kind::client:
      return in.client_ip;
    case url_part::kind::body: {
      // In a URL: a scalar as text, an object or array as its JSON text, an absent field as "".
      const auto* value = in.body ? find_field(*in.body, part.field) : nullptr;
      if (!value || value->is_null())
        return std::string{};
      auto text = scalar_text(*value);
      return text ? std::move(*text) : value->dump();
    }
    case url_part::kind::section:
    case url_part::kind::item:
      break;
  }
  return std::nullopt;
}

std::optional<nlohmann::json> inbound_json_value(const url_part& part, const inbound_request& in) {
  if (part.what == url_part::kind::body) {
    const auto* value = in.body ? find_field(*in.body, part.field) : nullptr;
    if (!value)
      return nlohmann::json(nlohmann::json::value_t::discarded); // the member is left out
    return *value;
  }
  auto text = inbound_value(part, in);
  return text ? std::optional<nlohmann::json>(std::move(*text)) : std::nullopt;
}

namespace {

/// A forwarded value as it may go on the wire: CR, LF and NUL become spaces (RFC 9110 5.5). The
/// inbound parser keeps a bare CR inside a value, and a downstream or proxy that ends lines at a
/// bare CR would otherwise read the rest as a header of the client's choosing.
std::string field_value(std::string value) {
  for (char& c : value)
    if (c == '\r' || c == '\n' || c == '\0')
      c = ' ';
  return value;
}

} // namespace

std::string downstream_header_lines(const std::vector<std::string>& forward_headers, const inbound_request& in,
                                    std::string_view replaced) {
  constexpr std::string_view id_name = "X-Request-Id: ", accept = "Accept: application/json\r\n",
                             trace_name = "traceparent: ";
  std::string lines;
  lines.reserve(id_name.size() + in.request_id.size() + 2 + accept.size() + trace_name.size() + traceparent_size + 2);
  lines.append(id_name).append(in.request_id).append("\r\n").append(accept);
  if (in.trace.started()) {
    const auto at = lines.size() + trace_name.size();
    lines.append(trace_name).append(traceparent_size, ' ').append("\r\n");
    write_traceparent(lines.data() + at, in.trace.trace_id, in.trace.span_id, in.trace.sampled);
  }
  const auto add = [&](const std::string& name) {
    if (name == "traceparent")
      return;
    for (auto [it, end] = in.headers.equal_range(name); it != end; ++it)
      add_header(lines, name, field_value(it->second));
  };
  if (in.claim_headers.empty()) { // the common case: no copy of the names
    for (const auto& name : forward_headers)
      add(name);
  } else {
    for (const auto& name : forwarded_names(forward_headers, in))
      add(name);
  }
  if (!replaced.empty())
    drop_header(lines, replaced);
  return lines;
}

std::string header_block(std::string_view lines, std::string_view last) {
  // Written in place at its final size: an append per line and per CRLF (a call into libstdc++
  // each) was ~590 instructions a call for S1's four lines (bench/callgrind.sh 4 200).
  std::string block(lines.size() + (last.empty() ? 0 : last.size() + 2), '\0');
  char* at = block.data() + lines.copy(block.data(), lines.size());
  if (!last.empty()) {
    at += last.copy(at, last.size());
    *at++ = '\r';
    *at = '\n';
  }
  return block;
}

void add_header(std::string& lines, std::string_view name, std::string_view value) {
  lines.append(name).append(": ").append(value).append("\r\n");
}

namespace {

bool named(std::string_view line, std::string_view name) {
  return line.size() > name.size() && line[name.size()] == ':' &&
         strncasecmp(line.data(), name.data(), name.size()) == 0;
}

} // namespace

void drop_header(std::string& lines, std::string_view name) {
  for (std::size_t at = 0; at < lines.size();) { // in place: most blocks have no such line
    auto end = lines.find("\r\n", at);
    end = end == std::string::npos ? lines.size() : end + 2;
    if (named(std::string_view{lines}.substr(at, end - at), name))
      lines.erase(at, end - at);
    else
      at = end;
  }
}

std::string_view header_value(std::string_view lines, std::string_view name) {
  for (std::size_t at = 0; at < lines.size();) {
    auto end = lines.find("\r\n", at);
    end = end == std::string_view::npos ? lines.size() : end;
    if (const auto line = lines.substr(at, end - at); named(line, name)) {
      auto value = line.substr(name.size() + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
      return value;
    }
    at = end + 2;
  }
  return {};
}

std::vector<std::string> forwarded_names(const std::vector<std::string>& forward_headers,
                                         const inbound_request& in) {
  std::vector<std::string> names = forward_headers;
  for (const auto& name : in.claim_headers)
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  return names;
}


} // namespace gather
