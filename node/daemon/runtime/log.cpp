#include "node/daemon/runtime/log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "base/time.h"
#include "schedule/entry.h"

namespace caesium::daemon {

namespace {

const char* member_state_name(gossip::MemberState s) {
  switch (s) {
    case gossip::MemberState::kAlive: return "alive";
    case gossip::MemberState::kSuspect: return "suspect";
    case gossip::MemberState::kDead: return "dead";
    case gossip::MemberState::kLeft: return "left";
  }
  return "?";
}

// "2026-03-01T12:00:05.012Z": always three fraction digits (base/time.h drops them
// when zero, which is right for instants in messages but not for a log column).
std::string timestamp(int64_t utc_ms) {
  int64_t secs = utc_ms / 1000;
  int64_t ms = utc_ms % 1000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  const auto t = static_cast<time_t>(secs);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[96];  // generous: the compiler cannot bound tm_year
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string attempt_text(const schedule::FireEvent& f) { return "attempt " + std::to_string(f.attempt); }

void append_detail(std::string& m, const std::string& detail) {
  if (!detail.empty()) m += ": " + detail;
}

void write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to report a failing stderr
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// Lines are written in one write(2) up to this size: writes to a pipe this small are
// atomic, so concurrent writers never split each other's lines.
constexpr size_t kAtomicWriteBytes = 4096;

}  // namespace

EventLine describe_fire(const schedule::FireEvent& f) {
  using K = schedule::FireEvent::Kind;
  EventLine line;
  line.level = fire_level(f);
  line.occ = OccurrenceRef{f.volume, f.occ.entry_key, f.occ.scheduled_utc_ms};
  const std::string semantics = f.at_most_once ? "at-most-once" : "at-least-once";
  std::string& m = line.message;
  switch (f.kind) {
    case K::kDue:
      m = "due (" + semantics + ")";
      break;
    case K::kOwned:
      m = std::string("owned via ") + schedule::to_string(f.path) + " (" + semantics + ")";
      if (f.path != schedule::FirePath::kQuorum) m += ", possible duplicate";
      break;
    case K::kDispatched:
      m = "dispatched " + attempt_text(f) + " to " + f.node;
      break;
    case K::kAccepted:
      m = "accepted " + attempt_text(f) + " on " + f.node;
      break;
    case K::kCompleted:
      m = std::string("completed ") + (f.ok ? "ok" : f.replaced ? "replaced" : "failed") + " (" + attempt_text(f) + " on " + f.node +
          ", " + std::to_string(f.lateness_ms) + " ms late)";
      append_detail(m, f.detail);
      break;
    case K::kWithheld:
      m = "withheld: at-most-once without a quorum of replicas";
      append_detail(m, f.detail);
      break;
    case K::kMissed:
      m = "missed";
      append_detail(m, f.detail);
      break;
    case K::kLost:
      m = "lost (at-most-once in flight whose owner or worker vanished; not re-run)";
      append_detail(m, f.detail);
      break;
    case K::kSkipped:
      m = "skipped";  // the detail says why: the misfire policy, or a change of the entry
      append_detail(m, f.detail);
      break;
    case K::kSkippedOverlap:
      m = "skipped_overlap";  // the detail says why: a run going on (forbid), or replaced
      append_detail(m, f.detail);
      break;
    case K::kRetryScheduled:
      m = "retry: the run failed; " + attempt_text(f) + " follows after the back-off";
      append_detail(m, f.detail);
      break;
    case K::kRedispatched:
      m = "redispatched " + attempt_text(f) + " to " + f.node;
      append_detail(m, f.detail);
      break;
    case K::kGranted:
      m = "granted the claim of " + f.node + " (attempt " + std::to_string(f.attempt) + " to " + f.detail + ")";
      break;
    case K::kDeferred:
      m = "deferred to another process";
      append_detail(m, f.detail);
      break;
    case K::kStarted:
      m = "started " + attempt_text(f) + " on " + f.node + ", " + std::to_string(f.lateness_ms) + " ms late";
      break;
  }
  return line;
}

LogLevel fire_level(const schedule::FireEvent& f) {
  using K = schedule::FireEvent::Kind;
  switch (f.kind) {
    // The healthy path of every run (due, grants, quorum owner, dispatch, acceptance) is
    // debug: at tens of thousands of runs a second, more lines per run would cost more
    // than the runs.  Each run still leaves one info line, its completion; a run owned
    // any other way than by a quorum is worth an info line of its own.
    case K::kDue:
    case K::kGranted:
    case K::kDeferred:
    case K::kStarted:
    case K::kDispatched:
    case K::kAccepted: return LogLevel::kDebug;
    case K::kOwned: return f.path == schedule::FirePath::kQuorum ? LogLevel::kDebug : LogLevel::kInfo;
    case K::kCompleted: return f.ok || f.replaced ? LogLevel::kInfo : LogLevel::kWarn;
    case K::kWithheld:
    case K::kMissed:
    case K::kRedispatched: return LogLevel::kWarn;
    case K::kLost: return LogLevel::kError;
    case K::kSkipped:
    case K::kSkippedOverlap:
    case K::kRetryScheduled: return LogLevel::kInfo;
  }
  return LogLevel::kInfo;
}

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "?";
}

Result<LogLevel> parse_log_level(std::string_view text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn" || text == "warning") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  return Error("\"" + std::string(text) + "\" is not a log level (expected debug, info, warn or error)");
}

