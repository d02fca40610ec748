// The exec executor with real child processes (/bin/sh), each test on its own loop:
// environment, stdin, exit status, signals, timeouts, missing programs, output bounds,
// and that cancelling leaves no child and no zombie behind.
#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/time.h"
#include "node/daemon/exec/handler_executors.h"
#include "node/daemon/exec/handler_invocation.h"
#include "tests/unit/daemon_exec_test_loop.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::TestLoop;

namespace {

HandlerConfig sh(const std::string& script, int64_t timeout_ms = 10'000) {
  HandlerConfig c;
  c.name = "job";
  c.kind = HandlerConfig::Kind::kExec;
  c.argv = {"/bin/sh", "-c", script};
  c.timeout_ms = timeout_ms;
  return c;
}

node::Invocation sample_invocation() { return caesium::test::sample_invocation("job"); }

// Runs one invocation to completion on `loop`.
std::optional<node::InvocationResult> run_one(TestLoop& loop, const HandlerConfig& config,
                                              const node::Invocation& inv) {
  auto ex = make_exec_executor(loop.get(), "n1", config);
  std::optional<node::InvocationResult> result;
  bool returned = false;
  ex->run(inv, [&](const node::InvocationResult& r) {
    CHECK(returned);  // never from inside run()
    result = r;
  });
  returned = true;
  CHECK(loop.run_until([&] { return result.has_value(); }));
  CHECK(ex->running() == 0);
  ex.reset();
  CHECK(loop.drain());
  return result;
}

// The text after "stdout: " in a detail (up to a following stderr section).
std::string stdout_of(const std::string& detail) {
  const size_t at = detail.find("stdout");
  if (at == std::string::npos) return "";
  const size_t colon = detail.find(": ", at);
  std::string rest = detail.substr(colon + 2);
  const size_t err = rest.find("\nstderr");
  return err == std::string::npos ? rest : rest.substr(0, err);
}

// A directory for the test's files, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "caesium-exec-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::optional<pid_t> read_pid(const std::string& file) {
  std::ifstream in(file);
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

// Gone means reaped (ESRCH) or, for a process that is not our child, a zombie waiting
// for init: either way it no longer runs.
bool process_gone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

}  // namespace

TEST_CASE("exec: the environment carries the invocation, the handler's env and the daemon's") {
  TestLoop loop;
  setenv("INHERITED_FROM_DAEMON", "yes", 1);
  HandlerConfig c = sh("env | grep -E '^(CAESIUM_|HANDLER_|INHERITED_)' | sort");
  c.env = {{"HANDLER_COLOUR", "blue"}, {"CAESIUM_FIRE_ID", "spoofed"}};
  const auto r = run_one(loop, c, sample_invocation());
  REQUIRE(r.has_value());
  CHECK(r->ok);
  CHECK(r->id == 42);
  const std::string out = stdout_of(r->detail);
  INFO(r->detail);
  for (const char* line : {"CAESIUM_ATTEMPT=3\n", "CAESIUM_RUN=1\n", "CAESIUM_ENTITY=acme\n", "CAESIUM_ENTRY=nightly-report\n",
                           "CAESIUM_FIRE_ID=f-0001\n", "CAESIUM_NODE=n1\n", "CAESIUM_POSSIBLE_DUPLICATE=true\n",
                           "CAESIUM_SCHEDULED=2026-03-29T01:30:00.250Z\n",
                           "CAESIUM_SCHEDULED_MS=1774747800250\n", "CAESIUM_SEQUENCE=17\n",
                           "CAESIUM_VOLUME=billing\n", "HANDLER_COLOUR=blue\n", "INHERITED_FROM_DAEMON=yes\n"}) {
    CHECK(out.find(line) != std::string::npos);
  }
  CHECK(out.find("spoofed") == std::string::npos);
  unsetenv("INHERITED_FROM_DAEMON");
}

