import { crc32 } from './crc32.js'
import { fdatasync, writeAll } from './io.js'
import { RECORD_HEADER_BYTES } from './record.js'

/** What every durable write resolves to: one shared, frozen `{ ok: true }`. */
export const DURABLE: { readonly ok: true } = Object.freeze({ ok: true as const })

/** A promise with its settle functions: every write of one flush shares one. */
export class Group {
  readonly promise: Promise<typeof DURABLE>
  resolve!: (value: typeof DURABLE) => void
  reject!: (error: Error) => void
  constructor() {
    this.promise = new Promise<typeof DURABLE>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    // Nobody may be waiting (a barrier nobody asked for); a rejection must not go unhandled.
    this.promise.catch(() => {})
  }
}

const INITIAL_BUFFER_BYTES = 64 * 1024

/** What the journal calls between flushes: the store compacts there. */
export interface JournalOptions {
  /**
   * How a flush becomes durable: `fdatasync` after its write; `dsync`: the file is open with
   * `O_DSYNC`, so the write itself returns once durable; `none`: it does not.
   */
  sync: 'fdatasync' | 'dsync' | 'none'
  /** Awaited before each flush's write and before its sync: test hooks that may throw. */
  beforeWrite?: () => void | Promise<void>
  beforeSync?: () => void | Promise<void>
  /** Whether `maintain` should run after this flush (or now, if nothing is pending). */
  wantsMaintenance: () => boolean
  maintain: () => Promise<void>
  /** Told once, when the journal fails for good. */
  onFailure?: (error: Error) => void
  /**
   * Told when a flush or maintenance fails in a way the store can recover from (a full disk, an I/O
   * error): the journal has rejected what was in flight and queued with `error` (as coded by
   * `code`), and refuses appends until `resume`.
   */
  onFault?: (error: Error, cause: unknown) => void
  /** The error appends are refused with while suspended (default: the cause itself). */
  code?: (cause: unknown) => Error
  /** Whether a failure is for good (default: none is, when `onFault` is given). */
  fatal?: (cause: unknown) => boolean
}

/**
 * The append side of the journal, with group commit. `append` queues a framed record and returns a
 * promise that resolves once it is durable. One flush runs at a time: it takes every queued record,
 * writes them with one `write` and one `fdatasync`, then resolves them all; records queued meanwhile
 * wait for the next flush, which starts as soon as this one ends. The first flush after an idle
 * spell starts on the next microtask, so writes issued in the same tick share it.
 *
 * On an error, the records in flight and queued are rejected. Without `onFault`, or when `fatal`
 * says so, the journal fails for good (every later record is rejected too); otherwise it is
 * suspended — appends are refused — until the store has rebuilt memory from what the disk holds
 * and calls `resume`.
 */
export class Journal {
  /** Records queued for the next flush, framed in place, and the buffer the last flush wrote. */
  private buffer = Buffer.allocUnsafe(INITIAL_BUFFER_BYTES)
  private spare = Buffer.allocUnsafe(INITIAL_BUFFER_BYTES)
  private used = 0
  private queued = 0
  private group: Group | null = null
  private last: Promise<typeof DURABLE> = Promise.resolve(DURABLE)
  private running = false
  private idleGroup: Group | null = null
  /** Set once the journal failed for good; the store is unusable from then on. */
  failure: Error | null = null
  /** Set while suspended after a recoverable failure: what appends are refused with. */
  suspended: Error | null = null
  /** Flushes made durable (each one `fdatasync`, or one `O_DSYNC` write). */
  syncs = 0
  flushes = 0
  records = 0

  constructor(
    private fd: number,
    /** Bytes in the journal file: where the next record goes. */
    public size: number,
    private readonly options: JournalOptions,
  ) {}

