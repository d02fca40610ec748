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