TEST_CASE("exec: exec_environment orders, merges and protects the invocation's variables") {
  const char* base[] = {"PATH=/bin", "NOEQUALS", "CAESIUM_NODE=evil", "A=1", nullptr};
  const auto env = exec_environment(base, {{"A", "2"}, {"CAESIUM_VOLUME", "x"}}, sample_invocation(), "n9");
  CHECK(std::is_sorted(env.begin(), env.end()));
  CHECK(std::count(env.begin(), env.end(), "A=2") == 1);
  CHECK(std::count(env.begin(), env.end(), "PATH=/bin") == 1);
  CHECK(std::count(env.begin(), env.end(), "CAESIUM_NODE=n9") == 1);
  CHECK(std::count(env.begin(), env.end(), "CAESIUM_VOLUME=billing") == 1);
  CHECK(std::count(env.begin(), env.end(), "CAESIUM_POSSIBLE_DUPLICATE=true") == 1);
  CHECK(std::none_of(env.begin(), env.end(), [](const std::string& e) { return e.find("NOEQUALS") == 0; }));
  CHECK(env.size() == 2 + 11);  // A, PATH and the eleven CAESIUM_ variables
}

TEST_CASE("exec: the payload arrives on stdin, whole, even when large") {
  TestLoop loop;
  node::Invocation inv = sample_invocation();
  SECTION("small") {
    inv.payload = "hello\nworld";
    const auto r = run_one(loop, sh("cat"), inv);
    REQUIRE(r.has_value());
    CHECK(r->ok);
    CHECK(stdout_of(r->detail) == "hello\nworld");
  }
  SECTION("larger than a pipe buffer") {
    inv.payload.assign(3 * 1024 * 1024 + 7, 'p');
    const auto r = run_one(loop, sh("wc -c"), inv);
    REQUIRE(r.has_value());
    CHECK(r->ok);
    CHECK(stdout_of(r->detail).find("3145735") != std::string::npos);
  }
  SECTION("empty: stdin is closed at once") {
    const auto r = run_one(loop, sh("cat; echo end"), inv);
    REQUIRE(r.has_value());
    CHECK(stdout_of(r->detail) == "end\n");
  }
}

TEST_CASE("exec: a child that never reads stdin blocks nothing") {
  TestLoop loop;
  node::Invocation inv = sample_invocation();
  inv.payload.assign(4 * 1024 * 1024, 'x');  // far more than the pipe holds
  SECTION("exits at once") {
    const auto r = run_one(loop, sh("exit 0"), inv);
    REQUIRE(r.has_value());
    CHECK(r->ok);
  }
  SECTION("closes stdin, then keeps working") {
    const auto r = run_one(loop, sh("exec 0<&-; echo still-here"), inv);
    REQUIRE(r.has_value());
    CHECK(r->ok);
    CHECK(stdout_of(r->detail) == "still-here\n");
  }
}

TEST_CASE("exec: exit status decides success, and the detail says why") {
  TestLoop loop;
  SECTION("0") {
    const auto r = run_one(loop, sh("echo fine"), sample_invocation());
    REQUIRE(r.has_value());
    CHECK(r->ok);
    CHECK(r->detail == "exit status 0\nstdout: fine\n");
  }
  SECTION("nonzero, with stderr") {
    const auto r = run_one(loop, sh("echo boom >&2; exit 3"), sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail == "exit status 3\nstderr: boom\n");
  }
  SECTION("killed by a signal") {
    const auto r = run_one(loop, sh("kill -9 $$"), sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail.rfind("killed by signal 9", 0) == 0);
  }
}

TEST_CASE("exec: a missing program or directory fails the invocation, asynchronously") {
  TestLoop loop;
  SECTION("program") {
    HandlerConfig c = sh("");
    c.argv = {"/nonexistent/caesium-no-such-program", "arg"};
    const auto r = run_one(loop, c, sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail.find("cannot run '/nonexistent/caesium-no-such-program'") != std::string::npos);
    CHECK(r->detail.find("ENOENT") != std::string::npos);
  }
  SECTION("a bare name that is not on PATH") {
    HandlerConfig c = sh("");
    c.argv = {"caesium-no-such-program-on-path"};
    const auto r = run_one(loop, c, sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail.find("ENOENT") != std::string::npos);
  }
  SECTION("working directory") {
    HandlerConfig c = sh("pwd");
    c.cwd = "/nonexistent/caesium-dir";
    const auto r = run_one(loop, c, sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail.find("/nonexistent/caesium-dir") != std::string::npos);
  }
}

