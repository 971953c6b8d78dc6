// The section worker's steps that its files share: section_worker.cpp (the actor, its attempts,
// calls, hedges and retries), section_worker_guard.cpp (bulkhead, circuit, retry budget),
// section_worker_cache.cpp (a cached section's lookup and flight), section_worker_shared.cpp (its
// way through the shared store), section_worker_remote.cpp (an attempt run on a cluster node).
#pragma once

#include <caf/stateful_actor.hpp>

#include "gather/actors/section_worker.hpp"

namespace gather::worker_steps {

using clock = std::chrono::steady_clock;
using worker_ptr = caf::stateful_actor<section_worker_state>*;

/// What is left until the request's deadline, at least 1 ms.
millis time_left(const section_worker_state& st);
/// Answers the coordinator once, then quits.
void reply(worker_ptr self, section_outcome&& outcome);
/// The section's end: its counts into the outcome, through the cache flight if it leads one.
void finish(worker_ptr self, section_outcome&& outcome);
/// An attempt: admitted by the guard, then run here or on a cluster node.
void execute(worker_ptr self);
void retry_or_finish(worker_ptr self, bool retryable, section_outcome&& outcome);

// section_worker_guard.cpp
/// The bulkhead and the circuit admit an attempt (first or retry) with its bulkhead slot (empty
/// without a guard), or the section ends here.
std::optional<concurrency_limit::slot> admit(worker_ptr self);
/// An attempt admitted by the circuit ended: it counts in the window, or it was the probe.
void circuit_record(worker_ptr self, bool failed);
/// A hedge asks the host's budget; false (counted) when it has no room (a retry: the runner).
bool budget_allows_extra(worker_ptr self);

// section_worker_cache.cpp
void look_up(worker_ptr self);
void finish_flight(worker_ptr self, section_outcome&& outcome);

// section_worker_shared.cpp
/// The section keeps its entries in the shared store and the store is up (when it is down, the
/// look it would have made is counted as skipped).
bool shared_cache_on(const section_worker_state& st);
/// After a miss in the gateway's own cache: the shared store's entry, its lock, or a wait.
void shared_look_up(worker_ptr self);
void shared_found(worker_ptr self, std::int32_t what, std::string& data, std::int64_t fresh_ms);
void shared_poll(worker_ptr self);
/// A flight's outcome: ok data goes to the shared store when this worker called for it (took
/// the lock, or gave up waiting); the lock it holds is let go of, ok or not.
void shared_call_ended(worker_ptr self, const section_outcome& outcome);
// section_worker_remote.cpp
void run_remote(worker_ptr self, std::size_t node, caf::actor actor, concurrency_limit::slot slot);
void node_failed(worker_ptr self, const std::string& why);

} // namespace gather::worker_steps
