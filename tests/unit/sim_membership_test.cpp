// The membership checker: false suspicions and deaths judged against ground truth,
// detection and dissemination times, convergence after heal and restart.
#include <catch2/catch.hpp>

#include "sim/convergence_checker.h"
#include "sim/membership_checker.h"
#include "sim_test_process.h"

using namespace caesium;
using namespace caesium::sim;
using namespace caesium::sim::testing;

namespace {

struct Script {
  TestWorld& tw;
  // At virtual time t, `observer` reports its view of `subject` as `state`.
  void at(int64_t t, uint32_t observer, uint32_t subject, int state) {
    tw.world->at(t, [this, observer, subject, state] {
      Observation o;
      o.kind = Observation::Kind::kMemberState;
      o.subject = tw.world->spec(subject).id;
      o.state = state;
      tw.p(observer).observations.push_back(o);
      tw.world->drain_outputs(observer);
    });
  }
  void everyone_sees_everyone_alive(int64_t t, uint32_t n) {
    for (uint32_t o = 0; o < n; ++o) {
      for (uint32_t s = 0; s < n; ++s) {
        if (o != s) at(t, o, s, 0);
      }
    }
  }
};

}  // namespace

TEST_CASE("membership checker: false suspicions and deaths against ground truth", "[sim]") {
  MembershipChecker::Options opts;
  opts.suspect_window_ms = 5000;
  opts.dead_window_ms = 10000;
  MembershipChecker mc(opts);
  TestWorld tw(3, quiet_options(), {&mc});
  Script sc{tw};
  sc.everyone_sees_everyone_alive(0, 3);
  sc.at(10'000, 0, 1, 1);  // n1 suspects a healthy, reachable n2: false
  sc.at(11'000, 0, 1, 0);
  tw.world->at(20'000, [&] { tw.world->partition({{1}}); });
  sc.at(25'000, 0, 1, 1);  // n2 unreachable: a true suspicion
  tw.world->at(30'000, [&] { tw.world->heal_all(); });
  sc.at(31'000, 0, 1, 0);
  sc.at(33'000, 2, 1, 1);  // 3 s after heal, inside the window: not counted
  sc.at(34'000, 2, 1, 0);
  sc.at(45'000, 2, 1, 2);  // n3 declares a healthy n2 dead: a false death
  sc.at(46'000, 2, 1, 0);
  tw.world->at(50'000, [&] { tw.world->set_slow(0, 2000, 10'000); });
  sc.at(55'000, 1, 0, 1);  // suspicion of a slow node: counted apart
  sc.at(56'000, 1, 0, 0);
  tw.world->run_until(70'000);
  Report r;
  tw.world->finish(r);
  CHECK(r.figures.at("membership.false_suspicions") == 1);
  CHECK(r.figures.at("membership.false_deaths") == 1);
  CHECK(r.figures.at("membership.suspicions_of_slow") == 1);
  CHECK(r.figures.at("membership.events.suspect") == 4);
  CHECK(r.figures.at("membership.convergence.startup_ms.count") == 1);
  CHECK(r.figures.at("membership.bad_pairs_at_end") == 0);
}

TEST_CASE("membership checker: detection, dissemination and convergence times", "[sim]") {
  MembershipChecker mc;
  TestWorld tw(3, quiet_options(), {&mc});
  Script sc{tw};
  sc.everyone_sees_everyone_alive(0, 3);
  tw.world->at(100'000, [&] { tw.world->crash(2); });
  sc.at(101'000, 0, 2, 1);
  sc.at(102'000, 1, 2, 2);
  sc.at(104'000, 0, 2, 2);
  tw.world->at(200'000, [&] { tw.world->restart(2, false); });
  sc.at(203'000, 0, 2, 0);
  sc.at(205'000, 1, 2, 0);
  sc.at(206'000, 2, 0, 0);
  sc.at(207'000, 2, 1, 0);
  tw.world->run_until(300'000);
  CHECK(mc.bad_pairs() == 0);
  Report r;
  tw.world->finish(r);
  CHECK(r.figures.at("membership.detection.first_suspect_ms.max") == 1000);
  CHECK(r.figures.at("membership.detection.first_dead_ms.max") == 2000);
  CHECK(r.figures.at("membership.detection.dead_all_ms.max") == 4000);
  CHECK(r.figures.at("membership.detection.dead_999_ms.max") == 4000);
  CHECK(r.figures.at("membership.dissemination.dead_ms.max") == 2000);
  CHECK(r.figures.at("membership.dissemination.dead_999_ms.max") == 2000);
  CHECK(r.figures.at("membership.dissemination.join_ms.max") == 5000);
  // The crash made pairs bad until n3 was dead everywhere (converged at 104 s, 4 s),
  // the restart until 207 s (7 s).
  CHECK(r.figures.at("membership.convergence.after_heal_ms.count") == 2);
  CHECK(r.figures.at("membership.convergence.after_heal_ms.max") == 7000);
  CHECK(r.figures.at("membership.false_suspicions") == 0);
  CHECK(r.figures.at("membership.detection.incomplete") == 0);
}

TEST_CASE("membership checker: no convergence at the end is a violation when required", "[sim]") {
  MembershipChecker::Options opts;
  opts.require_convergence_at_end = true;
  MembershipChecker mc(opts);
  TestWorld tw(2, quiet_options(), {&mc});
  Script sc{tw};
  sc.at(10, 0, 1, 0);  // n2 never reports seeing n1
  tw.world->run_until(1000);
  Report r;
  tw.world->finish(r);
  CHECK(mc.bad_pairs() == 1);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == "membership_convergence");
}

TEST_CASE("convergence checker: stores must agree at some sample after the heal", "[sim]") {
  ConvergenceChecker cc(true);
  TestWorld tw(3, quiet_options(), {&cc});
  for (uint32_t i = 0; i < 3; ++i) tw.p(i).digests = {{"v1", 1}, {"v2", 10 + i}};
  tw.world->at(1000, [&] { cc.healed(*tw.world); });
  // v1 disagrees at the end but agreed at 3 s (a store that keeps changing); v2 never.
  for (int64_t t = 2000; t <= 5000; t += 1000) tw.world->at(t, [&] { cc.sample(*tw.world); });
  tw.world->at(4500, [&] { tw.p(0).digests[0].second = 2; });
  tw.world->run_until(6000);
  Report r;
  tw.world->finish(r);
  CHECK(r.figures.at("convergence.volumes_checked") == 2);
  CHECK(r.figures.at("convergence.volumes_never_agreed") == 1);
  CHECK(r.figures.at("convergence.store_ms.max") == 1000);
  REQUIRE(r.violations.size() == 1);
  CHECK(r.violations[0].invariant == "store_convergence");
  CHECK(r.violations[0].detail.find("volume v2") != std::string::npos);
}

TEST_CASE("convergence checker: views judged through member_view()", "[sim]") {
  ConvergenceChecker cc(true);
  TestWorld tw(2, quiet_options(), {&cc});
  tw.p(0).view = {{"n2", 1}};  // n1 still suspects a live n2
  tw.p(1).view = {{"n1", 0}};
  tw.world->at(1000, [&] { cc.healed(*tw.world); });
  tw.world->at(2000, [&] { cc.sample(*tw.world); });
  tw.world->run_until(3000);
  Report bad;
  tw.world->finish(bad);
  REQUIRE(bad.violations.size() == 1);
  CHECK(bad.violations[0].invariant == "view_convergence");
  CHECK(bad.violations[0].detail.find("n1 sees n2 as state 1") != std::string::npos);

  ConvergenceChecker ok(true);
  TestWorld tw2(2, quiet_options(), {&ok});
  tw2.p(0).view = {{"n2", 0}};
  tw2.p(1).view = {{"n1", 0}};
  tw2.world->crash(1);  // a down node must not be seen alive...
  tw2.p(0).view = {{"n2", 2}};  // ...and is not
  tw2.world->run_until(1000);
  Report good;
  tw2.world->finish(good);
  CHECK(good.violations.empty());
  CHECK(good.figures.at("convergence.views_ms.count") == 1);
}
