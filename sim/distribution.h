// Random durations for the simulator: network latency, disk sync latency, handler run
// time.  A duration is `base_ms` plus a random part whose MEAN is `jitter_ms`, with a
// shape chosen per use:
//   constant     the random part is 0 (jitter ignored)
//   uniform      uniform in [0, 2*jitter]
//   exponential  exponential with mean jitter (memoryless tail; the default)
//   lognormal    lognormal with mean jitter and shape sigma (heavy tail: the rare
//                very late packet that makes failure detectors misfire)
// Every sample is rounded to whole milliseconds (virtual time is integer ms; equal
// times are ordered by insertion) and capped at `cap_ms`.
//
// Randomness comes only from the Rng passed in, so a seed fixes every sample.  The
// maths uses <cmath> log/exp/sqrt/cos, which are deterministic for one binary on one
// machine (what "replay a seed" needs); bit-identical traces across different libm
// builds are not promised.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/rng.h"
#include "base/time.h"

namespace caesium::sim {

struct Distribution {
  enum class Shape : uint8_t { kConstant = 0, kUniform = 1, kExponential = 2, kLognormal = 3 };

  Shape shape = Shape::kExponential;
  int64_t base_ms = 0;
  double jitter_ms = 0;        // mean of the random part
  double sigma = 1.0;          // lognormal shape only
  int64_t cap_ms = kMsPerHour;  // no sample exceeds this

  static Distribution constant(int64_t ms) {
    Distribution d;
    d.shape = Shape::kConstant;
    d.base_ms = ms;
    return d;
  }

  // The mean of the distribution before rounding and capping.
  double mean_ms() const {
    return static_cast<double>(base_ms) + (shape == Shape::kConstant ? 0.0 : jitter_ms);
  }

  int64_t sample(Rng& rng) const {
    double extra = 0;
    if (jitter_ms > 0) {
      switch (shape) {
        case Shape::kConstant:
          break;
        case Shape::kUniform:
          extra = rng.unit() * 2.0 * jitter_ms;
          break;
        case Shape::kExponential:
          extra = -std::log1p(-rng.unit()) * jitter_ms;
          break;
        case Shape::kLognormal: {
          // Box-Muller for one standard normal; mu chosen so the mean is jitter_ms.
          const double u1 = 1.0 - rng.unit();  // (0, 1]: log is finite
          const double u2 = rng.unit();
          const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
          const double mu = std::log(jitter_ms) - sigma * sigma / 2.0;
          extra = std::exp(mu + sigma * z);
          break;
        }
      }
    }
    const double total = static_cast<double>(base_ms) + extra;
    const double capped = std::min(total, static_cast<double>(cap_ms));
    return std::max<int64_t>(0, std::llround(capped));
  }
};

// "constant" | "uniform" | "exponential" | "lognormal" -> Shape.
inline Result<Distribution::Shape> parse_shape(std::string_view name) {
  if (name == "constant") return Distribution::Shape::kConstant;
  if (name == "uniform") return Distribution::Shape::kUniform;
  if (name == "exponential") return Distribution::Shape::kExponential;
  if (name == "lognormal") return Distribution::Shape::kLognormal;
  return Error("unknown distribution '" + std::string(name) +
               "': expected constant, uniform, exponential or lognormal");
}

inline const char* shape_name(Distribution::Shape s) {
  switch (s) {
    case Distribution::Shape::kConstant: return "constant";
    case Distribution::Shape::kUniform: return "uniform";
    case Distribution::Shape::kExponential: return "exponential";
    case Distribution::Shape::kLognormal: return "lognormal";
  }
  return "?";
}

}  // namespace caesium::sim
