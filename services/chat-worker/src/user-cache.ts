import type { Sql } from 'postgres';
import { USER_COLUMNS, type UserRow } from './context.ts';

/**
 * The rows requests are authorised with, kept briefly so a request does not cost a query for its
 * caller. A trigger on "user" (migration 0004) announces every update or delete at commit, and
 * every replica drops that user's copy; a (re)connected listener drops everything, and no copy
 * outlives `maxAgeMs` even if a notification were lost. So a deleted or demoted user loses access
 * as soon as the change commits, on every replica.
 */
export class UserCache {
  private readonly rows = new Map<string, { row: Promise<UserRow | undefined>; at: number }>();

  constructor(
    private readonly sql: Sql,
    private readonly channel: string,
    private readonly maxAgeMs = 5000,
    private readonly maxEntries = 10_000,
  ) {}

  async start(): Promise<void> {
    await this.sql.listen(
      this.channel,
      (id) => this.rows.delete(id),
      () => this.rows.clear(),
    );
  }

  get(id: string): Promise<UserRow | undefined> {
    const hit = this.rows.get(id);
    if (hit && Date.now() - hit.at <= this.maxAgeMs) return hit.row;
    if (this.rows.size >= this.maxEntries) this.rows.clear();
    const row = this.sql<UserRow[]>`select ${this.sql(USER_COLUMNS as unknown as string[])} from "user" where id = ${id}`.then((r) => r[0]);
    const entry = { row, at: Date.now() };
    this.rows.set(id, entry);
    // A failed lookup, or "no such user" (the id may be created later), is not kept.
    row.then(
      (r) => {
        if (!r && this.rows.get(id) === entry) this.rows.delete(id);
      },
      () => {
        if (this.rows.get(id) === entry) this.rows.delete(id);
      },
    );
    return row;
  }
}
