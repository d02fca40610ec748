// Log lines: the format, one line per event whatever the message holds, levels, and
// how Node events are worded and graded.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "node/daemon/runtime/log.h"

using namespace caesium;
using namespace caesium::daemon;

TEST_CASE("log: line format with and without an occurrence") {
  // 2026-03-01T12:00:05.012Z
  const int64_t t = 1'772'366'405'012;
  CHECK(format_log_line(t, LogLevel::kInfo, "n1", nullptr, "hello") == "2026-03-01T12:00:05.012Z info node=n1 hello");
  CHECK(format_log_line(t - 12, LogLevel::kWarn, "n1", nullptr, "x") == "2026-03-01T12:00:05.000Z warn node=n1 x");
  OccurrenceRef occ{"main", "demo/caesium/schedule/every-5s", 1'772'366'405'000};
  CHECK(format_log_line(t, LogLevel::kError, "n2", &occ, "lost") ==
        "2026-03-01T12:00:05.012Z error node=n2 occ=main/demo/every-5s@2026-03-01T12:00:05Z lost");
  // A key that is not a schedule key is shown as it is.
  OccurrenceRef odd{"v", "weird-key", 0};
  CHECK(format_occurrence(odd) == "v/weird-key@1970-01-01T00:00:00Z");
}

TEST_CASE("log: a message never spans lines") {
  const std::string line = format_log_line(0, LogLevel::kInfo, "n1", nullptr, "exit 0\nstdout: a\r\x01" "b\tc");
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find('\r') == std::string::npos);
  CHECK(line == "1970-01-01T00:00:00.000Z info node=n1 exit 0\\nstdout: a\\r\\x01b\tc");
}

TEST_CASE("log: levels parse and filter") {
  CHECK(*parse_log_level("debug") == LogLevel::kDebug);
  CHECK(*parse_log_level("warning") == LogLevel::kWarn);
  CHECK_FALSE(parse_log_level("verbose").ok());
  std::vector<std::string> lines;
  Logger log("n1", LogLevel::kWarn, [&](std::string_view l) { lines.emplace_back(l); });
  log.info("dropped");
  log.warn("kept");
  log.error("kept too");
  log.set_level(LogLevel::kDebug);
  log.debug("now kept");
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::EndsWith(" warn node=n1 kept"));
  CHECK_THAT(lines[2], Catch::EndsWith(" debug node=n1 now kept"));
}

