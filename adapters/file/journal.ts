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
  /** Told once, when the journal fails. */
  onFailure?: (error: Error) => void
}

/**
 * The append side of the journal, with group commit. `append` queues a framed record and returns a
 * promise that resolves once it is durable. One flush runs at a time: it takes every queued record,
 * writes them with one `write` and one `fdatasync`, then resolves them all; records queued meanwhile
 * wait for the next flush, which starts as soon as this one ends. The first flush after an idle
 * spell starts on the next microtask, so writes issued in the same tick share it.
 *
 * On any error the journal fails for good: every queued and later record is rejected, since memory
 * already holds changes the disk may not.
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
  /** Set once a flush or maintenance failed; the store is unusable from then on. */
  failure: Error | null = null
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
    return this.failure ? Promise.reject(this.failure) : this.last
  }

  /** Starts the flush loop if it is idle (also to run requested maintenance). */
  kick(): void {
    if (this.running) return
    this.running = true
    queueMicrotask(() => void this.run())
  }

  /** Resolves when the flush loop has stopped: nothing queued, no maintenance running. */
  idle(): Promise<unknown> {
    if (!this.running) return Promise.resolve()
    this.idleGroup ??= new Group()
    return this.idleGroup.promise
  }

  /**
   * Takes the queued records out of the journal without writing them (a snapshot taken now
   * contains them), with the group their writers wait on: the caller settles it.
   */
  detachPending(): Group | null {
    const group = this.group
    this.used = 0
    this.queued = 0
    this.group = null
    return group
  }

  /** Points later flushes at a new, empty journal file; returns the old descriptor to close. */
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
    while (!this.failure) {
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
          this.size += data.length
          if (sync === 'fdatasync') {
            if (beforeSync) await beforeSync()
            await fdatasync(this.fd)
          }
          if (sync !== 'none') this.syncs++
        } catch (error) {
          this.fail(error, group)
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
          this.fail(error, null)
          break
        }
      }
    }
    this.running = false
    this.idleGroup?.resolve(DURABLE)
    this.idleGroup = null
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
