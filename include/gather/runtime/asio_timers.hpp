// How Asio's reactors meet the clock in every file of this build. The top CMakeLists.txt forces
// this header in front of each translation unit, so every file compiles one Asio (the reactor's
// inline functions differ with the setting, and two versions in one binary would break the ODR).
//
// Without timerfd, an epoll reactor checks its timers each time epoll_wait returns, whatever woke
// it, and sleeps at most until the earliest timer, to the millisecond (with the kernel's timer
// slack). A call's timeout or a request's deadline then fires at the first wake-up of the
// millisecond it falls in, as nginx's timers do, instead of waking an idle loop at its exact
// nanosecond through a timerfd that a cancelled timer leaves armed. Timers can fire up to about
// a millisecond late, never early (docs/config.md, decision 20; measured in docs/performance.md,
// "Timers that ride on the loop's wake-ups").
// Asio 1.81 has no switch for it; its config defines BOOST_ASIO_HAS_TIMERFD once, behind an
// include guard, so undefining it here, after that header and before any other, is what holds.
#pragma once

#include <boost/asio/detail/config.hpp>

#undef BOOST_ASIO_HAS_TIMERFD
