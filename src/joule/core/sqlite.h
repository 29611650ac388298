#pragma once
// One SQLite file with a versioned schema, shared by the operator database (opdb/store.h) and
// the results store (experiment/store.h): open (creating the folder), wait for other writers,
// migrate on open, prepared statements, transactions. Errors are BadInput naming the file and
// what the file is ("operator database", "results store").
#include <cstdint>
#include <functional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace joule {

class SqliteDb {
 public:
  // Opens `path` (creating it and its folder). `what` names the file in errors.
  SqliteDb(const std::string& path, std::string what);
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Brings the schema to `version`: `step(v)` is called for each v from the file's version + 1
  // up to `version`, all in one transaction. BadInput when the file is newer than `version` or is
  // an SQLite file with other tables and no version.
  void migrate(int version, const std::function<void(int)>& step);
  void exec(const std::string& sql) const;
  int64_t last_insert_id() const;
  const std::string& path() const { return path_; }
  const std::string& what() const { return what_; }
  sqlite3* handle() const { return db_; }
  [[noreturn]] void error(const std::string& action) const;  // "<path>: <what> <action> failed: <sqlite message>"

  // BEGIN IMMEDIATE ... COMMIT; rolls back unless committed.
  class Transaction {
   public:
    explicit Transaction(const SqliteDb& db);
    ~Transaction();
    void commit();

   private:
    const SqliteDb& db_;
    bool done_ = false;
  };

 private:
  std::string path_, what_;
  sqlite3* db_ = nullptr;
};

// A prepared statement, finalized on scope exit. Parameters are numbered from 1, columns from 0.
class SqliteStmt {
 public:
  SqliteStmt(const SqliteDb& db, const std::string& sql);
  ~SqliteStmt();
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;
  SqliteStmt& text(int i, const std::string& v);
  SqliteStmt& num(int i, double v);
  SqliteStmt& integer(int i, int64_t v);
  SqliteStmt& null(int i);
  // True while there is a row.
  bool step();
  std::string col_text(int i) const;
  double col_num(int i) const;
  int64_t col_int(int i) const;
  bool col_null(int i) const;
  int columns() const;  // of the result rows

 private:
  const SqliteDb& db_;
  sqlite3_stmt* s_ = nullptr;
};

// ISO 8601 UTC, seconds.
std::string now_iso8601();

}  // namespace joule
