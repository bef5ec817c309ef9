// texel_conformance: runs the ONNX backend test data (libonnx-testdata) through texel.
// Each test is `pass` (outputs match: float rtol 1e-3 / atol 1e-5, looser with --precision fp16
// or tf32 (ToleranceFor), integers and bools exact,
// shapes exact), `unsupported` (texel said clearly what it does not support) or `fail` (a
// wrong answer, a crash, a timeout or any other error). Each test runs in a child process, so a
// crash is counted, not fatal. Exit status: non-zero on any fail or when the pass count drops
// below --baseline.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "core/error.h"
#include "frontend/onnx/tensor_proto.h"

namespace fs = std::filesystem;
using namespace texel;

namespace {

struct Options {
  std::string root = "/usr/share/libonnx-testdata/data";
  std::vector<std::string> suites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  std::vector<std::string> filters;   // test names containing any of them; empty: all
  std::vector<std::string> backends;  // --backends, with --partition first: each backend's ops
  std::string baseline, device;
  passes::StoragePolicy storage = passes::StoragePolicy::kBuffer;  // --storage
  ComputeMode precision = ComputeMode::kFp32;                      // --precision
  int jobs = 2;
  int timeout_s = 300;
  bool verbose = false, write_baseline = false;
};

struct Outcome {
  std::string suite, name, status, detail;
};

std::vector<HostTensor> ReadTensors(const fs::path& dir, const char* prefix) {
  std::vector<HostTensor> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(p)) break;
    out.push_back(onnx_frontend::ReadTensorProtoFile(p.string()));
  }
  return out;
}

// Graph inputs that are not initializers, in order (how input_N.pb files are numbered).
std::vector<std::string> RuntimeInputNames(const fs::path& model) {
  onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  if (!m.ParseFromIstream(&f)) Fail(ErrorCode::kInvalidModel, "{}: cannot parse", model.string());
  std::vector<std::string> names;
  for (const auto& vi : m.graph().output())
    if (!vi.type().has_tensor_type())
      Fail(ErrorCode::kUnsupported, "graph output '{}' is not a tensor", vi.name());
  for (const auto& in : m.graph().input()) {
    if (!in.type().has_tensor_type())
      Fail(ErrorCode::kUnsupported, "graph input '{}' is not a tensor", in.name());
    bool init = false;
    for (const auto& t : m.graph().initializer()) init = init || t.name() == in.name();
    if (!init) names.push_back(in.name());
  }
  return names;
}

// How close a float output must be: |got - want| <= atol + rtol |want| + scaled * max |want|.
// fp32 as the ONNX backend tests ask; with activations stored in half (fp16) or products on a
// matrix engine (tf32), each stored value carries half's or tf32's rounding (2^-11 relative):
// 1e-2 relative, and 2e-3 of the output's largest magnitude for values a cancellation left small
// (x - mean, a sum of terms of both signs).
struct Tolerance {
  double atol = 1e-5, rtol = 1e-3, scaled = 0;
};
Tolerance ToleranceFor(ComputeMode mode) {
  if (mode == ComputeMode::kFp16 || mode == ComputeMode::kTf32) return {1e-5, 1e-2, 2e-3};
  return {};
}

std::string Compare(const HostTensor& want, const HostTensor& got, size_t index,
                    const Tolerance& tol) {
  if (want.dtype != got.dtype)
    return fmt::format("output {}: dtype {} expected {}", index, DTypeName(got.dtype),
                       DTypeName(want.dtype));
  if (want.shape != got.shape)
    return fmt::format("output {}: shape {} expected {}", index, ShapeStr(got.shape),
                       ShapeStr(want.shape));
  double scale = 0;
  if (IsFloat(want.dtype))
    for (int64_t i = 0; i < want.size(); ++i)
      if (std::isfinite(want.GetDouble(i))) scale = std::max(scale, std::fabs(want.GetDouble(i)));
  const double atol = tol.atol + tol.scaled * scale;
  for (int64_t i = 0; i < want.size(); ++i) {
    if (IsFloat(want.dtype)) {
      double e = want.GetDouble(i), a = got.GetDouble(i);
      if (std::isnan(e) && std::isnan(a)) continue;
      if (std::isinf(e) && a == e) continue;
      if (!(std::fabs(a - e) <= atol + tol.rtol * std::fabs(e)))
        return fmt::format("output {}: element {} is {} expected {}", index, i, a, e);
    } else if (want.GetInt(i) != got.GetInt(i)) {
      return fmt::format("output {}: element {} is {} expected {}", index, i, got.GetInt(i),
                         want.GetInt(i));
    }
  }
  return "";
}

