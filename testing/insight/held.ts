import {
  type KeyProvider,
  Keyring,
  type MasterKey,
  openToken,
  type Sealing,
  toProvider,
} from '../../src/encryption/index.js'
import type { Json, StoredToken } from '../../src/kernel/index.js'
import type { Op, Store, StoreDump } from '../../src/store/index.js'
import { LeakLayers } from './leak-layers.js'

const tokenKey = (tenantId: string, id: string) => `t\u0000${tenantId}\u0000${id}`
const stagedKey = (tenantId: string, transactionId: string, id: string) =>
  `s\u0000${tenantId}\u0000${transactionId}\u0000${id}`

/**
 * The plaintexts a test vault holds, kept in a `LeakIndex` in the test process only (never written
 * anywhere). It is told every batch the service writes to its store (`watchedStore`: below the
 * service's sealing, so records come sealed) and opens them with the tenants' data keys, unwrapped
 * with the test vault's master key (through the core's own `Keyring`): the index follows the vault's
 * state write by write. Records are opened as their write is acknowledged; their plaintext forms
 * are indexed when a check next needs them (`index()`).
 */
export class HeldPlaintexts {
  private readonly leaks: LeakLayers
  /** Records written since the last check, opened, by index key. */
  private readonly pending = new Map<string, { tokenId: string; data: Json }>()
  private readonly keyring: Keyring
  private readonly provider: KeyProvider
  private readonly sealing: Sealing
  /** Token ids made by `leaks.canary()`: findings name them as canaries. */
  readonly canaries = new Set<string>()
  /** Records that could not be opened (a key this kit could not unwrap): they are not searched. */
  unreadable = 0

  constructor(store: Store, masterKey: MasterKey, leaks = new LeakLayers()) {
    this.leaks = leaks
    // One provider for this index and its forks: making one hashes the key.
    this.provider = toProvider(masterKey)
    this.keyring = new Keyring(store, [this.provider])
    const keyring = this.keyring
    this.sealing = {
      keyOf: (tenantId: string, version?: number) => keyring.keyFor(tenantId, version),
      // Nothing is sealed here: the kit only opens.
      sealKeyOf: () => Promise.reject(new Error('the leak index seals nothing')),
      searchIndexPurpose: '',
      asRead: (token: StoredToken) => token,
    } as Sealing
  }

  /** Takes in what a store already holds (a store given to the test vault with records in it). */
  async load(dump: StoreDump): Promise<void> {
    for (const token of dump.tokens) await this.open(tokenKey(token.tenant_id, token.id), token)
    for (const staged of dump.staged) {
      const key = stagedKey(staged.tenant_id, staged.transaction_id, staged.token_id)
      if (staged.token) await this.open(key, staged.token)
    }
  }

  /** Opens a sealed record for the index (a key this kit can't unwrap: counted in `unreadable`). */
  private async open(key: string, sealed: StoredToken): Promise<void> {
    try {
      const token = await openToken(this.sealing, sealed)
      this.pending.set(key, { tokenId: token.id, data: token.data })
    } catch {
      this.unreadable++
      this.forget(key)
    }
  }

  /** Takes in an acknowledged write. */
  async record(ops: readonly Op[]): Promise<void> {
    for (const op of ops) {
      switch (op.op) {
        case 'tenant.put':
          // A restored tenant has new keys; a rotation adds versions: read them again.
          this.keyring.forget(op.tenant.id)
          break
        case 'token.put':
          await this.open(tokenKey(op.token.tenant_id, op.token.id), op.token)
          break
        case 'token.delete':
          this.forget(tokenKey(op.tenant_id, op.id))
          break
        case 'staged.put': {
          const { staged } = op
          const key = stagedKey(staged.tenant_id, staged.transaction_id, staged.token_id)
          if (staged.token) await this.open(key, staged.token)
          else this.forget(key)
          break
        }
        case 'staged.delete':
          this.forget(stagedKey(op.tenant_id, op.transaction_id, op.token_id))
          break
        default:
          break
      }
    }
  }

  private forget(key: string): void {
    this.pending.delete(key)
    this.leaks.delete(key)
  }

  /** A copy over `store` (a fork of this one's store), in time independent of what it holds. */
  fork(store: Store): HeldPlaintexts {
    const copy = new HeldPlaintexts(store, this.provider, this.index().fork())
    for (const id of this.canaries) copy.canaries.add(id)
    return copy
  }

  /** The index, up to date with every acknowledged write (records opened since the last check indexed now). */
  index(): LeakLayers {
    for (const [key, { tokenId, data }] of this.pending) {
      this.leaks.set(key, tokenId, data, this.canaries.has(tokenId))
    }
    this.pending.clear()
    return this.leaks
  }
}
