// caesium cron next EXPR [--tz ZONE] [--from RFC3339] [-n N] [--entry ENTITY/NAME]
//
// Prints the next N instants at which a cron expression fires, one per line, in RFC 3339
// with the zone's UTC offset at that instant.  --entry names the entry whose key H
// hashes (H needs it; without H it changes nothing).  The parsing of the expression, the zone
// and the instants is schedule/'s (CronExpr, Zone) and base/'s; this file reads the
// flags, takes "now" from Io for the default --from, and prints.  Exit status: 0 ok,
// 2 bad expression, zone or flag.
#include <memory>

#include "base/time.h"
#include "node/cli/commands.h"
#include "node/cli/parse.h"
#include "schedule/cron.h"
#include "schedule/entry.h"
#include "schedule/zone.h"

namespace caesium::cli {
namespace {

struct CronOptions {
  std::vector<std::string> expr;  // one quoted argument or several words, joined by spaces
  std::string tz = "UTC";
  std::string from;  // "" = now
  int64_t count = 5;
  std::string entry;  // "ENTITY/NAME" whose key H hashes; "" = none
};

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += out.empty() ? w : " " + w;
  return out;
}

// "ENTITY/NAME" -> the entry's store key.  Identifiers never contain '/', so the split
// is unambiguous.
Result<std::string> entry_key_of(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return Error("expected ENTITY/NAME, e.g. acme/report");
  const std::string_view entity = text.substr(0, slash), name = text.substr(slash + 1);
  if (Status s = schedule::validate_identifier(entity, "entity"); !s.ok()) return s.error();
  if (Status s = schedule::validate_identifier(name, "name"); !s.ok()) return s.error();
  return schedule::entry_key(entity, name);
}

Result<schedule::CronExpr> parse_expr(const CronOptions& o) {
  const std::string text = joined(o.expr);
  if (!o.entry.empty()) return schedule::CronExpr::parse(text, entry_key_of(o.entry).value());
  auto cron = schedule::CronExpr::parse(text);
  // The one error a key would cure gets the hint how to give one.
  if (!cron.ok() && schedule::CronExpr::parse(text, "any/caesium/schedule/key").ok()) {
    return Error(cron.error().message + " (give --entry ENTITY/NAME: H hashes that entry's key)");
  }
  return cron;
}

int run_cron_next(const CLI::App& command, const CronOptions& o, Io& io) {
  auto cron = parse_expr(o);
  if (!cron.ok()) return usage_error(command, cron.error().message, io.err);
  // Both were checked by the parser's validators; asking again gives the values.
  const auto zone = schedule::Zone::find(o.tz).value();
  int64_t after_ms = o.from.empty() ? io.now_utc_ms() : parse_rfc3339_ms(o.from).value();
  const int64_t anchor_ms = after_ms;  // @every counts from --from (or now)
  for (int64_t k = 0; k < o.count; ++k) {
    // --from is exclusive, like next_after: an occurrence exactly at --from is not shown.
    const auto next = cron->next_after(after_ms, zone, anchor_ms);
    if (!next) {
      io.err << "note: no further occurrence within 400 years\n";
      break;
    }
    io.out << format_rfc3339_offset(*next, zone.offset_at(*next / 1000)) << "\n";
    after_ms = *next;
  }
  return 0;
}

}  // namespace

void add_cron_command(CLI::App& root, Io& io, int& exit_code) {
  CLI::App* cron = root.add_subcommand("cron", "preview cron expressions");
  cron->require_subcommand(1);
  CLI::App* next = cron->add_subcommand("next", "print the next instants at which a cron expression fires");
  next->footer(
      "EXPR may be one quoted argument or several (they are joined with spaces); use -- before an EXPR that\n"
      "starts with '-'.  --from is exclusive.  docs/cron.md has the expression syntax.");
  auto o = std::make_shared<CronOptions>();
  next->add_option("EXPR", o->expr, "the cron expression")->required();
  next->add_option("--tz", o->tz, "IANA time zone (default UTC)")
      ->type_name("ZONE")
      ->check(checked_by([](const std::string& name) -> Status {
        auto z = schedule::Zone::find(name);
        return z.ok() ? Status::success() : Status(z.error());
      }));
  next->add_option("--from", o->from, "start after this instant (default now)")
      ->type_name("RFC3339")
      ->check(checked_by([](const std::string& text) -> Status {
        auto t = parse_rfc3339_ms(text);
        return t.ok() ? Status::success() : Status(t.error());
      }));
  next->add_option("-n,--count", o->count, "how many instants (default 5, at most 1000)")
      ->type_name("N")
      ->check(whole_number(1, 1000));
  next->add_option("--entry", o->entry, "the entry whose key H hashes (needed for H)")
      ->type_name("ENTITY/NAME")
      ->check(checked_by([](const std::string& text) -> Status {
        auto key = entry_key_of(text);
        return key.ok() ? Status::success() : Status(key.error());
      }));
  next->callback([next, o, &io, &exit_code] { exit_code = run_cron_next(*next, *o, io); });
}

}  // namespace caesium::cli