  /**
   * Queues a record holding `json` (the text of an array); resolves to `DURABLE` once it is on
   * disk, rejects if the journal fails first. The record is framed straight into the flush buffer.
   */
  append(json: string): Promise<typeof DURABLE> {
    if (this.failure) return Promise.reject(this.failure)
    if (this.suspended) return Promise.reject(this.suspended)
    const at = this.used
    const room = at + RECORD_HEADER_BYTES + json.length * 3
    if (room > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, this.buffer.length * 2))
      this.buffer.copy(grown, 0, 0, at)
      this.buffer = grown
    }
    const buffer = this.buffer
    const length = buffer.write(json, at + RECORD_HEADER_BYTES, 'utf8')
    const end = at + RECORD_HEADER_BYTES + length
    buffer.writeUInt32LE(length, at)
    buffer.writeUInt32LE(crc32(buffer.subarray(at + RECORD_HEADER_BYTES, end)), at + 4)
    this.used = end
    this.queued++
    let group = this.group
    if (!group) {
      group = this.group = new Group()
      this.last = group.promise
    }
    this.kick()
    return group.promise
  }

  /** Resolves when everything queued so far is durable (at once if nothing is). */
  barrier(): Promise<typeof DURABLE> {
    const refused = this.failure ?? this.suspended
    return refused ? Promise.reject(refused) : this.last
  }

  /** Starts the flush loop if it is idle (also to run requested maintenance). */
  kick(): void {
    if (this.running || this.suspended || this.failure) return
    this.running = true
    queueMicrotask(() => void this.run())
  }

  /** Resolves when the flush loop has stopped: nothing queued, no maintenance running. */
  idle(): Promise<unknown> {
    if (!this.running) return Promise.resolve()
    this.idleGroup ??= new Group()
    return this.idleGroup.promise
  }

  /** Bytes of records queued and not yet flushed: the next flush writes them first. */
  get pendingBytes(): number {
    return this.used
  }

  /**
   * Ends a suspension: later flushes go to `fd` at byte `size` (the journal the store reopened after
   * rebuilding its memory from disk).
   */
  resume(fd: number, size: number): void {
    this.fd = fd
    this.size = size
    this.used = 0
    this.queued = 0
    this.group = null
    this.last = Promise.resolve(DURABLE)
    this.suspended = null
  }

  /**
   * Points later flushes at a new, empty journal file (the records queued and not yet flushed go
   * there first); returns the old descriptor to close. Call it between flushes (in `maintain`).
   */
  switchTo(fd: number): number {
    const old = this.fd
    this.fd = fd
    this.size = 0
    return old
  }

  /** The descriptor of the current journal file. */
  get descriptor(): number {
    return this.fd
  }

  private async run(): Promise<void> {
    while (!this.failure && !this.suspended) {
      const group = this.group
      if (group) {
        // Swap buffers: appends go on into the spare while this one is written.
        // (The spare is the buffer the previous flush wrote, which is done with.)
        const flushing = this.buffer
        const data = flushing.subarray(0, this.used)
        const records = this.queued
        this.buffer = this.spare
        // After an unusually large flush, let the big buffer go.
        this.spare =
          flushing.length > 16 * INITIAL_BUFFER_BYTES ? Buffer.allocUnsafe(INITIAL_BUFFER_BYTES) : flushing
        this.used = 0
        this.queued = 0
        this.group = null
        try {
          const { sync, beforeWrite, beforeSync } = this.options
          if (beforeWrite) await beforeWrite()
          if (beforeSync && sync === 'dsync') await beforeSync()
          await writeAll(this.fd, data, this.size)
          if (sync === 'fdatasync') {
            if (beforeSync) await beforeSync()
            await fdatasync(this.fd)
          }
          // Only now are these bytes part of the journal: a failed sync leaves them to be cut off.
          this.size += data.length
          if (sync !== 'none') this.syncs++
        } catch (error) {
          this.stop(error, group)
          break
        }
        this.flushes++
        this.records += records
        group.resolve(DURABLE)
      } else if (!this.options.wantsMaintenance()) {
        break
      }
      if (this.options.wantsMaintenance()) {
        try {
          await this.options.maintain()
        } catch (error) {
          this.stop(error, null)
          break
        }
      }
    }
    this.running = false
    this.idleGroup?.resolve(DURABLE)
    this.idleGroup = null
  }

  /** Fails for good or suspends, as `fatal` and `onFault` decide, rejecting `inFlight` and what is queued. */
  stop(error: unknown, inFlight: Group | null = null): void {
    const { onFault, fatal, code } = this.options
    if (!onFault || fatal?.(error)) {
      this.fail(error, inFlight)
      return
    }
    if (this.failure || this.suspended) return
    const refused = code ? code(error) : error instanceof Error ? error : new Error(String(error))
    this.suspended = refused
    inFlight?.reject(refused)
    this.group?.reject(refused)
    this.group = null
    this.used = 0
    this.queued = 0
    onFault(refused, error)
  }

  /** Fails the journal for good: rejects what is queued (and `inFlight`) and every later append. */
  fail(error: unknown, inFlight: Group | null = null): void {
    if (this.failure) return
    const cause = error instanceof Error ? error : new Error(String(error))
    this.failure = new Error(
      `fileStore: the journal failed, so the store refuses further calls: ${cause.message}`,
      {
        cause,
      },
    )
    inFlight?.reject(this.failure)
    this.group?.reject(this.failure)
    this.group = null
    this.used = 0
    this.queued = 0
    this.options.onFailure?.(this.failure)
  }
}
