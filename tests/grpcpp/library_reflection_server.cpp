// A grpc++ server with Debian's own server reflection (libgrpc++_reflection 1.51: it speaks only
// grpc.reflection.v1alpha), for tests/downstream/grpc/grpc_reflection_test.cpp: the reference
// implementation the gateway's reflection client must understand. linkd.v3.Library from the
// tests' library.proto, compiled by protoc and grpc_cpp_plugin (the only generated code in the
// build); GetBook answers a book titled "grpc++", the other methods UNIMPLEMENTED.
//
//     gather_test_grpcpp_server        prints "port N" once it listens on 127.0.0.1:N
#include <cstdio>
#include <memory>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>

#include "linkd/v3/library.grpc.pb.h"

namespace {

class library final : public linkd::v3::Library::Service {
  grpc::Status GetBook(grpc::ServerContext*, const linkd::v3::GetBookRequest* request,
                       linkd::v3::Book* book) override {
    book->set_isbn(request->isbn());
    book->set_title("grpc++");
    book->set_format(linkd::v3::EBOOK);
    return grpc::Status::OK;
  }
};

} // namespace

int main() {
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  library service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0)
    return 1;
  std::printf("port %d\n", port);
  std::fflush(stdout);
  server->Wait(); // until the test kills it
}
