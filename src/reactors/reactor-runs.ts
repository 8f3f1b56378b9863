import type { Ctx, ReactorInvoked } from '../call/index.js'
import type { Reactor, ReactResult } from '../kernel/index.js'
import { forbidden, invalid, noteUse, parse, ServiceError } from '../kernel/index.js'
import { detokenizeArgs } from '../tokens/index.js'
import type { ReactInput } from './inputs.js'
import { castArgs, type JsonObject, reactResult, runFailure, runFailureText } from './react.js'
import { formulaFor, mustGetReactor } from './reactor-records.js'
import { reactInput } from './reactor-schemas.js'

/** Whether the principal may invoke reactors: `token:use` as a permission or in any of its access rules. */
export function requireUse(ctx: Ctx): void {
  const { permissions, rules } = ctx.principal
  if (permissions.includes('token:use') || rules?.some((r) => r.permissions.includes('token:use'))) {
    noteUse(ctx.principal.observed, { permission: 'token:use' })
    return
  }
  throw forbidden('missing permission token:use')
}

/** `args` detokenized as the caller and, for a formula-based reactor, checked and cast against its request parameters. */
export async function checkedArgs(ctx: Ctx, reactor: Reactor, rawArgs: unknown): Promise<JsonObject> {
  const args = await detokenizeArgs(ctx, (rawArgs ?? {}) as JsonObject)
  if (reactor.code !== undefined) return args
  const formula = await formulaFor(ctx, reactor.formula_id ?? '')
  return castArgs(formula.request_parameters, args)
}

/** Starts a run of `reactor` with checked `args`: a function of the time limit (ms) answering the runner's outcome. */
export async function startRun(ctx: Ctx, reactor: Reactor, args: JsonObject) {
  const code =
    reactor.code !== undefined ? reactor.code : (await formulaFor(ctx, reactor.formula_id ?? '')).code
  const runner = ctx.runner
  if (!runner) throw new ServiceError('formula_invalid', 'no formula runner is configured')
  return (timeoutMs: number) =>
    runner.run(
      code,
      { args, configuration: reactor.configuration },
      { timeoutMs, isolationKey: ctx.principal.tenantId, egress: ctx.options.reactorEgress },
    )
}

/** The events of a synchronous react (see `Invocation`): a tenant at its pending bound taking one is refused before the run. */
const REACTOR_EVENTS = ['reactor.invoked', 'reactor.completed', 'reactor.failed']

/** A run of `reactor` starting now, as its webhook events name it (see `Invocation`). */
export const invocationOf = (ctx: Ctx, reactor: Reactor): ReactorInvoked => ({
  kind: 'reactor',
  reactor: { id: reactor.id, name: reactor.name },
  startedMs: ctx.clock.now().getTime(),
})

/** Invokes the reactor and answers its result (see `reactorOperations().react`). */
export async function react(ctx: Ctx, id: string, input: ReactInput): Promise<ReactResult> {
  requireUse(ctx)
  const body = parse(reactInput, input) ?? {}
  if ((body.callback_url ?? body.callbackUrl ?? null) !== null) {
    throw invalid('callback_url', 'makes the react asynchronous: use reactors.reactAsync')
  }
  const reactor = await mustGetReactor(ctx, id)
  const run = await startRun(ctx, reactor, await checkedArgs(ctx, reactor, body.args))
  const timeoutMs = ctx.options.reactorTimeoutMs
  const admitted = ctx.callbacks.invoking(ctx.principal.tenantId, REACTOR_EVENTS)
  if (admitted) await admitted
  const invoked = invocationOf(ctx, reactor)
  ctx.invoked = invoked
  const outcome = await run(timeoutMs)
  if (!outcome.ok) {
    invoked.failure = runFailureText(outcome, timeoutMs)
    throw runFailure(outcome, timeoutMs)
  }
  return reactResult(ctx, outcome.value)
}
