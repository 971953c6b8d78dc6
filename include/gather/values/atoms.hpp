// The atoms Gather's actors speak (CAF 0.17 atoms: at most 10 characters of [0-9A-Za-z_ ]).
#pragma once

#include <caf/atom.hpp>

namespace gather {

using run_atom = caf::atom_constant<caf::atom("run")>;           ///< node -> its worker: start
using outcome_atom = caf::atom_constant<caf::atom("outcome")>;   ///< worker -> coordinator: its section ended
using deadline_atom = caf::atom_constant<caf::atom("deadline")>; ///< coordinator -> itself
using attempt_atom = caf::atom_constant<caf::atom("attempt")>;   ///< worker -> coordinator: a call started
using retry_atom = caf::atom_constant<caf::atom("retry")>;       ///< worker or batch -> itself, after backoff
using hedge_atom = caf::atom_constant<caf::atom("hedge")>;       ///< worker -> itself: the hedge delay passed
using done_atom = caf::atom_constant<caf::atom("done")>;         ///< client -> worker or batch: transfer ended
using lookup_atom = caf::atom_constant<caf::atom("lookup")>;     ///< worker -> cache: hit, lead or join?
using store_atom = caf::atom_constant<caf::atom("store")>;       ///< flight leader -> cache: the outcome
using limits_atom = caf::atom_constant<caf::atom("limits")>;     ///< gateway -> cache: new bounds (reload)
using hello_atom = caf::atom_constant<caf::atom("hello")>;       ///< gateway <-> node: protocol versions
using gate_atom = caf::atom_constant<caf::atom("gate")>;         ///< start gate -> coordinator: decided
using shared_atom = caf::atom_constant<caf::atom("shared")>;     ///< shared store -> worker: what it found
using poll_atom = caf::atom_constant<caf::atom("poll")>;         ///< worker -> itself: look in the store again
using work_atom = caf::atom_constant<caf::atom("work")>;         ///< gateway worker -> node: a section_work
using called_atom = caf::atom_constant<caf::atom("called")>;     ///< node worker -> gateway worker: a gRPC call's code

} // namespace gather
