// Admission: the checks an inbound request passes before it may start, in the contract's order
// (docs/api.md): no_route (404), a CORS preflight's answer (204 or 403), method (405, and the
// route of the request's method among those that share a path), size (413), encoding and media
// type (415), overload (503), body (400: a batch's items, a write route's JSON). Each check looks at the request and either passes it on or ends it with a refusal value;
// nothing here counts, logs or writes (the front finishes the request's record with the refusal).
//
// To add a check (authentication, a rate limit, a CORS preflight's answer):
//   1. write one function `std::optional<refusal> check_NAME(admission_request&)` in its own file
//      in app/admission/ and declare it in app/admission/checks.hpp;
//   2. put it in its place in the ordered table `checks` in app/admission/admission.cpp.
// A check that needs the body returns nullopt while `request.body` is null (the first pass runs
// on the head alone, before the body is read). State a check keeps goes in the configuration
// generation (`serving_config`, built from the config in its constructor) or, when it must
// outlive reloads, in the gateway, reached through a reference added to admission_request.
// A check may also answer a request outright (a preflight's 204): the refusal's reply is sent as
// it is, and the request never starts.
#pragma once

#include <cstddef>
#include <optional>

#include "gather/values/store_budget.hpp"
#include <string>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "gather/actors/request_record.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/actors/start_gate.hpp"
#include "gather/config/route_table.hpp"
#include "gather/values/batch_item.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/values/request_head.hpp"

namespace gather {

/// How a request ends before it starts: the reply the client gets, and the log line's detail.
struct refusal {
  http_reply reply;
  std::string detail; ///< never sent; empty: "refused: <error code>"
};

/// One request at admission: what the checks read, and what they leave for starting it.
struct admission_request {
  /// Matches the route (once: every check and the request's start use this match).
  admission_request(const serving_config& serving, const request_head& head,
                    const std::string& request_id, gateway_stats& stats);

  const serving_config& serving;
  const request_head& head;
  const std::string& request_id;
  gateway_stats& stats;
  std::optional<route_match> match; ///< empty: no route matched
  /// The body, once read; null on the first pass (the head alone, before reading a body).
  const std::string* body = nullptr;

  // Left by the checks for the request's start:
  inflight_slot slot;            ///< taken by the overload check on the full pass
  std::vector<batch_item> items; ///< a batch route's items, read by the body check
  /// A write route's body, parsed by its body check (null for a DELETE without one).
  std::shared_ptr<const nlohmann::json> body_json;
  /// The route's gate (token, rate limit) ran: on the head's pass when there is one, never twice
  /// (a request spends one rate-limit token).
  bool gated = false;
  /// The verified token's claims on a route with auth (null otherwise), for the request's start.
  std::shared_ptr<const nlohmann::json> claims;
  /// Null, or what the request waits for before it starts (a shared limit's exact mode asking the
  /// store): the coordinator waits for it, and ends the request with its 429 if it refuses.
  std::shared_ptr<start_gate> gate;
  /// The request's time with the shared store (store_budget.hpp): null until a check asks the
  /// store or the request starts (shared_store_time).
  std::shared_ptr<store_budget> store_time;

  /// The matched route, or null.
  const route_config* route() const;
  /// The matched route's index, or the number of routes (the metrics' no_route).
  std::size_t route_index() const;
  /// `store_time`, made on first use: what every store operation of the request spends, the
  /// shared limit's and, once started, its sections'. Null when the generation has no store.
  std::shared_ptr<store_budget>& shared_store_time();
};

/// Runs the checks in order; the first refusal ends the request. nullopt: admitted (on the first
/// pass: the body may be read; on the full pass: the request may start, holding `slot`).
std::optional<refusal> admit(admission_request& request);

/// The refusal with status `status`, its contract error code and the request's id.
refusal refuse(int status, const std::string& request_id);

} // namespace gather
