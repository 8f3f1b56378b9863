// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.
export { AuditLog, MAX_PENDING_ENTRIES_PER_TENANT } from './audit-log.js'
export type { AuditMac } from './chain.js'
export { AUDIT_PURPOSE, entryId, MAX_HELD_LANES, MAX_LANES_PER_WRITER, macText } from './chain.js'
export type { EntryDraft } from './entries.js'
export { answeredIds, entriesOfCall, entriesOfWrite, MAX_CALL_ENTRIES } from './entries.js'
export type { ListLogsQuery, LogPage, LogView } from './log-reads.js'
export {
  answersTo,
  LOG_ENTITY_TYPES,
  listLogsQuery,
  logOperations,
  logView,
  MAX_LOG_OFFSET,
} from './log-reads.js'
export type { Removed } from './retention.js'
export {
  DEFAULT_LOG_RETENTION_DAYS,
  DEFAULT_MAX_LOG_ENTRIES_PER_TENANT,
  RETENTION_STEP,
  removeOldEntries,
  removeOldestEntries,
} from './retention.js'
export type { BrokenLink, BrokenReason, LogVerification } from './verify.js'
export { verifyLogs } from './verify.js'
