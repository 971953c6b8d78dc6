// A section with `cache_shared` (docs/shared.md, "Shared cache"): after a miss in the gateway's
// own cache, its flight's leader looks in the shared store; on a miss there too, one call is
// made across all gateways: the first takes a lock in the store (expiring with the section's
// timeout) and calls, the others wait for its entry while a call of their own would still fit
// before the request's deadline, then call themselves. Whatever goes wrong with the store ends
// in an ordinary call: the store only ever saves calls.
//
// An entry is "gather-cache-1\n" and the section's data (JSON); the store's TTL is its life plus
// stale_ttl_ms, so an entry whose TTL is at most stale_ttl_ms is stale (stale-if-error only).
// A value that is not such an entry is a miss, and the next call's entry replaces it.
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
/// How often a waiting gateway looks for the lock holder's entry.
constexpr millis poll_every{10};

/// The value and its remaining TTL in ms, in one round trip ({"", -2}: none, or another type).
constexpr const char* get_script = R"lua(
local v = redis.pcall('GET', KEYS[1])
if type(v) ~= 'string' then return {'', -2} end
return {v, redis.call('PTTL', KEYS[1])}
)lua";

/// Lets go of the lock only if it is still ours.
constexpr const char* unlock_script = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
)lua";

/// What the store said, as the worker's message carries it.
enum class found : std::int32_t { fresh, stale, miss, failed, locked, lock_held };

std::string entry_key(const section_worker_state& st) {
  return st.serving->store->cfg().prefix + "cache:" + store_key_hash(st.call.cache_key);
}

void count(worker_ptr self, cache_event event) {
  auto& st = self->state;
  st.serving->counters.cache(st.call.route, st.call.index, event);
}

/// The lookup: the entry's state reaches the worker as a message.
void ask_entry(worker_ptr self) {
  auto& st = self->state;
  const auto stale_ms = st.call.stale_ttl.count();
  auto me = caf::actor_cast<caf::actor>(self);
  st.serving->store->call(
      store_op::get, {"EVAL", get_script, "1", entry_key(st)},
      [me, stale_ms](store_result result, const resp_value& value) {
        if (result != store_result::ok) {
          caf::anon_send(me, shared_atom::value, static_cast<std::int32_t>(found::failed), std::string{},
                         std::int64_t{0});
          return true;
        }
        if (!value.is_array() || value.items.size() != 2 || !value.items[0].is_string() ||
            !value.items[1].is_integer()) {
          caf::anon_send(me, shared_atom::value, static_cast<std::int32_t>(found::failed), std::string{},
                         std::int64_t{0});
          return false; // not what was asked for: a store error
        }
        const auto& text = value.items[0].text;
        const auto ttl = value.items[1].integer;
        const bool valid = ttl > 0 && text.compare(0, entry_magic.size(), entry_magic) == 0 &&
                           nlohmann::json::accept(text.begin() + entry_magic.size(), text.end());
        const auto what = !valid ? found::miss : ttl > stale_ms ? found::fresh : found::stale;
        caf::anon_send(me, shared_atom::value, static_cast<std::int32_t>(what),
                       valid ? text.substr(entry_magic.size()) : std::string{},
                       static_cast<std::int64_t>(ttl - stale_ms));
        return true;
      });
}

/// Asks for the lock: ours (`locked`) or another gateway's (`lock_held`).
void take_lock(worker_ptr self) {
  auto& st = self->state;
  auto me = caf::actor_cast<caf::actor>(self);
  st.shared_token = std::to_string(reinterpret_cast<std::uintptr_t>(self)) + "-" +
                    std::to_string(clock::now().time_since_epoch().count());
  st.serving->store->call(
      store_op::lock,
      {"SET", entry_key(st) + ":lock", st.shared_token, "NX", "PX", std::to_string(st.call.work.timeout_ms)},
      [me](store_result result, const resp_value& value) {
        const bool ok = result == store_result::ok &&
                        (value.what == resp_value::type::nil ||
                         (value.what == resp_value::type::status && value.text == "OK"));
        const auto what = !ok ? found::failed
                          : value.what == resp_value::type::nil ? found::lock_held : found::locked;
        caf::anon_send(me, shared_atom::value, static_cast<std::int32_t>(what), std::string{}, std::int64_t{0});
        return result != store_result::ok || ok;
      });
}

/// A wait for another gateway's entry is worth it while a call of our own still fits after it.
bool may_wait(const section_worker_state& st) {
  return clock::now() + poll_every + millis(st.call.work.timeout_ms) < st.call.deadline;
}

void call_ourselves(worker_ptr self) {
  self->state.shared_leader = true; // our entry is stored, as the lock holder's would have been
  execute(self);
}

} // namespace

bool shared_cache_on(const section_worker_state& st) {
  return st.call.cache_shared && st.serving->store && st.serving->store->up();
}

void shared_look_up(worker_ptr self) {
  self->state.shared_phase = 1;
  ask_entry(self);
}

void shared_found(worker_ptr self, std::int32_t what_number, std::string& data, std::int64_t fresh_ms) {
  auto& st = self->state;
  const auto what = static_cast<found>(what_number);
  switch (what) {
    case found::fresh: {
      count(self, cache_event::shared_hit);
      // Kept here no longer than the store keeps it fresh.
      st.call.cache_ttl = std::min(st.call.cache_ttl, millis(std::max<std::int64_t>(1, fresh_ms)));
      section_outcome outcome;
      outcome.status = section_status::ok;
      outcome.source = data_source::cache;
      outcome.data = std::move(data);
      return finish_flight(self, std::move(outcome));
    }
    case found::stale:
      st.shared_stale = std::move(data); // shown if the call fails
      [[fallthrough]];
    case found::miss:
      if (st.shared_phase == 1)
        return take_lock(self);
      break; // waiting: look again below
    case found::failed:
      return execute(self); // the store saves nothing this time
    case found::locked:
      return call_ourselves(self);
    case found::lock_held:
      count(self, cache_event::shared_wait);
      st.shared_phase = 2;
      break;
  }
  if (!may_wait(st))
    return call_ourselves(self);
  self->delayed_send(self, poll_every, poll_atom::value);
}

void shared_poll(worker_ptr self) {
  ask_entry(self);
}

void shared_store_entry(worker_ptr self, const std::string& data) {
  auto& st = self->state;
  if (!st.shared_leader || !st.serving->store)
    return;
  const auto key = entry_key(st);
  const auto life = st.call.cache_ttl + st.call.stale_ttl;
  std::string value;
  value.reserve(entry_magic.size() + data.size());
  value.append(entry_magic).append(data);
  const auto ok_status = [](store_result result, const resp_value& value) {
    return result != store_result::ok || value.what == resp_value::type::status;
  };
  st.serving->store->call(store_op::set, {"SET", key, std::move(value), "PX", std::to_string(life.count())},
                          ok_status);
  if (!st.shared_token.empty())
    st.serving->store->call(store_op::lock, {"EVAL", unlock_script, "1", key + ":lock", st.shared_token},
                            [](store_result result, const resp_value& value) {
                              return result != store_result::ok || value.is_integer();
                            });
}

} // namespace gather::worker_steps