TEST_CASE("exec: the working directory is the handler's cwd") {
  TestLoop loop;
  TempDir dir;
  HandlerConfig c = sh("pwd");
  c.cwd = dir.path.string();
  const auto r = run_one(loop, c, sample_invocation());
  REQUIRE(r.has_value());
  CHECK(r->ok);
  CHECK(stdout_of(r->detail) == std::filesystem::canonical(dir.path).string() + "\n");
}

TEST_CASE("exec: big output is cut to its last bytes") {
  TestLoop loop;
  const auto r = run_one(loop, sh("head -c 100000 /dev/zero | tr '\\0' a; echo END; head -c 9000 /dev/zero >&2"),
                         sample_invocation());
  REQUIRE(r.has_value());
  CHECK(r->ok);
  CHECK(r->detail.find("stdout (last 4096 of 100004 bytes): aaaa") != std::string::npos);
  CHECK(r->detail.find("aaaaEND\n") != std::string::npos);
  CHECK(r->detail.find("stderr (last 4096 of 9000 bytes): ") != std::string::npos);
  CHECK(r->detail.size() < 2 * kExecOutputTailBytes * 3 + 200);  // NULs shown as U+FFFD (3 bytes)
}

// The timeouts are long enough for the shell to start and write its pid file even on
// a loaded machine; nothing asserts how long the kill took.
TEST_CASE("exec: a timeout kills the child and its process group") {
  TestLoop loop;
  TempDir dir;
  const std::string pids = dir.file("pids");
  SECTION("SIGTERM is enough") {
    const auto r = run_one(loop, sh("sleep 30 & echo $! > " + pids + "; wait", 1000), sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail.rfind("timed out after 1s; sent SIGTERM", 0) == 0);
    const auto grandchild = read_pid(pids);
    REQUIRE(grandchild.has_value());
    CHECK(loop.run_until([&] { return process_gone(*grandchild); }));
  }
  SECTION("SIGKILL after the grace period when SIGTERM is ignored") {
    const auto r = run_one(loop, sh("trap '' TERM; echo $$ > " + pids + "; while :; do sleep 1; done", 1000),
                           sample_invocation());
    REQUIRE(r.has_value());
    CHECK_FALSE(r->ok);
    CHECK(r->detail.rfind("timed out after 1s; sent SIGKILL, killed by signal 9", 0) == 0);
    const auto child = read_pid(pids);
    REQUIRE(child.has_value());
    CHECK(process_gone(*child));
  }
}

