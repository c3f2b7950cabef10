import type { Creator } from '../domain/creators';
import { sql, statement, type Sql } from './sql';

/**
 * Who created a row of work that runs later (jobs, schedules: both keep created_by_key and
 * created_by_member), as they stand now: the key's scopes and liveness, or the member's role (and,
 * when it came through OAuth, whether its grant still stands).
 */
function creatorStatement(table: 'jobs' | 'schedules') {
  return statement(
    `SELECT k.scopes AS "keyScopes", (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) AS "keyLive",
            m.role AS "memberRole", m.revoked_at IS NULL AS "memberLive",
            w.created_by_grant IS NULL OR EXISTS (SELECT 1 FROM oauth_models g WHERE g.model = 'Grant' AND g.id = w.created_by_grant AND (g.expires_at IS NULL OR g.expires_at > now())) AS "grantLive"
       FROM ${table} w LEFT JOIN api_keys k ON k.id = w.created_by_key LEFT JOIN members m ON m.id = w.created_by_member
      WHERE w.id = $1`,
  );
}

const BY_TABLE = { jobs: creatorStatement('jobs'), schedules: creatorStatement('schedules') };

export async function creatorOf(table: keyof typeof BY_TABLE, key: number, on: Sql = sql): Promise<Creator | undefined> {
  return (await on.rows<Creator>(BY_TABLE[table], [key]))[0];
}
