// The benchmarks' gRPC downstream (bench/run.sh book, grpc_call): the demo's book service
// (linkd.v3.Library on libnghttp2, one thread of its own) at a pace the bench chooses.
//
//   grpc_downstream FIRST_MS STEP_MS PROTO_DIR
//
// Writes linkd/v3/library.proto and shop/v1/cart.proto (the demo cart of bench/run.sh write_route)
// under PROTO_DIR (what the gateway's protos.files compiles), prints
// its port on a line of its own, and serves until its standard input closes.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "demo/book_service.hpp"
#include "demo/cart.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: grpc_downstream FIRST_MS STEP_MS PROTO_DIR\n";
    return 64;
  }
  const std::filesystem::path dir = std::filesystem::path(argv[3]) / "linkd/v3";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "library.proto") << gather::demo_book_service::proto_text();
  std::filesystem::create_directories(std::filesystem::path(argv[3]) / "shop/v1");
  std::ofstream(std::filesystem::path(argv[3]) / "shop/v1/cart.proto") << gather::demo_cart::proto_text();
  gather::demo_book_service service{{std::chrono::milliseconds{std::atoi(argv[1])},
                                     std::chrono::milliseconds{std::atoi(argv[2])}}};
  std::cout << service.port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
}
