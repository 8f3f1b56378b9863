/** The reactor formulas SDK's error classes. */

// --- the reactor formulas SDK's errors ---
// Each error's message is the documented detail; its constructor argument becomes the "errors"
// block of the answer: a string or an Error as { error: [message] }, an array as { error: [...] },
// an object key by key (values as arrays of strings).
const FALLBACK_ERROR = 'Something went wrong. Please try again.'
function errorText(v) {
  if (typeof v === 'string') return v
  if (v instanceof Error) return String(v.message)
  if (v !== null && typeof v === 'object') {
    try {
      return JSON.stringify(v)
    } catch (_e) {
      return String(v)
    }
  }
  return v === undefined || v === null || v === '' ? FALLBACK_ERROR : String(v)
}
function sanitizeErrors(errors) {
  const out = {}
  if (Array.isArray(errors)) out.error = errors.map(errorText)
  else if (errors instanceof Error) out.error = [errorText(errors)]
  else if (errors !== null && typeof errors === 'object') {
    for (const key of Object.keys(errors)) {
      const v = errors[key]
      out[key] = Array.isArray(v) ? v.map(errorText) : [v ? errorText(v) : FALLBACK_ERROR]
    }
  } else out.error = [errors ? errorText(errors) : FALLBACK_ERROR]
  return out
}
function errorClass(name, status, detail, build) {
  // biome-ignore lint/complexity/useArrowFunction: a constructor (formula code calls `new` on it)
  const C = function (...args) {
    const e = /** @type {Error & { status?: number, errors?: object }} */ (new Error(detail))
    Object.setPrototypeOf(e, C.prototype)
    e.status = status
    const made = build ? build.apply(undefined, args) : { errors: args[0] }
    e.errors = sanitizeErrors(made.errors)
    if (made.status !== undefined) e.status = made.status
    return e
  }
  C.prototype = Object.create(Error.prototype, {
    constructor: { value: C, writable: true, configurable: true },
    name: { value: name, writable: true, configurable: true },
    toRFC7807: {
      value: function () {
        return { detail: this.message, status: this.status, errors: this.errors }
      },
      writable: true,
      configurable: true,
    },
  })
  Object.setPrototypeOf(C, Error)
  Object.defineProperty(C, 'name', { value: name })
  return C
}
const sdk = Object.freeze({
  AuthenticationError: errorClass('AuthenticationError', 401, 'Authentication Failed'),
  AuthorizationError: errorClass('AuthorizationError', 403, 'Forbidden'),
  BadRequestError: errorClass('BadRequestError', 400, 'Bad Request'),
  InvalidPaymentMethodError: errorClass('InvalidPaymentMethodError', 402, 'Invalid Payment Method'),
  InvalidReactorConfigurationError: errorClass(
    'InvalidReactorConfigurationError',
    400,
    'Invalid Reactor Configuration',
    (property, problem) => {
      const errors = {}
      errors[String(property)] = [problem]
      return { errors: errors }
    },
  ),
  RateLimitError: errorClass('RateLimitError', 429, 'Rate Limit Exceeded'),
  ReactorRuntimeError: errorClass('ReactorRuntimeError', 500, 'Reactor Runtime Error', (error) => {
    const s = error !== null && typeof error === 'object' ? Number(error.status) : NaN
    return s >= 400 && s <= 599 && Math.floor(s) === s ? { errors: error, status: s } : { errors: error }
  }),
  ServiceUnavailableError: errorClass('ServiceUnavailableError', 503, 'Service Unavailable Error'),
})

export { sdk }
