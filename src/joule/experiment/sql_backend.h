#pragma once
// The two databases a results store can live in, behind one small interface: an SQLite file
// (embedded, the default) and a PostgreSQL server (libpq; many machines writing to one place).
// Statements are written once with ?N placeholders (translated to $N for PostgreSQL); values
// come back as text.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace joule::experiment {

using SqlValue = std::variant<std::monostate, std::string, int64_t, double>;

struct SqlRow {
  std::vector<std::optional<std::string>> cols;
  std::string text(size_t i) const { return cols.at(i).value_or(""); }
  double num(size_t i) const;
  int64_t integer(size_t i) const;
  bool null(size_t i) const { return !cols.at(i).has_value(); }
};

class SqlBackend {
 public:
  // "postgresql://..." / "postgres://...": a PostgreSQL server; "sqlite:PATH", "sqlite://PATH" or a
  // plain path: an SQLite file. `what` names the database in errors ("results store").
  static std::unique_ptr<SqlBackend> open(const std::string& url, const std::string& what);
  virtual ~SqlBackend() = default;

  virtual std::vector<SqlRow> query(const std::string& sql, const std::vector<SqlValue>& params = {}) = 0;
  virtual void script(const std::string& sql) = 0;  // several statements, no parameters
  virtual void begin() = 0;  // a write transaction (SQLite: BEGIN IMMEDIATE)
  virtual void commit() = 0;
  virtual void rollback() = 0;
  virtual bool postgres() const = 0;
  virtual const std::string& where() const = 0;  // the file, or the URL without its password

  // The schema version (0: none), kept in PRAGMA user_version or a joule_meta table.
  virtual int schema_version() = 0;
  virtual void set_schema_version(int v) = 0;
  // True when the database holds tables but no joule schema version (not ours to add to).
  virtual bool foreign() = 0;

  class Transaction {
   public:
    explicit Transaction(SqlBackend& b) : b_(b) { b_.begin(); }
    ~Transaction() {
      if (!done_) try {
          b_.rollback();
        } catch (...) {
        }
    }
    void commit() {
      b_.commit();
      done_ = true;
    }

   private:
    SqlBackend& b_;
    bool done_ = false;
  };
};

}  // namespace joule::experiment
