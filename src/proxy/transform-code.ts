/**
 * The module a proxy transform runs as: the tenant's code loaded as its own CommonJS module inside
 * this one, whose exported function gives it the reference's request (`{ args, configuration, bt }`)
 * and answers `{ value }` (what the tenant's function returned) or `{ custom }` (a thrown
 * `CustomHttpResponseError`). Everything here runs inside the formula sandbox, beside the tenant's
 * code and with no more power than it: the sandbox is the wall, this is only the reference's shape.
 *
 * `bt` (present when the proxy names an `application`) calls the vault through the run's `fetch`
 * at `BT_ORIGIN`, which the transform's host side answers in process (see `transforms.ts`).
 */

/** The origin the transform's `bt` calls; `.invalid` names nothing on any network. */
export const BT_ORIGIN = 'https://bt.tokenvault.invalid'

const SDK = '@basis-theory/basis-theory-reactor-formulas-sdk-js'

/** The prologue: the tenant's module object, `require` with the SDK's `CustomHttpResponseError`, `bt`. */
const PROLOGUE = `
const __tv = (function () {
  class CustomHttpResponseError extends Error {
    constructor(response) {
      super('Custom HTTP Response')
      const r = response || {}
      this.name = 'CustomHttpResponseError'
      this.status = r.status
      this.headers = r.headers
      this.body = r.body
    }
  }
  let sdk
  function tenantRequire(id) {
    if (id !== ${JSON.stringify(SDK)}) return require(id)
    sdk = sdk || Object.freeze(Object.assign({}, require(id), { CustomHttpResponseError: CustomHttpResponseError }))
    return sdk
  }
  async function call(method, path, body) {
    const fetch = require('node-fetch')
    const init = { method: method, headers: { 'content-type': 'application/json' } }
    if (body !== undefined) init.body = JSON.stringify(body)
    const response = await fetch(${JSON.stringify(BT_ORIGIN)} + path, init)
    const text = await response.text()
    const data = text ? JSON.parse(text) : undefined
    if (response.ok) return data
    const error = new Error((data && data.detail) || 'the vault answered ' + response.status)
    error.status = response.status
    error.data = data
    if (data && data.errors) error.errors = data.errors
    throw error
  }
  const bt = Object.freeze({
    tokenize: (body) => call('POST', '/tokenize', body),
    detokenize: (body) => call('POST', '/detokenize', body),
    tokens: Object.freeze({
      create: (body) => call('POST', '/tokens', body),
      retrieve: (id) => call('GET', '/tokens/' + encodeURIComponent(String(id))),
    }),
  })
  return { module: { exports: {} }, require: tenantRequire, bt: bt, Custom: CustomHttpResponseError }
})();
(function (exports, module, require) {
`

/** The epilogue: the exported function that calls the tenant's with the reference's request. */
const EPILOGUE = `
})(__tv.module.exports, __tv.module, __tv.require);
module.exports =
  typeof __tv.module.exports !== 'function'
    ? __tv.module.exports
    : async function (req) {
        const request = { args: req.args, configuration: req.configuration, bt: req.with_bt ? __tv.bt : undefined }
        try {
          return { value: await __tv.module.exports(request) }
        } catch (thrown) {
          if (!(thrown instanceof __tv.Custom)) throw thrown
          return { custom: { status: thrown.status, headers: thrown.headers, body: thrown.body } }
        }
      };
`

/** The module the sandbox runs for a transform's `code` (see the file's comment). */
export function transformModule(code: string): string {
  return `${PROLOGUE}${code}${EPILOGUE}`
}