namespace {

// Every write(2) the logger made to a SOCK_SEQPACKET socket, one string each (the
// socket keeps write boundaries).
std::vector<std::string> writes_on(int fd) {
  std::vector<std::string> out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    out.emplace_back(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

TEST_CASE("log: the default sink writes collected lines at flush, in whole lines of at most 4096 bytes") {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
  {
    Logger log("n1", LogLevel::kInfo, sv[0]);
    log.info("first");
    log.debug("filtered");
    log.info("second");
    CHECK(writes_on(sv[1]).empty());  // collected, not written
    log.flush();
    auto w = writes_on(sv[1]);
    REQUIRE(w.size() == 1);
    CHECK(w[0].find(" info node=n1 first\n") != std::string::npos);
    CHECK_THAT(w[0], Catch::EndsWith(" info node=n1 second\n"));
    log.flush();
    CHECK(writes_on(sv[1]).empty());  // nothing twice

    // A warning goes out at once, after what was collected before it.
    log.info("before");
    log.warn("alarm");
    w = writes_on(sv[1]);
    REQUIRE(w.size() == 1);
    CHECK(w[0].find("before") < w[0].find("alarm"));
    CHECK_THAT(w[0], Catch::EndsWith(" warn node=n1 alarm\n"));

    // Many lines: every write holds whole lines and stays within 4096 bytes; none lost.
    const int n = 500;
    for (int i = 0; i < n; ++i) log.info("line " + std::to_string(i) + " " + std::string(40, 'x'));
    log.flush();
    w = writes_on(sv[1]);
    CHECK(w.size() > 1);
    std::string all;
    for (const auto& chunk : w) {
      CHECK(chunk.size() <= 4096);
      CHECK(chunk.back() == '\n');
      CHECK(chunk.find(" info node=n1 line ") < 30);  // starts at a line's start
      all += chunk;
    }
    int lines = 0;
    for (size_t p = 0; (p = all.find("\n", p)) != std::string::npos; ++p) ++lines;
    CHECK(lines == n);
    CHECK(all.find("line 0 ") < all.find("line 499 "));

    // A line longer than a write's budget goes alone, whole.
    log.info(std::string(5000, 'y'));
    log.flush();
    w = writes_on(sv[1]);
    REQUIRE(w.size() == 1);
    CHECK(w[0].size() > 5000);

    log.info("at exit");
  }  // the destructor writes what is left
  auto w = writes_on(sv[1]);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Catch::EndsWith(" info node=n1 at exit\n"));
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST_CASE("log: node events") {
  node::NodeEvent conflict;
  conflict.kind = node::NodeEvent::Kind::kWarning;
  conflict.text = "node id conflict: n2: another process uses this id";
  CHECK(describe_event(conflict).level == LogLevel::kError);

  node::NodeEvent warning;
  warning.kind = node::NodeEvent::Kind::kWarning;
  warning.text = "dropped a frame";
  CHECK(describe_event(warning).level == LogLevel::kWarn);

  node::NodeEvent member;
  member.kind = node::NodeEvent::Kind::kMember;
  member.subject = "n3";
  member.state = gossip::MemberState::kSuspect;
  member.incarnation = 4;
  CHECK(describe_event(member).message == "member n3 is suspect (incarnation 4)");

  node::NodeEvent master;
  master.kind = node::NodeEvent::Kind::kMaster;
  master.volume = "main";
  master.subject = "n1";
  CHECK(describe_event(master).message == "master of volume main is n1");
  master.subject.clear();
  CHECK(describe_event(master).level == LogLevel::kWarn);

  node::NodeEvent config;
  config.kind = node::NodeEvent::Kind::kConfig;
  config.text = "cluster config conflict: node n2 holds a different config with the same epoch 3; keeping ours";
  CHECK(describe_event(config).level == LogLevel::kError);

  node::NodeEvent fire;
  fire.kind = node::NodeEvent::Kind::kFire;
  fire.fire.volume = "main";
  fire.fire.occ = {"demo/caesium/schedule/report", 1'772'366'400'000};
  fire.fire.kind = schedule::FireEvent::Kind::kCompleted;
  fire.fire.node = "n2";
  fire.fire.attempt = 1;
  fire.fire.ok = false;
  fire.fire.lateness_ms = 3;
  fire.fire.detail = "exit status 1";
  auto line = describe_event(fire);
  CHECK(line.level == LogLevel::kWarn);
  REQUIRE(line.occ.has_value());
  CHECK(format_occurrence(*line.occ) == "main/demo/report@2026-03-01T12:00:00Z");
  CHECK(line.message == "completed failed (attempt 1 on n2, 3 ms late): exit status 1");
  fire.fire.kind = schedule::FireEvent::Kind::kOwned;
  fire.fire.path = schedule::FirePath::kDegraded;
  CHECK_THAT(describe_event(fire).message, Catch::Contains("possible duplicate"));
  CHECK(describe_event(fire).level == LogLevel::kInfo);
  // The healthy path of a run is debug: one info line per run (its completion).
  fire.fire.path = schedule::FirePath::kQuorum;
  CHECK(describe_event(fire).level == LogLevel::kDebug);
  fire.fire.kind = schedule::FireEvent::Kind::kDispatched;
  CHECK(describe_event(fire).level == LogLevel::kDebug);
  fire.fire.kind = schedule::FireEvent::Kind::kAccepted;
  CHECK(describe_event(fire).level == LogLevel::kDebug);
  fire.fire.kind = schedule::FireEvent::Kind::kCompleted;
  fire.fire.ok = true;
  CHECK(describe_event(fire).level == LogLevel::kInfo);
  fire.fire.kind = schedule::FireEvent::Kind::kLost;
  CHECK(describe_event(fire).level == LogLevel::kError);
  fire.fire.kind = schedule::FireEvent::Kind::kDue;
  CHECK(describe_event(fire).level == LogLevel::kDebug);
}
