// A route's write for one request (docs/api.md#write-routes): what its call carries beyond a
// section's. Made by the coordinator when the write starts, first and alone.
#pragma once

#include <optional>

#include "gather/actors/section_worker.hpp"
#include "gather/config/config.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// Sets the write's part of `call`: its method and body (the `body` template rendered, or the
/// client's body as it came) with Content-Type: application/json, the client's Idempotency-Key,
/// and a timeout that ends no later than the request's deadline (a write is not cancelled when
/// the client goes, so the deadline must bound it by itself). nullopt, or the write's end with no
/// call (a body template whose value cannot be text).
std::optional<section_outcome> prepare_write(section_call& call, const section_config& write,
                                             const inbound_request& in);

/// `Idempotency-Key` goes to the write and to no other call, even one that forwards it.
void keep_idempotency_key_from_reads(section_call& call, const section_config& section);

} // namespace gather
