import type { Ctx } from '../call/index.js'
import type { ReactResult } from '../kernel/index.js'
import { forbidden, invalid, noteUse, parse, ServiceError } from '../kernel/index.js'
import { detokenizeArgs } from '../tokens/index.js'
import { type CallbackBody, callbackError } from './callback.js'
import { allowedUrl } from './egress.js'
import type { ReactInput } from './inputs.js'
import { castArgs, type JsonObject, reactResult, runFailure } from './react.js'
import { formulaFor, mustGetReactor } from './reactor-records.js'
import { reactInput } from './reactor-schemas.js'

/** The documented default limit of an asynchronous react. */
const ASYNC_TIMEOUT_MS = 10_000

/** Whether the principal may invoke reactors: `token:use` as a permission or in any of its access rules. */
function requireUse(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (permissions.includes('token:use') || rules?.some((r) => r.permissions.includes('token:use'))) {
    noteUse(ctx.principal.observed, { permission: 'token:use' })
    return
  }
  throw forbidden('missing permission token:use')
}

/** Everything a react checks before running: the reactor, `args` detokenized and cast, the code. */
async function prepareRun(ctx: Ctx, id: string, rawArgs: unknown) {
  const reactor = await mustGetReactor(ctx, id)
  let code: string
  let args = await detokenizeArgs(ctx, (rawArgs ?? {}) as JsonObject)
  if (reactor.code !== undefined) code = reactor.code
  else {
    const formula = await formulaFor(ctx, reactor.formula_id ?? '')
    args = castArgs(formula.request_parameters, args)
    code = formula.code
  }
  const runner = ctx.runner
  if (!runner) throw new ServiceError('formula_invalid', 'no formula runner is configured')
  return {
    start: (timeoutMs: number) =>
      runner.run(
        code,
        { args, configuration: reactor.configuration },
        { timeoutMs, isolationKey: ctx.principal.tenantId, egress: ctx.options.reactorEgress },
      ),
  }
}

/** Invokes the reactor and answers its result (see `reactorOperations().react`). */
export async function react(ctx: Ctx, id: string, input: ReactInput): Promise<ReactResult> {
  requireUse(ctx)
  const body = parse(reactInput, input) ?? {}
  if ((body.callback_url ?? body.callbackUrl ?? null) !== null) {
    throw invalid('callback_url', 'makes the react asynchronous: use reactors.reactAsync')
  }
  const run = await prepareRun(ctx, id, body.args)
  const timeoutMs = ctx.options.reactorTimeoutMs
  const outcome = await run.start(timeoutMs)
  if (!outcome.ok) throw runFailure(outcome, timeoutMs)
  return reactResult(ctx, outcome.value)
}

/** The callback URL of an asynchronous react, refused unless its origin is on the egress allow-list. */
function callbackUrl(ctx: Ctx, url: string | null | undefined): string {
  if (url === undefined || url === null) throw invalid('callback_url', 'is required')
  const origins = ctx.options.reactorEgress
  if (!allowedUrl(origins, url)) {
    throw invalid(
      'callback_url',
      origins.length
        ? 'must be a URL on an origin of the egress allow-list (reactorEgress)'
        : 'is refused: no egress allow-list (reactorEgress) is configured, so nothing may be called back',
    )
  }
  return url
}

/** Invokes the reactor in the background, its answer POSTed to the callback (see `reactorOperations().reactAsync`). */
export async function reactAsync(ctx: Ctx, id: string, input: ReactInput): Promise<void> {
  requireUse(ctx)
  const body = parse(reactInput, input) ?? {}
  const url = callbackUrl(ctx, body.callback_url ?? body.callbackUrl)
  const origins = ctx.options.reactorEgress
  const run = await prepareRun(ctx, id, body.args)
  // A place among the outstanding asynchronous reacts: 429 past the tenant's or the service's bound.
  const outstanding = ctx.callbacks.reserve(ctx.principal.tenantId)
  const timeoutMs = body.timeout_ms ?? body.timeoutMs ?? ASYNC_TIMEOUT_MS
  void (async () => {
    let result: CallbackBody
    try {
      const outcome = await run.start(timeoutMs)
      if (!outcome.ok && outcome.kind === 'timeout') {
        result = {
          status: 500,
          detail: 'Reactor Runtime Error',
          errors: { error: [`the reactor formula ran longer than ${timeoutMs} ms`] },
        }
      } else if (!outcome.ok) result = callbackError(runFailure(outcome, timeoutMs))
      else result = await reactResult(ctx, outcome.value)
    } catch (error) {
      result = callbackError(error)
    }
    await outstanding.send(origins, url, result)
  })().catch(() => {})
}
