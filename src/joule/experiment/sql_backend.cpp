#include "joule/experiment/sql_backend.h"

#include <libpq-fe.h>

#include <fmt/format.h>

#include <regex>

#include "joule/core/error.h"
#include "joule/core/sqlite.h"

namespace joule::experiment {

double SqlRow::num(size_t i) const { return null(i) ? 0.0 : std::stod(*cols.at(i)); }
int64_t SqlRow::integer(size_t i) const { return null(i) ? 0 : std::stoll(*cols.at(i)); }

namespace {

std::string text_of(const SqlValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{:.17g}", *d);
  return "";
}

class SqliteBackend final : public SqlBackend {
 public:
  SqliteBackend(const std::string& path, const std::string& what) : db_(path, what) {}
  std::vector<SqlRow> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    SqliteStmt s(db_, sql);
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = static_cast<int>(i + 1);
      const SqlValue& v = params[i];
      if (auto* t = std::get_if<std::string>(&v)) s.text(at, *t);
      else if (auto* n = std::get_if<int64_t>(&v)) s.integer(at, *n);
      else if (auto* d = std::get_if<double>(&v)) s.num(at, *d);
      else s.null(at);
    }
    std::vector<SqlRow> rows;
    const int n = sqlite3_column_count_of(s);
    while (s.step()) {
      SqlRow r;
      for (int c = 0; c < n; ++c) {
        if (s.col_null(c)) r.cols.emplace_back(std::nullopt);
        else r.cols.emplace_back(s.col_text(c));
      }
      rows.push_back(std::move(r));
    }
    return rows;
  }
  void script(const std::string& sql) override { db_.exec(sql); }
  void begin() override { db_.exec("BEGIN IMMEDIATE"); }
  void commit() override { db_.exec("COMMIT"); }
  void rollback() override { db_.exec("ROLLBACK"); }
  bool postgres() const override { return false; }
  const std::string& where() const override { return db_.path(); }
  int schema_version() override { return static_cast<int>(query("PRAGMA user_version", {}).at(0).integer(0)); }
  void set_schema_version(int v) override { db_.exec("PRAGMA user_version = " + std::to_string(v)); }
  bool foreign() override {
    return schema_version() == 0 && query("SELECT count(*) FROM sqlite_master", {}).at(0).integer(0) != 0;
  }

 private:
  static int sqlite3_column_count_of(const SqliteStmt& s) { return s.columns(); }
  SqliteDb db_;
};

class PostgresBackend final : public SqlBackend {
 public:
  PostgresBackend(const std::string& url, const std::string& what)
      : where_(std::regex_replace(url, std::regex("://([^:/@]*):[^@/]*@"), "://$1:***@")), what_(what) {
    conn_ = PQconnectdb(url.c_str());
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      std::string msg = conn_ ? PQerrorMessage(conn_) : "out of memory";
      while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
      for (char& c : msg)
        if (c == '\n') c = ' ';
      PQfinish(conn_);
      conn_ = nullptr;
      fail(where_ + ": cannot connect to the " + what_ + " (PostgreSQL): " + msg);
    }
    script("SET client_min_messages = warning");
  }
  ~PostgresBackend() override {
    if (conn_) PQfinish(conn_);
  }
  std::vector<SqlRow> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    const std::string pg = std::regex_replace(sql, std::regex("\\?([0-9]+)"), "$$$1");
    std::vector<std::string> texts;
    std::vector<const char*> values;
    texts.reserve(params.size());
    for (const SqlValue& v : params) texts.push_back(text_of(v));
    for (size_t i = 0; i < params.size(); ++i)
      values.push_back(std::holds_alternative<std::monostate>(params[i]) ? nullptr : texts[i].c_str());
    PGresult* r = PQexecParams(conn_, pg.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                               nullptr, 0);
    check(r, sql);
    std::vector<SqlRow> rows;
    const int n = PQntuples(r), m = PQnfields(r);
    for (int i = 0; i < n; ++i) {
      SqlRow row;
      for (int c = 0; c < m; ++c) {
        if (PQgetisnull(r, i, c)) row.cols.emplace_back(std::nullopt);
        else row.cols.emplace_back(std::string(PQgetvalue(r, i, c), static_cast<size_t>(PQgetlength(r, i, c))));
      }
      rows.push_back(std::move(row));
    }
    PQclear(r);
    return rows;
  }
  void script(const std::string& sql) override {
    PGresult* r = PQexec(conn_, sql.c_str());
    check(r, sql);
    PQclear(r);
  }
  void begin() override { script("BEGIN"); }
  void commit() override { script("COMMIT"); }
  void rollback() override { script("ROLLBACK"); }
  bool postgres() const override { return true; }
  const std::string& where() const override { return where_; }
  int schema_version() override {
    if (query("SELECT to_regclass('joule_meta') IS NOT NULL", {}).at(0).text(0) != "t") return 0;
    auto rows = query("SELECT value FROM joule_meta WHERE key='schema_version'", {});
    return rows.empty() ? 0 : std::stoi(rows[0].text(0));
  }
  void set_schema_version(int v) override {
    script("CREATE TABLE IF NOT EXISTS joule_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    query("INSERT INTO joule_meta(key, value) VALUES('schema_version', ?1) ON CONFLICT(key) DO UPDATE SET "
          "value=excluded.value",
          {std::to_string(v)});
  }
  bool foreign() override {
    // A shared database may hold other tables; only tables with our names and no version are not ours.
    return schema_version() == 0 &&
           query("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND "
                 "table_name IN ('experiments', 'runs', 'metrics', 'layers')",
                 {})
                   .at(0)
                   .integer(0) != 0;
  }

 private:
  void check(PGresult* r, const std::string& sql) {
    const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
    std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    PQclear(r);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    fail(where_ + ": " + what_ + ": " + msg + " (in: " + sql.substr(0, 80) + ")");
  }
  std::string where_, what_;
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<SqlBackend> SqlBackend::open(const std::string& url, const std::string& what) {
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return std::make_unique<PostgresBackend>(url, what);
  std::string path = url;
  for (const char* prefix : {"sqlite://", "sqlite:"})
    if (url.rfind(prefix, 0) == 0) {
      path = url.substr(std::char_traits<char>::length(prefix));
      break;
    }
  if (path.empty()) fail(what + ": empty URL (give an SQLite file or postgresql://...)");
  return std::make_unique<SqliteBackend>(path, what);
}

}  // namespace joule::experiment
