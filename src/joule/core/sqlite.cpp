#include "joule/core/sqlite.h"

#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "joule/core/error.h"

namespace joule {

SqliteDb::SqliteDb(const std::string& path, std::string what) : path_(path), what_(std::move(what)) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    fail(path + ": cannot open the " + what_ + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 30000);  // another process writing: wait for it
  try {
    exec("PRAGMA foreign_keys = ON");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

SqliteDb::~SqliteDb() {
  if (db_) sqlite3_close(db_);
}

void SqliteDb::error(const std::string& action) const {
  fail(path_ + ": " + what_ + " " + action + " failed: " + sqlite3_errmsg(db_));
}

void SqliteDb::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    fail(path_ + ": " + what_ + ": " + msg);
  }
}

int64_t SqliteDb::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

void SqliteDb::migrate(int version, const std::function<void(int)>& step) {
  auto user_version = [&] {
    SqliteStmt s(*this, "PRAGMA user_version");
    return s.step() ? static_cast<int>(s.col_int(0)) : 0;
  };
  int have = user_version();
  if (have > version)
    fail(path_ + ": " + what_ + " schema " + std::to_string(have) + " is newer than this joule's (" +
         std::to_string(version) + "): use a newer joule or another file");
  if (have == version) return;
  Transaction t(*this);
  have = user_version();  // another process may have migrated while we waited for the lock
  if (have == version) return;
  if (have == 0) {
    // A new file, or some other SQLite database: refuse the latter rather than add tables to it.
    SqliteStmt s(*this, "SELECT count(*) FROM sqlite_master");
    if (s.step() && s.col_int(0) != 0) fail(path_ + ": not a joule " + what_ + " (an SQLite file with other tables)");
  }
  for (int v = have + 1; v <= version; ++v) step(v);
  exec("PRAGMA user_version = " + std::to_string(version));
  t.commit();
}

SqliteDb::Transaction::Transaction(const SqliteDb& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
SqliteDb::Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void SqliteDb::Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

SqliteStmt::SqliteStmt(const SqliteDb& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) db_.error("prepare");
}
SqliteStmt::~SqliteStmt() { sqlite3_finalize(s_); }
SqliteStmt& SqliteStmt::text(int i, const std::string& v) {
  sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
SqliteStmt& SqliteStmt::num(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}
SqliteStmt& SqliteStmt::integer(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
SqliteStmt& SqliteStmt::null(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}
bool SqliteStmt::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) db_.error("step");
  return false;
}
std::string SqliteStmt::col_text(int i) const {
  const unsigned char* t = sqlite3_column_text(s_, i);
  return t ? reinterpret_cast<const char*>(t) : "";
}
double SqliteStmt::col_num(int i) const { return sqlite3_column_double(s_, i); }
int64_t SqliteStmt::col_int(int i) const { return sqlite3_column_int64(s_, i); }
bool SqliteStmt::col_null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
int SqliteStmt::columns() const { return sqlite3_column_count(s_); }

std::string now_iso8601() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace joule
