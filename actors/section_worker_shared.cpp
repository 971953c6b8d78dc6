// A section with `cache_shared` (docs/shared.md, "Shared cache"): after a miss in the gateway's
// own cache, its flight's leader looks in the shared store; on a miss there too, one call is
// made across all gateways: the first takes a lock in the store (expiring with the section's
// timeout) and calls, the others wait for its entry while a call of their own would still fit
// before the request's deadline, then call themselves. The look and the lock are one script,
// one round trip. Whatever goes wrong with the store ends in an ordinary call: the store only
// ever saves calls.
//
// An entry is "gather-cache-1\n" and the section's data (JSON); the store's TTL is its life plus
// stale_ttl_ms, so an entry whose TTL is at most stale_ttl_ms is stale (stale-if-error only).
// A value that is not such an entry is a miss, and the next call's entry replaces it.
// The lock holder lets go of the lock when its call ends, ok or not: after a failed call the
// next gateway to look takes the lock and calls (one call at a time across the gateways).
#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "gather/actors/process_services.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/shared/shared_store.hpp"
#include "gather/values/atoms.hpp"
#include "section_worker_steps.hpp"

namespace gather::worker_steps {

namespace {

constexpr std::string_view entry_magic = "gather-cache-1\n";
/// How often a waiting gateway looks for the lock holder's entry: a wait ends at most this late
/// after the entry arrives, for one small script per waiting request per pace.
constexpr millis poll_every{10};

/// The look and the lock in one round trip. KEYS: the entry, its lock; ARGV: stale_ttl_ms, this
/// worker's token, the lock's life (ms). Answers {value, its PTTL, 1 if this worker now holds
/// the lock}. A fresh entry (the magic, and more life left than its stale window) takes no
/// lock; a value of another type reads as "" (a miss that the call's SET replaces).
constexpr const char* look_script = R"lua(
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then v = '' end
local ttl = redis.call('PTTL', KEYS[1])
if string.sub(v, 1, 15) == 'gather-cache-1\n' and ttl > tonumber(ARGV[1]) then return {v, ttl, 0} end
local lock = redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3])
if lock then return {v, ttl, 1} end
return {v, ttl, 0}
)lua";

/// Lets go of the lock only if it is still ours.
constexpr const char* unlock_script = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

/// What the store said, as the worker's message carries it.
enum class found : std::int32_t {
  fresh,   ///< a valid entry within its life: a hit
  invalid, ///< a value with the magic and life left that is not JSON: call, and replace it
  locked,  ///< no fresh entry, and this worker took the lock: call
  held,    ///< no fresh entry, and another gateway holds the lock: wait for its entry
  failed   ///< the store did not answer as asked: call
};

std::string entry_key(const section_worker_state& st) {
  return st.serving->store->cfg().prefix + "cache:" + store_key_hash(st.call->cache_key);
}

void count(worker_ptr self, cache_event event) {
  auto& st = self->state;
  st.serving->counters.cache(st.call->route, st.call->index, event);
}

/// The look (and the lock, when no fresh entry is there): the answer reaches the worker as a
/// message; a stale entry comes with it (shown if the call fails).
void ask_entry(worker_ptr self) {
  auto& st = self->state;
  const auto stale_ms = st.call->stale_ttl.count();
  const auto key = entry_key(st);
  auto me = caf::actor_cast<caf::actor>(self);
  st.serving->store->call(
      store_op::get,
      {"EVAL", look_script, "2", key, key + ":lock", std::to_string(stale_ms), st.shared_token,
       std::to_string(st.call->work.timeout_ms)},
      [me, stale_ms](store_result result, const resp_value& value) {
        const auto tell = [&me](found what, std::string data) {
          caf::anon_send(me, shared_atom::value, static_cast<std::int32_t>(what), std::move(data), std::int64_t{0});
        };
        if (result != store_result::ok) {
          tell(found::failed, {});
          return true;
        }
        if (!value.is_array() || value.items.size() != 3 || !value.items[0].is_string() ||
            !value.items[1].is_integer() || !value.items[2].is_integer()) {
          tell(found::failed, {});
          return false; // not what was asked for: a store error
        }
        const auto& text = value.items[0].text;
        const auto ttl = value.items[1].integer;
        const bool magic = text.compare(0, entry_magic.size(), entry_magic) == 0;
        const bool entry = ttl > 0 && magic && nlohmann::json::accept(text.begin() + entry_magic.size(), text.end());
        std::string data = entry ? text.substr(entry_magic.size()) : std::string{};
        if (value.items[2].integer == 1) {
          tell(found::locked, std::move(data)); // data, if any, is stale
        } else if (magic && ttl > stale_ms) {
          if (!entry) {
            tell(found::invalid, {});
          } else {
            caf::anon_send(me, shared_atom::value, static_cast<std::int32_t>(found::fresh), std::move(data),
                           static_cast<std::int64_t>(ttl - stale_ms));
          }
        } else {
          tell(found::held, std::move(data));
        }
        return true;
      },
      st.call->store_time);
}

