#include "gather/admission/shared_limit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gather/shared/shared_store.hpp"

namespace gather {

namespace {

/// Adds each key's count to its shared bucket (GCRA on the store's clock, microseconds) and
/// answers, per key, how far its theoretical arrival time lies ahead of the store's now. A value
/// that is not a number (garbage, another type) is a full bucket and is replaced.
constexpr const char* sync_script = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local held = redis.pcall('GET', key)
  local tat = type(held) == 'string' and tonumber(held) or nil
  if not tat or tat ~= tat or tat < now or tat > now + 86400000000 then tat = now end
  tat = tat + (tonumber(ARGV[i + 1]) or 0) * interval
  redis.call('SET', key, string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
  out[i] = math.floor(tat - now)
end
return out
)lua";

/// Exact mode: takes one token from the shared bucket if it holds one (GCRA on the store's clock,
/// microseconds) and answers {1 taken or 0 refused, how far the theoretical arrival time lies
/// ahead of the store's now}. A value that is not a number in range (garbage, another type) is a
/// full bucket and is replaced.
constexpr const char* decide_script = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local held = redis.pcall('GET', KEYS[1])
local tat = type(held) == 'string' and tonumber(held) or nil
if not tat or tat ~= tat or tat < now or tat > now + interval + tolerance then tat = now end
if tat - now > tolerance then return {0, math.floor(tat - now)} end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.floor((tat - now) / 1000) + 1000)
return {1, math.floor(tat - now)}
)lua";

std::string micros_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.6f", value);
  return text;
}

rate_limit_config divided(rate_limit_config cfg, std::uint64_t gateways) {
  const double g = static_cast<double>(std::max<std::uint64_t>(1, gateways));
  cfg.rate_per_s /= g;
  cfg.burst = std::max(1.0, std::ceil(cfg.burst / g));
  return cfg;
}

} // namespace

struct shared_limit::state {
  state(const rate_limit_config& config, const std::string& route_path, std::shared_ptr<shared_store> s)
      : cfg(config), store(std::move(s)),
        key_prefix(store->cfg().prefix + "rl:" + route_path + ":"), local(config),
        fallback(std::make_shared<rate_limiter>(config)) {}

  rate_limit_config cfg;
  std::shared_ptr<shared_store> store;
  bool exact = store->cfg().sync.count() == 0;
  double interval_us = 1e6 / cfg.rate_per_s;
  double tolerance_us = std::floor(std::max(0.0, cfg.burst - 1)) * interval_us;
  std::string key_prefix;
  rate_limiter local; ///< the shared count last seen plus this gateway's use since
  std::mutex fallback_mutex;
  std::uint64_t fallback_gateways = 1;
  std::shared_ptr<rate_limiter> fallback; ///< rate/G while the store is down
  std::mutex pending_mutex;
  std::unordered_map<std::string, std::uint32_t> pending; ///< key -> admitted since the last sync
  bool syncing = false; ///< loop 0 only: one sync at a time

  std::shared_ptr<rate_limiter> fallback_limiter() {
    const auto gateways = store->gateways();
    std::lock_guard<std::mutex> lock(fallback_mutex);
    if (gateways != fallback_gateways) {
      fallback = std::make_shared<rate_limiter>(divided(cfg, gateways));
      fallback_gateways = gateways;
    }
    return fallback;
  }

  void record(std::string_view key) {
    std::lock_guard<std::mutex> lock(pending_mutex);
    if (auto found = pending.find(std::string(key)); found != pending.end())
      ++found->second;
    else if (pending.size() < cfg.max_keys)
      pending.emplace(key, 1);
  }

  std::uint32_t pending_of(const std::string& key) {
    std::lock_guard<std::mutex> lock(pending_mutex);
    const auto found = pending.find(key);
    return found == pending.end() ? 0 : found->second;
  }

  /// Exact mode: the store's answer to one decision, learned by the local bucket (which then
  /// refuses by itself until the next token is due). nullopt: not the answer asked for.
  std::optional<rate_limiter::decision> decided(const std::string& key, const resp_value& value) {
    if (!value.is_array() || value.items.size() != 2 || !value.items[0].is_integer() ||
        !value.items[1].is_integer())
      return std::nullopt;
    const auto taken = value.items[0].integer;
    const auto ahead = value.items[1].integer;
    if ((taken != 0 && taken != 1) || ahead < 0 || ahead > interval_us + tolerance_us + 1)
      return std::nullopt;
    const auto now = std::chrono::steady_clock::now();
    local.raise(key, now + std::chrono::microseconds(ahead), now);
    if (taken == 1)
      return rate_limiter::decision{true, std::chrono::seconds{0}};
    const double wait_us = std::max(0.0, static_cast<double>(ahead) - tolerance_us);
    return rate_limiter::decision{
        false, std::chrono::seconds{std::max<long long>(1, static_cast<long long>(std::ceil(wait_us / 1e6)))}};
  }

