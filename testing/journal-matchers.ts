import type { RequestLogEntry } from '../adapters/http/request-log.js'
import type { JournalEntry } from '../src/service/index.js'

/** What the journal matchers need of a vault: its journal, and its request log when it has one. */
interface HasJournal {
  service: { journal: { query(filter?: { operation?: string }): JournalEntry[] } }
  /** The request log's entries (a test vault's `requestEntries`). */
  requestEntries?: () => RequestLogEntry[]
}

interface MatcherResult {
  pass: boolean
  message: () => string
}

/** What `toHaveNoUnexpectedFailures` lets through. */
export interface ExpectedFailures {
  /** 5xx statuses a test means to cause without an injected fault (e.g. `[503]` of a store it broke). */
  allow?: readonly number[]
}

const describe = (e: JournalEntry) =>
  `#${e.seq} ${e.operation} ${e.outcome.ok ? 'ok' : e.outcome.code} [${e.ids.join(', ')}]`

/**
 * The failures no test means to cause: a 5xx the vault answered that no injected fault made, a
 * 501 for a reference route tokenvault does not build, and a journal entry that failed `internal`.
 */
function unexpected(vault: HasJournal, allow: readonly number[]): string[] {
  const out: string[] = []
  for (const e of vault.requestEntries?.() ?? []) {
    if (e.kind === 'fault' || allow.includes(e.status) || e.status < 500) continue
    const why = e.status === 501 ? 'a reference route tokenvault does not build' : e.problem?.title
    out.push(`${e.method} ${e.path} answered ${e.status}${why ? ` (${why})` : ''}, request ${e.request_id}`)
  }
  for (const e of vault.service.journal.query())
    if (!e.outcome.ok && e.outcome.code === 'internal') out.push(`journal ${describe(e)}`)
  return out
}

/**
 * Matchers over the journal and the request log, for vitest and Jest (`expect.extend(journalMatchers)`):
 * `expect(vault).toHaveJournaled('token.create', { ids: [id] })` passes when a successful entry of
 * that operation touched every id given; `expect(vault).toHaveNoUnexpectedFailures()` fails on a
 * 5xx no injected fault made, a 501 of a reference route tokenvault does not build, or an
 * `internal` failure in the journal (`{ allow: [503] }` lets statuses through).
 */
export const journalMatchers = {
  toHaveJournaled(
    received: HasJournal,
    operation: string,
    options: { ids?: readonly string[] } = {},
  ): MatcherResult {
    const ids = options.ids ?? []
    const entries = received.service.journal.query({ operation })
    const pass = entries.some((e) => e.outcome.ok && ids.every((id) => e.ids.includes(id)))
    const what = `${operation}${ids.length ? ` touching ${ids.join(', ')}` : ''}`
    return {
      pass,
      message: () =>
        pass
          ? `expected no successful ${what} in the journal, but there is one`
          : `expected a successful ${what} in the journal; its ${operation} entries: ${entries.map(describe).join('; ') || 'none'}`,
    }
  },
  toHaveNoUnexpectedFailures(received: HasJournal, options: ExpectedFailures = {}): MatcherResult {
    const found = unexpected(received, options.allow ?? [])
    return {
      pass: found.length === 0,
      message: () =>
        found.length
          ? `expected no unexpected failure, but:\n  ${found.join('\n  ')}`
          : 'expected an unexpected failure, but there was none',
    }
  },
}

/**
 * The journal matchers' types, for a TypeScript project to add to its runner's:
 * `declare module 'vitest' { interface Assertion<T = any> extends JournalMatchers<T> {} }`.
 */
export interface JournalMatchers<R = unknown> {
  /** Passes when a successful entry of `operation` touched every id of `ids`. */
  toHaveJournaled(operation: string, options?: { ids?: readonly string[] }): R
  /** Passes when nothing failed that no test means to cause (see `journalMatchers`). */
  toHaveNoUnexpectedFailures(options?: ExpectedFailures): R
}

/** Thrown by a test vault's `http` (with `notBuilt: 'throw'`) for a reference route tokenvault does not build. */
export class NotBuiltError extends Error {
  override readonly name = 'NotBuiltError'
}
