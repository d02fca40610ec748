// The daemon's log: one line per event on stderr, filtered by level.
//
//   <RFC 3339 UTC, ms> <level> node=<id> [occ=<volume>/<entity>/<name>@<scheduled>] <message>
//   2026-03-01T12:00:05.012Z info node=n1 occ=main/demo/every-5s@2026-03-01T12:00:05Z completed ok on n1
//
// Lines go out in write(2) calls of whole lines, at most PIPE_BUF (4096) bytes each
// unless one line alone is longer, so lines of concurrent processes sharing a terminal
// or a pipe do not interleave mid-line.  The default (stderr) sink collects debug and
// info lines and writes them at flush(), which the runtime calls once per event-loop
// iteration (and at stop): at tens of thousands of runs a second, a write(2) per line
// cost more than the line.  A warn or error line is written at once, after the lines
// collected before it.  A process killed by a signal loses at most the lines of the
// iteration it was in.  The logger reads the realtime clock
// (it is outside the sans-IO folders); the formatting functions below are pure, so
// tests check the format without a clock.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "node/core/node.h"
#include "node/daemon/config/config.h"

namespace caesium::daemon {

std::string_view to_string(LogLevel level);
// "debug" | "info" | "warn" (or "warning") | "error"; anything else is an Error.
Result<LogLevel> parse_log_level(std::string_view text);

// Which occurrence a line is about.
struct OccurrenceRef {
  std::string volume;
  std::string entry_key;  // "<entity>/caesium/schedule/<name>"
  int64_t scheduled_utc_ms = 0;
};

// The text after "occ=": "<volume>/<entity>/<name>@<RFC 3339>".  A key that is not a
// schedule key is printed as it is.
std::string format_occurrence(const OccurrenceRef& occ);

// A whole line without the trailing newline.  `now_utc_ms` is printed with exactly
// three fraction digits so lines sort and align.
std::string format_log_line(int64_t now_utc_ms, LogLevel level, std::string_view node_id,
                            const OccurrenceRef* occ, std::string_view message);

// How a Node event is logged: its level, the occurrence it is about (fire events),
// and the message.  Node id conflicts are errors; other warnings are warnings;
// scheduler steps an operator follows (owned, dispatched, completed...) are info,
// chatty ones (due, granted) debug.
struct EventLine {
  LogLevel level = LogLevel::kInfo;
  std::optional<OccurrenceRef> occ;
  std::string message;
};
EventLine describe_event(const node::NodeEvent& event);
EventLine describe_fire(const schedule::FireEvent& f);
// The level a fire event is logged at (describe_event's), without building its message.
LogLevel fire_level(const schedule::FireEvent& f);

class Logger {
 public:
  // Receives each line without its newline, at once.  The default collects lines for
  // stderr (see above).
  using Sink = std::function<void(std::string_view line)>;

  Logger(std::string node_id, LogLevel level, Sink sink = {});
  // Collects lines for `fd` instead of stderr (tests).
  Logger(std::string node_id, LogLevel level, int fd);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  // Writes the lines collected so far (default sink; nothing to do with another sink).
  void flush() const;

  void set_level(LogLevel level) { level_ = level; }
  LogLevel level() const { return level_; }
  bool enabled(LogLevel level) const { return level >= level_; }

  void log(LogLevel level, std::string_view message) const;
  void log(LogLevel level, const OccurrenceRef& occ, std::string_view message) const;
  void event(const node::NodeEvent& event) const { line(describe_event(event)); }
  void line(const EventLine& line) const;

  void debug(std::string_view m) const { log(LogLevel::kDebug, m); }
  void info(std::string_view m) const { log(LogLevel::kInfo, m); }
  void warn(std::string_view m) const { log(LogLevel::kWarn, m); }
  void error(std::string_view m) const { log(LogLevel::kError, m); }

 private:
  void write(LogLevel level, const OccurrenceRef* occ, std::string_view message) const;

  std::string node_id_;
  LogLevel level_;
  Sink sink_;  // empty: collect lines for fd_
  int fd_ = 2;
  mutable std::mutex mu_;
  mutable std::string pending_;  // whole lines, each with its newline
};

// Realtime UTC in ms (CLOCK_REALTIME).
int64_t realtime_now_ms();

}  // namespace caesium::daemon