  /// On loop 0, every sync_ms: the counts since the last sync, in one script call.
  static void sync(const std::shared_ptr<state>& self) {
    if (self->syncing)
      return;
    std::vector<std::pair<std::string, std::uint32_t>> batch;
    {
      std::lock_guard<std::mutex> lock(self->pending_mutex);
      if (self->pending.empty())
        return;
      batch.assign(self->pending.begin(), self->pending.end());
      self->pending.clear();
    }
    std::vector<std::string> argv{"EVAL", sync_script, std::to_string(batch.size())};
    argv.reserve(3 + 2 * batch.size() + 1);
    for (const auto& entry : batch)
      argv.push_back(self->key_prefix + store_key_hash(entry.first));
    argv.push_back(micros_text(self->interval_us));
    for (const auto& entry : batch)
      argv.push_back(std::to_string(entry.second));
    self->syncing = true;
    std::weak_ptr<state> weak = self;
    self->store->call(store_op::sync, argv,
                      [weak, batch = std::move(batch)](store_result result, const resp_value& value) {
                        const auto self = weak.lock();
                        if (!self)
                          return true;
                        self->syncing = false;
                        return result != store_result::ok || self->learn(batch, value);
                      });
  }

  /// The store's answer to a sync: each bucket's state, learned by the local buckets. An answer
  /// of another shape (a store that is not what it should be) teaches nothing.
  bool learn(const std::vector<std::pair<std::string, std::uint32_t>>& batch, const resp_value& value) {
    if (!value.is_array() || value.items.size() != batch.size())
      return false;
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto& item = value.items[i];
      if (!item.is_integer() || item.integer < 0 || item.integer > 86400000000LL)
        return false;
      const auto ahead = std::chrono::microseconds(item.integer) +
                         local.interval() * pending_of(batch[i].first);
      local.raise(batch[i].first, now + ahead, now);
    }
    return true;
  }
};

shared_limit::shared_limit(const rate_limit_config& cfg, const std::string& route_path,
                           std::shared_ptr<shared_store> store)
    : state_(std::make_shared<state>(cfg, route_path, std::move(store))) {
  std::weak_ptr<state> weak = state_;
  tick_ = std::make_shared<std::function<void()>>([weak] {
    if (const auto self = weak.lock())
      state::sync(self);
  });
  if (!state_->exact)
    state_->store->every_sync(tick_);
}

shared_limit::~shared_limit() = default;

std::optional<rate_limiter::decision> shared_limit::take(std::string_view key,
                                                         std::chrono::steady_clock::time_point now) const {
  if (!state_->store->up()) {
    const auto decision = state_->fallback_limiter()->take(key, now);
    if (state_->exact)
      state_->store->skipped(store_op::limit); // the decision it would have asked for
    else if (decision.allowed)
      state_->record(key); // the next sync, not made while the store is down, counts as skipped
    return decision;
  }
  if (state_->exact) {
    // Known over the limit: refused without asking the store until the next token is due.
    if (auto decision = state_->local.peek(key, now); !decision.allowed)
      return decision;
    return std::nullopt;
  }
  const auto decision = state_->local.take(key, now);
  if (decision.allowed)
    state_->record(key);
  return decision;
}

void shared_limit::ask(const std::string& key, std::function<void(rate_limiter::decision)> done,
                       const std::shared_ptr<store_budget>& budget) const {
  auto& st = *state_;
  std::vector<std::string> argv{"EVAL", decide_script, "1", st.key_prefix + store_key_hash(key),
                                micros_text(st.interval_us), micros_text(st.tolerance_us)};
  std::weak_ptr<state> weak = state_;
  st.store->call(store_op::limit, argv,
                 [weak, key, done = std::move(done)](store_result result, const resp_value& value) {
                   const auto self = weak.lock();
                   if (!self) { // the generation is gone: the request is decided as if alone
                     done({true, std::chrono::seconds{0}});
                     return true;
                   }
                   std::optional<rate_limiter::decision> decision;
                   if (result == store_result::ok)
                     decision = self->decided(key, value);
                   // Without the store's answer: the local bucket of rate/G decides.
                   done(decision ? *decision
                                 : self->fallback_limiter()->take(key, std::chrono::steady_clock::now()));
                   return result != store_result::ok || decision.has_value();
                 },
                 budget);
}

bool shared_limit::exact() const {
  return state_->exact;
}

} // namespace gather
