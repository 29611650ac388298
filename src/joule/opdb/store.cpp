#include "joule/opdb/store.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <set>

#include "joule/core/cpu_features.h"
#include "joule/core/error.h"
#include "joule/core/sqlite.h"

namespace joule::opdb {

namespace {
// The whole schema of each version; migrate() applies the steps from the file's version on.
const char* kSchemaV1 = R"sql(
CREATE TABLE measurements(
  id INTEGER PRIMARY KEY,
  op_key TEXT NOT NULL, op_type TEXT NOT NULL, attrs TEXT NOT NULL, inputs TEXT NOT NULL, outputs TEXT NOT NULL,
  algorithm TEXT NOT NULL, threads INTEGER NOT NULL, precision TEXT NOT NULL, regime TEXT NOT NULL,
  cpu TEXT NOT NULL, isa TEXT NOT NULL, joule_version TEXT NOT NULL,
  median_ms REAL NOT NULL, trimmed_mean_ms REAL NOT NULL, std_ms REAL NOT NULL, cv REAL NOT NULL,
  runs INTEGER NOT NULL, noisy INTEGER NOT NULL, flops REAL NOT NULL, bytes REAL NOT NULL,
  energy_j REAL, energy_source TEXT NOT NULL, mode TEXT NOT NULL, timestamp TEXT NOT NULL,
  UNIQUE(op_key, algorithm, threads, precision, regime, cpu, isa, joule_version));
CREATE INDEX measurements_by_type ON measurements(op_type, cpu, isa, joule_version);
CREATE TABLE origins(
  measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,
  origin TEXT NOT NULL, PRIMARY KEY(measurement_id, origin));
)sql";

// Binds a row's key (op_key, algorithm, threads, precision, regime, cpu, isa, joule_version) to
// parameters ?at .. ?at+7, in the order of the UNIQUE constraint.
SqliteStmt& bind_key(SqliteStmt& s, int at, const OpKey& op, const std::string& algorithm, int threads, const std::string& precision,
               const std::string& regime, const std::string& cpu, const std::string& isa, const std::string& version) {
  return s.text(at, op.text())
      .text(at + 1, algorithm)
      .integer(at + 2, threads)
      .text(at + 3, precision)
      .text(at + 4, regime)
      .text(at + 5, cpu)
      .text(at + 6, isa)
      .text(at + 7, version);
}

const char* kColumns =
    "id, op_type, attrs, inputs, outputs, algorithm, threads, precision, regime, cpu, isa, joule_version, "
    "median_ms, trimmed_mean_ms, std_ms, cv, runs, noisy, flops, bytes, energy_j, energy_source, mode, timestamp";

std::vector<std::string> strings(const std::string& json_text) {
  std::vector<std::string> v;
  for (auto& e : nlohmann::json::parse(json_text)) v.push_back(e.get<std::string>());
  return v;
}

Row read_row(const SqliteStmt& s) {
  Row r;
  r.op.op_type = s.col_text(1);
  r.op.attrs = nlohmann::json::parse(s.col_text(2));
  r.op.inputs = strings(s.col_text(3));
  r.op.outputs = strings(s.col_text(4));
  r.algorithm = s.col_text(5);
  r.threads = static_cast<int>(s.col_int(6));
  r.precision = s.col_text(7);
  r.regime = s.col_text(8);
  r.cpu = s.col_text(9);
  r.isa = s.col_text(10);
  r.joule_version = s.col_text(11);
  r.median_ms = s.col_num(12);
  r.trimmed_mean_ms = s.col_num(13);
  r.std_ms = s.col_num(14);
  r.cv = s.col_num(15);
  r.runs = static_cast<int>(s.col_int(16));
  r.noisy = s.col_int(17) != 0;
  r.flops = s.col_num(18);
  r.bytes = s.col_num(19);
  if (!s.col_null(20)) r.energy_j = s.col_num(20);
  r.energy_source = s.col_text(21);
  r.mode = s.col_text(22);
  r.timestamp = s.col_text(23);
  return r;
}
}  // namespace

std::string OpKey::text() const {
  nlohmann::json j;
  j["op"] = op_type;
  j["attrs"] = attrs;
  j["in"] = inputs;
  return j.dump();
}

std::string this_cpu() { return cpu_features().model; }
std::string this_isa() { return cpu_features().isa; }

