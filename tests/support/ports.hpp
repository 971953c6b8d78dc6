// Loopback ports for tests that need one nobody serves.
#pragma once

namespace gather::test {

/// A TCP port nobody listens on right now (bound to 127.0.0.1:0, then let go).
int unused_port();

} // namespace gather::test
