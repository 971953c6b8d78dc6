#include "gather/ops/inflight_registry.hpp"

#include <algorithm>
#include <functional>

namespace gather {

inflight_registry::shard& inflight_registry::shard_for(const inflight_entry* entry) {
  return shards_[std::hash<const void*>{}(entry) % shards_.size()];
}

void inflight_registry::add(const std::shared_ptr<inflight_entry>& entry) {
  auto& s = shard_for(entry.get());
  std::lock_guard<std::mutex> guard{s.mutex};
  s.entries.emplace(entry.get(), entry);
}

void inflight_registry::remove(const inflight_entry* entry) {
  auto& s = shard_for(entry);
  std::lock_guard<std::mutex> guard{s.mutex};
  s.entries.erase(entry);
}

std::vector<inflight_view> inflight_registry::oldest(std::size_t limit) const {
  std::vector<std::shared_ptr<inflight_entry>> all;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> guard{s.mutex};
    for (const auto& [key, entry] : s.entries)
      all.push_back(entry);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a->arrived < b->arrived; });
  if (all.size() > limit)
    all.resize(limit);
  const auto now = std::chrono::steady_clock::now();
  std::vector<inflight_view> views;
  for (const auto& entry : all) {
    inflight_view v;
    v.request_id = entry->request_id;
    v.route = entry->route->path;
    v.age_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - entry->arrived).count();
    for (std::size_t i = 0; i < entry->pending.size(); ++i)
      if (entry->pending[i].load(std::memory_order_relaxed))
        v.pending.push_back(entry->route->sections[i].name);
    views.push_back(std::move(v));
  }
  return views;
}

} // namespace gather
