#include "joule/experiment/store.h"

#include <unistd.h>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/core/sqlite.h"
#include "joule/experiment/sql_backend.h"

namespace joule::experiment {

namespace {
// Version 1, written for both databases: {ID} and {REAL} differ.
const char* kSchemaV1 = R"sql(
CREATE TABLE experiments(
  name TEXT PRIMARY KEY, dir TEXT NOT NULL, spec TEXT NOT NULL, points BIGINT NOT NULL,
  created TEXT NOT NULL, updated TEXT NOT NULL);
CREATE TABLE runs(
  id {ID},
  experiment TEXT NOT NULL, point TEXT NOT NULL, command TEXT NOT NULL, config_hash TEXT NOT NULL, model TEXT NOT NULL,
  params TEXT NOT NULL, status TEXT NOT NULL, error TEXT NOT NULL, result TEXT NOT NULL, run_dir TEXT NOT NULL,
  joule_version TEXT NOT NULL, cpu TEXT NOT NULL, isa TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL,
  attempts BIGINT NOT NULL, started TEXT NOT NULL, finished TEXT NOT NULL, wall_s {REAL} NOT NULL,
  UNIQUE(experiment, point));
CREATE INDEX runs_by_status ON runs(experiment, status);
CREATE TABLE metrics(
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL, value {REAL} NOT NULL,
  PRIMARY KEY(run_id, name));
CREATE TABLE layers(
  run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, idx BIGINT NOT NULL, name TEXT NOT NULL,
  op TEXT NOT NULL, algorithm TEXT NOT NULL, ms {REAL} NOT NULL, pct {REAL} NOT NULL, PRIMARY KEY(run_id, idx));
)sql";

std::string dialect(std::string sql, bool postgres) {
  auto sub = [&](const std::string& from, const std::string& to) {
    for (size_t at; (at = sql.find(from)) != std::string::npos;) sql.replace(at, from.size(), to);
  };
  sub("{ID}", postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY");
  sub("{REAL}", postgres ? "DOUBLE PRECISION" : "REAL");
  return sql;
}

const char* kRunColumns =
    "id, experiment, point, command, model, params, status, error, result, run_dir, joule_version, cpu, isa, host, "
    "pid, attempts, started, finished, wall_s, config_hash";

RunRow read_run(const SqlRow& s) {
  RunRow r;
  r.id = s.integer(0);
  r.experiment = s.text(1);
  r.point = s.text(2);
  r.command = s.text(3);
  r.model = s.text(4);
  r.params = nlohmann::json::parse(s.text(5));
  r.status = s.text(6);
  r.error = s.text(7);
  r.result = nlohmann::json::parse(s.text(8));
  r.run_dir = s.text(9);
  r.joule_version = s.text(10);
  r.cpu = s.text(11);
  r.isa = s.text(12);
  r.host = s.text(13);
  r.pid = s.integer(14);
  r.attempts = static_cast<int>(s.integer(15));
  r.started = s.text(16);
  r.finished = s.text(17);
  r.wall_s = s.num(18);
  r.config_hash = s.text(19);
  return r;
}

ExperimentRow read_experiment_row(const SqlRow& s) {
  ExperimentRow e;
  e.name = s.text(0);
  e.dir = s.text(1);
  e.spec = s.text(2);
  e.points = static_cast<size_t>(s.integer(3));
  e.created = s.text(4);
  e.updated = s.text(5);
  e.done = static_cast<size_t>(s.integer(6));
  e.failed = static_cast<size_t>(s.integer(7));
  e.running = static_cast<size_t>(s.integer(8));
  return e;
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

ResultsStore::ResultsStore(const std::string& url) : db_(SqlBackend::open(url, "results store")) {
  if (db_->schema_version() == kSchemaVersion) return;
  SqlBackend::Transaction t(*db_);
  if (db_->postgres()) db_->script("LOCK TABLE pg_catalog.pg_class IN SHARE MODE");  // one migrator at a time
  const int have = db_->schema_version();  // another process may have migrated while we waited
  if (have > kSchemaVersion)
    fail(db_->where() + ": results store schema " + std::to_string(have) + " is newer than this joule's (" +
         std::to_string(kSchemaVersion) + "): use a newer joule or another store");
  if (have == kSchemaVersion) return;
  if (have == 0 && db_->foreign()) fail(db_->where() + ": not a joule results store (it has other tables of these names)");
  if (have < 1) db_->script(dialect(kSchemaV1, db_->postgres()));
  // Later versions: `if (have < 2) db_->script(dialect(kMigrateV1toV2, ...));` and so on.
  db_->set_schema_version(kSchemaVersion);
  t.commit();
}

ResultsStore::~ResultsStore() = default;
ResultsStore::ResultsStore(ResultsStore&&) noexcept = default;
const std::string& ResultsStore::path() const { return db_->where(); }
bool ResultsStore::postgres() const { return db_->postgres(); }

void ResultsStore::put_experiment(const std::string& name, const std::string& dir, const std::string& spec,
                                  size_t points) {
  db_->query("INSERT INTO experiments(name, dir, spec, points, created, updated) VALUES(?1,?2,?3,?4,?5,?5) "
             "ON CONFLICT(name) DO UPDATE SET dir=excluded.dir, spec=excluded.spec, points=excluded.points, "
             "updated=excluded.updated",
             {name, dir, spec, static_cast<int64_t>(points), now_iso8601()});
}

std::vector<ExperimentRow> ResultsStore::experiments() const {
  std::vector<ExperimentRow> out;
  for (const SqlRow& s : db_->query("SELECT e.name, e.dir, e.spec, e.points, e.created, e.updated, "
                                    "(SELECT count(*) FROM runs r WHERE r.experiment=e.name AND r.status='done'), "
                                    "(SELECT count(*) FROM runs r WHERE r.experiment=e.name AND r.status='failed'), "
                                    "(SELECT count(*) FROM runs r WHERE r.experiment=e.name AND r.status='running') "
                                    "FROM experiments e ORDER BY e.created, e.name"))
    out.push_back(read_experiment_row(s));
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
  SqlBackend::Transaction t(*db_);
  db_->query("INSERT INTO runs(experiment, point, command, model, params, status, error, result, run_dir, "
             "joule_version, cpu, isa, host, pid, attempts, started, finished, wall_s, config_hash) "
             "VALUES(?1,?2,?3,?4,?5,'running','','{}',?6,?7,?8,?9,?10,?11,1,?12,'',0,?13) "
             "ON CONFLICT(experiment, point) DO UPDATE SET command=excluded.command, model=excluded.model, "
             "config_hash=excluded.config_hash, params=excluded.params, status='running', error='', "
             "run_dir=excluded.run_dir, joule_version=excluded.joule_version, cpu=excluded.cpu, isa=excluded.isa, "
             "host=excluded.host, pid=excluded.pid, attempts=runs.attempts+1, started=excluded.started, "
             "finished='', wall_s=0",
             {r.experiment, r.point, r.command, r.model, r.params.dump(), r.run_dir, r.joule_version, r.cpu, r.isa,
              r.host, r.pid, r.started, r.config_hash});
  const auto rows = db_->query("SELECT id, attempts FROM runs WHERE experiment=?1 AND point=?2", {r.experiment, r.point});
  if (rows.empty()) fail(db_->where() + ": results store: the run '" + r.point + "' was not written");
  r.id = rows[0].integer(0);
  r.attempts = static_cast<int>(rows[0].integer(1));
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
  SqlBackend::Transaction t(*db_);
  db_->query("UPDATE runs SET command=?2, model=?3, params=?4, status=?5, error=?6, result=?7, run_dir=?8, "
             "finished=?9, wall_s=?10 WHERE id=?1",
             {r.id, r.command, r.model, r.params.dump(), r.status, r.error, r.result.dump(), r.run_dir, r.finished,
              r.wall_s});
  db_->query("DELETE FROM metrics WHERE run_id=?1", {r.id});
  db_->query("DELETE FROM layers WHERE run_id=?1", {r.id});
  for (const auto& [name, value] : r.metrics)
    db_->query("INSERT INTO metrics(run_id, name, value) VALUES(?1,?2,?3)", {r.id, name, value});
  for (size_t i = 0; i < r.layers.size(); ++i) {
    const LayerRow& l = r.layers[i];
    db_->query("INSERT INTO layers(run_id, idx, name, op, algorithm, ms, pct) VALUES(?1,?2,?3,?4,?5,?6,?7)",
               {r.id, static_cast<int64_t>(i), l.name, l.op, l.algorithm, l.ms, l.pct});
  }
  t.commit();
}

namespace {
// The WHERE clause of a filter on `runs` (as table r) and its parameters.
std::string where_of(const RunFilter& f, std::vector<SqlValue>& params) {
  std::string w = " WHERE 1=1";
  auto cond = [&](const std::string& col, const std::string& v, bool always) {
    if (v.empty() && !always) return;
    params.emplace_back(v);
    w += " AND r." + col + "=?" + std::to_string(params.size());
  };
  cond("experiment", f.experiment, !f.any_experiment);
  cond("status", f.status, false);
  cond("model", f.model, false);
  return w;
}
}  // namespace

std::vector<RunRow> ResultsStore::runs(const RunFilter& f) const {
  std::vector<SqlValue> params;
  const std::string where = where_of(f, params);
  std::string cols = kRunColumns;
  for (size_t at = 0; (at = cols.find(", ", at)) != std::string::npos; at += 4) cols.replace(at, 2, ", r.");
  std::vector<RunRow> out;
  std::map<int64_t, size_t> at;
  for (const SqlRow& s : db_->query("SELECT r." + cols + " FROM runs r" + where + " ORDER BY r.id", params)) {
    at[s.integer(0)] = out.size();
    out.push_back(read_run(s));
  }
  if (out.empty()) return out;
  // Only the selected runs' metrics and layers.
  for (const SqlRow& m : db_->query("SELECT m.run_id, m.name, m.value FROM metrics m JOIN runs r ON r.id = m.run_id" + where,
                                    params))
    out[at.at(m.integer(0))].metrics[m.text(1)] = m.num(2);
  if (f.with_layers)
    for (const SqlRow& l : db_->query("SELECT l.run_id, l.name, l.op, l.algorithm, l.ms, l.pct FROM layers l JOIN runs r ON "
                                      "r.id = l.run_id" + where + " ORDER BY l.run_id, l.idx",
                                      params))
      out[at.at(l.integer(0))].layers.push_back({l.text(1), l.text(2), l.text(3), l.num(4), l.num(5)});
  return out;
}

size_t ResultsStore::count(const RunFilter& f) const {
  std::vector<SqlValue> params;
  const std::string where = where_of(f, params);
  return static_cast<size_t>(db_->query("SELECT count(*) FROM runs r" + where, params).at(0).integer(0));
}

std::optional<RunRow> ResultsStore::run(int64_t id, bool with_layers) const {
  const auto rows = db_->query(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id=?1", {id});
  if (rows.empty()) return std::nullopt;
  RunRow r = read_run(rows[0]);
  for (const SqlRow& m : db_->query("SELECT name, value FROM metrics WHERE run_id=?1", {id})) r.metrics[m.text(0)] = m.num(1);
  if (with_layers)
    for (const SqlRow& l : db_->query("SELECT name, op, algorithm, ms, pct FROM layers WHERE run_id=?1 ORDER BY idx", {id}))
      r.layers.push_back({l.text(0), l.text(1), l.text(2), l.num(3), l.num(4)});
  return r;
}

std::optional<RunRow> ResultsStore::find(const std::string& experiment, const std::string& point) const {
  const auto rows = db_->query("SELECT id FROM runs WHERE experiment=?1 AND point=?2", {experiment, point});
  return rows.empty() ? std::nullopt : run(rows[0].integer(0), false);
}

std::map<std::string, std::pair<std::string, std::string>> ResultsStore::statuses(const std::string& experiment) const {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const SqlRow& s : db_->query("SELECT point, status, config_hash FROM runs WHERE experiment=?1", {experiment}))
    out[s.text(0)] = {s.text(1), s.text(2)};
  return out;
}

}  // namespace joule::experiment
