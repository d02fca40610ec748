// Occurrence records (schedule/occurrence.h): the worker record's encoding, with and
// without the prepared instant, and what the decoder refuses.
#include <catch2/catch.hpp>

#include "schedule/occurrence.h"

using namespace caesium::schedule;

namespace {
WorkerRecord sample() {
  WorkerRecord r;
  r.worker = ProcessId{"n3", 0x1234'5678'9abc'def0ULL};
  r.attempt = 2;
  r.state = WorkerState::kAccepted;
  r.accepted_utc_ms = 1'767'225'600'123;
  r.possible_duplicate = true;
  r.detail = "held";
  return r;
}
}  // namespace

TEST_CASE("firing records: a worker record round-trips, with and without run_at") {
  WorkerRecord plain = sample();
  auto back = decode_worker_record(encode(plain));
  REQUIRE(back.ok());
  CHECK(*back == plain);
  CHECK(back->run_at_utc_ms == 0);

  WorkerRecord prepared = sample();
  prepared.run_at_utc_ms = 1'767'225'605'000;
  const std::string bytes = encode(prepared);
  back = decode_worker_record(bytes);
  REQUIRE(back.ok());
  CHECK(*back == prepared);
  // An unprepared record is byte for byte what it was before run_at existed: the field
  // is appended only when set.
  CHECK(bytes.size() > encode(plain).size());
  CHECK(bytes.compare(0, encode(plain).size(), encode(plain)) == 0);
}

// A retry's record carries its run number (> 1) after run_at, which is then written even
// when 0; a record of run 1 stays byte for byte what it was.
TEST_CASE("firing records: a worker record carries its run number, one form only") {
  for (const int64_t run_at : {int64_t{0}, int64_t{5}}) {
    WorkerRecord r = sample();
    r.run_at_utc_ms = run_at;
    r.run = 3;
    const auto back = decode_worker_record(encode(r));
    REQUIRE(back.ok());
    CHECK(*back == r);
    WorkerRecord first = r;
    first.run = 1;
    CHECK(encode(first).size() < encode(r).size());
    CHECK(decode_worker_record(encode(first))->run == 1);
  }
}

TEST_CASE("firing records: the decoder refuses a zero run_at, trailing bytes and truncation") {
  WorkerRecord prepared = sample();
  prepared.run_at_utc_ms = 5;
  std::string bytes = encode(prepared);
  // svarint 5 is the single byte 10; 0 would be the byte 0: one value, one form.
  std::string zero = bytes;
  zero.back() = '\0';
  CHECK_FALSE(decode_worker_record(zero).ok());
  CHECK_FALSE(decode_worker_record(bytes + '\x01').ok());         // run 1 is never encoded
  CHECK_FALSE(decode_worker_record(bytes + '\x02' + '\x00').ok());  // trailing bytes
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto cut = decode_worker_record(std::string_view(bytes).substr(0, n));
    // A prefix that ends exactly where an unprepared record ends is a valid unprepared
    // record; every other prefix is refused.
    if (n == encode(sample()).size()) {
      REQUIRE(cut.ok());
      CHECK(cut->run_at_utc_ms == 0);
    } else {
      CHECK_FALSE(cut.ok());
    }
  }
}

// The accepted value carries its run number (AttemptInfo::run): in owner records as a tail
// of run numbers after the attempts, in votes after the accepted value, each written only
// when a run is > 1, so records of first runs keep the bytes they had before.
TEST_CASE("firing records: owner records and votes carry the attempts' run numbers, one form only") {
  OwnerRecord rec;
  rec.owner = ProcessId{"n1", 7};
  rec.path = FirePath::kTakeover;
  rec.decided_utc_ms = 1'767'225'600'000;
  rec.attempts.push_back(AttemptInfo{1, "aaaa", "n2", 1'767'225'600'001});
  rec.attempts.push_back(AttemptInfo{2, "bbbb", "n3", 1'767'225'630'000});
  const std::string firsts = encode(rec);
  rec.attempts[1].run = 2;
  const std::string bytes = encode(rec);
  auto back = decode_owner_record(bytes);
  REQUIRE(back.ok());
  CHECK(*back == rec);
  CHECK(back->attempts[0].run == 1);
  CHECK(back->attempts[1].run == 2);
  CHECK(bytes.compare(0, firsts.size(), firsts) == 0);
  CHECK(bytes.size() == firsts.size() + 2);
  CHECK(decode_owner_record(firsts)->attempts[1].run == 1);
  CHECK_FALSE(decode_owner_record(firsts + '\x01' + '\x01').ok());  // all 1: never encoded
  CHECK_FALSE(decode_owner_record(firsts + '\x00' + '\x02').ok());  // run 0 is none
  CHECK_FALSE(decode_owner_record(bytes.substr(0, bytes.size() - 1)).ok());
  CHECK_FALSE(decode_owner_record(bytes + '\x02').ok());

  Vote v;
  v.promised_round = 3;
  v.promised_by = ProcessId{"n1", 7};
  v.has_accepted = true;
  v.accepted_round = 3;
  v.accepted_by = v.promised_by;
  v.accepted = AttemptInfo{4, "cccc", "n2", 1'767'225'660'000};
  const std::string first_vote = encode(v);
  v.accepted.run = 3;
  const std::string vote_bytes = encode(v);
  auto vote = decode_vote(vote_bytes);
  REQUIRE(vote.ok());
  CHECK(*vote == v);
  CHECK(vote_bytes.compare(0, first_vote.size(), first_vote) == 0);
  CHECK(decode_vote(first_vote)->accepted.run == 1);
  CHECK_FALSE(decode_vote(first_vote + '\x01').ok());
  CHECK_FALSE(decode_vote(vote_bytes + '\x00').ok());

  // The ended flag (local knowledge: the accepted attempt runs no more) follows the run
  // number, which is then written even when 1.
  for (const uint32_t run : {1u, 3u}) {
    Vote ended = v;
    ended.accepted.run = run;
    ended.ended = true;
    const std::string ended_bytes = encode(ended);
    auto ended_back = decode_vote(ended_bytes);
    REQUIRE(ended_back.ok());
    CHECK(*ended_back == ended);
    CHECK(ended_bytes.size() == first_vote.size() + 2);
    CHECK_FALSE(decode_vote(ended_bytes.substr(0, ended_bytes.size() - 1) + '\x02').ok());  // the flag is 1
    CHECK_FALSE(decode_vote(ended_bytes + '\x01').ok());
  }
}
