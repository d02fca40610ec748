// The sections of the daemon config, read by config.cpp (internal to the config loader).
// Each reader marks the keys it knows, records every error in `errors`, and leaves
// defaults in place for absent keys.  docs/config.md documents every key.
#pragma once

#include <string>
#include <vector>

#include "base/toml/toml_reader.h"
#include "node/daemon/config/config.h"

namespace caesium::daemon {

// A table and the file it came from (the main config or an included file).
struct SourcedTable {
  const toml::table* table = nullptr;
  std::string path;
};

// [cluster]: epoch, [[cluster.node]], [[cluster.volume]].
void read_cluster(const SourcedTable& cluster, TomlErrors& errors, node::ClusterConfig& out);

// [[handler]] tables; relative paths resolve against the directory of the file each
// table came from; an empty cwd is `data_dir`.
void read_handlers(const std::vector<SourcedTable>& tables, const std::string& data_dir, TomlErrors& errors,
                   std::vector<HandlerConfig>& out);

// [[entry]] tables: volume, entity, name and the entry's fields (converted to the
// HTTP API's JSON and validated with schedule::entry_from_json).
void read_entries(const std::vector<SourcedTable>& tables, const std::string& node_id, TomlErrors& errors,
                  std::vector<StaticEntry>& out);

// [capacity], [api], [gossip], [scheduler], [store], [limits], [storage] of the main file.
void read_tuning(TomlReader& top, const std::string& base_dir, DaemonConfig& c);

// Resolves `p` against `base_dir` unless it is absolute (or empty).
std::string resolve_path(const std::string& base_dir, const std::string& p);
// The directory part of a file path ("." for a bare name).
std::string dir_of(const std::string& path);

}  // namespace caesium::daemon
