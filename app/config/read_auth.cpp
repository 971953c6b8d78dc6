// Reading a route's `auth` and `rate_limit` (docs/config.md, docs/security.md "Who may come in").
// The JWK set a jwks_file names is read by the admission stage (gather/admission/auth_check.hpp):
// the config reader opens no file but the config itself.

#include "config_reader.hpp"

#include <cmath>

namespace gather::config_reader {

namespace {

/// Headers the gateway sets on every call itself: a claim may not stand in for them.
constexpr std::string_view gateway_headers[] = {"x-request-id", "traceparent", "accept",
                                                "content-length", "content-type"};

std::optional<std::string> read_non_empty(const object_reader& object, std::string_view key) {
  auto value = object.read_string(key, "a non-empty string");
  if (value && value->empty()) {
    object.problem(key, "must be a non-empty string");
    return std::nullopt;
  }
  return value;
}

void read_jwks_source(const object_reader& jwt, jwt_config& out) {
  const bool has_file = jwt.find("jwks_file") != nullptr;
  const bool has_url = jwt.find("jwks_url") != nullptr;
  if (has_file == has_url) {
    jwt.problems().add(jwt.path(), has_file ? "has both \"jwks_file\" and \"jwks_url\" (one or the other)"
                                            : "needs \"jwks_file\" or \"jwks_url\"");
  }
  if (auto file = read_non_empty(jwt, "jwks_file"))
    out.jwks_file = *file;
  if (auto url = read_non_empty(jwt, "jwks_url")) {
    auto problems = url_prefix_problems(*url);
    if (url->find_first_of("{}") != std::string::npos)
      problems.push_back("is a plain URL: no placeholders");
    for (const auto& problem : problems)
      jwt.problem("jwks_url", problem);
    if (problems.empty())
      out.jwks_url = *url;
  }
  if (jwt.find("jwks_refresh_s") && !has_url)
    jwt.problem("jwks_refresh_s", "only with \"jwks_url\" (a jwks_file is read at start and on reload)");
  long long refresh = out.jwks_refresh.count();
  jwt.read_integer("jwks_refresh_s", 10, 86400, refresh);
  out.jwks_refresh = std::chrono::seconds{refresh};
}

/// `require`: claim -> the string, number or boolean it must hold.
void read_require(const object_reader& jwt, jwt_config& out) {
  const json* require = jwt.find("require");
  if (!require)
    return;
  if (!require->is_object() || require->empty()) {
    jwt.problem("require", "must be a non-empty object of claim -> required value");
    return;
  }
  for (const auto& [claim, value] : require->items()) {
    const std::string path = member_path(jwt.path_of("require"), claim);
    if (claim.empty())
      jwt.problems().add(path, "a claim name must not be empty");
    else if (value.is_string() && !value.get_ref<const std::string&>().empty())
      out.require.emplace_back(claim, value.get<std::string>());
    else if (value.is_number_integer() || value.is_boolean())
      out.require.emplace_back(claim, value.dump());
    else
      jwt.problems().add(path, "must be a non-empty string, an integer or a boolean");
  }
}

/// `forward_claims`: claim -> header name, each header name once.
void read_forward_claims(const object_reader& jwt, jwt_config& out) {
  const json* claims = jwt.find("forward_claims");
  if (!claims)
    return;
  if (!claims->is_object() || claims->empty()) {
    jwt.problem("forward_claims", "must be a non-empty object of claim -> header name");
    return;
  }
  std::vector<std::string> seen;
  for (const auto& [claim, header] : claims->items()) {
    const std::string path = member_path(jwt.path_of("forward_claims"), claim);
    if (claim.empty()) {
      jwt.problems().add(path, "a claim name must not be empty");
      continue;
    }
    if (!header.is_string() || !is_token(header.get_ref<const std::string&>())) {
      jwt.problems().add(path, "must be a header name (letters, digits and !#$%&'*+-.^_`|~)");
      continue;
    }
    const std::string lower = lower_case(header.get_ref<const std::string&>());
    if (!forwardable_header(lower) || contains(gateway_headers, lower))
      jwt.problems().add(path, in_quotes(lower) + " is a header the gateway sets or never forwards");
    else if (contains(seen, lower))
      jwt.problems().add(path, in_quotes(lower) + " is already set by another claim");
    else {
      seen.push_back(lower);
      out.forward_claims.emplace_back(claim, header.get<std::string>());
    }
  }
}

} // namespace

std::optional<auth_config> read_auth(const object_reader& route) {
  const auto auth = route.read_object("auth");
  if (!auth)
    return std::nullopt;
  auth->reject_unknown_keys({"jwt"});
  auth_config out;
  if (!auth->require("jwt", "an object (the bearer token check)"))
    return out;
  const auto jwt = auth->read_object("jwt");
  if (!jwt)
    return out;
  jwt->reject_unknown_keys({"jwks_file", "jwks_url", "jwks_refresh_s", "issuer", "audience",
                            "leeway_s", "require", "forward_claims"});
  read_jwks_source(*jwt, out.jwt);
  out.jwt.issuer = read_non_empty(*jwt, "issuer");
  out.jwt.audience = read_non_empty(*jwt, "audience");
  long long leeway = out.jwt.leeway.count();
  jwt->read_integer("leeway_s", 0, 3600, leeway);
  out.jwt.leeway = std::chrono::seconds{leeway};
  read_require(*jwt, out.jwt);
  read_forward_claims(*jwt, out.jwt);
  return out;
}

std::optional<rate_limit_config> read_rate_limit(const object_reader& route, bool has_auth) {
  const auto limit = route.read_object("rate_limit");
  if (!limit)
    return std::nullopt;
  limit->reject_unknown_keys({"per", "rate_per_s", "burst", "max_keys", "shared"});
  rate_limit_config out;
  const std::string per_expected = "\"ip\", \"route\", \"header:NAME\" or \"claim:NAME\"";
  if (limit->require("per", per_expected)) {
    if (const auto per = limit->read_string("per", per_expected)) {
      const auto colon = per->find(':');
      const std::string kind = per->substr(0, colon);
      const std::string name = colon == std::string::npos ? "" : per->substr(colon + 1);
      if (*per == "ip")
        out.per = rate_limit_config::key_kind::ip;
      else if (*per == "route")
        out.per = rate_limit_config::key_kind::route;
      else if (kind == "header" && colon != std::string::npos) {
        out.per = rate_limit_config::key_kind::header;
        out.name = lower_case(name);
        if (!is_token(name))
          limit->problem("per", in_quotes(name) + " is not a header name");
      } else if (kind == "claim" && colon != std::string::npos) {
        out.per = rate_limit_config::key_kind::claim;
        out.name = name;
        if (name.empty())
          limit->problem("per", "claim: needs a claim name");
        else if (!has_auth)
          limit->problem("per", "claim: needs \"auth\" on the route (no token, no claims)");
      } else {
        limit->problem("per", "must be " + per_expected);
      }
    }
  }
  const std::string rate_expected = "a number above 0 and at most 1000000";
  if (limit->require("rate_per_s", rate_expected)) {
    const json& rate = *limit->find("rate_per_s");
    if (rate.is_number() && rate.get<double>() > 0 && rate.get<double>() <= 1e6)
      out.rate_per_s = rate.get<double>();
    else
      limit->problem("rate_per_s", "must be " + rate_expected);
  }
  out.burst = std::ceil(out.rate_per_s);
  long long burst = static_cast<long long>(out.burst);
  limit->read_integer("burst", 1, 1000000, burst);
  out.burst = static_cast<double>(burst);
  limit->read_integer("max_keys", 1, 10000000, out.max_keys);
  limit->read_bool("shared", out.shared);
  return out;
}

} // namespace gather::config_reader
