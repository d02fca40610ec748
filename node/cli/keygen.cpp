#include "node/cli/keygen.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/base64.h"

namespace caesium::cli {

namespace {

constexpr size_t kMaxKeyFileBytes = 64 * 1024;

std::string key_id_text(const wire::Key& key) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", wire::Keyring::key_id(key));
  return buf;
}

std::string errno_text(int err) { return std::string(strerror(err)); }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

Result<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error("cannot read " + path + ": " + errno_text(errno));
  std::string text;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxKeyFileBytes) return Error(path + " is too large to be a key file");
  }
  return text;
}

// The directory part of `path`, for the temporary file ("." when there is none).
std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

KeygenRun failure(int code, const std::string& why) { return KeygenRun{code, "", "caesium keygen: " + why + "\n"}; }

// Reads `path`, lets `change` rewrite its key list, writes it back (atomically, 0600).
template <class Change>
KeygenRun rewrite(const std::string& path, Change change) {
  auto text = read_small_file(path);
  if (!text) return failure(1, text.error().message);
  auto keys = read_key_list(*text);
  if (!keys) return failure(2, path + ": " + keys.error().message);
  Result<std::string> message = change(*keys);
  if (!message) return failure(2, path + ": " + message.error().message);
  if (Status s = write_key_file(path, key_file_text(*keys), true); !s.ok()) {
    return failure(1, s.error().message);
  }
  return KeygenRun{0, "", path + ": " + *message + "\n"};
}

std::string accepted_summary(const std::vector<wire::Key>& keys) {
  std::string s = "primary " + key_id_text(keys[0]);
  if (keys.size() > 1) {
    s += ", accepted";
    for (size_t i = 1; i < keys.size(); ++i) s += " " + key_id_text(keys[i]);
  }
  return s;
}

}  // namespace

Result<wire::Key> generate_key() {
  if (sodium_init() < 0) return Error("libsodium failed to initialise (no entropy source?)");
  wire::Key key;
  randombytes_buf(key.data(), key.size());
  return key;
}

std::string key_file_text(const std::vector<wire::Key>& keys) {
  std::string out =
      "# Caesium cluster key file (caesium keygen).  Keep it secret: mode 0600.\n"
      "# primary seals and opens frames; accept only opens them (see docs/keys.md).\n";
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string_view raw(reinterpret_cast<const char*>(keys[i].data()), keys[i].size());
    out += (i == 0 ? "primary = " : "accept = ") + base64_encode(raw) + "\n";
  }
  return out;
}

Result<std::vector<wire::Key>> read_key_list(std::string_view text) {
  // Keyring::parse is the authority on what a valid file is; the scan below then only
  // recovers the order of keys, which Keyring does not expose.
  auto ring = wire::Keyring::parse(text);
  if (!ring) return ring.error();
  std::vector<wire::Key> keys(1);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    const size_t eq = line.find('=');
    auto raw = base64_decode(trim(line.substr(eq + 1)));
    wire::Key key;
    std::copy(raw->begin(), raw->end(), key.begin());
    if (trim(line.substr(0, eq)) == "primary") keys[0] = key;
    else keys.push_back(key);
  }
  return keys;
}

Status write_key_file(const std::string& path, std::string_view text, bool replace) {
  std::string tmp = directory_of(path) + "/.caesium-key-XXXXXX";
  const int fd = mkstemp(tmp.data());  // mode 0600, O_EXCL
  if (fd < 0) return Error("cannot create a file next to " + path + ": " + errno_text(errno));
  const auto fail = [&](const std::string& what) {
    const int err = errno;
    close(fd);
    unlink(tmp.c_str());
    return Error(what + ": " + errno_text(err));
  };
  if (fchmod(fd, 0600) != 0) return fail("cannot set mode 0600 on " + tmp);
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write " + tmp);
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("cannot sync " + tmp);
  close(fd);
  if (replace) {
    if (rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      unlink(tmp.c_str());
      return Error("cannot replace " + path + ": " + errno_text(err));
    }
  } else {
    // link() fails if `path` exists: no window in which another writer's file is lost.
    const int rc = link(tmp.c_str(), path.c_str());
    const int err = errno;
    unlink(tmp.c_str());
    if (rc != 0 && err == EEXIST) {
      return Error(path + " already exists; refusing to overwrite a key (use --force)");
    }
    if (rc != 0) return Error("cannot create " + path + ": " + errno_text(err));
  }
  // Make the new directory entry durable too (best effort: some filesystems refuse).
  const int dir = open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
  return Status::success();
}

Status check_keygen_options(const KeygenOptions& o) {
  const int modes = (o.out ? 1 : 0) + (o.add_to ? 1 : 0) + (o.promote ? 1 : 0) + (o.drop_accepted ? 1 : 0);
  if (modes > 1) return Error("--out, --add-to, --promote and --drop-accepted exclude each other");
  if (o.force && !o.out) return Error("--force goes with --out");
  if (o.accept_only && !o.add_to) return Error("--accept-only goes with --add-to");
  return Status::success();
}

KeygenRun run_keygen(const KeygenOptions& options) {
  if (options.promote) {
    return rewrite(*options.promote, [](std::vector<wire::Key>& keys) -> Result<std::string> {
      if (keys.size() < 2) return Error("there is no accepted key to promote");
      const wire::Key newest = keys.back();
      keys.pop_back();
      keys.insert(keys.begin(), newest);
      return "promoted " + key_id_text(newest) + "; now " + accepted_summary(keys);
    });
  }
  if (options.drop_accepted) {
    return rewrite(*options.drop_accepted, [](std::vector<wire::Key>& keys) -> Result<std::string> {
      const size_t dropped = keys.size() - 1;
      keys.resize(1);
      return "dropped " + std::to_string(dropped) + " accepted key(s); now " + accepted_summary(keys);
    });
  }

  auto key = generate_key();
  if (!key) return failure(1, key.error().message);
  const wire::Key fresh = *key;
  if (options.add_to) {
    const bool accept_only = options.accept_only;
    return rewrite(*options.add_to, [&](std::vector<wire::Key>& keys) -> Result<std::string> {
      if (accept_only) keys.push_back(fresh);
      else keys.insert(keys.begin(), fresh);
      return std::string(accept_only ? "added accepted key " : "new primary key ") + key_id_text(fresh) +
             "; now " + accepted_summary(keys);
    });
  }
  const std::string text = key_file_text({fresh});
  if (!options.out) return KeygenRun{0, text, ""};
  if (Status s = write_key_file(*options.out, text, options.force); !s.ok()) {
    return failure(1, s.error().message);
  }
  return KeygenRun{0, "", "wrote key " + key_id_text(fresh) + " to " + *options.out + " (mode 0600)\n"};
}

}  // namespace caesium::cli
