// The pool of one event loop as its two clients hold it (gather/downstream/pool/origin_pool.hpp
// is its socket-free form): an HTTP/1.1 link at rest owned by the pool, an HTTP/2 link shared with
// the handlers of its socket, a transfer waiting for an ALPN answer shared with its own. Owned by
// the loop's loop_client, before its clients (they are gone first); private to app/downstream/.
#pragma once

#include <memory>

#include "gather/downstream/pool/origin_pool.hpp"

#include "pool/origin_connection.hpp"

namespace gather::downstream_loop {

class h2_link;
struct transfer;

using downstream_pool = loop_pool<std::unique_ptr<origin_connection>, std::shared_ptr<h2_link>, std::shared_ptr<transfer>>;

} // namespace gather::downstream_loop
