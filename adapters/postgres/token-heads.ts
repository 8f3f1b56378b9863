import type { Pool } from 'pg'
import { prepared, quoteLiteral } from './keys.js'

/**
 * Each token row keeps its head (the document without `data` and `mask`) and the bytes its sealed
 * `data` and `mask` take (`storedBytes`) in columns of their own, so a page or a search reads whole
 * only the tokens it answers: a large token's document is kept out of line (TOAST) and read whole
 * by any look inside it (a page of 100 tokens of 900 KB read all 100, 1.3–1.6 s, to answer the 4
 * that fit in its bytes).
 *
 * Neither step rewrites the table. Migration 19 adds the columns empty (no default: the catalog
 * only); migration 20 adds the trigger that fills them as PostgreSQL stores a row, and the rows
 * stored before it are filled after the store opens, a bounded batch a statement
 * (`fillTokenHeads`). Until a row is filled its reads compute both from the document
 * (`tokenBytesOf`, `tokenHeadOf`), as they did before the columns existed.
 */

/** The fill's name in `tokenvault_fills`, the schema's record of fills that are done. */
export const TOKEN_HEADS_FILL = 'token heads'

/**
 * The bytes of a document's sealed `data` and `mask`: a base64 value's three bytes in four
 * characters less one per `=` of padding, else the length of its JSON. plpgsql reads the
 * document once, where the same expression in SQL read it once per mention (29 s against 2.7 s
 * over 447 tokens of 1.2 MB).
 */
const storedBytesFunction = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.tv_stored_bytes(doc jsonb) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  d jsonb := doc;
  f jsonb;
  b64 text;
  n bigint := 0;
BEGIN
  FOREACH f IN ARRAY ARRAY[d -> 'data', d -> 'mask'] LOOP
    IF f IS NOT NULL THEN
      b64 := f ->> '$sealed';
      n := n + CASE WHEN b64 IS NULL THEN octet_length(f::text)
        ELSE octet_length(b64) * 3 / 4 - (octet_length(b64) - octet_length(rtrim(b64, '='))) END;
    END IF;
  END LOOP;
  RETURN n;
END
$$;`

/** A token's head, from its document `doc` (an SQL expression). */
const headOf = (doc: string) => `${doc} - 'data' - 'mask'`

/** Migration 19: the function and the two columns, empty. */
export const tokenHeadsSql = (s: string) => `${storedBytesFunction(s)}
ALTER TABLE ${s}.tokens ADD COLUMN IF NOT EXISTS head jsonb, ADD COLUMN IF NOT EXISTS stored_bytes bigint;
`

/**
 * Migration 20: the trigger that fills both columns whenever a row's document is stored, and the
 * record of fills. A schema whose step 19 made them stored generated columns (as it did for a
 * while, rewriting the table) keeps their values as plain columns, already filled; so does a
 * schema with no token yet.
 */
export const tokenHeadsKeptSql = (s: string) => `
CREATE TABLE IF NOT EXISTS ${s}.tokenvault_fills (
  name text PRIMARY KEY,
  done_at timestamptz NOT NULL DEFAULT now()
);
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = ${quoteLiteral(`${s}.tokens`)}::regclass
      AND attname IN ('head', 'stored_bytes') AND attgenerated = 's') THEN
    ALTER TABLE ${s}.tokens ALTER COLUMN head DROP EXPRESSION, ALTER COLUMN stored_bytes DROP EXPRESSION;
    INSERT INTO ${s}.tokenvault_fills (name) VALUES ('${TOKEN_HEADS_FILL}') ON CONFLICT DO NOTHING;
  ELSIF NOT EXISTS (SELECT 1 FROM ${s}.tokens) THEN
    INSERT INTO ${s}.tokenvault_fills (name) VALUES ('${TOKEN_HEADS_FILL}') ON CONFLICT DO NOTHING;
  END IF;
END
$$;
CREATE OR REPLACE FUNCTION ${s}.tv_token_head() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.head := ${headOf('NEW.doc')};
  NEW.stored_bytes := ${s}.tv_stored_bytes(NEW.doc);
  RETURN NEW;
END
$$;
DROP TRIGGER IF EXISTS tv_token_head ON ${s}.tokens;
CREATE TRIGGER tv_token_head BEFORE INSERT OR UPDATE OF doc ON ${s}.tokens
  FOR EACH ROW EXECUTE FUNCTION ${s}.tv_token_head();
