// The command-line client against a real node (a daemon Runtime on loopback, in this
// process) whose API speaks TLS and takes scoped tokens: every refusal as the CLI
// reports it — an untrusted certificate, plain HTTP to the TLS port, no token (401), a
// read token writing and a token limited to another volume (403) — the allowed
// commands, and the tokens reloaded as SIGHUP does (a removed token is 401 at once).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "node/cli/client.h"
#include "node/daemon/runtime/runtime.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/daemon_exec_test_loop.h"
#include "tests/unit/daemon_api_client_socket.h"
#include "tests/unit/daemon_test_support.h"
#include "tests/unit/tls_test_certs.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::free_port;

namespace {

constexpr const char* kAdmin = "cli-admin-token-0123456789";
constexpr const char* kReader = "cli-reader-token-0123456789";
constexpr const char* kOtherVolume = "cli-other-volume-token-0123";

const char* kTokens = R"([[token]]
name = "ops"
token = "cli-admin-token-0123456789"
scope = "admin"

[[token]]
name = "dash"
token = "cli-reader-token-0123456789"
scope = "read"

[[token]]
name = "other-only"
token = "cli-other-volume-token-0123"
scope = "write"
volumes = ["other"]
)";

struct TlsNode {
  test::TempDir tmp{"caesium-cli-tls"};
  test::TestCertificates certs{tmp.path};
  test::TestLoop loop;
  std::string api = "127.0.0.1:" + std::to_string(free_port(SOCK_STREAM));
  std::string gossip = "127.0.0.1:" + std::to_string(free_port(SOCK_DGRAM));
  std::string stream = "127.0.0.1:" + std::to_string(free_port(SOCK_STREAM));
  std::unique_ptr<Runtime> rt;

  TlsNode() {
    std::ofstream(tmp.sub("cluster.key")) << "primary = AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
    std::filesystem::permissions(tmp.sub("cluster.key"),
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    std::ofstream(tmp.sub("tokens.toml")) << kTokens;
    RuntimeOptions o;
    o.log_sink = [](std::string_view) {};
    auto r = Runtime::start(loop.get(), config(), o);
    INFO((r.ok() ? std::string() : r.error().message));
    REQUIRE(r.ok());
    rt = std::move(*r);
  }
  ~TlsNode() {
    rt->shutdown();
    loop.run_until([&] { return rt->stopped(); }, 30'000);
    rt.reset();
    loop.drain();
  }
  DaemonConfig config() const {
    const std::string text =
        "node_id = \"n1\"\ndata_dir = \"data\"\nkey_file = \"cluster.key\"\n"
        "gossip_listen = \"" + gossip + "\"\nstream_listen = \"" + stream + "\"\n"
        "shutdown_grace = \"1s\"\n"
        "[api]\nlisten = \"" + api + "\"\ntokens_file = \"tokens.toml\"\n"
        "tls_cert = \"" + certs.server_cert + "\"\ntls_key = \"" + certs.server_key + "\"\n"
        "[cluster]\nepoch = 1\n[[cluster.node]]\nid = \"n1\"\n"
        "[[cluster.volume]]\nname = \"main\"\nreplicas = [\"n1\"]\n"
        "[[cluster.volume]]\nname = \"other\"\nreplicas = [\"n1\"]\n"
        "[[handler]]\nname = \"log\"\nkind = \"builtin\"\nbuiltin = \"log\"\n";
    auto c = parse_config(text, tmp.sub("n1.toml"));
    INFO((c.ok() ? std::string() : c.error().message));
    REQUIRE(c.ok());
    return *c;
  }

  // `caesium <args>` with the real transport while the loop serves the node.
  test::CliRun cli(std::vector<std::string> args, const std::string& token, bool https = true,
                   bool with_ca = true) {
    test::FakeCli c;
    if (!token.empty()) c.env["CAESIUM_TOKEN"] = token;
    c.connect = cli::curl_transport;
    std::vector<std::string> common = {"--api", (https ? "https://" : "http://") + api, "--timeout", "10s"};
    if (with_ca) common.insert(common.end(), {"--ca-file", certs.ca});
    args.insert(args.begin() + 1, common.begin(), common.end());
    test::CliRun r;
    test::with_client_thread([&](const std::function<bool()>& done) { return loop.run_until(done); },
                             [&] { r = c.run(args); });
    return r;
  }
};

const std::vector<std::string> kPut = {"put", "main", "acme", "report", "--cron", "0 3 * * *", "--handler", "log"};

}  // namespace

TEST_CASE("cli + node over TLS: trust, and every refusal reported as such") {
  TlsNode n;
  const test::CliRun ok = n.cli({"status"}, kAdmin);
  INFO(ok.err);
  REQUIRE(ok.status == 0);
  CHECK(ok.out.find("n1") != std::string::npos);

  const test::CliRun untrusted = n.cli({"status"}, kAdmin, true, /*with_ca=*/false);
  CHECK(untrusted.status == 1);
  CHECK(untrusted.err.find("certificate") != std::string::npos);

  const test::CliRun plain = n.cli({"status"}, kAdmin, /*https=*/false, false);
  CHECK(plain.status == 1);
  CHECK(plain.err.find("speaks HTTPS") != std::string::npos);

  const test::CliRun anonymous = n.cli({"status"}, "");
  CHECK(anonymous.status == 1);
  CHECK(anonymous.err.find("unauthorized (401)") != std::string::npos);

  const test::CliRun reader_writes = n.cli(kPut, kReader);
  CHECK(reader_writes.status == 1);
  CHECK(reader_writes.err.find("forbidden (403)") != std::string::npos);
  CHECK(reader_writes.err.find("'dash' has the read scope") != std::string::npos);

  const test::CliRun elsewhere = n.cli(kPut, kOtherVolume);
  CHECK(elsewhere.status == 1);
  CHECK(elsewhere.err.find("limited to volumes [other]") != std::string::npos);

  CHECK(n.cli(kPut, kAdmin).status == 0);
  const test::CliRun got = n.cli({"get", "main", "acme", "report", "--json"}, kReader);
  CHECK(got.status == 0);
  CHECK(got.out.find("0 3 * * *") != std::string::npos);
  CHECK(n.cli({"ls", "other"}, kOtherVolume).status == 0);
}

TEST_CASE("cli + node over TLS: tokens reloaded as SIGHUP does take effect at once") {
  TlsNode n;
  REQUIRE(n.cli({"status"}, kReader).status == 0);
  // The reader's token is withdrawn and a new one added; SIGHUP reloads the file.
  std::string without_reader = kTokens;
  without_reader.replace(without_reader.find(kReader), std::string(kReader).size(), "cli-fresh-reader-token-01");
  std::ofstream(n.tmp.sub("tokens.toml")) << without_reader;
  n.rt->reload(n.config());
  CHECK(n.cli({"status"}, kReader).err.find("unauthorized (401)") != std::string::npos);
  CHECK(n.cli({"status"}, "cli-fresh-reader-token-01").status == 0);
  // A tokens file with a mistake keeps the tokens there were.
  std::ofstream(n.tmp.sub("tokens.toml")) << "[[token]]\nname = \"x\"\ntoken = \"short\"\nscope = \"read\"\n";
  n.rt->reload(n.config());
  CHECK(n.cli({"status"}, "cli-fresh-reader-token-01").status == 0);
}
