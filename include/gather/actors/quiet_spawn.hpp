// A request's actors spawned the way CAF's spawn does, without telling the spawning thread of the
// system's logger.
//
// Debian's CAF is built with a logger at level quiet: it logs nothing, but CAF's spawn
// (actor_system::spawn_impl) hands the spawning thread the system's logger every time, and while a
// thread holds it, every launch, resume and exit of an actor pays its bookkeeping: a lock and a hash
// map keyed by the thread's id, twice each (`logger::thread_local_aid`). The loops forget it before
// each resume (loop_scheduler.cpp); a spawn inside a resume set it again for the rest of that
// resume: ~1.7k instructions of a four-section request (docs/performance.md, "The fifth round").
// Everything else is spawn_impl's, step for step: a new id, the actor made, then launched on the
// spawning actor's execution unit (or the system's dummy one, which goes through the scheduler).
#pragma once

#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_config.hpp>
#include <caf/actor_system.hpp>
#include <caf/config.hpp>
#include <caf/detail/init_fun_factory.hpp>
#include <caf/detail/spawnable.hpp>
#include <caf/infer_handle.hpp>
#include <caf/make_actor.hpp>

// spawn_impl's steps are CAF 0.17's: check them against another release before moving the bound.
#if CAF_VERSION < 1700 || CAF_VERSION >= 1800
#error "quiet_spawn is written against caf::actor_system::spawn_impl of CAF 0.17"
#endif

namespace gather {

/// Spawns the function-based actor `fun(self, xs...)` in `system`, launched on `host` (null: from
/// outside any actor), with no spawn options: what `system.spawn(fun, xs...)` or, with the
/// spawning actor's `context()` as host, `self->spawn(fun, xs...)` does, minus the logger.
template <class F, class... Ts>
caf::infer_handle_from_fun_t<F> quiet_spawn(caf::actor_system& system, caf::execution_unit* host,
                                            F fun, Ts&&... xs) {
  using impl = caf::infer_impl_from_fun_t<F>;
  using handle_type = caf::infer_handle_from_fun_t<F>;
  static_assert(caf::detail::spawnable<F, impl, Ts...>(),
                "cannot spawn function-based actor with given arguments");
  caf::actor_config cfg{host != nullptr ? host : system.dummy_execution_unit()};
  caf::detail::init_fun_factory<impl, F> factory;
  cfg.init_fun = factory(std::move(fun), std::forward<Ts>(xs)...);
  auto handle = caf::make_actor<impl, handle_type>(system.next_actor_id(), system.node(), &system, cfg);
  static_cast<impl*>(caf::actor_cast<caf::abstract_actor*>(handle))->launch(cfg.host, false, false);
  return handle;
}

} // namespace gather
