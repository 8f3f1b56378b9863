import * as v from 'valibot'
import { requirePermission } from '../applications/index.js'
import type { Ctx, Paginated } from '../call/index.js'
import { paginated, rangeOf } from '../call/index.js'
import type { StoredProxy } from '../kernel/index.js'
import {
  invalid,
  newId,
  notFound,
  pagination,
  parse,
  stringList,
  withoutForbiddenKeys,
} from '../kernel/index.js'

/** How many pre-configured proxies one tenant may hold. */
export const MAX_PROXIES_PER_TENANT = 100

const name = v.pipe(
  v.string(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)
const url = v.pipe(
  v.string(),
  v.maxLength(2000, 'must be at most 2000 characters'),
  v.check((s) => {
    try {
      const u = new URL(s)
      return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password
    } catch {
      return false
    }
  }, 'must be an http or https URL without credentials'),
)
const transform = v.nullish(
  v.strictObject({ code: v.pipe(v.string(), v.maxLength(12000, 'must be at most 12000 characters')) }),
)
const configuration = v.nullish(
  v.pipe(
    withoutForbiddenKeys<Record<string, string>>(),
    v.record(v.pipe(v.string(), v.regex(/^[\w-]+$/, 'names letters, digits, _ and -')), v.string()),
    v.check((c) => Object.keys(c).length <= 25, 'must hold at most 25 entries'),
  ),
)
const fields = {
  name,
  destination_url: url,
  request_transform: transform,
  response_transform: transform,
  application: v.nullish(v.strictObject({ id: v.string() })),
  configuration,
  require_auth: v.nullish(v.boolean()),
}
/** `POST /proxies` and `PUT /proxies/{id}`: the reference's proxy request. */
export const proxyInput = v.strictObject(fields)
/** `PATCH /proxies/{id}`: any of the fields; `null` clears an optional one. */
export const proxyPatchInput = v.strictObject({
  ...fields,
  name: v.optional(name),
  destination_url: v.optional(url),
})
/** `GET /proxies`: repeated `id`, `page`, `size`. */
export const proxyListInput = v.strictObject({ id: stringList(100), ...pagination })
/** Query of `proxies.list`: `id` (one or many), `page`, `size`. */
export type ListProxiesQuery = v.InferInput<typeof proxyListInput>

/** A proxy as answered: the reference's shape, with its `key` and `application_id`. */
export type ShownProxy = Omit<StoredProxy, 'configuration'> & {
  key: string
  configuration?: Record<string, string>
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url')
const unb64 = (s: string) => Buffer.from(s, 'base64url').toString('utf8')
/** The HMAC purpose proxy keys are derived under. */
const KEY_PURPOSE = 'proxy-key'

/**
 * A proxy's key (`BT-PROXY-KEY`): its tenant and id, and a MAC of the id under the tenant's key, so
 * the key is never stored and a guessed one is refused.
 */
async function keyOf(ctx: Pick<Ctx, 'hmac'>, proxy: { tenant_id: string; id: string }): Promise<string> {
  const mac = (await ctx.hmac(KEY_PURPOSE, proxy.id)).slice(0, 22)
  return `${b64(proxy.tenant_id)}.${b64(proxy.id)}.${mac}`
}

/** The tenant and proxy a key names (unverified: `verifiedProxy` checks its MAC), or null. */
export function parseProxyKey(key: string): { tenantId: string; id: string; mac: string } | null {
  const parts = key.split('.')
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]{1,200}$/.test(p))) return null
  return { tenantId: unb64(parts[0]!), id: unb64(parts[1]!), mac: parts[2]! }
}

/** The proxy `key` names in the caller's tenant, its MAC checked; `not_found` for any other key. */
export async function proxyByKey(ctx: Ctx, key: string): Promise<StoredProxy> {
  const named = parseProxyKey(key)
  if (!named || named.tenantId !== ctx.principal.tenantId) throw notFound('proxy')
  const proxy = await ctx.store.getProxy(named.tenantId, named.id)
  if (!proxy || (await keyOf(ctx, proxy)) !== key) throw notFound('proxy')
  return proxy
}

async function shown(ctx: Ctx, p: StoredProxy): Promise<ShownProxy> {
  return { ...p, key: await keyOf(ctx, p) }
}

/** Whether `next` acts otherwise than `old`: its transforms' code, its destination or `require_auth`. */
function actsDifferently(old: StoredProxy, next: StoredProxy): boolean {
  return (
    old.destination_url !== next.destination_url ||
    old.require_auth !== next.require_auth ||
    old.request_transform?.code !== next.request_transform?.code ||
    old.response_transform?.code !== next.response_transform?.code
  )
}

