/**
 * The OpenAPI `operationId` of a route: an identifier code generators keep as a method name
 * (`getToken`, `createTokenChild`, `listTokensV2`), derived from the method and the path unless the
 * route's docs name one (actions such as `commitTransaction`).
 */

/** `reactor-formulas` → `ReactorFormulas`. */
const pascal = (segment: string) =>
  segment
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('')

/** `tokens` → `tokens`'s one: `token`, `proxies` → `proxy`, `children` → `child`. */
export function singular(word: string): string {
  if (word.endsWith('children')) return word.slice(0, -3)
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`
  if (word.endsWith('ses') || word.endsWith('xes')) return word.slice(0, -2)
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1)
  return word
}

const ITEM_VERBS: Record<string, string> = {
  GET: 'get',
  PUT: 'update',
  PATCH: 'update',
  DELETE: 'delete',
  POST: 'create',
}

/**
 * `GET /tokens` → `listTokens`, `POST /tokens` → `createToken`, `GET /tokens/:id` → `getToken`,
 * `POST /tokens/:id/children` → `createTokenChild`, `GET /v2/tokens` → `listTokensV2`: the verb from
 * the method (a list for GET of a collection), the nouns from the literal segments (each singular
 * but the listed one), a leading `v2` as a suffix.
 */
export function operationIdOf(method: string, pattern: string): string {
  const segments = pattern.split('/').filter(Boolean)
  const version = /^v\d+$/.test(segments[0] ?? '') ? segments.shift()!.toUpperCase() : ''
  const item = segments.at(-1)?.startsWith(':') ?? false
  const nouns = segments.filter((s) => !s.startsWith(':'))
  const listed = method === 'GET' && !item
  const verb = listed ? 'list' : (ITEM_VERBS[method] ?? method.toLowerCase())
  const words = nouns.map((noun, i) => pascal(listed && i === nouns.length - 1 ? noun : singular(noun)))
  return `${verb}${words.join('')}${version}`
}
