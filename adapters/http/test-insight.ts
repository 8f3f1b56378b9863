import { ServiceError } from '../../src/kernel/index.js'

/**
 * What the control plane's insight routes read: the vault's leak check, exposure and used access
 * (the test kit's, `tokenvault/testing`), plugged in by whoever serves the control plane.
 */
export interface ControlInsight {
  /** The findings of a leak check of `value` (token ids, paths, encodings; never a plaintext). */
  find(value: unknown): unknown[]
  /** The exposure table so far. */
  exposure(): unknown
  /** The used-access report so far. */
  usedAccess(): unknown
  /** Forgets the exposure and used access (the control plane's reset). */
  clear(): void
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/** The value a `POST /_test/leaks` checks: a text body as it is, else the JSON body's `value`. */
function checkedValue(request: Request, text: string): unknown {
  const type = request.headers.get('content-type') ?? ''
  if (type.startsWith('text/')) return text
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new ServiceError('validation_failed', 'the body is not JSON', { issues: { body: ['not JSON'] } })
  }
  if (typeof body !== 'object' || body === null || !('value' in body)) {
    throw new ServiceError('validation_failed', 'value: required (what the test captured)', {
      issues: { value: ['required'] },
    })
  }
  return (body as { value: unknown }).value
}

/**
 * The insight routes of the control plane, or undefined for another path:
 * - `POST /_test/leaks` with `{ "value": … }` (any JSON: log lines, rows, an answer) or a `text/*`
 *   body → 200 `{ leaked, findings }`: each finding names the token, where (`path`, `offset`) and
 *   how it was written (`encoding`), never the plaintext;
 * - `GET /_test/exposure` → the exposure table (`total`, `byApplication`, `byToken`, `byOperation`, `rows`);
 * - `GET /_test/used-access` → `{ callers, fixture }`: what each caller used, held and never used,
 *   and the least grant as fixture applications.
 */
export async function insightRoute(
  insight: ControlInsight,
  method: string,
  path: string,
  request: Request,
  text: () => Promise<string>,
): Promise<Response | undefined> {
  if (path === '/_test/leaks' && method === 'POST') {
    const findings = insight.find(checkedValue(request, await text()))
    return json(200, { leaked: findings.length > 0, findings })
  }
  if (path === '/_test/exposure' && method === 'GET') return json(200, insight.exposure())
  if (path === '/_test/used-access' && method === 'GET') {
    const report = insight.usedAccess() as { callers: unknown; fixture(): unknown }
    return json(200, { callers: report.callers, fixture: report.fixture() })
  }
  return undefined
}
