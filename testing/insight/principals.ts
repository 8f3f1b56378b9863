import type { AccessRule, ApplicationType, Permission } from '../../src/kernel/index.js'
import type { Op, StoreDump } from '../../src/store/index.js'

/** What an application or session holds, as the store last recorded it. */
export interface Held {
  kind: 'application' | 'session'
  id: string
  /** The application's name; for a session, `session <id>`. */
  name: string
  /** The application's type (a session: `public`). */
  type: ApplicationType
  /** For a session, the public application that created it. */
  applicationId?: string
  permissions: readonly Permission[]
  rules: readonly AccessRule[]
}

/**
 * The applications and sessions of a test vault, by id, kept from the batches written to its store
 * (they are not sealed): names for the exposure table, grants for `usedAccess`. A deleted one is
 * kept, so a test's accounting still names it.
 */
export class Principals {
  private readonly byId = new Map<string, Held>()

  /** A copy (a handful of records: the vault's applications and sessions). */
  fork(): Principals {
    const copy = new Principals()
    for (const [id, held] of this.byId) copy.byId.set(id, held)
    return copy
  }

  get(id: string): Held | undefined {
    return this.byId.get(id)
  }

  /** The ids of every application, in the order they were first written. */
  applicationIds(): string[] {
    return [...this.byId.values()].filter((h) => h.kind === 'application').map((h) => h.id)
  }

  load(dump: StoreDump): void {
    this.record([
      ...dump.applications.map((application) => ({ op: 'application.put', application }) as Op),
      ...dump.sessions.map((session) => ({ op: 'session.put', session }) as Op),
    ])
  }

  record(ops: readonly Op[]): void {
    for (const op of ops) {
      if (op.op === 'application.put') {
        const a = op.application
        this.byId.set(a.id, {
          kind: 'application',
          id: a.id,
          name: a.name,
          type: a.type,
          permissions: a.permissions,
          rules: a.rules ?? [],
        })
      } else if (op.op === 'session.put') {
        const s = op.session
        this.byId.set(s.id, {
          kind: 'session',
          id: s.id,
          name: `session ${s.id}`,
          type: 'public',
          applicationId: s.application_id,
          permissions: s.permissions,
          rules: s.rules ?? [],
        })
      }
    }
  }
}
