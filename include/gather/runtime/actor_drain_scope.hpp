// Where a loop's handler lets the actors it woke run: at its end, in the same handler.
//
// An actor made ready on a loop's thread runs in a drain of that loop (loop_scheduler.cpp).
// Posted, that drain waits behind the loop's next epoll poll: Asio queues what a handler posts
// after its reactor, so each request the front read cost a poll that found nothing and a posted
// handler before its coordinator ran. The front's read handlers hold an actor_drain_scope: the
// coordinators they spawned run when the scope ends, before the handler returns to the loop.
//
//      front read ──> request parsed ──> spawn(coordinator) ──> (ready, waits)
//          │
//          └── scope ends ──> drain: the coordinator runs, spawns its workers, the calls go out
//
// The downstream client's reads hold none, on purpose: answers that arrive in one poll then
// wake their workers in one posted drain, and the coordinator once for all of them; drained per
// read, the coordinator ran once per answer (S1: 13 actor resumes a request instead of 10, ~1k
// instructions more than the poll saved; docs/performance-history.md).
//
// Held at the top of a handler, so that everything the handler does comes first; nested scopes
// drain once, when the outermost ends. A scope left by an exception posts the drain instead.
#pragma once

namespace gather {

class actor_drain_scope {
public:
  actor_drain_scope() noexcept;
  ~actor_drain_scope();
  actor_drain_scope(const actor_drain_scope&) = delete;
  actor_drain_scope& operator=(const actor_drain_scope&) = delete;
};

} // namespace gather