std::string format_occurrence(const OccurrenceRef& occ) {
  std::string out = occ.volume + "/";
  auto parsed = schedule::parse_entry_key(occ.entry_key);
  if (parsed) {
    out += parsed->entity + "/" + parsed->name;
  } else {
    out += occ.entry_key;
  }
  out += "@" + format_rfc3339_utc(occ.scheduled_utc_ms);
  return out;
}

std::string format_log_line(int64_t now_utc_ms, LogLevel level, std::string_view node_id, const OccurrenceRef* occ,
                            std::string_view message) {
  std::string line = timestamp(now_utc_ms);
  line += ' ';
  line += to_string(level);
  line += " node=";
  line += node_id;
  if (occ != nullptr) {
    line += " occ=";
    line += format_occurrence(*occ);
  }
  line += ' ';
  // One event, one line: handler output and remote text may hold newlines or escapes.
  for (char ch : message) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c < 0x20 && c != '\t') {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", c);
      line += esc;
    } else {
      line += ch;
    }
  }
  return line;
}

EventLine describe_event(const node::NodeEvent& e) {
  EventLine line;
  switch (e.kind) {
    case node::NodeEvent::Kind::kMember:
      line.message = "member " + e.subject + " is " + member_state_name(e.state) + " (incarnation " +
                     std::to_string(e.incarnation) + ")";
      append_detail(line.message, e.text);
      break;
    case node::NodeEvent::Kind::kMaster:
      if (e.subject.empty()) {
        line.level = LogLevel::kWarn;
        line.message = "volume " + e.volume + " has no reachable master";
      } else {
        line.message = "master of volume " + e.volume + " is " + e.subject;
      }
      break;
    case node::NodeEvent::Kind::kFire:
      return describe_fire(e.fire);
    case node::NodeEvent::Kind::kConfig:
      line.level = e.text.find("conflict") != std::string::npos ? LogLevel::kError : LogLevel::kInfo;
      line.message = e.text;
      break;
    case node::NodeEvent::Kind::kWarning:
      // Two processes with one node id break every guarantee that rests on ids.
      line.level = e.text.find("node id conflict") != std::string::npos ? LogLevel::kError : LogLevel::kWarn;
      line.message = e.text;
      break;
  }
  return line;
}

Logger::Logger(std::string node_id, LogLevel level, Sink sink)
    : node_id_(std::move(node_id)), level_(level), sink_(std::move(sink)) {}

Logger::Logger(std::string node_id, LogLevel level, int fd)
    : node_id_(std::move(node_id)), level_(level), fd_(fd) {}

Logger::~Logger() { flush(); }

void Logger::flush() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.empty()) return;
  write_all(fd_, pending_);
  pending_.clear();
}

void Logger::log(LogLevel level, std::string_view message) const {
  if (enabled(level)) write(level, nullptr, message);
}

void Logger::log(LogLevel level, const OccurrenceRef& occ, std::string_view message) const {
  if (enabled(level)) write(level, &occ, message);
}

void Logger::line(const EventLine& l) const {
  if (enabled(l.level)) write(l.level, l.occ ? &*l.occ : nullptr, l.message);
}

void Logger::write(LogLevel level, const OccurrenceRef* occ, std::string_view message) const {
  std::string line = format_log_line(realtime_now_ms(), level, node_id_, occ, message);
  if (sink_) return sink_(line);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  // Keep each write(2) within kAtomicWriteBytes of whole lines.
  if (!pending_.empty() && pending_.size() + line.size() > kAtomicWriteBytes) {
    write_all(fd_, pending_);
    pending_.clear();
  }
  if (pending_.empty() && line.size() >= kAtomicWriteBytes) return write_all(fd_, line);
  pending_ += line;
  if (level >= LogLevel::kWarn) {
    write_all(fd_, pending_);
    pending_.clear();
  }
}

int64_t realtime_now_ms() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace caesium::daemon
