#include "joule/experiment/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/core/sqlite.h"
#include "joule/core/thread_pool.h"
#include "joule/experiment/steps.h"

namespace joule::experiment {

namespace fs = std::filesystem;

std::string run_root(const ExperimentSpec& spec, const ExperimentOptions& o) {
  return fs::absolute(o.dir.empty() ? spec.dir : o.dir).lexically_normal().string();
}

std::string store_url(const ExperimentSpec& spec, const ExperimentOptions& o) {
  return o.store.empty() ? (fs::path(run_root(spec, o)) / "results.sqlite").string() : o.store;
}

nlohmann::json ExperimentReport::to_json() const {
  return {{"experiment", name}, {"store", store}, {"dir", dir},       {"points", points},   {"skipped", skipped},
          {"changed", changed}, {"done", done},   {"failed", failed}, {"failures", failures}};
}

nlohmann::json StatusReport::to_json() const {
  return {{"experiment", name}, {"store", store}, {"points", points}, {"counts", counts}, {"rows", rows}};
}

namespace {

std::vector<Point> selected(const ExperimentSpec& spec, const ExperimentOptions& o) {
  std::vector<Point> all = expand(spec);
  if (o.only.empty()) return all;
  std::vector<Point> out;
  for (Point& p : all)
    for (const std::string& s : o.only)
      if (p.key.find(s) != std::string::npos) {
        out.push_back(std::move(p));
        break;
      }
  return out;
}

// What a point reads: the model file and the data, each file with its checksum (a folder, such
// as an image tree, with its file count and bytes).
nlohmann::json input_checksums(const Point& p, const std::string& model_path) {
  nlohmann::json j = nlohmann::json::object();
  auto add = [&](const std::string& what, std::string path) {
    std::error_code ec;
    if (path.empty()) return;
    if (!fs::exists(path, ec) && path.rfind(':') != std::string::npos) path = path.substr(0, path.rfind(':'));  // SPEC:split
    if (fs::is_regular_file(path, ec)) {
      j[what] = {{"path", fs::absolute(path).string()}, {"bytes", fs::file_size(path, ec)},
                 {"checksum", file_checksum(path)}};
    } else if (fs::is_directory(path, ec)) {
      size_t files = 0, bytes = 0;
      for (const auto& e : fs::recursive_directory_iterator(path, ec))
        if (e.is_regular_file(ec)) {
          ++files;
          bytes += e.file_size(ec);
        }
      j[what] = {{"path", fs::absolute(path).string()}, {"files", files}, {"bytes", bytes}};
    }
  };
  add("model", model_path);
  add("calib", p.model.calib);
  add("data", p.model.data);
  for (const Step& s : p.steps)
    for (const char* k : {"calib", "data", "inputs", "config"})
      if (s.params.contains(k) && s.params[k].is_string()) add(s.name + "." + k, s.params[k].get<std::string>());
  return j;
}

// A point whose process ended without recording its end (crashed, killed, never started):
// recorded as failed with `why`.
RunRow record_lost(ResultsStore& store, const ExperimentSpec& spec, const Point& p, const std::string& root,
                   const std::string& why) {
  RunRow r = store.find(spec.name, p.key).value_or(RunRow{});
  r.experiment = spec.name;
  r.point = p.key;
  r.config_hash = p.config_hash();
  r.model = p.model.name;
  r.params = p.params();
  r.run_dir = (fs::path(root) / p.slug).string();
  if (r.id == 0) stamp(r);
  r.status = "failed";
  r.error = why;
  store.finish(r);
  return r;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `cmd` through the shell; its stdout and stderr, and the exit status in `rc`.
std::string capture(const std::string& cmd, int& rc) {
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) fail_internal("popen: " + cmd);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  const int st = pclose(f);
  rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

// The SLURM executor: the points as one job array (`sbatch`, a task per point running
// `joule experiment point`), watched until it leaves the queue; tasks that ended without
// recording their point are submitted again (slurm.retries, default 1), then recorded as failed.
template <class Count, class Progress>
void run_slurm(const ExperimentSpec& spec, const ExperimentOptions& o, std::vector<const Point*> todo,
               ExperimentReport& rep, ResultsStore& store, const api::Hooks& hooks, Count&& count, Progress&& progress) {
  const nlohmann::json& sl = spec.slurm;
  const int retries = sl.value("retries", 1);
  const fs::path logs = fs::path(rep.dir) / "slurm";
  fs::create_directories(logs);
  const std::string url = store.postgres() || fs::path(rep.store).is_absolute() ? rep.store : fs::absolute(rep.store).string();
  for (int attempt = 0; !todo.empty(); ++attempt) {
    std::string indices;
    for (const Point* p : todo) indices += (indices.empty() ? "" : ",") + std::to_string(p->index);
    std::string s = "#!/bin/bash\n";
    s += "#SBATCH --job-name=" + quote("joule-" + spec.name) + "\n";
    s += "#SBATCH --output=" + quote((logs / "%A_%a.out").string()) + "\n";
    s += "#SBATCH --array=" + indices + (o.jobs > 1 ? "%" + std::to_string(o.jobs) : "") + "\n";
    s += "#SBATCH --cpus-per-task=" + std::to_string(sl.value("cpus_per_task", 1)) + "\n";
    if (sl.contains("partition")) s += "#SBATCH --partition=" + sl["partition"].get<std::string>() + "\n";
    if (sl.contains("time")) s += "#SBATCH --time=" + sl["time"].get<std::string>() + "\n";
    if (sl.contains("mem")) s += "#SBATCH --mem=" + sl["mem"].get<std::string>() + "\n";
    for (const auto& opt : sl.value("options", nlohmann::json::array())) s += "#SBATCH " + opt.get<std::string>() + "\n";
    s += "exec " + quote(o.worker) + " experiment point " + quote(spec.file) + " --index \"$SLURM_ARRAY_TASK_ID\" --store " +
         quote(url) + " --dir " + quote(rep.dir) + " --quiet\n";
    const std::string script = (logs / ("submit_" + std::to_string(attempt) + ".sh")).string();
    write_file_atomic(script, s);
    int rc = 0;
    const std::string submitted = now_iso8601();  // rows started before this are an earlier run's
    std::string job = capture("sbatch --parsable " + quote(script), rc);
    if (rc != 0) fail("sbatch refused the job array (" + script + "): " + job);
    job = job.substr(0, job.find(';'));
    job = job.substr(job.rfind('\n') == std::string::npos ? 0 : job.rfind('\n') + 1);
    hooks.report("slurm", 0, todo.size(), fmt::format("{}: SLURM job array {} ({} tasks)", spec.name, job, todo.size()));
    try {
      while (true) {
        hooks.check();
        const std::string q = capture("squeue -h -j " + job + " -o %i", rc);
        if (rc != 0 || q.empty()) break;  // left the queue (or already purged from it)
        size_t done = 0;
        const auto st = store.statuses(spec.name);
        for (const Point* p : todo)
          if (auto it = st.find(p->key); it != st.end() && it->second.first != "running") ++done;
        hooks.report("slurm", done, todo.size(),
                     fmt::format("{}: SLURM job {}: {}/{} points ended", spec.name, job, done, todo.size()));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    } catch (...) {
      int ignored = 0;
      capture("scancel " + job, ignored);
      throw;
    }
    std::map<std::string, RunRow> rows;
    for (RunRow& r : store.runs({spec.name, "", "", false, false})) rows[r.point] = std::move(r);
    std::vector<const Point*> lost;
    for (const Point* p : todo) {
      auto it = rows.find(p->key);
      if (it != rows.end() && (it->second.status == "done" || it->second.status == "failed") &&
          it->second.config_hash == p->config_hash() && it->second.started >= submitted && !it->second.finished.empty())
        count(it->second);
      else
        lost.push_back(p);
    }
    if (lost.empty()) break;
    if (attempt >= retries) {
      for (const Point* p : lost)
        count(record_lost(store, spec, *p, rep.dir,
                          fmt::format("its SLURM task (job {}, task {}) ended without recording it, {} time(s); see {}",
                                      job, p->index, attempt + 1, (logs / (job + "_" + std::to_string(p->index) + ".out")).string())));
      break;
    }
    todo = lost;
    progress();
  }
  progress();
}

bool alive(const RunRow& r) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (r.host != host || r.pid <= 0) return r.host != host;  // another machine's: assume running
  // A zombie (killed, not yet reaped: containers often have no init to reap it) is not running.
  std::ifstream stat("/proc/" + std::to_string(r.pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z' && line[paren + 2] != 'X';
}

}  // namespace

RunRow run_point(const ExperimentSpec& spec, const Point& p, const std::string& root, ResultsStore& store,
                 const api::Hooks& hooks) {
  const auto t0 = std::chrono::steady_clock::now();
  RunRow r;
  r.experiment = spec.name;
  r.point = p.key;
  r.config_hash = p.config_hash();
  for (const Step& s : p.steps) r.command += (r.command.empty() ? "" : "+") + s.name;
  r.model = p.model.name;
  r.params = p.params();
  r.run_dir = (fs::path(root) / p.slug).string();
  stamp(r);
  fs::create_directories(r.run_dir);
  nlohmann::json steps = nlohmann::json::array();
  for (const Step& s : p.steps) steps.push_back({{"step", s.name}, {"kind", s.kind}, {"params", s.params}});
  write_file_atomic((fs::path(r.run_dir) / "config.json").string(),
                    nlohmann::json{{"experiment", spec.name},
                                   {"experiment_file", spec.file},
                                   {"experiment_text", spec.text},
                                   {"point", p.key},
                                   {"index", p.index},
                                   {"params", r.params},
                                   {"model", {{"name", p.model.name}, {"path", p.model.path}, {"calib", p.model.calib},
                                              {"data", p.model.data}}},
                                   {"steps", steps}}
                            .dump(2) + "\n");
  store.begin(r);
  nlohmann::json env = {{"joule_version", r.joule_version},
#ifdef NDEBUG
                        {"build", "release"},
#else
                        {"build", "debug"},
#endif
                        {"compiler", __VERSION__},
                        {"cpu", r.cpu},
                        {"isa", r.isa},
                        {"cores", ThreadPool::default_threads()},
                        {"host", r.host},
                        {"pid", r.pid},
                        {"started", r.started},
                        {"attempt", r.attempts}};
  auto write_env = [&] { write_file_atomic((fs::path(r.run_dir) / "env.json").string(), env.dump(2) + "\n"); };
  write_env();

  try {
    StepContext c{api::Model::load(p.model.path), p.model, spec.base_dir, r.run_dir, hooks};
    env["inputs"] = input_checksums(p, c.model.path());
    write_env();
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const Step& s = p.steps[i];
      hooks.report("point", i, p.steps.size(), fmt::format("{}: {}", p.key, s.name));
      nlohmann::json res = run_step(s, c);
      summarize(s.kind, s.name, res, r);
      r.result[s.name] = std::move(res);
    }
    r.status = "done";
  } catch (const Error& e) {
    if (e.kind() == Error::Kind::Cancelled) throw;  // left running: the next run does it again
    r.status = "failed";
    r.error = e.what();
  } catch (const std::exception& e) {
    r.status = "failed";
    r.error = std::string("internal error: ") + e.what();
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.finished = now_iso8601();
  write_file_atomic((fs::path(r.run_dir) / "result.json").string(), r.to_json().dump(2) + "\n");
  store.finish(r);
  return r;
}

ExperimentReport run_experiment(const ExperimentSpec& spec, const ExperimentOptions& o, const api::Hooks& hooks) {
  if (o.executor != "local" && o.executor != "slurm") fail("--executor '" + o.executor + "': expected local or slurm");
  if (o.executor == "slurm" && o.worker.empty())
    fail("--executor slurm submits `joule experiment point` tasks and needs the joule binary (worker)");
  if (o.jobs < 1) fail("--jobs must be at least 1");
  if (o.jobs > 1 && o.worker.empty())
    fail("--jobs > 1 runs points in child processes and needs the joule binary (worker)");
  ExperimentReport rep;
  rep.name = spec.name;
  rep.dir = run_root(spec, o);
  rep.store = store_url(spec, o);
  fs::create_directories(rep.dir);
  ResultsStore store(rep.store);
  const std::vector<Point> points = selected(spec, o);
  store.put_experiment(spec.name, rep.dir, spec.text, expand(spec).size());
  rep.points = points.size();

  const auto before = store.statuses(spec.name);
  std::vector<const Point*> todo;
  for (const Point& p : points) {
    auto it = before.find(p.key);
    if (it != before.end() && it->second.first == "done" && it->second.second == p.config_hash()) {
      ++rep.skipped;
    } else {
      if (it != before.end() && it->second.first == "done") ++rep.changed;
      todo.push_back(&p);
    }
  }
  auto count = [&](const RunRow& r) {
    if (r.status == "done") {
      ++rep.done;
    } else {
      ++rep.failed;
      rep.failures.push_back(r.point + ": " + r.error);
    }
  };
  auto progress = [&] {
    const size_t n = rep.skipped + rep.done + rep.failed;
    hooks.report("experiment", n, rep.points,
                 fmt::format("{}: {}/{} points ({} skipped, {} failed)", spec.name, n, rep.points, rep.skipped,
                             rep.failed));
  };
  progress();

  if (o.executor == "slurm") {
    run_slurm(spec, o, todo, rep, store, hooks, count, progress);
    return rep;
  }
  if (o.worker.empty()) {
    for (const Point* p : todo) {
      count(run_point(spec, *p, rep.dir, store, hooks));
      progress();
    }
    return rep;
  }

  // Child processes: `worker experiment point FILE --index I --store URL --dir DIR`, output to
  // the point's log.txt; each dies with this process (PR_SET_PDEATHSIG).
  std::map<pid_t, const Point*> active;
  size_t next = 0;
  auto reap = [&](bool block) {
    int st = 0;
    const pid_t pid = waitpid(-1, &st, block ? 0 : WNOHANG);
    if (pid <= 0) return false;
    auto it = active.find(pid);
    if (it == active.end()) return true;
    const Point* p = it->second;
    active.erase(it);
    const std::optional<RunRow> row = store.find(spec.name, p->key);
    if (row && (row->status == "done" || row->status == "failed") && WIFEXITED(st) && WEXITSTATUS(st) != 130) {
      count(*row);
    } else {
      // The child ended without recording an end: crashed, killed, or refused before its point.
      const std::string log = (fs::path(rep.dir) / p->slug / "log.txt").string();
      count(record_lost(store, spec, *p, rep.dir,
                        WIFSIGNALED(st) ? fmt::format("the point's process was killed by signal {} ({}); see {}",
                                                      WTERMSIG(st), strsignal(WTERMSIG(st)), log)
                                        : fmt::format("the point's process exited with status {}; see {}",
                                                      WEXITSTATUS(st), log)));
    }
    progress();
    return true;
  };
  try {
    while (next < todo.size() || !active.empty()) {
      while (next < todo.size() && active.size() < static_cast<size_t>(o.jobs)) {
        const Point* p = todo[next++];
        const std::string dir = (fs::path(rep.dir) / p->slug).string();
        fs::create_directories(dir);
        const std::string log = (fs::path(dir) / "log.txt").string();
        const std::string index = std::to_string(p->index);
        const pid_t parent = getpid();
        const pid_t pid = fork();
        if (pid < 0) fail_internal(std::string("fork: ") + std::strerror(errno));
        if (pid == 0) {
          prctl(PR_SET_PDEATHSIG, SIGKILL);
          if (getppid() != parent) _exit(137);
          const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
          if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
          }
          std::vector<std::string> args = {o.worker, "experiment", "point", spec.file, "--index", index,
                                           "--store", rep.store, "--dir",  rep.dir,   "--quiet"};
          std::vector<char*> argv;
          for (auto& a : args) argv.push_back(a.data());
          argv.push_back(nullptr);
          execv(o.worker.c_str(), argv.data());
          _exit(127);
        }
        active[pid] = p;
      }
      // Wait for a child, polling for cancellation.
      while (!reap(false)) {
        hooks.check();
        usleep(50000);
      }
    }
  } catch (...) {
    for (auto& [pid, p] : active) kill(pid, SIGTERM);
    for (auto& [pid, p] : active) waitpid(pid, nullptr, 0);
    throw;
  }
  return rep;
}

RunRow record_command(const std::string& url, const std::string& command, const std::string& model,
                      const nlohmann::json& params, const nlohmann::json& result) {
  ResultsStore store(url);
  RunRow r;
  stamp(r);
  r.started = now_iso8601();
  // Unique outside experiments: the time, the host and the process.
  r.point = fmt::format("{} {} {}@{}", command, r.started, r.pid, r.host);
  r.command = command;
  r.model = model;
  r.params = params;
  r.status = "done";
  r.result[command] = result;
  summarize(command, command, result, r);
  store.finish(r);
  return r;
}

StatusReport experiment_status(const ExperimentSpec& spec, const ExperimentOptions& o) {
  StatusReport rep;
  rep.name = spec.name;
  rep.store = store_url(spec, o);
  ResultsStore store(rep.store);
  std::map<std::string, RunRow> rows;
  for (RunRow& r : store.runs({spec.name, "", "", false, false})) rows[r.point] = std::move(r);
  const std::vector<Point> points = selected(spec, o);
  rep.points = points.size();
  for (const std::string s : {"done", "failed", "running", "interrupted", "changed", "pending"}) rep.counts[s] = 0;
  for (const Point& p : points) {
    auto it = rows.find(p.key);
    std::string status = "pending";
    nlohmann::json j = {{"point", p.key}};
    if (it != rows.end()) {
      const RunRow& r = it->second;
      status = r.status == "running" && !alive(r)                   ? "interrupted"
               : r.status == "done" && r.config_hash != p.config_hash() ? "changed"
                                                                          : r.status;
      j["wall_s"] = r.wall_s;
      j["attempts"] = r.attempts;
      if (!r.error.empty()) j["error"] = r.error;
      j["id"] = r.id;
    }
    j["status"] = status;
    ++rep.counts[status];
    rep.rows.push_back(std::move(j));
  }
  return rep;
}

}  // namespace joule::experiment
