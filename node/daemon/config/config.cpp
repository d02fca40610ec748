// The daemon config loader: the top level of the file, includes, cross-checks, and the
// NodeOptions it yields.  The sections live in config_sections.cpp; docs/config.md is
// the user reference.
#include "node/daemon/config/config.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "base/toml/toml_reader.h"
#include "node/daemon/config/config_sections.h"
#include "node/daemon/runtime/log.h"
#include "node/daemon/net/net_addr.h"

namespace caesium::daemon {
namespace {

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot read config file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error("cannot read config file " + path);
  return text.str();
}

// An address key: "host:port".  Stores the text when valid.
void read_address(TomlReader& r, const std::string& key, bool required, std::string& out) {
  auto text = r.string(key);
  if (!text) {
    if (required && !r.has(key)) r.fail(key, "is required (\"host:port\")");
    return;
  }
  auto hp = parse_host_port(*text);
  if (!hp) {
    r.fail(key, hp.error().message);
    return;
  }
  out = *text;
}

// Parsed included files: kept alive while their tables are read.
struct Included {
  std::unique_ptr<toml::table> table;
  std::string path;
};

void read_includes(TomlReader& top, const std::string& base_dir, DaemonConfig& c, std::vector<Included>& out) {
  std::vector<std::string> files;
  if (const toml::node* n = top.raw("include")) {
    if (const auto* s = n->as_string()) {
      files.push_back(s->get());
    } else if (n->is_array()) {
      if (auto list = top.strings("include")) files = *list;
    } else {
      top.fail("include", "expected a file name or an array of file names");
    }
  }
  for (const auto& f : files) {
    const std::string path = resolve_path(base_dir, f);
    auto text = read_file(path);
    if (!text) {
      top.fail("include", text.error().message);
      continue;
    }
    auto table = parse_toml(*text, path);
    if (!table) {
      top.errors().add(table.error());
      continue;
    }
    Included inc{std::make_unique<toml::table>(std::move(*table)), path};
    // An included file shares cluster-wide parts only; node-local settings stay in the
    // node's own file, where an operator looks for them.
    TomlReader r(*inc.table, "", path, top.errors());
    (void)r.raw("cluster");
    (void)r.raw("handler");
    (void)r.raw("entry");
    r.finish();
    c.includes.push_back(path);
    out.push_back(std::move(inc));
  }
}

}  // namespace

