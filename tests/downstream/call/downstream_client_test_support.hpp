// What the downstream client's tests (tests/downstream/call/downstream_client_*_test.cpp) share:
// a request for a URL, a call waited for, and the milliseconds since a point in time.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "gather/downstream/call/downstream_client.hpp"

namespace gather::test::downstream_client_support {

inline transfer_request request_for(const std::string& url,
                                    std::chrono::milliseconds timeout = std::chrono::seconds{5}) {
  transfer_request request;
  request.url = url;
  request.timeout = timeout;
  return request;
}

// Submits and waits for the completion; fails the test if it does not come within 10 s.
inline transfer_result fetch_request(downstream_client& client, transfer_request request) {
  auto promise = std::make_shared<std::promise<transfer_result>>();
  auto future = promise->get_future();
  client.submit(std::move(request), [promise](transfer_result&& r) { promise->set_value(std::move(r)); });
  REQUIRE(future.wait_for(std::chrono::seconds{10}) == std::future_status::ready);
  return future.get();
}

inline long elapsed_ms(std::chrono::steady_clock::time_point since) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - since).count());
}

} // namespace gather::test::downstream_client_support
