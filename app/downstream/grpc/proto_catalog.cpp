// Building a configuration's descriptors: the FileDescriptorSets and the .proto files of `protos`
// into one pool of their own, then every gRPC section's plan over it (grpc_plan.cpp).
//
// The .proto files are compiled as protoc's compiler::Importer does (a DiskSourceTree over the
// import paths, a SourceTreeDescriptorDatabase), with Google's well-known types taken from the
// ones compiled into libprotobuf when no import path has them. Every file is then copied into
// FileDescriptorProtos and built again, with the sets' files, into a pool without a fallback
// database: that pool is only read afterwards, from any thread.

#include "gather/downstream/grpc/proto_catalog.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/util/type_resolver_util.h>

namespace gather {

namespace pb = google::protobuf;

proto_catalog::proto_catalog() : orders(std::make_unique<grpc::field_orders>()) {}
proto_catalog::~proto_catalog() = default;

namespace {

constexpr const char* type_url_prefix = "type.googleapis.com";

/// Parse errors of the .proto files, as protoc prints them: "file:line:column: message".
class source_errors final : public pb::compiler::MultiFileErrorCollector {
public:
  void AddError(const std::string& file, int line, int column, const std::string& message) override {
    std::string where = file;
    if (line >= 0)
      where += ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1);
    errors.push_back(where + ": " + message);
  }
  std::vector<std::string> errors;
};

/// Errors of building a file into a pool (an unknown type, a name defined twice).
class build_errors final : public pb::DescriptorPool::ErrorCollector {
public:
  void AddError(const std::string& file, const std::string& element, const pb::Message*,
                ErrorLocation, const std::string& message) override {
    errors.push_back(file + (element.empty() ? "" : " (" + element + ")") + ": " + message);
  }
  std::vector<std::string> errors;
};

/// A file proto and where it came from (the JSON path of its set or .proto file).
struct file_entry {
  pb::FileDescriptorProto proto;
  std::string origin;
};

/// An error about a well-known file that libprotobuf's own copy stands in for.
bool well_known_error(const std::string& error) {
  const auto colon = error.find(':');
  return colon != std::string::npos &&
         pb::DescriptorPool::generated_pool()->FindFileByName(error.substr(0, colon)) != nullptr;
}

class catalog_builder {
public:
  explicit catalog_builder(std::vector<std::string>& problems) : problems_(problems) {}

  void add_set(const std::string& file, const std::string& path) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      problems_.push_back(path + ": cannot read \"" + file + "\"");
      return;
    }
    pb::FileDescriptorSet set;
    if (!set.ParseFromIstream(&in)) {
      problems_.push_back(path + ": \"" + file +
                          "\" is not a FileDescriptorSet (protoc --include_imports --descriptor_set_out)");
      return;
    }
    for (auto& proto : *set.mutable_file())
      add(std::move(proto), path);
  }

  void add_sources(const protos_config& protos, const std::string& path) {
    if (protos.files.empty())
      return;
    pb::compiler::DiskSourceTree tree;
    if (protos.import_paths.empty())
      tree.MapPath("", ".");
    for (const auto& dir : protos.import_paths)
      tree.MapPath("", dir);
    source_errors errors;
    pb::compiler::SourceTreeDescriptorDatabase sources(&tree);
    sources.RecordErrorsTo(&errors);
    pb::DescriptorPoolDatabase well_known(*pb::DescriptorPool::generated_pool());
    pb::MergedDescriptorDatabase merged(&sources, &well_known);
    pb::DescriptorPool compiler(&merged, sources.GetValidationErrorCollector());
    for (std::size_t i = 0; i < protos.files.size(); ++i) {
      const std::string file_path = path + ".files[" + std::to_string(i) + "]";
      errors.errors.clear();
      const pb::FileDescriptor* file = compiler.FindFileByName(protos.files[i]);
      // The source tree says "File not found" for a well-known import before libprotobuf's copy
      // answers: only a file that failed has problems, and those are never about such imports.
      for (const auto& error : errors.errors)
        if (!file && !well_known_error(error))
          problems_.push_back(file_path + ": " + error);
      if (!file && std::all_of(errors.errors.begin(), errors.errors.end(), well_known_error))
        problems_.push_back(file_path + ": cannot compile \"" + protos.files[i] +
                            "\" (not found under the import paths?)");
      if (file)
        add_with_dependencies(*file, file_path);
    }
  }

  /// A file reflection gave: one of the same name from `protos` (or an earlier target) wins.
  void add_reflected(const pb::FileDescriptorProto& proto, const std::string& origin) {
    if (!files_.count(proto.name()))
      files_.emplace(proto.name(), file_entry{proto, origin});
  }

  /// Every file added (after build(): with the well-known ones it took from libprotobuf).
  std::vector<pb::FileDescriptorProto> files() const {
    std::vector<pb::FileDescriptorProto> out;
    out.reserve(files_.size());
    for (const auto& [name, entry] : files_)
      out.push_back(entry.proto);
    return out;
  }

  /// The pool of every file added; null when a file could not be built (problems reported).
  std::unique_ptr<pb::DescriptorPool> build() {
    auto pool = std::make_unique<pb::DescriptorPool>();
    bool ok = true;
    for (const auto& [name, entry] : files_)
      ok = build_file(*pool, name, 0) && ok;
    return ok ? std::move(pool) : nullptr;
  }

