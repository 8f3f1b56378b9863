/**
 * The host's functions, handed over on `globalThis.__host` and removed from the global object here,
 * before any formula code runs (see `installPrelude` in adapters/sandbox/engine.ts).
 */
const host = globalThis.__host
delete globalThis.__host

export const refuse = host.refuse
export const hostFetch = host.fetch
export const hashNew = host.hashNew
export const hashUpdate = host.hashUpdate
export const hashDigest = host.hashDigest
export const hostRandom = host.random