/// Waiting for another gateway's entry is worth it while a call of our own still fits after the
/// next look (its pace and, at worst, a look that spends what is left of the request's time with
/// the store) and that look can still be made.
bool may_wait(const section_worker_state& st) {
  const auto store_left = st.call->store_time ? st.call->store_time->left() : st.serving->store->cfg().timeout;
  return store_left.count() > 0 &&
         clock::now() + poll_every + store_left + millis(st.call->work.timeout_ms) < st.call->deadline;
}

/// A call of this worker's own, whose entry goes to the store (as the lock holder's would have).
void call_ourselves(worker_ptr self) {
  self->state.shared_leader = true;
  execute(self);
}

} // namespace

bool shared_cache_on(const section_worker_state& st) {
  if (!st.call->cache_shared || !st.serving->store)
    return false;
  if (st.serving->store->up())
    return true;
  st.serving->store->skipped(store_op::get); // the look it would have made
  return false;
}

void shared_look_up(worker_ptr self) {
  auto& st = self->state;
  st.shared_phase = 1;
  st.shared_token = std::to_string(reinterpret_cast<std::uintptr_t>(self)) + "-" +
                    std::to_string(clock::now().time_since_epoch().count());
  ask_entry(self);
}

void shared_found(worker_ptr self, std::int32_t what_number, std::string& data, std::int64_t fresh_ms) {
  auto& st = self->state;
  if (st.shared_phase != 1 && st.shared_phase != 2)
    return; // already calling: a late answer
  const auto what = static_cast<found>(what_number);
  if (!data.empty() && what != found::fresh)
    st.shared_stale = std::move(data); // shown if the call fails
  switch (what) {
    case found::fresh: {
      count(self, cache_event::shared_hit);
      st.shared_phase = 0;
      // Kept here no longer than the store keeps it fresh.
      st.call->cache_ttl = std::min(st.call->cache_ttl, millis(std::max<std::int64_t>(1, fresh_ms)));
      section_outcome outcome;
      outcome.status = section_status::ok;
      outcome.source = data_source::cache;
      outcome.data = std::move(data);
      return finish_flight(self, std::move(outcome));
    }
    case found::locked:
      st.shared_phase = 3;
      return call_ourselves(self);
    case found::invalid:
      st.shared_phase = 0;
      return call_ourselves(self); // its entry replaces the value
    case found::failed:
      st.shared_phase = 0;
      return execute(self); // the store saves nothing this time
    case found::held:
      if (st.shared_phase == 1)
        count(self, cache_event::shared_wait);
      st.shared_phase = 2;
      if (!may_wait(st)) {
        st.shared_phase = 0;
        return call_ourselves(self);
      }
      self->delayed_send(self, poll_every, poll_atom::value);
      return;
  }
}

void shared_poll(worker_ptr self) {
  if (self->state.shared_phase == 2)
    ask_entry(self);
}

void shared_call_ended(worker_ptr self, const section_outcome& outcome) {
  auto& st = self->state;
  if (!st.serving->store)
    return;
  const auto key = entry_key(st);
  if (st.shared_leader && outcome.status == section_status::ok) {
    const auto life = st.call->cache_ttl + st.call->stale_ttl;
    std::string value;
    value.reserve(entry_magic.size() + outcome.data.size());
    value.append(entry_magic).append(outcome.data);
    st.serving->store->call(store_op::set, {"SET", key, std::move(value), "PX", std::to_string(life.count())},
                            [](store_result result, const resp_value& answer) {
                              return result != store_result::ok || answer.what == resp_value::type::status;
                            },
                            st.call->store_time);
  }
  if (st.shared_phase == 3) // after the entry (one connection, in order): a waiter sees both at once
    st.serving->store->call(store_op::lock, {"EVAL", unlock_script, "1", key + ":lock", st.shared_token},
                            [](store_result result, const resp_value& answer) {
                              return result != store_result::ok || answer.is_integer();
                            },
                            st.call->store_time);
  st.shared_phase = 0;
  st.shared_leader = false;
}

} // namespace gather::worker_steps
