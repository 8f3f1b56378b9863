/** `util`: format, inspect and a few helpers. */

import { TextDecoder, TextEncoder } from './text.js'

// --- util ---
function inspect(v) {
  if (typeof v === 'string') return "'" + v + "'"
  if (typeof v === 'function') return '[Function: ' + (v.name || 'anonymous') + ']'
  if (v instanceof Error) return v.stack || String(v)
  try {
    const j = JSON.stringify(v)
    return j === undefined ? String(v) : j
  } catch (_e) {
    return String(v)
  }
}
function format(f, ...args) {
  let s =
    typeof f === 'string'
      ? f.replace(/%[sdifjoO%]/g, (m) => {
          if (m === '%%') return '%'
          if (!args.length) return m
          const a = args.shift()
          if (m === '%s') return typeof a === 'string' ? a : inspect(a)
          if (m === '%d' || m === '%i') return String(m === '%i' ? parseInt(a, 10) : Number(a))
          if (m === '%f') return String(parseFloat(a))
          if (m === '%j') {
            try {
              return JSON.stringify(a)
            } catch (_e) {
              return '[Circular]'
            }
          }
          return inspect(a)
        })
      : inspect(f)
  for (let i = 0; i < args.length; i++) s += ' ' + (typeof args[i] === 'string' ? args[i] : inspect(args[i]))
  return s
}
function deepEqual(a, b) {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || !a || !b) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  const ka = Object.keys(a),
    kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  for (let i = 0; i < ka.length; i++)
    if (!Object.hasOwn(b, ka[i]) || !deepEqual(a[ka[i]], b[ka[i]])) return false
  return true
}
const util = Object.freeze({
  format: format,
  inspect: inspect,
  isDeepStrictEqual: deepEqual,
  promisify: (fn) =>
    function (...args) {
      return new Promise((resolve, reject) => {
        fn.apply(
          this,
          args.concat([
            (err, value) => {
              if (err) reject(err)
              else resolve(value)
            },
          ]),
        )
      })
    },
  types: Object.freeze({
    isPromise: (v) => v instanceof Promise,
    isDate: (v) => v instanceof Date,
    isRegExp: (v) => v instanceof RegExp,
  }),
  TextEncoder: TextEncoder,
  TextDecoder: TextDecoder,
})

export { util }
