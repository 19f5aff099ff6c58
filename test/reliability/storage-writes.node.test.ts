/**
 * Which statements the storage watch counts as writes (packages/rpc/src/storage-writes.ts): the
 * delivery record writes its waiting rows before each, so a write taken for a read could commit
 * without them.
 */
import { describe, expect, it } from "vitest";
import { watchWrites } from "../../packages/rpc/src/storage-writes.js";
import { nodeSql } from "../support/node-sql.js";

function watched() {
  const sql = nodeSql();
  sql.exec("CREATE TABLE t (x)");
  const writes = watchWrites({ sql });
  let flushes = 0;
  writes.before = () => flushes++;
  return { sql, writes, flushes: () => flushes };
}

describe("the storage watch", () => {
  it("counts every statement but a lone SELECT as a write, and flushes before it", () => {
    const t = watched();
    t.sql.exec("SELECT x FROM t");
    t.sql.exec("  select count(*) AS n FROM t;  ");
    expect(t.writes.count).toBe(0);
    t.sql.exec("INSERT INTO t VALUES (1)");
    t.sql.exec("WITH v AS (SELECT 2 AS x) INSERT INTO t SELECT x FROM v");
    expect(t.writes.count).toBe(2);
    expect(t.flushes()).toBe(2);
  });

  it("a string that starts with SELECT and holds another statement is a write (exec runs them all)", () => {
    const t = watched();
    // workerd runs every statement of the string; node:sqlite's prepare only the first, so only the count is checked.
    t.sql.exec("SELECT 1 AS one; INSERT INTO t VALUES (7)");
    expect(t.writes.count).toBe(1);
    expect(t.flushes()).toBe(1);
  });

  it("its own SQL (the record's rows) is not counted", () => {
    const t = watched();
    t.writes.sql.exec("INSERT INTO t VALUES (3)");
    expect(t.writes.count).toBe(0);
  });
});
