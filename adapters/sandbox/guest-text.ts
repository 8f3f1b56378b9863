import type { QuickJSContext, QuickJSHandle } from 'quickjs-emscripten-core'

/** Why a guest string could not be read: past `maxUnits`, or not copied whole. */
export class GuestTextError extends Error {}

/**
 * The guest string `handle` as a host string, whole, or a `GuestTextError`: never a part of it.
 * `context.getString` answers `''` when the engine can't allocate the copy (a string of 32 Mi `é`
 * in a run near its memory limit), stops at a NUL character, and turns a long string's lone
 * surrogates into U+FFFD each byte: any copy whose length is not the guest's `length` is refused.
 * A string longer than `maxUnits` UTF-16 units is refused before it is copied. `what` names the
 * value in the error's message.
 */
export function guestString(
  context: QuickJSContext,
  handle: QuickJSHandle,
  what: string,
  maxUnits = Number.POSITIVE_INFINITY,
): string {
  if (context.typeof(handle) !== 'string') throw new GuestTextError(`${what} must be a string`)
  const lengthHandle = context.getProp(handle, 'length')
  const length = context.typeof(lengthHandle) === 'number' ? context.getNumber(lengthHandle) : -1
  lengthHandle.dispose()
  if (length > maxUnits) throw new GuestTextError(`${what} is longer than ${maxUnits} characters`)
  const text = context.getString(handle)
  if (text.length !== length)
    throw new GuestTextError(
      `${what} could not be copied whole (the run is out of memory, or the text holds a NUL character or a lone surrogate)`,
    )
  return text
}
