// The section cache actor: one shard of keys, its LRU entries and its flights (see the header).
#include "gather/actors/section_cache.hpp"

#include <functional>
#include <list>
#include <unordered_map>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "gather/values/atoms.hpp"

namespace gather {

namespace {

using clock = std::chrono::steady_clock;

struct entry {
  std::string data;
  clock::time_point fresh_until;
  clock::time_point stale_until;
  std::list<std::string>::iterator lru; ///< position in the recency list (front: newest)
};

struct waiter {
  caf::actor_addr who;
  caf::typed_response_promise<cache_answer> promise;
};

struct flight {
  caf::actor_addr leader;
  std::vector<waiter> waiters;
};

struct cache_shard_state {
  cache_limits limits;
  std::unordered_map<std::string, entry> entries;
  std::list<std::string> recency;
  std::size_t bytes = 0;
  std::unordered_map<std::string, flight> flights;
  std::unordered_map<caf::actor_addr, std::string> led; ///< leader -> the key it calls for
  std::shared_ptr<mailbox_gauge> mailbox;
  static inline const char* name = "section_cache";
};

using shard_ptr = caf::stateful_actor<cache_shard_state>*;

cache_answer answer(cache_answer::kind what) {
  cache_answer a;
  a.what = what;
  return a;
}

void erase(cache_shard_state& st, std::unordered_map<std::string, entry>::iterator it) {
  st.bytes -= it->first.size() + it->second.data.size();
  st.recency.erase(it->second.lru);
  st.entries.erase(it);
}

void store(cache_shard_state& st, const std::string& key, std::string data, millis ttl, millis stale) {
  if (auto old = st.entries.find(key); old != st.entries.end())
    erase(st, old);
  const auto size = key.size() + data.size();
  if (size > st.limits.max_bytes)
    return;
  while (!st.recency.empty() &&
         (st.entries.size() >= st.limits.max_entries || st.bytes + size > st.limits.max_bytes))
    erase(st, st.entries.find(st.recency.back()));
  st.recency.push_front(key);
  const auto now = clock::now();
  st.entries.emplace(key, entry{std::move(data), now + ttl, now + ttl + stale, st.recency.begin()});
  st.bytes += size;
}

/// Expired data still inside its stale window, or "".
std::string stale_data(cache_shard_state& st, const std::string& key) {
  auto it = st.entries.find(key);
  if (it == st.entries.end())
    return {};
  if (clock::now() > it->second.stale_until) {
    erase(st, it);
    return {};
  }
  return it->second.data;
}

/// The leader is gone without reporting: the first waiter takes the flight over.
void hand_over(shard_ptr self, const std::string& key) {
  auto& st = self->state;
  auto it = st.flights.find(key);
  if (it == st.flights.end())
    return;
  auto& f = it->second;
  if (f.waiters.empty()) {
    st.flights.erase(it);
    return;
  }
  auto next = std::move(f.waiters.front());
  f.waiters.erase(f.waiters.begin());
  f.leader = next.who;
  st.led[next.who] = key;
  if (auto strong = caf::actor_cast<caf::actor>(next.who))
    self->monitor(strong);
  next.promise.deliver(answer(cache_answer::kind::lead));
}

/// Called first in the handlers of the messages shard_for() counted as posted.
void note_mailbox(shard_ptr self) {
  self->state.mailbox->handle();
}

caf::behavior cache_shard(caf::stateful_actor<cache_shard_state>* self, cache_limits limits,
                          std::shared_ptr<mailbox_gauge> mailbox) {
  self->state.limits = limits;
  self->state.mailbox = std::move(mailbox);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    auto it = st.led.find(down.source);
    if (it == st.led.end())
      return;
    auto key = std::move(it->second);
    st.led.erase(it);
    hand_over(self, key);
  });
  return {
    [self](lookup_atom, const std::string& key) -> caf::result<cache_answer> {
      note_mailbox(self);
      auto& st = self->state;
      if (auto it = st.entries.find(key); it != st.entries.end() && clock::now() <= it->second.fresh_until) {
        st.recency.splice(st.recency.begin(), st.recency, it->second.lru);
        auto hit = answer(cache_answer::kind::hit);
        hit.data = it->second.data;
        return hit;
      }
      auto who = caf::actor_cast<caf::actor_addr>(self->current_sender()); // before the promise clears it
      if (!who)
        return answer(cache_answer::kind::lead); // nobody to answer later (and CAF cannot hash a null address)
      if (auto f = st.flights.find(key); f != st.flights.end()) {
        auto promise = self->make_response_promise<cache_answer>();
        f->second.waiters.push_back(waiter{who, promise});
        return promise;
      }
      st.flights.emplace(key, flight{who, {}});
      st.led[who] = key;
      if (auto strong = caf::actor_cast<caf::actor>(who))
        self->monitor(strong);
      return answer(cache_answer::kind::lead);
    },
    [self](limits_atom, std::size_t max_entries, std::size_t max_bytes) {
      auto& st = self->state; // a reload: the least recently used go first, as when storing
      st.limits = cache_limits{max_entries, max_bytes};
      while (!st.recency.empty() && (st.entries.size() > max_entries || st.bytes > max_bytes))
        erase(st, st.entries.find(st.recency.back()));
    },
    [self](store_atom, const std::string& key, section_status status, const std::string& data,
           std::int32_t attempts, std::int32_t last_http, std::int64_t ttl_ms, std::int64_t stale_ms) -> std::string {
      note_mailbox(self);
      auto& st = self->state;
      if (status == section_status::ok)
        store(st, key, data, millis{ttl_ms}, millis{stale_ms});
      auto joined = answer(cache_answer::kind::joined);
      joined.status = status;
      joined.data = data;
      joined.attempts = attempts;
      joined.last_http = last_http;
      if (status != section_status::ok)
        joined.stale = stale_data(st, key);
      if (auto f = st.flights.find(key); f != st.flights.end()) {
        st.led.erase(f->second.leader);
        if (auto strong = caf::actor_cast<caf::actor>(f->second.leader))
          self->demonitor(strong);
        for (auto& w : f->second.waiters)
          w.promise.deliver(joined);
        st.flights.erase(f);
      }
      return joined.stale;
    },
  };
}

} // namespace

