// The batch coordinator: one actor per inbound batch request (see actors/batch_coordinator.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/stateful_actor.hpp>

#include "gather/actors/attempt_runner.hpp"
#include "gather/downstream/answer/batch_plan.hpp"
#include "gather/config/config.hpp"
#include "gather/tracing/call_span.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/actors/reply_sink.hpp"
#include "gather/actors/start_gate.hpp"
#include "gather/values/answer_format.hpp"
#include "gather/values/section_outcome.hpp"
#include "gather/actors/section_worker.hpp"

namespace gather {

class retry_budget;

/// Everything one batch request needs, handed over by the HTTP front with its body already parsed.
/// As for aggregate_job, the front sends `deadline_atom` when the batch's deadline passes.
struct batch_job {
  batch_job(const process_services& s, std::shared_ptr<const serving_config> generation)
    : services(s), serving(std::move(generation)) {}

  const process_services& services;
  std::shared_ptr<const serving_config> serving; ///< the generation the request began on: owns `route`
  const route_config* route = nullptr; ///< a batch route: `route->batch` is set
  std::size_t route_index = 0;         ///< the route's position in the config
  inbound_request inbound;
  steady_time deadline; ///< the batch's deadline, or sooner when the client's deadline header asks
  batch_plan plan;
  std::shared_ptr<reply_sink> reply; ///< where the answer goes
  answer_format format = answer_format::json; ///< whole, or progressive (NDJSON, SSE)
  /// Null, or a decision to wait for before anything starts (a shared limit's exact mode).
  std::shared_ptr<start_gate> gate;
};

struct batch_coordinator_state {
  enum class phase : std::uint8_t { waiting, running, done };

  std::shared_ptr<const batch_job> job;
  steady_time deadline;
  std::string header_lines;          ///< the same for every call (downstream_header_lines)
  std::vector<phase> phases;         ///< per call
  std::vector<section_outcome> outcomes;
  std::vector<steady_time> started;
  /// Per call: its attempts (the call in flight and its span, the calls made, the upstream's
  /// endpoints they went to).
  std::vector<attempt_runner> runners;
  std::size_t next_call = 0;            ///< calls start in order: every call from here is waiting
  std::size_t running = 0;              ///< calls started and not done (backoff included)
  std::size_t open = 0;                 ///< calls not done
  std::shared_ptr<std::atomic<bool>> answered = std::make_shared<std::atomic<bool>>(false);
  retry_budget* budget = nullptr;       ///< of the batch url's host:port
  bool opened = false;                  ///< a progressive answer's head has left
  std::vector<std::vector<std::size_t>> rows_of_call; ///< progressive answers: the rows each call serves

  ~batch_coordinator_state(); ///< its runners cancel the calls still in flight: none outlives it
  static inline const char* name = "batch_coordinator";
};

caf::behavior batch_coordinator(caf::stateful_actor<batch_coordinator_state>* self,
                                std::shared_ptr<const batch_job> job);

} // namespace gather
