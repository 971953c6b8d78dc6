// The coordinator: one actor per inbound aggregate request (see actors/coordinator.cpp).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"
#include "gather/ops/inflight_registry.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/actors/reply_sink.hpp"
#include "gather/actors/start_gate.hpp"
#include "gather/values/answer_format.hpp"
#include "gather/values/section_outcome.hpp"
#include "gather/actors/section_worker.hpp"

namespace gather {

class progressive_answer; // app/answer: the actors' own dependency, not their callers'

/// Everything one aggregate request needs, handed over by the HTTP front. The front also owns the
/// request's clock: it sends the coordinator `deadline_atom` when `deadline`
/// passes, from the connection's timer on its event loop (CAF's clock thread would cost a thread
/// wake-up per request, and the dead coordinator's memory would live until a delayed_send fired).
struct aggregate_job {
  aggregate_job(const process_services& s, std::shared_ptr<const serving_config> generation)
    : services(s), serving(std::move(generation)) {}

  const process_services& services;
  std::shared_ptr<const serving_config> serving; ///< the generation the request began on: owns `route`
  const route_config* route = nullptr;
  std::size_t route_index = 0;
  inbound_request inbound;
  steady_time deadline; ///< the route's deadline, or sooner when the client's deadline header asks
  std::shared_ptr<reply_sink> reply; ///< where the answer goes
  answer_format format = answer_format::json; ///< whole, or progressive (NDJSON, SSE)
  /// Null, or a decision to wait for before anything starts (a shared limit's exact mode).
  std::shared_ptr<start_gate> gate;
};

struct coordinator_state {
  enum class phase : std::uint8_t { waiting, running, done };

  /// One section's progress in this request. One vector of them, not one vector per field: each
  /// vector was an allocation per request and its fill (~300 instructions a four-section request).
  struct section_slot {
    phase at = phase::waiting; ///< where the section is
    steady_time started;                 ///< when its worker was spawned
    std::optional<nlohmann::json> parsed; ///< its data, parsed once if other sections read it
    /// Its worker while it runs: told to stop when the coordinator ends, however it ends (its state
    /// goes then). A worker that answered has quit by itself and is forgotten.
    caf::actor worker;
  };

  std::shared_ptr<const aggregate_job> job;
  steady_time deadline;
  std::vector<section_slot> sections;
  std::vector<section_outcome> outcomes; ///< apart: the answer and the log line read them whole
  std::size_t open = 0;                  ///< sections not yet done
  std::shared_ptr<request_progress> progress; ///< shared with the workers
  std::shared_ptr<inflight_entry> inflight; ///< what /debug/actors shows of this request
  /// The calls' header lines (downstream_header_lines), made for the first section that starts
  /// and kept for every later one that forwards the same headers (`lines_for`).
  std::string header_lines;
  const std::vector<std::string>* lines_for = nullptr;
  /// A progressive answer's events (format ndjson or sse); `pending` holds those made before the
  /// head may leave (a required section still running), `opened` once it has.
  std::shared_ptr<progressive_answer> stream; ///< shared: complete only in coordinator.cpp
  std::vector<std::string> pending;
  bool opened = false;

  ~coordinator_state();
  static inline const char* name = "coordinator";
};

caf::behavior coordinator(caf::stateful_actor<coordinator_state>* self,
                          std::shared_ptr<const aggregate_job> job);

} // namespace gather
