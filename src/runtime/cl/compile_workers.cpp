#include "runtime/cl/compile_workers.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/file_io.h"
#include "runtime/cl/context.h"
#include "runtime/cl/program_cache.h"

extern char** environ;

namespace texel::cl {
namespace {

std::string At(const std::string& dir, size_t i, const char* ext) {
  return dir + "/" + std::to_string(i) + ext;
}

}  // namespace

CompileJob::CompileJob(const std::string& worker, const DeviceInfo& dev,
                       const std::vector<ProgramSource>& programs, size_t processes,
                       const std::string& cache_dir)
    : count_(programs.size()) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/texel-compile-XXXXXX";
  if (!mkdtemp(pattern.data()))
    Fail(ErrorCode::kIo, "compile workers: cannot make a directory {}: {}", pattern,
         std::strerror(errno));
  dir_ = pattern;
  try {
    WriteFileAtomically(dir_ + "/device", std::to_string(dev.platform_index) + ":" +
                                              std::to_string(dev.device_index) + "\n" + dev.name +
                                              "\n");
    WriteFileAtomically(dir_ + "/cache", cache_dir);
    WriteFileAtomically(dir_ + "/parent", std::to_string(getpid()));
    for (size_t i = 0; i < programs.size(); ++i) {
      WriteFileAtomically(At(dir_, i, ".cl"), programs[i].source);
      WriteFileAtomically(At(dir_, i, ".opt"), programs[i].options);
    }
    WriteFileAtomically(dir_ + "/count", std::to_string(count_));
    std::string sub = "compile-worker";
    for (size_t p = 0; p < std::min(processes, count_); ++p) {
      // The worker's own output (a driver's complaints) goes to a log beside its programs.
      posix_spawn_file_actions_t files;
      posix_spawn_file_actions_init(&files);
      std::string log = dir_ + "/worker" + std::to_string(p) + ".log";
      posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
      posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      posix_spawn_file_actions_adddup2(&files, 1, 2);
      std::vector<char*> argv = {const_cast<char*>(worker.c_str()), sub.data(), dir_.data(),
                                 nullptr};
      pid_t pid = 0;
      int rc = posix_spawn(&pid, worker.c_str(), &files, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&files);
      if (rc != 0) {
        if (!pids_.empty()) break;  // fewer workers
        Fail(ErrorCode::kIo, "compile workers: cannot start {}: {}", worker, std::strerror(rc));
      }
      pids_.push_back(pid);
    }
  } catch (...) {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

CompileJob::~CompileJob() {
  Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void CompileJob::Stop() {
  for (pid_t pid : pids_) {
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pids_.clear();
}

bool CompileJob::DoneBy(std::chrono::steady_clock::time_point deadline,
                        const std::function<bool()>& stop) {
  while (true) {
    for (auto it = pids_.begin(); it != pids_.end();) {
      int status = 0;
      pid_t got = waitpid(*it, &status, WNOHANG);
      if (got == 0 || (got < 0 && errno == EINTR)) {  // running, or asked again
        ++it;
        continue;
      }
      ++finished_;  // ended (or gone: ECHILD), its programs' files say how it went
      failed_ += got == *it && !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      it = pids_.erase(it);
    }
    if (pids_.empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline || (stop && stop())) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<CompileJob::Compiled> CompileJob::Wait(const std::function<bool()>& stop) {
  bool stopped = !DoneBy(std::chrono::steady_clock::time_point::max(), stop);
  if (stopped) Stop();
  if (!stopped && finished_ > 0 && failed_ == finished_) {
    std::string logs;
    for (int p = 0; p < finished_; ++p)
      if (std::optional<std::string> log = ReadFile(dir_ + "/worker" + std::to_string(p) + ".log"))
        logs += *log;
    Fail(ErrorCode::kDevice, "every compile worker failed: {}", logs.empty() ? "no output" : logs);
  }
  std::vector<Compiled> out(count_);
  for (size_t i = 0; i < count_; ++i) {
    if (std::optional<std::string> bin = ReadFile(At(dir_, i, ".bin"))) {
      out[i].binary.assign(bin->begin(), bin->end());
    } else {
      std::optional<std::string> why = ReadFile(At(dir_, i, ".err"));
      out[i].error = why ? *why : "its compile worker stopped before it was done";
    }
    if (std::optional<std::string> sec = ReadFile(At(dir_, i, ".sec")))
      out[i].seconds = std::strtod(sec->c_str(), nullptr);
  }
  return out;
}

int RunCompileWorker(const std::string& dir) {
  // The job is checked before the process is made a worker: a call that is no job (a test's, in
  // its own process) must leave that process's descriptors open (on NVIDIA's driver, closing
  // them broke every later build with CL_OUT_OF_RESOURCES).
  std::optional<std::string> device = ReadFile(dir + "/device");
  std::optional<std::string> count = ReadFile(dir + "/count");
  if (!device || !count) {
    std::fprintf(stderr, "texel: compile-worker: %s is not a compile job\n", dir.c_str());
    return 2;
  }
  // A worker outlives no tune: it dies with its parent (and one whose parent is gone already,
  // re-parented before this call, stops; the parent may itself be process 1, in a container).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::optional<std::string> parent = ReadFile(dir + "/parent");
  if (parent && std::to_string(getppid()) != *parent) return 2;
  // Descriptors the parent held open without close-on-exec (an embedding program's pipes) are
  // not the worker's to keep.
  for (int fd = 3; fd < 1024; ++fd) close(fd);
  std::istringstream lines(*device);
  std::string spec, name;
  std::getline(lines, spec);
  std::getline(lines, name);
  try {
    DeviceInfo dev = SelectDevice(spec);
    if (dev.name != name) {
      std::fprintf(stderr, "texel: compile-worker: device %s is %s, not %s\n", spec.c_str(),
                   dev.name.c_str(), name.c_str());
      return 2;
    }
    Context ctx(dev);
    std::optional<std::string> cache_dir = ReadFile(dir + "/cache");
    ProgramCache cache(cache_dir ? *cache_dir : "");
    size_t n = std::stoul(*count);
    for (size_t i = 0; i < n; ++i) {
      int claim = open(At(dir, i, ".claim").c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
      if (claim < 0) continue;  // another worker's
      close(claim);
      auto t0 = std::chrono::steady_clock::now();
      std::optional<std::string> source = ReadFile(At(dir, i, ".cl"));
      std::optional<std::string> options = ReadFile(At(dir, i, ".opt"));
      double build_s = 0;
      try {
        if (!source || !options) Fail(ErrorCode::kIo, "compile worker: program {} unreadable", i);
        Program program(ctx, *source, *options, cache.enabled() ? &cache : nullptr);
        build_s = program.build_seconds();
        std::vector<uint8_t> binary = program.Binary();
        if (binary.empty()) Fail(ErrorCode::kDevice, "the driver gave no binary");
        WriteFileAtomically(At(dir, i, ".bin"),
                            {reinterpret_cast<const char*>(binary.data()), binary.size()});
      } catch (const std::exception& e) {
        WriteFileAtomically(At(dir, i, ".err"), e.what());
      }
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      WriteFileAtomically(At(dir, i, ".sec"), std::to_string(std::max(took.count(), build_s)));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "texel: compile-worker: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace texel::cl