Result<DaemonConfig> parse_config(std::string_view text, const std::string& path) {
  auto root = parse_toml(text, path);
  if (!root) return root.error();
  DaemonConfig c;
  c.path = path;
  const std::string base_dir = dir_of(path);  // absolute
  TomlErrors errors;
  TomlReader top(*root, "", path, errors);

  std::vector<Included> included;
  read_includes(top, base_dir, c, included);

  if (auto id = top.string("node_id")) {
    c.node_id = *id;
    if (!node::valid_node_id(c.node_id)) {
      top.fail("node_id", "\"" + c.node_id + "\" is not a valid node id (letters, digits and . _ : -, 1..128 bytes)");
    }
  } else if (!top.has("node_id")) {
    top.fail("node_id", "is required");
  }
  if (auto v = top.string("cluster_name")) {
    c.cluster_name = *v;
    if (c.cluster_name.empty() || c.cluster_name.size() > 128) top.fail("cluster_name", "must be 1..128 bytes");
  }
  if (auto v = top.string("data_dir")) {
    c.data_dir = resolve_path(base_dir, *v);
  } else if (!top.has("data_dir")) {
    top.fail("data_dir", "is required");
  }
  if (auto v = top.string("key_file")) {
    c.key_file = resolve_path(base_dir, *v);
  } else if (!top.has("key_file")) {
    top.fail("key_file", "is required (create one with `caesium keygen`)");
  }
  read_address(top, "gossip_listen", true, c.gossip_listen);
  read_address(top, "stream_listen", true, c.stream_listen);
  read_address(top, "gossip_advertise", false, c.gossip_advertise);
  read_address(top, "stream_advertise", false, c.stream_advertise);
  if (auto seeds = top.strings("seeds")) {
    for (const auto& s : *seeds) {
      if (auto hp = parse_host_port(s); !hp) {
        top.fail("seeds", hp.error().message);
      }
    }
    c.seeds = *seeds;
  }
  for (const char* key : {"priority", "tags"}) {
    if (top.has(key)) {
      (void)top.raw(key);
      top.fail(key, "set a node's priority and tags in its [[cluster.node]] entry: they are cluster-wide, so every "
                    "node elects masters and binds entries the same way");
    }
  }
  if (auto v = top.string("log_level")) {
    auto level = parse_log_level(*v);
    if (level) {
      c.log_level = *level;
    } else {
      top.fail("log_level", level.error().message);
    }
  }
  if (auto v = top.duration("shutdown_grace")) c.shutdown_grace_ms = *v;

  // Cluster-wide parts: from this file and the included ones.
  std::vector<SourcedTable> clusters, handlers, entries;
  auto collect = [&](TomlReader& r) {
    if (const toml::table* t = r.table("cluster")) clusters.push_back({t, r.path()});
    for (const auto* t : r.tables("handler")) handlers.push_back({t, r.path()});
    for (const auto* t : r.tables("entry")) entries.push_back({t, r.path()});
  };
  collect(top);
  for (auto& inc : included) {
    TomlReader r(*inc.table, "", inc.path, errors);
    collect(r);
  }
  if (clusters.size() > 1) {
    errors.add(Error(toml_position(clusters[1].table->source(), clusters[1].path) +
                     ": cluster: defined in more than one file (also in " + clusters[0].path + ")", "cluster"));
  } else if (clusters.size() == 1) {
    read_cluster(clusters[0], errors, c.initial_cluster);
  }
  read_handlers(handlers, c.data_dir, errors, c.handlers);
  read_entries(entries, c.node_id, errors, c.entries);
  read_tuning(top, base_dir, c);
  top.finish();
  if (errors.any()) return errors.combined();

  // Cross-checks that need more than one key.
  for (auto [listen, advertise, key] : {std::tuple{&c.gossip_listen, &c.gossip_advertise, "gossip_advertise"},
                                        {&c.stream_listen, &c.stream_advertise, "stream_advertise"}}) {
    if (!advertise->empty()) continue;
    auto hp = parse_host_port(*listen);
    if (hp && is_wildcard_host(hp->host)) {
      return Error(path + ": " + key + ": is required when listening on a wildcard address (" + *listen +
                       "): peers need an address they can reach",
                   key);
    }
  }
  if (const node::NodeSpec* self = c.initial_cluster.node(c.node_id)) {
    c.priority = self->priority;
    c.tags = self->tags;
  }
  for (const auto& e : c.entries) {
    if (c.initial_cluster.epoch > 0 && c.initial_cluster.volume(e.volume) == nullptr) {
      return Error(path + ": entry " + e.volume + "/" + e.entity + "/" + e.name + ": volume \"" + e.volume +
                       "\" is not in the cluster config",
                   "entry.volume");
    }
  }
  return c;
}

Result<DaemonConfig> load_config(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_config(*text, path);
}

node::NodeOptions node_options(const DaemonConfig& config, const wire::Keyring& keyring) {
  node::NodeOptions o = config.tuning;
  o.id = config.node_id;
  o.cluster_name = config.cluster_name;
  o.gossip_addr = config.gossip_advertise.empty() ? config.gossip_listen : config.gossip_advertise;
  o.stream_addr = config.stream_advertise.empty() ? config.stream_listen : config.stream_advertise;
  auto api = parse_host_port(config.api.listen, true);
  o.api_addr = api && api->port != 0 ? config.api.listen : "";
  // A node never needs itself as a seed; an operator may list every node in every file.
  for (const auto& s : config.seeds) {
    if (s != o.stream_addr && s != config.stream_listen) o.seeds.push_back(s);
  }
  o.keyring = keyring;
  o.initial_config = config.initial_cluster;
  o.capacity = config.capacity;
  return o;
}

}  // namespace caesium::daemon