private:
  void add_with_dependencies(const pb::FileDescriptor& file, const std::string& origin) {
    if (files_.count(file.name()) && files_.at(file.name()).origin == origin)
      return;
    for (int i = 0; i < file.dependency_count(); ++i)
      add_with_dependencies(*file.dependency(i), origin);
    pb::FileDescriptorProto proto;
    file.CopyTo(&proto);
    file.CopyJsonNameTo(&proto);
    add(std::move(proto), origin);
  }

  /// Two sources may hold the same file (both --include_imports of one dependency): fine when it
  /// is the same file, a problem when it is not.
  void add(pb::FileDescriptorProto proto, const std::string& origin) {
    const std::string name = proto.name();
    const auto found = files_.find(name);
    if (found == files_.end()) {
      files_.emplace(name, file_entry{std::move(proto), origin});
      return;
    }
    if (found->second.origin == origin)
      return;
    pb::FileDescriptorProto a = found->second.proto, b = proto;
    a.clear_source_code_info();
    b.clear_source_code_info();
    if (a.SerializeAsString() != b.SerializeAsString() && !well_known(name))
      problems_.push_back(origin + ": \"" + name + "\" differs from the one in " +
                          found->second.origin);
  }

  static bool well_known(const std::string& name) {
    return name.rfind("google/protobuf/", 0) == 0;
  }

  /// Builds `name` after its dependencies; a dependency no source has is taken from libprotobuf's
  /// own well-known types.
  bool build_file(pb::DescriptorPool& pool, const std::string& name, int depth) {
    if (pool.FindFileByName(name))
      return true;
    auto found = files_.find(name);
    if (found == files_.end()) {
      const auto* known = pb::DescriptorPool::generated_pool()->FindFileByName(name);
      if (!known || depth > 100)
        return false;
      pb::FileDescriptorProto proto;
      known->CopyTo(&proto);
      known->CopyJsonNameTo(&proto);
      found = files_.emplace(name, file_entry{std::move(proto), "libprotobuf"}).first;
    }
    const file_entry& entry = found->second;
    bool ok = true;
    for (const auto& dependency : entry.proto.dependency()) {
      if (!build_file(pool, dependency, depth + 1)) {
        if (!failed_.count(dependency)) {
          problems_.push_back(entry.origin + ": \"" + name + "\" imports \"" + dependency +
                              "\", which no descriptor set or file gives");
          failed_.insert(dependency);
        }
        ok = false;
      }
    }
    if (!ok)
      return false;
    build_errors errors;
    if (pool.BuildFileCollectingErrors(entry.proto, &errors))
      return true;
    if (!failed_.count(name)) {
      for (const auto& error : errors.errors)
        problems_.push_back(entry.origin + ": " + error);
      failed_.insert(name);
    }
    return false;
  }

  std::vector<std::string>& problems_;
  std::map<std::string, file_entry> files_;
  std::set<std::string> failed_; ///< files whose failure is reported already
};

