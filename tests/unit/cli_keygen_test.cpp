// caesium keygen: fresh key files (mode 0600, parseable, never overwritten by
// accident) and rotation (--add-to, --accept-only, --promote, --drop-accepted).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "node/cli/keygen.h"
#include "node/wire/frame.h"
#include "tests/unit/cli_run.h"

using namespace caesium;
using caesium::cli::read_key_list;

namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "caesium-keygen-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

wire::Keyring ring_of(const std::string& path) {
  auto ring = wire::Keyring::parse(slurp(path));
  INFO(slurp(path));
  REQUIRE(ring.ok());
  return *ring;
}

// The command as the binary runs it.  exit_code, out and err, as the tests below read them.
struct KeygenRun {
  int exit_code;
  std::string out, err;
};
KeygenRun keygen(std::vector<std::string> args) {
  args.insert(args.begin(), "keygen");
  const test::CliRun r = test::FakeCli().run(args);
  return {r.status, r.out, r.err};
}

}  // namespace

TEST_CASE("keygen --out writes a 0600 key file that Keyring::parse accepts") {
  TempDir dir;
  const std::string path = dir.file("cluster.key");
  // A permissive umask must not widen the mode.
  const mode_t old_umask = umask(0);
  const auto r = keygen({"--out", path});
  umask(old_umask);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("wrote key") != std::string::npos);
  CHECK(mode_of(path) == 0600);
  const auto ring = ring_of(path);
  CHECK(ring.size() == 1);
  // Nothing else is left in the directory (no temporary file).
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("keygen refuses to overwrite without --force") {
  TempDir dir;
  const std::string path = dir.file("cluster.key");
  REQUIRE(keygen({"--out", path}).exit_code == 0);
  const std::string before = slurp(path);
  const auto again = keygen({"--out", path});
  CHECK(again.exit_code == 1);
  CHECK(again.err.find("refusing to overwrite") != std::string::npos);
  CHECK(slurp(path) == before);
  const auto forced = keygen({"--out", path, "--force"});
  CHECK(forced.exit_code == 0);
  CHECK(slurp(path) != before);
  CHECK(mode_of(path) == 0600);
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("keygen without --out prints a fresh key each time") {
  const auto a = keygen({});
  const auto b = keygen({});
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  auto ra = wire::Keyring::parse(a.out);
  auto rb = wire::Keyring::parse(b.out);
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  CHECK(ra->primary() != rb->primary());
}

TEST_CASE("keygen rotation keeps old keys accepted") {
  TempDir dir;
  const std::string path = dir.file("cluster.key");
  REQUIRE(keygen({"--out", path}).exit_code == 0);
  const wire::Key k1 = ring_of(path).primary();

  SECTION("--add-to: new primary, old key accepted") {
    const auto r = keygen({"--add-to", path});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto ring = ring_of(path);
    CHECK(ring.size() == 2);
    CHECK(ring.primary() != k1);
    CHECK(ring.find(wire::Keyring::key_id(k1)) != nullptr);
    CHECK(mode_of(path) == 0600);
    auto keys = read_key_list(slurp(path));
    REQUIRE(keys.ok());
    CHECK((*keys)[1] == k1);
  }
  SECTION("the staged procedure: --accept-only, --promote, --drop-accepted") {
    REQUIRE(keygen({"--add-to", path, "--accept-only"}).exit_code == 0);
    auto ring = ring_of(path);
    CHECK(ring.size() == 2);
    CHECK(ring.primary() == k1);
    auto keys = read_key_list(slurp(path));
    REQUIRE(keys.ok());
    const wire::Key k2 = keys->at(1);

    REQUIRE(keygen({"--promote", path}).exit_code == 0);
    keys = read_key_list(slurp(path));
    REQUIRE(keys.ok());
    CHECK(*keys == std::vector<wire::Key>{k2, k1});

    REQUIRE(keygen({"--drop-accepted", path}).exit_code == 0);
    ring = ring_of(path);
    CHECK(ring.size() == 1);
    CHECK(ring.primary() == k2);
    CHECK(mode_of(path) == 0600);

    const auto nothing = keygen({"--promote", path});
    CHECK(nothing.exit_code == 2);
    CHECK(nothing.err.find("no accepted key") != std::string::npos);
  }
}

TEST_CASE("keygen reports bad key files and bad usage without touching anything") {
  TempDir dir;
  const std::string path = dir.file("bad.key");
  std::ofstream(path) << "primary = not-base64!\n";
  const auto r = keygen({"--add-to", path});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("line 1") != std::string::npos);
  CHECK(slurp(path) == "primary = not-base64!\n");
  CHECK(keygen({"--add-to", dir.file("missing.key")}).exit_code == 1);
  CHECK(keygen({"--bogus"}).exit_code == 2);
  CHECK(keygen({"--force"}).exit_code == 2);
  CHECK(keygen({"--out"}).exit_code == 2);
  CHECK(keygen({"--accept-only"}).exit_code == 2);
  CHECK(keygen({"--out", path, "--add-to", path}).exit_code == 2);
  CHECK(keygen({"--out", path, "--add-to", path}).err.rfind(
            "caesium keygen: --out, --add-to, --promote and --drop-accepted exclude each other\n", 0) == 0);
  CHECK(keygen({"--force=yes"}).err.rfind("caesium keygen: --force takes no value\n", 0) == 0);
  CHECK(keygen({"--out", dir.file("no/such/dir/k")}).exit_code == 1);
  CHECK(keygen({"--help"}).exit_code == 0);
}
