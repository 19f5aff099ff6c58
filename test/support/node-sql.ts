/**
 * A `SqlStorage` (the Durable Object SQL API: `exec(query, ...bindings)` → cursor) over Node's
 * built-in `node:sqlite`, so the delivery record (packages/rpc/src/delivery.ts) and the topic log
 * run in the Node unit tier exactly as in workerd. Only what dorpc uses is implemented.
 */
import { DatabaseSync } from "node:sqlite";
import type { Sql, SqlValue } from "../../packages/rpc/src/sql.js";

type Row = Record<string, SqlValue>;

export interface NodeSql extends Sql {
  /** Statements run, for tests that count writes. */
  readonly statements: string[];
  /** The same statements with their bindings. */
  readonly log: { query: string; bindings: unknown[] }[];
}

/** Durable Object SQL's limit on bound parameters per statement (developers.cloudflare.com/durable-objects/platform/limits/). */
const MAX_BINDINGS = 100;

export function nodeSql(): NodeSql {
  const db = new DatabaseSync(":memory:");
  const statements: string[] = [];
  const log: NodeSql["log"] = [];
  const exec = (query: string, ...bindings: unknown[]) => {
    // As in workerd: a Durable Object's SQL binds at most 100 parameters per statement.
    if (bindings.length > MAX_BINDINGS) throw new Error(`too many SQL variables: ${bindings.length} (at most ${MAX_BINDINGS})`);
    statements.push(query);
    log.push({ query, bindings });
    const args = bindings.map((b) => (b instanceof ArrayBuffer ? new Uint8Array(b) : b)) as never[];
    const statement = db.prepare(query);
    let rows: Row[] = [];
    if (statement.columns().length > 0) {
      rows = (statement.all(...args) as Row[]).map((row) => {
        const out: Row = {};
        // workerd returns BLOBs as ArrayBuffer.
        for (const [key, value] of Object.entries(row) as [string, unknown][]) {
          out[key] = value instanceof Uint8Array ? (value.slice().buffer as ArrayBuffer) : (value as SqlValue);
        }
        return out;
      });
    } else statement.run(...args);
    return {
      toArray: () => rows,
      one: () => {
        if (rows.length !== 1) throw new Error(`Expected exactly one row, got ${rows.length}.`);
        return rows[0]!;
      },
      [Symbol.iterator]: () => rows[Symbol.iterator](),
    };
  };
  return { exec, statements, log } as unknown as NodeSql;
}
