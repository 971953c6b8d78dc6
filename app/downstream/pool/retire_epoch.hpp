// How the loops learn that endpoints left their upstreams (docs/upstreams.md): a count the tables
// raise each time some endpoint's target is retired. A loop's clients compare it with the count
// they last saw at the start of each call (one relaxed load) and, when it moved, close their idle
// connections to retired endpoints and drain their HTTP/2 links. A loop that makes no call closes
// them at their idle timeout. Private to app/downstream/.
#pragma once

#include <atomic>
#include <cstdint>

namespace gather {

std::atomic<std::uint64_t>& retire_epoch();

} // namespace gather
