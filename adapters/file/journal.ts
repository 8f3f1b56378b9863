import { fdatasync, writeAll } from './io.js'

/** A promise with its settle functions: every write of one flush shares one. */
export class Group {
  readonly promise: Promise<void>
  resolve!: () => void
  reject!: (error: Error) => void
  constructor() {
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
    // Nobody may be waiting (a barrier nobody asked for); a rejection must not go unhandled.
    this.promise.catch(() => {})
  }
}

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
  private chunks: Buffer[] = []
  private bytes = 0
  private group: Group | null = null
  private last: Promise<void> = Promise.resolve()
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

  /** Queues a record; resolves when it is durable, rejects if the journal fails first. */
  append(record: Buffer): Promise<void> {
    if (this.failure) return Promise.reject(this.failure)
    this.chunks.push(record)
    this.bytes += record.length
    if (!this.group) {
      this.group = new Group()
      this.last = this.group.promise
    }
    this.kick()
    return this.group.promise
  }

  /** Resolves when everything queued so far is durable (at once if nothing is). */
  barrier(): Promise<void> {
    return this.failure ? Promise.reject(this.failure) : this.last
  }

  /** Starts the flush loop if it is idle (also to run requested maintenance). */
  kick(): void {
    if (this.running) return
    this.running = true
    queueMicrotask(() => void this.run())
  }

  /** Resolves when the flush loop has stopped: nothing queued, no maintenance running. */
  idle(): Promise<void> {
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
    this.chunks = []
    this.bytes = 0
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
        const chunks = this.chunks
        const bytes = this.bytes
        this.chunks = []
        this.bytes = 0
        this.group = null
        try {
          const { sync, beforeWrite, beforeSync } = this.options
          await beforeWrite?.()
          if (sync === 'dsync') await beforeSync?.()
          await writeAll(this.fd, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, bytes), this.size)
          this.size += bytes
          if (sync === 'fdatasync') {
            await beforeSync?.()
            await fdatasync(this.fd)
          }
          if (sync !== 'none') this.syncs++
        } catch (error) {
          this.fail(error, group)
          break
        }
        this.flushes++
        this.records += chunks.length
        group.resolve()
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
    this.idleGroup?.resolve()
    this.idleGroup = null
  }

  private fail(error: unknown, inFlight: Group | null) {
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
    this.chunks = []
    this.bytes = 0
    this.options.onFailure?.(this.failure)
  }
}
