#include "joule/experiment/store.h"

#include <unistd.h>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"

namespace joule::experiment {

namespace {
const char* kSchemaV1 = R"sql(
CREATE TABLE experiments(
  name TEXT PRIMARY KEY, dir TEXT NOT NULL, spec TEXT NOT NULL, points INTEGER NOT NULL,
  created TEXT NOT NULL, updated TEXT NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  experiment TEXT NOT NULL, point TEXT NOT NULL, command TEXT NOT NULL, config_hash TEXT NOT NULL, model TEXT NOT NULL,
  params TEXT NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL, result TEXT NOT NULL, run_dir TEXT NOT NULL,
  joule_version TEXT NOT NULL, cpu TEXT NOT NULL, isa TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
  attempts INTEGER NOT NULL, started TEXT NOT NULL, finished TEXT NOT NULL, wall_s REAL NOT NULL,
  UNIQUE(experiment, point));
CREATE INDEX runs_by_status ON runs(experiment, status);
CREATE TABLE metrics(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY(run_id, name));
CREATE TABLE layers(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx INTEGER NOT NULL, name TEXT NOT NULL,
  op TEXT NOT NULL, algorithm TEXT NOT NULL, ms REAL NOT NULL, pct REAL NOT NULL, PRIMARY KEY(run_id, idx));
)sql";

std::string path_of(const std::string& url) {
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    fail_unsupported(url + ": a PostgreSQL results store is not built yet; give an SQLite file");
  for (const char* prefix : {"sqlite://", "sqlite:"})
    if (url.rfind(prefix, 0) == 0) return url.substr(std::char_traits<char>::length(prefix));
  if (url.empty()) fail("--store: empty URL");
  return url;
}

const char* kRunColumns =
    "id, experiment, point, command, model, params, status, error, result, run_dir, joule_version, cpu, isa, host, "
    "pid, attempts, started, finished, wall_s, config_hash";

RunRow read_run(const SqliteStmt& s) {
  RunRow r;
  r.id = s.col_int(0);
  r.experiment = s.col_text(1);
  r.point = s.col_text(2);
  r.command = s.col_text(3);
  r.model = s.col_text(4);
  r.params = nlohmann::json::parse(s.col_text(5));
  r.status = s.col_text(6);
  r.error = s.col_text(7);
  r.result = nlohmann::json::parse(s.col_text(8));
  r.run_dir = s.col_text(9);
  r.joule_version = s.col_text(10);
  r.cpu = s.col_text(11);
  r.isa = s.col_text(12);
  r.host = s.col_text(13);
  r.pid = s.col_int(14);
  r.attempts = static_cast<int>(s.col_int(15));
  r.started = s.col_text(16);
  r.finished = s.col_text(17);
  r.wall_s = s.col_num(18);
  r.config_hash = s.col_text(19);
  return r;
}
}  // namespace

nlohmann::json RunRow::to_json() const {
  nlohmann::json ls = nlohmann::json::array();
  for (const LayerRow& l : layers)
    ls.push_back({{"name", l.name}, {"op", l.op}, {"algorithm", l.algorithm}, {"ms", l.ms}, {"pct", l.pct}});
  return {{"id", id},           {"experiment", experiment},
          {"point", point},     {"command", command}, {"config_hash", config_hash},
          {"model", model},     {"params", params},
          {"status", status},   {"error", error},
          {"result", result},   {"metrics", metrics},
          {"layers", ls},       {"run_dir", run_dir},
          {"joule_version", joule_version}, {"cpu", cpu},
          {"isa", isa},         {"host", host},
          {"pid", pid},         {"attempts", attempts},
          {"started", started}, {"finished", finished},
          {"wall_s", wall_s}};
}

nlohmann::json ExperimentRow::to_json() const {
  return {{"name", name},       {"dir", dir},         {"points", points}, {"done", done},
          {"failed", failed},   {"running", running}, {"created", created}, {"updated", updated}};
}

void stamp(RunRow& r) {
  const CpuFeatures& cpu = cpu_features();
  r.joule_version = JOULE_VERSION;
  r.cpu = cpu.model;
  r.isa = cpu.isa;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) r.host = host;
  r.pid = getpid();
}

ResultsStore::ResultsStore(const std::string& url) : db_(path_of(url), "results store") {
  db_.migrate(kSchemaVersion, [&](int v) {
    if (v == 1) db_.exec(kSchemaV1);
  });
}