// Runs one test in this (child) process; returns "status\tdetail".
std::string RunTest(const fs::path& dir, const Options& opt) {
  fs::path model = dir / "model.onnx";
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "unsupported\tno test data";
  std::vector<std::string> names = RuntimeInputNames(model);
  std::vector<HostTensor> inputs0 = ReadTensors(sets[0], "input");
  if (inputs0.size() > names.size()) return "fail\tmore input files than graph inputs";
  CompileOptions co;
  co.backends = opt.backends;
  co.partition = passes::PartitionPolicy::kFirst;
  co.storage = opt.storage;
  co.precision = opt.precision;
  for (size_t i = 0; i < inputs0.size(); ++i) co.import.input_shapes[names[i]] = inputs0[i].shape;
  auto ctx = std::make_shared<cl::Context>(cl::SelectDevice(opt.device));
  CompiledModel m;
  std::vector<std::string> frozen;
  // Inputs that decide shapes (a Reshape target, Resize scales, Slice bounds, ...) become
  // compile-time constants, as `texel run --freeze` does: the graph input texel names, or, when
  // it names a value computed from inputs, every integer input.
  auto freeze = [&](size_t i) {
    co.import.frozen_inputs[names[i]] = inputs0[i];
    co.import.input_shapes.erase(names[i]);
    frozen.push_back(names[i]);
  };
  for (int attempt = 0;; ++attempt) {
    try {
      m = Compile(model.string(), ctx, co);
      break;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kNotConstant || attempt > static_cast<int>(names.size())) throw;
      auto it = std::find(names.begin(), names.end(), e.subject());
      size_t before = frozen.size();
      if (it != names.end() && static_cast<size_t>(it - names.begin()) < inputs0.size()) {
        freeze(static_cast<size_t>(it - names.begin()));
      } else {
        for (size_t i = 0; i < inputs0.size(); ++i)
          if (!IsFloat(inputs0[i].dtype) && !co.import.frozen_inputs.count(names[i])) freeze(i);
      }
      if (frozen.size() == before) throw;
    }
  }
  for (size_t s = 0; s < sets.size(); ++s) {
    std::vector<HostTensor> inputs = ReadTensors(sets[s], "input");
    std::vector<HostTensor> want = ReadTensors(sets[s], "output");
    if (s > 0 && !frozen.empty()) break;  // frozen values belong to data set 0
    std::map<std::string, HostTensor> feed;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (std::find(frozen.begin(), frozen.end(), names[i]) == frozen.end())
        feed[names[i]] = inputs[i];
    runtime::Session session(*m.executable);
    std::vector<HostTensor> got = session.Run(feed);
    if (got.size() != want.size())
      return fmt::format("fail\t{} outputs, expected {}", got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      std::string diff = Compare(want[i], got[i], i, ToleranceFor(opt.precision));
      if (!diff.empty()) return fmt::format("fail\t{}: {}", sets[s].filename().string(), diff);
    }
  }
  return "pass\t" + (frozen.empty() ? std::string() : "frozen inputs");
}

std::string RunTestCaught(const fs::path& dir, const Options& opt) {
  try {
    return RunTest(dir, opt);
  } catch (const Error& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    if (msg.size() > 400) msg = msg.substr(0, 400) + "...";
    bool clear = e.code() == ErrorCode::kUnsupported || e.code() == ErrorCode::kNotConstant;
    return std::string(clear ? "unsupported\t" : "fail\t") + ErrorCodeName(e.code()) + ": " + msg;
  } catch (const std::exception& e) {
    return std::string("fail\tunexpected exception: ") + e.what();
  }
}

struct Child {
  pid_t pid;
  int fd;
  size_t index;
  std::string out;
  std::chrono::steady_clock::time_point start;
};

