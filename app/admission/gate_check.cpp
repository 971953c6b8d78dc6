// Who may come in (docs/security.md): the route's bearer token and rate limit, on the request's
// head, before the overload check, the body and any downstream call.
#include "checks.hpp"

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "gather/admission/gates.hpp"

namespace gather {

namespace {

auth_result metric_result(const auth_outcome& outcome) {
  switch (outcome.failure) {
    case jwt_failure::none: return auth_result::ok;
    case jwt_failure::missing: return auth_result::missing;
    case jwt_failure::exp: return auth_result::expired;
    case jwt_failure::forbidden: return auth_result::forbidden;
    default: return auth_result::invalid;
  }
}

/// A shared limit's decision in the store (exact mode), which the request's coordinator waits
/// for: settled once on the store's loop, read by the coordinator after its message.
class store_decision final : public start_gate {
public:
  explicit store_decision(std::string request_id) : request_id_(std::move(request_id)) {}

  void wait(std::function<void()> decided) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!settled_) {
        waiter_ = std::move(decided);
        return;
      }
    }
    decided();
  }
  const std::optional<gate_refusal>& refusal() const override { return refusal_; }

  void settle(rate_limiter::decision decision) {
    if (!decision.allowed) {
      refusal_.emplace();
      refusal_->reply = refuse(429, request_id_).reply;
      refusal_->reply.headers.emplace_back("Retry-After", std::to_string(decision.retry_after.count()));
      refusal_->detail = "rate_limit: bucket empty";
      refusal_->rate_limited = true;
    }
    std::function<void()> waiter;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      settled_ = true;
      waiter = std::move(waiter_);
    }
    if (waiter)
      waiter();
  }

private:
  std::string request_id_;
  std::optional<gate_refusal> refusal_; ///< written before settled_, read after the message
  std::mutex mutex_;
  bool settled_ = false;
  std::function<void()> waiter_;
};

} // namespace

std::optional<refusal> check_gate(admission_request& request) {
  if (request.gated || !request.serving.gates)
    return std::nullopt;
  request.gated = true;
  const auto& gate = request.serving.gates->routes[request.route_index()];
  if (!gate.jwt && !gate.limit)
    return std::nullopt;
  auto verdict = pass_gate(gate, request.head.headers, request.head.peer,
                           std::chrono::steady_clock::now());
  auto& counters = request.serving.counters;
  if (verdict.auth)
    counters.auth(request.route_index(), metric_result(*verdict.auth));
  if (verdict.rate_limited)
    counters.rate_limited(request.route_index());
  if (verdict.status == 0) {
    request.claims = std::move(verdict.claims);
    if (verdict.ask_store) {
      auto decision = std::make_shared<store_decision>(request.request_id);
      gate.shared->ask(verdict.limit_key, [decision](rate_limiter::decision d) { decision->settle(d); },
                       request.shared_store_time());
      request.gate = std::move(decision);
    }
    return std::nullopt;
  }
  // 503 here is "no key set to check with", not overload: upstream_unavailable.
  refusal refused = verdict.status == 503
                        ? refusal{error_reply(503, "upstream_unavailable", request.request_id), {}}
                        : refuse(verdict.status, request.request_id);
  for (auto& header : verdict.headers)
    refused.reply.headers.push_back(std::move(header));
  refused.detail = std::move(verdict.detail); // the reason: in the log line only
  return refused;
}

} // namespace gather
