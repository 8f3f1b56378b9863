import { nextTurn } from '../../src/kernel/index.js'
import type { Outgoing } from './exchange.js'

/**
 * Answers longer than this many characters are handed on as a stream of pieces of at most this
 * many characters, a turn of the event loop (`setImmediate`) before each piece after the first.
 */
export const PACED_ANSWER_CHARS = 64 * 1024

/** Whether `code` is the first half of a surrogate pair (a piece never ends between the halves). */
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/**
 * A text answer too long to hand on in one piece, as the parts of its text (a page's members and
 * items, see `answerParts`), never joined: `pacedText` writes them piece by piece.
 */
export interface PacedOutgoing {
  status: number
  headers: Record<string, string>
  parts: readonly string[]
}

/**
 * The text of `parts` joined, as a stream of its UTF-8 bytes, `PACED_ANSWER_CHARS` characters a
 * piece (drawn from one part or several in a row; a part is sliced, never copied whole), each piece
 * read in a turn of its own; `done` is called once, when the last piece is taken or the reader
 * cancels. A piece is made only when the reader asks for one (no piece is buffered ahead of the
 * socket).
 */
export function pacedText(parts: string | readonly string[], done: () => void): ReadableStream<Uint8Array> {
  const texts = (typeof parts === 'string' ? [parts] : parts).filter((part) => part.length > 0)
  let part = 0
  let at = 0
  let ended = false
  const end = () => {
    if (ended) return
    ended = true
    done()
  }
  /** The next piece's slices: at most `PACED_ANSWER_CHARS` characters, never half a pair. */
  const slices = () => {
    const out: string[] = []
    let room = PACED_ANSWER_CHARS
    while (room > 0 && part < texts.length) {
      const text = texts[part]!
      let to = Math.min(text.length, at + room)
      if (to < text.length && isHighSurrogate(text.charCodeAt(to - 1))) to--
      if (to === at) break
      out.push(text.slice(at, to))
      room -= to - at
      at = to
      if (at < text.length) break
      part++
      at = 0
    }
    return out
  }
  let started = false
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (started) await nextTurn()
        started = true
        const piece = slices()
        controller.enqueue(Buffer.from(piece.length === 1 ? piece[0]! : piece.join('')))
        if (part < texts.length) return
        controller.close()
        end()
      },
      cancel: end,
    },
    { highWaterMark: 0 },
  )
}

/**
 * A text answer over `PACED_ANSWER_CHARS` as a paced stream (`pacedText`) with its `Content-Length`
 * (the one `out` carries, else counted here), `done` called once its last piece is taken (or its
 * reader cancels); null for any other answer (short, binary or a stream already), which is handed
 * on as it is. Admission keeps a paced answer's place in its tenant's lane until then, so one
 * tenant's large answers being written count among its requests in flight, and another tenant's
 * request waits behind one piece of each, not all of them.
 */
export function pacedAnswer(out: Outgoing, done: () => void): Outgoing | null {
  if (typeof out.body !== 'string' || out.body.length <= PACED_ANSWER_CHARS) return null
  // The length is the one counted as the answer was serialized, else counted here.
  const length = out.headers['content-length'] ?? String(Buffer.byteLength(out.body))
  const headers = { ...out.headers, 'content-length': length }
  return { ...out, headers, body: pacedText(out.body, done) }
}

/** `out` handed on as a paced stream of its parts (`pacedText`); its headers carry its `Content-Length`. */
export function pacedParts(out: PacedOutgoing, done: () => void): Outgoing {
  return { status: out.status, headers: out.headers, body: pacedText(out.parts, done) }
}