/** The stored record of `input` (validated) for proxy `id`. */
async function recordOf(
  ctx: Ctx,
  input: v.InferOutput<typeof proxyInput>,
  base: { id: string; created_at: string; created_by: string; application_id?: string },
): Promise<StoredProxy> {
  if (input.application) {
    // A proxy's transforms (and, with `require_auth: false`, anyone holding its key) act as its
    // application: binding one asks what acting as it asks, the power to get its key
    // (`application:update`, which regenerates it), not only `proxy:create`.
    if (input.application.id !== base.application_id) requirePermission(ctx.principal, 'application:update')
    const app = await ctx.store.getApplication(ctx.principal.tenantId, input.application.id)
    if (!app) throw invalid('application.id', 'names no application of the tenant')
    if (app.type === 'management') throw invalid('application.id', 'must be a public or private application')
  }
  return {
    ...base,
    tenant_id: ctx.principal.tenantId,
    name: input.name,
    destination_url: input.destination_url,
    ...(input.request_transform ? { request_transform: input.request_transform } : {}),
    ...(input.response_transform ? { response_transform: input.response_transform } : {}),
    ...(input.application ? { application_id: input.application.id } : {}),
    configuration: input.configuration ?? {},
    require_auth: input.require_auth ?? true,
  }
}

/** The pre-configured proxy operations (`/proxies`), under `proxy:*` permissions. */
export function proxiesOperations(ctx: Ctx) {
  const tenant = ctx.principal.tenantId
  const mustGet = async (id: string) => {
    const p = await ctx.store.getProxy(tenant, id)
    if (!p) throw notFound('proxy')
    return p
  }
  const replace = async (id: string, input: v.InferOutput<typeof proxyInput>): Promise<ShownProxy> => {
    const old = await mustGet(id)
    const record = await recordOf(ctx, input, old)
    // What runs as the application (its transforms, where they send, who may call without a key)
    // changed on a proxy bound to one: as binding it, that asks `application:update` too. With only
    // `proxy:update`, a key rewrote a transform to detokenize as the application and send it out.
    if (record.application_id !== undefined && actsDifferently(old, record))
      requirePermission(ctx.principal, 'application:update')
    const next = { ...record, modified_at: ctx.now(), modified_by: ctx.principal.id }
    await ctx.store.write({ ops: [{ op: 'proxy.put', proxy: next }] })
    return shown(ctx, next)
  }
  return {
    async create(input: unknown): Promise<ShownProxy> {
      requirePermission(ctx.principal, 'proxy:create')
      const q = parse(proxyInput, input)
      const held = await ctx.store.listProxies(tenant, { offset: 0, limit: 1 })
      if (held.total >= MAX_PROXIES_PER_TENANT)
        throw invalid('proxy', `the tenant holds ${MAX_PROXIES_PER_TENANT} proxies, the most it may`)
      const base = { id: newId(), created_at: ctx.now(), created_by: ctx.principal.id }
      const record = await recordOf(ctx, q, base)
      await ctx.store.write({ ops: [{ op: 'proxy.put', proxy: record }] })
      return shown(ctx, record)
    },
    async list(query: ListProxiesQuery = {}): Promise<Paginated<ShownProxy>> {
      requirePermission(ctx.principal, 'proxy:read')
      const q = parse(proxyListInput, query ?? {})
      const page = await ctx.store.listProxies(tenant, {
        ...rangeOf(q),
        ...(q.id.length ? { ids: q.id } : {}),
      })
      const items = await Promise.all(page.items.map((p) => shown(ctx, p)))
      return paginated({ items, total: page.total }, q.page, q.size)
    },
    async get(id: string): Promise<ShownProxy> {
      requirePermission(ctx.principal, 'proxy:read')
      return shown(ctx, await mustGet(id))
    },
    async update(id: string, input: unknown): Promise<ShownProxy> {
      requirePermission(ctx.principal, 'proxy:update')
      return replace(id, parse(proxyInput, input))
    },
    async patch(id: string, input: unknown): Promise<ShownProxy> {
      requirePermission(ctx.principal, 'proxy:update')
      const q = parse(proxyPatchInput, input)
      const old = await mustGet(id)
      const merged = {
        name: q.name ?? old.name,
        destination_url: q.destination_url ?? old.destination_url,
        request_transform: q.request_transform === undefined ? old.request_transform : q.request_transform,
        response_transform:
          q.response_transform === undefined ? old.response_transform : q.response_transform,
        application:
          q.application === undefined
            ? old.application_id
              ? { id: old.application_id }
              : null
            : q.application,
        configuration: q.configuration === undefined ? old.configuration : q.configuration,
        require_auth: q.require_auth ?? old.require_auth,
      }
      return replace(id, parse(proxyInput, merged))
    },
    async delete(id: string): Promise<void> {
      requirePermission(ctx.principal, 'proxy:delete')
      await mustGet(id)
      await ctx.store.write({ ops: [{ op: 'proxy.delete', tenant_id: tenant, id }] })
    },
  }
}
