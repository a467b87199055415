import { LRUCache } from 'lru-cache';
import type { Sql } from 'postgres';
import { USER_COLUMNS, type UserRow } from './context.ts';

/**
 * The rows requests are authorised with, kept briefly so a request does not cost a query for its
 * caller. A trigger on "user" (migration 0004) announces every update or delete at commit, and
 * every replica drops that user's copy; a (re)connected listener drops everything, and no copy
 * outlives `maxAgeMs` even if a notification were lost. So a deleted or demoted user loses access
 * as soon as the change commits, on every replica. At `maxEntries` the least recently used copy
 * goes, so a crowd of one-off callers cannot push out the regulars.
 */
export class UserCache {
  /** The lookup itself is kept, so concurrent requests of one user share one query. */
  private readonly rows: LRUCache<string, Promise<UserRow | undefined>>;

  constructor(
    private readonly sql: Sql,
    private readonly channel: string,
    maxAgeMs = 5000,
    maxEntries = 10_000,
  ) {
    this.rows = new LRUCache({ max: maxEntries, ttl: maxAgeMs });
  }

  async start(): Promise<void> {
    await this.sql.listen(
      this.channel,
      (id) => this.rows.delete(id),
      () => this.rows.clear(),
    );
  }

  get(id: string): Promise<UserRow | undefined> {
    const hit = this.rows.get(id);
    if (hit) return hit;
    const row = this.sql<UserRow[]>`select ${this.sql(USER_COLUMNS as unknown as string[])} from "user" where id = ${id}`.then((r) => r[0]);
    this.rows.set(id, row);
    // A failed lookup, or "no such user" (the id may be created later), is not kept.
    const forget = () => {
      if (this.rows.peek(id) === row) this.rows.delete(id);
    };
    row.then((r) => {
      if (!r) forget();
    }, forget);
    return row;
  }
}
