#include "gather/admission/cors_policy.hpp"

#include <algorithm>

#include "gather/values/header_text.hpp"

namespace gather {

namespace {

bool origin_allowed(const cors_config& cors, std::string_view origin) {
  if (origin.empty())
    return false;
  if (cors.any_origin)
    return true;
  const auto wanted = lower_ascii(origin);
  return std::find(cors.allow_origins.begin(), cors.allow_origins.end(), wanted) !=
         cors.allow_origins.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

} // namespace

bool is_preflight(std::string_view method, bool has_origin, bool has_request_method) {
  return method == "OPTIONS" && has_origin && has_request_method;
}

header_list cors_answer_headers(const cors_config& cors, std::string_view origin) {
  header_list out;
  if (!origin_allowed(cors, origin))
    return out;
  out.emplace_back("Access-Control-Allow-Origin", cors.any_origin ? std::string("*") : std::string(origin));
  out.emplace_back("Vary", "Origin");
  if (!cors.expose_headers.empty())
    out.emplace_back("Access-Control-Expose-Headers", joined(cors.expose_headers));
  if (cors.allow_credentials)
    out.emplace_back("Access-Control-Allow-Credentials", "true");
  return out;
}

preflight_verdict cors_preflight(const cors_config& cors, std::string_view origin,
                                 std::string_view request_method, std::string_view request_headers,
                                 std::string_view route_methods) {
  preflight_verdict verdict;
  if (!origin_allowed(cors, origin)) {
    verdict.refusal = "origin";
    return verdict;
  }
  // A method token is case-sensitive (RFC 9110 §9.1).
  const auto method = trim_ows(request_method);
  bool listed = false;
  for (auto rest = route_methods; !rest.empty() && !listed;) {
    const auto comma = rest.find(',');
    listed = !method.empty() && trim_ows(rest.substr(0, comma)) == method;
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  if (!listed) {
    verdict.refusal = "method";
    return verdict;
  }
  std::vector<std::string> asked;
  for (auto rest = request_headers; !rest.empty();) {
    const auto comma = rest.find(',');
    const auto name = lower_ascii(trim_ows(rest.substr(0, comma)));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (name.empty())
      continue;
    if (std::find(cors.allow_headers.begin(), cors.allow_headers.end(), name) == cors.allow_headers.end()) {
      verdict.refusal = "header " + name;
      return verdict;
    }
    if (std::find(asked.begin(), asked.end(), name) == asked.end())
      asked.push_back(name);
  }
  verdict.allowed = true;
  verdict.headers.emplace_back("Access-Control-Allow-Methods", std::string(route_methods));
  if (!asked.empty())
    verdict.headers.emplace_back("Access-Control-Allow-Headers", joined(asked));
  verdict.headers.emplace_back("Access-Control-Max-Age", std::to_string(cors.max_age_s));
  return verdict;
}

} // namespace gather
