#include "gather/admission/gates.hpp"
#include "gather/values/wall_clock.hpp"

#include <cctype>

namespace gather {

namespace {

const std::string& header_value(const std::vector<std::pair<std::string, std::string>>& headers,
                                const char* name) {
  static const std::string none;
  for (const auto& [key, value] : headers)
    if (key == name)
      return value;
  return none;
}

/// The token check; leaves the claims in `verdict` or refuses.
void check_token(const jwt_guard& jwt, const std::vector<std::pair<std::string, std::string>>& headers,
                 gate_verdict& verdict) {
  auto outcome = jwt.check(header_value(headers, "authorization"), unix_seconds());
  if (outcome.unavailable) {
    // No key set was ever had: the gateway cannot tell good tokens from bad (not the client's
    // fault, so not 401).
    verdict.status = 503;
    verdict.detail = "auth: no JWK set from " + jwt.source().origin();
    return;
  }
  verdict.auth = outcome;
  switch (outcome.failure) {
    case jwt_failure::none:
      verdict.claims = outcome.claims;
      return;
    case jwt_failure::missing:
      verdict.status = 401;
      verdict.headers.emplace_back("WWW-Authenticate", "Bearer");
      break;
    case jwt_failure::forbidden:
      verdict.status = 403;
      break;
    default:
      verdict.status = 401;
      verdict.headers.emplace_back("WWW-Authenticate", "Bearer error=\"invalid_token\"");
      break;
  }
  verdict.detail = std::string("auth: ") + reason_text(outcome.failure);
}

void check_limit(const route_gate& gate, const std::vector<std::pair<std::string, std::string>>& headers,
                 const std::string& peer, std::chrono::steady_clock::time_point now,
                 gate_verdict& verdict) {
  const auto key = rate_limit_key(gate.limit->config(), peer, headers, verdict.claims.get());
  const auto decision = gate.shared ? gate.shared->take(key, now) : gate.limit->take(key, now);
  if (!decision) {
    verdict.ask_store = true;
    verdict.limit_key = key;
    return;
  }
  if (decision->allowed)
    return;
  verdict.status = 429;
  verdict.rate_limited = true;
  verdict.headers.emplace_back("Retry-After", std::to_string(decision->retry_after.count()));
  verdict.detail = "rate_limit: bucket empty";
}

} // namespace

std::shared_ptr<const admission_gates> make_admission_gates(const config& cfg, jwks_registry* keys,
                                                            std::shared_ptr<shared_store> store) {
  auto gates = std::make_shared<admission_gates>();
  gates->routes.resize(cfg.routes.size());
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    const auto& route = cfg.routes[i];
    auto& gate = gates->routes[i];
    if (route.auth) {
      const auto& jwt = route.auth->jwt;
      std::shared_ptr<jwks_source> source =
          keys ? keys->source_for(jwt.jwks_file, jwt.jwks_url, jwt.jwks_refresh)
          : jwt.jwks_url.empty() ? std::make_shared<jwks_source>(jwt.jwks_file)
                                 : std::make_shared<jwks_source>(jwt.jwks_url, jwt.jwks_refresh);
      gate.jwt = std::make_unique<jwt_guard>(jwt, std::move(source));
    }
    if (route.rate_limit)
      gate.limit = std::make_unique<rate_limiter>(*route.rate_limit);
    if (route.rate_limit && route.rate_limit->shared && store)
      gate.shared = std::make_unique<shared_limit>(*route.rate_limit, route.path, store);
  }
  return gates;
}

gate_verdict pass_gate(const route_gate& gate, const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& peer, std::chrono::steady_clock::time_point now) {
  gate_verdict verdict;
  // A limit keyed by a claim needs the token first; any other limit runs first, so that a
  // client over its limit costs no signature check (a flood of bogus tokens is bounded too).
  const bool limit_first =
      gate.limit && gate.limit->config().per != rate_limit_config::key_kind::claim;
  if (limit_first)
    check_limit(gate, headers, peer, now, verdict);
  if (verdict.status == 0 && gate.jwt)
    check_token(*gate.jwt, headers, verdict);
  if (verdict.status == 0 && gate.limit && !limit_first)
    check_limit(gate, headers, peer, now, verdict);
  return verdict;
}

void set_claims(inbound_request& in, const jwt_config& jwt, std::shared_ptr<const nlohmann::json> claims) {
  for (const auto& [claim, header] : jwt.forward_claims) {
    std::string name = header;
    for (char& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    in.headers.erase(name);
    if (const auto value = claims ? claim_text(*claims, claim) : std::string{}; !value.empty())
      in.headers.emplace(name, value);
    in.claim_headers.push_back(std::move(name));
  }
  in.claims = std::move(claims);
}

} // namespace gather