std::vector<Outcome> RunAll(const std::vector<std::pair<std::string, fs::path>>& tests,
                            const Options& opt) {
  std::vector<Outcome> results(tests.size());
  std::vector<Child> running;
  // A test whose process died of a signal runs once more, alone in its process, and both
  // outcomes are printed: a crash that repeats fails; one that does not is reported as a
  // flake (PoCL compiling the same kernel in two processes at once has crashed once in CI).
  std::vector<bool> crashed_once(tests.size(), false);
  std::vector<size_t> retry;
  size_t next = 0, done = 0;
  while (done < tests.size()) {
    while (static_cast<int>(running.size()) < opt.jobs && (next < tests.size() || !retry.empty())) {
      size_t index = next;
      if (!retry.empty()) {
        index = retry.back();
        retry.pop_back();
      } else {
        ++next;
      }
      int fds[2];
      if (pipe(fds) != 0) Fail(ErrorCode::kIo, "pipe failed");
      pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        std::string r = RunTestCaught(tests[index].second, opt);
        (void)!write(fds[1], r.data(), r.size());
        _exit(0);
      }
      close(fds[1]);
      fcntl(fds[0], F_SETFL, O_NONBLOCK);
      running.push_back({pid, fds[0], index, "", std::chrono::steady_clock::now()});
    }
    std::vector<pollfd> pfds;
    for (const Child& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 200);
    for (size_t k = 0; k < running.size();) {
      Child& c = running[k];
      char buf[4096];
      ssize_t n;
      while ((n = read(c.fd, buf, sizeof buf)) > 0) c.out.append(buf, n);
      bool eof = n == 0;
      double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
      bool timed_out = !eof && secs > opt.timeout_s;
      if (!eof && !timed_out) {
        ++k;
        continue;
      }
      if (timed_out) kill(c.pid, SIGKILL);
      int status = 0;
      waitpid(c.pid, &status, 0);
      close(c.fd);
      Outcome& o = results[c.index];
      o.suite = tests[c.index].first;
      o.name = tests[c.index].second.filename().string();
      size_t tab = c.out.find('\t');
      if (timed_out) {
        o.status = "fail";
        o.detail = fmt::format("timed out after {} s", opt.timeout_s);
      } else if (WIFSIGNALED(status) && !crashed_once[c.index]) {
        crashed_once[c.index] = true;
        std::printf("crashed    %s/%s  (signal %d): running it again\n", o.suite.c_str(),
                    o.name.c_str(), WTERMSIG(status));
        std::fflush(stdout);
        retry.push_back(c.index);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      } else if (WIFSIGNALED(status)) {
        o.status = "fail";
        o.detail = fmt::format("crashed (signal {}) twice", WTERMSIG(status));
      } else if (tab == std::string::npos) {
        o.status = "fail";
        o.detail = "no result (exit " + std::to_string(WEXITSTATUS(status)) + ")";
      } else {
        o.status = c.out.substr(0, tab);
        o.detail = c.out.substr(tab + 1);
      }
      if (crashed_once[c.index] && o.status != "fail")
        std::printf("flake      %s/%s  crashed once, then %s\n", o.suite.c_str(), o.name.c_str(),
                    o.status.c_str());
      if (opt.verbose || o.status == "fail")
        std::printf("%-11s %s/%s  %s\n", o.status.c_str(), o.suite.c_str(), o.name.c_str(),
                    o.detail.c_str());
      std::fflush(stdout);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      ++done;
    }
  }
  return results;
}