std::string section_path(const route_config& config, std::size_t route, std::size_t section) {
  if (config.sections[section].write)
    return "routes[" + std::to_string(route) + "].write.grpc";
  return "routes[" + std::to_string(route) + "].sections[" + std::to_string(section) + "].grpc";
}

/// The plan of one gRPC call, with its problems by path.
std::optional<grpc_method_plan> plan_call(const proto_catalog& catalog, const grpc_call_config& call,
                                          const std::string& path, std::vector<std::string>& problems) {
  const auto* service = catalog.pool->FindServiceByName(call.service);
  const auto* method = service ? service->FindMethodByName(call.method) : nullptr;
  if (!method) {
    if (!call.reflection)
      problems.push_back(path + ".method: " +
                         (service ? "service " + call.service + " has no method " + call.method
                                  : "no descriptor set or file of \"protos\" has service " + call.service) +
                         " (or set \"reflection\": true to ask the server)");
    return std::nullopt;
  }
  auto result = plan_grpc_call(call, *method, path);
  for (auto& problem : result.problems)
    problems.push_back(std::move(problem));
  return std::move(result.plan);
}

} // namespace

bool has_grpc_calls(const config& cfg) {
  for (const auto& route : cfg.routes) {
    if (route.batch && route.batch->grpc)
      return true;
    for (const auto& section : route.sections)
      if (section.grpc)
        return true;
  }
  return false;
}

std::vector<std::string> attach_proto_catalog(config& cfg) {
  const auto& protos = cfg.protos;
  if (cfg.descriptors ||
      (!has_grpc_calls(cfg) && protos.descriptor_sets.empty() && protos.files.empty()))
    return {};
  auto built = build_proto_catalog(cfg);
  cfg.descriptors = std::move(built.value);
  return std::move(built.problems);
}

proto_catalog_result build_proto_catalog(const config& cfg,
                                         const std::vector<pb::FileDescriptorProto>* reflected) {
  proto_catalog_result result;
  catalog_builder builder(result.problems);
  if (reflected && cfg.descriptors) {
    for (const auto& file : cfg.descriptors->files)
      builder.add_reflected(file, "protos");
  } else {
    for (std::size_t i = 0; i < cfg.protos.descriptor_sets.size(); ++i)
      builder.add_set(cfg.protos.descriptor_sets[i], "protos.descriptor_sets[" + std::to_string(i) + "]");
    builder.add_sources(cfg.protos, "protos");
  }
  if (reflected)
    for (const auto& file : *reflected)
      builder.add_reflected(file, "reflection");
  auto catalog = std::make_shared<proto_catalog>();
  catalog->pool = builder.build();
  if (!catalog->pool || !result.problems.empty())
    return result;
  catalog->files = builder.files();
  catalog->resolver.reset(pb::util::NewTypeResolverForDescriptorPool(type_url_prefix, catalog->pool.get()));
  catalog->factory = std::make_unique<pb::DynamicMessageFactory>(catalog->pool.get());
  for (std::size_t r = 0; r < cfg.routes.size(); ++r) {
    const auto& route = cfg.routes[r];
    auto& plans = catalog->sections.emplace_back();
    for (std::size_t s = 0; s < route.sections.size(); ++s)
      plans.push_back(route.sections[s].grpc
                          ? plan_call(*catalog, *route.sections[s].grpc, section_path(route, r, s), result.problems)
                          : std::nullopt);
    catalog->batches.push_back(
        route.batch && route.batch->grpc
            ? plan_call(*catalog, *route.batch->grpc, "routes[" + std::to_string(r) + "].batch.grpc",
                        result.problems)
            : std::nullopt);
  }
  if (result.problems.empty() || reflected)
    result.value = std::move(catalog);
  return result;
}

} // namespace gather
