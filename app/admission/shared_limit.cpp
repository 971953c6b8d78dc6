#include "gather/admission/shared_limit.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
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
    char interval[32];
    std::snprintf(interval, sizeof interval, "%.6f", 1e6 / self->cfg.rate_per_s);
    argv.emplace_back(interval);
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
  state_->store->every_sync(tick_);
}

shared_limit::~shared_limit() = default;

rate_limiter::decision shared_limit::take(std::string_view key,
                                          std::chrono::steady_clock::time_point now) const {
  if (!state_->store->up())
    return state_->fallback_limiter()->take(key, now);
  const auto decision = state_->local.take(key, now);
  if (decision.allowed)
    state_->record(key);
  return decision;
}

} // namespace gather