// Groups unsupported reasons by their message with names stripped, for the summary.
std::string ReasonKey(const std::string& detail) {
  size_t p = detail.rfind("): ");
  std::string key = p == std::string::npos ? detail : detail.substr(p + 3);
  if (key.size() > 90) key = key.substr(0, 90);
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--root")
      opt.root = value();
    else if (a == "--suites") {
      opt.suites.clear();
      std::stringstream ss(value());
      for (std::string s; std::getline(ss, s, ',');) opt.suites.push_back(s);
    } else if (a == "--filter" || a == "--backends") {
      auto& list = a == "--filter" ? opt.filters : opt.backends;
      std::stringstream ss(value());
      for (std::string s; std::getline(ss, s, ',');) list.push_back(s);
    } else if (a == "--baseline")
      opt.baseline = value();
    else if (a == "--write-baseline")
      opt.write_baseline = true;
    else if (a == "--jobs" || a == "-j")
      opt.jobs = std::max(1, std::stoi(value()));
    else if (a == "--timeout")
      opt.timeout_s = std::stoi(value());
    else if (a == "--device")
      opt.device = value();
    else if (a == "--storage") {
      std::string s = value();
      if (!passes::ParseStoragePolicy(s, &opt.storage)) {
        std::fprintf(stderr, "--storage %s: expected buffer, texture or auto\n", s.c_str());
        return 2;
      }
    } else if (a == "--precision") {
      std::string s = value();
      if (!ParseComputeMode(s, &opt.precision)) {
        std::fprintf(stderr, "--precision %s: expected fp32, tf32, tf32x3 or fp16\n", s.c_str());
        return 2;
      }
    } else if (a == "--verbose" || a == "-v")
      opt.verbose = true;
    else {
      std::fprintf(
          stderr,
          "usage: texel_conformance [--root DIR] [--suites a,b] [--filter SUBSTR,...] "
          "[--backends B,... (each takes every node it supports)] [--storage buffer|texture|auto] "
          "[--precision fp32|tf32|tf32x3|fp16] "
          "[--baseline FILE [--write-baseline]] [--jobs N] [--timeout S] [--device D] "
          "[--verbose]\n");
      return 2;
    }
  }
  std::vector<std::pair<std::string, fs::path>> tests;
  for (const auto& suite : opt.suites) {
    fs::path dir = fs::path(opt.root) / suite;
    if (!fs::is_directory(dir)) {
      std::fprintf(stderr, "texel_conformance: no test suite at %s (install libonnx-testdata)\n",
                   dir.string().c_str());
      return 2;
    }
    std::vector<fs::path> names;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
          (opt.filters.empty() ||
           std::any_of(opt.filters.begin(), opt.filters.end(), [&](const std::string& f) {
             return e.path().filename().string().find(f) != std::string::npos;
           })))
        names.push_back(e.path());
    std::sort(names.begin(), names.end());
    for (const auto& p : names) tests.emplace_back(suite, p);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Outcome> results = RunAll(tests, opt);
  std::map<std::string, std::map<std::string, int>> per_suite;
  std::map<std::string, int> reasons;
  int pass = 0, fail = 0;
  for (const auto& o : results) {
    ++per_suite[o.suite][o.status];
    pass += o.status == "pass";
    fail += o.status == "fail";
    if (o.status == "unsupported") ++reasons[ReasonKey(o.detail)];
  }
  std::vector<std::pair<int, std::string>> top;
  for (const auto& [k, v] : reasons) top.emplace_back(v, k);
  std::sort(top.rbegin(), top.rend());
  std::printf("\nmost common unsupported reasons:\n");
  for (size_t i = 0; i < std::min<size_t>(top.size(), 25); ++i)
    std::printf("  %4d  %s\n", top[i].first, top[i].second.c_str());
  std::printf("\n%-20s %6s %12s %6s\n", "suite", "pass", "unsupported", "fail");
  for (const auto& [suite, c] : per_suite)
    std::printf("%-20s %6d %12d %6d\n", suite.c_str(), c.count("pass") ? c.at("pass") : 0,
                c.count("unsupported") ? c.at("unsupported") : 0,
                c.count("fail") ? c.at("fail") : 0);
  std::printf("%-20s %6d %12d %6d   (%zu tests, %.0f s)\n", "total", pass,
              static_cast<int>(results.size()) - pass - fail, fail, results.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  int status = fail > 0 ? 1 : 0;
  if (!opt.baseline.empty()) {
    if (opt.write_baseline) {
      std::ofstream(opt.baseline) << pass << "\n";
      std::printf("baseline %s := %d\n", opt.baseline.c_str(), pass);
    } else {
      int base = 0;
      std::ifstream(opt.baseline) >> base;
      std::printf("baseline %d, passed %d\n", base, pass);
      if (pass < base) {
        std::printf("FAIL: the pass count dropped below the baseline\n");
        status = 1;
      }
    }
  }
  return status;
}
