#include "schedule/cron_preview.h"

#include <charconv>
#include <optional>

#include "base/time.h"
#include "schedule/cron.h"
#include "schedule/zone.h"

namespace caesium::schedule {
namespace {

CronPreviewOutput fail(const std::string& message) {
  CronPreviewOutput o;
  o.exit_code = 2;
  o.err = "error: " + message + "\n";
  return o;
}

// Matches "--name VALUE" and "--name=VALUE"; advances i past the value.
std::optional<std::string> flag_value(const std::vector<std::string>& args, size_t& i, const std::string& name,
                                      bool& missing) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) {
      missing = true;
      return std::nullopt;
    }
    return args[++i];
  }
  if (a.rfind(name + "=", 0) == 0) return a.substr(name.size() + 1);
  return std::nullopt;
}

}  // namespace

CronPreviewOutput run_cron_preview(const std::vector<std::string>& args, int64_t now_utc_ms) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    CronPreviewOutput o;
    o.exit_code = args.empty() ? 2 : 0;
    (args.empty() ? o.err : o.out) = kCronUsage;
    return o;
  }
  if (args[0] != "next") return fail("unknown cron subcommand '" + args[0] + "'\n" + kCronUsage);
  std::string expr, tz = "UTC", from, count_text = "5";
  bool positional_only = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool missing = false;
    if (!positional_only && a == "--") {
      positional_only = true;
      continue;
    }
    if (!positional_only && a.size() > 1 && a[0] == '-') {
      if (auto v = flag_value(args, i, "--tz", missing)) {
        tz = *v;
      } else if (auto f = flag_value(args, i, "--from", missing)) {
        from = *f;
      } else if (auto n = flag_value(args, i, "-n", missing)) {
        count_text = *n;
      } else if (missing) {
        return fail("option '" + a + "' needs a value");
      } else {
        return fail("unknown option '" + a + "'\n" + kCronUsage);
      }
      if (missing) return fail("option '" + a + "' needs a value");
      continue;
    }
    expr += expr.empty() ? a : " " + a;
  }
  if (expr.empty()) return fail(std::string("missing EXPR\n") + kCronUsage);
  int count = 0;
  const auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (ec != std::errc() || end != count_text.data() + count_text.size() || count < 1 || count > 1000) {
    return fail("-n: '" + count_text + "' is not a count from 1 to 1000");
  }
  auto zone = Zone::find(tz);
  if (!zone.ok()) return fail("--tz: " + zone.error().message);
  int64_t after_ms = now_utc_ms;
  if (!from.empty()) {
    auto t = parse_rfc3339_ms(from);
    if (!t.ok()) return fail("--from: " + t.error().message);
    after_ms = *t;
  }
  auto cron = CronExpr::parse(expr);
  if (!cron.ok()) return fail(cron.error().message);
  CronPreviewOutput o;
  const int64_t anchor_ms = after_ms;  // @every counts from --from (or now)
  for (int k = 0; k < count; ++k) {
    // --from is exclusive, like next_after: an occurrence exactly at --from is not shown.
    const auto next = cron->next_after(after_ms, *zone, anchor_ms);
    if (!next) {
      o.err = "note: no further occurrence within 400 years\n";
      break;
    }
    o.out += format_rfc3339_offset(*next, zone->offset_at(*next / 1000)) + "\n";
    after_ms = *next;
  }
  return o;
}

}  // namespace caesium::schedule
