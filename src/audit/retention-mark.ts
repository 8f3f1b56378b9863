import type { LogEntry } from '../kernel/index.js'
import { writerOf } from './chain.js'

/**
 * A writer's retention mark: the entry retention leaves first in a writer's ids when it removed the
 * writer's oldest entries, saying at which seq each lane it removed entries of goes on. A writer's
 * lanes run side by side in its ids, so a lane's next entry may be anywhere after the cut, or come
 * much later (an idle lane taken again): the mark, not that entry, tells verification where it
 * starts. Sealed like any entry (a group of one): its lanes are covered by its MAC.
 */
const MARK_LANE = 'retention'

/** The lane of `writer`'s retention mark (no lane of entries: those are numbered). */
export const markLane = (writer: string) => `${writer}.${MARK_LANE}`

/** Whether `e` is a retention mark. */
export const isRetentionMark = (e: Pick<LogEntry, 'lane'>) =>
  typeof e.lane === 'string' && e.lane === markLane(writerOf(e.lane))

/** The words of a mark's message before its lanes (JSON: lane → the seq it goes on at). */
const PREFIX = 'log.retention: removed this writer’s oldest entries; its lanes go on at '

/** A mark's message: `PREFIX` and its lanes as JSON, sorted. */
export const markMessage = (lanes: ReadonlyMap<string, number>) =>
  PREFIX + JSON.stringify(Object.fromEntries([...lanes].sort(([a], [b]) => (a < b ? -1 : 1))))

/** The lanes a mark names (lane → the seq it goes on at); `null` when its message is not a mark's. */
export function markedLanes(e: Pick<LogEntry, 'message'>): Map<string, number> | null {
  if (typeof e.message !== 'string' || !e.message.startsWith(PREFIX)) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(e.message.slice(PREFIX.length))
  } catch {
    return null
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return null
  const out = new Map<string, number>()
  for (const [lane, seq] of Object.entries(parsed)) {
    if (!Number.isSafeInteger(seq) || (seq as number) < 0) return null
    out.set(lane, seq as number)
  }
  return out
}
