#include "gather/admission/admission.hpp"

#include "checks.hpp"
#include "gather/shared/shared_store.hpp"

namespace gather {

namespace {

using check = std::optional<refusal> (*)(admission_request&);

/// The order is the contract's: the first check that refuses names the error.
constexpr check checks[] = {
  check_route,
  check_preflight, // answers a CORS preflight: before every check that could refuse or spend it
  check_method,
  check_size,
  check_encoding,
  check_media_type,
  check_gate,
  check_overload,
  check_batch_body,
  check_write_body,
};

} // namespace

admission_request::admission_request(const serving_config& serving, const request_head& head,
                                     const std::string& request_id, gateway_stats& stats)
  : serving(serving),
    head(head),
    request_id(request_id),
    stats(stats),
    match(match_route(serving.cfg.routes, head.path())) {}

std::shared_ptr<store_budget>& admission_request::shared_store_time() {
  if (!store_time && serving.store)
    store_time = std::make_shared<store_budget>(serving.store->cfg().timeout);
  return store_time;
}

const route_config* admission_request::route() const {
  return match ? &serving.cfg.routes[match->route] : nullptr;
}

std::size_t admission_request::route_index() const {
  return match ? match->route : serving.cfg.routes.size();
}

std::optional<refusal> admit(admission_request& request) {
  for (auto run : checks)
    if (auto refused = run(request))
      return refused;
  return std::nullopt;
}

refusal refuse(int status, const std::string& request_id) {
  return {error_reply(status, refusal_code(status), request_id), {}};
}

} // namespace gather