void mailbox_gauge::post() {
  const auto p = posted.fetch_add(1, std::memory_order_relaxed) + 1;
  const auto h = handled.load(std::memory_order_relaxed);
  // A racy maximum (two posters may both raise it and the larger lose): good enough for a gauge.
  if (p > h && p - h > peak.load(std::memory_order_relaxed))
    peak.store(p - h, std::memory_order_relaxed);
}

std::size_t mailbox_gauge::depth() const {
  const auto p = posted.load(std::memory_order_relaxed);
  const auto h = handled.load(std::memory_order_relaxed);
  return p > h ? p - h : 0; // handled may be read after newer posts were handled
}

cache_limits section_cache::per_shard(cache_limits limits, std::size_t shards) {
  return {std::max<std::size_t>(1, limits.max_entries / shards),
          std::max<std::size_t>(1, limits.max_bytes / shards)};
}

section_cache::section_cache(caf::actor_system& system, cache_limits limits, std::size_t shards) {
  for (std::size_t i = 0; i < shards; ++i) {
    mailboxes_.push_back(std::make_shared<mailbox_gauge>());
    shards_.push_back(system.spawn(cache_shard, per_shard(limits, shards), mailboxes_.back()));
  }
}

section_cache::~section_cache() {
  for (const auto& shard : shards_)
    caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
}

const caf::actor& section_cache::shard_for(const std::string& key) {
  const auto i = std::hash<std::string>{}(key) % shards_.size();
  mailboxes_[i]->post();
  return shards_[i];
}

void section_cache::resize(cache_limits limits) {
  const auto each = per_shard(limits, shards_.size());
  for (const auto& shard : shards_)
    caf::anon_send(shard, limits_atom::value, each.max_entries, each.max_bytes);
}

std::string cache_scope(const std::string& route_path, const section_config& section) {
  // The projection as JSON text: escaped, so it holds no NUL of its own.
  return route_path + '\0' + section.name + '\0' + nlohmann::json(section.fields).dump() + '\0' +
         std::to_string(section.max_items);
}

std::string cache_key(const std::string& scope, const std::string& url,
                      const std::vector<std::string>& forwarded_header_lines) {
  // NUL cannot occur in a URL, a header line, a route path or a section name: the parts cannot
  // run into each other.
  std::string key = scope + '\0' + url;
  for (const auto& line : forwarded_header_lines) {
    key += '\0';
    key += line;
  }
  return key;
}

} // namespace gather