void ResultsStore::put_experiment(const std::string& name, const std::string& dir, const std::string& spec,
                                  size_t points) {
  const std::string now = now_iso8601();
  SqliteStmt s(db_,
               "INSERT INTO experiments(name, dir, spec, points, created, updated) VALUES(?1,?2,?3,?4,?5,?5) "
               "ON CONFLICT(name) DO UPDATE SET dir=excluded.dir, spec=excluded.spec, points=excluded.points, "
               "updated=excluded.updated");
  s.text(1, name).text(2, dir).text(3, spec).integer(4, static_cast<int64_t>(points)).text(5, now);
  s.step();
}

std::vector<ExperimentRow> ResultsStore::experiments() const {
  std::vector<ExperimentRow> out;
  SqliteStmt s(db_,
               "SELECT e.name, e.dir, e.spec, e.points, e.created, e.updated, "
               "(SELECT count(*) FROM runs r WHERE r.experiment=e.name AND r.status='done'), "
               "(SELECT count(*) FROM runs r WHERE r.experiment=e.name AND r.status='failed'), "
               "(SELECT count(*) FROM runs r WHERE r.experiment=e.name AND r.status='running') "
               "FROM experiments e ORDER BY e.created, e.name");
  while (s.step()) {
    ExperimentRow e;
    e.name = s.col_text(0);
    e.dir = s.col_text(1);
    e.spec = s.col_text(2);
    e.points = static_cast<size_t>(s.col_int(3));
    e.created = s.col_text(4);
    e.updated = s.col_text(5);
    e.done = static_cast<size_t>(s.col_int(6));
    e.failed = static_cast<size_t>(s.col_int(7));
    e.running = static_cast<size_t>(s.col_int(8));
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<ExperimentRow> ResultsStore::experiment(const std::string& name) const {
  for (ExperimentRow& e : experiments())
    if (e.name == name) return e;
  return std::nullopt;
}

int64_t ResultsStore::begin(RunRow& r) {
  if (r.started.empty()) r.started = now_iso8601();
  r.status = "running";
  SqliteDb::Transaction t(db_);
  SqliteStmt s(db_,
               "INSERT INTO runs(experiment, point, command, model, params, status, error, result, run_dir, "
               "joule_version, cpu, isa, host, pid, attempts, started, finished, wall_s, config_hash) "
               "VALUES(?1,?2,?3,?4,?5,'running','','{}',?6,?7,?8,?9,?10,?11,1,?12,'',0,?13) "
               "ON CONFLICT(experiment, point) DO UPDATE SET command=excluded.command, model=excluded.model, "
               "config_hash=excluded.config_hash, "
               "params=excluded.params, status='running', error='', run_dir=excluded.run_dir, "
               "joule_version=excluded.joule_version, cpu=excluded.cpu, isa=excluded.isa, host=excluded.host, "
               "pid=excluded.pid, attempts=runs.attempts+1, started=excluded.started, finished='', wall_s=0");
  s.text(1, r.experiment)
      .text(2, r.point)
      .text(3, r.command)
      .text(4, r.model)
      .text(5, r.params.dump())
      .text(6, r.run_dir)
      .text(7, r.joule_version)
      .text(8, r.cpu)
      .text(9, r.isa)
      .text(10, r.host)
      .integer(11, r.pid)
      .text(12, r.started)
      .text(13, r.config_hash);
  s.step();
  SqliteStmt q(db_, "SELECT id, attempts FROM runs WHERE experiment=?1 AND point=?2");
  q.text(1, r.experiment).text(2, r.point);
  if (!q.step()) db_.error("insert of run '" + r.point + "'");
  r.id = q.col_int(0);
  r.attempts = static_cast<int>(q.col_int(1));
  t.commit();
  return r.id;
}

void ResultsStore::finish(RunRow& r) {
  if (r.finished.empty()) r.finished = now_iso8601();
  if (r.id == 0) {
    const std::string status = r.status;
    begin(r);
    r.status = status;
  }
  SqliteDb::Transaction t(db_);
  {
    SqliteStmt s(db_,
                 "UPDATE runs SET command=?2, model=?3, params=?4, status=?5, error=?6, result=?7, run_dir=?8, "
                 "finished=?9, wall_s=?10 WHERE id=?1");
    s.integer(1, r.id)
        .text(2, r.command)
        .text(3, r.model)
        .text(4, r.params.dump())
        .text(5, r.status)
        .text(6, r.error)
        .text(7, r.result.dump())
        .text(8, r.run_dir)
        .text(9, r.finished)
        .num(10, r.wall_s);
    s.step();
  }
  SqliteStmt(db_, "DELETE FROM metrics WHERE run_id=" + std::to_string(r.id)).step();
  SqliteStmt(db_, "DELETE FROM layers WHERE run_id=" + std::to_string(r.id)).step();
  for (const auto& [name, value] : r.metrics) {
    SqliteStmt s(db_, "INSERT INTO metrics(run_id, name, value) VALUES(?1,?2,?3)");
    s.integer(1, r.id).text(2, name).num(3, value).step();
  }
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerRow& l = r.layers[i];
    SqliteStmt s(db_, "INSERT INTO layers(run_id, idx, name, op, algorithm, ms, pct) VALUES(?1,?2,?3,?4,?5,?6,?7)");
    s.integer(1, r.id)
        .integer(2, static_cast<int64_t>(i))
        .text(3, l.name)
        .text(4, l.op)
        .text(5, l.algorithm)
        .num(6, l.ms)
        .num(7, l.pct)
        .step();
  }
  t.commit();
}

std::vector<RunRow> ResultsStore::runs(const RunFilter& f) const {
  std::string sql = std::string("SELECT ") + kRunColumns + " FROM runs WHERE 1=1";
  std::vector<std::string> texts;
  auto cond = [&](const std::string& col, const std::string& v, bool always) {
    if (v.empty() && !always) return;
    texts.push_back(v);
    sql += " AND " + col + "=?" + std::to_string(texts.size());
  };
  cond("experiment", f.experiment, !f.any_experiment);
  cond("status", f.status, false);
  cond("model", f.model, false);
  sql += " ORDER BY id";
  SqliteStmt s(db_, sql);
  for (size_t i = 0; i < texts.size(); ++i) s.text(static_cast<int>(i + 1), texts[i]);
  std::vector<RunRow> out;
  std::map<int64_t, size_t> at;
  while (s.step()) {
    at[s.col_int(0)] = out.size();
    out.push_back(read_run(s));
  }
  if (out.empty()) return out;
  SqliteStmt m(db_, "SELECT run_id, name, value FROM metrics");
  while (m.step()) {
    auto it = at.find(m.col_int(0));
    if (it != at.end()) out[it->second].metrics[m.col_text(1)] = m.col_num(2);
  }
  if (f.with_layers) {
    SqliteStmt l(db_, "SELECT run_id, name, op, algorithm, ms, pct FROM layers ORDER BY run_id, idx");
    while (l.step()) {
      auto it = at.find(l.col_int(0));
      if (it != at.end())
        out[it->second].layers.push_back({l.col_text(1), l.col_text(2), l.col_text(3), l.col_num(4), l.col_num(5)});
    }
  }
  return out;
}

std::optional<RunRow> ResultsStore::run(int64_t id, bool with_layers) const {
  SqliteStmt s(db_, std::string("SELECT ") + kRunColumns + " FROM runs WHERE id=?1");
  s.integer(1, id);
  if (!s.step()) return std::nullopt;
  RunRow r = read_run(s);
  SqliteStmt m(db_, "SELECT name, value FROM metrics WHERE run_id=?1");
  m.integer(1, id);
  while (m.step()) r.metrics[m.col_text(0)] = m.col_num(1);
  if (with_layers) {
    SqliteStmt l(db_, "SELECT name, op, algorithm, ms, pct FROM layers WHERE run_id=?1 ORDER BY idx");
    l.integer(1, id);
    while (l.step()) r.layers.push_back({l.col_text(0), l.col_text(1), l.col_text(2), l.col_num(3), l.col_num(4)});
  }
  return r;
}

std::map<std::string, std::pair<std::string, std::string>> ResultsStore::statuses(const std::string& experiment) const {
  std::map<std::string, std::pair<std::string, std::string>> out;
  SqliteStmt s(db_, "SELECT point, status, config_hash FROM runs WHERE experiment=?1");
  s.text(1, experiment);
  while (s.step()) out[s.col_text(0)] = {s.col_text(1), s.col_text(2)};
  return out;
}

}  // namespace joule::experiment
