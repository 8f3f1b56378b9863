/**
 * File names inside a store directory. Generation N is `snapshot.N.json` (absent for N = 0) plus
 * `journal.N.log`; the state is that snapshot with that journal replayed on top. A compaction
 * writes `snapshot.N+1.json.tmp`, renames it into place, then starts `journal.N+1.log`.
 */

/** The snapshot of a generation. */
export const snapshotName = (generation: number): string => `snapshot.${generation}.json`

/** The journal of a generation. */
export const journalName = (generation: number): string => `journal.${generation}.log`

/** A snapshot being written; any left over on open is a crashed compaction's and is removed. */
export const snapshotTempName = (generation: number): string => `${snapshotName(generation)}.tmp`

/** What a directory entry is, if it is one of the store's own files. */
export function parseName(
  name: string,
): { kind: 'snapshot' | 'journal' | 'temp'; generation: number } | null {
  const match = /^(snapshot|journal)\.(\d+)\.(json|log)(\.tmp)?$/.exec(name)
  if (!match) return null
  const kind = match[1] === 'snapshot' ? 'snapshot' : 'journal'
  if ((kind === 'snapshot') !== (match[3] === 'json')) return null
  if (match[4] !== undefined && kind !== 'snapshot') return null
  return { kind: match[4] === undefined ? kind : 'temp', generation: Number(match[2]) }
}
