import { HttpProblem } from './problem.js'
import { Router } from './router.js'

/**
 * The routes of the reference API (Basis Theory's, as its current Node SDK calls them) that this
 * vault does not build: the one list. They answer 501 with a problem naming the route and where
 * the docs say so, rather than a 404 that reads as a typo, and the OpenAPI document lists them as
 * not implemented.
 */
export const NOT_BUILT: ReadonlyArray<
  readonly [method: string, pattern: string, area: string, operationId?: string]
> = [
  ['GET', '/tenants/self/owner', 'tenant management'],
  ['PUT', '/tenants/self/owner', 'tenant management'],
  ['GET', '/tenants/self/security-contact', 'tenant management'],
  ['PUT', '/tenants/self/security-contact', 'tenant management'],
  ['POST', '/tenants/self/connections', 'tenant management'],
  ['DELETE', '/tenants/self/connections', 'tenant management'],
  ['GET', '/tenants/self/members', 'tenant members'],
  ['PUT', '/tenants/self/members/:memberId', 'tenant members'],
  ['DELETE', '/tenants/self/members/:memberId', 'tenant members'],
  ['GET', '/tenants/self/invitations', 'tenant invitations'],
  ['POST', '/tenants/self/invitations', 'tenant invitations'],
  ['GET', '/tenants/self/invitations/:invitationId', 'tenant invitations'],
  ['DELETE', '/tenants/self/invitations/:invitationId', 'tenant invitations'],
  ['POST', '/tenants/self/invitations/:invitationId/resend', 'tenant invitations'],
  ['GET', '/tenants/:tenantId/merchants', 'merchants'],
  ['POST', '/tenants/:tenantId/merchants', 'merchants'],
  ['GET', '/tenants/:tenantId/merchants/:merchantId', 'merchants'],
  ['PATCH', '/tenants/:tenantId/merchants/:merchantId', 'merchants'],
  ['DELETE', '/tenants/:tenantId/merchants/:merchantId', 'merchants'],
  ['POST', '/tenants/:tenantId/merchants/:merchantId/services', 'merchants'],
  ['POST', '/enrichments/bank-account-verify', 'enrichments'],
  ['GET', '/enrichments/card-details', 'enrichments'],
  ['POST', '/3ds/sessions', '3-D Secure', 'createThreeDsSession'],
  ['GET', '/3ds/sessions/:id', '3-D Secure', 'getThreeDsSession'],
  ['POST', '/3ds/sessions/:id/authenticate', '3-D Secure', 'authenticateThreeDsSession'],
  ['GET', '/3ds/sessions/:id/challenge-result', '3-D Secure', 'getThreeDsChallengeResult'],
  ['GET', '/account-updater/jobs', 'account updater'],
  ['POST', '/account-updater/jobs', 'account updater'],
  ['GET', '/account-updater/jobs/:id', 'account updater'],
  ['POST', '/account-updater/real-time', 'account updater'],
  ['POST', '/network-tokens', 'network tokens'],
  ['GET', '/network-tokens/:id', 'network tokens'],
  ['DELETE', '/network-tokens/:id', 'network tokens'],
  ['GET', '/network-tokens/:id/account', 'network tokens'],
  ['POST', '/network-tokens/:id/cryptogram', 'network tokens'],
  ['PUT', '/network-tokens/:id/suspend', 'network tokens'],
  ['PUT', '/network-tokens/:id/resume', 'network tokens'],
  ['POST', '/apple-pay', 'Apple Pay'],
  ['GET', '/apple-pay/:id', 'Apple Pay'],
  ['DELETE', '/apple-pay/:id', 'Apple Pay'],
  ['POST', '/apple-pay/session', 'Apple Pay'],
  ['GET', '/apple-pay/domain-registration', 'Apple Pay'],
  ['POST', '/apple-pay/domain-registration', 'Apple Pay'],
  ['PUT', '/apple-pay/domain-registration', 'Apple Pay'],
  ['POST', '/apple-pay/domain-deregistration', 'Apple Pay'],
  ['POST', '/apple-pay/merchant-registration', 'Apple Pay'],
  ['GET', '/apple-pay/merchant-registration/:id', 'Apple Pay'],
  ['DELETE', '/apple-pay/merchant-registration/:id', 'Apple Pay'],
  ['POST', '/apple-pay/merchant-registration/:merchantId/certificates', 'Apple Pay'],
  ['GET', '/apple-pay/merchant-registration/:merchantId/certificates/:id', 'Apple Pay'],
  ['DELETE', '/apple-pay/merchant-registration/:merchantId/certificates/:id', 'Apple Pay'],
  ['POST', '/google-pay', 'Google Pay'],
  ['GET', '/google-pay/:id', 'Google Pay'],
  ['DELETE', '/google-pay/:id', 'Google Pay'],
  ['POST', '/google-pay/merchant-registration', 'Google Pay'],
  ['GET', '/google-pay/merchant-registration/:id', 'Google Pay'],
  ['DELETE', '/google-pay/merchant-registration/:id', 'Google Pay'],
  ['POST', '/google-pay/merchant-registration/:merchantId/certificates', 'Google Pay'],
  ['GET', '/google-pay/merchant-registration/:merchantId/certificates/:id', 'Google Pay'],
  ['DELETE', '/google-pay/merchant-registration/:merchantId/certificates/:id', 'Google Pay'],
]

/** Where the docs list the routes not built. */
export const NOT_BUILT_DOCS = 'docs/server.md#routes-of-the-reference-not-built'

let router: Router<string> | undefined

/** The 501 problem for a route of `NOT_BUILT`, or undefined when `method path` is none of them. */
export function notBuilt(method: string, path: string): HttpProblem | undefined {
  if (router === undefined) {
    router = new Router<string>()
    for (const [m, pattern, area] of NOT_BUILT) router.add(m, pattern, area)
  }
  const match = router.match(method, path)
  if (match.kind !== 'found') return undefined
  return new HttpProblem(
    501,
    `${method} ${path} is a route of the reference API (${match.route}) that tokenvault does not implement; see ${NOT_BUILT_DOCS}.`,
  )
}
