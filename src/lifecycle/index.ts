// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export type { StateSnapshot } from './state-transfer.js'
export { clearState, deleteTenants, parseSnapshot, restoreSnapshot, takeSnapshot } from './state-transfer.js'
export type { SweepCounts } from './sweep.js'
export { ENDED_RETENTION_MS, SWEEP_BATCH, sweepExpired, sweepExpiredOf } from './sweep.js'