`

/** A token row's stored bytes (`alias` names its row): the column, or computed until it is filled. */
export const tokenBytesOf = (s: string, alias = '') =>
  `coalesce(${alias}stored_bytes, ${s}.tv_stored_bytes(${alias}doc))`

/** A token row's head: the column, or computed until it is filled. */
export const tokenHeadOf = (alias = '') => `coalesce(${alias}head, ${headOf(`${alias}doc`)})`

/** Rows a fill's statement looks at, and the documents' stored bytes it reads whole, at most (its first row always). */
const FILL_ROWS = 256
const FILL_BYTES = 4 * 1024 * 1024

/**
 * One fill step: the next `FILL_ROWS` rows after the key (`$1`, `$2`) in key order, cut where
 * their documents' stored size (`pg_column_size`, read from the row without its value) passes
 * `FILL_BYTES`; of those, the rows still empty and not locked by a writer are filled. Answers the
 * last key looked at (none when the table ends), how many rows it looked at, were empty and it filled:
 * a row a writer held is left for the next pass (its write fills it, if it stores the document).
 */
const fillStepSql = (s: string) => `
WITH next AS (
  SELECT tenant_id, id, stored_bytes IS NULL AS empty,
    row_number() OVER w AS n, sum(pg_column_size(doc)) OVER w AS run
  FROM (SELECT tenant_id, id, doc, stored_bytes FROM ${s}.tokens
    WHERE (tenant_id, id) > ($1, $2) ORDER BY tenant_id, id LIMIT ${FILL_ROWS}) r
  WINDOW w AS (ORDER BY tenant_id, id)
), step AS (
  SELECT * FROM next WHERE n = 1 OR run <= ${FILL_BYTES}
), held AS (
  SELECT t.tenant_id, t.id FROM ${s}.tokens t JOIN step USING (tenant_id, id)
  WHERE step.empty FOR UPDATE OF t SKIP LOCKED
), filled AS (
  UPDATE ${s}.tokens t SET head = ${headOf('t.doc')}, stored_bytes = ${s}.tv_stored_bytes(t.doc)
  FROM held WHERE t.tenant_id = held.tenant_id AND t.id = held.id AND t.stored_bytes IS NULL
  RETURNING 1
)
SELECT (SELECT tenant_id FROM step ORDER BY n DESC LIMIT 1) AS tenant_id,
  (SELECT id FROM step ORDER BY n DESC LIMIT 1) AS id,
  (SELECT count(*) FROM step)::int AS rows,
  (SELECT count(*) FROM step WHERE empty)::int AS empty,
  (SELECT count(*) FROM filled)::int AS filled`

/** What one fill step answers (`fillStepSql`). */
interface StepRow {
  tenant_id: string | null
  id: string | null
  rows: number
  empty: number
  filled: number
}

/** What a fill did: its statements, the most rows one looked at, and the rows it filled. */
export interface FillOutcome {
  steps: number
  largest: number
  filled: number
  /** Whether every row is now filled (and recorded so in `tokenvault_fills`). */
  done: boolean
}

/**
 * Fills the token rows stored before migration 20, one bounded statement at a time (`run` is how
 * a statement goes: the store's gate, in a line of its own), in passes over the table in key order
 * until a pass finds no empty row it could not fill; then records the fill as done, and later
 * opens skip it. `more()` false stops it between statements (the store closing). Safe beside
 * writers and another process filling: a row is filled under its row lock, once.
 */
export async function fillTokenHeads(
  s: string,
  run: <T>(fn: () => Promise<T>) => Promise<T>,
  pool: Pick<Pool, 'query'>,
  more: () => boolean = () => true,
): Promise<FillOutcome> {
  const outcome: FillOutcome = { steps: 0, largest: 0, filled: 0, done: false }
  const recorded = await run(() =>
    pool.query(`SELECT 1 FROM ${s}.tokenvault_fills WHERE name = $1`, [TOKEN_HEADS_FILL]),
  )
  if (recorded.rowCount) return { ...outcome, done: true }
  const text = fillStepSql(s)
  for (let left = true; left && more(); ) {
    left = false
    let after = ['', '']
    while (more()) {
      const { rows } = await run(() => pool.query(prepared(text, after)))
      const row = rows[0] as StepRow
      outcome.steps++
      outcome.largest = Math.max(outcome.largest, row.rows)
      outcome.filled += row.filled
      if (row.filled < row.empty) left = true
      if (row.tenant_id === null || row.id === null) break
      after = [row.tenant_id, row.id]
    }
  }
  if (!more()) return outcome
  await run(() =>
    pool.query(`INSERT INTO ${s}.tokenvault_fills (name) VALUES ($1) ON CONFLICT DO NOTHING`, [
      TOKEN_HEADS_FILL,
    ]),
  )
  return { ...outcome, done: true }
}