std::string Store::default_path() {
  if (const char* p = std::getenv("JOULE_OPDB"); p && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/joule/opdb.sqlite";
}

Store::Store(const std::string& path) : path_(path), db_(std::make_unique<SqliteDb>(path, "operator database")) {
  db_->migrate(kSchemaVersion, [&](int v) {
    if (v == 1) db_->exec(kSchemaV1);
    // Later versions: `if (v == 2) db_->exec(kMigrateV1toV2);` and so on.
  });
}

Store::~Store() = default;

Store::Transaction::Transaction(Store& s) : t_(*s.db_) {}
void Store::Transaction::commit() { t_.commit(); }

void Store::put(const Row& r) {
  SqliteStmt s(*db_,
         "INSERT INTO measurements(op_key, algorithm, threads, precision, regime, cpu, isa, joule_version, op_type, "
         "attrs, inputs, outputs, median_ms, trimmed_mean_ms, std_ms, cv, runs, noisy, flops, bytes, energy_j, "
         "energy_source, mode, timestamp) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,"
         "?20,?21,?22,?23,?24) ON CONFLICT(op_key, algorithm, threads, precision, regime, cpu, isa, joule_version) DO "
         "UPDATE SET outputs=excluded.outputs, median_ms=excluded.median_ms, trimmed_mean_ms=excluded.trimmed_mean_ms, "
         "std_ms=excluded.std_ms, cv=excluded.cv, runs=excluded.runs, noisy=excluded.noisy, flops=excluded.flops, "
         "bytes=excluded.bytes, energy_j=excluded.energy_j, energy_source=excluded.energy_source, mode=excluded.mode, "
         "timestamp=excluded.timestamp");
  bind_key(s, 1, r.op, r.algorithm, r.threads, r.precision, r.regime, r.cpu, r.isa, r.joule_version)
      .text(9, r.op.op_type)
      .text(10, r.op.attrs.dump())
      .text(11, nlohmann::json(r.op.inputs).dump())
      .text(12, nlohmann::json(r.op.outputs).dump())
      .num(13, r.median_ms)
      .num(14, r.trimmed_mean_ms)
      .num(15, r.std_ms)
      .num(16, r.cv)
      .integer(17, r.runs)
      .integer(18, r.noisy ? 1 : 0)
      .num(19, r.flops)
      .num(20, r.bytes)
      .text(22, r.energy_source)
      .text(23, r.mode)
      .text(24, r.timestamp.empty() ? now_iso8601() : r.timestamp);
  if (r.energy_j)
    s.num(21, *r.energy_j);
  else
    s.null(21);
  s.step();
  for (const std::string& o : r.origins) add_origin(r, o);
}

void Store::add_origin(const Row& r, const std::string& origin) {
  SqliteStmt s(*db_,
         "INSERT OR IGNORE INTO origins(measurement_id, origin) SELECT id, ?1 FROM measurements WHERE op_key=?2 AND "
         "algorithm=?3 AND threads=?4 AND precision=?5 AND regime=?6 AND cpu=?7 AND isa=?8 AND joule_version=?9");
  bind_key(s.text(1, origin), 2, r.op, r.algorithm, r.threads, r.precision, r.regime, r.cpu, r.isa, r.joule_version);
  s.step();
}

namespace {
void load_origins(const SqliteDb& db, int64_t id, Row& r) {
  SqliteStmt o(db, "SELECT origin FROM origins WHERE measurement_id=?1 ORDER BY origin");
  o.integer(1, id);
  while (o.step()) r.origins.push_back(o.col_text(0));
}
}  // namespace

std::optional<Row> Store::find(const OpKey& op, const std::string& algorithm, int threads, const std::string& precision,
                               const std::string& regime, const std::string& cpu, const std::string& isa,
                               const std::string& joule_version) const {
  SqliteStmt s(*db_,
         std::string("SELECT ") + kColumns +
             " FROM measurements WHERE op_key=?1 AND algorithm=?2 AND threads=?3 AND precision=?4 AND regime=?5 AND "
             "cpu=?6 AND isa=?7 AND joule_version=?8");
  bind_key(s, 1, op, algorithm, threads, precision, regime, cpu, isa, joule_version);
  if (!s.step()) return std::nullopt;
  Row r = read_row(s);
  load_origins(*db_, s.col_int(0), r);
  return r;
}

std::vector<Row> Store::rows(const Filter& f) const {
  std::string sql = std::string("SELECT ") + kColumns + " FROM measurements WHERE 1=1";
  std::vector<std::string> texts;
  auto cond = [&](const std::string& col, const std::string& v) {
    if (v.empty()) return;
    texts.push_back(v);
    sql += " AND " + col + "=?" + std::to_string(texts.size());
  };
  cond("cpu", f.cpu);
  cond("isa", f.isa);
  cond("joule_version", f.joule_version);
  cond("op_type", f.op_type);
  cond("regime", f.regime);
  cond("precision", f.precision);
  if (f.threads > 0) sql += " AND threads=" + std::to_string(f.threads);
  sql += " ORDER BY id";
  SqliteStmt s(*db_, sql);
  for (size_t i = 0; i < texts.size(); ++i) s.text(static_cast<int>(i + 1), texts[i]);
  std::vector<Row> out;
  std::vector<int64_t> ids;
  while (s.step()) {
    out.push_back(read_row(s));
    ids.push_back(s.col_int(0));
  }
  // Origins in one pass.
  std::map<int64_t, size_t> at;
  for (size_t i = 0; i < ids.size(); ++i) at[ids[i]] = i;
  SqliteStmt o(*db_, "SELECT measurement_id, origin FROM origins ORDER BY origin");
  while (o.step()) {
    auto it = at.find(o.col_int(0));
    if (it != at.end()) out[it->second].origins.push_back(o.col_text(1));
  }
  if (f.exclude_origins.empty()) return out;
  const std::set<std::string> ex(f.exclude_origins.begin(), f.exclude_origins.end());
  std::vector<Row> kept;
  for (Row& r : out) {
    bool other = r.origins.empty();
    for (auto& o2 : r.origins) other = other || !ex.count(o2);
    if (other) kept.push_back(std::move(r));
  }
  return kept;
}

size_t Store::count() const {
  SqliteStmt s(*db_, "SELECT count(*) FROM measurements");
  return s.step() ? static_cast<size_t>(s.col_int(0)) : 0;
}

}  // namespace joule::opdb
