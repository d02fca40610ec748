// The coverage-mark check of sim:marks: it names exactly the marks that no marks file
// names, reads the list from the binary, and counts what a run hit.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "schedule/marks.h"
#include "sim/coverage.h"

using namespace caesium;
using namespace caesium::sim;

TEST_CASE("marks_missing names the marks no run hit", "[sim]") {
  REQUIRE(schedule::kMarkCount >= 2);
  std::set<std::string> all;
  for (size_t i = 0; i < schedule::kMarkCount; ++i) all.emplace(schedule::mark_name(schedule::mark_at(i)));
  CHECK(marks_missing(all).empty());
  const std::string dropped(schedule::mark_name(schedule::mark_at(1)));
  all.erase(dropped);
  CHECK(marks_missing(all) == std::vector<std::string>{dropped});
  CHECK(marks_missing({}).size() == schedule::kMarkCount);
}

TEST_CASE("read_marks_dir unites the files, one missing mark fails the check", "[sim]") {
  const auto dir = std::filesystem::temp_directory_path() / "caesium_sim_coverage_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Every mark but the last, split over two files; a file of another kind is ignored.
  {
    std::ofstream a(dir / "a.marks"), b(dir / "b.marks"), other(dir / "notes.txt");
    for (size_t i = 0; i + 1 < schedule::kMarkCount; ++i) {
      (i % 2 ? a : b) << schedule::mark_name(schedule::mark_at(i)) << " 3\n";
    }
    other << schedule::mark_name(schedule::mark_at(schedule::kMarkCount - 1)) << " 1\n";
  }
  auto hit = read_marks_dir(dir.string());
  REQUIRE(hit.ok());
  CHECK(marks_missing(hit.value()) ==
        std::vector<std::string>{std::string(schedule::mark_name(schedule::mark_at(schedule::kMarkCount - 1)))});
  CHECK_FALSE(read_marks_dir((dir / "absent").string()).ok());
  std::filesystem::remove_all(dir);
}

TEST_CASE("mark counts follow the core's counters", "[sim]") {
  schedule::enable_marks(true);
  schedule::reset_marks();
  CHECK(marks_never_hit(mark_counts()).size() == schedule::kMarkCount);
  schedule::mark(schedule::mark_at(0));
  schedule::mark(schedule::mark_at(0));
  const auto counts = mark_counts();
  CHECK(counts[0] == 2);
  CHECK(format_marks_hit(counts) == std::string(schedule::mark_name(schedule::mark_at(0))) + " 2\n");
  CHECK(marks_never_hit(counts).size() == schedule::kMarkCount - 1);
  schedule::reset_marks();
  schedule::enable_marks(false);
}
