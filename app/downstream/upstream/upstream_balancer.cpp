// An upstream's pick per call and what a call's end does to its endpoint (upstream_table.hpp):
// least_request (the power of two choices over calls in flight per weight) or smooth weighted
// round robin, the available endpoints first, others than the section's earlier calls' when there
// are, all that are not leaving in panic; passive ejection with max_ejected_percent.
#include <algorithm>
#include <array>
#include <numeric>

#include "upstream/upstream_set_parts.hpp"

namespace gather {

namespace {

/// A generator per thread: picks on different loops never share a cache line for it.
std::uint64_t next_random() {
  thread_local std::uint64_t state = 0x9e3779b97f4a7c15ull ^ reinterpret_cast<std::uintptr_t>(&state) ^
                                     static_cast<std::uint64_t>(steady_ns());
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545f4914f6cdd1dull;
}

bool avoided(const upstream_endpoint& e, const std::uint32_t* avoid, std::size_t count) {
  return std::find(avoid, avoid + count, e.id) != avoid + count;
}

constexpr std::int64_t max_ejection_ms = 300000;

} // namespace

endpoint_state upstream_endpoint::state(std::int64_t now_ns) const {
  if (leaving.load(std::memory_order_relaxed))
    return endpoint_state::leaving;
  if (ejected_until.load(std::memory_order_relaxed) > now_ns)
    return endpoint_state::ejected;
  if (unhealthy.load(std::memory_order_relaxed))
    return endpoint_state::unhealthy;
  return endpoint_state::available;
}

std::vector<std::uint16_t> smooth_schedule(const std::vector<std::uint32_t>& weights) {
  std::vector<std::uint16_t> out;
  if (weights.empty())
    return out;
  if (std::all_of(weights.begin(), weights.end(), [&](std::uint32_t w) { return w == weights[0]; })) {
    out.resize(weights.size());
    std::iota(out.begin(), out.end(), std::uint16_t{0});
    return out;
  }
  // nginx's smooth weighted round robin: each turn every weight is added to its endpoint's
  // current value, the largest is chosen and the total taken from it.
  const std::int64_t total = std::accumulate(weights.begin(), weights.end(), std::int64_t{0});
  std::vector<std::int64_t> current(weights.size(), 0);
  out.reserve(static_cast<std::size_t>(total));
  for (std::int64_t turn = 0; turn < total; ++turn) {
    std::size_t best = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      current[i] += weights[i];
      if (current[i] > current[best])
        best = i;
    }
    current[best] -= total;
    out.push_back(static_cast<std::uint16_t>(best));
  }
  return out;
}

endpoint_pick upstream_table::pick(const std::uint32_t* avoid, std::size_t avoid_count) {
  const auto set = live();
  if (!set || set->members.empty())
    return {nullptr, nowhere_};
  const auto now = steady_ns();
  const auto& members = set->members;
  // Three rounds, the first that has a candidate decides: available and not avoided; available;
  // in panic, every endpoint in the set (none of which is leaving).
  const auto fits = [&](const upstream_endpoint& e, int round) {
    if (round == 2)
      return true;
    return e.state(now) == endpoint_state::available && (round == 1 || !avoided(e, avoid, avoid_count));
  };
  upstream_endpoint* chosen = nullptr;
  std::size_t chosen_index = 0;
  int round = 0;
  const bool round_robin = balance_.load(std::memory_order_relaxed) == static_cast<int>(balance_kind::round_robin);
  for (; round < 3 && !chosen; ++round) {
    if (round_robin) {
      const auto& order = set->schedule;
      const auto start = rr_next_.fetch_add(1, std::memory_order_relaxed);
      for (std::size_t k = 0; k < order.size(); ++k) {
        const auto index = order[(start + k) % order.size()];
        if (fits(*members[index], round)) {
          chosen = members[index].get();
          chosen_index = index;
          break;
        }
      }
      continue;
    }
    std::array<std::uint16_t, 1000> candidates; // an upstream has at most 1000 endpoints
    std::size_t count = 0;
    for (std::size_t i = 0; i < members.size() && count < candidates.size(); ++i)
      if (fits(*members[i], round))
        candidates[count++] = static_cast<std::uint16_t>(i);
    if (count == 0)
      continue;
    std::size_t a = candidates[next_random() % count];
    if (count > 1) {
      // Two distinct draws; the one with fewer calls in flight per weight (cross-multiplied).
      std::size_t b = candidates[next_random() % (count - 1)];
      if (b == a)
        b = candidates[count - 1];
      const auto& ea = *members[a];
      const auto& eb = *members[b];
      const auto load_a = ea.in_flight.load(std::memory_order_relaxed) * eb.weight.load(std::memory_order_relaxed);
      const auto load_b = eb.in_flight.load(std::memory_order_relaxed) * ea.weight.load(std::memory_order_relaxed);
      if (load_b < load_a)
        a = b;
    }
    chosen = members[a].get();
    chosen_index = a;
  }
  note_panic(round == 3);
  auto endpoint = members[chosen_index];
  endpoint->in_flight.fetch_add(1, std::memory_order_relaxed);
  auto target = endpoint->target;
  return {std::move(endpoint), std::move(target)};
}

