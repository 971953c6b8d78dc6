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

std::vector<std::string> downstream_headers(const std::vector<std::string>& forward_headers,
                                            const inbound_request& in) {
  // Room for the lines every call adds later (the deadline header), so no step regrows it.
  std::vector<std::string> headers;
  headers.reserve(4 + forward_headers.size() + in.claim_headers.size());
  auto& id = headers.emplace_back();
  id.reserve(14 + in.request_id.size());
  id += "X-Request-Id: ";
  id += in.request_id;
  headers.emplace_back("Accept: application/json");
  if (in.trace.started()) {
    constexpr std::string_view name = "traceparent: ";
    auto& line = headers.emplace_back(name.size() + traceparent_size, ' ');
    std::copy(name.begin(), name.end(), line.begin());
    write_traceparent(line.data() + name.size(), in.trace.trace_id, in.trace.span_id, in.trace.sampled);
  }
  const auto add = [&](const std::string& name) {
    if (name == "traceparent")
      return;
    for (auto [it, end] = in.headers.equal_range(name); it != end; ++it)
      headers.push_back(name + ": " + field_value(it->second));
  };
  if (in.claim_headers.empty()) { // the common case: no copy of the names
    for (const auto& name : forward_headers)
      add(name);
  } else {
    for (const auto& name : forwarded_names(forward_headers, in))
      add(name);
  }
  return headers;
}

std::string header_block(const std::vector<std::string>& lines, std::string_view last) {
  std::size_t size = last.empty() ? 0 : last.size() + 2;
  for (const auto& line : lines)
    size += line.size() + 2;
  // Written in place at its final size: an append per line and per CRLF (a call into libstdc++
  // each) was ~590 instructions a call for S1's four lines (bench/callgrind.sh 4 200).
  std::string block(size, '\0');
  char* at = block.data();
  const auto put = [&at](std::string_view text) {
    text.copy(at, text.size());
    at += text.size();
    *at++ = '\r';
    *at++ = '\n';
  };
  for (const auto& line : lines)
    put(line);
  if (!last.empty())
    put(last);
  return block;
}

std::vector<std::string> forwarded_names(const std::vector<std::string>& forward_headers,
                                         const inbound_request& in) {
  std::vector<std::string> names = forward_headers;
  for (const auto& name : in.claim_headers)
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  return names;
}

void drop_header(std::vector<std::string>& headers, const std::string& name) {
  headers.erase(std::remove_if(headers.begin(), headers.end(),
                               [&](const std::string& line) {
                                 return line.size() > name.size() && line[name.size()] == ':' &&
                                        strncasecmp(line.data(), name.data(), name.size()) == 0;
                               }),
                headers.end());
}

} // namespace gather
