// A cached section's worker (docs/cache.md): it asks the cache first, and a flight's leader reports
// its outcome so that waiters get it and ok data is stored.
#include <caf/all.hpp>

#include "gather/actors/messages.hpp"
#include "gather/actors/section_cache.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/values/atoms.hpp"
#include "section_worker_steps.hpp"

namespace gather::worker_steps {

namespace {

void count_cache(worker_ptr self, cache_event event) {
  auto& st = self->state;
  st.serving->counters.cache(st.call->route, st.call->index, event);
}

/// A failed call whose cache entry expired recently shows that entry instead of its fallback.
void use_stale(worker_ptr self, section_outcome& outcome, std::string stale) {
  if (stale.empty())
    return;
  outcome.source = data_source::stale;
  outcome.data = std::move(stale);
  count_cache(self, cache_event::stale);
}

} // namespace

/// The leader of a cache flight reports its outcome, so that waiters get it and ok data is stored.
/// A failure waits for the cache's answer: it may carry stale data to show instead of the fallback.
void finish_flight(worker_ptr self, section_outcome&& outcome) {
  auto& st = self->state;
  const auto& shard = st.services->cache.shard_for(st.call->cache_key);
  const auto ttl = static_cast<std::int64_t>(st.call->cache_ttl.count());
  const auto stale = static_cast<std::int64_t>(st.call->stale_ttl.count());
  shared_call_ended(self, outcome);
  if (outcome.status == section_status::ok) {
    self->send(shard, store_atom::value, st.call->cache_key, outcome.status, outcome.data,
               outcome.attempts, outcome.last_http, ttl, stale);
    return reply(self, std::move(outcome));
  }
  self->request(shard, time_left(st), store_atom::value, st.call->cache_key, outcome.status,
                std::string{}, outcome.attempts, outcome.last_http, ttl, stale)
    .then(
      [self, outcome](std::string& stale_data) mutable {
        // The gateway's own stale entry, else the shared store's.
        use_stale(self, outcome, stale_data.empty() ? std::move(self->state.shared_stale) : std::move(stale_data));
        reply(self, std::move(outcome));
      },
      [self, outcome](caf::error&) mutable {
        use_stale(self, outcome, std::move(self->state.shared_stale));
        reply(self, std::move(outcome));
      });
}

/// Cached sections ask the cache first: a hit or a joined flight needs no call of its own.
void look_up(worker_ptr self) {
  auto& st = self->state;
  self->request(st.services->cache.shard_for(st.call->cache_key), time_left(st), lookup_atom::value,
                st.call->cache_key)
    .then(
      [self](cache_answer& answer) {
        section_outcome outcome;
        switch (answer.what) {
          case cache_answer::kind::lead:
            count_cache(self, cache_event::miss);
            if (shared_cache_on(self->state))
              return shared_look_up(self);
            return execute(self);
          case cache_answer::kind::hit:
            count_cache(self, cache_event::hit);
            outcome.status = section_status::ok;
            outcome.source = data_source::cache;
            outcome.data = std::move(answer.data);
            return reply(self, std::move(outcome));
          case cache_answer::kind::joined:
            count_cache(self, cache_event::coalesced);
            outcome.status = answer.status;
            outcome.attempts = answer.attempts; // the shared call's, as docs/cache.md says
            outcome.last_http = answer.last_http;
            outcome.detail = "joined another request's call";
            if (answer.status == section_status::ok)
              outcome.data = std::move(answer.data);
            else
              use_stale(self, outcome, std::move(answer.stale));
            return reply(self, std::move(outcome));
        }
      },
      [self](caf::error&) { execute(self); }); // no answer from the cache: call anyway
}

} // namespace gather::worker_steps