void upstream_table::report(upstream_endpoint& endpoint, endpoint_result result) {
  endpoint.in_flight.fetch_sub(1, std::memory_order_relaxed);
  const auto now = steady_ns();
  switch (result) {
    case endpoint_result::ok:
      endpoint.calls_ok.fetch_add(1, std::memory_order_relaxed);
      endpoint.failures_in_row.store(0, std::memory_order_relaxed);
      // Its first ok after an ejection ended: the next ejection starts from eject_ms again.
      if (endpoint.ejections_in_row.load(std::memory_order_relaxed) > 0 &&
          endpoint.ejected_until.load(std::memory_order_relaxed) <= now)
        endpoint.ejections_in_row.store(0, std::memory_order_relaxed);
      return;
    case endpoint_result::other:
      endpoint.calls_other.fetch_add(1, std::memory_order_relaxed);
      endpoint.failures_in_row.store(0, std::memory_order_relaxed); // the machine answered
      return;
    case endpoint_result::failure:
      endpoint.calls_failure.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  const auto in_row = endpoint.failures_in_row.fetch_add(1, std::memory_order_relaxed) + 1;
  if (in_row >= consecutive_failures_.load(std::memory_order_relaxed) &&
      endpoint.ejected_until.load(std::memory_order_relaxed) <= now && !endpoint.leaving.load())
    eject(endpoint, now);
}

void upstream_table::eject(upstream_endpoint& endpoint, std::int64_t now_ns) {
  std::string detail;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (endpoint.ejected_until.load() > now_ns)
      return; // another loop's report ejected it first
    const auto set = live();
    if (!set)
      return;
    const auto& members = set->members;
    const auto ejected = std::count_if(members.begin(), members.end(),
                                       [&](const auto& e) { return e->ejected_until.load() > now_ns; });
    const auto percent = max_ejected_percent_.load();
    auto most = static_cast<std::int64_t>(members.size()) * percent / 100;
    if (percent > 0 && most < 1)
      most = 1;
    if (ejected >= most)
      return; // at max_ejected_percent: it keeps taking calls (its failures go on counting)
    const auto times = endpoint.ejections_in_row.fetch_add(1) + 1;
    const auto ms = std::min<std::int64_t>(eject_ms_.load() * times, max_ejection_ms);
    endpoint.ejected_until.store(now_ns + ms * 1000000);
    endpoint.failures_in_row.store(0);
    ejections_.fetch_add(1, std::memory_order_relaxed);
    detail = endpoint.text + " ejected for " + std::to_string(ms) + " ms (ejection " + std::to_string(times) +
             " in a row, after " + std::to_string(consecutive_failures_.load()) + " failures in a row)";
  }
  log("upstream_ejected", detail);
}

void upstream_table::note_panic(bool panic) {
  if (panic_.load(std::memory_order_relaxed) == panic || panic_.exchange(panic) == panic)
    return; // the common case: one relaxed load
  log(panic ? "upstream_panic" : "upstream_panic_over",
      panic ? "no endpoint is available: calls go to every endpoint that is not leaving"
            : "an endpoint is available again: calls go to the available ones");
}

} // namespace gather