// overlap = replace: stop() ends the run as a timeout does (SIGTERM to the group, SIGKILL
// after the grace), and the result says replaced — not a failure, not timed out.
TEST_CASE("exec: stop ends the run and its process group, and the result says replaced") {
  TestLoop loop;
  TempDir dir;
  const std::string pids = dir.file("pids");
  auto ex = make_exec_executor(loop.get(), "n1", sh("sleep 30 & echo $! > " + pids + "; wait", 60'000));
  const node::Invocation inv = sample_invocation();
  std::optional<node::InvocationResult> result;
  ex->run(inv, [&](const node::InvocationResult& r) { result = r; });
  REQUIRE(loop.run_until([&] { return read_pid(pids).has_value(); }));
  CHECK_FALSE(ex->stop(inv.id + 1));  // not one of its runs
  CHECK(ex->stop(inv.id));
  REQUIRE(loop.run_until([&] { return result.has_value(); }));
  CHECK_FALSE(result->ok);
  CHECK(result->replaced);
  CHECK_FALSE(result->timed_out);
  CHECK(result->detail.rfind("stopped: replaced by a later occurrence; sent SIGTERM", 0) == 0);
  const auto grandchild = read_pid(pids);
  REQUIRE(grandchild.has_value());
  CHECK(loop.run_until([&] { return process_gone(*grandchild); }));
  CHECK(ex->running() == 0);
  CHECK_FALSE(ex->stop(inv.id));  // ended: nothing left to stop
  ex.reset();
  CHECK(loop.drain());
}

TEST_CASE("exec: the entry's timeout, when set, replaces the handler's, and the result says timed_out") {
  TestLoop loop;
  node::Invocation inv = sample_invocation();
  inv.timeout_ms = 1000;  // the entry's: 1 s, under the handler's 60 s
  const auto r = run_one(loop, sh("sleep 30", 60'000), inv);
  REQUIRE(r.has_value());
  CHECK_FALSE(r->ok);
  CHECK(r->timed_out);
  CHECK(r->detail.rfind("timed out after 1s", 0) == 0);
  // A run that ends by itself is not timed out, and a failure is not a time-out.
  inv.timeout_ms = 60'000;
  const auto fast = run_one(loop, sh("exit 3", 1000), inv);
  REQUIRE(fast.has_value());
  CHECK_FALSE(fast->ok);
  CHECK_FALSE(fast->timed_out);
}

TEST_CASE("exec: cancel_all and destruction kill every child, call nothing, leave no zombie") {
  TestLoop loop;
  TempDir dir;
  // Each child learns its pid file from its payload, and then sleeps long.
  auto ex = make_exec_executor(loop.get(), "n1", sh("read PID_FILE; echo $$ > \"$PID_FILE\"; exec sleep 30"));
  int calls = 0;
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) {
    files.push_back(dir.file("pid" + std::to_string(i)));
    node::Invocation inv = sample_invocation();
    inv.payload = files.back() + "\n";
    ex->run(inv, [&](const node::InvocationResult&) { ++calls; });
  }
  CHECK(ex->running() == 3);
  REQUIRE(loop.run_until([&] {
    return std::all_of(files.begin(), files.end(), [](const std::string& f) { return read_pid(f).has_value(); });
  }));
  std::vector<pid_t> pids;
  for (const auto& f : files) pids.push_back(*read_pid(f));
  for (pid_t p : pids) CHECK(kill(p, 0) == 0);  // running

  SECTION("cancel_all") {
    ex->cancel_all();
    CHECK(ex->running() == 0);
  }
  SECTION("destruction") { ex.reset(); }
  CHECK(loop.drain());
  CHECK(calls == 0);
  for (pid_t p : pids) {
    CHECK(kill(p, 0) == -1);  // reaped by the loop: not even a zombie
    CHECK(errno == ESRCH);
  }
  ex.reset();
  CHECK(loop.drain());
}

TEST_CASE("exec: done may destroy the executor") {
  TestLoop loop;
  auto ex = make_exec_executor(loop.get(), "n1", sh("echo hi"));
  bool called = false;
  ex->run(sample_invocation(), [&](const node::InvocationResult& r) {
    CHECK(r.ok);
    called = true;
    ex.reset();
  });
  CHECK(loop.run_until([&] { return called; }));
  CHECK(loop.drain());
}

TEST_CASE("exec: many invocations at once each get their own result") {
  TestLoop loop;
  auto ex = make_exec_executor(loop.get(), "n1", sh("echo \"$CAESIUM_FIRE_ID\"; exit $CAESIUM_ATTEMPT"));
  std::map<uint64_t, node::InvocationResult> results;
  for (uint32_t i = 0; i < 20; ++i) {
    node::Invocation inv = sample_invocation();
    inv.id = i;
    inv.fire_id = "fire-" + std::to_string(i);
    inv.attempt = i % 2;
    ex->run(inv, [&](const node::InvocationResult& r) { results[r.id] = r; });
  }
  REQUIRE(loop.run_until([&] { return results.size() == 20; }));
  for (uint32_t i = 0; i < 20; ++i) {
    CHECK(results[i].ok == (i % 2 == 0));
    CHECK(stdout_of(results[i].detail) == "fire-" + std::to_string(i) + "\n");
  }
  ex.reset();
  CHECK(loop.drain());
}
